//! `--reason` and `--requested-by`, which every audited change `rsc` makes takes (scale, rollback,
//! force-complete, offsets reset, durability repair and recreate), and the `requestedBy` it sends.

use super::Session;
use clap::Args;

/// Who asks for a change and why, as recorded in the audit log.
#[derive(Args, Debug)]
pub struct Attribution {
    /// Why (recorded in the audit log).
    #[arg(long)]
    pub reason: String,
    /// Who asks (default: the logged-in user).
    #[arg(long)]
    pub requested_by: Option<String>,
}

impl Attribution {
    /// `requestedBy` for the request: the flag, else the logged-in user, else `rsc`.
    pub fn requested_by(&self, session: &Session) -> String {
        session.requested_by(self.requested_by.as_deref())
    }
}
