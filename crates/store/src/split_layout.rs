//! `layoutVersion` "4": a group's aggregate split over the fields of its metadata hash, so that a write costs
//! what it changes.
//!
//! The hash holds a `header` field (the aggregate without its per-member maps: a JSON object of a few KB), a
//! `parts` field naming those maps (comma-separated, e.g. `members,targetAssignments`), and one field per entry
//! of each map, named `<part>/<key>` (a part name never holds a `/`; the key is everything after the first one)
//! whose value is that entry's JSON. A compare-and-set (`cas.lua`) checks the revision as for every layout and
//! then sets and deletes only the entries the caller says changed, with the new header, atomically; the first
//! write of this layout onto a hash of another layout is *full* (it removes the whole document and any stray
//! entry first), and a write of another layout onto this one removes every entry. Reading a hash of this layout
//! (`assemble`) gives back one JSON document — the header's fields followed by each part as an object of its
//! entries in key order — so every reader (the coordinator, backup, restore) still sees one aggregate. Which
//! maps are split is the caller's choice (`rsc_group::model::SPLIT_PARTS`); the store never parses the JSON.

use std::collections::{BTreeMap, HashMap};

use crate::error::StoreError;

/// `layoutVersion` of a hash whose aggregate is split into a header and entries.
pub const LAYOUT_SPLIT: &str = "4";
/// The field holding the header document.
pub const HEADER_FIELD: &str = "header";
/// The field naming the split parts.
pub const PARTS_FIELD: &str = "parts";

/// One entry to set (`json` Some) or delete (`json` None).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitEntry {
    pub part: String,
    pub key: String,
    pub json: Option<String>,
}

/// The aggregate of a compare-and-set in the split layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplitAggregate {
    /// The aggregate without its parts: a JSON object.
    pub header: String,
    /// The names of the split parts (none holds a `/` or a `,`), each written as an object even when empty.
    pub parts: Vec<String>,
    /// The entries that changed; with `full`, every entry.
    pub entries: Vec<SplitEntry>,
    /// Replace every entry: the hash held another layout (or its entries are not known to the writer).
    pub full: bool,
}

impl SplitAggregate {
    /// Refuses what the layout cannot hold: a part name with a `/` or `,`, an entry of an undeclared part, a
    /// header that is not an object.
    pub(crate) fn check(&self) -> Result<(), StoreError> {
        let invalid = |detail: String| Err(StoreError::InvalidArgument { detail });
        if let Some(p) = self
            .parts
            .iter()
            .find(|p| p.is_empty() || p.contains(['/', ',']))
        {
            return invalid(format!(
                "the split part name {p:?} is empty or holds '/' or ','"
            ));
        }
        if let Some(e) = self.entries.iter().find(|e| !self.parts.contains(&e.part)) {
            return invalid(format!("an entry names the undeclared part {:?}", e.part));
        }
        let header = self.header.trim();
        if !(header.starts_with('{') && header.ends_with('}')) {
            return invalid("the header of a split aggregate must be a JSON object".into());
        }
        Ok(())
    }

    /// The `parts` field's value.
    pub(crate) fn parts_field(&self) -> String {
        self.parts.join(",")
    }
}

/// The field name of an entry.
pub(crate) fn entry_field(part: &str, key: &str) -> String {
    format!("{part}/{key}")
}

