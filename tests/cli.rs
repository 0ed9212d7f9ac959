//! The `nodewarden` command line as a user meets it: exit codes and messages for bad
//! configurations (file, line, column and key), `check-config`, `sample`, `explain`, and the
//! errors a user meets before the agent runs.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use support::{agent_bin, free_port, write_config};

const EXIT_CONFIG: i32 = 78;
const EXIT_DATA: i32 = 65;

fn nodewarden(args: &[&str]) -> Output {
    Command::new(agent_bin())
        .args(args)
        .env_remove("JOURNAL_STREAM")
        .output()
        .expect("run nodewarden")
}

fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn every_bad_config_exits_78_naming_file_line_column_and_key() {
    let table = std::fs::read_to_string(data("config/expected.tsv")).expect("expected.tsv");
    let mut checked = 0;
    for row in table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cols: Vec<&str> = row.split('\t').collect();
        let [file, line, column, key, message] = cols[..] else {
            panic!("bad row in expected.tsv: {row:?}");
        };
        let path = data(&format!("config/{file}"));
        for args in [
            vec!["check-config", path.as_str()],
            vec!["check-config", "--config", path.as_str()],
            vec!["run", "--config", path.as_str()],
        ] {
            let out = nodewarden(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(EXIT_CONFIG), "{args:?}: {stderr}");
            let position = format!("{path}:{line}:{column}: ");
            let located = if key.is_empty() {
                position
            } else {
                format!("{position}{key}: ")
            };
            assert!(
                stderr.contains(&located),
                "{args:?}: stderr lacks {located:?}:\n{stderr}"
            );
            assert!(
                stderr.contains(message),
                "{args:?}: lacks {message:?}:\n{stderr}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "expected.tsv has only {checked} rows");
}

#[test]
fn all_errors_of_a_file_are_reported_at_once() {
    let path = data("config/three-errors.toml");
    let out = nodewarden(&["check-config", &path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let located = stderr.lines().filter(|l| l.starts_with(&path)).count();
    assert_eq!(located, 3, "{stderr}");
}

#[test]
fn a_missing_config_file_is_a_config_error_naming_the_file() {
    let out = nodewarden(&["check-config", "/nonexistent/nodewarden.toml"]);
    assert_eq!(out.status.code(), Some(EXIT_CONFIG));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/nodewarden.toml"), "{stderr}");
    assert!(stderr.contains("No such file"), "{stderr}");
}

/// The path read when no `--config` is given.
const DEFAULT_CONFIG: &str = "/etc/nodewarden/config.toml";
const DEFAULTS_NOTICE: &str = "running on the built-in defaults";

/// Runs nodewarden as on a machine without the default configuration file: directly when it is
/// absent here, otherwise in a private mount namespace where an empty tmpfs hides
/// `/etc/nodewarden` (nothing on the host changes).
fn nodewarden_without_default_config(args: &[&str]) -> support::command::Ran {
    let bin = agent_bin();
    let mut cmd = if Path::new(DEFAULT_CONFIG).exists() {
        assert!(
            support::require(
                support::is_root() && support::command::have("unshare"),
                "root and unshare(1) to hide this machine's /etc/nodewarden"
            ),
            "cannot hide {DEFAULT_CONFIG} here"
        );
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg("mount -t tmpfs tmpfs /etc/nodewarden && exec \"$0\" \"$@\"")
            .arg(&bin);
        c
    } else {
        Command::new(&bin)
    };
    cmd.args(args).env_remove("JOURNAL_STREAM");
    support::command::run(&mut cmd, std::time::Duration::from_secs(60))
}

#[test]
fn without_the_default_config_file_sample_and_check_config_run_on_the_defaults_and_say_so() {
    let out = nodewarden_without_default_config(&["sample", "-o", "json"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let notices: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains(DEFAULTS_NOTICE))
        .collect();
    assert_eq!(notices.len(), 1, "one line says so: {}", out.stderr);
    assert!(notices[0].contains(DEFAULT_CONFIG), "{}", notices[0]);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let conditions: Vec<&str> = json["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(
        conditions,
        ["MemoryPressure", "DiskPressure", "PIDPressure"],
        "the built-in condition table"
    );

    let out = nodewarden_without_default_config(&["check-config"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stderr.contains(DEFAULTS_NOTICE), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("configuration (built-in defaults) is valid"),
        "{}",
        out.stdout
    );

    // `status` reads the default state directory, whatever it holds on this machine; what
    // matters here is that the configuration is not the failure.
    let out = nodewarden_without_default_config(&["status"]);
    assert_ne!(out.code, Some(EXIT_CONFIG), "{}", out.stderr);
    assert!(out.stderr.contains(DEFAULTS_NOTICE), "{}", out.stderr);
}

#[test]
fn a_named_config_file_that_is_missing_stays_a_config_error_for_every_command() {
    let missing = "/nonexistent/nodewarden.toml";
    for args in [
        vec!["run", "--config", missing],
        vec!["sample", "--config", missing],
        vec!["status", "--config", missing],
        vec!["check-config", "--config", missing],
        vec!["check-config", missing],
    ] {
        let out = nodewarden_without_default_config(&args);
        assert_eq!(out.code, Some(EXIT_CONFIG), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(missing), "{args:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains(DEFAULTS_NOTICE),
            "{args:?}: {}",
            out.stderr
        );
    }
}

#[test]
fn check_config_prints_the_kubelet_threshold_model() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
    let out = nodewarden(&[
        "check-config",
        "--config",
        &example.display().to_string(),
        "-o",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let first = &json["thresholds"][0];
    assert_eq!(
        first,
        &serde_json::json!({"signal": "memory.available", "operator": "LessThan",
            "value": {"quantity": "100Mi"}, "gracePeriod": "0s", "minReclaim": null})
    );
    assert_eq!(json["nodeStatusReportFrequency"], "1m");

    // An empty file: the Linux defaults, and pid.available has none.
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = write_config(dir.path(), "");
    let out = nodewarden(&["check-config", &empty.display().to_string(), "-o", "json"]);
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let signals: Vec<&str> = json["thresholds"]
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["signal"].as_str())
        .collect();
    assert_eq!(
        signals,
        [
            "memory.available",
            "nodefs.available",
            "nodefs.inodesFree",
            "imagefs.available",
            "imagefs.inodesFree"
        ]
    );
}

#[test]
fn sample_reads_this_machine_and_reports_conditions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        "nodeName = \"cli-test\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
         [evictionHard]\n\"memory.available\" = \"1Ei\"\n",
    );
    let out = nodewarden(&[
        "sample",
        "--config",
        &config.display().to_string(),
        "-o",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["node"], "cli-test");
    let signals: Vec<&str> = json["signals"]
        .as_array()
        .expect("signals")
        .iter()
        .filter_map(|s| s["signal"].as_str())
        .collect();
    for s in ["memory.available", "nodefs.available", "pid.available"] {
        assert!(signals.contains(&s), "{s} missing from {signals:?}");
    }
    let memory = json["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "MemoryPressure")
        .expect("MemoryPressure");
    assert_eq!(memory["status"], "True", "1Ei is never available");
    assert_eq!(memory["reason"], "KubeletHasInsufficientMemory");
    assert_eq!(
        json["taints"],
        serde_json::json!(["node.kubernetes.io/memory-pressure:NoSchedule"])
    );
}

/// The output of a command run for comparison, trimmed.
fn command_output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().expect(program);
    assert!(out.status.success(), "{program} {args:?} failed");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Checks the machine facts in a `sample` or `status` JSON report against what the system's
/// own tools and files say about this machine.
fn assert_machine_is_this_one(machine: &serde_json::Value, nodefs: &Path) {
    let nproc: u64 = command_output("nproc", &[])
        .parse()
        .expect("nproc prints a number");
    assert_eq!(machine["cpus"].as_u64(), Some(nproc), "{machine}");

    let meminfo = std::fs::read_to_string("/proc/meminfo").expect("meminfo");
    let mem_total_kib: u64 = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())
        .expect("MemTotal in kB");
    assert_eq!(
        machine["memoryBytes"].as_u64(),
        Some(mem_total_kib * 1024),
        "{machine}"
    );

    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    assert_eq!(
        machine["kernel"].as_str(),
        Some(release.trim()),
        "{machine}"
    );
    assert!(
        machine["os"].as_str().is_some_and(|os| !os.is_empty()),
        "{machine}"
    );

    // Booted `uptime` seconds ago, give or take the seconds the two reads are apart.
    let boot = machine["bootTime"].as_str().expect("bootTime");
    let boot = humantime::parse_rfc3339(boot).expect("bootTime is RFC 3339");
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .expect("uptime")
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .expect("uptime seconds");
    let expected = std::time::SystemTime::now() - std::time::Duration::from_secs_f64(uptime);
    let apart = boot
        .duration_since(expected)
        .unwrap_or_else(|e| e.duration());
    assert!(
        apart.as_secs() <= 5,
        "bootTime {boot:?} vs now − uptime {expected:?}"
    );

    let filesystems = machine["filesystems"].as_array().expect("filesystems");
    assert_eq!(filesystems.len(), 2, "{machine}");
    let nodefs_text = nodefs.display().to_string();
    let found = command_output(
        "findmnt",
        &["-n", "-o", "TARGET,FSTYPE,SOURCE", "--target", &nodefs_text],
    );
    let mut fields = found.split_whitespace();
    let (target, fstype, source) = (fields.next(), fields.next(), fields.next());
    let nodefs_fs = &filesystems[0];
    assert_eq!(nodefs_fs["role"], "nodefs");
    assert_eq!(nodefs_fs["path"].as_str(), Some(nodefs_text.as_str()));
    assert_eq!(
        nodefs_fs["mountPoint"].as_str(),
        target,
        "{machine} vs {found}"
    );
    assert_eq!(nodefs_fs["fsType"].as_str(), fstype, "{machine} vs {found}");
    // findmnt may add a bind mount's root ("/dev/vda[/sub]"); the device comes first.
    let device = nodefs_fs["device"].as_str().expect("device");
    assert!(
        source.is_some_and(|s| s.starts_with(device)),
        "{machine} vs {found}"
    );
    assert_eq!(filesystems[1]["role"], "imagefs");
}

#[test]
fn sample_and_status_show_this_machines_capacity_kernel_os_and_filesystems() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    std::fs::create_dir(&state).expect("state dir");
    let nodefs = std::env::current_dir().expect("cwd");
    let config = write_config(
        dir.path(),
        &format!(
            "nodeName = \"cli-test\"\nnodefsPath = \"{}\"\nimagefsPath = \"/\"\nstateDirectory = \"{}\"\n",
            nodefs.display(),
            state.display()
        ),
    );
    let config = config.display().to_string();
    for command in ["sample", "status"] {
        let out = nodewarden(&[command, "--config", &config, "-o", "json"]);
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_machine_is_this_one(&json["machine"], &nodefs);

        let out = nodewarden(&[command, "--config", &config]);
        assert!(
            out.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let cpus = format!("machine: {} CPUs", command_output("nproc", &[]));
        assert!(text.contains(&cpus), "{command}: {text}");
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
        assert!(
            text.contains(&format!("kernel {}", release.trim())),
            "{command}: {text}"
        );
        assert!(
            text.contains(&format!("nodefs   {} on ", nodefs.display())),
            "{command}: {text}"
        );
    }
}

#[test]
fn explain_prints_the_outcome_and_rejects_malformed_objects_with_field_paths() {
    let out = nodewarden(&[
        "explain",
        "--node",
        &data("explain/node-unreachable.yaml"),
        "--pod",
        &data("explain/pod-daemonset.json"),
        "-o",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["noExecute"], serde_json::json!({"outcome": "never"}));

    let out = nodewarden(&[
        "explain",
        "--node",
        &data("explain/node-invalid.yaml"),
        "--pod",
        &data("explain/pod-deployment.yaml"),
    ]);
    assert_eq!(out.status.code(), Some(EXIT_DATA));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("spec.taints[0].effect: Unsupported value: \"NoRun\""),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn an_unreadable_kubeconfig_is_a_config_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "kubeconfig = \"/nonexistent/nodewarden.kubeconfig\"\n\
             nodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             healthAddress = \"127.0.0.1:{}\"\n[logging]\ntarget = \"stderr\"\n",
            free_port()
        ),
    );
    let out = nodewarden(&["run", "--config", &config.display().to_string()]);
    assert_eq!(out.status.code(), Some(EXIT_CONFIG));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/nonexistent/nodewarden.kubeconfig"),
        "{stderr}"
    );
}

#[test]
fn a_health_address_in_use_is_a_runtime_failure() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().expect("addr").port();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(
        dir.path(),
        &format!(
            "healthAddress = \"127.0.0.1:{port}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n[logging]\ntarget = \"stderr\"\n"
        ),
    );
    let out = nodewarden(&["run", "--config", &config.display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
}

/// The state of node edge-1 for `status`: cut off since `contact`, DiskPressure True since
/// `transition`, three pods (one finished), a quorum that said enforce.
fn save_edge_state(
    state_dir: &Path,
    contact: std::time::SystemTime,
    transition: std::time::SystemTime,
) {
    use nodewarden::core::fence_plan::FencePod;
    use nodewarden::core::qos::QosClass;
    use nodewarden::core::resources::Effective;
    use nodewarden::core::taint::{Effect, Toleration};
    use nodewarden::state::{
        State, StoredCondition, StoredNode, StoredPod, StoredTaint, format_time, save,
    };
    let list = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.parse().expect("quantity")))
            .collect()
    };
    let web = FencePod {
        uid: "u-web".into(),
        namespace: "shop".into(),
        name: "web-1".into(),
        tolerations: vec![
            Toleration::exists("node.kubernetes.io/unreachable", Some(Effect::NoExecute))
                .with_seconds(300),
        ],
        termination_grace_seconds: 30,
        owner_kind: Some("ReplicaSet".into()),
        static_or_mirror: false,
        qos: QosClass::Burstable,
        opted_out: false,
        terminal: false,
        created: None,
    };
    let ds = FencePod {
        uid: "u-ds".into(),
        name: "agent-x".into(),
        owner_kind: Some("DaemonSet".into()),
        qos: QosClass::Guaranteed,
        ..web.clone()
    };
    let done = FencePod {
        uid: "u-done".into(),
        name: "job-1".into(),
        terminal: true,
        created: None,
        ..web.clone()
    };
    let web_resources = Effective {
        requests: list(&[
            ("cpu", "250m"),
            ("memory", "256Mi"),
            ("nvidia.com/gpu", "1"),
        ]),
        limits: list(&[("memory", "512Mi"), ("nvidia.com/gpu", "1")]),
    };
    let ds_resources = Effective {
        requests: list(&[("cpu", "500m"), ("memory", "1Gi")]),
        limits: list(&[("cpu", "500m"), ("memory", "1Gi")]),
    };
    // A finished pod's resources are not counted.
    let done_resources = Effective {
        requests: list(&[("cpu", "4")]),
        limits: Default::default(),
    };
    let node_status = StoredNode {
        conditions: vec![
            StoredCondition {
                type_: "DiskPressure".into(),
                status: "True".into(),
                reason: "KubeletHasDiskPressure".into(),
                message: "nodefs.available below 10%".into(),
                last_transition_time: Some(format_time(transition)),
            },
            StoredCondition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: "KubeletReady".into(),
                message: "kubelet is posting ready status".into(),
                last_transition_time: None,
            },
        ],
        taints: vec![
            StoredTaint {
                key: "node.kubernetes.io/disk-pressure".into(),
                value: String::new(),
                effect: "NoSchedule".into(),
                time_added: None,
            },
            StoredTaint {
                key: "dedicated".into(),
                value: "gpu".into(),
                effect: "NoSchedule".into(),
                time_added: None,
            },
        ],
        allocatable: [("cpu", "2"), ("memory", "4Gi"), ("pods", "110")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        swapped_from: None,
    };
    save(
        state_dir,
        &State {
            version: nodewarden::state::VERSION,
            node: "edge-1".into(),
            last_contact: Some(format_time(contact)),
            pods: vec![
                StoredPod {
                    pod: web,
                    resources: web_resources,
                },
                StoredPod {
                    pod: ds,
                    resources: ds_resources,
                },
                StoredPod {
                    pod: done,
                    resources: done_resources,
                },
            ],
            fenced: vec![],
            pending_events: vec![],
            node_status: Some(node_status),
            condition_events: vec![],
            decided: vec![],
            zone: Some("site-a".into()),
            peers: vec![],
            // The quorum of this partition said the control plane evicts this node.
            quorum: Some(nodewarden::state::StoredQuorum {
                verdict: "enforce".into(),
                reason: "1 of 3 node(s) in zone site-a cut off".into(),
                held_at: None,
                held_from: None,
            }),
            cut_off_since: None,
            counted_from: None,
            wall_scale: None,
            peers_read: false,
            unanswered: None,
        },
    )
    .expect("save state");
}

/// `nodewarden status -o json` of an edge-1 agent in dry-run with its state in `state_dir`, and
/// the config it was run with (written in `dir`).
fn status_json(dir: &Path, state_dir: &Path) -> (std::path::PathBuf, serde_json::Value) {
    let config = write_config(
        dir,
        &format!(
            "nodeName = \"edge-1\"\nstateDirectory = \"{}\"\n[fence]\nmode = \"dry-run\"\n",
            state_dir.display()
        ),
    );
    let out = nodewarden(&[
        "status",
        "--config",
        &config.display().to_string(),
        "-o",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (config, serde_json::from_slice(&out.stdout).expect("JSON"))
}

/// A Ready=False the kubelet posted, on the Node as last seen and with neither of the
/// controller's taints, counts in `status` as the fence counts it: the not-ready taint added at
/// the post. The web pod tolerates unreachable for 300 s and not-ready not at all, so its
/// eviction is the post itself, not the count from contact.
#[test]
fn status_counts_a_ready_false_as_the_not_ready_taint_queued_at_the_post() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().join("state");
    let contact = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
    let posted = contact - std::time::Duration::from_secs(60);
    save_edge_state(&state_dir, contact, posted);
    let file = state_dir.join("state.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("state")).expect("JSON");
    let conditions = state["nodeStatus"]["conditions"]
        .as_array_mut()
        .expect("conditions");
    let ready = conditions
        .iter_mut()
        .find(|c| c["type"] == "Ready")
        .expect("a Ready condition");
    ready["status"] = "False".into();
    ready["lastTransitionTime"] = nodewarden::state::format_time(posted).into();
    std::fs::write(&file, state.to_string()).expect("write state");
    let (_, json) = status_json(dir.path(), &state_dir);
    let web = &json["pods"][0];
    assert_eq!(web["pod"], "shop/web-1");
    let eviction =
        humantime::parse_rfc3339(web["evictionTime"].as_str().expect("time")).expect("rfc3339");
    let diff = eviction
        .duration_since(posted)
        .or_else(|_| posted.duration_since(eviction))
        .unwrap_or_default();
    assert!(diff < std::time::Duration::from_millis(5), "{web}");
}

#[test]
fn status_reads_the_state_directory_and_shows_each_pods_plan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().join("state");
    let contact = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
    let transition = std::time::SystemTime::now() - std::time::Duration::from_secs(3700);
    save_edge_state(&state_dir, contact, transition);
    let (config, json) = status_json(dir.path(), &state_dir);
    assert_eq!(
        json["contact"], "cut off",
        "100 s without contact is past unreachableAfter"
    );
    assert_eq!(json["mode"], "dry-run");
    assert_eq!(json["quorum"]["verdict"], "enforce");
    assert_eq!(json["quorum"]["zone"], "site-a");
    let web = &json["pods"][0];
    assert_eq!(web["pod"], "shop/web-1");
    assert_eq!(web["action"], "dry-run stop");
    // Eviction at last contact − 10.4 s (the kubelet may have renewed the node's Lease last that
    // much earlier) + 40 s grace + the 5 s monitor period + 300 s.
    let eviction =
        humantime::parse_rfc3339(web["evictionTime"].as_str().expect("time")).expect("rfc3339");
    let expected = contact + std::time::Duration::from_millis(334_600);
    let diff = eviction
        .duration_since(expected)
        .or_else(|_| expected.duration_since(eviction))
        .unwrap_or_default();
    assert!(diff < std::time::Duration::from_millis(5), "{web}");
    assert_eq!(json["pods"][1]["action"], "never");
    // Conditions: ours (the default [[conditions]] table) and others', with ages.
    let disk = &json["conditions"][0];
    assert_eq!(disk["type"], "DiskPressure");
    assert_eq!(disk["ours"], true);
    let age = disk["ageSeconds"].as_u64().expect("age");
    assert!((3700..3760).contains(&age), "{disk}");
    assert_eq!(
        json["conditions"][1]["ours"], false,
        "Ready is the kubelet's"
    );
    assert_eq!(json["taints"][0]["ours"], true);
    assert_eq!(json["taints"][1]["ours"], false);
    // Two non-terminal pods of 110; the Job pod that finished is not counted.
    assert_eq!(json["podCount"], 2);
    assert_eq!(json["podCapacity"], "110");
    let row = |name: &str| {
        json["resources"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["resource"] == name)
            .unwrap_or_else(|| panic!("no {name} row in {}", json["resources"]))
            .clone()
    };
    let cpu = row("cpu");
    assert_eq!(cpu["requests"], "750m");
    assert_eq!(cpu["requestsPercent"], 37);
    assert_eq!(cpu["limits"], "500m");
    assert_eq!(cpu["allocatable"], "2");
    assert_eq!(cpu["byQos"][0]["qosClass"], "Guaranteed");
    assert_eq!(cpu["byQos"][0]["requests"], "500m");
    assert_eq!(cpu["byQos"][1]["requests"], "250m");
    assert_eq!(cpu["byQos"][2]["requests"], "0");
    let memory = row("memory");
    assert_eq!(memory["requests"], "1280Mi");
    assert_eq!(memory["limits"], "1536Mi");
    assert_eq!(memory["limitsPercent"], 37);
    let gpu = row("nvidia.com/gpu");
    assert_eq!(gpu["requests"], "1");
    assert!(gpu["allocatable"].is_null(), "the node advertises no GPU");
    let text = nodewarden(&["status", "--config", &config.display().to_string()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("CUT OFF from the API server since"), "{text}");
    assert!(
        text.contains("2 non-terminal pod(s) of 110 allowed"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("cpu ") && l.contains("750m (37%)") && l.ends_with(" 2")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("DiskPressure")
            && l.contains("1h1m")
            && l.ends_with("nodewarden")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("dedicated=gpu:NoSchedule") && l.ends_with("other")),
        "{text}"
    );
}

/// The README's first command, as written there, starts a standalone agent from a fresh checkout:
/// the arguments after `cargo run --release --` are given to the binary cargo built, from the
/// repository's root, and the agent samples and stops cleanly on SIGTERM.
#[test]
fn the_readmes_first_command_starts_a_standalone_agent() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let line = readme
        .lines()
        .find(|l| l.starts_with("cargo run"))
        .expect("a `cargo run` line in the README");
    let command = line.split('#').next().unwrap_or_default();
    let args: Vec<&str> = command
        .split_once(" -- ")
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(
        args.first().copied(),
        Some("run"),
        "README's first command: {line}"
    );
    let config = args
        .windows(2)
        .find(|w| w[0] == "--config")
        .map(|w| root.join(w[1]))
        .expect("the command names its configuration");
    let mut agent = support::Agent::start(&config, &[]);
    agent
        .wait_for(&["starting standalone"], Duration::from_secs(15))
        .unwrap_or_else(|| panic!("no standalone start:\n{}", agent.dump()));
    agent
        .wait_for(&["summary:"], Duration::from_secs(15))
        .unwrap_or_else(|| panic!("no sample summary:\n{}", agent.dump()));
    let (_, status) = agent
        .terminate(Duration::from_secs(5))
        .expect("stops on SIGTERM");
    assert!(status.success(), "exit status {status}");
}

// Golden outputs: the whole text of `sample`, `status` and `check-config` from fixed inputs,
// compared with the files under tests/golden/. After an intended change, regenerate them with
// `NODEWARDEN_BLESS=1 cargo nextest run --test cli -E 'test(golden)'` and read the diff.

/// Compares `actual` with tests/golden/`name`, or writes it there under `NODEWARDEN_BLESS`.
fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("NODEWARDEN_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(e, a)| e != a)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from this output at line {}; if the change is intended, regenerate \
             with NODEWARDEN_BLESS=1 cargo nextest run --test cli -E 'test(golden)'\n\
             --- expected\n{expected}\n--- actual\n{actual}",
            path.display(),
            first + 1
        );
    }
}

