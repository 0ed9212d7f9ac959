//! A per-test cgroup sandbox inside a REAL hierarchy, laid out like the kubelet's, with real
//! processes placed in container cgroups.
//!
//! - v2: `/sys/fs/cgroup/unified/nodewarden-test-<pid>-<n>/` on a hybrid host (or
//!   `/sys/fs/cgroup/nodewarden-test-…` on a pure v2 host). The terminator's root is the sandbox
//!   directory itself: it holds `cgroup.controllers` like any v2 cgroup, so detection says v2.
//! - v1: `/sys/fs/cgroup/pids/nodewarden-test-<pid>-<n>/`. The terminator's root is a temporary
//!   directory whose `pids` entry is a symlink to the sandbox, so `<root>/pids/kubepods…` is the
//!   sandbox's tree. A symlink (not a bind mount) needs no mount namespace and nothing to undo
//!   but a file; `CgroupLayout::locate_in_mounts` resolves it to learn the sandbox's path
//!   inside the pids hierarchy, which is what `/proc/<pid>/cgroup` shows.
//!
//! Processes are started as `sh -c 'read go; <script>'` with a piped stdin: the shell blocks in
//! the `read` builtin (no fork yet), we write its PID to the container's `cgroup.procs`, then
//! release it. Everything it starts afterwards is born inside the container cgroup, with no
//! window in which a child could be created outside it, and no unsafe `pre_exec`.
//!
//! On drop: every process left IN THE SANDBOX tree is killed by PID (through a pidfd; never by
//! name), our own children are reaped, and the directories are removed deepest first, retrying
//! briefly while the kernel finishes reaping. Nothing outside the sandbox is moved or signalled
//! except children this sandbox spawned itself.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nodewarden::core::qos::QosClass;
use nodewarden::terminate::{CgroupDriver, CgroupLayout, CgroupVersion};

use super::{is_root, require};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A sandbox for one test.
pub struct CgroupSandbox {
    pub version: CgroupVersion,
    pub driver: CgroupDriver,
    /// The sandbox directory in the real hierarchy.
    real: PathBuf,
    /// The root handed to the terminator.
    root: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    children: Vec<Child>,
}

fn v2_base() -> Option<PathBuf> {
    ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.join("cgroup.controllers").is_file())
}

fn v1_base() -> Option<PathBuf> {
    let p = PathBuf::from("/sys/fs/cgroup/pids");
    (p.join("tasks").is_file() && p.join("cgroup.procs").is_file()).then_some(p)
}

/// `6f1c-…` → `6f1c_…`, the systemd escaping, written out here independently of `core::qos`.
fn underscored(uid: &str) -> String {
    uid.replace('-', "_")
}

/// The pod cgroup path relative to the kubelet root, spelled out literally (not through the
/// code under test).
pub fn kubelet_pod_path(driver: CgroupDriver, uid: &str, qos: QosClass) -> String {
    let u = underscored(uid);
    match (driver, qos) {
        (CgroupDriver::Systemd, QosClass::Guaranteed) => {
            format!("kubepods.slice/kubepods-pod{u}.slice")
        }
        (CgroupDriver::Systemd, QosClass::Burstable) => {
            format!("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{u}.slice")
        }
        (CgroupDriver::Systemd, QosClass::BestEffort) => {
            format!("kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{u}.slice")
        }
        (CgroupDriver::Cgroupfs, QosClass::Guaranteed) => format!("kubepods/pod{uid}"),
        (CgroupDriver::Cgroupfs, QosClass::Burstable) => format!("kubepods/burstable/pod{uid}"),
        (CgroupDriver::Cgroupfs, QosClass::BestEffort) => {
            format!("kubepods/besteffort/pod{uid}")
        }
    }
}

