//! Plain-text tables for the operator verbs: a header row and left-aligned columns separated by two
//! spaces, missing values as `-` (as `kafka-consumer-groups` prints them). A few lines of padding do not
//! justify a table crate; `--output json` is the format for scripts. Cells are escaped for the terminal
//! (`terminal.rs`).

/// A table being built.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns at least this wide (a table printed in pieces, as `rsc audit --follow` does, stays aligned).
    min_widths: Vec<usize>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
            min_widths: Vec::new(),
        }
    }

    /// Columns at least `widths` wide, in order.
    pub fn min_widths(mut self, widths: &[usize]) -> Self {
        self.min_widths = widths.to_vec();
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let cols = self.header.len();
        let cell = |row: &Vec<String>, i: usize| -> String {
            match row.get(i).map(String::as_str) {
                None | Some("") => "-".to_owned(),
                // Caller text: no escape sequence, and no line break that would start a row of its own.
                Some(s) => super::terminal::escape_cell(s),
            }
        };
        let mut widths: Vec<usize> = self
            .header
            .iter()
            .enumerate()
            .map(|(i, h)| {
                h.chars()
                    .count()
                    .max(self.min_widths.get(i).copied().unwrap_or(0))
            })
            .collect();
        for row in &self.rows {
            for (i, w) in widths.iter_mut().enumerate() {
                *w = (*w).max(cell(row, i).chars().count());
            }
        }
        let line = |cells: Vec<String>| -> String {
            let mut out = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i + 1 == cols {
                    out.push_str(c);
                } else {
                    out.push_str(c);
                    out.push_str(&" ".repeat(widths[i] - c.chars().count() + 2));
                }
            }
            out.trim_end().to_owned() + "\n"
        };
        let mut out = line(self.header.clone());
        for row in &self.rows {
            out.push_str(&line((0..cols).map(|i| cell(row, i)).collect()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_printed_in_pieces_line_up_with_minimum_widths() {
        let piece = |action: &str| {
            let mut t = Table::new(&["ACTION", "OUTCOME"]).min_widths(&[12, 0]);
            t.row(vec![action.into(), "SUCCESS".into()]);
            t.render()
        };
        let (a, b) = (piece("LOGIN"), piece("SCALE_STREAM"));
        assert_eq!(a.lines().nth(1).unwrap().find("SUCCESS"), Some(14));
        assert_eq!(b.lines().nth(1).unwrap().find("SUCCESS"), Some(14));
    }

    #[test]
    fn columns_line_up_and_missing_values_print_as_a_dash() {
        let mut t = Table::new(&["STREAM", "GROUP", "LAG"]);
        t.row(vec!["orders".into(), "billing".into(), "12".into()]);
        t.row(vec!["o".into(), String::new()]);
        assert_eq!(
            t.render(),
            "STREAM  GROUP    LAG\norders  billing  12\no       -        -\n"
        );
    }

    #[test]
    fn a_cell_cannot_start_a_row_or_send_an_escape_sequence() {
        let mut t = Table::new(&["WHO", "REASON"]);
        t.row(vec!["ops".into(), "ok\r\nadmin  FORGED\u{1b}[2J".into()]);
        let text = t.render();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
    }
}
