//! The terminator's path parsers (`src/terminate/{layout,procs}.rs`): `/proc/self/mountinfo`
//! (`prefix_from_mountinfo`), `/proc/<pid>/cgroup` (`cgroup_from_proc`), and the mapping from a
//! cgroup directory to the path `/proc/<pid>/cgroup` shows (`proc_cgroup_path`).
//!
//! The input is NUL-separated: mountinfo text, a resolved cgroup directory, a
//! `/proc/<pid>/cgroup` text, a v1 controller token (also used as a pod uid). Invariants: no
//! panic; a cgroup path is within itself; a path from `proc_cgroup_path`, for a fuzzed directory
//! or a pod directory built from a fuzzed uid, starts with the mount's prefix and has no `..`
//! component after it (else the terminator could signal processes outside the pod).
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use nodewarden::core::qos::QosClass;
use nodewarden::terminate::layout::prefix_from_mountinfo;
use nodewarden::terminate::procs::{cgroup_from_proc, is_within};
use nodewarden::terminate::{CgroupDriver, CgroupLayout, CgroupVersion, ProcCgroupLine};

fuzz_target!(|data: &[u8]| {
    let mut sections = data.split(|b| *b == 0).map(String::from_utf8_lossy);
    let mountinfo = sections.next().unwrap_or_default();
    let dir = sections.next().unwrap_or_default();
    let proc_cgroup = sections.next().unwrap_or_default();
    let token = sections.next().unwrap_or_default();

    let prefix = prefix_from_mountinfo(&mountinfo, Path::new(dir.as_ref()));

    for line in [
        ProcCgroupLine::Unified,
        ProcCgroupLine::V1(token.to_string()),
    ] {
        if let Some(path) = cgroup_from_proc(&proc_cgroup, &line) {
            assert!(is_within(&path, &path), "{path:?} is not within itself");
            if let Some(prefix) = &prefix {
                let _ = is_within(&path, prefix);
            }
        }
    }

    for (version, v1_hierarchy) in [
        (CgroupVersion::V2, None),
        (CgroupVersion::V1, Some("pids".to_string())),
    ] {
        for driver in [CgroupDriver::Systemd, CgroupDriver::Cgroupfs] {
            let layout = CgroupLayout {
                root: PathBuf::from("/sys/fs/cgroup"),
                version,
                driver,
                v1_hierarchy: v1_hierarchy.clone(),
                hierarchy_prefix: prefix.clone().unwrap_or_default(),
            };
            let under_root = layout.hierarchy_root().join(dir.trim_start_matches('/'));
            // A pod uid comes from the API server or the state file: whatever it holds, the
            // directory built from it maps to a cgroup path inside the hierarchy, or to none
            // (the terminator then refuses it as outside the hierarchy).
            let pod_dirs = [
                QosClass::Guaranteed,
                QosClass::Burstable,
                QosClass::BestEffort,
            ]
            .map(|qos| layout.pod_dir(&token, qos));
            for candidate in std::iter::once(&under_root).chain(&pod_dirs) {
                if let Some(path) = layout.proc_cgroup_path(candidate) {
                    // The prefix is the mount's root as mountinfo spells it, which may itself
                    // hold `..` (a cgroup namespace's view); what follows it must not.
                    let below = path
                        .strip_prefix(layout.hierarchy_prefix.trim_end_matches('/'))
                        .unwrap_or_else(|| panic!("{path:?} does not start with the prefix"));
                    assert!(
                        !below.split('/').any(|c| c == ".."),
                        "{candidate:?} mapped to {path:?}, outside the hierarchy"
                    );
                }
            }
        }
    }
});
