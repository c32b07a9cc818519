//! Scoped principals: a principal may be limited to stream-prefix patterns, so one team's WRITE or MEMBER
//! credentials cannot touch another team's groups. A pattern is an exact prefix or ends in `*`.

/// The streams a principal may touch. `None` = every stream; `Some(empty)` = none (see [`Scopes::none`]).
/// No `Default`: a scope that is not stated explicitly must never become "every stream" by accident.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scopes(Option<Vec<Pattern>>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Exact(String),
    Prefix(String),
}

impl Scopes {
    pub fn unrestricted() -> Scopes {
        Scopes(None)
    }

    /// No stream at all: what a user whose configured patterns do not parse gets (fail closed).
    pub fn none() -> Scopes {
        Scopes(Some(Vec::new()))
    }

    /// Parses configured patterns; an empty list means unrestricted.
    pub fn parse(patterns: &[String]) -> Result<Scopes, String> {
        if patterns.is_empty() {
            return Ok(Scopes(None));
        }
        let mut out = Vec::new();
        for p in patterns {
            let p = p.trim();
            let body = p.strip_suffix('*').unwrap_or(p);
            if p.is_empty() || p == "*" || body.contains('*') {
                return Err(format!(
                    "{p:?} is not a stream-prefix pattern: use an exact prefix or one ending in '*' \
                     (e.g. \"team-a-*\"); omit the list to allow every stream"
                ));
            }
            if body.contains('{') || body.contains('}') {
                return Err(format!("{p:?} must not contain '{{' or '}}'"));
            }
            out.push(if p.ends_with('*') {
                Pattern::Prefix(body.to_owned())
            } else {
                Pattern::Exact(body.to_owned())
            });
        }
        Ok(Scopes(Some(out)))
    }

    pub fn is_restricted(&self) -> bool {
        self.0.is_some()
    }

    /// Whether the principal may touch streams with this prefix.
    pub fn allows(&self, stream_prefix: &str) -> bool {
        match &self.0 {
            None => true,
            Some(ps) => ps.iter().any(|p| match p {
                Pattern::Exact(e) => e == stream_prefix,
                Pattern::Prefix(b) => stream_prefix.starts_with(b.as_str()),
            }),
        }
    }

    /// The patterns as configured (for the session endpoint); empty = unrestricted.
    pub fn describe(&self) -> Vec<String> {
        if self.0.as_ref().is_some_and(Vec::is_empty) {
            return vec!["(no stream: the configured stream-prefixes did not parse)".to_owned()];
        }
        self.0
            .iter()
            .flatten()
            .map(|p| match p {
                Pattern::Exact(e) => e.clone(),
                Pattern::Prefix(b) => format!("{b}*"),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_exact_names_and_prefixes() {
        let s = Scopes::parse(&["orders".into(), "team-a-*".into()]).unwrap();
        assert!(s.allows("orders") && s.allows("team-a-x") && s.allows("team-a-"));
        assert!(!s.allows("orders2") && !s.allows("team-b-x") && !s.allows("team-"));
        assert!(Scopes::parse(&[]).unwrap().allows("anything"));
        assert!(Scopes::parse(&["*".into()]).is_err());
        assert!(Scopes::parse(&["a*b".into()]).is_err());
        assert_eq!(s.describe(), ["orders", "team-a-*"]);
    }

    #[test]
    fn no_scope_allows_no_stream_and_says_so() {
        let none = Scopes::none();
        assert!(none.is_restricted());
        assert!(!none.allows("orders") && !none.allows(""));
        assert_eq!(none.describe().len(), 1);
    }
}
