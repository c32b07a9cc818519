//! Tests of request validation: names (length, whitespace, control and hash-tag characters), shard counts,
//! observed versions, text and heartbeat rules, and messages that name the field and the fix.

use super::*;

type Check = fn(&str) -> Result<(), ValidationError>;

const NAME_CHECKS: [(Check, &str); 3] = [
    (validate_stream_prefix, STREAM_PREFIX),
    (validate_consumer_group, CONSUMER_GROUP),
    (validate_member_id, MEMBER_ID),
];

#[test]
fn ordinary_names_pass() {
    for (check, field) in NAME_CHECKS {
        // Interior spaces are not forbidden; only surrounding whitespace is.
        for ok in [
            "orders",
            "create-order",
            "a",
            "A_b.c-9",
            "10.0.0.7-m0",
            "a b",
        ] {
            assert_eq!(check(ok), Ok(()), "{field}: {ok:?}");
        }
    }
}

#[test]
fn non_ascii_letters_pass() {
    for (check, field) in NAME_CHECKS {
        for ok in ["café", "grüße", "注文", "заказы"] {
            assert_eq!(check(ok), Ok(()), "{field}: {ok:?}");
        }
    }
}

#[test]
fn blank_is_rejected() {
    for (check, field) in NAME_CHECKS {
        for bad in ["", " ", "\t", "   \n"] {
            assert_eq!(check(bad), Err(ValidationError::Blank { field }), "{bad:?}");
        }
    }
}

#[test]
fn length_boundary_is_in_bytes() {
    for (check, field) in NAME_CHECKS {
        assert_eq!(check(&"x".repeat(MAX_ID_LEN)), Ok(()));
        assert_eq!(
            check(&"x".repeat(MAX_ID_LEN + 1)),
            Err(ValidationError::TooLong {
                field,
                max: MAX_ID_LEN,
                actual: MAX_ID_LEN + 1
            })
        );
        // 'é' is two bytes: 100 of them fit exactly, 101 do not.
        assert_eq!(check(&"é".repeat(MAX_ID_LEN / 2)), Ok(()));
        assert_eq!(
            check(&"é".repeat(MAX_ID_LEN / 2 + 1)),
            Err(ValidationError::TooLong {
                field,
                max: MAX_ID_LEN,
                actual: MAX_ID_LEN + 2
            })
        );
    }
}

#[test]
fn surrounding_whitespace_is_rejected() {
    for (check, field) in NAME_CHECKS {
        for bad in [
            " orders",
            "orders ",
            "\torders",
            "orders\n",
            "\u{00A0}orders",
        ] {
            assert_eq!(
                check(bad),
                Err(ValidationError::SurroundingWhitespace { field }),
                "{bad:?}"
            );
        }
    }
}

#[test]
fn control_characters_are_rejected() {
    for (check, field) in NAME_CHECKS {
        for (bad, code) in [
            ("ord\0ers", 0x00),
            ("ord\ters", 0x09),
            ("ord\ners", 0x0A),
            ("ord\u{1B}ers", 0x1B),
            ("ord\u{7F}ers", 0x7F),
            ("ord\u{85}ers", 0x85),
        ] {
            assert_eq!(
                check(bad),
                Err(ValidationError::ControlCharacter { field, code }),
                "{bad:?}"
            );
        }
    }
}

#[test]
fn hash_tag_characters_are_rejected() {
    for (check, field) in NAME_CHECKS {
        for bad in ["{orders}", "ord{ers", "ord}ers", "{", "}"] {
            assert_eq!(
                check(bad),
                Err(ValidationError::HashTagCharacter { field }),
                "{bad:?}"
            );
        }
    }
}

#[test]
fn colon_only_rejected_in_consumer_group() {
    assert_eq!(validate_stream_prefix("app:orders"), Ok(()));
    assert_eq!(validate_member_id("host:1"), Ok(()));
    assert_eq!(
        validate_consumer_group("app:billing"),
        Err(ValidationError::Colon {
            field: CONSUMER_GROUP
        })
    );
    assert_eq!(
        validate_consumer_group(":"),
        Err(ValidationError::Colon {
            field: CONSUMER_GROUP
        })
    );
}

