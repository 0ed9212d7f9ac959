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

    /// The wall-clock time of another instant `mono` on this moment's monotonic clock.
    pub fn wall_at(&self, mono: Duration) -> SystemTime {
        if mono >= self.mono {
            self.wall + (mono - self.mono)
        } else {
            self.wall - (self.mono - mono)
        }
    }

    /// The monotonic instant of a wall-clock time. One older than the monotonic origin maps to
    /// the origin (earlier deadlines, never later); one in the future (the wall clock stepped
    /// back) maps to this moment.
    pub fn mono_at(&self, wall: SystemTime) -> Duration {
        match self.wall.duration_since(wall) {
            Ok(ago) => self.mono.saturating_sub(ago),
            Err(_) => self.mono,
        }
    }

    /// The monotonic instant of a wall-clock time written before this moment (by a previous run,
    /// say): `None` when it reads as later than this moment — the wall clock was stepped back
    /// since, and how long ago it was written is not known.
    pub fn mono_of_past(&self, wall: SystemTime) -> Option<Duration> {
        (wall <= self.wall).then(|| self.mono_at(wall))
    }

    /// The moment `d` later on both clocks.
    pub fn plus(&self, d: Duration) -> Moment {
        Moment {
            mono: self.mono + d,
            wall: self.wall + d,
        }
    }
}

/// How far the system's wall clock is from the agent's (system − agent), in milliseconds. The
/// agent's wall time is the clock read at start plus monotonic time since, so this moves only
/// when the system clock is stepped (or slewed) while the agent runs.
pub fn wall_offset_ms(agent: SystemTime, system: SystemTime) -> i64 {
    match system.duration_since(agent) {
        Ok(ahead) => i64::try_from(ahead.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |b| -b),
    }
}

/// Whether the offset moved by at least `tolerance_ms` since the one last reported: a step worth
/// one record, where a slow NTP slew is not.
pub fn stepped(last_reported_ms: i64, offset_ms: i64, tolerance_ms: i64) -> bool {
    offset_ms.saturating_sub(last_reported_ms).saturating_abs() >= tolerance_ms
}

/// RFC 3339 with whole seconds, as Kubernetes `metav1.Time` serialises.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Moment {
        Moment {
            mono: Duration::from_secs(100),
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000),
        }
    }

    #[test]
    fn a_wall_time_written_later_than_now_is_of_unknown_age() {
        // The wall clock stepped back since it was written: `mono_at` takes it for now (the
        // freshest), which a contact must never be taken for.
        let n = now();
        let ago = n.wall - Duration::from_secs(30);
        assert_eq!(n.mono_of_past(ago), Some(Duration::from_secs(70)));
        assert_eq!(n.mono_of_past(n.wall), Some(n.mono));
        let later = n.wall + Duration::from_secs(5);
        assert_eq!(n.mono_at(later), n.mono);
        assert_eq!(n.mono_of_past(later), None);
    }

    #[test]
    fn wall_and_mono_convert_both_ways_around_now() {
        let n = now();
        // Instants up to now round-trip (later ones are "the future", which `mono_at` maps to now).
        for d in [0u64, 30, 100] {
            let mono = Duration::from_secs(d);
            assert_eq!(n.mono_at(n.wall_at(mono)), mono);
        }
        assert_eq!(
            n.wall_at(Duration::from_secs(130)),
            n.wall + Duration::from_secs(30)
        );
        assert_eq!(
            n.wall_at(Duration::from_secs(40)),
            n.wall - Duration::from_secs(60)
        );
    }

    #[test]
    fn a_step_of_the_system_clock_is_told_from_a_slew() {
        let agent = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let cases: &[(i64, i64, bool)] = &[
            // (system − agent in ms, last reported, a step?)
            (0, 0, false),
            (1_999, 0, false),
            (2_000, 0, true),
            (-2_000, 0, true),
            (3_600_000, 0, true),
            (3_601_000, 3_600_000, false),
            (-3_600_000, 3_600_000, true),
            (0, -3_600_000, true),
        ];
        for (offset, last, want) in cases {
            let system = if *offset >= 0 {
                agent + Duration::from_millis(*offset as u64)
            } else {
                agent - Duration::from_millis(offset.unsigned_abs())
            };
            assert_eq!(wall_offset_ms(agent, system), *offset);
            assert_eq!(
                stepped(*last, *offset, 2_000),
                *want,
                "{offset} after {last}"
            );
        }
    }

    #[test]
    fn a_wall_time_before_the_origin_clamps_to_it_and_a_future_one_is_now() {
        let n = now();
        assert_eq!(n.mono_at(n.wall - Duration::from_secs(500)), Duration::ZERO);
        assert_eq!(n.mono_at(n.wall + Duration::from_secs(5)), n.mono);
    }
}
