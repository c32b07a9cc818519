//! Reading and writing shard streams as a plain Redis client does, for the tests that check where a consumer
//! group stands (offset reset, on one server and on a cluster): explicit-id appends, what a consumer of the
//! group is handed next, acknowledgements and the group's position as `XINFO GROUPS` reports it.

use redis::ToRedisArgs;
use redis::aio::ConnectionLike;

/// XADD with an explicit id `<ms>-0` (small: deterministic, and never in the future) and one field `n`.
pub async fn xadd_at(conn: &mut impl ConnectionLike, key: &str, ms: u64) {
    let _: String = redis::cmd("XADD")
        .arg(key)
        .arg(format!("{ms}-0"))
        .arg("n")
        .arg(ms)
        .query_async(conn)
        .await
        .unwrap();
}

/// A stream entry: its id and fields.
type Entry = (String, Vec<(String, String)>);

/// The ids `consumer` of `group` is handed next on `key` (`XREADGROUP … >`, not blocking).
pub async fn read_next(
    conn: &mut impl ConnectionLike,
    key: &str,
    group: &str,
    consumer: &str,
    count: usize,
) -> Vec<String> {
    let reply: Option<Vec<(String, Vec<Entry>)>> = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(group)
        .arg(consumer)
        .arg("COUNT")
        .arg(count)
        .arg("STREAMS")
        .arg(key)
        .arg(">")
        .query_async(conn)
        .await
        .unwrap();
    reply
        .unwrap_or_default()
        .into_iter()
        .flat_map(|(_, entries)| entries.into_iter().map(|(id, _)| id))
        .collect()
}

/// XACK of `ids` by `group` on `key`.
pub async fn ack<T: ToRedisArgs>(
    conn: &mut impl ConnectionLike,
    key: &str,
    group: &str,
    ids: &[T],
) {
    let _: i64 = redis::cmd("XACK")
        .arg(key)
        .arg(group)
        .arg(ids)
        .query_async(conn)
        .await
        .unwrap();
}

/// (last-delivered id, pending count) of `group` on `key`, as `XINFO GROUPS` says.
pub async fn group_position(
    conn: &mut impl ConnectionLike,
    key: &str,
    group: &str,
) -> (String, i64) {
    let groups: Vec<std::collections::HashMap<String, redis::Value>> = redis::cmd("XINFO")
        .arg("GROUPS")
        .arg(key)
        .query_async(conn)
        .await
        .unwrap();
    let g = groups
        .into_iter()
        .find(|g| redis::from_redis_value_ref::<String>(&g["name"]).unwrap() == group)
        .unwrap();
    (
        redis::from_redis_value_ref(&g["last-delivered-id"]).unwrap(),
        redis::from_redis_value_ref(&g["pending"]).unwrap(),
    )
}

/// The ids `<ms>-0` of `ms`.
pub fn ids(ms: &[u64]) -> Vec<String> {
    ms.iter().map(|m| format!("{m}-0")).collect()
}
