//! The real `nodewarden run` binary, standalone, against real pressure: a small tmpfs filled past
//! `nodefs.available`, and real processes against a `pid.available` threshold. Also its health
//! endpoints and its shutdown on SIGTERM.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::{Agent, Tmpfs, field, free_port, is_root, require, test_config, write_config};

const UPDATE: Duration = Duration::from_secs(1);
const TRANSITION: Duration = Duration::from_secs(3);
/// Scheduling slack allowed on a loaded 2-core machine on top of the periods under test.
const SLACK: Duration = Duration::from_millis(1000);

fn http_get(port: u16, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect health port");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("send");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read response");
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

#[test]
fn disk_pressure_appears_within_one_period_and_clears_after_the_transition_period() {
    if !require(is_root(), "root (to mount a tmpfs)") {
        return;
    }
    let fs = Tmpfs::mount("8m", 4096);
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = write_config(
        dir.path(),
        &test_config(
            port,
            &format!(
                "nodefsPath = \"{p}\"\nimagefsPath = \"{p}\"\n\
                 nodeStatusUpdateFrequency = \"1s\"\n\
                 evictionPressureTransitionPeriod = \"3s\"\n\
                 [evictionHard]\n\"nodefs.available\" = \"50%\"\n",
                p = fs.path().display()
            ),
        ),
    );
    let mut agent = Agent::start(&config, &[]);
    let (first, _) = agent
        .wait_for(
            &["condition=DiskPressure", "status=False"],
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("no initial DiskPressure=False record:\n{}", agent.dump()));
    assert_eq!(
        field(&first, "reason").as_deref(),
        Some("KubeletHasNoDiskPressure")
    );

    // Fill 6 of 8 MiB: 2 MiB left, below 50%.
    let filled_at = {
        let mut f = std::fs::File::create(fs.path().join("fill")).expect("create fill file");
        f.write_all(&vec![0xa5u8; 6 << 20]).expect("fill tmpfs");
        f.sync_all().expect("sync");
        Instant::now()
    };
    let (on, on_at) = agent
        .wait_for(&["condition=DiskPressure", "status=True"], UPDATE * 3)
        .unwrap_or_else(|| panic!("DiskPressure never became True:\n{}", agent.dump()));
    assert!(
        on_at - filled_at <= UPDATE + SLACK,
        "DiskPressure True {:?} after the fill; must be within one update period",
        on_at - filled_at
    );
    assert_eq!(
        field(&on, "reason").as_deref(),
        Some("KubeletHasDiskPressure")
    );
    assert_eq!(field(&on, "signal").as_deref(), Some("nodefs.available"));
    let available: i64 = field(&on, "available")
        .and_then(|v| v.parse().ok())
        .expect("available");
    let threshold: i64 = field(&on, "threshold")
        .and_then(|v| v.parse().ok())
        .expect("threshold");
    assert!(
        available < threshold,
        "{available} should be below {threshold}"
    );
    assert!(
        threshold > 3 << 20 && threshold <= 4 << 20,
        "50% of 8 MiB, got {threshold}"
    );
    agent
        .wait_for(
            &[
                "taint=node.kubernetes.io/disk-pressure:NoSchedule",
                "action=add",
            ],
            Duration::from_secs(2),
        )
        .unwrap_or_else(|| panic!("no taint add record:\n{}", agent.dump()));

    std::fs::remove_file(fs.path().join("fill")).expect("free tmpfs");
    let freed_at = Instant::now();
    let (off, off_at) = agent
        .wait_for(
            &["condition=DiskPressure", "status=False"],
            TRANSITION + UPDATE * 4,
        )
        .unwrap_or_else(|| panic!("DiskPressure never cleared:\n{}", agent.dump()));
    let after = off_at - freed_at;
    // The last pressured sample was at most one period before the free, and the condition holds
    // for a full transition period after it.
    assert!(
        after >= TRANSITION - UPDATE,
        "cleared {after:?} after the free: inside the transition period"
    );
    assert!(
        after <= TRANSITION + UPDATE + SLACK,
        "cleared late: {after:?}"
    );
    assert_eq!(field(&off, "previous_status").as_deref(), Some("True"));
    agent
        .wait_for(
            &[
                "taint=node.kubernetes.io/disk-pressure:NoSchedule",
                "action=remove",
            ],
            Duration::from_secs(2),
        )
        .unwrap_or_else(|| panic!("no taint remove record:\n{}", agent.dump()));
    let (elapsed, status) = agent
        .terminate(Duration::from_secs(5))
        .expect("agent exits");
    assert!(status.success(), "exit status {status}");
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?} to stop");
}

