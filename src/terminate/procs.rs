//! Which processes belong to a pod: the PIDs in a pod cgroup's tree (`cgroup.procs` of the pod
//! cgroup and every container cgroup below it), and the cgroup a PID is in now
//! (`/proc/<pid>/cgroup`), used to re-check membership after a pidfd pins the process.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::layout::ProcCgroupLine;
use crate::bounded;

/// Deeper than any kubelet/runtime tree (pod → container → maybe a nested runtime scope), so
/// the walk is bounded even on a pathological tree.
const MAX_DEPTH: usize = 16;

/// Why the processes of a pod could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum ProcsError {
    /// A directory or `cgroup.procs` could not be read.
    #[error("cannot read {path}: {source}", path = path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A `cgroup.procs` line is not a PID.
    #[error("{path}: {line:?} is not a PID", path = path.display())]
    BadPid {
        /// The file.
        path: PathBuf,
        /// The offending line.
        line: String,
    },
    /// The tree is deeper than `MAX_DEPTH` (16) levels.
    #[error("{path}: cgroup tree deeper than {MAX_DEPTH} levels", path = path.display())]
    TooDeep {
        /// The directory at the limit.
        path: PathBuf,
    },
}

/// The processes found in a cgroup tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeProcesses {
    /// PIDs as seen from our PID namespace, sorted, without duplicates.
    pub pids: Vec<i32>,
    /// Entries listed as `0`: the kernel's spelling for a process outside our PID namespace
    /// (an agent pod without `hostPID`). They cannot be signalled by PID; only `cgroup.kill`
    /// reaches them.
    pub hidden: usize,
}

/// Every process in `dir`'s cgroup and its descendants. A missing `dir` (the pod is gone, or
/// not started yet) is no processes, not an error; so is a cgroup removed while we walk (its
/// processes exited).
pub fn pids_in_tree(dir: &Path) -> Result<TreeProcesses, ProcsError> {
    let mut pids = Vec::new();
    let mut hidden = 0;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(ProcsError::TooDeep { path: dir });
        }
        let procs = dir.join("cgroup.procs");
        match bounded::read_to_string(&procs, bounded::KERNEL_LIST) {
            Ok(text) => {
                for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    match line.parse::<i32>() {
                        Ok(pid) if pid > 0 => pids.push(pid),
                        Ok(0) => hidden += 1,
                        _ => {
                            return Err(ProcsError::BadPid {
                                path: procs,
                                line: line.to_owned(),
                            });
                        }
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(ProcsError::Read {
                    path: procs,
                    source,
                });
            }
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => continue,
            Err(source) => return Err(ProcsError::Read { path: dir, source }),
        };
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(source) => return Err(ProcsError::Read { path: dir, source }),
            };
            // file_type does not follow symlinks; cgroupfs has none, and we do not want to
            // wander out of the tree if a fixture does.
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((entry.path(), depth + 1));
            }
        }
    }
    pids.sort_unstable();
    pids.dedup();
    Ok(TreeProcesses { pids, hidden })
}

/// The cgroup path on `line` of a `/proc/<pid>/cgroup` text
/// (`hierarchy-ID:controller-list:path`), if that line is present.
pub fn cgroup_from_proc(text: &str, line: &ProcCgroupLine) -> Option<String> {
    text.lines().find_map(|l| {
        let mut fields = l.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let wanted = match line {
            ProcCgroupLine::Unified => id == "0" && controllers.is_empty(),
            ProcCgroupLine::V1(token) => controllers.split(',').any(|c| c == token),
        };
        wanted.then(|| path.to_owned())
    })
}

/// Whether a process whose cgroup is `process_cgroup` is in the pod cgroup `pod_cgroup` or
/// below it. Compared by whole components, so `/kubepods/podab` is not inside `/kubepods/poda`.
pub fn is_within(process_cgroup: &str, pod_cgroup: &str) -> bool {
    let pod = pod_cgroup.trim_end_matches('/');
    match process_cgroup.strip_prefix(pod) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
9:name=systemd:/user.slice
8:pids:/kubepods/burstable/pod1/c1
2:cpu,cpuacct:/kubepods/burstable/pod1/c1
0::/init.scope
";

    #[test]
    fn picks_the_line_of_our_hierarchy() {
        let pids = ProcCgroupLine::V1("pids".into());
        let cpu = ProcCgroupLine::V1("cpu".into());
        let systemd = ProcCgroupLine::V1("name=systemd".into());
        assert_eq!(
            cgroup_from_proc(HYBRID, &pids).as_deref(),
            Some("/kubepods/burstable/pod1/c1")
        );
        assert_eq!(
            cgroup_from_proc(HYBRID, &cpu).as_deref(),
            Some("/kubepods/burstable/pod1/c1")
        );
        assert_eq!(
            cgroup_from_proc(HYBRID, &systemd).as_deref(),
            Some("/user.slice")
        );
        assert_eq!(
            cgroup_from_proc(HYBRID, &ProcCgroupLine::Unified).as_deref(),
            Some("/init.scope")
        );
        assert_eq!(
            cgroup_from_proc(HYBRID, &ProcCgroupLine::V1("memory".into())),
            None
        );
    }

    #[test]
    fn membership_is_by_whole_components() {
        assert!(is_within("/k/poda", "/k/poda"));
        assert!(is_within("/k/poda/c1", "/k/poda"));
        assert!(is_within("/k/poda/c1", "/k/poda/"));
        assert!(!is_within("/k/podab", "/k/poda"));
        assert!(!is_within("/k", "/k/poda"));
        assert!(!is_within("/other", "/k/poda"));
    }

    #[test]
    fn lists_every_pid_in_the_tree_and_treats_missing_as_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let pod = tmp.path().join("pod");
        std::fs::create_dir_all(pod.join("c1/nested")).unwrap();
        std::fs::create_dir_all(pod.join("c2")).unwrap();
        std::fs::write(pod.join("cgroup.procs"), "").unwrap();
        std::fs::write(pod.join("c1/cgroup.procs"), "10\n11\n").unwrap();
        std::fs::write(pod.join("c1/nested/cgroup.procs"), "12\n").unwrap();
        std::fs::write(pod.join("c2/cgroup.procs"), "7\n10\n0\n").unwrap();
        let found = pids_in_tree(&pod).unwrap();
        assert_eq!(found.pids, vec![7, 10, 11, 12]);
        assert_eq!(found.hidden, 1, "0 is a process outside our PID namespace");
        assert_eq!(
            pids_in_tree(&tmp.path().join("gone")).unwrap(),
            TreeProcesses::default()
        );
    }

    #[test]
    fn a_cgroup_procs_that_never_ends_is_an_error_naming_the_file_and_the_limit() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink("/dev/zero", tmp.path().join("cgroup.procs")).expect("symlink");
        let err = pids_in_tree(tmp.path()).expect_err("endless");
        assert!(
            matches!(&err, ProcsError::Read { source, .. } if source.kind() == ErrorKind::FileTooLarge),
            "{err:?}"
        );
        let shown = err.to_string();
        assert!(
            shown.contains("cgroup.procs") && shown.contains("16777216 bytes"),
            "{shown}"
        );
    }

    #[test]
    fn a_line_that_is_not_a_pid_is_an_error_naming_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("cgroup.procs"), "12\nx\n").unwrap();
        let err = pids_in_tree(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("cgroup.procs") && err.contains("\"x\""),
            "{err}"
        );
    }
}
