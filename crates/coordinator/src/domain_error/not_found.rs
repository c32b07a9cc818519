//! 404s: a group or a stream that does not exist, and how to create it.

/// Why a stream was not found, by the operation that looked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamNotFound {
    /// Setting the ordering of a stream without a record.
    Ordering {
        /// The stream prefix.
        stream: String,
    },
    /// Scaling a stream without groups.
    Scale {
        /// The stream prefix.
        stream: String,
    },
    /// A producer's quiesce report for a stream without groups.
    Quiesce {
        /// The stream prefix.
        stream: String,
    },
    /// A description of a stream no live group uses.
    Describe {
        /// The stream prefix.
        stream: String,
    },
}

impl std::fmt::Display for StreamNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamNotFound::Ordering { stream } => write!(
                f,
                "stream {stream:?} does not exist; create it with POST /coord/v1/streams/{{p}}"
            ),
            StreamNotFound::Scale { stream } => write!(
                f,
                "stream {stream:?} has no consumer groups; create it first"
            ),
            StreamNotFound::Describe { stream } => write!(
                f,
                "stream {stream:?} does not exist (no live consumer group uses it): create it with POST \
                 /coord/v1/streams/{stream}, or list the streams with GET /coord/v1/monitoring/groups"
            ),
            StreamNotFound::Quiesce { stream } => write!(
                f,
                "stream {stream:?} has no consumer groups; nothing to quiesce for"
            ),
        }
    }
}

/// The message of `CoordError::GroupNotFound`: whether the stream exists, and how to create the group.
pub(super) fn group_not_found_message(p: &str, g: &str, stream_groups: &[String]) -> String {
    let hint = if !stream_groups.is_empty() {
        format!(
            "stream {p:?} exists (groups: {}); add this group with POST /coord/v1/streams/{p}/groups/{g}",
            stream_groups.join(", ")
        )
    } else if p == g {
        format!(
            "stream {p:?} does not exist either; create it with POST /coord/v1/streams/{p} (its first consumer \
             group is named after it)"
        )
    } else {
        format!(
            "stream {p:?} does not exist either; create both with POST /coord/v1/streams/{p}/groups/{g} \
             (POST /coord/v1/streams/{p} would name the stream's first group {p:?})"
        )
    };
    format!("consumer group {g:?} of stream {p:?} does not exist; {hint}")
}