#[test]
fn messages_name_the_field_and_the_fix() {
    let err = validate_stream_prefix("{orders}").unwrap_err();
    assert_eq!(err.field(), "streamPrefix");
    assert_eq!(
        err.to_string(),
        "streamPrefix: must not contain '{' or '}' (Redis Cluster hash-tag characters)"
    );
    let err = validate_consumer_group("a:b").unwrap_err();
    assert_eq!(err.field(), "consumerGroup");
    assert_eq!(
        err.to_string(),
        "consumerGroup: must not contain ':' (the group tag '{<streamPrefix>:<consumerGroup>}' must stay unambiguous)"
    );
    let err = validate_member_id("").unwrap_err();
    assert_eq!(err.to_string(), "memberId: must not be blank");
    let err = validate_member_id("a\u{1}").unwrap_err();
    assert_eq!(
        err.to_string(),
        "memberId: must not contain control characters (found U+0001)"
    );
    let err = validate_shard_count("shardCount", 0, 1).unwrap_err();
    assert_eq!(err.field(), "shardCount");
    assert_eq!(
        err.to_string(),
        "shardCount: must be between 1 and 16384 (got 0)"
    );
}

#[test]
fn shard_count_boundaries() {
    assert_eq!(validate_shard_count("shardCount", 1, 1), Ok(1));
    assert_eq!(validate_shard_count("shardCount", 16384, 1), Ok(16384));
    assert_eq!(validate_shard_count("targetShardCount", 2, 2), Ok(2));
    for (n, min) in [
        (0, 1),
        (-1, 1),
        (16385, 1),
        (1, 2),
        (i64::MIN, 1),
        (i64::MAX, 1),
    ] {
        assert_eq!(
            validate_shard_count("shardCount", n, min),
            Err(ValidationError::OutOfRange {
                field: "shardCount",
                min,
                max: 16384,
                actual: n
            }),
            "n={n} min={min}"
        );
    }
}

#[test]
fn shard_count_negative_min_still_rejects_negative_counts() {
    assert_eq!(validate_shard_count("shardCount", 0, -5), Ok(0));
    assert!(matches!(
        validate_shard_count("shardCount", -1, -5),
        Err(ValidationError::OutOfRange { actual: -1, .. })
    ));
}

#[test]
fn observed_versions_are_capped_at_the_json_safe_range() {
    assert_eq!(
        validate_observed("observedMetadataVersion", MAX_EPOCH, 0),
        Ok(MAX_EPOCH)
    );
    assert_eq!(validate_observed("x", 0, 0), Ok(0));
    for v in [MAX_EPOCH + 1, i64::MAX, -1, i64::MIN] {
        let e = validate_observed("observedMetadataVersion", v, 0).unwrap_err();
        assert_eq!(e.field(), "observedMetadataVersion");
    }
    let mut r = heartbeat();
    r.member_epoch = MAX_EPOCH;
    r.metadata_version = MAX_EPOCH;
    assert_eq!(validate_heartbeat_request(&r), Ok(()));
}

#[test]
fn text_rules() {
    assert_eq!(validate_text("reason", "", false), Ok(()));
    assert_eq!(validate_text("reason", "  ", false), Ok(()));
    assert_eq!(
        validate_text("requestedBy", "", true),
        Err(ValidationError::Blank {
            field: "requestedBy"
        })
    );
    assert_eq!(
        validate_text("requestedBy", " \t", true),
        Err(ValidationError::Blank {
            field: "requestedBy"
        })
    );
    assert_eq!(validate_text("requestedBy", "ops@example", true), Ok(()));
    assert_eq!(
        validate_text("reason", "scale up\nfor the sale: größer", true),
        Ok(())
    );
    assert_eq!(
        validate_text("reason", &"r".repeat(MAX_TEXT_LEN), false),
        Ok(())
    );
    assert_eq!(
        validate_text("reason", &"r".repeat(MAX_TEXT_LEN + 1), false),
        Err(ValidationError::TooLong {
            field: "reason",
            max: MAX_TEXT_LEN,
            actual: MAX_TEXT_LEN + 1
        })
    );
}

