//! Refusals of who the caller is: member caps (409 `TOO_MANY_MEMBERS`) and what a principal may not do (403).

/// The cap a join would exceed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberCap {
    /// The group's member cap (`coordinator.group.max-members`).
    Group {
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
        /// Its live members.
        live: usize,
        /// The cap.
        cap: u32,
        /// The member not admitted.
        member: String,
    },
    /// What one principal may hold in a group (`coordinator.group.max-members-per-principal`).
    Principal {
        /// The principal.
        principal: String,
        /// The live members it holds.
        held: usize,
        /// The stream prefix.
        stream: String,
        /// The consumer group.
        group: String,
        /// The cap.
        cap: u32,
        /// The member not admitted.
        member: String,
    },
}

impl std::fmt::Display for MemberCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemberCap::Group {
                stream,
                group,
                live,
                cap,
                member,
            } => write!(
                f,
                "group {stream}/{group} already has {live} members, its cap (coordinator.group.max-members \
                 {cap}); member {member:?} is not admitted: stop some members, or raise the cap"
            ),
            MemberCap::Principal {
                principal,
                held,
                stream,
                group,
                cap,
                member,
            } => write!(
                f,
                "principal {principal:?} already holds {held} members of group {stream}/{group}, its cap \
                 (coordinator.group.max-members-per-principal {cap}); member {member:?} is not admitted"
            ),
        }
    }
}

/// What the caller may not do (403 `FORBIDDEN`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forbidden {
    /// A Grafana query for a stream outside the principal's scopes.
    OutsideScopes {
        /// The stream prefix asked for.
        stream: String,
    },
    /// A quiesce report for a producer that fetches routing as another principal.
    ProducerOwner {
        /// The producer id.
        producer: String,
        /// The stream prefix.
        stream: String,
        /// The principal the producer fetches routing as.
        owner: String,
    },
}

impl std::fmt::Display for Forbidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Forbidden::OutsideScopes { stream } => write!(
                f,
                "streamPrefix {stream:?} is outside the streams this principal may read"
            ),
            Forbidden::ProducerOwner {
                producer,
                stream,
                owner,
            } => write!(
                f,
                "producer {producer:?} of stream {stream:?} fetches routing as principal {owner:?}; only that \
                 principal (or an ADMIN) may report it quiesced"
            ),
        }
    }
}