/// The aggregate JSON of a layout "4" hash `key` from its fields (`HGETALL`): the header's fields, then each
/// declared part as an object of its entries in key order. A missing header or parts field, an entry of an
/// undeclared part, or anything that is not UTF-8 is corrupt metadata.
pub(crate) fn assemble(
    key: &str,
    fields: &mut HashMap<Vec<u8>, Vec<u8>>,
) -> Result<String, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        key: key.to_string(),
        detail,
    };
    let text = |bytes: Vec<u8>, what: &str| {
        String::from_utf8(bytes).map_err(|_| corrupt(format!("the {what} is not UTF-8")))
    };
    let header = fields
        .remove(HEADER_FIELD.as_bytes())
        .ok_or_else(|| corrupt("layoutVersion \"4\" without a header field".into()))?;
    let header = text(header, "header field")?;
    let parts = fields
        .remove(PARTS_FIELD.as_bytes())
        .ok_or_else(|| corrupt("layoutVersion \"4\" without a parts field".into()))?;
    let parts = text(parts, "parts field")?;
    let parts: Vec<&str> = parts.split(',').filter(|p| !p.is_empty()).collect();
    let mut entries: BTreeMap<(usize, String), String> = BTreeMap::new();
    let names: Vec<Vec<u8>> = fields
        .keys()
        .filter(|f| f.contains(&b'/'))
        .cloned()
        .collect();
    for name in names {
        let value = fields.remove(&name).unwrap_or_default();
        let name = text(name, "name of an entry")?;
        let (part, entry_key) = name.split_once('/').unwrap_or((name.as_str(), ""));
        let Some(index) = parts.iter().position(|p| *p == part) else {
            return Err(corrupt(format!(
                "the entry {name:?} belongs to no part of {parts:?}"
            )));
        };
        let value = text(value, "value of an entry")?;
        entries.insert((index, entry_key.to_owned()), value);
    }
    let body = header.trim();
    let Some(inner) = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .map(str::trim)
    else {
        return Err(corrupt("the header field is not a JSON object".into()));
    };
    let size: usize = inner.len()
        + entries
            .iter()
            .map(|(k, v)| k.1.len() + v.len() + 4)
            .sum::<usize>();
    let mut out = String::with_capacity(size + 64 * parts.len() + 2);
    out.push('{');
    out.push_str(inner);
    let mut entries = entries.into_iter().peekable();
    for (index, part) in parts.iter().enumerate() {
        if out.len() > 1 {
            out.push(',');
        }
        push_json_string(&mut out, part);
        out.push_str(":{");
        let mut first = true;
        while let Some(((_, entry_key), value)) = entries.next_if(|((i, _), _)| *i == index) {
            if !first {
                out.push(',');
            }
            first = false;
            push_json_string(&mut out, &entry_key);
            out.push(':');
            out.push_str(&value);
        }
        out.push('}');
    }
    out.push('}');
    Ok(out)
}

/// Appends `s` as a JSON string.
fn push_json_string(out: &mut String, s: &str) {
    // A JSON string value's Display cannot fail (it only escapes characters), so nothing can turn into "".
    out.push_str(&serde_json::Value::from(s).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> HashMap<Vec<u8>, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn entries_are_assembled_into_their_parts_in_key_order_and_empty_parts_stay() {
        let mut f = fields(&[
            ("header", "{\"epoch\":3}"),
            ("parts", "members,targets,empty"),
            ("members/b", "{\"n\":2}"),
            ("members/a\"x/y", "{\"n\":1}"),
            ("targets/a\"x/y", "[1,2]"),
            ("revision", "4"),
        ]);
        let json = assemble("k", &mut f).expect("assembles");
        assert_eq!(
            json,
            r#"{"epoch":3,"members":{"a\"x/y":{"n":1},"b":{"n":2}},"targets":{"a\"x/y":[1,2]},"empty":{}}"#
        );
        let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
        assert_eq!(v["members"]["a\"x/y"]["n"], 1);
        // The header and entries were taken out; other fields stay.
        assert_eq!(f.len(), 1);
        let mut empty_header = fields(&[("header", "{}"), ("parts", "m")]);
        assert_eq!(assemble("k", &mut empty_header).unwrap(), r#"{"m":{}}"#);
    }

    #[test]
    fn damaged_split_hashes_are_corrupt() {
        for pairs in [
            vec![("parts", "m")],
            vec![("header", "{}")],
            vec![("header", "[]"), ("parts", "m")],
            vec![("header", "{}"), ("parts", "m"), ("other/x", "1")],
        ] {
            assert!(
                matches!(
                    assemble("k", &mut fields(&pairs)),
                    Err(StoreError::Corrupt { .. })
                ),
                "{pairs:?}"
            );
        }
        let mut bad = fields(&[("header", "{}"), ("parts", "m")]);
        bad.insert(b"m/x".to_vec(), vec![0xff]);
        assert!(matches!(
            assemble("k", &mut bad),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn writes_that_the_layout_cannot_hold_are_refused() {
        let ok = SplitAggregate {
            header: "{}".into(),
            parts: vec!["m".into()],
            entries: vec![SplitEntry {
                part: "m".into(),
                key: "a/b".into(),
                json: None,
            }],
            full: false,
        };
        assert!(ok.check().is_ok());
        let mut bad_part = ok.clone();
        bad_part.parts = vec!["m/x".into()];
        let mut undeclared = ok.clone();
        undeclared.entries[0].part = "n".into();
        let mut not_object = ok.clone();
        not_object.header = "[]".into();
        for bad in [bad_part, undeclared, not_object] {
            assert!(matches!(
                bad.check(),
                Err(StoreError::InvalidArgument { .. })
            ));
        }
    }
}