fn heartbeat() -> HeartbeatRequest {
    serde_json::from_str(
        r#"{"protocolVersion":1,"requestId":"r","memberId":"m","memberEpoch":0,"metadataVersion":0,
            "runtimeConsumerCapacity":{"runtimeMaxConcurrency":1,"availableConcurrency":0},
            "revokingShards":[{"shard":3,"state":"DRAINING","inFlight":1}],
            "shardProgress":[{"shard":3,"pendingCount":0,"lastAckedId":"1-0"}]}"#,
    )
    .unwrap()
}

#[test]
fn heartbeat_rules_name_the_field_path() {
    assert_eq!(validate_heartbeat_request(&heartbeat()), Ok(()));
    type Edit = fn(&mut HeartbeatRequest);
    let cases: [(Edit, &str); 15] = [
        (
            |r| r.protocol_version = 0,
            "protocolVersion: must be at least 1",
        ),
        (
            |r| r.group_instance_id = Some(String::new()),
            "groupInstanceId: must not be blank",
        ),
        (
            |r| r.group_instance_id = Some("i".repeat(201)),
            "groupInstanceId: must be at most 200 bytes of UTF-8 (got 201)",
        ),
        (
            |r| r.group_instance_id = Some("pod 1".into()),
            "groupInstanceId: may contain only ASCII letters, digits, '.', '_' and '-' (found ' ')",
        ),
        (
            |r| r.client_name = Some("c".repeat(201)),
            "clientName: must be at most 200 bytes",
        ),
        (
            |r| r.client_version = Some("v".repeat(201)),
            "clientVersion: must be at most 200 bytes",
        ),
        (
            |r| r.request_id = " ".into(),
            "requestId: must not be blank",
        ),
        (
            |r| r.request_id = "r".repeat(201),
            "requestId: must be at most 200 bytes",
        ),
        (
            |r| r.metadata_version = -1,
            "metadataVersion: must be at least 0",
        ),
        (
            |r| r.metadata_version = i64::MAX,
            "metadataVersion: must be at most 9007199254740991 (2^53 - 1, the largest integer JSON \
             clients represent exactly; got 9223372036854775807)",
        ),
        (
            |r| r.member_epoch = MAX_EPOCH + 1,
            "memberEpoch: must be at most 9007199254740991 (2^53 - 1, the largest integer JSON \
             clients represent exactly; got 9007199254740992)",
        ),
        (
            |r| r.runtime_consumer_capacity.runtime_max_concurrency = 0,
            "runtimeConsumerCapacity.runtimeMaxConcurrency: must be at least 1",
        ),
        (
            |r| r.revoking_shards[0].in_flight = -1,
            "revokingShards[shard 3].inFlight: must be at least 0",
        ),
        (
            |r| r.shard_progress[0].pending_count = -1,
            "shardProgress[shard 3].pendingCount: must be at least 0",
        ),
        (
            |r| r.shard_progress[0].last_acked_id = Some("1".repeat(513)),
            "shardProgress[shard 3].lastAckedId: at most 512 bytes",
        ),
    ];
    for (edit, message) in cases {
        let mut r = heartbeat();
        edit(&mut r);
        let err = validate_heartbeat_request(&r).unwrap_err();
        assert_eq!(err.to_string(), message);
        assert!(message.starts_with(err.field()), "{message}");
    }
}

#[test]
fn attribution_rules() {
    assert_eq!(
        validate_attribution(None, Some("why"), Reason::Required),
        Err(ValidationError::Blank {
            field: "requestedBy"
        })
    );
    assert_eq!(
        validate_attribution(Some("ops"), Some(" "), Reason::Required),
        Err(ValidationError::Blank { field: "reason" })
    );
    assert_eq!(
        validate_attribution(Some("ops"), None, Reason::Optional),
        Ok(("ops", ""))
    );
    assert_eq!(
        validate_attribution(
            Some("ops"),
            Some(&"r".repeat(MAX_TEXT_LEN + 1)),
            Reason::Optional
        ),
        Err(ValidationError::TooLong {
            field: "reason",
            max: MAX_TEXT_LEN,
            actual: MAX_TEXT_LEN + 1
        })
    );
    assert_eq!(
        validate_attribution(Some("ops"), Some("scale up"), Reason::Required),
        Ok(("ops", "scale up"))
    );
}
