//! Redis stream entry ids (`<ms>-<seq>`) as numbers, so that ids are compared as Redis orders them (a
//! switch point against a consumer group's last-delivered id, a page cursor against a record's id).

/// A stream entry id as (milliseconds, sequence): ordered as Redis orders entries.
pub type StreamId = (u64, u64);

/// Parses a stream id `<ms>-<seq>` (None for anything else).
pub fn parse_stream_id(id: &str) -> Option<StreamId> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::parse_stream_id;

    #[test]
    fn ids_parse_as_redis_orders_them_and_anything_else_does_not() {
        assert_eq!(
            parse_stream_id("1700000000000-3"),
            Some((1_700_000_000_000, 3))
        );
        assert!(
            parse_stream_id("9-0") < parse_stream_id("10-0"),
            "numeric, not textual"
        );
        assert!(parse_stream_id("5-2") > parse_stream_id("5-1"));
        for bad in ["", "5", "-", "5-", "a-1", "1-b", "1-2-3"] {
            assert_eq!(parse_stream_id(bad), None, "{bad:?}");
        }
    }
}
