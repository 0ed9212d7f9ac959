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

/// How one run of the agent places its wall times against the node's boot clock
/// (`CLOCK_BOOTTIME`, which no step of the wall clock moves and which goes on through a
/// suspend). The agent's wall time is the wall clock read at its start plus monotonic time since
/// (`agent::clock`), so the wall time minus the boot clock is one constant for a whole run. A
/// wall time a previous run wrote to disk is carried onto this run's scale with the two
/// constants ([`Scale::carry`]): a wall-clock step between the two runs (or before the previous
/// one started) then moves none of the fence's deadlines (issue 22, seed 0x14e8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale {
    /// The boot's id (`/proc/sys/kernel/random/boot_id`): the boot clock restarts at a reboot.
    pub boot: u128,
    /// The run's wall time minus the boot clock, in nanoseconds.
    pub wall_minus_boot_ns: i64,
}

impl Scale {
    /// The scale of a run that read `wall` and `since_boot` at the same instant.
    pub fn of(boot: u128, wall: SystemTime, since_boot: Duration) -> Option<Scale> {
        let wall =
            i64::try_from(wall.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_nanos()).ok()?;
        let boot_ns = i64::try_from(since_boot.as_nanos()).ok()?;
        Some(Scale {
            boot,
            wall_minus_boot_ns: wall.checked_sub(boot_ns)?,
        })
    }

    /// `wall`, written by a run whose scale was `from`, as the same instant on this scale.
    /// `None` when `from` belongs to another boot: nothing relates the two boot clocks, and the
    /// written time is then taken as it reads (`Moment::mono_of_past`).
    pub fn carry(&self, wall: SystemTime, from: Scale) -> Option<SystemTime> {
        if from.boot != self.boot {
            return None;
        }
        let shift = i128::from(self.wall_minus_boot_ns) - i128::from(from.wall_minus_boot_ns);
        let by = Duration::from_nanos(u64::try_from(shift.unsigned_abs()).ok()?);
        if shift >= 0 {
            wall.checked_add(by)
        } else {
            wall.checked_sub(by)
        }
    }

    /// The form written to disk: the boot's id as the kernel prints it, a space, the constant.
    pub fn to_text(self) -> String {
        let h = format!("{:032x}", self.boot);
        format!(
            "{}-{}-{}-{}-{} {}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..],
            self.wall_minus_boot_ns
        )
    }

    /// Reads [`Scale::to_text`]'s form; `None` for anything else.
    pub fn from_text(text: &str) -> Option<Scale> {
        let (id, ns) = text.trim().split_once(' ')?;
        Some(Scale {
            boot: parse_boot_id(id)?,
            wall_minus_boot_ns: ns.trim().parse().ok()?,
        })
    }
}

/// `wall`, written on the scale `from`, on the scale `to` ([`Scale::carry`]); as it reads when
/// either scale is unknown or they belong to different boots.
pub fn carried(wall: SystemTime, from: Option<Scale>, to: Option<Scale>) -> SystemTime {
    match (from, to) {
        (Some(from), Some(to)) => to.carry(wall, from).unwrap_or(wall),
        _ => wall,
    }
}

/// A wall time of a run's scale (`run`), as the system clock reads the same instant now that it
/// stands at `system` against the boot clock ([`Scale`] of the system clock read now), with that
/// scale: the same instant on the boot clock, so [`carried`] reads it back the same. The contact
/// file is written so (`state::save_contact`): the scale it names is then the system clock's at
/// that write, and the next run's [`steady`] sees only a step made after it, not one the writing
/// run itself lived through (issue 22, seeds 0xd6b and 0x1f01: a step 100 s before a crash made
/// every renewal the restarted agent's peers read unplaceable, and it stopped pods 21 s late).
/// Against the boot clock, a suspend moves neither scale: only a step does. As the run reads it
/// when either scale is unknown or they belong to different boots.
pub fn on_system_scale(
    wall: SystemTime,
    run: Option<Scale>,
    system: Option<Scale>,
) -> (SystemTime, Option<Scale>) {
    match (run, system) {
        (Some(run), Some(system)) => match system.carry(wall, run) {
            Some(moved) => (moved, Some(system)),
            None => (wall, Some(run)),
        },
        _ => (wall, run),
    }
}

