//! Node Allocatable computed on the node, through the command line: `sample` and `status` show
//! it from a fixture `/proc` and the configured reservations, alone before the agent has seen
//! the Node, and beside the Node's (with a flag per difference) once the state holds it.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use nodewarden::state::{State, StoredNode, save};
use support::{agent_bin, write_config};

fn nodewarden(args: &[&str]) -> Output {
    let out = Command::new(agent_bin())
        .args(args)
        .env_remove("JOURNAL_STREAM")
        .output()
        .expect("run nodewarden");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A `/proc` with 4 CPUs, 32Gi of memory, no huge pages and a PID ceiling of 32768.
fn proc_tree(root: &Path) {
    std::fs::create_dir_all(root.join("sys/kernel")).expect("mkdir");
    let cpus: String = (0..4).map(|i| format!("cpu{i} 1 0 1 10\n")).collect();
    std::fs::write(root.join("stat"), format!("cpu  4 0 4 40\n{cpus}intr 1\n")).expect("stat");
    std::fs::write(
        root.join("meminfo"),
        "MemTotal:       33554432 kB\nMemFree:        16777216 kB\n",
    )
    .expect("meminfo");
    std::fs::write(root.join("sys/kernel/pid_max"), "32768\n").expect("pid_max");
    std::fs::write(root.join("sys/kernel/threads-max"), "100000\n").expect("threads-max");
}

fn line<'a>(json: &'a serde_json::Value, resource: &str) -> &'a serde_json::Value {
    json["allocatable"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["resource"] == resource)
        .unwrap_or_else(|| panic!("no {resource} in {}", json["allocatable"]))
}

fn save_node(state_dir: &Path, allocatable: &[(&str, &str)]) {
    save(
        state_dir,
        &State {
            version: nodewarden::state::VERSION,
            node: "alloc-1".into(),
            last_contact: Some(nodewarden::state::format_time(std::time::SystemTime::now())),
            pods: vec![],
            fenced: vec![],
            pending_events: vec![],
            node_status: Some(StoredNode {
                conditions: vec![],
                taints: vec![],
                allocatable: allocatable
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                swapped_from: None,
            }),
            condition_events: vec![],
            decided: vec![],
            zone: None,
            peers: vec![],
            quorum: None,
            cut_off_since: None,
            counted_from: None,
            wall_scale: None,
            peers_read: false,
            unanswered: None,
        },
    )
    .expect("save state");
}

#[test]
fn sample_and_status_show_local_allocatable_alone_then_beside_the_nodes_flagging_differences() {
    let dir = tempfile::tempdir().expect("tempdir");
    let proc = dir.path().join("proc");
    proc_tree(&proc);
    let state_dir = dir.path().join("state");
    // The documented example: 32Gi, kubeReserved 1Gi, systemReserved 500Mi, hard 100Mi.
    let config = write_config(
        dir.path(),
        &format!(
            "nodeName = \"alloc-1\"\nprocPath = \"{}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             stateDirectory = \"{}\"\n\
             [evictionHard]\n\"memory.available\" = \"100Mi\"\n\
             [kubeReserved]\ncpu = \"500m\"\nmemory = \"1Gi\"\npid = \"1000\"\n\
             [systemReserved]\nmemory = \"500Mi\"\n",
            proc.display(),
            state_dir.display()
        ),
    );
    let config = config.display().to_string();
    let json = |command: &str| -> serde_json::Value {
        let out = nodewarden(&[command, "--config", &config, "-o", "json"]);
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let text = |command: &str| -> String {
        String::from_utf8_lossy(&nodewarden(&[command, "--config", &config]).stdout).into_owned()
    };

    // Before the agent has seen the Node: the local figures alone.
    for command in ["sample", "status"] {
        let j = json(command);
        assert_eq!(j["allocatable"]["nodeKnown"], false, "{command}");
        let memory = line(&j, "memory");
        assert_eq!(memory["capacity"], "32Gi", "{command}");
        assert_eq!(memory["reserved"], "1624Mi", "{command}");
        assert_eq!(memory["allocatable"], "31144Mi", "{command}: 30.4Gi");
        assert!(memory["node"].is_null(), "{command}");
        assert_eq!(line(&j, "cpu")["allocatable"], "3500m", "{command}");
        assert_eq!(line(&j, "pid")["allocatable"], "31768", "{command}");
        let t = text(command);
        assert!(
            t.lines()
                .any(|l| l.starts_with("memory ") && l.trim_end().ends_with("30.4Gi")),
            "{command}:\n{t}"
        );
        assert!(!t.contains("DIFFERS"), "{command}:\n{t}");
    }

    // The Node as last seen: memory agrees, cpu does not.
    save_node(
        &state_dir,
        &[("cpu", "4"), ("memory", "31144Mi"), ("pods", "110")],
    );
    for command in ["sample", "status"] {
        let j = json(command);
        assert_eq!(j["allocatable"]["nodeKnown"], true, "{command}");
        assert_eq!(line(&j, "memory")["node"], "31144Mi", "{command}");
        assert_eq!(line(&j, "memory")["differs"], false, "{command}");
        assert_eq!(line(&j, "cpu")["node"], "4", "{command}");
        assert_eq!(line(&j, "cpu")["differs"], true, "{command}");
        assert_eq!(
            line(&j, "pid")["differs"],
            false,
            "{command}: the Node has no pid"
        );
        let t = text(command);
        let flagged: Vec<&str> = t.lines().filter(|l| l.ends_with("DIFFERS")).collect();
        assert_eq!(flagged.len(), 1, "{command}:\n{t}");
        assert!(flagged[0].starts_with("cpu "), "{command}:\n{t}");
    }
}
