//! The console's remaining admin actions in the browser, one coordinator and one browser session for all
//! of them: create a group, reset a group's position (plan first), roll back a migration, force-complete a
//! migration and delete a group. Each goes
//! through the confirmation dialog, which must name its target and refuse to submit without a reason (the
//! coordinator sees nothing until a reason is given); afterwards the effect is checked through the coord/v1
//! API and the audit log must hold the action with the reason and the signed-in user. The migrations are
//! scale-ins of streams with unread records on the removed shard and no member, so they stay active (the
//! drain cannot finish) until the console ends them.

use super::browser::{Browser, WAIT};
use super::{ADMIN_PASSWORD, admin_call, produce, row, sign_in, start_rsc};
use reqwest::Method;
use rsc_testkit::RedisServer;
use serde_json::{Value, json};
use std::time::Instant;

/// Opens the dialog with `button`, checks its title and text name every one of `names`, and that submitting
/// it without a reason is refused in the page. Leaves the dialog open with the reason still empty.
async fn open_and_refuse_empty_reason(b: &Browser, button: &str, names: &[&str], shot: &str) {
    b.click(button).await;
    b.wait_css("dialog[open] #confirm-reason").await;
    let title = b.text("#confirm-title").await;
    let text = b.text("#confirm-text").await;
    let ok = b.text("#confirm-ok").await;
    for name in names {
        assert!(
            title.contains(name) && ok.contains(name),
            "the dialog's title and button name {name}: {title:?} / {ok:?}"
        );
        assert!(
            text.contains(name),
            "the dialog's text names {name}: {text}"
        );
    }
    b.click("#confirm-ok").await;
    let refused = b.text("#confirm-error").await;
    assert!(
        refused.contains("reason is required"),
        "an empty reason is refused: {refused}"
    );
    assert!(
        b.exists("dialog[open]").await,
        "the dialog stays open after the refusal"
    );
    assert_eq!(
        b.js("return document.activeElement && document.activeElement.id")
            .await,
        json!("confirm-reason"),
        "the reason field gets the focus"
    );
    b.screenshot(shot).await;
    b.assert_accessible(shot).await;
}

/// Types the reason and confirms; waits for the dialog to close.
async fn confirm_with(b: &Browser, reason: &str) {
    b.fill("#confirm-reason", reason).await;
    b.click("#confirm-ok").await;
    b.wait_for(
        "the dialog to close after the action",
        "return !document.querySelector('dialog[open]')",
        WAIT,
    )
    .await;
}