/// A machine with fixed facts, as `machine::read` would report one.
fn golden_machine() -> nodewarden::machine::Machine {
    nodewarden::machine::Machine {
        cpus: Some(8),
        memory_bytes: Some(33_557_200_896),
        boot_time: Some("2026-01-10T08:00:00Z".into()),
        kernel: Some("6.12.0-test".into()),
        os: Some("Linux 13 Debian GNU/Linux".into()),
        filesystems: vec![
            nodewarden::machine::Filesystem {
                role: "nodefs",
                path: "/var/lib/kubelet".into(),
                mount_point: Some("/".into()),
                fs_type: Some("ext4".into()),
                device: Some("/dev/vda1".into()),
            },
            nodewarden::machine::Filesystem {
                role: "imagefs",
                path: "/var/lib/containerd".into(),
                mount_point: None,
                fs_type: None,
                device: None,
            },
        ],
        errors: vec!["imagefs /var/lib/containerd: No such file or directory".into()],
    }
}

#[test]
fn golden_sample_on_the_built_in_defaults() {
    use nodewarden::core::clock::Moment;
    use nodewarden::core::signal::{
        Observation, Observations, PsiKind, PsiResource, PsiSignal, PsiWindow, Signal,
    };
    use nodewarden::sample::capacity::{CapacityReading, MachineCapacity};
    // What a machine that is not yet a node reads: no imagefs, a little memory pressure.
    let config = nodewarden::config::from_str("", None).expect("defaults");
    let observation = |available, capacity| Observation {
        available,
        capacity,
    };
    let observations = Observations {
        eviction: [
            (
                Signal::MemoryAvailable,
                observation(24_139_157_504, 33_557_200_896),
            ),
            (
                Signal::NodeFsAvailable,
                observation(9_663_676_416, 105_089_261_568),
            ),
            (Signal::NodeFsInodesFree, observation(5_912_345, 6_553_600)),
            (Signal::PidAvailable, observation(4_193_771, 4_194_304)),
        ]
        .into_iter()
        .collect(),
        psi: [(
            PsiSignal {
                resource: PsiResource::Memory,
                kind: PsiKind::Full,
                window: PsiWindow::Avg10,
            },
            0.25,
        )]
        .into_iter()
        .collect(),
    };
    let reading = nodewarden::agent::Reading {
        observations,
        errors: vec![(
            "imagefs".into(),
            "statvfs /var/lib/containerd: No such file or directory".into(),
        )],
    };
    let mut decider = nodewarden::agent::Decider::new(&config);
    let decision = decider.decide(
        &reading.observations,
        Moment {
            mono: std::time::Duration::ZERO,
            wall: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_768_046_400),
        },
    );
    let capacity = CapacityReading {
        capacity: MachineCapacity {
            cpus: Some(8),
            memory_bytes: Some(33_557_200_896),
            ephemeral_storage_bytes: Some(105_089_261_568),
            pid_max: Some(4_194_304),
            hugepages: None,
        },
        errors: vec![],
    };
    let mut report = nodewarden::cli::sample::sample_report(
        "golden-1",
        &config.thresholds,
        &reading,
        &decision.evaluation,
        &decider.conditions,
        &decider.taints,
        nodewarden::allocatable::compare(&config, capacity, None),
    );
    report.machine = Some(golden_machine());
    golden(
        "sample-defaults.txt",
        &nodewarden::cli::sample::sample_text(&report),
    );
    // The JSON form keeps the exact integers, and no threshold of an unread signal.
    let json = serde_json::to_value(&report).expect("json");
    assert_eq!(json["signals"][0]["available"], 24_139_157_504_i64);
    let imagefs = json["thresholds"]
        .as_array()
        .expect("thresholds")
        .iter()
        .find(|t| t["signal"] == "imagefs.available")
        .expect("imagefs.available");
    assert_eq!(imagefs["value"], "15%");
    assert!(imagefs["threshold"].is_null(), "{imagefs}");
    assert!(imagefs["available"].is_null(), "{imagefs}");
}

