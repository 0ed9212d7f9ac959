//! Test-only helpers shared by the integration tests: the real agent binary as a child process,
//! privileged fixtures (tmpfs mounts, a real journald), and the CI skip rule.
//!
//! The skip rule: a test that needs root or a system facility runs in CI (where `CI` is set and
//! we are root) and fails there if the facility is missing; outside CI it prints why it skipped.

#![allow(dead_code)]

pub mod apiserver;
pub mod cgroup;
pub mod command;
pub mod kubectl;
pub mod lab;
pub mod netns;
pub mod switch;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Whether we are running in CI, where skipping is failing.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// Returns true when the test may proceed. Outside CI, prints the reason and returns false; in CI,
/// panics (a skipped test in CI is a failed test).
pub fn require(condition: bool, what: &str) -> bool {
    if condition {
        return true;
    }
    if in_ci() {
        panic!("CI must provide {what}, but it is missing");
    }
    eprintln!("SKIPPED: needs {what} (runs in CI)");
    false
}

pub fn is_root() -> bool {
    nix::unistd::Uid::effective().is_root()
}

/// Path of the agent binary cargo built for the tests.
pub fn agent_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nodewarden"))
}

/// A tmpfs mounted on a fresh temporary directory; unmounted on drop.
pub struct Tmpfs {
    pub dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. "4m") with at most `inodes` inodes.
    pub fn mount(size: &str, inodes: u32) -> Tmpfs {
        let dir = tempfile::tempdir().expect("tempdir");
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},nr_inodes={inodes}"),
                "nodewarden-test",
            ])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(status.success(), "mount tmpfs failed: {status}");
        Tmpfs { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// The agent binary running as a child, its stderr lines delivered through a channel.
pub struct Agent {
    pub child: Child,
    lines: Receiver<String>,
    pub seen: Vec<String>,
}

impl Agent {
    /// Starts `nodewarden run --config <config>` with stderr captured.
    pub fn start(config: &Path, env: &[(&str, &str)]) -> Agent {
        Agent::start_in(&[], config, env)
    }

    /// The same, under a command prefix (e.g. `nsenter --net=… --`).
    pub fn start_in(prefix: &[String], config: &Path, env: &[(&str, &str)]) -> Agent {
        let mut cmd = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(agent_bin());
                c
            }
            None => Command::new(agent_bin()),
        };
        cmd.arg("run")
            .arg("--config")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_remove("JOURNAL_STREAM")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("RUST_BACKTRACE");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn nodewarden");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Agent {
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Waits up to `timeout` for a line containing every one of `needles`; returns it with the
    /// moment it arrived. Lines read on the way are kept in `seen`.
    pub fn wait_for(&mut self, needles: &[&str], timeout: Duration) -> Option<(String, Instant)> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let at = Instant::now();
                    self.seen.push(line.clone());
                    if needles.iter().all(|n| line.contains(n)) {
                        return Some((line, at));
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    return None;
                }
            }
        }
    }

    /// Drains lines until `timeout`, returning the ones containing every needle.
    pub fn collect_for(&mut self, needles: &[&str], timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        while let Some((line, _)) =
            self.wait_for(needles, deadline.saturating_duration_since(Instant::now()))
        {
            out.push(line);
            if Instant::now() >= deadline {
                break;
            }
        }
        out
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGKILL to our child, by PID, and reap it.
    pub fn kill_hard(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid()),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }

    /// Sends SIGTERM to our child (by PID) and returns how long it took to exit, if it did within
    /// `timeout`.
    pub fn terminate(&mut self, timeout: Duration) -> Option<(Duration, std::process::ExitStatus)> {
        let start = Instant::now();
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid()),
            nix::sys::signal::Signal::SIGTERM,
        );
        while start.elapsed() < timeout {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some((start.elapsed(), status));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    pub fn dump(&self) -> String {
        self.seen.join("\n")
    }

    /// Every line so far, including those not yet read (waits briefly for more).
    pub fn drained_dump(&mut self) -> String {
        let _ = self.wait_for(&["\u{0}never\u{0}"], Duration::from_millis(500));
        self.dump()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Parses `key=value` pairs (values optionally Rust-debug-quoted) from a stderr log line.
pub fn field(line: &str, key: &str) -> Option<String> {
    let pat = format!(" {key}=");
    let start = line.find(&pat)? + pat.len();
    let rest = &line[start..];
    if let Some(stripped) = rest.strip_prefix('"') {
        let end = stripped.find('"')?;
        Some(stripped[..end].to_string())
    } else {
        Some(rest.split_whitespace().next().unwrap_or("").to_string())
    }
}

/// Picks a free loopback port by binding port 0.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    l.local_addr().expect("local addr").port()
}

/// Writes a config file into `dir` and returns its path.
pub fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("write config");
    path
}