impl CgroupSandbox {
    /// Creates the sandbox, or returns `None` after printing `SKIPPED: …` (outside CI) when we
    /// are not root or the hierarchy is missing; in CI that panics instead.
    pub fn create(version: CgroupVersion, driver: CgroupDriver) -> Option<CgroupSandbox> {
        if !require(is_root(), "root (to create cgroups)") {
            return None;
        }
        let base = match version {
            CgroupVersion::V2 => v2_base(),
            CgroupVersion::V1 => v1_base(),
        };
        let what = match version {
            CgroupVersion::V2 => "a writable cgroup2 hierarchy",
            CgroupVersion::V1 => "a writable cgroup v1 pids hierarchy at /sys/fs/cgroup/pids",
        };
        let Some(base) = base else {
            require(false, what);
            return None;
        };
        let name = format!(
            "nodewarden-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let real = base.join(name);
        if let Err(e) = std::fs::create_dir(&real) {
            require(false, &format!("{what} ({}: {e})", real.display()));
            return None;
        }
        let top = match driver {
            CgroupDriver::Systemd => "kubepods.slice",
            CgroupDriver::Cgroupfs => "kubepods",
        };
        let (root, tmp) = match version {
            CgroupVersion::V2 => (real.clone(), None),
            CgroupVersion::V1 => {
                let tmp = tempfile::tempdir().expect("tempdir for the v1 root");
                std::os::unix::fs::symlink(&real, tmp.path().join("pids"))
                    .expect("symlink <root>/pids to the sandbox");
                (tmp.path().to_path_buf(), Some(tmp))
            }
        };
        let sandbox = CgroupSandbox {
            version,
            driver,
            real,
            root,
            _tmp: tmp,
            children: Vec::new(),
        };
        std::fs::create_dir(sandbox.real.join(top)).expect("create the kubepods tree");
        Some(sandbox)
    }

    /// The root to give the terminator.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The sandbox directory in the real hierarchy.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// The layout detected from [`root`](Self::root), located in the real mounts.
    pub fn layout(&self) -> CgroupLayout {
        CgroupLayout::detect(&self.root, None, None)
            .and_then(|l| l.locate_in_mounts(Path::new("/proc")))
            .expect("detect the sandbox's layout")
    }

    /// Creates (if needed) and returns the pod cgroup directory in the real hierarchy.
    pub fn pod_dir(&self, uid: &str, qos: QosClass) -> PathBuf {
        let dir = self.real.join(kubelet_pod_path(self.driver, uid, qos));
        std::fs::create_dir_all(&dir).expect("create pod cgroup");
        dir
    }

    /// Creates (if needed) and returns a container cgroup under the pod, named as the runtime
    /// would: `cri-containerd-<id>.scope` (systemd) or `<id>` (cgroupfs).
    pub fn container_dir(&self, uid: &str, qos: QosClass, id: &str) -> PathBuf {
        let name = match self.driver {
            CgroupDriver::Systemd => format!("cri-containerd-{id}.scope"),
            CgroupDriver::Cgroupfs => id.to_owned(),
        };
        let dir = self.pod_dir(uid, qos).join(name);
        std::fs::create_dir_all(&dir).expect("create container cgroup");
        dir
    }

    /// Starts `script` under `sh` inside the cgroup `dir` (see the module doc) with `env`, and
    /// returns its PID.
    pub fn spawn_in(&mut self, dir: &Path, script: &str, env: &[(&str, &Path)]) -> i32 {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("read go; {script}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn sh");
        let pid = child.id() as i32;
        let mut stdin = child.stdin.take().expect("piped stdin");
        self.children.push(child);
        std::fs::write(dir.join("cgroup.procs"), pid.to_string())
            .expect("move the child into its cgroup");
        stdin.write_all(b"go\n").expect("release the child");
        pid
    }

    /// Starts `script` in the test's own cgroup, outside the sandbox (a decoy).
    pub fn spawn_outside(&mut self, script: &str) -> i32 {
        let child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn decoy");
        let pid = child.id() as i32;
        self.children.push(child);
        pid
    }

    /// Reaps any of our children that exited, so they do not linger as zombies.
    pub fn reap(&mut self) {
        for child in &mut self.children {
            let _ = child.try_wait();
        }
    }

    fn dirs_deepest_first(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self.real.clone()];
        while let Some(dir) = stack.pop() {
            if let Ok(entries) = std::fs::read_dir(&dir) {
                for e in entries.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(e.path());
                    }
                }
            }
            out.push(dir);
        }
        // Pre-order from a stack; sort by depth so children go before parents.
        out.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        out
    }

    fn pids_in_sandbox(&self) -> Vec<i32> {
        let mut pids = Vec::new();
        for dir in self.dirs_deepest_first() {
            if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
            }
        }
        pids
    }
}

/// Whether `pid` names a live (not zombie) process. Only used on PIDs a test started, within
/// the test's lifetime, where recycling is not a practical concern.
pub fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesised command name, which may itself contain ") ".
    let state = stat
        .rfind(')')
        .and_then(|i| stat.get(i + 2..))
        .and_then(|s| s.chars().next());
    !matches!(state, Some('Z') | Some('X') | None)
}

/// PIDs of `pid`'s children (from `/proc/<pid>/task/*/children`).
pub fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
    }
    out
}

/// Polls `cond` every `every` until it holds or `limit` passes; returns the time it took.
pub fn wait_until(
    limit: Duration,
    every: Duration,
    mut cond: impl FnMut() -> bool,
) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if cond() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(every);
    }
}

fn kill_by_pidfd(pid: i32) {
    let Some(p) = rustix::process::Pid::from_raw(pid) else {
        return;
    };
    if let Ok(fd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) {
        let _ = rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
    }
}

impl Drop for CgroupSandbox {
    fn drop(&mut self) {
        // Kill whatever is still in the sandbox, by PID, until it is empty (bounded).
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let pids = self.pids_in_sandbox();
            if pids.is_empty() || Instant::now() >= deadline {
                break;
            }
            for pid in pids {
                kill_by_pidfd(pid);
            }
            self.reap();
            std::thread::sleep(Duration::from_millis(10));
        }
        // Our own children (including decoys outside the sandbox): kill and reap.
        for child in &mut self.children {
            if let Ok(None) = child.try_wait() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        // rmdir deepest first; EBUSY while the kernel is still tearing down exited tasks.
        for dir in self.dirs_deepest_first() {
            let deadline = Instant::now() + Duration::from_secs(2);
            while std::fs::remove_dir(&dir).is_err() && dir.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if dir.exists() {
                eprintln!("warning: could not remove test cgroup {}", dir.display());
            }
        }
    }
}