fn pid_available_now() -> i64 {
    let read = |p: &str| -> i64 {
        std::fs::read_to_string(p)
            .expect("read proc")
            .trim()
            .parse()
            .expect("number")
    };
    let max = read("/proc/sys/kernel/pid_max").min(read("/proc/sys/kernel/threads-max"));
    let loadavg = std::fs::read_to_string("/proc/loadavg").expect("loadavg");
    let tasks: i64 = loadavg
        .split_whitespace()
        .nth(3)
        .and_then(|f| f.split('/').nth(1))
        .and_then(|n| n.parse().ok())
        .expect("tasks in loadavg");
    max - tasks
}

#[test]
fn pid_pressure_from_real_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    // Met once 300 more tasks run than now; 700 sleepers leave room for noise from other tests.
    let threshold = pid_available_now() - 300;
    assert!(threshold > 0, "this machine has too few PIDs for the test");
    let config = write_config(
        dir.path(),
        &test_config(
            port,
            &format!(
                "nodefsPath = \"/\"\nimagefsPath = \"/\"\n\
                 nodeStatusUpdateFrequency = \"1s\"\n\
                 evictionPressureTransitionPeriod = \"1s\"\n\
                 [evictionHard]\n\"pid.available\" = \"{threshold}\"\n"
            ),
        ),
    );
    let mut agent = Agent::start(&config, &[]);
    agent
        .wait_for(
            &["condition=PIDPressure", "status=False"],
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("no initial PIDPressure=False:\n{}", agent.dump()));
    let mut sleepers = Vec::new();
    for _ in 0..700 {
        match std::process::Command::new("sleep").arg("60").spawn() {
            Ok(c) => sleepers.push(c),
            Err(e) => panic!("spawn sleeper: {e}"),
        }
    }
    let on = agent.wait_for(
        &["condition=PIDPressure", "status=True"],
        Duration::from_secs(5),
    );
    // End only what we started, by PID.
    for c in &mut sleepers {
        let _ = c.kill();
    }
    for c in &mut sleepers {
        let _ = c.wait();
    }
    let on = on.unwrap_or_else(|| panic!("PIDPressure never True:\n{}", agent.dump()));
    assert_eq!(field(&on.0, "signal").as_deref(), Some("pid.available"));
    assert_eq!(
        field(&on.0, "reason").as_deref(),
        Some("KubeletHasInsufficientPID")
    );
    agent
        .wait_for(
            &["condition=PIDPressure", "status=False"],
            Duration::from_secs(6),
        )
        .unwrap_or_else(|| panic!("PIDPressure never cleared:\n{}", agent.dump()));
}

