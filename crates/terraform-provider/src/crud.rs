//! The plumbing `rsc_stream` and `rsc_consumer_group` share: a stream is its default group, so both
//! resources delete a group the same way (this run's reason, a group already gone is success), report a
//! refused mutation the same way (a warning in the provider log, a diagnostic on the attribute the
//! coordinator names) and point at `terraform import` when what they create already exists.

use rsc_client::AdminError;
use tf_provider::Diagnostics;

use crate::api::Api;
use crate::diag;

/// Deletes group `group` of stream `prefix` (for `rsc_stream`, its default group: the stream), with this
/// run's reason (the provider's `default_reason`: the resource is gone from the configuration, and the
/// reason in state is the one of the run that last changed it). `what` names it in the log and in the
/// diagnostic ("consumer group \"g\" of stream \"p\"", "stream \"p\""). A group already gone is success.
pub async fn delete_group(
    api: &Api,
    diags: &mut Diagnostics,
    prefix: &str,
    group: &str,
    force: bool,
    what: &str,
) -> Option<()> {
    let reason = api.reason(None);
    match api.admin.delete_group(prefix, group, force, &reason).await {
        Ok(done) => {
            tracing::info!(request_id = %done.request_id, stream = %prefix, group = %group, force, %reason, "deleted {what}");
            Some(())
        }
        Err(e) if e.error.error_code() == Some("GROUP_NOT_FOUND") => Some(()),
        Err(e) => {
            failed(diags, &e, &format!("delete {what}"), "force_destroy");
            None
        }
    }
}

/// A mutation the coordinator refused (or that did not reach it): a warning in the provider log and the
/// diagnostic (`what`: "create stream \"p\"", …; `attr`: the attribute to point at when the coordinator's
/// message names none).
pub fn failed(diags: &mut Diagnostics, e: &AdminError, what: &str, attr: &str) {
    tracing::warn!(request_id = %e.request_id, error = %e.error, "{what} failed");
    diag::mutation(diags, what, e, attr);
}

/// The warning after a create refused because the resource exists: import it (`id`: its import id).
pub fn import_hint(diags: &mut Diagnostics, summary: &str, id: &str) {
    diag::root_warning(
        diags,
        summary,
        format!("To manage it with Terraform, import it: terraform import <address> {id}"),
    );
}