#[test]
fn golden_status_of_a_cut_off_node() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state_dir = dir.path().join("state");
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_768_046_400);
    save_edge_state(
        &state_dir,
        now - std::time::Duration::from_secs(100),
        now - std::time::Duration::from_secs(3700),
    );
    let proc = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample/cgroup-v2/proc");
    let config = nodewarden::config::from_str(
        &format!(
            "nodeName = \"edge-1\"\nstateDirectory = \"{}\"\nprocPath = \"{}\"\n\
             nodefsPath = \"/nonexistent/nodefs\"\n[fence]\nmode = \"dry-run\"\n",
            state_dir.display(),
            proc.display()
        ),
        None,
    )
    .expect("config");
    let mut report =
        nodewarden::cli::status::report(&config, "edge-1", now, None).expect("status report");
    report.machine = Some(golden_machine());
    let text = nodewarden::cli::status::text(&report)
        .replace(&proc.display().to_string(), "<fixture>/proc");
    golden("status-cut-off.txt", &text);
}

#[test]
fn golden_check_config_of_the_example() {
    use nodewarden::core::signal::{Observation, Observations, Signal};
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
    let text = std::fs::read_to_string(&example).expect("config.example.toml");
    let loaded = nodewarden::config::from_str_with_warnings(
        &text,
        Some(Path::new("/etc/nodewarden/config.toml")),
    )
    .expect("the example is valid");
    // nodefs read; imagefs not: its percentages say unknown.
    let reading = nodewarden::agent::Reading {
        observations: Observations {
            eviction: [
                (
                    Signal::NodeFsAvailable,
                    Observation {
                        available: 9_663_676_416,
                        capacity: 105_089_261_568,
                    },
                ),
                (
                    Signal::NodeFsInodesFree,
                    Observation {
                        available: 5_912_345,
                        capacity: 6_553_600,
                    },
                ),
            ]
            .into_iter()
            .collect(),
            psi: Default::default(),
        },
        errors: vec![],
    };
    let text = format!(
        "{}{}",
        nodewarden::config::effective_text(&loaded.config),
        nodewarden::cli::check::resolved_text(&loaded.config, &reading)
    );
    golden("check-config-example.txt", &text);
}