/// A minimal valid configuration for tests: stderr logging, the given health port, short
/// periods, and whatever `extra` adds (top-level keys first, then tables).
pub fn test_config(port: u16, extra: &str) -> String {
    format!(
        "nodeName = \"test-node\"\n\
         healthAddress = \"127.0.0.1:{port}\"\n\
         stateDirectory = \"/tmp/nodewarden-test-state\"\n\
         {extra}\n\
         [logging]\ntarget = \"stderr\"\nlevel = \"info\"\n"
    )
}

/// A real systemd-journald: the running one if its socket answers, otherwise one we start
/// (and stop, by PID, on drop).
pub struct Journald {
    started: Option<Child>,
}

const JOURNAL_SOCKET: &str = "/run/systemd/journal/socket";

fn journal_answers() -> bool {
    let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() else {
        return false;
    };
    // An empty datagram is ignored by journald but proves the socket is live.
    sock.send_to(b"", JOURNAL_SOCKET).is_ok()
}

impl Journald {
    pub fn ensure() -> Journald {
        if journal_answers() {
            return Journald { started: None };
        }
        let bin = [
            "/lib/systemd/systemd-journald",
            "/usr/lib/systemd/systemd-journald",
        ]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("systemd-journald is installed (apt-get install systemd)");
        let child = Command::new(bin)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start systemd-journald");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !journal_answers() {
            assert!(
                Instant::now() < deadline,
                "journald did not open its socket in 10 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Journald {
            started: Some(child),
        }
    }
}

impl Drop for Journald {
    fn drop(&mut self) {
        if let Some(child) = &mut self.started {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let _ = child.wait();
        }
    }
}

/// Taints `node` `node.kubernetes.io/unreachable:NoExecute` as the controller-manager does, its
/// `timeAdded` `added` (RFC 3339).
pub fn taint_unreachable(api: &apiserver::ApiServer, node: &str, added: &str) {
    taint_no_execute(api, node, "node.kubernetes.io/unreachable", added);
}

/// The node controller's NoExecute taint `key` on `node`, added at `added` (RFC 3339), as the
/// controller writes it: the Node's only taint.
pub fn taint_no_execute(api: &apiserver::ApiServer, node: &str, key: &str, added: &str) {
    api.update_node_as("kube-controller-manager", node, |n| {
        n["spec"]["taints"] = serde_json::json!([{
            "key": key,
            "effect": "NoExecute",
            "timeAdded": added,
        }]);
    })
    .unwrap_or_else(|e| panic!("taint: {e:?}"));
}

/// [`taint_unreachable`], then waits until the agent's state file in `state_dir` holds that
/// time: the fence saw the Node so, and the taint is on disk before the test cuts a link.
/// Bounded: 10 s.
pub fn taint_unreachable_seen(
    api: &apiserver::ApiServer,
    node: &str,
    added: &str,
    state_dir: &Path,
) {
    taint_seen(
        api,
        node,
        "node.kubernetes.io/unreachable",
        added,
        state_dir,
    );
}

/// The kubelet posts Ready=False on `node`, changed at `since` (its `lastTransitionTime`), as a
/// kubelet that finds its node not ready does; then waits until the agent's state file in
/// `state_dir` holds it. Bounded: 10 s.
pub fn ready_false_seen(api: &apiserver::ApiServer, node: &str, since: &str, state_dir: &Path) {
    api.update_node_status_as("kubelet", node, |n| {
        let ready = serde_json::json!({
            "type": "Ready", "status": "False", "reason": "KubeletNotReady",
            "message": "container runtime is down",
            "lastHeartbeatTime": since, "lastTransitionTime": since,
        });
        let conditions = &mut n["status"]["conditions"];
        match conditions.as_array_mut() {
            Some(list) => {
                list.retain(|c| c["type"] != "Ready");
                list.push(ready);
            }
            None => *conditions = serde_json::json!([ready]),
        }
    })
    .unwrap_or_else(|e| panic!("Ready=False: {e:?}"));
    let state = state_dir.join("state.json");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&state).is_ok_and(|t| t.contains("KubeletNotReady")) {
        assert!(
            Instant::now() < deadline,
            "the Ready=False never reached the state file"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// [`taint_no_execute`], then waits as [`taint_unreachable_seen`] does.
pub fn taint_seen(
    api: &apiserver::ApiServer,
    node: &str,
    key: &str,
    added: &str,
    state_dir: &Path,
) {
    taint_no_execute(api, node, key, added);
    let state = state_dir.join("state.json");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&state).is_ok_and(|t| t.contains(added)) {
        assert!(
            Instant::now() < deadline,
            "the taint never reached the state file"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
