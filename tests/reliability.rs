//! The reliability suite (issue 10), with real parts: the real binary against the API test server
//! on loopback, real tmpfs mounts.
//!
//! - Crashes at any instant: SIGKILLs at pseudo-random moments around condition transitions, each
//!   followed by a restart. Whatever the instant, every transition is announced by exactly one
//!   Event: none twice (a restart re-deciding a transition it had already reported, under a new
//!   name), none lost.
//! - A full, then read-only, state directory: reporting and the heartbeat go on from memory, each
//!   failure is logged once, and the state is written again as soon as it can be.
//! - Wall-clock steps (an hour forward, two back, through libfaketime in the agent alone): the
//!   node is never judged cut off, no condition flaps, the heartbeat keeps its pace, each step is
//!   reported once and the Lease's renewTime only ever grows.
//! - Out-of-order watch events (old versions replayed after newer ones): nothing rolls back, not
//!   the pods the fence knows nor the reporter's view of the Node.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::apiserver::{ApiServer, Loopback};
use support::{Agent, Tmpfs, free_port, is_root, require, write_config};

const NODE: &str = "n1";

/// A small deterministic generator: the same instants on every run, spread over the window.
struct Lcg(u64);

impl Lcg {
    fn next_below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

/// The Events about our Node in the order they were made: by the creation instant encoded in
/// the name (`<node>.<hex nanoseconds>.<digest>`), which the agent derives from the transition.
fn events_in_order(server: &ApiServer) -> Vec<(u128, String)> {
    let mut out: Vec<(u128, String)> = server
        .events()
        .iter()
        .filter_map(|e: &Value| {
            let name = e["metadata"]["name"].as_str()?;
            let nanos = u128::from_str_radix(name.split('.').nth(1)?, 16).ok()?;
            Some((nanos, e["reason"].as_str()?.to_string()))
        })
        .collect();
    out.sort();
    out
}

/// The DiskPressure Events in order, checked: they alternate (a duplicate shows as the same
/// reason twice in a row, a lost Event likewise) and the last one says `pressure`.
fn disk_transitions_alternating(server: &ApiServer, pressure: bool) -> Vec<String> {
    let disk: Vec<String> = events_in_order(server)
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| r.contains("DiskPressure"))
        .collect();
    for pair in disk.windows(2) {
        assert_ne!(pair[0], pair[1], "the same transition twice: {disk:?}");
    }
    let last = if pressure {
        "NodeHasDiskPressure"
    } else {
        "NodeHasNoDiskPressure"
    };
    assert_eq!(disk.last().map(String::as_str), Some(last), "{disk:?}");
    disk
}

/// Waits (20 s at most) until the Node's DiskPressure says `pressure`.
async fn await_disk_status(server: &ApiServer, agent: &Agent, pressure: bool) {
    let want = if pressure { "True" } else { "False" };
    let deadline = Instant::now() + Duration::from_secs(20);
    while disk_status(server).as_deref() != Some(want) {
        assert!(
            Instant::now() < deadline,
            "DiskPressure never became {want}:\n{}",
            agent.dump()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn disk_status(server: &ApiServer) -> Option<String> {
    let node = server.node(NODE)?;
    node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "DiskPressure")
        .and_then(|c| c["status"].as_str())
        .map(str::to_string)
}

/// The API test server on loopback holding our Node, and the agent's configuration against it.
struct World {
    server: ApiServer,
    _loopback: Loopback,
    dir: tempfile::TempDir,
    config: PathBuf,
}

/// The connection, a free health port and stderr logging around `body`: the test's own keys and
/// tables, written knowing the test's directory.
fn world(body: impl FnOnce(&Path) -> String) -> World {
    let server = ApiServer::new();
    server.create_node(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}));
    let loopback = server.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = loopback.write_kubeconfig(dir.path());
    let config = write_config(
        dir.path(),
        &format!(
            "nodeName = \"{NODE}\"\nkubeconfig = \"{kc}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
             {body}\n[logging]\ntarget = \"stderr\"\n",
            kc = kubeconfig.display(),
            port = free_port(),
            body = body(dir.path()),
        ),
    );
    World {
        server,
        _loopback: loopback,
        dir,
        config,
    }
}

