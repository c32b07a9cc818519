//! Tests of `rsc bench dataplane`: argument defaults and bounds, batching, and the summary line.

use super::*;
use clap::Parser;

#[derive(Parser)]
struct T {
    #[command(flatten)]
    a: DataplaneArgs,
}

#[test]
fn defaults_validate_and_batches_cover_every_record_once() {
    let mut t =
        T::try_parse_from(["t", "--count", "1001", "--batch", "100", "--producers", "3"]).unwrap();
    t.a.target.username = None;
    t.a.target.password = None;
    assert!(t.a.validate().is_ok());
    let mut seen: Vec<u64> = (0..3)
        .flat_map(|task| batches(&t.a, task, b"p"))
        .inspect(|b| assert!(b.len() <= 100))
        .flatten()
        .map(|r| {
            let seq = &r.fields[0].1;
            std::str::from_utf8(seq).unwrap().parse().unwrap()
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..1001).collect::<Vec<u64>>());
    t.a.batch = 0;
    assert!(t.a.validate().is_err());
    t.a.batch = 100;
    t.a.rounds = 0;
    assert!(t.a.validate().is_err(), "no rounds");
    t.a.rounds = 100;
    t.a.count = MAX_COUNT;
    assert!(
        t.a.validate().is_err(),
        "more records than a run may keep in Redis"
    );
}

#[test]
fn summary_line_compares_with_the_raw_loop_that_acks_the_same_way() {
    let rates = Rates {
        raw_produce: 100.0,
        sdk_produce: 80.0,
        produce_ratio: 0.95,
        raw_consume: 50.0,
        raw_consume_batch_ack: 100.0,
        sdk_consume: 45.0,
    };
    let s = summary(&rates, SdkAck::Entry);
    assert!(
        s.starts_with("producer_ratio=0.950 consumer_ratio=0.900 sdk_ack=entry "),
        "{s}"
    );
    let s = summary(&rates, SdkAck::Batch);
    assert!(
        s.starts_with("producer_ratio=0.950 consumer_ratio=0.450 sdk_ack=batch "),
        "{s}"
    );
    assert!(s.contains(" raw_consume_per_sec=100 "), "{s}");
}
