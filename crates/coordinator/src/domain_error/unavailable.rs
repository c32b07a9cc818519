//! Failures of Redis and of the coordinator itself: 503 `REDIS_UNAVAILABLE`, 503
//! `REDIS_STREAM_PROVISIONING_FAILED`, 500 `INTERNAL`.

use rsc_group::replica::reshard::ReshardError;
use rsc_store::StoreError;

/// Redis did not answer, or refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// A store call failed; retry the request later.
    Store {
        /// The store's error.
        cause: String,
    },
    /// A step of an operation that a retry resumes failed.
    Step {
        /// Redis's error.
        cause: String,
    },
    /// A resharding step failed and the store's error was not kept.
    Unexplained,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::Store { cause } => {
                write!(f, "Redis is unavailable: {cause}; retry later")
            }
            Unavailable::Step { cause } => write!(f, "Redis is unavailable: {cause}"),
            Unavailable::Unexplained => f.write_str("Redis is unavailable; retry"),
        }
    }
}

/// Shard streams or their Redis consumer groups could not be provisioned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provisioning {
    /// While creating a group: nothing was created.
    Create {
        /// The provisioning error.
        cause: String,
    },
    /// While scaling: the migration stays PREPARING.
    Scale {
        /// The provisioning error.
        cause: String,
    },
    /// While answering routing or recreating a group.
    Shards {
        /// The provisioning error.
        cause: String,
    },
}

impl std::fmt::Display for Provisioning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Provisioning::Create { cause } => {
                write!(
                    f,
                    "{cause}; nothing was created, retry the request to resume"
                )
            }
            Provisioning::Scale { cause } => write!(
                f,
                "{cause}; the migration stays PREPARING and routing is unchanged — retry the same scale to \
                 resume"
            ),
            Provisioning::Shards { cause } => f.write_str(cause),
        }
    }
}

/// A failure that is nobody's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Internal {
    /// The blocking task that parses member progress failed.
    ProgressParse {
        /// The task's error.
        cause: String,
    },
    /// A resharding flow gave up in a way no input explains.
    Reshard(ReshardError),
}

impl std::fmt::Display for Internal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Internal::ProgressParse { cause } => {
                write!(f, "parsing member progress failed: {cause}")
            }
            Internal::Reshard(e) => e.fmt(f),
        }
    }
}

impl Unavailable {
    /// [`Unavailable::Step`], quoting Redis's own error of `e`.
    pub fn step(e: &StoreError) -> Self {
        Unavailable::Step {
            cause: store_error_text(e),
        }
    }

    /// [`Unavailable::Store`], quoting Redis's own error of `e`.
    pub fn quoting(e: &StoreError) -> Self {
        Unavailable::Store {
            cause: store_error_text(e),
        }
    }
}

/// The text of a store error as raw Redis calls reported it: for a failed command, the Redis error
/// itself (without the store's "Redis command failed" prefix), so messages read as they always did.
pub fn store_error_text(e: &StoreError) -> String {
    e.cause_text()
}
