//! The one way decoding a script's reply fails.

/// Redis answered a script or command of this crate with something it never returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// The reply does not have the script's shape.
    #[error("unexpected reply from Redis: {detail}")]
    UnexpectedReply { detail: String },
}
