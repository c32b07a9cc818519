//! Failures of the stored metadata itself: unreadable (fail closed), suspected of a rollback, epochs that
//! cannot grow.

use rsc_group::model::EpochOverflow;

/// What is unreadable or inconsistent (409 `METADATA_CORRUPT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Corrupt {
    /// The store found the metadata unreadable (`cause`: the store's error).
    Store {
        /// The store's error.
        cause: String,
    },
    /// A group's metadata key holds an aggregate that does not parse.
    Unreadable {
        /// The metadata key.
        key: String,
        /// Why it does not parse.
        cause: String,
    },
    /// A group's metadata key disagrees with itself.
    Inconsistent {
        /// The metadata key.
        key: String,
        /// The revision of the hash.
        hash_revision: u64,
        /// The `storeRevision` of the aggregate.
        aggregate_revision: u64,
        /// The stream prefix the aggregate names.
        stream: String,
        /// The consumer group the aggregate names.
        group: String,
    },
    /// A group's store revision is at its largest value.
    RevisionExhausted {
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
        /// The revision.
        revision: u64,
    },
    /// A stream record does not parse.
    StreamRecordUnreadable {
        /// The stream record's key.
        key: String,
        /// Why it does not parse.
        cause: String,
    },
    /// A stream record's store revision is at its largest value.
    StreamRevisionExhausted {
        /// The stream record's key.
        key: String,
    },
    /// A recreate found the group's key unreadable: it does not replace such a key.
    Unreplaceable(Box<Corrupt>),
    /// An offset reset's expiry of the members whose lease lapsed would overflow an epoch.
    ResetExpiryOverflow {
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
        /// The overflow.
        overflow: EpochOverflow,
    },
}

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Corrupt::Store { cause } => write!(
                f,
                "{cause}; the group fails closed until its metadata key is restored from backup"
            ),
            Corrupt::Unreadable { key, cause } => write!(
                f,
                "metadata key {key} is unreadable ({cause}); the group fails closed until it is restored from \
                 backup"
            ),
            Corrupt::Inconsistent {
                key,
                hash_revision,
                aggregate_revision,
                stream,
                group,
            } => write!(
                f,
                "metadata key {key} is inconsistent (hash revision {hash_revision}, aggregate storeRevision \
                 {aggregate_revision}, group {stream}/{group}); restore it from backup"
            ),
            Corrupt::RevisionExhausted {
                stream,
                group,
                revision,
            } => write!(
                f,
                "the store revision {revision} of group {stream}/{group} cannot be incremented; restore the key \
                 from backup"
            ),
            Corrupt::StreamRecordUnreadable { key, cause } => {
                write!(f, "stream record {key} is unreadable: {cause}")
            }
            Corrupt::StreamRevisionExhausted { key } => write!(
                f,
                "stream record {key} has a store revision that cannot be incremented; restore it from backup"
            ),
            Corrupt::ResetExpiryOverflow {
                stream,
                group,
                overflow,
            } => write!(
                f,
                "expiring the lapsed members of {stream}/{group} would overflow an epoch ({overflow:?}); recreate \
                 the group"
            ),
            Corrupt::Unreplaceable(inner) => write!(
                f,
                "{inner}; recreate cannot replace an unreadable key: keep a copy (DUMP), delete the key, then \
                 call recreate again"
            ),
        }
    }
}

/// Why a mutation or a routing answer is refused over a suspected rollback (409
/// `METADATA_ROLLBACK_SUSPECTED`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Suspected {
    /// An admin mutation of a suspected group; `why` is the core's account of the suspicion and the ways out
    /// (`rsc_group::durability::mutation_block`).
    MutationsBlocked {
        /// The core's text.
        why: String,
    },
    /// A producer reported a metadata version above the stored one.
    ProducerAhead {
        /// The version the producer saw.
        observed: i64,
        /// The version Redis holds.
        stored: i64,
        /// What became of the observation.
        note: ObservationNote,
    },
}