/// `explain` on live objects (with `--kubeconfig`, `--context`, and `-` from `kubectl get`),
/// and the same binary as the kubectl plugin: `kubectl nodewarden nodes` found on PATH.
#[tokio::test]
async fn explain_reads_the_cluster_and_kubectl_runs_the_plugin() {
    use serde_json::json;
    use support::apiserver::ApiServer;
    if !support::require(support::kubectl::available(), "kubectl") {
        return;
    }
    let server = ApiServer::new();
    server.create_namespace("shop");
    server.create_node(ApiServer::node_json("n1"));
    server
        .update_node_as("kubectl", "n1", |n| {
            n["spec"]["taints"] =
                json!([{ "key": "node.kubernetes.io/unreachable", "effect": "NoExecute" }]);
        })
        .expect("taint the node");
    server
        .update_node_status_as("nodewarden", "n1", |n| {
            n["status"]["conditions"] = json!([{ "type": "DiskPressure", "status": "True",
                "reason": "KubeletHasDiskPressure", "message": "low",
                "lastTransitionTime": "2020-01-01T00:00:00Z",
                "lastHeartbeatTime": "2020-01-01T00:00:00Z" }]);
        })
        .expect("conditions");
    server.create_pod(json!({ "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": "web-1", "namespace": "shop", "uid": "u-web" },
        "spec": { "containers": [{ "name": "c", "image": "nginx" }],
            "tolerations": [{ "key": "node.kubernetes.io/unreachable", "operator": "Exists",
                "effect": "NoExecute", "tolerationSeconds": 300 }] } }));
    server.create_event(json!({ "apiVersion": "v1", "kind": "Event",
        "metadata": { "name": "n1.1", "namespace": "default" },
        "involvedObject": { "apiVersion": "v1", "kind": "Node", "name": "n1" },
        "reason": "NodewardenFenced", "message": "Pod shop/x stopped", "type": "Warning",
        "source": { "component": "nodewarden" }, "reportingComponent": "nodewarden",
        "lastTimestamp": "2020-01-01T00:00:00Z", "firstTimestamp": "2020-01-01T00:00:00Z" }));
    let lb = server.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = lb.write_kubeconfig(dir.path());
    // A second kubeconfig whose current context points nowhere: only --context reaches it.
    let text = std::fs::read_to_string(&kc).expect("kubeconfig");
    let elsewhere = dir.path().join("two-contexts");
    std::fs::write(
        &elsewhere,
        text.replace(
            "current-context: nodewarden-test",
            "current-context: nowhere",
        )
        .replace(
            "contexts:\n",
            "contexts:\n- name: nowhere\n  context:\n    cluster: nowhere\n    user: nodewarden-test\n",
        )
        .replace(
            "clusters:\n",
            "clusters:\n- name: nowhere\n  cluster:\n    server: http://127.0.0.1:1\n",
        ),
    )
    .expect("write kubeconfig");
    let bin = agent_bin();
    let run = move |args: Vec<String>, env: Vec<(String, String)>, stdin: Option<String>| {
        let bin = bin.clone();
        tokio::task::spawn_blocking(move || {
            let mut cmd = Command::new(&bin);
            cmd.args(&args).env_remove("KUBECONFIG").envs(env);
            match stdin {
                Some(input) => support::command::run_with_input(
                    &mut cmd,
                    input.as_bytes(),
                    Duration::from_secs(60),
                ),
                None => support::command::run(&mut cmd, Duration::from_secs(60)),
            }
        })
    };
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let kc_s = kc.display().to_string();
    let out = run(
        s(&[
            "explain",
            "--pod",
            "shop/web-1",
            "--node",
            "n1",
            "--kubeconfig",
            &kc_s,
            "-o",
            "json",
        ]),
        vec![],
        None,
    )
    .await
    .expect("join");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(json["qosClass"], "BestEffort", "{json}");
    assert_eq!(
        json["taints"][0]["taint"], "node.kubernetes.io/unreachable:NoExecute",
        "{json}"
    );
    assert_eq!(json["noExecute"]["seconds"], 300, "{json}");

    // --context picks the working context of a file whose current one points nowhere.
    let other = elsewhere.display().to_string();
    let out = run(
        s(&[
            "explain",
            "--pod",
            "shop/web-1",
            "--node",
            "n1",
            "--kubeconfig",
            &other,
            "--context",
            "nodewarden-test",
        ]),
        vec![],
        None,
    )
    .await
    .expect("join");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // A pod the cluster does not have: named, not a decode error.
    let out = run(
        s(&["explain", "--pod", "shop/nope", "--node", "n1"]),
        vec![("KUBECONFIG".into(), kc_s.clone())],
        None,
    )
    .await
    .expect("join");
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("shop/nope") && out.stderr.contains("not found"),
        "{}",
        out.stderr
    );

    // `kubectl get pod -o yaml | nodewarden explain --pod - --node n1`, KUBECONFIG from the
    // environment.
    let cache = dir.path().join("cache");
    let (ok, yaml, err) = support::kubectl::run(
        &kc,
        &cache,
        &["get", "pod", "-n", "shop", "web-1", "-o", "yaml"],
    )
    .await;
    assert!(ok, "{err}");
    let out = run(
        s(&["explain", "--pod", "-", "--node", "n1"]),
        vec![("KUBECONFIG".into(), kc_s.clone())],
        Some(yaml),
    )
    .await
    .expect("join");
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("node.kubernetes.io/unreachable"),
        "{}",
        out.stdout
    );

    // The plugin: kubectl finds kubectl-nodewarden on PATH and runs it.
    let plugins = dir.path().join("bin");
    std::fs::create_dir(&plugins).expect("plugin dir");
    std::os::unix::fs::symlink(agent_bin(), plugins.join("kubectl-nodewarden")).expect("symlink");
    let path = format!(
        "{}:{}",
        plugins.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (ok, table, err) = {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.args(["nodewarden", "nodes"])
            .env("PATH", &path)
            .env("KUBECONFIG", &kc);
        support::kubectl::output(cmd).await
    };
    assert!(ok, "{err}");
    let row = table
        .lines()
        .find(|l| l.starts_with("n1 "))
        .unwrap_or_else(|| panic!("no n1 row:\n{table}"));
    assert!(row.contains("DiskPressure=True"), "{table}");
    assert!(
        row.contains("node.kubernetes.io/unreachable:NoExecute"),
        "{table}"
    );
    assert!(
        !row.contains("*node.kubernetes.io/unreachable"),
        "kubectl's taint, not ours: {table}"
    );
    assert!(row.contains("none"), "no Lease yet: {table}");
    assert!(row.contains("NodewardenFenced"), "{table}");
    // Help names the command as typed.
    let out = tokio::process::Command::new("kubectl")
        .args(["nodewarden", "--help"])
        .env("PATH", &path)
        .output()
        .await
        .expect("kubectl ran");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("kubectl nodewarden"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
