//! "… expect …": what an answered heartbeat can be asserted to be, each assertion naming what it expected and
//! what came, and returning the answer so assertions chain.

use rsc_group::durability::Signals;
use rsc_group::model::{Group, ShardSet};
use rsc_protocol::wire::{HeartbeatRequest, HeartbeatResponse, HeartbeatStatus};

/// How the decision was persisted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persisted {
    /// A rejection: nothing stored.
    Nothing,
    /// A steady answer: the lease renewed (and nothing else).
    Renewal,
    /// A steady answer whose lease had lapsed: not sent (the coordinator reconciles first).
    LeaseLapsed,
    /// A transition, compare-and-set.
    Written,
    /// A transition whose lease or time condition failed: nothing written, not sent.
    ConditionFailed,
}

/// An answered heartbeat, and the group as the store then holds it.
#[derive(Debug)]
pub struct Answered {
    pub request: HeartbeatRequest,
    pub response: HeartbeatResponse,
    pub signals: Signals,
    pub persisted: Persisted,
    /// Whether the store took a write for it.
    pub wrote: bool,
    pub stored: Group,
}

fn shards(list: &[rsc_protocol::wire::ShardId]) -> ShardSet {
    list.iter().map(|s| s.shard_index).collect()
}

impl Answered {
    pub fn expect(&self, status: HeartbeatStatus) -> &Self {
        assert_eq!(
            self.response.status, status,
            "{} answered {:?}, expected {status:?}: {:#?}",
            self.request.request_id, self.response.status, self.response
        );
        self
    }

    pub fn assigned(&self, expected: &[u32]) -> &Self {
        let got = shards(&self.response.assignment.assigned_shards);
        assert_eq!(
            got,
            super::set(expected),
            "assigned shards of {}",
            self.request.member_id
        );
        self
    }

    pub fn pending(&self, expected: &[u32]) -> &Self {
        let got = shards(&self.response.assignment.pending_shards);
        assert_eq!(
            got,
            super::set(expected),
            "pending shards of {}",
            self.request.member_id
        );
        self
    }

    pub fn epoch(&self, expected: i64) -> &Self {
        assert_eq!(
            self.response.member_epoch, expected,
            "member epoch of {}",
            self.request.member_id
        );
        self
    }

    /// The answer's read fences (shard → switch point).
    pub fn fences(&self, expected: &[(u32, &str)]) -> &Self {
        let expected: std::collections::BTreeMap<String, String> = expected
            .iter()
            .map(|(s, p)| (s.to_string(), (*p).to_owned()))
            .collect();
        assert_eq!(
            self.response.read_fences, expected,
            "read fences of {}",
            self.request.member_id
        );
        self
    }

    pub fn persisted(&self, expected: Persisted) -> &Self {
        assert_eq!(
            self.persisted, expected,
            "how {} was persisted",
            self.request.request_id
        );
        self
    }

    /// Nothing was written for it.
    pub fn stored_nothing(&self) -> &Self {
        assert!(
            !self.wrote,
            "{} wrote the group: {:#?}",
            self.request.request_id, self.stored
        );
        self
    }

    /// An OK answer states exactly what the store holds for the member (invariant 2).
    pub fn states_what_is_stored(&self) -> &Self {
        let m = self
            .stored
            .members
            .get(&self.request.member_id)
            .unwrap_or_else(|| panic!("{} is not stored", self.request.member_id));
        assert_eq!(
            self.response.member_epoch, m.member_epoch,
            "epoch as stored"
        );
        assert_eq!(
            shards(&self.response.assignment.assigned_shards),
            m.assigned,
            "assignment as stored"
        );
        assert_eq!(
            self.response.metadata_version, self.stored.metadata_version,
            "metadataVersion as stored"
        );
        self
    }
}
