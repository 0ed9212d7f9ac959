//! The agent's one clock. Every task reads `now` from the same [`Clock`], so their instants
//! compare: monotonic durations since [`MONO_BASE`] before the clock started (tokio's clock, so a
//! test with paused time drives every task), and the wall time derived from them — the wall
//! clock as read once at the start plus the monotonic time since. A step of the system clock while
//! the agent runs therefore moves no deadline, no report and no contact; the wall times the API
//! server stamps (a Node heartbeat) and those persisted by an earlier run enter through
//! `Moment::mono_at`, which never places them after now.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::core::clock::Moment;
pub use crate::core::fence_plan::MONO_BASE;

/// Both clocks, anchored at one instant.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: Instant,
    wall_at_origin: SystemTime,
}

impl Clock {
    /// Reads both clocks now.
    pub fn start() -> Clock {
        Clock::starting_at(SystemTime::now())
    }

    /// A clock whose wall time at this instant is `wall` (tests inject any wall time; the
    /// monotonic side is tokio's, so paused time applies).
    pub fn starting_at(wall: SystemTime) -> Clock {
        Clock {
            origin: Instant::now(),
            wall_at_origin: wall,
        }
    }

    /// The present on both clocks.
    pub fn now(&self) -> Moment {
        self.at(Instant::now())
    }

    /// An instant of tokio's clock on both clocks.
    pub fn at(&self, t: Instant) -> Moment {
        let mono = self.mono_of(t);
        Moment {
            mono,
            wall: if mono >= MONO_BASE {
                self.wall_at_origin + (mono - MONO_BASE)
            } else {
                self.wall_at_origin - (MONO_BASE - mono)
            },
        }
    }

    /// An instant of tokio's clock on the monotonic scale (one before the origin stays in order,
    /// down to zero).
    pub fn mono_of(&self, t: Instant) -> Duration {
        if t >= self.origin {
            MONO_BASE + (t - self.origin)
        } else {
            MONO_BASE.saturating_sub(self.origin - t)
        }
    }

    /// A point of the monotonic scale as an instant of tokio's clock.
    pub fn instant_of(&self, mono: Duration) -> Instant {
        if mono >= MONO_BASE {
            self.origin + (mono - MONO_BASE)
        } else {
            self.origin
                .checked_sub(MONO_BASE - mono)
                .unwrap_or(self.origin)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn both_clocks_advance_together_from_the_injected_wall_time() {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let clock = Clock::starting_at(wall);
        let t0 = clock.now();
        assert_eq!(t0.mono, MONO_BASE);
        assert_eq!(t0.wall, wall);
        tokio::time::advance(Duration::from_secs(90)).await;
        let t1 = clock.now();
        assert_eq!(t1.since(t0), Duration::from_secs(90));
        assert_eq!(t1.wall, wall + Duration::from_secs(90));
        assert_eq!(clock.instant_of(t1.mono), Instant::now());
        assert_eq!(clock.mono_of(clock.instant_of(t0.mono)), t0.mono);
    }
}
