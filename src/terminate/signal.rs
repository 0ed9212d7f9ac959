//! Stopping a pod's processes: SIGTERM and SIGKILL through pidfds, and `cgroup.kill` on v2.
//!
//! The PID-reuse hazard: a PID read from `cgroup.procs` may belong to a different process by
//! the time we signal it (the pod's process exited and the number was recycled). So for each
//! PID we first open a pidfd, which pins *that* process, then re-read `/proc/<pid>/cgroup` and
//! check the process is still inside the pod, and only then signal through the pidfd:
//! - if the PID was recycled before `pidfd_open`, the pidfd pins the newcomer, whose cgroup is
//!   not the pod's (it holds the PID while alive), so it is skipped;
//! - if the pinned process dies after `pidfd_open` and the PID is recycled again, the signal
//!   still goes to the pinned (dead) process and fails with ESRCH; nobody else is hit.

use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use super::layout::{CgroupLayout, CgroupVersion};
use super::procs::{ProcsError, cgroup_from_proc, is_within, pids_in_tree};
use crate::bounded;

/// Kill passes on the pidfd path. A process forking while we walk the tree can add a child we
/// did not list; another pass catches it. Passes stop early once one finds no new PID; a
/// fork loop that outruns them is left to the fence's next sweep.
const KILL_PASSES: usize = 4;

/// The two signals the terminator sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopSignal {
    /// SIGTERM: ask the process to exit (its grace period starts).
    Term,
    /// SIGKILL: the grace period is over.
    Kill,
}

impl StopSignal {
    fn raw(self) -> Signal {
        match self {
            StopSignal::Term => Signal::TERM,
            StopSignal::Kill => Signal::KILL,
        }
    }
}

/// How a kill was carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillMethod {
    /// One signal per process through a pidfd.
    Pidfd,
    /// A write of `1` to the pod cgroup's `cgroup.kill` (v2, kernel ≥ 5.14).
    CgroupKill,
}

