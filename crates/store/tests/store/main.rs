//! Integration tests of rsc-store against real Redis: every scenario runs once on a standalone
//! server of its own and once on a three-master cluster shared by this test binary.

/// Runs `scenario(&Store, name)` as two tests, `<scenario>::standalone` and `<scenario>::cluster`.
/// `name` is the scenario's name, used to give each scenario its own group keys.
macro_rules! on_both_topologies {
    ($($scenario:ident),+ $(,)?) => {
        $(
            mod $scenario {
                #[tokio::test]
                async fn standalone() {
                    let fixture = crate::fixtures::standalone().await;
                    super::$scenario(&fixture.store, stringify!($scenario)).await;
                }

                #[tokio::test]
                async fn cluster() {
                    let store = crate::fixtures::cluster_store().await;
                    super::$scenario(&store, stringify!($scenario)).await;
                }
            }
        )+
    };
}

mod fixtures;

mod aggregate_layout;
mod backup;
mod cas;
mod cluster_spread;
mod connect;
mod create_load;
mod delete_index;
mod diagnostics;
mod heartbeat;
mod hot_path;
mod leases;
mod limits;
mod messages;
mod producers;
mod routing_floor;
mod security_records;
mod shards;
mod split_layout;
mod stream_records;
mod tokens;