/// Starts the agent on `config` and waits (bounded) until its log shows `needle`.
async fn start_until(config: &Path, needle: &'static str, within: Duration) -> Agent {
    let config = config.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut a = Agent::start(&config, &[]);
        a.wait_for(&[needle], within)
            .unwrap_or_else(|| panic!("the agent never logged {needle:?}:\n{}", a.dump()));
        a
    })
    .await
    .expect("start agent")
}

#[tokio::test]
async fn transitions_are_announced_exactly_once_across_sigkills_at_any_instant() {
    if !require(is_root(), "root (to mount a tmpfs)") {
        return;
    }
    let fs = Tmpfs::mount("8m", 4096);
    let World {
        server,
        _loopback,
        dir: _dir,
        config,
    } = world(|dir| {
        format!(
            "stateDirectory = \"{state}\"\nnodefsPath = \"{p}\"\nimagefsPath = \"{p}\"\n\
             nodeStatusUpdateFrequency = \"200ms\"\nevictionPressureTransitionPeriod = \"0s\"\n\
             [evictionHard]\n\"nodefs.available\" = \"50%\"",
            state = dir.join("state").display(),
            p = fs.path().display()
        )
    });
    let fill = fs.path().join("fill");
    let mut rng = Lcg(0x6e6f_6465_7761_7264);
    let mut pressure = false;
    let rounds = 16;
    let started = Instant::now();
    for round in 0..rounds {
        assert!(
            started.elapsed() < Duration::from_secs(150),
            "round {round}: the suite ran out of time"
        );
        let config = config.clone();
        let mut agent = start_until(&config, "starting connected", Duration::from_secs(15)).await;
        // Half the rounds flip the pressure at once (the kill lands around the decision, the
        // Event, the status write and the state write), half let the start-up settle first.
        if round % 2 == 1 {
            tokio::time::sleep(Duration::from_millis(rng.next_below(800))).await;
        }
        pressure = !pressure;
        if pressure {
            std::fs::write(&fill, vec![0u8; 6 << 20]).expect("fill tmpfs");
        } else {
            std::fs::remove_file(&fill).expect("free tmpfs");
        }
        tokio::time::sleep(Duration::from_millis(rng.next_below(700))).await;
        agent.kill_hard();
    }
    // A last run sees the final state through and stops cleanly.
    let mut agent = Agent::start(&config, &[]);
    await_disk_status(&server, &agent, pressure).await;
    // Time for the last Events to be delivered.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _ = agent.terminate(Duration::from_secs(5));

    let events = events_in_order(&server);
    let reasons: Vec<&str> = events.iter().map(|(_, r)| r.as_str()).collect();
    // The conditions that never changed were announced once, at the very first start.
    for once in ["NodeHasSufficientMemory", "NodeHasSufficientPID"] {
        let n = reasons.iter().filter(|r| **r == once).count();
        assert_eq!(n, 1, "{once} announced {n} times: {reasons:?}");
    }
    // DiskPressure alternates and ends where the Node is: a duplicate shows as the same reason
    // twice in a row, a lost Event likewise (or as a wrong last one). The first may be either:
    // a kill before the first decision means the first status the agent saw was True.
    let disk = disk_transitions_alternating(&server, pressure);
    assert!(
        disk.len() >= rounds / 2,
        "too few transitions seen: {disk:?}"
    );
    eprintln!(
        "{rounds} SIGKILLs: {} Events, DiskPressure sequence {disk:?}",
        events.len()
    );
}

/// Lines of the agent's log so far that contain `needle`.
fn count_lines(agent: &mut Agent, needle: &str) -> usize {
    agent
        .drained_dump()
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}

fn lease_renewals(server: &ApiServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| {
            r.method == "PUT" && r.path.ends_with("/leases/nodewarden-n1") && r.status == Some(200)
        })
        .count()
}

fn pods_on_disk(state: &std::path::Path) -> usize {
    std::fs::read(state.join("state.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["pods"].as_array().map(Vec::len))
        .unwrap_or(0)
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox"}]}
    })
}

