//! The route table: every coord/v1 route with its method, path template, operation id, required access
//! and audited action. The router is built from this table, so a route cannot exist without a declared
//! access level; cross-cutting layers (authentication, audit, rate limits) look the matched route up here
//! instead of being wired into handlers.

use super::{handlers, observability, quiesce};
use crate::runtime::coordinator::Coordinator;
use axum::http::Method;
use axum::routing::{MethodRouter, delete, get, post};
use std::sync::Arc;

pub use crate::security::access::Access;

pub struct RouteSpec {
    pub method: Method,
    pub path: &'static str,
    pub operation_id: &'static str,
    pub access: Access,
    /// The audit action of an admin mutation (None = not audited).
    pub audit_action: Option<&'static str>,
    pub handler: fn() -> MethodRouter<Arc<Coordinator>>,
}

/// A path under `/coord/v1/streams/{p}/groups/{g}`.
macro_rules! g {
    ($suffix:literal) => {
        concat!(
            "/coord/v1/streams/{stream_prefix}/groups/{consumer_group}",
            $suffix
        )
    };
}

/// A path under `/coord/v1/monitoring/streams/{p}/groups/{g}`.
macro_rules! mg {
    ($suffix:literal) => {
        concat!(
            "/coord/v1/monitoring/streams/{stream_prefix}/groups/{consumer_group}",
            $suffix
        )
    };
}

macro_rules! route {
    ($m:ident, $path:expr, $op:literal, $access:ident, $audit:expr, $method_fn:ident($h:path)) => {
        RouteSpec {
            method: Method::$m,
            path: $path,
            operation_id: $op,
            access: Access::$access,
            audit_action: $audit,
            handler: || $method_fn($h),
        }
    };
}

