//! The coordinator's operations, grouped into services. A service is a borrowed view of the shared runtime
//! ([`Coordinator`]: configuration, store, clock, cache, metrics) plus the state only it may touch; it is
//! obtained from the runtime (`coordinator.heartbeats()`, `.reconciler()`, …) and costs two pointers.
//!
//! Each service's operations live in its own module (`impl Heartbeats<'_>` in `heartbeat.rs`, …). A
//! service dereferences to the runtime, so an operation reads `self.store()` or calls `self.load(…)`, and
//! reaches another service the same way a handler does (`self.reconciler().reconcile_soon(…)`). State that
//! belongs to one service (the heartbeat queues and lapse forecasts, the reconciler's wake-up and last pass) is a private field
//! of the runtime, handed only to that service's constructor and reached only through its accessor. Its
//! type sits beside the runtime (`heartbeat_state.rs`, `reconciler_state.rs`), not in the service's module, so that
//! the runtime never imports an operation's module: imports point one way, operations → runtime.

use super::Coordinator;
use super::heartbeat_state::HeartbeatState;
use super::reconciler_state::ReconcilerState;

/// Declares a service: a `Copy` view holding the runtime and, optionally, a reference to its own state.
macro_rules! service {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name<'a> {
            runtime: &'a Coordinator,
        }

        impl<'a> $name<'a> {
            pub(crate) fn new(runtime: &'a Coordinator) -> Self {
                Self { runtime }
            }
        }

        service!(@deref $name);
    };
    ($(#[$doc:meta])* $name:ident, $field:ident: $state:ty) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name<'a> {
            runtime: &'a Coordinator,
            $field: &'a $state,
        }

        impl<'a> $name<'a> {
            pub(crate) fn new(runtime: &'a Coordinator, $field: &'a $state) -> Self {
                Self { runtime, $field }
            }

            /// This service's own state.
            pub(crate) fn $field(&self) -> &'a $state {
                self.$field
            }
        }

        service!(@deref $name);
    };
    (@deref $name:ident) => {
        impl std::ops::Deref for $name<'_> {
            type Target = Coordinator;

            fn deref(&self) -> &Coordinator {
                self.runtime
            }
        }
    };
}

service!(
    /// The hot path (`heartbeat.rs`) and its group commit (`heartbeat/batch.rs`).
    Heartbeats,
    state: HeartbeatState
);
service!(
    /// Time-driven work (`reconciler.rs`): lease expiry, deadlines, drains, urgent visits.
    Reconciler,
    state: ReconcilerState
);
service!(
    /// Streams and groups: create, read, list, delete; producer routing (`admin.rs`).
    Admin
);
service!(
    /// Scale operations, drain evidence, ordering gates, producer quiesce and their views (`reshard/`).
    Resharding
);
service!(
    /// Read-only views and the metrics refresh (`monitoring.rs`, `inspect.rs`, `messages.rs`,
    /// `metrics_refresh.rs`).
    Monitoring
);
service!(
    /// Rollback suspicion, fail-closed mutations and the recreate repair (`durability.rs`).
    Durability
);