#[tokio::test]
async fn a_full_then_read_only_state_directory_loses_nothing_and_logs_each_failure_once() {
    if !require(is_root(), "root (to mount a tmpfs)") {
        return;
    }
    // The state directory on a small tmpfs of its own.
    let fs = Tmpfs::mount("1m", 1024);
    let state = fs.path().join("state");
    let World {
        server,
        _loopback,
        dir: _dir,
        config,
    } = world(|_| {
        format!(
            "stateDirectory = \"{state}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             nodeStatusUpdateFrequency = \"500ms\"\nnodeLeaseDurationSeconds = 4",
            state = state.display(),
        )
    });
    server.create_pod(pod("p0"));
    let config_text = std::fs::read_to_string(&config).expect("config");
    let mut agent = start_until(&config, "API server reachable", Duration::from_secs(15)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while pods_on_disk(&state) != 1 {
        assert!(Instant::now() < deadline, "first pod never written");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Full: a filler takes every free block.
    let filler = fs.path().join("filler");
    let _ = std::fs::write(&filler, vec![0u8; 2 << 20]);
    let renewals_before = lease_renewals(&server);
    for i in 1..=3 {
        server.create_pod(pod(&format!("p{i}")));
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(pods_on_disk(&state), 1, "the full disk took a write?");
    let failures = count_lines(&mut agent, "the fence goes on from memory");
    assert!(
        (1..=2).contains(&failures),
        "{failures} failure records for a full disk over 4 s (one per file at most):\n{}",
        agent.dump()
    );
    assert!(
        lease_renewals(&server) >= renewals_before + 3,
        "the heartbeat stopped while the disk was full"
    );
    // Nothing half-written is left, not even an empty temporary file; the failures are counted.
    let leftovers: Vec<String> = std::fs::read_dir(&state)
        .expect("state dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    let failed = metric(
        &config_text,
        "nodewarden_state_write_failures_total{file=\"state\"}",
    );
    assert!(failed >= 1.0, "no failed state write counted");

    // Space returns: the state catches up with every pod, and the recovery is logged once.
    std::fs::remove_file(&filler).expect("remove filler");
    let deadline = Instant::now() + Duration::from_secs(5);
    while pods_on_disk(&state) != 4 {
        assert!(
            Instant::now() < deadline,
            "the state never caught up after space returned:\n{}",
            agent.dump()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(count_lines(&mut agent, "state written again") >= 1);

    // Read-only: the same, with another error.
    let remount = |opts: &str| {
        let ok = std::process::Command::new("mount")
            .args([
                "-o",
                &format!("remount,{opts}"),
                &fs.path().display().to_string(),
            ])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mount -o remount,{opts}");
    };
    remount("ro");
    let failures_before = count_lines(&mut agent, "the fence goes on from memory");
    let renewals_before = lease_renewals(&server);
    for i in 4..=5 {
        server.create_pod(pod(&format!("p{i}")));
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let failures = count_lines(&mut agent, "the fence goes on from memory") - failures_before;
    assert!(
        (1..=2).contains(&failures),
        "{failures} failure records for a read-only disk:\n{}",
        agent.dump()
    );
    assert!(lease_renewals(&server) >= renewals_before + 3);
    remount("rw");
    let deadline = Instant::now() + Duration::from_secs(5);
    while pods_on_disk(&state) != 6 {
        assert!(
            Instant::now() < deadline,
            "the state never caught up after the remount:\n{}",
            agent.dump()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = agent.terminate(Duration::from_secs(5));
}

/// libfaketime, which moves the wall clock of the process it is preloaded into (Debian's
/// `faketime` package; `.ci/run` installs it).
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

#[tokio::test]
async fn wall_clock_steps_neither_cut_off_the_node_nor_flap_a_condition() {
    if !require(
        std::path::Path::new(LIBFAKETIME).exists(),
        "libfaketime (Debian package faketime)",
    ) {
        return;
    }
    let World {
        server,
        _loopback,
        dir,
        config,
    } = world(|dir| {
        format!(
            "stateDirectory = \"{state}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             nodeStatusUpdateFrequency = \"500ms\"\nnodeLeaseDurationSeconds = 4\n\
             [evictionHard]\n\"memory.available\" = \"1Ki\"\n\
             [fence]\nmode = \"dry-run\"\nunreachableAfter = \"3s\"\nnodeMonitorGracePeriod = \"4s\"\n\
             [peers]\nwithoutPeers = \"enforce\"",
            state = dir.join("state").display(),
        )
    });
    // A pod the fence would stop at once if the node looked cut off (dry-run logs it).
    let mut p = pod("p0");
    p["spec"]["tolerations"] = json!([{"key": "node.kubernetes.io/unreachable",
        "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}]);
    server.create_pod(p);
    // The offset file libfaketime re-reads on every call: the agent's wall clock follows it,
    // its monotonic clock does not.
    let offset = dir.path().join("faketime");
    std::fs::write(&offset, "+0\n").expect("offset file");
    let offset_env = offset.display().to_string();
    let mut agent = tokio::task::spawn_blocking(move || {
        let mut a = Agent::start(
            &config,
            &[
                ("LD_PRELOAD", LIBFAKETIME),
                ("FAKETIME_TIMESTAMP_FILE", offset_env.as_str()),
                ("FAKETIME_NO_CACHE", "1"),
                ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
            ],
        );
        a.wait_for(&["API server reachable"], Duration::from_secs(15))
            .unwrap_or_else(|| panic!("agent never reached the API server:\n{}", a.dump()));
        a
    })
    .await
    .expect("start agent");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events_before = server.events().len();
    let from = tokio::time::Instant::now();
    // An hour forward, two hours back, and home again: each step longer than every window the
    // fence and the conditions use.
    for step in ["+1h", "-1h", "+0"] {
        std::fs::write(&offset, format!("{step}\n")).expect("step the clock");
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    let _ = agent.terminate(Duration::from_secs(5));
    let log = agent.drained_dump();
    for never in [
        "cut off from the API server",
        "API server unreachable",
        "dry-run: would",
        "status is now",
    ] {
        assert!(!log.contains(never), "{never:?} after a clock step:\n{log}");
    }
    assert_eq!(
        server.events().len(),
        events_before,
        "a condition flapped (an Event) across the steps"
    );
    // The heartbeat kept its 1 s pace through every step.
    let renewals: Vec<_> = server
        .requests()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/leases/nodewarden-n1") && r.at >= from)
        .map(|r| (r.at, r.status))
        .collect();
    assert!(renewals.len() >= 12, "{renewals:?}");
    // The steps reached the agent (it says so, once per step) and moved nothing it writes: the
    // Lease's renewTime only ever grows, as the node lifecycle controller requires of a renewal
    // (`RenewTime.Before`), and no renewal is stamped an hour off.
    for said in [
        "the system clock moved: it is now +3600",
        "the system clock moved: it is now -3600",
        "the system clock is back in step",
    ] {
        assert_eq!(log.matches(said).count(), 1, "{said:?}:\n{log}");
    }
    let now = std::time::SystemTime::now();
    let stamped: Vec<std::time::SystemTime> = server
        .requests()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.ends_with("/leases/nodewarden-n1") && r.at >= from)
        .filter_map(|r| {
            let t = r.body_json()["spec"]["renewTime"].as_str()?.to_string();
            humantime::parse_rfc3339_weak(&t).ok()
        })
        .collect();
    assert!(stamped.len() >= 12, "{stamped:?}");
    assert!(
        stamped.windows(2).all(|w| w[0] < w[1]),
        "a renewTime went back: {stamped:?}"
    );
    assert!(
        stamped
            .iter()
            .all(|t| *t < now + Duration::from_secs(60) && *t + Duration::from_secs(120) > now),
        "a renewal stamped off the real time: {stamped:?}"
    );
    assert!(
        renewals.iter().all(|(_, s)| *s == Some(200)),
        "{renewals:?}"
    );
    for pair in renewals.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 <= Duration::from_millis(1500),
            "{renewals:?}"
        );
    }
}

/// Every request a proxy in front of a gone API server would answer itself: reads, writes,
/// lists and watches of every path shape the agent uses (2 to 8 segments, any method).
fn proxy_routes() -> Vec<(&'static str, String)> {
    let mut routes = Vec::new();
    for method in ["GET", "PUT", "POST", "PATCH", "DELETE"] {
        for n in 2..=8 {
            routes.push((method, vec!["*"; n].join("/")));
        }
    }
    routes
}

fn proxy_down(server: &ApiServer) {
    for (method, pattern) in proxy_routes() {
        server.faults().fail_next(
            (method, pattern.as_str()),
            u32::MAX,
            support::apiserver::Fault::Proxy502,
        );
    }
    // Open watches end as the proxy would end them; their re-lists get the 502.
    server.drop_watches();
}

/// VmHWM of `pid` in KiB.
fn vm_hwm_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The soak: the real agent behind a proxy that answers 502 for everything for two minutes, or
/// flaps (502 for 3 s, the API server for 3 s) for two minutes, while disk pressure comes and
/// goes. Never a crash, memory and log volume bounded, every transition announced once, and the
/// Node right at the end.
async fn soak(flapping: bool) {
    let fs = Tmpfs::mount("8m", 4096);
    let World {
        server,
        _loopback,
        dir: _dir,
        config,
    } = world(|dir| {
        format!(
            "stateDirectory = \"{state}\"\nnodefsPath = \"{p}\"\nimagefsPath = \"{p}\"\n\
             nodeStatusUpdateFrequency = \"500ms\"\nnodeLeaseDurationSeconds = 4\n\
             evictionPressureTransitionPeriod = \"0s\"\n\
             [evictionHard]\n\"nodefs.available\" = \"50%\"\n\
             [fence]\nunreachableAfter = \"3s\"\nnodeMonitorGracePeriod = \"6s\"",
            state = dir.join("state").display(),
            p = fs.path().display()
        )
    });
    let fill = fs.path().join("fill");
    let mut agent = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            let mut a = Agent::start(&config, &[]);
            a.wait_for(&["API server reachable"], Duration::from_secs(15))
                .unwrap_or_else(|| panic!("agent never reached the API server:\n{}", a.dump()));
            a
        })
        .await
        .expect("start agent")
    };
    // Settled: the first status, Events and the watches are in.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let hwm_before = vm_hwm_kib(agent.pid());
    // What was logged before the faults is left out of the count.
    let lines_before = agent.drained_dump().lines().count();
    let started = Instant::now();
    let mut pressure = false;
    let mut down = false;
    let mut flips = 0u32;
    let mut second = 0u64;
    // Two minutes, by the second; bounded by count and time.
    while second < 120 && started.elapsed() < Duration::from_secs(150) {
        let should_be_down = if flapping {
            (second / 3).is_multiple_of(2)
        } else {
            true
        };
        if should_be_down != down {
            down = should_be_down;
            flips += 1;
            if down {
                proxy_down(&server);
            } else {
                server.faults().clear();
            }
        }
        // Pressure comes and goes every 20 s, outage or not.
        if second % 20 == 10 {
            pressure = !pressure;
            if pressure {
                std::fs::write(&fill, vec![0u8; 6 << 20]).expect("fill tmpfs");
            } else {
                std::fs::remove_file(&fill).expect("free tmpfs");
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        second += 1;
        assert!(
            support::cgroup::alive(agent.pid()),
            "the agent died at second {second}:\n{}",
            agent.dump()
        );
    }
    server.faults().clear();
    await_disk_status(&server, &agent, pressure).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let hwm_after = vm_hwm_kib(agent.pid());
    let log: String = agent
        .drained_dump()
        .lines()
        .skip(lines_before)
        .collect::<Vec<_>>()
        .join("\n");
    let lines = log.lines().count();
    let _ = agent.terminate(Duration::from_secs(5));
    // Memory: bounded, whatever two minutes of errors brought.
    assert!(
        hwm_after <= hwm_before + 4096,
        "VmHWM grew from {hwm_before} KiB to {hwm_after} KiB"
    );
    // Log volume: a few records per change of reachability, of pressure and per retry backoff,
    // never one per failed request (the agent makes several a second).
    let bound = 40 + 12 * flips as usize;
    assert!(
        lines <= bound,
        "{lines} log lines in two minutes ({flips} flips; bound {bound}):\n{log}"
    );
    // Every DiskPressure transition announced once, alternating, ending where the Node is.
    let disk = disk_transitions_alternating(&server, pressure);
    let failed = server
        .requests()
        .iter()
        .filter(|r| r.status == Some(502))
        .count();
    eprintln!(
        "soak (flapping: {flapping}): {failed} requests answered 502, {flips} flips, {lines} log lines, VmHWM {hwm_before} → {hwm_after} KiB, DiskPressure Events {disk:?}"
    );
    assert!(failed > 40, "the proxy answered only {failed} requests");
    assert!(
        log.contains("reachable"),
        "reachability changes are logged:\n{log}"
    );
}

/// Both soaks at once, each with its own API server, proxy, tmpfs and agent: each is two minutes
/// of waiting, and as two tests they held both of the suite's slots (one a core) for two minutes
/// each.
#[tokio::test]
async fn two_minutes_of_502_and_two_of_flapping_lose_nothing_and_stay_small() {
    use futures_util::FutureExt;
    use std::panic::AssertUnwindSafe;
    if !require(is_root(), "root (to mount a tmpfs)") {
        return;
    }
    // Interleaved on this test's thread: every long wait in a soak is an await or a blocking
    // task (what blocks the thread, a tmpfs write or a log read, takes milliseconds).
    let (answering_502, flapping) = tokio::join!(
        AssertUnwindSafe(soak(false)).catch_unwind(),
        AssertUnwindSafe(soak(true)).catch_unwind()
    );
    // Each soak's own panic, named, whichever failed.
    for (what, result) in [
        ("502 for two minutes", answering_502),
        ("flapping", flapping),
    ] {
        if let Err(p) = result {
            let message = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("the soak with the proxy {what} failed: {message}");
        }
    }
}

/// The pods in the state file as `(name, uid)`, sorted.
fn pods_with_uids(state: &Path) -> Vec<(String, String)> {
    let v = std::fs::read(state.join("state.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or(Value::Null);
    let mut out: Vec<(String, String)> = v["pods"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap_or_default().to_string();
            (s("name"), s("uid"))
        })
        .collect();
    out.sort();
    out
}

/// Waits (bounded) until the state file holds exactly `want`.
async fn await_pods_on_disk(state: &Path, want: &[(String, String)], agent: &Agent) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = pods_with_uids(state);
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "state file pods {got:?}, want {want:?}\n{}",
            agent.dump()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A replaying cache or a faulty proxy delivers old versions after newer ones. Without ordering
/// by resourceVersion (KEP-5504), a stale DELETED of a pod since re-created under the same name
/// drops the new pod from the fence, a stale ADDED resurrects a deleted one, and a stale Node
/// without our taint makes the reporter "restore" a taint that is there.
#[tokio::test]
async fn out_of_order_watch_events_roll_nothing_back() {
    let World {
        server,
        _loopback,
        dir,
        config,
    } = world(|dir| {
        format!(
            "stateDirectory = \"{state}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             nodeStatusUpdateFrequency = \"1s\"\nnodeStatusReportFrequency = \"5m\"\n\
             [evictionHard]\n\"memory.available\" = \"100Ti\"\n[fence]\nmode = \"dry-run\"",
            state = dir.join("state").display(),
        )
    });
    let state = dir.path().join("state");
    let node_before = server.node(NODE).expect("node");
    let old_p0 = server.create_pod(pod("p0"));
    let gone = server.create_pod(pod("gone"));
    let _ = server.create_pod(pod("p1"));
    server
        .delete("pods", "default", "gone", Some(0))
        .expect("delete gone");
    let mut agent = start_until(&config, "node taints written", Duration::from_secs(20)).await;
    // p0 re-created under the same name: a new UID.
    server
        .delete("pods", "default", "p0", Some(0))
        .expect("delete p0");
    let new_p0 = server.create_pod(pod("p0"));
    let uid = |p: &Value| {
        p["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let p1 = server.pod("default", "p1").expect("p1");
    let want = {
        let mut w = vec![
            ("p0".to_string(), uid(&new_p0)),
            ("p1".to_string(), uid(&p1)),
        ];
        w.sort();
        w
    };
    await_pods_on_disk(&state, &want, &agent).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let taint_writes = |s: &ApiServer| {
        s.requests()
            .iter()
            .filter(|r| r.method != "GET" && r.path == format!("/api/v1/nodes/{NODE}"))
            .count()
    };
    let writes_before = taint_writes(&server);

    // The stale events, each older than what the watches already delivered.
    let faults = server.faults();
    let mut deleted_p0 = old_p0.clone();
    deleted_p0["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(faults.replay_watch_event("pods", "DELETED", &deleted_p0), 1);
    assert_eq!(faults.replay_watch_event("pods", "ADDED", &gone), 1);
    assert_eq!(faults.replay_watch_event("pods", "MODIFIED", &old_p0), 1);
    assert_eq!(
        faults.replay_watch_event("nodes", "MODIFIED", &node_before),
        1
    );

    // Long enough for the fence to write a changed pod set (250 ms) and the reporter to react to
    // the Node several times over (1 s cycles).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        pods_with_uids(&state),
        want,
        "a stale event changed the pods on disk\n{}",
        agent.dump()
    );
    assert_eq!(
        taint_writes(&server),
        writes_before,
        "a stale Node made the agent write its taints\n{}",
        agent.dump()
    );
    let log = agent.drained_dump();
    assert!(
        !log.contains("vanished"),
        "a stale Node was taken for a removed taint:\n{log}"
    );
    let ignored = log
        .lines()
        .filter(|l| l.contains("older than") && l.contains("ignored"))
        .count();
    // Logged at the first stale event of each watch and at powers of two: pods 1, 2 (of 3), node 1.
    assert_eq!(ignored, 3, "stale events not logged as expected:\n{log}");
    // Fresh events still flow after the stale ones.
    let p2 = server.create_pod(pod("p2"));
    let mut want = want;
    want.push(("p2".to_string(), uid(&p2)));
    want.sort();
    await_pods_on_disk(&state, &want, &agent).await;
    let _ = agent.terminate(Duration::from_secs(5));
}

/// One sample of the agent's `/metrics` (the health address is read from its configuration).
fn metric(config_text: &str, series: &str) -> f64 {
    use std::io::{Read, Write};
    let address = config_text
        .lines()
        .find_map(|l| l.strip_prefix("healthAddress = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("healthAddress in the configuration");
    let mut conn = std::net::TcpStream::connect(address).expect("connect to /metrics");
    conn.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .expect("request");
    let mut body = String::new();
    let _ = conn.read_to_string(&mut body);
    body.lines()
        .find_map(|l| l.strip_prefix(series))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{series} not in /metrics:\n{body}"))
}

/// A state directory others may write to, and a last-contact file that is not a time: each is
/// reported once at start, and the agent runs on.
#[tokio::test]
async fn a_loose_state_directory_and_a_garbage_contact_file_are_reported() {
    let World {
        server: _server,
        _loopback,
        dir,
        config,
    } = world(|dir| {
        format!(
            "stateDirectory = \"{state}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"",
            state = dir.join("state").display(),
        )
    });
    let state = dir.path().join("state");
    // A first run leaves a state file and a contact behind.
    let first = config.clone();
    tokio::task::spawn_blocking(move || {
        let mut a = Agent::start(&first, &[]);
        a.wait_for(&["API server reachable"], Duration::from_secs(15))
            .unwrap_or_else(|| panic!("agent never reached the API server:\n{}", a.dump()));
        let _ = a.terminate(Duration::from_secs(5));
    })
    .await
    .expect("first run");
    assert!(state.join("state.json").exists(), "no state file written");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    std::fs::write(state.join("last-contact"), "not a time at all\n").expect("contact");
    let mut agent = start_until(&config, "API server reachable", Duration::from_secs(15)).await;
    let log = agent.drained_dump();
    let _ = agent.terminate(Duration::from_secs(5));
    assert_eq!(
        log.matches("is writable by its group or by everyone (mode 0777)")
            .count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("does not hold a time this build writes (\"not a time at all\")")
            .count(),
        1,
        "{log}"
    );
}
