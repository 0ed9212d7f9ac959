//! Keeping fenced pods dead. Once the planner has had a pod killed, the kubelet (which does
//! not know the control plane gave up on it) restarts its containers; every sweep kills
//! whatever is found in a fenced pod's cgroup tree again, until the fence is lifted (docs/fence.md
//! §4). Pure bookkeeping plus the kill calls; the caller owns time and must sweep at least
//! every 500 ms so a respawned process dies within a second.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::signal::{SignalReport, Terminator};

/// Kills a pod cgroup's processes. [`Terminator`] is the real one; tests of the bookkeeping
/// use a double.
pub trait KillPod {
    /// Kills every process in the pod cgroup `pod_dir` and its descendants.
    fn kill_pod(&self, pod_dir: &Path) -> SignalReport;
}

impl KillPod for Terminator {
    fn kill_pod(&self, pod_dir: &Path) -> SignalReport {
        self.kill(pod_dir)
    }
}

/// The fenced pods: UID → pod cgroup directory.
#[derive(Clone, Debug, Default)]
pub struct Fence {
    pods: BTreeMap<String, PathBuf>,
}

/// What one sweep did to one fenced pod in which it found processes (or hit errors).
#[derive(Debug)]
pub struct PodSweep {
    /// The pod UID.
    pub uid: String,
    /// Its cgroup directory.
    pub dir: PathBuf,
    /// The kill.
    pub report: SignalReport,
}

/// What one sweep did: only pods where something was found or went wrong are listed.
#[derive(Debug, Default)]
pub struct SweepReport {
    /// Per pod.
    pub pods: Vec<PodSweep>,
}

impl SweepReport {
    /// Processes killed across all pods.
    pub fn killed(&self) -> usize {
        self.pods.iter().map(|p| p.report.signalled).sum()
    }

    /// Whether the sweep found nothing to do and hit no error.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

impl Fence {
    /// No pods fenced.
    pub fn new() -> Fence {
        Fence::default()
    }

    /// Fences pod `uid` whose cgroup is `dir`. Returns false when it was already fenced (the
    /// directory is updated).
    pub fn fence(&mut self, uid: impl Into<String>, dir: impl Into<PathBuf>) -> bool {
        self.pods.insert(uid.into(), dir.into()).is_none()
    }

    /// Lifts the fence on `uid` (the API is back and the pod may run); returns its directory if
    /// it was fenced.
    pub fn lift(&mut self, uid: &str) -> Option<PathBuf> {
        self.pods.remove(uid)
    }

    /// Whether `uid` is fenced.
    pub fn is_fenced(&self, uid: &str) -> bool {
        self.pods.contains_key(uid)
    }

    /// The fenced pods, by UID.
    pub fn pods(&self) -> impl Iterator<Item = (&str, &Path)> {
        self.pods.iter().map(|(u, d)| (u.as_str(), d.as_path()))
    }

    /// How many pods are fenced.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Whether no pod is fenced.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// Kills any process found in a fenced pod's cgroup tree.
    pub fn sweep(&self, killer: &impl KillPod) -> SweepReport {
        let mut sweep = SweepReport::default();
        for (uid, dir) in &self.pods {
            let report = killer.kill_pod(dir);
            if report.found > 0 || report.hidden > 0 || !report.errors.is_empty() {
                sweep.pods.push(PodSweep {
                    uid: uid.clone(),
                    dir: dir.clone(),
                    report,
                });
            }
        }
        sweep
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminate::signal::{KillMethod, StopSignal};
    use std::cell::RefCell;

    /// Pretends each directory holds a number of processes and records the calls.
    struct Double {
        procs: BTreeMap<PathBuf, usize>,
        calls: RefCell<Vec<PathBuf>>,
    }

    impl KillPod for Double {
        fn kill_pod(&self, pod_dir: &Path) -> SignalReport {
            self.calls.borrow_mut().push(pod_dir.to_path_buf());
            let n = self.procs.get(pod_dir).copied().unwrap_or(0);
            SignalReport {
                signal: StopSignal::Kill,
                method: KillMethod::Pidfd,
                found: n,
                signalled: n,
                already_gone: 0,
                left_pod: 0,
                hidden: 0,
                errors: Vec::new(),
            }
        }
    }

    #[test]
    fn sweep_kills_in_every_fenced_pod_and_reports_only_busy_ones() {
        let mut fence = Fence::new();
        assert!(fence.fence("a", "/c/a"));
        assert!(fence.fence("b", "/c/b"));
        let double = Double {
            procs: [(PathBuf::from("/c/a"), 3), (PathBuf::from("/c/x"), 9)].into(),
            calls: RefCell::new(Vec::new()),
        };
        let sweep = fence.sweep(&double);
        assert_eq!(sweep.killed(), 3);
        assert_eq!(sweep.pods.len(), 1);
        assert_eq!(sweep.pods[0].uid, "a");
        assert_eq!(
            *double.calls.borrow(),
            vec![PathBuf::from("/c/a"), PathBuf::from("/c/b")],
            "an unfenced pod's cgroup is never touched"
        );
    }

    #[test]
    fn a_lifted_pod_is_no_longer_swept() {
        let mut fence = Fence::new();
        fence.fence("a", "/c/a");
        assert!(
            !fence.fence("a", "/c/a2"),
            "re-fencing updates the directory"
        );
        assert_eq!(fence.lift("a"), Some(PathBuf::from("/c/a2")));
        assert_eq!(fence.lift("a"), None);
        assert!(fence.is_empty());
        let double = Double {
            procs: [(PathBuf::from("/c/a2"), 1)].into(),
            calls: RefCell::new(Vec::new()),
        };
        assert!(fence.sweep(&double).is_empty());
        assert!(double.calls.borrow().is_empty());
    }
}
