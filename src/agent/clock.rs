//! The agent's one clock. Every task reads `now` from the same [`Clock`], so their instants
//! compare: monotonic durations since [`MONO_BASE`] before the clock started (tokio's clock, so a
//! test with paused time drives every task), and the wall time derived from them — the wall
//! clock as read once at the start plus the monotonic time since. A step of the system clock while
//! the agent runs therefore moves no deadline, no report and no contact; the wall times the API
//! server stamps (a Node heartbeat) and those persisted by an earlier run enter through
//! `Moment::mono_at`, which never places them after now. The clock also reads its place on the
//! node's boot clock at the start (`core::clock::Scale`): wall times a previous run wrote are
//! carried onto this run's scale with it, so a step of the wall clock between two runs moves no
//! deadline either.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::core::clock::{Moment, Scale};
pub use crate::core::fence_plan::MONO_BASE;

/// Both clocks, anchored at one instant.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: Instant,
    wall_at_origin: SystemTime,
    /// This run's scale; `None` when the boot clock or the boot's id could not be read (then a
    /// previous run's wall times are taken as they read).
    scale: Option<Scale>,
}

impl Clock {
    /// Reads both clocks now.
    pub fn start() -> Clock {
        let clock = Clock::starting_at(SystemTime::now());
        let scale = scale_at(clock.wall_at_origin);
        if scale.is_none() {
            log::warn!(
                "cannot read the boot clock or the boot's id (/proc/sys/kernel/random/boot_id): wall times persisted by a previous run are taken as they read, so a wall-clock step between two runs moves the fence's deadlines"
            );
        }
        clock.with_scale(scale)
    }

    /// A clock whose wall time at this instant is `wall` (tests inject any wall time; the
    /// monotonic side is tokio's, so paused time applies).
    pub fn starting_at(wall: SystemTime) -> Clock {
        Clock {
            origin: Instant::now(),
            wall_at_origin: wall,
            scale: None,
        }
    }

    /// This clock placed on the boot clock by `scale` (tests inject one).
    pub fn with_scale(self, scale: Option<Scale>) -> Clock {
        Clock { scale, ..self }
    }

    /// This run's place on the node's boot clock.
    pub fn scale(&self) -> Option<Scale> {
        self.scale
    }

    /// The system clock's place on the boot clock now, for this run's boot: what [`scale_at`]
    /// gives for the system clock read now, without reading the boot's id again (it is the
    /// run's). `None` when this run has no scale.
    pub fn system_scale(&self) -> Option<Scale> {
        Scale::of(self.scale?.boot, SystemTime::now(), since_boot()?)
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

/// The scale of a wall time read just now (`wall`) against the boot clock read here; `None`
/// when the boot clock or the boot's id cannot be read.
pub fn scale_at(wall: SystemTime) -> Option<Scale> {
    boot_clock().and_then(|(boot, since_boot)| Scale::of(boot, wall, since_boot))
}

/// The boot's id and the boot clock (`CLOCK_BOOTTIME`) now.
fn boot_clock() -> Option<(u128, Duration)> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let boot = crate::core::clock::parse_boot_id(&id)?;
    Some((boot, since_boot()?))
}

/// The boot clock (`CLOCK_BOOTTIME`) now.
fn since_boot() -> Option<Duration> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).ok()?;
    Some(Duration::new(
        u64::try_from(t.tv_sec()).ok()?,
        u32::try_from(t.tv_nsec()).ok()?,
    ))
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

    #[test]
    fn a_started_clock_knows_its_place_on_the_boot_clock() {
        // Linux always has both; the scale is wall time minus time since boot, so it lies
        // between the boot's wall time read just before and just after.
        let before = SystemTime::now();
        let clock = Clock::start();
        let scale = clock
            .scale()
            .expect("boot clock and boot id readable on Linux");
        let (boot, since_boot) = boot_clock().expect("boot clock");
        assert_eq!(scale.boot, boot);
        let booted_at = SystemTime::UNIX_EPOCH
            + Duration::from_nanos(u64::try_from(scale.wall_minus_boot_ns).expect("after 1970"));
        assert!(
            booted_at <= before.checked_sub(since_boot).expect("boot") + Duration::from_secs(1)
        );
        assert!(booted_at + Duration::from_secs(1) >= before - since_boot);
    }
}