#[test]
fn health_endpoints_and_clean_stop_on_sigterm_and_sigint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = write_config(
        dir.path(),
        &test_config(
            port,
            // Thresholds this machine's root file system always meets, whatever else fills it.
            "nodefsPath = \"/\"\nimagefsPath = \"/\"\nnodeStatusUpdateFrequency = \"1s\"\n\
             [evictionHard]\n\"memory.available\" = \"1Ki\"\n\"nodefs.available\" = \"1Ki\"\n\
             \"imagefs.available\" = \"1Ki\"\n",
        ),
    );
    let mut agent = Agent::start(&config, &[]);
    agent
        .wait_for(&["summary:"], Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no summary record:\n{}", agent.dump()));
    assert_eq!(http_get(port, "/healthz").0, 200);
    assert_eq!(http_get(port, "/readyz").0, 200);
    assert_eq!(http_get(port, "/nope").0, 404);
    let (status, metrics) = http_get(port, "/metrics");
    assert_eq!(status, 200);
    for needle in [
        "nodewarden_signal_available{signal=\"memory.available\"}",
        "nodewarden_signal_available{signal=\"nodefs.available\"}",
        "nodewarden_condition{condition=\"DiskPressure\",status=\"False\"} 1",
        "nodewarden_samples_total ",
        "process_resident_memory_bytes ",
    ] {
        assert!(
            metrics.contains(needle),
            "metrics lack {needle}:\n{metrics}"
        );
    }
    let (elapsed, status) = agent
        .terminate(Duration::from_secs(5))
        .expect("agent exits");
    assert!(status.success(), "exit status {status}");
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?} to stop");

    let mut agent = Agent::start(&config, &[]);
    agent
        .wait_for(&["summary:"], Duration::from_secs(10))
        .unwrap_or_else(|| panic!("no summary record:\n{}", agent.dump()));
    let start = Instant::now();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.pid()),
        nix::sys::signal::Signal::SIGINT,
    );
    let status = loop {
        if let Ok(Some(s)) = agent.child.try_wait() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "no exit on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success());
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn sd_notify_ready_after_the_first_sample_and_watchdog_from_the_loop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket_path = dir.path().join("notify.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&socket_path).expect("bind notify socket");
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let port = free_port();
    // A 10 s update period but a 1 s watchdog: the loop must wake at least twice a second.
    let config = write_config(
        dir.path(),
        &test_config(
            port,
            "nodefsPath = \"/\"\nimagefsPath = \"/\"\nnodeStatusUpdateFrequency = \"10s\"\n",
        ),
    );
    let socket_env = socket_path.display().to_string();
    let mut agent = Agent::start(
        &config,
        &[
            ("NOTIFY_SOCKET", socket_env.as_str()),
            ("WATCHDOG_USEC", "1000000"),
        ],
    );
    let start = Instant::now();
    let mut messages: Vec<(Duration, String)> = Vec::new();
    let mut buf = [0u8; 4096];
    while start.elapsed() < Duration::from_secs(3) {
        if let Ok(n) = socket.recv(&mut buf) {
            messages.push((
                start.elapsed(),
                String::from_utf8_lossy(&buf[..n]).into_owned(),
            ));
        }
    }
    let ready = messages
        .iter()
        .position(|(_, m)| m.lines().any(|l| l == "READY=1"))
        .unwrap_or_else(|| panic!("no READY=1 in {messages:?}"));
    assert!(
        messages[ready]
            .1
            .contains("STATUS=standalone: MemoryPressure="),
        "READY carries a status saying what the agent does: {:?}",
        messages[ready].1
    );
    // READY follows the first sample: the transition records are logged before it is sent.
    assert!(
        agent
            .wait_for(&["condition=MemoryPressure"], Duration::from_secs(1))
            .is_some(),
        "{}",
        agent.dump()
    );
    let watchdogs: Vec<Duration> = messages
        .iter()
        .filter(|(_, m)| m.lines().any(|l| l == "WATCHDOG=1"))
        .map(|(t, _)| *t)
        .collect();
    assert!(
        watchdogs.len() >= 5,
        "expected ≥ 5 WATCHDOG=1 in 3 s with WatchdogSec=1s, got {watchdogs:?}"
    );
    for pair in watchdogs.windows(2) {
        assert!(
            pair[1] - pair[0] <= Duration::from_millis(700),
            "watchdog gap {:?} exceeds half the interval plus slack",
            pair[1] - pair[0]
        );
    }
    let (_, status) = agent
        .terminate(Duration::from_secs(5))
        .expect("agent exits");
    assert!(status.success());
    let mut stopping = false;
    while let Ok(n) = socket.recv(&mut buf) {
        stopping |= String::from_utf8_lossy(&buf[..n]).contains("STOPPING=1");
    }
    assert!(stopping, "STOPPING=1 is sent on shutdown");
}

#[test]
fn sighup_applies_a_valid_configuration_and_rejects_an_invalid_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let base = "nodefsPath = \"/\"\nimagefsPath = \"/\"\nnodeStatusUpdateFrequency = \"1s\"\n";
    let config = write_config(dir.path(), &test_config(port, base));
    let mut agent = Agent::start(&config, &[]);
    agent
        .wait_for(
            &["condition=MemoryPressure", "status=False"],
            Duration::from_secs(10),
        )
        .unwrap_or_else(|| panic!("no initial MemoryPressure:\n{}", agent.dump()));
    let hup = |agent: &Agent| {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(agent.pid()),
            nix::sys::signal::Signal::SIGHUP,
        );
    };
    // An invalid file: rejected with its errors, the agent keeps running as it was.
    std::fs::write(
        &config,
        test_config(port, "nodeStatusUpdateFrequency = \"ten\"\n"),
    )
    .expect("write bad config");
    hup(&agent);
    let (rejected, _) = agent
        .wait_for(&["configuration reload rejected"], Duration::from_secs(5))
        .unwrap_or_else(|| panic!("no rejection:\n{}", agent.dump()));
    assert!(rejected.contains("nodeStatusUpdateFrequency"), "{rejected}");
    assert!(
        rejected.contains("config.toml:"),
        "names the file and line: {rejected}"
    );
    // Still running, with its old settings: no pressure appears.
    assert!(
        agent
            .wait_for(
                &["condition=MemoryPressure", "status=True"],
                Duration::from_millis(1500)
            )
            .is_none(),
        "{}",
        agent.dump()
    );
    assert!(
        agent.child.try_wait().expect("wait").is_none(),
        "the agent must keep running"
    );
    // A valid file with a new threshold: applied, and it takes effect.
    let with_threshold = format!("{base}[evictionHard]\n\"memory.available\" = \"1Ei\"\n");
    std::fs::write(&config, test_config(port, &with_threshold)).expect("write new config");
    hup(&agent);
    let (reloaded, _) = agent
        .wait_for(&["configuration reloaded"], Duration::from_secs(5))
        .unwrap_or_else(|| panic!("no reload:\n{}", agent.dump()));
    assert!(reloaded.contains("applied [thresholds]"), "{reloaded}");
    agent
        .wait_for(
            &["condition=MemoryPressure", "status=True"],
            Duration::from_secs(5),
        )
        .unwrap_or_else(|| panic!("the new threshold did not apply:\n{}", agent.dump()));
    let (_, status) = agent.terminate(Duration::from_secs(5)).expect("exits");
    assert!(status.success());
}
