//! Time as the core sees it: a value passed in, never read. `mono` orders events and measures
//! periods (immune to wall-clock steps); `wall` is only stamped into records for humans and the API.

use std::time::{Duration, SystemTime};

/// One instant, on both clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moment {
    /// Monotonic time since an arbitrary origin fixed for the life of the process.
    pub mono: Duration,
    /// Wall-clock time at the same instant.
    pub wall: SystemTime,
}

impl Moment {
    /// `self − earlier` on the monotonic clock, zero if `earlier` is later.
    pub fn since(&self, earlier: Moment) -> Duration {
        self.mono.saturating_sub(earlier.mono)
    }

    /// The moment `d` later on both clocks.
    pub fn plus(&self, d: Duration) -> Moment {
        Moment {
            mono: self.mono + d,
            wall: self.wall + d,
        }
    }
}

/// RFC 3339 with whole seconds, as Kubernetes `metav1.Time` serialises.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}
