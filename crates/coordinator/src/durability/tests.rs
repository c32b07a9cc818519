//! Tests of the durability signal: how heartbeat evidence is classified by what was ahead.

use super::*;
use rsc_group::model::Member;
use serde_json::json;

fn req(epoch: i64, version: i64) -> HeartbeatRequest {
    serde_json::from_value(json!({
        "protocolVersion": 1, "requestId": "r", "memberId": "m1", "memberEpoch": epoch,
        "metadataVersion": version,
        "runtimeConsumerCapacity": {"runtimeMaxConcurrency": 1, "availableConcurrency": 1}
    }))
    .unwrap()
}

#[test]
fn heartbeat_evidence_is_classified_by_what_was_ahead() {
    let mut g = Group::new("p", "g", 2, 0, "l");
    let mut m = Member::new("m1", "m1", 0);
    m.member_epoch = 4;
    g.members.insert("m1".into(), m);
    let none = Signals::default();
    assert!(member_signal(&g, "m1", &req(9, 9), &none).is_none());
    let reg = Signals {
        metadata_regression: true,
        ..Signals::default()
    };
    let s = member_signal(&g, "m1", &req(4, 9), &reg).unwrap();
    assert_eq!(
        (s.kind, s.observed, s.stored),
        (SignalKind::MemberMetadataVersion, 9, 1)
    );
    let s = member_signal(&g, "m1", &req(7, 1), &reg).unwrap();
    assert_eq!(
        (s.kind, s.observed, s.stored),
        (SignalKind::MemberEpoch, 7, 4)
    );
    let back = Signals {
        rebalance_regression: true,
        ..Signals::default()
    };
    assert!(
        member_signal(&g, "m1", &req(4, 1), &back).is_none(),
        "a shard reported revoking again is counted, not recorded"
    );
}