/// Every route. Paths use axum's `{param}` syntax.
pub fn table() -> Vec<RouteSpec> {
    vec![
        route!(
            POST,
            "/coord/v1/streams/{stream_prefix}",
            "createStreamGroup",
            Write,
            Some("CREATE_STREAM"),
            post(handlers::create_stream)
        ),
        route!(
            POST,
            g!(""),
            "createCoordinatorGroup",
            Write,
            Some("CREATE_GROUP"),
            post(handlers::create_group)
        ),
        route!(
            GET,
            g!(""),
            "getCoordinatorGroup",
            Read,
            None,
            get(handlers::get_group)
        ),
        route!(
            DELETE,
            g!(""),
            "deleteCoordinatorGroup",
            Write,
            Some("DELETE_GROUP"),
            delete(handlers::delete_group)
        ),
        route!(
            GET,
            g!("/producer-routing"),
            "getProducerRoutingMetadata",
            Read,
            None,
            get(observability::producer_routing)
        ),
        route!(
            POST,
            g!("/recreate"),
            "recreateGroupLifecycle",
            Write,
            Some("RECREATE_GROUP"),
            post(observability::recreate_group)
        ),
        route!(
            POST,
            g!("/durability/dismiss"),
            "dismissRollbackSuspicion",
            Write,
            Some("DISMISS_ROLLBACK_SUSPICION"),
            post(observability::dismiss_suspicion)
        ),
        route!(
            POST,
            g!("/offsets/reset"),
            "resetGroupOffsets",
            Write,
            Some("RESET_OFFSETS"),
            post(handlers::reset_offsets)
        ),
        route!(
            POST,
            "/coord/v1/streams/{stream_prefix}/scale",
            "scaleStreamShards",
            Write,
            Some("SCALE_STREAM"),
            post(handlers::scale_stream)
        ),
        route!(
            GET,
            "/coord/v1/streams/{stream_prefix}/describe",
            "describeStream",
            Read,
            None,
            get(observability::describe_stream)
        ),
        route!(
            GET,
            "/coord/v1/streams/{stream_prefix}/history",
            "getStreamHistory",
            Read,
            None,
            get(observability::stream_history)
        ),
        route!(
            POST,
            "/coord/v1/streams/{stream_prefix}/producers/quiesced",
            "reportProducerQuiesced",
            Member,
            None,
            post(quiesce::producer_quiesced)
        ),
        route!(
            POST,
            "/coord/v1/streams/{stream_prefix}/ordering",
            "setStreamOrdering",
            Write,
            Some("SET_STREAM_ORDERING"),
            post(handlers::set_ordering)
        ),
        route!(
            POST,
            g!("/scale"),
            "startGroupResharding",
            Write,
            Some("SCALE_GROUP"),
            post(handlers::scale_group)
        ),
        route!(
            GET,
            g!("/migrations/{resharding_id}"),
            "getReshardingMigration",
            Read,
            None,
            get(handlers::get_migration)
        ),
        route!(
            POST,
            g!("/migrations/{resharding_id}/rollback"),
            "rollbackReshardingMigration",
            Write,
            Some("ROLLBACK_MIGRATION"),
            post(handlers::rollback_migration)
        ),
        route!(
            POST,
            g!("/migrations/{resharding_id}/force-complete"),
            "forceCompleteReshardingMigration",
            Write,
            Some("FORCE_COMPLETE_MIGRATION"),
            post(handlers::force_complete_migration)
        ),
        route!(
            POST,
            g!("/members/{member_id}/heartbeat"),
            "sendConsumerHeartbeat",
            Member,
            None,
            post(handlers::heartbeat)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/health",
            "getCoordinatorHealth",
            Read,
            None,
            get(handlers::health)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/compatibility",
            "getCoordinatorCompatibility",
            Read,
            None,
            get(handlers::compatibility)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/groups",
            "listCoordinatorGroups",
            Read,
            None,
            get(handlers::list_groups)
        ),
        route!(
            GET,
            mg!(""),
            "getMonitoringGroup",
            Read,
            None,
            get(observability::monitoring_group)
        ),
        route!(
            GET,
            mg!("/consumption"),
            "getConsumptionProgress",
            Read,
            None,
            get(observability::consumption)
        ),
        route!(
            GET,
            mg!("/migrations"),
            "listReshardingMigrations",
            Read,
            None,
            get(observability::migrations)
        ),
        route!(
            GET,
            mg!("/offsets"),
            "getStreamShardOffsets",
            Read,
            None,
            get(observability::offsets)
        ),
        route!(
            GET,
            mg!("/messages"),
            "getMergedStreamMessages",
            DataRead,
            None,
            get(observability::merged_messages)
        ),
        route!(
            GET,
            mg!("/shards/{shard_index}/messages"),
            "getStreamShardMessages",
            DataRead,
            None,
            get(observability::shard_messages)
        ),
        route!(
            GET,
            mg!("/shards/{shard_index}/pending"),
            "listShardPendingEntries",
            Read,
            None,
            get(observability::shard_pending)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/grafana/groups",
            "listGrafanaGroups",
            Read,
            None,
            get(super::grafana::groups)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/grafana/options/streams",
            "listGrafanaStreamOptions",
            Read,
            None,
            get(super::grafana::stream_options)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/grafana/options/consumer-groups",
            "listGrafanaConsumerGroupOptions",
            Read,
            None,
            get(super::grafana::group_options)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/grafana/options/shards",
            "listGrafanaShardOptions",
            Read,
            None,
            get(super::grafana::shard_options)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/grafana/members",
            "listGrafanaMemberRows",
            Read,
            None,
            get(super::grafana::members)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/grafana/shards",
            "listGrafanaShardRows",
            Read,
            None,
            get(super::grafana::shards)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/grafana/assignments",
            "listGrafanaAssignmentRows",
            Read,
            None,
            get(super::grafana::assignments)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/grafana/messages",
            "listGrafanaMessageRows",
            DataRead,
            None,
            get(super::grafana::messages)
        ),
        route!(
            GET,
            "/metrics",
            "getPrometheusMetrics",
            Read,
            None,
            get(super::metrics::metrics)
        ),
        route!(
            GET,
            mg!("/members"),
            "listGroupMembers",
            Read,
            None,
            get(handlers::members)
        ),
        route!(
            GET,
            mg!("/assignments"),
            "getGroupAssignments",
            Read,
            None,
            get(handlers::assignments)
        ),
        route!(
            POST,
            "/coord/v1/auth/login",
            "loginCoordinatorApi",
            Public,
            Some(crate::security::guard::LOGIN_ACTION),
            post(super::auth::login)
        ),
        route!(
            POST,
            "/coord/v1/auth/revoke",
            "revokeAccessToken",
            Authenticated,
            Some("REVOKE_TOKEN"),
            post(super::auth::revoke)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/session",
            "getMonitoringSession",
            Read,
            None,
            get(super::auth::session)
        ),
        route!(
            GET,
            "/coord/v1/monitoring/audit",
            "listAuditRecords",
            Read,
            None,
            get(super::auth::audit_log)
        ),
        route!(GET, "/", "getIndex", Public, None, get(handlers::index)),
        route!(
            GET,
            "/console",
            "getConsole",
            Public,
            None,
            get(crate::http::console::page)
        ),
        route!(
            GET,
            "/console/{asset}",
            "getConsoleAsset",
            Public,
            None,
            get(crate::http::console::asset)
        ),
        route!(
            GET,
            "/v3/api-docs",
            "getOpenApiJson",
            Public,
            None,
            get(super::openapi::api_docs_json)
        ),
        route!(
            GET,
            "/openapi.yaml",
            "getOpenApiYaml",
            Public,
            None,
            get(super::openapi::api_docs_yaml)
        ),
        route!(
            GET,
            "/docs",
            "getApiReference",
            Public,
            None,
            get(super::openapi::docs_index)
        ),
        route!(
            GET,
            "/docs/{*file}",
            "getApiReferenceFile",
            Public,
            None,
            get(super::openapi::docs_file)
        ),
        route!(
            GET,
            "/healthz",
            "healthz",
            Public,
            None,
            get(handlers::healthz)
        ),
        route!(
            GET,
            "/readyz",
            "readyz",
            Public,
            None,
            get(handlers::readyz)
        ),
    ]
}

#[cfg(test)]
mod tests {
    use crate::security::access::HEARTBEAT_OPERATION;

    /// `access::BodyLimit` gives the larger body limit to the route with this operation id: it must be the
    /// heartbeat's. (Here rather than in `access`, which the router imports: no import circle.)
    #[test]
    fn the_operation_id_with_the_heartbeat_body_limit_is_the_heartbeat_route() {
        let routes = super::table();
        let heartbeat = routes
            .iter()
            .find(|r| r.operation_id == HEARTBEAT_OPERATION)
            .expect("the heartbeat route");
        assert!(heartbeat.path.ends_with("/heartbeat"), "{}", heartbeat.path);
    }
}
