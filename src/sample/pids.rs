//! `pid.available` (docs/semantics.md §7.1, `pkg/kubelet/stats/pidlimit/pidlimit_linux.go`):
//!
//! - MaxPID = min(`/proc/sys/kernel/pid_max`, `/proc/sys/kernel/threads-max`): either limit
//!   stops new tasks, so the smaller one is the real ceiling;
//! - running tasks = the number after "/" in the 4th field of `/proc/loadavg` (every task that
//!   exists, threads included);
//! - available = MaxPID − running tasks; capacity = MaxPID.
//!
//! The kubelet falls back to `sysinfo(2)`'s process count when `loadavg` cannot be parsed. We do
//! not: a broken `/proc` should be reported, not papered over, and the core then simply has no
//! `pid.available` observation (as the kubelet has none when both fail).

use std::path::Path;

use procfs_core::{FromRead, LoadAverage};

use super::text::{parse_u64, procfs_problem, to_i64};
use super::{Files, SampleError, Unobserved, read_text};
use crate::core::signal::{Observation, Signal};

const WHAT: Unobserved = Unobserved::Signal(Signal::PidAvailable);

/// Reads `pid.available`, using `buf` for each file in turn.
pub(super) fn read(files: &Files, buf: &mut Vec<u8>) -> Result<Observation, SampleError> {
    let pid_max = read_limit(buf, &files.pid_max, "pid_max")?;
    let threads_max = read_limit(buf, &files.threads_max, "threads-max")?;
    let max_pid = pid_max.min(threads_max);

    let loadavg = read_text(buf, &files.loadavg, WHAT)?;
    let tasks = running_tasks(loadavg)
        .map_err(|problem| SampleError::malformed(WHAT, &files.loadavg, problem))?;

    let capacity = to_i64(max_pid, "MaxPID")
        .map_err(|problem| SampleError::malformed(WHAT, &files.pid_max, problem))?;
    let tasks = to_i64(tasks, "running tasks")
        .map_err(|problem| SampleError::malformed(WHAT, &files.loadavg, problem))?;
    Ok(Observation {
        // Both are in [0, i64::MAX], so the difference cannot overflow.
        available: capacity - tasks,
        capacity,
    })
}

/// Reads a single-integer sysctl file such as `pid_max`.
fn read_limit(buf: &mut Vec<u8>, path: &Path, name: &str) -> Result<u64, SampleError> {
    let text = read_text(buf, path, WHAT)?;
    parse_u64(text.trim(), name).map_err(|problem| SampleError::malformed(WHAT, path, problem))
}

/// The total-task count in a `/proc/loadavg` line such as `0.19 0.13 0.04 3/106 4466` (the
/// number after "/"), parsed by procfs-core's `LoadAverage`.
fn running_tasks(loadavg: &str) -> Result<u64, String> {
    LoadAverage::from_read(loadavg.as_bytes())
        .map(|parsed| u64::from(parsed.max))
        .map_err(|error| {
            format!(
                "{:?} is not `load1 load5 load15 runnable/total last-pid`: {}",
                loadavg.trim(),
                procfs_problem(&error)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::running_tasks;

    #[test]
    fn total_tasks_is_after_the_slash_in_the_fourth_field() {
        assert_eq!(running_tasks("0.19 0.13 0.04 3/106 4466\n"), Ok(106));
        assert!(running_tasks("0.19 0.13 0.04").is_err());
        assert!(running_tasks("0.19 0.13 0.04 3-106 4466").is_err());
        assert!(running_tasks("0.19 0.13 0.04 3/x 4466").is_err());
        assert!(running_tasks("0.19 0.13 0.04 3/-1 4466").is_err());
        assert!(running_tasks("0.19 0.13 0.04 3/106").is_err());
        assert!(running_tasks("").is_err());
    }
}
