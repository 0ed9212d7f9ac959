//! A real systemd-journald receives the agent's structured records; read back with
//! `journalctl -o json` and checked field by field.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{Agent, Journald, free_port, is_root, require, write_config};

fn journal_records(node: &str) -> Vec<serde_json::Value> {
    let out = Command::new("journalctl")
        .args(["-o", "json", "--no-pager", "SYSLOG_IDENTIFIER=nodewarden"])
        .arg(format!("NODE={node}"))
        .output()
        .expect("run journalctl");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn records_reach_journald_with_structured_fields() {
    if !require(is_root(), "root (to reach or start systemd-journald)") {
        return;
    }
    let _journald = Journald::ensure();
    let dir = tempfile::tempdir().expect("tempdir");
    let node = format!("journal-test-{}", std::process::id());
    let port = free_port();
    // 1Ei of memory is never available: MemoryPressure is True from the first sample.
    let config = write_config(
        dir.path(),
        &format!(
            "nodeName = \"{node}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
             nodefsPath = \"/\"\nimagefsPath = \"/\"\nnodeStatusUpdateFrequency = \"1s\"\n\
             [evictionHard]\n\"memory.available\" = \"1Ei\"\n\
             [logging]\ntarget = \"journald\"\nlevel = \"info\"\n"
        ),
    );
    let mut agent = Agent::start(&config, &[]);
    let pid = agent.pid().to_string();
    let deadline = Instant::now() + Duration::from_secs(15);
    let record = loop {
        let found = journal_records(&node)
            .into_iter()
            .find(|r| r["CONDITION"] == "MemoryPressure" && r["STATUS"] == "True");
        if let Some(r) = found {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "no MemoryPressure record in the journal; agent stderr:\n{}",
            agent.dump()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let (_, status) = agent
        .terminate(Duration::from_secs(5))
        .expect("agent exits");
    assert!(status.success());

    let get = |k: &str| record[k].as_str().unwrap_or_default().to_string();
    assert_eq!(get("_PID"), pid, "{record}");
    assert_eq!(get("SYSLOG_IDENTIFIER"), "nodewarden");
    assert_eq!(get("PRIORITY"), "5", "info maps to notice (5)");
    assert_eq!(get("NODE"), node);
    assert_eq!(get("REASON"), "KubeletHasInsufficientMemory");
    assert_eq!(get("EVENT"), "NodeHasInsufficientMemory");
    assert_eq!(get("SIGNAL"), "memory.available");
    assert_eq!(get("THRESHOLD"), (1i64 << 60).to_string(), "1Ei in bytes");
    assert_eq!(
        get("TAINT"),
        "node.kubernetes.io/memory-pressure:NoSchedule"
    );
    assert_eq!(get("VERSION"), env!("CARGO_PKG_VERSION"));
    let available: i64 = get("AVAILABLE").parse().expect("AVAILABLE is a number");
    assert!(available > 0 && available < 1i64 << 60);
    assert!(
        get("MESSAGE").starts_with("condition MemoryPressure is now True"),
        "{}",
        get("MESSAGE")
    );
    // The stop is journaled too.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stopped = journal_records(&node).iter().any(|r| {
            r["MESSAGE"]
                .as_str()
                .unwrap_or("")
                .starts_with("stopping on SIGTERM")
        });
        if stopped {
            break;
        }
        assert!(Instant::now() < deadline, "no stop record in the journal");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The node is context of every record, set once by the logger: each record of this process
    // (the start-up lines about the machine too, which name no node themselves) carries exactly
    // one NODE field (a second one would make journalctl print an array).
    let out = Command::new("journalctl")
        .args(["-o", "json", "--no-pager", "SYSLOG_IDENTIFIER=nodewarden"])
        .arg(format!("_PID={pid}"))
        .output()
        .expect("run journalctl");
    let all: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(all.len() >= 3, "only {} records of the agent", all.len());
    for r in &all {
        assert_eq!(r["NODE"].as_str(), Some(node.as_str()), "{r}");
    }
}