/// The audit records of `action` on `prefix` (newest first).
async fn audit(url: &str, action: &str, prefix: &str) -> Vec<Value> {
    let (status, body) = admin_call(
        Method::GET,
        &format!("{url}/coord/v1/monitoring/audit?action={action}&streamPrefix={prefix}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["records"].as_array().cloned().unwrap_or_default()
}

/// Asserts the audit log holds a successful `action` on `prefix`/`group` by the console's user with `reason`.
async fn assert_audited(url: &str, action: &str, prefix: &str, group: &str, reason: &str) {
    let records = audit(url, action, prefix).await;
    assert!(
        records.iter().any(|r| r["outcome"] == "SUCCESS"
            && r["principal"] == "admin"
            && r["consumerGroup"] == group
            && r["reason"] == reason),
        "{action} on {prefix}/{group} with reason {reason:?} in the audit log: {records:?}"
    );
}

/// A stream of two shards with unread records on shard 1, scaled in to one shard through the API: the
/// migration cannot drain, so it stays active. Returns its id once the group page may act on it.
async fn stuck_scale_in(url: &str, redis_url: &str, prefix: &str) -> String {
    let (status, body) = admin_call(
        Method::POST,
        &format!("{url}/coord/v1/streams/{prefix}"),
        Some(json!({"initialShardCount": 2, "requestedBy": "test", "reason": "setup"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    produce(redis_url, prefix, 1, 5).await;
    let (status, body) = admin_call(
        Method::POST,
        &format!("{url}/coord/v1/streams/{prefix}/scale"),
        Some(json!({"targetShardCount": 1, "requestedBy": "test", "reason": "setup"})),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let id = body["migrations"][0]["reshardingId"]
        .as_str()
        .expect("a migration id")
        .to_owned();
    let m = until_migration(url, prefix, &id, &["ACTIVE", "DRAINING"]).await;
    assert_eq!(m["rollbackAllowed"], true, "{m}");
    id
}

/// Polls the migration until its state is one of `states` (bounded).
async fn until_migration(url: &str, prefix: &str, id: &str, states: &[&str]) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, m) = admin_call(
            Method::GET,
            &format!("{url}/coord/v1/streams/{prefix}/groups/{prefix}/migrations/{id}"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{m}");
        if states.iter().any(|s| m["state"] == *s) {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "migration {id} did not reach {states:?}: {m}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn group_status(url: &str, prefix: &str, group: &str) -> u16 {
    admin_call(
        Method::GET,
        &format!("{url}/coord/v1/streams/{prefix}/groups/{group}"),
        None,
    )
    .await
    .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_creates_a_group_rolls_back_force_completes_and_deletes_with_reasons() {
    let redis = RedisServer::start();
    let rsc = start_rsc(&redis, None);
    let url = rsc.url();
    let (status, body) = admin_call(
        Method::POST,
        &format!("{url}/coord/v1/streams/shop"),
        Some(json!({"initialShardCount": 1, "requestedBy": "test", "reason": "setup"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let rollback_id = stuck_scale_in(&url, &redis.url(), "roll").await;
    let force_id = stuck_scale_in(&url, &redis.url(), "force").await;

    let b = Browser::start().await;
    sign_in(&b, &url, "admin", ADMIN_PASSWORD).await;

    // Create group: the dialog names the group and its stream once they are typed in.
    create_group_dialog(&b).await;
    assert_eq!(
        group_status(&url, "shop", "billing").await,
        404,
        "nothing was sent without a reason"
    );
    confirm_with(&b, "billing reads the shop stream").await;
    b.wait_for(
        "the new group on the overview",
        &row("shop/billing", ".members"),
        WAIT,
    )
    .await;
    assert_eq!(group_status(&url, "shop", "billing").await, 200);
    assert_audited(
        &url,
        "CREATE_GROUP",
        "shop",
        "billing",
        "billing reads the shop stream",
    )
    .await;

    // Reset the position of shop/shop: the dialog shows the plan (a dry run: nothing moves), then applies it.
    produce(&redis.url(), "shop", 0, 3).await;
    b.js("location.hash = '#/group/shop/shop'; return true")
        .await;
    b.click("#reset-offsets").await;
    b.wait_css("dialog[open] #confirm-field-to").await;
    assert!(b.text("#confirm-title").await.contains("shop"));
    b.select("#confirm-field-to", "LATEST").await;
    b.click("#reset-plan-button").await;
    b.wait_for(
        "the plan: shard 0 skips the 3 unread records",
        "const t = document.querySelector('#reset-plan-table'); \
         return !!t && t.innerText.includes('Plan (dry run)') && t.innerText.includes('SKIP') \
         && t.innerText.includes('3 skipped')",
        WAIT,
    )
    .await;
    b.screenshot("14-reset-position-dialog").await;
    b.assert_accessible("14-reset-position-dialog").await;
    let offsets = |url: String| async move {
        let (status, body) = admin_call(
            Method::GET,
            &format!("{url}/coord/v1/monitoring/streams/shop/groups/shop/offsets"),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body.to_string()
    };
    let before = offsets(url.clone()).await;
    assert!(
        before.contains("\"groupLastDeliveredId\":\"0-0\""),
        "the plan moved nothing: {before}"
    );
    confirm_with(&b, "skip the test records").await;
    let after = offsets(url.clone()).await;
    assert!(
        !after.contains("\"groupLastDeliveredId\":\"0-0\""),
        "the reset moved shard 0: {after}"
    );
    assert_audited(
        &url,
        "RESET_OFFSETS",
        "shop",
        "shop",
        "skip the test records",
    )
    .await;
    // SHIFT: the plan of moving back two records reads the last two of shard 0 again (a dry run, cancelled).
    b.click("#reset-offsets").await;
    b.wait_css("dialog[open] #confirm-field-shift").await;
    b.select("#confirm-field-to", "SHIFT").await;
    b.js("document.querySelector('#confirm-field-shift').value = '-2'; return true")
        .await;
    b.click("#reset-plan-button").await;
    b.wait_for(
        "the SHIFT plan: shard 0 reads its last 2 records again",
        "const t = document.querySelector('#reset-plan-table'); \
         return !!t && t.innerText.includes('to SHIFT by -2') && t.innerText.includes('2 re-read')",
        WAIT,
    )
    .await;
    b.click("#confirm-cancel").await;

    // Roll back the stuck scale-in of "roll" from its group page.
    b.js("location.hash = '#/group/roll/roll'; return true")
        .await;
    open_and_refuse_empty_reason(&b, "#rollback", &[&rollback_id], "11-rollback-dialog").await;
    assert!(b.text("#confirm-text").await.contains("roll"));
    // Still active: nothing was sent without a reason.
    until_migration(&url, "roll", &rollback_id, &["ACTIVE", "DRAINING"]).await;
    confirm_with(&b, "the scale-in was premature").await;
    b.wait_for(
        "no active migration and a rolled-back one in the history",
        "return !!document.querySelector('#no-migration') \
         && !!document.querySelector('#migration-history .b-rolled-back')",
        WAIT,
    )
    .await;
    let m = until_migration(&url, "roll", &rollback_id, &["ROLLED_BACK"]).await;
    assert_eq!(m["state"], "ROLLED_BACK");
    let (_, routing) = admin_call(
        Method::GET,
        &format!("{url}/coord/v1/streams/roll/groups/roll/producer-routing"),
        None,
    )
    .await;
    assert_eq!(routing["shardCount"], 2, "back to two shards: {routing}");
    assert_audited(
        &url,
        "ROLLBACK_MIGRATION",
        "roll",
        "roll",
        "the scale-in was premature",
    )
    .await;

    // Force-complete the stuck scale-in of "force". First the triage names why it is stuck: the group has
    // no consumer and 5 unread records on the removed shard 1, with the ways out.
    b.js("location.hash = '#/group/force/force'; return true")
        .await;
    b.wait_for(
        "the migration triage naming the group that holds it",
        "const e = document.querySelector('#migration-held'); \
         return e && e.innerText.includes('NO_LIVE_CONSUMER') \
         && e.innerText.includes('group force has no live consumer and 5 unread record(s) on removed shard(s) 1') \
         && e.innerText.includes('FORCE_COMPLETE') && e.innerText.includes('START_CONSUMER')",
        WAIT,
    )
    .await;
    b.screenshot("13-migration-held").await;
    open_and_refuse_empty_reason(
        &b,
        "#force-complete",
        &[&force_id],
        "12-force-complete-dialog",
    )
    .await;
    assert!(b.text("#confirm-text").await.contains("force"));
    until_migration(&url, "force", &force_id, &["ACTIVE", "DRAINING"]).await;
    confirm_with(&b, "the backlog on shard 1 is abandoned").await;
    b.wait_for(
        "no active migration and a force-completed one in the history",
        "return !!document.querySelector('#no-migration') \
         && !!document.querySelector('#migration-history .b-force-completed')",
        WAIT,
    )
    .await;
    let m = until_migration(&url, "force", &force_id, &["FORCE_COMPLETED"]).await;
    assert_eq!(m["state"], "FORCE_COMPLETED");
    assert_audited(
        &url,
        "FORCE_COMPLETE_MIGRATION",
        "force",
        "force",
        "the backlog on shard 1 is abandoned",
    )
    .await;

    // A group that does not exist: its page says so and offers no Scale or Delete (issue #33).
    b.js("location.hash = '#/group/shop/nobody'; return true")
        .await;
    b.wait_css("#group-missing").await;
    assert!(
        b.text("#group-missing").await.contains("GROUP_NOT_FOUND"),
        "{}",
        b.text("#group-missing").await
    );
    assert_eq!(
        b.js("const a = document.querySelector('#scale'); return !a || a.closest('[hidden]') !== null")
            .await,
        serde_json::Value::Bool(true),
        "an unknown group offers no Scale"
    );

    // Delete the group created above.
    b.js("location.hash = '#/group/shop/billing'; return true")
        .await;
    open_and_refuse_empty_reason(
        &b,
        "#delete-group",
        &["shop", "billing"],
        "13-delete-group-dialog",
    )
    .await;
    assert_eq!(group_status(&url, "shop", "billing").await, 200);
    confirm_with(&b, "billing moved to another stream").await;
    b.wait_for(
        "the overview without the deleted group",
        "return location.hash === '#/overview' && !!document.querySelector('[data-group=\"shop/shop\"]') \
         && !document.querySelector('[data-group=\"shop/billing\"]')",
        WAIT,
    )
    .await;
    assert_eq!(group_status(&url, "shop", "billing").await, 404);
    assert_eq!(
        group_status(&url, "shop", "shop").await,
        200,
        "only the named group went"
    );
    assert_audited(
        &url,
        "DELETE_GROUP",
        "shop",
        "billing",
        "billing moved to another stream",
    )
    .await;

    // Every action above is in the console's audit view too.
    b.js("location.hash = '#/audit'; return true").await;
    b.wait_css("#audit-table").await;
    b.wait_for(
        "the four actions in the audit view",
        "const t = document.querySelector('#audit-table'); return !!t \
         && ['CREATE_GROUP', 'ROLLBACK_MIGRATION', 'FORCE_COMPLETE_MIGRATION', 'DELETE_GROUP'] \
            .every((a) => !!t.querySelector('tr[data-action=\"' + a + '\"]'))",
        WAIT,
    )
    .await;
    b.close().await;
}

/// Opens the create-group dialog, types the target in (the dialog then names it in its title, text and
/// button) and checks that it refuses to submit without a reason. Leaves the dialog open.
async fn create_group_dialog(b: &Browser) {
    b.click("#create-group").await;
    b.wait_css("dialog[open] #confirm-field-group").await;
    let untyped = b.text("#confirm-title").await;
    assert!(
        !untyped.contains("billing") && untyped.contains("type its name"),
        "{untyped}"
    );
    b.fill("#confirm-field-prefix", "shop").await;
    b.fill("#confirm-field-group", "billing").await;
    let title = b.text("#confirm-title").await;
    let text = b.text("#confirm-text").await;
    let ok = b.text("#confirm-ok").await;
    assert!(
        title.contains("\u{201c}billing\u{201d}") && title.contains("\u{201c}shop\u{201d}"),
        "the title names the group and its stream: {title}"
    );
    assert!(text.contains("billing") && text.contains("shop"), "{text}");
    assert!(
        ok.contains("shop/billing"),
        "the button names the target: {ok}"
    );
    b.click("#confirm-ok").await;
    let refused = b.text("#confirm-error").await;
    assert!(refused.contains("reason is required"), "{refused}");
    assert_eq!(
        b.js("return document.activeElement && document.activeElement.id")
            .await,
        json!("confirm-reason"),
        "the reason field gets the focus"
    );
    b.screenshot("10-create-group-dialog").await;
    b.assert_accessible("10-create-group-dialog").await;
}