/// What became of a producer's observation of a newer metadata version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObservationNote {
    /// The principal has no live member in the group and produces to no shard of its stream: logged only.
    NoStake {
        /// The principal.
        principal: String,
    },
    /// The principal was first seen producing after the group's routing last changed: logged only.
    LateProducer {
        /// The principal.
        principal: String,
        /// When it was first seen producing (epoch ms).
        first_seen_ms: i64,
        /// When the group's routing last changed (epoch ms).
        cutoff_ms: i64,
    },
    /// The principal holds neither MEMBER nor ADMIN: logged only.
    NoRole {
        /// The principal.
        principal: String,
    },
    /// Recorded as evidence; `block` is the core's account of the suspicion (None: the group is not
    /// suspected after all).
    Recorded {
        /// The core's text, as for [`Suspected::MutationsBlocked`].
        block: Option<String>,
    },
    /// The principal may raise a suspicion, but the evidence was not written to the group: logged only.
    NotRecorded {
        /// Why.
        why: Unrecorded,
        /// The core's account of a suspicion the group already carries (None: none).
        block: Option<String>,
    },
}

/// Why rollback evidence that may raise a suspicion was logged but not written to the group's aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unrecorded {
    /// An operator dismissed this principal's evidence on the group within the last hour.
    Quieted,
    /// The principal raised its budget of suspicions in the current window.
    OverBudget,
    /// Every compare-and-set lost to another write of the group (each time decided again on a fresh read).
    KeptChanging,
    /// The group was deleted or recreated as a new lifecycle meanwhile: the evidence concerned the old one.
    Replaced,
    /// Redis failed, or the group could not be read back, while the evidence was being written.
    Unavailable,
}

impl std::fmt::Display for Unrecorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unrecorded::Quieted => {
                "an operator dismissed this principal's evidence on the group within the last hour"
            }
            Unrecorded::OverBudget => {
                "this principal raised too many suspicions in the current window"
            }
            Unrecorded::KeptChanging => {
                "the group kept changing while the evidence was being written; report it again"
            }
            Unrecorded::Replaced => {
                "the group was deleted or recreated meanwhile; the evidence concerned the old lifecycle"
            }
            Unrecorded::Unavailable => {
                "Redis could not be written or read while the evidence was being written; report it again"
            }
        })
    }
}

impl std::fmt::Display for Suspected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Suspected::MutationsBlocked { why } => f.write_str(why),
            Suspected::ProducerAhead {
                observed,
                stored,
                note,
            } => write!(
                f,
                "this producer saw metadataVersion {observed} but Redis holds {stored}: the group's metadata \
                 rolled back. Routing is refused rather than moved backwards; {note}"
            ),
        }
    }
}

impl std::fmt::Display for ObservationNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObservationNote::NoStake { principal } => write!(
                f,
                "principal {principal:?} has no live member in this group and produces to no shard of this \
                 stream, so its observation was logged but not recorded as rollback evidence"
            ),
            ObservationNote::LateProducer {
                principal,
                first_seen_ms,
                cutoff_ms,
            } => write!(
                f,
                "principal {principal:?} has no live member in this group and was first seen producing to this \
                 stream at {}, after the group's routing last changed ({}), so its observation was logged but \
                 not recorded as rollback evidence",
                crate::runtime::clock::iso_ms(*first_seen_ms),
                crate::runtime::clock::iso_ms(*cutoff_ms)
            ),
            ObservationNote::NoRole { principal } => write!(
                f,
                "principal {principal:?} holds neither MEMBER nor ADMIN, so its observation was logged but not \
                 recorded as rollback evidence"
            ),
            ObservationNote::Recorded { block } => {
                f.write_str(block.as_deref().unwrap_or_default())
            }
            ObservationNote::NotRecorded { why, block } => {
                write!(
                    f,
                    "the observation was logged but not recorded as rollback evidence: {why}"
                )?;
                match block {
                    Some(b) => write!(f, ". {b}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// An epoch or version that cannot grow (409 `EPOCHS_EXHAUSTED`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exhausted {
    /// A transition would overflow; nothing was written.
    Overflow(EpochOverflow),
    /// A recreate's new lifecycle would have to start above the largest epoch.
    Recreate {
        /// The overflow (its value: the highest version clients reported).
        overflow: EpochOverflow,
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
    },
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exhausted::Overflow(e) => write!(f, "{e}; nothing was written"),
            Exhausted::Recreate {
                overflow,
                stream,
                group,
            } => write!(
                f,
                "{overflow}: a new lifecycle must start above every version clients reported ({}), and no \
                 epoch is left above it. If that evidence is bogus, dismiss the suspicion (POST \
                 /coord/v1/streams/{stream}/groups/{group}/durability/dismiss) instead",
                overflow.value
            ),
        }
    }
}
