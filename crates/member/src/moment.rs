//! The clock instants a [`crate::Membership`] judges its lease by, supplied by the caller: the membership
//! never reads a clock itself, so the same code runs against real time and simulated time.

use std::fmt::Debug;
use std::time::{Duration, Instant};

/// A point in time on the caller's clock.
///
/// Implemented for [`Instant`] (a process's monotonic clock) and for [`Duration`] (time since an origin
/// the caller chooses, e.g. a simulation's virtual clock).
pub trait Moment: Copy + Ord + Debug {
    /// `self + d`, or `None` when the clock cannot represent it.
    fn checked_add(self, d: Duration) -> Option<Self>;
    /// `self - earlier`, or `None` when `earlier` is later than `self`.
    fn checked_duration_since(self, earlier: Self) -> Option<Duration>;
}

impl Moment for Instant {
    fn checked_add(self, d: Duration) -> Option<Self> {
        Instant::checked_add(&self, d)
    }

    fn checked_duration_since(self, earlier: Self) -> Option<Duration> {
        Instant::checked_duration_since(&self, earlier)
    }
}

impl Moment for Duration {
    fn checked_add(self, d: Duration) -> Option<Self> {
        Duration::checked_add(self, d)
    }

    fn checked_duration_since(self, earlier: Self) -> Option<Duration> {
        self.checked_sub(earlier)
    }
}
