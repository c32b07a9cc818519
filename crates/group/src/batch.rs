//! Combining transitions decided one after another into a single compare-and-set.
//!
//! A replica that has several heartbeats of one group waiting to write decides them in sequence, each on the
//! aggregate the previous one produced, and commits the last aggregate once. That is only equivalent to
//! committing them one by one if the lease conditions of each still mean the same thing when all conditions
//! are checked before all writes (as the CAS script does). They do when no member named by a later transition
//! (in a condition or a lease operation) is named by an earlier one of the same batch: a transition's lease
//! operations then never touch what another one's conditions look at. [`Batch::add`] refuses anything else,
//! and the refused transition is decided again after the batch is written.

use crate::heartbeat::Transition;
use std::collections::BTreeSet;

/// Transitions combined so far: the newest aggregate, and the union of conditions and lease operations.
#[derive(Debug, Default)]
pub struct Batch {
    combined: Transition,
    named: BTreeSet<String>,
    len: usize,
}

impl Batch {
    /// Adds the next transition, decided on the aggregate of the previous one. Returns it back, untouched,
    /// when it cannot be combined (it names a member the batch already names, or it carries no aggregate).
    pub fn add(&mut self, t: Box<Transition>) -> Result<(), Box<Transition>> {
        if t.group.is_none() {
            return Err(t);
        }
        let names: BTreeSet<&String> = t.named_members().collect();
        if names.iter().any(|n| self.named.contains(*n)) {
            return Err(t);
        }
        self.named.extend(names.into_iter().cloned());
        let t = *t;
        let c = &mut self.combined;
        c.group = t.group;
        c.must_be_lapsed.extend(t.must_be_lapsed);
        c.must_be_live.extend(t.must_be_live);
        c.renew.extend(t.renew);
        c.remove.extend(t.remove);
        c.not_before_ms = c.not_before_ms.max(t.not_before_ms);
        self.len += 1;
        Ok(())
    }

    /// How many transitions were combined.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The newest aggregate the batch holds (None while empty).
    pub fn group(&self) -> Option<&crate::model::Group> {
        self.combined.group.as_ref()
    }

    /// The one transition to commit (None while empty).
    pub fn into_transition(self) -> Option<Transition> {
        (self.len > 0).then_some(self.combined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Group;

    fn t(
        group_tag: &str,
        lapsed: &[&str],
        live: &[&str],
        renew: &[&str],
        nb: i64,
    ) -> Box<Transition> {
        let g = Group::new(group_tag, "g", 4, 0, "life");
        Box::new(Transition {
            group: Some(g),
            must_be_lapsed: lapsed.iter().map(|s| s.to_string()).collect(),
            must_be_live: live.iter().map(|s| s.to_string()).collect(),
            renew: renew.iter().map(|s| s.to_string()).collect(),
            remove: vec![],
            not_before_ms: nb,
        })
    }

    #[test]
    fn disjoint_transitions_combine_into_the_last_aggregate_and_the_union_of_conditions() {
        let mut b = Batch::default();
        assert!(b.add(t("one", &["x"], &[], &["a"], 5)).is_ok());
        assert!(b.add(t("two", &[], &["c"], &["b"], 3)).is_ok());
        assert_eq!(b.len(), 2);
        let c = b.into_transition().expect("two combined");
        assert_eq!(c.group.expect("aggregate").stream_prefix, "two");
        assert_eq!(c.must_be_lapsed, vec!["x"]);
        assert_eq!(c.must_be_live, vec!["c"]);
        assert_eq!(c.renew, vec!["a", "b"]);
        assert_eq!(c.not_before_ms, 5);
    }

    #[test]
    fn a_transition_naming_a_member_the_batch_names_is_refused_untouched() {
        let mut b = Batch::default();
        assert!(b.add(t("one", &[], &[], &["a"], 0)).is_ok());
        // A later transition that needs a's lease live would be checked before a's renewal is written.
        let refused = b
            .add(t("two", &[], &["a"], &["b"], 0))
            .expect_err("overlap");
        assert_eq!(refused.must_be_live, vec!["a"]);
        let refused = b.add(t("three", &["a"], &[], &[], 0)).expect_err("overlap");
        assert_eq!(refused.must_be_lapsed, vec!["a"]);
        assert_eq!(b.len(), 1);
        assert_eq!(b.group().expect("aggregate").stream_prefix, "one");
    }

    #[test]
    fn a_transition_without_an_aggregate_is_refused_and_an_empty_batch_commits_nothing() {
        let mut b = Batch::default();
        assert!(b.add(Box::default()).is_err());
        assert!(b.is_empty());
        assert!(b.into_transition().is_none());
    }
}