/// What went wrong for one PID or one file.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// The pod directory is not under the layout's hierarchy root, so membership cannot be
    /// checked; nothing is signalled.
    #[error("{dir} is not under the cgroup hierarchy root {root}", dir = dir.display(), root = root.display())]
    OutsideHierarchy {
        /// The directory given.
        dir: PathBuf,
        /// The hierarchy root.
        root: PathBuf,
    },
    /// Listing the pod's processes failed.
    #[error(transparent)]
    List(#[from] ProcsError),
    /// `pidfd_open` failed for a reason other than the process being gone.
    #[error("pid {pid}: pidfd_open: {source}")]
    PidfdOpen {
        /// The PID.
        pid: i32,
        /// The error.
        source: std::io::Error,
    },
    /// `/proc/<pid>/cgroup` could not be read (other than the process being gone).
    #[error("pid {pid}: cannot read {path}: {source}", path = path.display())]
    ProcCgroup {
        /// The PID.
        pid: i32,
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// `pidfd_send_signal` failed for a reason other than the process being gone.
    #[error("pid {pid}: sending {signal:?}: {source}")]
    Send {
        /// The PID.
        pid: i32,
        /// The signal.
        signal: StopSignal,
        /// The error.
        source: std::io::Error,
    },
    /// Writing `cgroup.kill` failed although the file exists (we then fell back to pidfds).
    #[error("cannot write {path}: {source}", path = path.display())]
    CgroupKill {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What one signalling call did to one pod.
#[derive(Debug)]
pub struct SignalReport {
    /// The signal sent.
    pub signal: StopSignal,
    /// How it was sent.
    pub method: KillMethod,
    /// Distinct PIDs found in the pod's cgroup tree.
    pub found: usize,
    /// Processes signalled. With [`KillMethod::CgroupKill`] this is the number listed just
    /// before the write; the kernel kills those and anything forked since.
    pub signalled: usize,
    /// PIDs whose process exited before we could signal it (ESRCH): not an error.
    pub already_gone: usize,
    /// PIDs whose process was no longer in the pod at the re-check (moved out, or the PID was
    /// recycled): deliberately not signalled.
    pub left_pod: usize,
    /// Processes in the tree outside our PID namespace (listed as `0`): signalled only by
    /// `cgroup.kill`, otherwise out of reach (run the agent with the host's PID namespace).
    pub hidden: usize,
    /// Failures, each naming its PID or file.
    pub errors: Vec<SignalError>,
}

impl SignalReport {
    fn new(signal: StopSignal, method: KillMethod) -> SignalReport {
        SignalReport {
            signal,
            method,
            found: 0,
            signalled: 0,
            already_gone: 0,
            left_pod: 0,
            hidden: 0,
            errors: Vec::new(),
        }
    }
}

/// Outcome for one PID on the pidfd path.
enum PidOutcome {
    Signalled,
    Gone,
    LeftPod,
}

/// Signals the processes of pod cgroups. Holds the layout and the proc root; no policy.
#[derive(Clone, Debug)]
pub struct Terminator {
    layout: CgroupLayout,
    proc_root: PathBuf,
    use_cgroup_kill: bool,
}

impl Terminator {
    /// A terminator for `layout`, reading `/proc/<pid>/cgroup` under `proc_root` (normally
    /// `/proc`). Uses `cgroup.kill` on v2 when the kernel has it.
    pub fn new(layout: CgroupLayout, proc_root: impl Into<PathBuf>) -> Terminator {
        let use_cgroup_kill = layout.version == CgroupVersion::V2;
        Terminator {
            layout,
            proc_root: proc_root.into(),
            use_cgroup_kill,
        }
    }

    /// The same terminator, but always killing through pidfds (no `cgroup.kill`).
    pub fn without_cgroup_kill(mut self) -> Terminator {
        self.use_cgroup_kill = false;
        self
    }

    /// The layout this terminator acts on.
    pub fn layout(&self) -> &CgroupLayout {
        &self.layout
    }

    /// Every PID in the pod cgroup `pod_dir` and its container cgroups; empty when the pod
    /// cgroup does not exist.
    pub fn processes(&self, pod_dir: &Path) -> Result<Vec<i32>, ProcsError> {
        pids_in_tree(pod_dir).map(|t| t.pids)
    }

    /// Sends SIGTERM to every process of the pod (one pass).
    pub fn terminate(&self, pod_dir: &Path) -> SignalReport {
        let mut report = SignalReport::new(StopSignal::Term, KillMethod::Pidfd);
        if let Some(pod_cgroup) = self.pod_cgroup(pod_dir, &mut report) {
            self.pidfd_pass(
                pod_dir,
                &pod_cgroup,
                StopSignal::Term,
                &mut Vec::new(),
                &mut report,
            );
        }
        report
    }

    /// Kills every process of the pod: `cgroup.kill` on v2 when available (atomic: the kernel
    /// also stops forks in flight, so no child escapes), else SIGKILL through pidfds in up to
    /// `KILL_PASSES` (4) passes.
    pub fn kill(&self, pod_dir: &Path) -> SignalReport {
        let mut report = SignalReport::new(StopSignal::Kill, KillMethod::Pidfd);
        let Some(pod_cgroup) = self.pod_cgroup(pod_dir, &mut report) else {
            return report;
        };
        if self.use_cgroup_kill {
            match pids_in_tree(pod_dir) {
                Ok(tree) if tree.pids.is_empty() && tree.hidden == 0 => return report,
                Ok(tree) => {
                    let path = pod_dir.join("cgroup.kill");
                    // Open without create: on kernels before 5.14 the file does not exist and
                    // we must not make a regular file appear (cgroupfs would refuse anyway).
                    let written = std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .and_then(|mut f| std::io::Write::write_all(&mut f, b"1"));
                    match written {
                        Ok(()) => {
                            report.method = KillMethod::CgroupKill;
                            report.found = tree.pids.len();
                            report.signalled = tree.pids.len();
                            report.hidden = tree.hidden;
                            return report;
                        }
                        // Pre-5.14 kernel, or the pod cgroup vanished: pidfds decide below.
                        Err(e) if e.kind() == ErrorKind::NotFound => {}
                        Err(source) => report.errors.push(SignalError::CgroupKill { path, source }),
                    }
                }
                Err(e) => {
                    report.errors.push(e.into());
                    return report;
                }
            }
        }
        let mut handled = Vec::new();
        for _ in 0..KILL_PASSES {
            let before = handled.len();
            if !self.pidfd_pass(
                pod_dir,
                &pod_cgroup,
                StopSignal::Kill,
                &mut handled,
                &mut report,
            ) {
                break;
            }
            if handled.len() == before {
                break;
            }
        }
        report
    }

    /// The pod cgroup's path as `/proc/<pid>/cgroup` shows it, or an error in the report.
    fn pod_cgroup(&self, pod_dir: &Path, report: &mut SignalReport) -> Option<String> {
        let path = self.layout.proc_cgroup_path(pod_dir);
        if path.is_none() {
            report.errors.push(SignalError::OutsideHierarchy {
                dir: pod_dir.to_path_buf(),
                root: self.layout.hierarchy_root(),
            });
        }
        path
    }

    /// Lists the pod's PIDs and signals each one not in `handled` (adding it). Returns false
    /// when listing failed (the error is in the report).
    fn pidfd_pass(
        &self,
        pod_dir: &Path,
        pod_cgroup: &str,
        signal: StopSignal,
        handled: &mut Vec<i32>,
        report: &mut SignalReport,
    ) -> bool {
        let tree = match pids_in_tree(pod_dir) {
            Ok(tree) => tree,
            Err(e) => {
                report.errors.push(e.into());
                return false;
            }
        };
        report.hidden = report.hidden.max(tree.hidden);
        for pid in tree.pids {
            if handled.contains(&pid) {
                continue;
            }
            handled.push(pid);
            report.found += 1;
            match self.signal_one(pid, pod_cgroup, signal) {
                Ok(PidOutcome::Signalled) => report.signalled += 1,
                Ok(PidOutcome::Gone) => report.already_gone += 1,
                Ok(PidOutcome::LeftPod) => report.left_pod += 1,
                Err(e) => report.errors.push(e),
            }
        }
        true
    }

    /// pidfd_open, re-check membership, then pidfd_send_signal (see the module doc).
    fn signal_one(
        &self,
        pid: i32,
        pod_cgroup: &str,
        signal: StopSignal,
    ) -> Result<PidOutcome, SignalError> {
        let Some(raw_pid) = Pid::from_raw(pid) else {
            // pids_in_tree only yields positive PIDs; a non-positive one names no process.
            return Ok(PidOutcome::Gone);
        };
        let pidfd: OwnedFd = match pidfd_open(raw_pid, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(Errno::SRCH) => return Ok(PidOutcome::Gone),
            Err(e) => {
                return Err(SignalError::PidfdOpen {
                    pid,
                    source: e.into(),
                });
            }
        };
        let path = self.proc_root.join(pid.to_string()).join("cgroup");
        let text = match bounded::read_to_string(&path, bounded::KERNEL_TEXT) {
            Ok(text) => text,
            // The process was reaped after pidfd_open: its /proc entry is gone (ENOENT), or
            // the read raced the exit (ESRCH).
            Err(e) if e.kind() == ErrorKind::NotFound || e.raw_os_error() == Some(esrch()) => {
                return Ok(PidOutcome::Gone);
            }
            Err(source) => return Err(SignalError::ProcCgroup { pid, path, source }),
        };
        let inside = cgroup_from_proc(&text, &self.layout.proc_line())
            .is_some_and(|cgroup| is_within(&cgroup, pod_cgroup));
        if !inside {
            return Ok(PidOutcome::LeftPod);
        }
        match pidfd_send_signal(&pidfd, signal.raw()) {
            Ok(()) => Ok(PidOutcome::Signalled),
            Err(Errno::SRCH) => Ok(PidOutcome::Gone),
            Err(e) => Err(SignalError::Send {
                pid,
                signal,
                source: e.into(),
            }),
        }
    }
}

/// ESRCH as a raw OS error number (what `std::io::Error::raw_os_error` reports).
fn esrch() -> i32 {
    Errno::SRCH.raw_os_error()
}