/// A boot id as `/proc/sys/kernel/random/boot_id` holds it (a UUID in its 8-4-4-4-12 form).
pub fn parse_boot_id(text: &str) -> Option<u128> {
    let text = text.trim();
    let groups: Vec<&str> = text.split('-').collect();
    let shape = groups.iter().map(|g| g.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12];
    if !shape || !text.chars().all(|c| c == '-' || c.is_ascii_hexdigit()) {
        return None;
    }
    u128::from_str_radix(&groups.concat(), 16).ok()
}

/// How close two readings of the node's wall clock against its boot clock must be for
/// [`steady`] (an NTP slew moves far less in the minutes this is asked about).
pub const STEADY_WITHIN: Duration = Duration::from_secs(1);

/// Whether the node's system clock has read the same as this run's wall scale since the previous
/// run's last write: that run's scale (`previous`, as its state file names it) and the system
/// clock now (`system_offset_ms`, [`wall_offset_ms`] against this run's wall time) both within
/// [`STEADY_WITHIN`] of this run's scale (`run`), and the same boot. A wall time the system clock
/// stamped in that span (a kubelet's Lease `renewTime`, say) then reads as this run's wall time,
/// give or take [`STEADY_WITHIN`]; false when either scale is unknown.
pub fn steady(run: Option<Scale>, previous: Option<Scale>, system_offset_ms: i64) -> bool {
    let within = i128::try_from(STEADY_WITHIN.as_nanos()).unwrap_or(i128::MAX);
    let (Some(run), Some(previous)) = (run, previous) else {
        return false;
    };
    let scales = i128::from(run.wall_minus_boot_ns) - i128::from(previous.wall_minus_boot_ns);
    let system = i128::from(system_offset_ms) * 1_000_000;
    run.boot == previous.boot && scales.abs() <= within && system.abs() <= within
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
    fn a_wall_time_of_an_earlier_run_is_carried_past_the_steps_since() {
        let boot = 0x0123_4567_89ab_cdef_0123_4567_89ab_cdef;
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(s);
        // The earlier run started 100 s after boot with the wall clock at 1,000,000 s; it wrote
        // its contact at 1,000,050 (150 s after boot).
        let before = Scale::of(boot, at(1_000_000), Duration::from_secs(100)).expect("scale");
        // The wall clock was then stepped back an hour; this run starts 200 s after boot.
        let now = Scale::of(boot, at(1_000_100 - 3_600), Duration::from_secs(200)).expect("scale");
        // 150 s after boot is 50 s before this start, on this run's scale.
        assert_eq!(
            now.carry(at(1_000_050), before),
            Some(at(1_000_050 - 3_600))
        );
        // Stepped forward instead: the same instant moves later.
        let ahead = Scale::of(boot, at(1_000_100 + 60), Duration::from_secs(200)).expect("scale");
        assert_eq!(ahead.carry(at(1_000_050), before), Some(at(1_000_110)));
        // No step: unchanged.
        let same = Scale::of(boot, at(1_000_100), Duration::from_secs(200)).expect("scale");
        assert_eq!(same.carry(at(1_000_050), before), Some(at(1_000_050)));
        // Another boot: nothing relates the clocks.
        let rebooted = Scale { boot: 7, ..same };
        assert_eq!(rebooted.carry(at(1_000_050), before), None);
    }

    #[test]
    fn a_scale_reads_back_what_it_writes_and_nothing_else() {
        let s = Scale {
            boot: u128::from_str_radix("6b0fd2c0a1b24e6f9c3d2e1f00aa11bb", 16).expect("hex"),
            wall_minus_boot_ns: -42,
        };
        assert_eq!(s.to_text(), "6b0fd2c0-a1b2-4e6f-9c3d-2e1f00aa11bb -42");
        assert_eq!(Scale::from_text(&s.to_text()), Some(s));
        assert_eq!(
            parse_boot_id("6b0fd2c0-a1b2-4e6f-9c3d-2e1f00aa11bb\n"),
            Some(s.boot)
        );
        for bad in [
            "",
            "6b0fd2c0-a1b2-4e6f-9c3d-2e1f00aa11bb",
            "6b0fd2c0a1b24e6f9c3d2e1f00aa11bb 1",
            "6b0fd2c0-a1b2-4e6f-9c3d-2e1f00aa11bg 1",
            "+b0fd2c0-a1b2-4e6f-9c3d-2e1f00aa11bb 1",
            "6b0fd2c0-a1b2-4e6f-9c3d-2e1f00aa11bb x",
        ] {
            assert_eq!(Scale::from_text(bad), None, "{bad:?}");
        }
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
