//! `memory.available`, computed as the kubelet computes it (docs/semantics.md §7.1):
//!
//! - capacity = machine memory = `MemTotal` from `/proc/meminfo`;
//! - working set = root cgroup memory usage − inactive file pages, floored at 0
//!   (`pkg/kubelet/stats/helper.go`, via cAdvisor);
//! - available = capacity − working set. It may be negative; the core compares it signed.
//!
//! Where "root cgroup usage" and "inactive file" come from depends on the cgroup version:
//!
//! | | usage | inactive file |
//! |---|---|---|
//! | v1 | `memory/memory.usage_in_bytes` | `total_inactive_file` in `memory/memory.stat` |
//! | v2 | `MemTotal − MemFree` from `/proc/meminfo` | `inactive_file` in `memory.stat` |
//!
//! The v2 root cgroup has no `memory.current`, so cAdvisor takes the root's usage from runc's
//! libcontainer, which emulates it from `/proc/meminfo` as `MemTotal − MemFree`
//! (`libcontainer/cgroups/fs2/memory.go`, `statsFromMeminfo`). docs/semantics.md §7.1 marks this
//! source UNVERIFIED; note that the newer `opencontainers/cgroups` library computes the v2 root
//! usage as `anon + file` from the root `memory.stat` instead.

use std::path::Path;

use super::text::{meminfo, parse_u64, to_i64, u64_field};
use super::{Files, SampleError, Unobserved, read_text};
use crate::core::signal::{Observation, Signal};

const WHAT: Unobserved = Unobserved::Signal(Signal::MemoryAvailable);

/// Which cgroup hierarchy holds the root memory accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    /// `<cgroup_root>/memory/` is a v1 memory controller hierarchy.
    V1,
    /// `<cgroup_root>` is the v2 unified hierarchy (it has `cgroup.controllers`).
    V2,
}

/// Detects the cgroup version: v2 if the root has `cgroup.controllers` (only the unified
/// hierarchy has it), else v1 if the memory controller's `memory.usage_in_bytes` exists. A hybrid host (v1 controllers, v2 mounted at `unified/`)
/// counts as v1, as the memory controller lives in v1 there.
pub(super) fn detect(cgroup_root: &Path, files: &Files) -> Result<CgroupVersion, SampleError> {
    if files.cgroup_v2_marker.exists() {
        Ok(CgroupVersion::V2)
    } else if files.cgroup_v1_usage.exists() {
        Ok(CgroupVersion::V1)
    } else {
        Err(SampleError::NoCgroupMemory {
            root: cgroup_root.to_path_buf(),
            v2: files.cgroup_v2_marker.clone(),
            v1: files.cgroup_v1_usage.clone(),
        })
    }
}

/// Reads `memory.available` for the given cgroup version, using `buf` for each file in turn.
pub(super) fn read(
    version: CgroupVersion,
    files: &Files,
    buf: &mut Vec<u8>,
) -> Result<Observation, SampleError> {
    let text = read_text(buf, &files.meminfo, WHAT)?;
    let malformed_meminfo = |problem| SampleError::malformed(WHAT, &files.meminfo, problem);
    let meminfo = meminfo(text).map_err(malformed_meminfo)?;
    let capacity = meminfo.mem_total;

    let (usage, usage_path, inactive_file) = match version {
        CgroupVersion::V2 => {
            let free = meminfo.mem_free;
            let usage = capacity.checked_sub(free).ok_or_else(|| {
                malformed_meminfo(format!(
                    "MemFree ({free} bytes) exceeds MemTotal ({capacity} bytes)"
                ))
            })?;
            let path = &files.cgroup_v2_memory_stat;
            let stat = read_text(buf, path, WHAT)?;
            let inactive = u64_field(stat, "inactive_file")
                .map_err(|problem| SampleError::malformed(WHAT, path, problem))?;
            (usage, &files.meminfo, inactive)
        }
        CgroupVersion::V1 => {
            let usage_path = &files.cgroup_v1_usage;
            let text = read_text(buf, usage_path, WHAT)?;
            let usage = parse_u64(text.trim(), "memory.usage_in_bytes")
                .map_err(|problem| SampleError::malformed(WHAT, usage_path, problem))?;
            let path = &files.cgroup_v1_memory_stat;
            let stat = read_text(buf, path, WHAT)?;
            let inactive = u64_field(stat, "total_inactive_file")
                .map_err(|problem| SampleError::malformed(WHAT, path, problem))?;
            (usage, usage_path, inactive)
        }
    };

    // Working set = usage − inactive file, floored at 0 (docs/semantics.md §7.1): inactive file
    // pages are reclaimable, so they do not count against the node.
    let working_set = usage.saturating_sub(inactive_file);
    let capacity = to_i64(capacity, "MemTotal").map_err(malformed_meminfo)?;
    let working_set = to_i64(working_set, "working set")
        .map_err(|problem| SampleError::malformed(WHAT, usage_path, problem))?;
    Ok(Observation {
        // Both are in [0, i64::MAX], so the difference cannot overflow.
        available: capacity - working_set,
        capacity,
    })
}
