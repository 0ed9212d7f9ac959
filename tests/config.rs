//! Configuration loading through the library: the bad fixtures in `tests/data/config/` (their
//! expected positions are in `expected.tsv`, shared with the CLI tests), the shipped
//! `config.example.toml`, and the effective JSON thresholds in the kubelet's model.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nodewarden::config::{self, Config, ConfigErrors, LogTarget, effective_json, effective_text};
use nodewarden::core::signal::{PsiSignal, Signal, SignalRef};
use nodewarden::core::taint::Effect;
use serde_json::json;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/config")
}

struct Expected {
    file: String,
    line: usize,
    column: usize,
    key: String,
    message: String,
}

fn expected_rows() -> Vec<Expected> {
    let text =
        std::fs::read_to_string(data_dir().join("expected.tsv")).expect("expected.tsv is readable");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 5, "expected.tsv row has 5 columns: {l}");
            Expected {
                file: cols[0].to_string(),
                line: cols[1].parse().expect("line is a number"),
                column: cols[2].parse().expect("column is a number"),
                key: cols[3].to_string(),
                message: cols[4].to_string(),
            }
        })
        .collect()
}

fn load_err(path: &Path) -> ConfigErrors {
    match config::load(path) {
        Ok(c) => panic!("{} should not load, got {c:?}", path.display()),
        Err(e) => e,
    }
}

fn load_ok(text: &str) -> Config {
    config::from_str(text, None).unwrap_or_else(|e| panic!("should load:\n{e}"))
}

#[test]
fn every_bad_fixture_reports_exactly_its_expected_errors() {
    let rows = expected_rows();
    let mut files: Vec<&str> = rows.iter().map(|r| r.file.as_str()).collect();
    files.dedup();
    assert!(files.len() >= 10, "one fixture per case");
    for file in files {
        let path = data_dir().join(file);
        let errors = load_err(&path).0;
        let expected: Vec<&Expected> = rows.iter().filter(|r| r.file == file).collect();
        assert_eq!(errors.len(), expected.len(), "{file}: {errors:#?}");
        for (e, x) in errors.iter().zip(expected) {
            assert_eq!(e.file, path.display().to_string(), "{file}");
            assert_eq!((e.line, e.column), (x.line, x.column), "{file}: {e}");
            assert_eq!(e.key, x.key, "{file}: {e}");
            assert!(
                e.message.contains(&x.message),
                "{file}: {:?} lacks {:?}",
                e.message,
                x.message
            );
        }
    }
}

#[test]
fn every_fixture_in_the_directory_is_listed() {
    let rows = expected_rows();
    for entry in std::fs::read_dir(data_dir()).expect("data dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        if name.ends_with(".toml") {
            assert!(
                rows.iter().any(|r| r.file == name),
                "{name} missing from expected.tsv"
            );
        }
    }
}

#[test]
fn error_display_is_file_line_column_key_message() {
    let path = data_dir().join("bad-duration.toml");
    let shown = load_err(&path).to_string();
    assert_eq!(
        shown,
        format!(
            "{}:3:29: nodeStatusUpdateFrequency: expected a duration such as \"10s\" or \"5m\", found \"ten\"",
            path.display()
        )
    );
    let three = load_err(&data_dir().join("three-errors.toml")).to_string();
    assert_eq!(three.lines().count(), 3);
}

#[test]
fn an_unreadable_file_names_the_file_and_the_os_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("absent.toml");
    let errors = load_err(&missing);
    assert_eq!(errors.0.len(), 1);
    let shown = errors.to_string();
    assert!(
        shown.starts_with(&format!(
            "{}: cannot read the configuration file: ",
            missing.display()
        )),
        "{shown}"
    );
    assert!(shown.contains("No such file"), "{shown}");
}

/// A configuration "file" that never ends (a symlink to `/dev/zero`) is a configuration error
/// naming the file and the limit, within seconds and in bounded memory: `check-config` runs
/// capped at 512 MiB of address space, which reading it to the end would exceed.
#[test]
fn a_config_file_that_never_ends_is_a_config_error_in_bounded_memory_and_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let endless = dir.path().join("config.toml");
    std::os::unix::fs::symlink("/dev/zero", &endless).expect("symlink");
    let started = Instant::now();
    let ran = support::command::run(
        support::command::memory_capped(&support::agent_bin(), 512)
            .arg("check-config")
            .arg(&endless),
        Duration::from_secs(30),
    );
    let took = started.elapsed();
    assert_eq!(ran.code, Some(78), "{}\n{}", ran.stdout, ran.stderr);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        ran.stderr.contains(&format!(
            "{}: cannot read the configuration file: longer than 4194304 bytes",
            endless.display()
        )),
        "{}",
        ran.stderr
    );
    // The library says the same.
    let shown = load_err(&endless).to_string();
    assert!(
        shown.contains("longer than 4194304 bytes, the limit for a configuration file"),
        "{shown}"
    );
}

#[test]
fn errors_without_a_file_say_config() {
    let errors = config::from_str("standalone = 1\n", None).expect_err("wrong type");
    assert_eq!(
        errors.to_string(),
        "<config>:1:14: standalone: expected a boolean (true or false), found integer 1"
    );
}

#[test]
fn an_empty_file_gives_the_defaults() {
    let c = load_ok("");
    let d = Config::defaults();
    assert_eq!(effective_json(&c), effective_json(&d));
    assert_eq!(c.node_status_update_frequency, Duration::from_secs(10));
    assert_eq!(c.node_status_report_frequency, Duration::from_secs(60));
    assert_eq!(c.node_lease_duration_seconds, 40);
    assert_eq!(
        c.eviction_pressure_transition_period,
        Duration::from_secs(300)
    );
    assert_eq!(c.health_address.to_string(), "127.0.0.1:9842");
    assert_eq!(c.nodefs_path, PathBuf::from("/var/lib/kubelet"));
    assert_eq!(c.imagefs_path, PathBuf::from("/var/lib/containerd"));
    assert_eq!(c.logging.target, LogTarget::Auto);
    assert_eq!(c.logging.level, log::LevelFilter::Info);
    let types: Vec<&str> = c
        .conditions
        .iter()
        .map(|c| c.condition_type.as_str())
        .collect();
    assert_eq!(types, ["MemoryPressure", "DiskPressure", "PIDPressure"]);
    assert_eq!(c.conditions[1].signals.len(), 4);
    assert_eq!(c.conditions[2].true_reason, "KubeletHasInsufficientPID");
    assert_eq!(c.thresholds.len(), 5);
}

#[test]
fn the_example_loads_with_the_documented_values() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
    let loaded =
        config::load_with_warnings(&path).unwrap_or_else(|e| panic!("example must load:\n{e}"));
    let c = &loaded.config;
    assert_eq!(c.source.as_deref(), Some(path.as_path()));
    assert_eq!(c.node_name, None);
    assert_eq!(c.kubeconfig, None);
    assert!(!c.standalone);
    assert_eq!(c.nodefs_path, PathBuf::from("/"));
    assert_eq!(c.imagefs_path, PathBuf::from("/"));
    assert_eq!(c.proc_path, PathBuf::from("/proc"));
    assert_eq!(c.cgroup_path, PathBuf::from("/sys/fs/cgroup"));
    assert_eq!(c.state_directory, PathBuf::from("/var/lib/nodewarden"));

    let j = effective_json(c);
    assert_eq!(j["nodeStatusUpdateFrequency"], "10s");
    assert_eq!(j["nodeStatusReportFrequency"], "1m");
    assert_eq!(j["evictionPressureTransitionPeriod"], "5m");
    assert_eq!(j["nodeLeaseDurationSeconds"], 40);
    assert_eq!(j["mergeDefaultEvictionSettings"], false);
    assert_eq!(j["logging"], json!({"target": "auto", "level": "info"}));
    assert_eq!(j["psiThresholds"], json!({"memory.full.avg10": 10.0}));
    assert_eq!(
        j["thresholds"],
        json!([
            {"signal": "memory.available", "operator": "LessThan", "value": {"quantity": "100Mi"}, "gracePeriod": "0s", "minReclaim": null},
            {"signal": "nodefs.available", "operator": "LessThan", "value": {"percentage": 0.1}, "gracePeriod": "0s", "minReclaim": {"quantity": "500Mi"}},
            {"signal": "nodefs.inodesFree", "operator": "LessThan", "value": {"percentage": 0.05}, "gracePeriod": "0s", "minReclaim": null},
            {"signal": "imagefs.available", "operator": "LessThan", "value": {"percentage": 0.15}, "gracePeriod": "0s", "minReclaim": null},
            {"signal": "imagefs.inodesFree", "operator": "LessThan", "value": {"percentage": 0.05}, "gracePeriod": "0s", "minReclaim": null},
            {"signal": "pid.available", "operator": "LessThan", "value": {"percentage": 0.05}, "gracePeriod": "0s", "minReclaim": null},
            {"signal": "memory.available", "operator": "LessThan", "value": {"quantity": "300Mi"}, "gracePeriod": "1m30s", "minReclaim": null},
        ])
    );

    assert_eq!(c.conditions.len(), 4);
    let contention = &c.conditions[3];
    assert_eq!(contention.condition_type, "MemoryContention");
    let psi = PsiSignal::from_name("psi.memory.full.avg10").expect("PSI signal");
    assert_eq!(contention.signals, vec![SignalRef::Psi(psi)]);
    assert_eq!(
        (
            contention.true_reason.as_str(),
            contention.false_reason.as_str()
        ),
        ("MemoryStallHigh", "MemoryStallNormal")
    );
    let taint = contention.taint.as_ref().expect("taint");
    assert_eq!(
        (taint.key.as_str(), taint.effect),
        ("nodewarden.io/memory-contention", Effect::PreferNoSchedule)
    );
    // The explicit standard conditions equal the built-in ones.
    assert_eq!(c.conditions[..3], config::standard_conditions()[..]);

    // Every condition of the example has a threshold: it loads without warnings.
    assert!(loaded.warnings.is_empty(), "{:#?}", loaded.warnings);
}

#[test]
fn the_example_documents_every_key() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml"))
            .expect("example");
    let keys = effective_json(&Config::defaults());
    let object = keys.as_object().expect("object");
    for key in object
        .keys()
        .filter(|k| *k != "source" && *k != "thresholds")
    {
        assert!(
            text.contains(&format!("{key} =")) || text.contains(&format!("[{key}]")),
            "{key} not in the example"
        );
    }
    for key in [
        "evictionHard",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "evictionMinimumReclaim",
        "[[conditions]]",
    ] {
        assert!(text.contains(key), "{key} not in the example");
    }
}

#[test]
fn effective_json_thresholds_for_soft_grace_and_reclaim() {
    let c = load_ok(
        r#"
mergeDefaultEvictionSettings = true
[evictionHard]
"memory.available" = "1.5Gi"
"nodefs.available" = "0%"
"pid.available" = "7.5%"
[evictionSoft]
"nodefs.inodesFree" = "10%"
[evictionSoftGracePeriod]
"nodefs.inodesFree" = "2m"
[evictionMinimumReclaim]
"memory.available" = "0"
"nodefs.inodesFree" = "1%"
"#,
    );
    assert_eq!(
        effective_json(&c)["thresholds"],
        json!([
            {"signal": "memory.available", "operator": "LessThan", "value": {"quantity": "1536Mi"}, "gracePeriod": "0s", "minReclaim": {"quantity": "0"}},
            {"signal": "nodefs.inodesFree", "operator": "LessThan", "value": {"percentage": 0.05}, "gracePeriod": "0s", "minReclaim": {"percentage": 0.01}},
            {"signal": "imagefs.available", "operator": "LessThan", "value": {"percentage": 0.15}, "gracePeriod": "0s", "minReclaim": null},
            {"signal": "imagefs.inodesFree", "operator": "LessThan", "value": {"percentage": 0.05}, "gracePeriod": "0s", "minReclaim": null},
            {"signal": "pid.available", "operator": "LessThan", "value": {"percentage": 0.075}, "gracePeriod": "0s", "minReclaim": null},
            {"signal": "nodefs.inodesFree", "operator": "LessThan", "value": {"percentage": 0.1}, "gracePeriod": "2m", "minReclaim": {"percentage": 0.01}},
        ])
    );
}

#[test]
fn effective_json_setting_one_hard_key_disables_the_other_defaults() {
    let c = load_ok("[evictionHard]\n\"memory.available\" = \"1000\"\n");
    assert_eq!(
        effective_json(&c)["thresholds"],
        json!([{"signal": "memory.available", "operator": "LessThan", "value": {"quantity": "1k"}, "gracePeriod": "0s", "minReclaim": null}])
    );
}

#[test]
fn an_explicit_empty_eviction_hard_table_means_no_hard_thresholds_and_says_so() {
    // Absent: the kubelet's defaults.
    assert_eq!(load_ok("").thresholds.len(), 5);
    // Present but empty: none, as an empty evictionHard is for the kubelet; with a warning at
    // the table, since commenting out every entry leaves one behind.
    let text = "nodeName = \"n1\"\n\n[evictionHard]\n# \"memory.available\" = \"100Mi\"\n";
    let loaded = config::from_str_with_warnings(text, Some(Path::new("/etc/x.toml")))
        .unwrap_or_else(|e| panic!("should load:\n{e}"));
    assert!(
        loaded.config.thresholds.iter().all(|t| t.soft),
        "{:?}",
        loaded.config.thresholds
    );
    let w: Vec<_> = loaded
        .warnings
        .iter()
        .filter(|w| w.key == "evictionHard")
        .collect();
    assert_eq!(w.len(), 1, "{:#?}", loaded.warnings);
    assert_eq!((w[0].line, w[0].column), (3, 2), "{}", w[0]);
    assert!(
        w[0].message.contains("no hard eviction thresholds"),
        "{}",
        w[0]
    );
    let text_out = config::effective_text(&loaded.config);
    assert!(
        text_out.contains("no hard thresholds: evictionHard is present but sets none"),
        "{text_out}"
    );
    // Merging brings the defaults back, as mergeDefaultEvictionSettings does upstream.
    let merged = load_ok("mergeDefaultEvictionSettings = true\n[evictionHard]\n");
    assert_eq!(merged.thresholds.len(), 5);
    // Defaults filled in: no such line.
    assert!(!config::effective_text(&load_ok("")).contains("no hard thresholds"));
}

#[test]
fn percentages_print_as_the_shortest_float32_digits() {
    let c = load_ok("[evictionHard]\n\"nodefs.available\" = \"10%\"\n");
    let text = serde_json::to_string(&effective_json(&c)["thresholds"][0]["value"]).expect("json");
    assert_eq!(text, r#"{"percentage":0.1}"#);
}

#[test]
fn errors_are_collected_across_the_whole_file() {
    let text = r#"
nodeName = "Not_A_DNS_Name"
bogus = 1
nodeStatusUpdateFrequency = "0s"
nodeLeaseDurationSeconds = 0
healthAddress = 9842

[logging]
target = "syslog"
level = "verbose"
colour = true

[evictionMinimumReclaim]
"memory.available" = "0%"

[psiThresholds]
"memory.full.avg10" = 150
"memory.half.avg10" = 5
"io.some.avg60" = "5"

[[conditions]]
type = "memory pressure"
signals = []
taintKey = "Bad Key"
taintEffect = "NoSchedule"

[[conditions]]
type = "CustomThing"
signals = ["memory.available", "nope"]
taintEffect = "NoExecute"
"#;
    let errors = config::from_str(text, None).expect_err("many errors").0;
    let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    for expected in [
        "nodeName",
        "bogus",
        "nodeStatusUpdateFrequency",
        "nodeLeaseDurationSeconds",
        "healthAddress",
        "logging.target",
        "logging.level",
        "logging.colour",
        "evictionMinimumReclaim.\"memory.available\"",
        "psiThresholds.\"memory.full.avg10\"",
        "psiThresholds.\"memory.half.avg10\"",
        "psiThresholds.\"io.some.avg60\"",
        "conditions[0].type",
        "conditions[0].signals",
        "conditions[0].taintKey",
        "conditions[1].signals[1]",
        "conditions[1].taintEffect",
        "conditions[1].trueReason",
        "conditions[1].falseMessage",
    ] {
        assert!(
            keys.contains(&expected),
            "no error for {expected}: {keys:#?}"
        );
    }
    // Errors come with real positions.
    assert!(errors.iter().all(|e| e.line >= 2), "{errors:#?}");
}

#[test]
fn report_frequency_below_update_frequency_is_an_error() {
    let errors = config::from_str("nodeStatusUpdateFrequency = \"2m\"\n", None)
        .expect_err("2m > 1m")
        .0;
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (errors[0].key.as_str(), errors[0].line),
        ("nodeStatusUpdateFrequency", 1)
    );
    assert!(
        errors[0]
            .message
            .contains("must be at least nodeStatusUpdateFrequency (2m)")
    );
    let errors = config::from_str("nodeStatusReportFrequency = \"5s\"\n", None)
        .expect_err("5s < 10s")
        .0;
    assert_eq!(errors[0].key, "nodeStatusReportFrequency");
    // Our default report frequency does not follow an explicitly set update frequency
    // (docs/architecture.md §5).
    let c = load_ok("nodeStatusUpdateFrequency = \"20s\"\n");
    assert_eq!(c.node_status_report_frequency, Duration::from_secs(60));
}

#[test]
fn condition_rules_across_tables() {
    let text = r#"
[[conditions]]
type = "MemoryPressure"
signals = ["memory.available"]
taintKey = "example.com/pressure"
taintEffect = "NoSchedule"

[[conditions]]
type = "MemoryPressure"
signals = ["memory.available", "pid.available"]
taintKey = "example.com/pressure"
taintEffect = "NoSchedule"
"#;
    let errors = config::from_str(text, None).expect_err("duplicates").0;
    let shown: Vec<String> = errors
        .iter()
        .map(|e| format!("{}|{}|{}", e.line, e.key, e.message))
        .collect();
    assert_eq!(errors.len(), 3, "{shown:#?}");
    assert!(shown.iter().any(|s| s.starts_with(
        "10|conditions[1].signals[0]|memory.available already feeds condition MemoryPressure"
    )));
    assert!(shown.iter().any(|s| {
        s.starts_with("9|conditions[1].type|condition type MemoryPressure is already defined")
    }));
    assert!(shown.iter().any(|s| s.starts_with(
        "11|conditions[1].taintKey|taint example.com/pressure:NoSchedule is already used"
    )));
}

#[test]
fn standard_types_default_their_reasons_and_custom_types_need_them() {
    let c = load_ok(
        "[[conditions]]\ntype = \"DiskPressure\"\nsignals = [\"nodefs.available\"]\ntrueMessage = \"disk is low\"\n",
    );
    let d = &c.conditions[0];
    assert_eq!(d.true_reason, "KubeletHasDiskPressure");
    assert_eq!(d.true_message, "disk is low");
    assert_eq!(d.false_reason, "KubeletHasNoDiskPressure");
    assert_eq!(d.false_message, "kubelet has no disk pressure");
    assert_eq!(d.taint, None);
    assert_eq!(
        d.signals,
        vec![SignalRef::Eviction(Signal::NodeFsAvailable)]
    );

    let errors = config::from_str(
        "[[conditions]]\ntype = \"Custom\"\nsignals = [\"pid.available\"]\n",
        None,
    )
    .expect_err("custom type without reasons")
    .0;
    let keys: Vec<&str> = errors.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "conditions[0].trueReason",
            "conditions[0].trueMessage",
            "conditions[0].falseReason",
            "conditions[0].falseMessage"
        ]
    );
    assert!(errors.iter().all(|e| e.line == 1));
}

#[test]
fn the_kubelets_ready_condition_is_not_ours() {
    let errors = config::from_str(
        "[[conditions]]\ntype = \"Ready\"\nsignals = [\"pid.available\"]\ntrueReason = \"A\"\ntrueMessage = \"a\"\nfalseReason = \"B\"\nfalseMessage = \"b\"\n",
        None,
    )
    .expect_err("Ready")
    .0;
    assert_eq!(errors.len(), 1);
    assert!(errors[0].message.contains("belongs to the kubelet"));
}

#[test]
fn warnings_for_unused_thresholds_and_ignored_entries() {
    let text = r#"
[evictionHard]
"memory.available" = "100Mi"
"containerfs.available" = "10%"

[psiThresholds]
"io.full.avg60" = 20

[[conditions]]
type = "DiskPressure"
signals = ["nodefs.available"]
"#;
    let loaded = config::from_str_with_warnings(text, None).unwrap_or_else(|e| panic!("{e}"));
    let shown: Vec<String> = loaded
        .warnings
        .iter()
        .map(|w| format!("{}|{}|{}", w.line, w.key, w.message))
        .collect();
    assert_eq!(shown.len(), 4, "{shown:#?}");
    assert!(
        shown[0].starts_with(
            "4|evictionHard.\"containerfs.available\"|containerfs.available is ignored"
        )
    );
    assert!(shown[1].starts_with("3|evictionHard.\"memory.available\"|memory.available has a threshold but feeds no condition"));
    assert!(shown[2].starts_with(
        "7|psiThresholds.\"io.full.avg60\"|psi.io.full.avg60 has a threshold but feeds no condition"
    ));
    assert!(shown[3].starts_with("9|conditions[0].signals|none of the signals of DiskPressure"));
}

#[test]
fn effective_text_lists_thresholds_and_conditions() {
    let text = effective_text(&Config::defaults());
    assert!(text.contains("hard memory.available < 100Mi"), "{text}");
    assert!(text.contains("hard nodefs.available < 10%"), "{text}");
    assert!(text.contains("MemoryPressure <- memory.available; taint node.kubernetes.io/memory-pressure:NoSchedule"), "{text}");
    assert!(
        text.contains("nodeStatusReportFrequency:        1m"),
        "{text}"
    );
}

#[test]
fn durations_in_go_and_humantime_forms() {
    let c = load_ok(
        "nodeStatusUpdateFrequency = \"1m30s\"\nnodeStatusReportFrequency = \"2 min\"\nevictionPressureTransitionPeriod = \"0s\"\n",
    );
    assert_eq!(c.node_status_update_frequency, Duration::from_secs(90));
    assert_eq!(c.node_status_report_frequency, Duration::from_secs(120));
    assert_eq!(c.eviction_pressure_transition_period, Duration::ZERO);
}

#[test]
fn syntax_errors_on_different_lines_are_all_reported() {
    let errors = config::from_str("a = = 1\nb = 2\nc = \"unterminated\n", None)
        .expect_err("syntax")
        .0;
    let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [1, 3], "{errors:#?}");
    assert!(
        errors
            .iter()
            .all(|e| e.key.is_empty() && e.message.starts_with("invalid TOML: "))
    );
}

#[test]
fn fence_settings_are_read_and_checked() {
    let c = load_ok(
        "[fence]\nmode = \"enforce\"\nnodeMonitorGracePeriod = \"50s\"\nunreachableAfter = \"20s\"\n\
         safetyMargin = \"1s\"\ngracePeriodCap = \"10s\"\ncgroupVersion = \"v2\"\ncgroupDriver = \"cgroupfs\"\n\
         cgroupRoot = \"/host/sys/fs/cgroup\"\n",
    );
    assert_eq!(c.fence.mode, nodewarden::core::fence_plan::Mode::Enforce);
    assert_eq!(c.fence.node_monitor_grace_period, Duration::from_secs(50));
    assert_eq!(c.fence.unreachable_after, Duration::from_secs(20));
    assert_eq!(
        c.fence.cgroup_root.as_deref(),
        Some(Path::new("/host/sys/fs/cgroup"))
    );
    let j = effective_json(&c);
    assert_eq!(j["fence"]["mode"], "enforce");
    assert_eq!(j["fence"]["cgroupDriver"], "cgroupfs");
    // The shipped default is enforce, gated by the peer quorum (which holds without peers).
    assert_eq!(
        Config::defaults().fence.mode,
        nodewarden::core::fence_plan::Mode::Enforce
    );
    assert_eq!(
        Config::defaults().peers.without_peers,
        nodewarden::core::quorum::Undecided::Hold
    );

    let errors = config::from_str(
        "nodeLeaseDurationSeconds = 40\n[fence]\nmode = \"kill\"\nunreachableAfter = \"10s\"\n",
        Some(Path::new("f.toml")),
    )
    .expect_err("invalid");
    let text = errors.to_string();
    assert!(text.contains("f.toml:3:8: fence.mode: expected one of \"enforce\", \"dry-run\", \"off\", found \"kill\""), "{text}");
    assert!(
        text.contains("fence.unreachableAfter: must be longer than the Lease renew interval (10s"),
        "{text}"
    );
}

#[test]
fn reservations_are_read_printed_and_checked() {
    let c = load_ok(
        "reservedSystemCPUs = \"0-1,8\"\n[kubeReserved]\ncpu = \"100m\"\nmemory = \"1Gi\"\n\
         \"ephemeral-storage\" = \"1Gi\"\npid = \"1000\"\n[systemReserved]\nmemory = \"500Mi\"\n",
    );
    let q = |s: &str| {
        s.parse::<nodewarden::core::quantity::Quantity>()
            .expect("quantity")
    };
    assert_eq!(c.kube_reserved.get("memory"), Some(&q("1Gi")));
    assert_eq!(c.kube_reserved.get("pid"), Some(&q("1000")));
    assert_eq!(c.system_reserved.get("memory"), Some(&q("500Mi")));
    let cpus = c.reserved_system_cpus.as_ref().expect("reservedSystemCPUs");
    assert_eq!((cpus.list.as_str(), cpus.count), ("0-1,8", 3));
    let j = effective_json(&c);
    assert_eq!(
        j["kubeReserved"],
        json!({"cpu": "100m", "ephemeral-storage": "1Gi", "memory": "1Gi", "pid": "1k"})
    );
    assert_eq!(j["systemReserved"], json!({"memory": "500Mi"}));
    assert_eq!(j["reservedSystemCPUs"], "0-1,8");
    let text = effective_text(&c);
    assert!(
        text.contains("systemReserved:                   memory 500Mi"),
        "{text}"
    );
    assert!(
        text.contains("reservedSystemCPUs:               0-1,8 (3 CPUs"),
        "{text}"
    );

    // Unset: empty maps, no list; an empty list is unset as in the kubelet.
    let d = load_ok("reservedSystemCPUs = \"\"\n");
    assert!(d.kube_reserved.is_empty() && d.system_reserved.is_empty());
    assert_eq!(d.reserved_system_cpus, None);
    assert!(effective_text(&d).contains("kubeReserved:                     (none)"));

    // Every problem at once, each with file:line:column and key.
    let errors = config::from_str(
        "reservedSystemCPUs = \"3-1\"\n[kubeReserved]\ngpu = \"1\"\nmemory = \"-1Gi\"\n\
         [systemReserved]\ncpu = \"lots\"\npid = 5\n",
        Some(Path::new("r.toml")),
    )
    .expect_err("invalid");
    let text = errors.to_string();
    for expected in [
        "r.toml:1:22: reservedSystemCPUs: expected a CPU list such as \"0-1,8\": range \"3-1\"",
        "r.toml:3:1: kubeReserved.gpu: cannot reserve \"gpu\"; expected one of: cpu, memory, ephemeral-storage, pid",
        "r.toml:4:10: kubeReserved.memory: expected a quantity of at least 0, found \"-1Gi\"",
        "r.toml:6:7: systemReserved.cpu: expected a quantity",
        "r.toml:7:7: systemReserved.pid: expected a quantity such as \"500m\", \"1Gi\" or \"1000\", found integer 5",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert_eq!(errors.0.len(), 5, "{text}");
}

#[test]
fn the_kubelets_server_is_a_bare_url_and_every_other_value_says_why_not() {
    assert_eq!(load_ok("").fence.kubelet_server, None);
    for (given, kept) in [
        ("https://10.0.0.10:6443", "https://10.0.0.10:6443"),
        ("https://10.0.0.10:6443/", "https://10.0.0.10:6443"),
        ("https://api.site-a.example", "https://api.site-a.example"),
        ("https://[fd00::10]:6443", "https://[fd00::10]:6443"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
    ] {
        let c = load_ok(&format!("[fence]\nkubeletServer = \"{given}\"\n"));
        assert_eq!(c.fence.kubelet_server.as_deref(), Some(kept), "{given}");
        let json = effective_json(&c);
        assert_eq!(json["fence"]["kubeletServer"], json!(kept), "{given}");
        assert!(
            effective_text(&c).contains(&format!("{kept}/readyz")),
            "{given}"
        );
    }
    for (given, why) in [
        ("10.0.0.10:6443", "the scheme must be https (or http)"),
        ("ftp://10.0.0.10", "the scheme must be https (or http)"),
        ("https://", "not a URL"),
        (
            "https://user:pw@10.0.0.10:6443",
            "credentials in the URL are not read",
        ),
        ("https://10.0.0.10:6443/api", "a path, query or fragment"),
        ("https://10.0.0.10:6443/?x=1", "a path, query or fragment"),
        ("https://10.0.0.10:6443/#f", "a path, query or fragment"),
        ("https://10.0.0.10:", "an empty port"),
        ("", "not a URL"),
        ("not a url", "not a URL"),
    ] {
        let text = format!("[fence]\nkubeletServer = \"{given}\"\n");
        let errors = config::from_str(&text, None).expect_err(given).0;
        assert_eq!(errors.len(), 1, "{given}: {errors:?}");
        let shown = errors[0].to_string();
        assert!(
            shown.contains("fence.kubeletServer") && shown.contains(why) && shown.contains(":2:"),
            "{given}: {shown}"
        );
    }
    let wrong_kind = config::from_str("[fence]\nkubeletServer = 6443\n", None).expect_err("int");
    assert!(
        wrong_kind.to_string().contains("fence.kubeletServer"),
        "{wrong_kind}"
    );
}

#[test]
fn peers_default_to_none_and_parse_every_key() {
    use nodewarden::core::quorum::Undecided;
    let d = load_ok("");
    assert!(d.peers.service.is_none() && d.peers.static_peers.is_empty());
    assert_eq!(d.peers.listen, None);
    assert_eq!(d.peers.without_peers, Undecided::Hold);
    assert_eq!(d.peers.whole_zone_cut_off, Undecided::Enforce);
    assert_eq!(
        (d.peers.ask, d.peers.timeout, d.peers.interval),
        (50, Duration::from_secs(1), Duration::from_secs(3))
    );
    let c = load_ok(
        r#"
[peers]
listen = "0.0.0.0:9843"
keyFile = "/etc/nodewarden/peer.key"
static = [
  { node = "edge-2", address = "10.0.0.12:9843", zone = "site-a" },
  { node = "edge-3", address = "[fd00::13]:9843" },
]
ask = 7
timeout = "500ms"
interval = "2s"
withoutPeers = "enforce"
wholeZoneCutOff = "hold"
"#,
    );
    let p = &c.peers;
    assert_eq!(p.listen, Some("0.0.0.0:9843".parse().expect("address")));
    assert_eq!(
        p.key_file.as_deref(),
        Some(Path::new("/etc/nodewarden/peer.key"))
    );
    assert_eq!(p.static_peers.len(), 2);
    assert_eq!(
        (
            p.static_peers[0].node.as_str(),
            p.static_peers[0].zone.as_str()
        ),
        ("edge-2", "site-a")
    );
    assert_eq!(
        p.static_peers[1].zone, "",
        "no zone: the controller's empty zone key"
    );
    assert_eq!(p.static_peers[1].address.port(), 9843);
    assert_eq!((p.ask, p.timeout), (7, Duration::from_millis(500)));
    assert_eq!(p.without_peers, Undecided::Enforce);
    assert_eq!(p.whole_zone_cut_off, Undecided::Hold);
    let s = load_ok(
        "[peers]\nservice = \"nodewarden/nodewarden-peers\"\nkeyFile = \"/k\"\nportName = \"quorum\"\n",
    );
    assert_eq!(
        s.peers.service,
        Some(("nodewarden".to_string(), "nodewarden-peers".to_string()))
    );
    assert_eq!(s.peers.port_name, "quorum");
}

#[test]
fn peers_need_a_key_one_source_and_unique_nodes() {
    let err = |text: &str| match config::from_str(text, None) {
        Ok(c) => panic!("should not load: {c:?}"),
        Err(e) => e.to_string(),
    };
    let e = err("[peers]\nlisten = \"0.0.0.0:9843\"\n");
    assert!(e.contains("peers.keyFile") && e.contains("required"), "{e}");
    let e = err(
        "[peers]\nkeyFile = \"/k\"\nservice = \"a/b\"\nstatic = [{ node = \"x\", address = \"10.0.0.1:1\" }]\n",
    );
    assert!(e.contains("not both"), "{e}");
    let e = err(
        "[peers]\nkeyFile = \"/k\"\nstatic = [{ node = \"x\", address = \"10.0.0.1:1\" }, { node = \"x\", address = \"10.0.0.2:1\" }]\n",
    );
    assert!(
        e.contains("listed twice") && e.contains("peers.static[1]"),
        "{e}"
    );
    let e = err("[peers]\nask = 0\n");
    assert!(e.contains("peers.ask"), "{e}");
    let e = err(
        "[peers]\nstatic = [{ node = \"x\", address = \"10.0.0.1:1\", zone = \"a\", port = 3 }]\nkeyFile = \"/k\"\n",
    );
    assert!(
        e.contains("peers.static[0].port") && e.contains("unknown key"),
        "{e}"
    );
}

#[test]
fn a_grace_period_shorter_than_the_quorum_needs_to_settle_is_a_warning() {
    let text = |grace: &str, period: &str| {
        format!(
            "nodeLeaseDurationSeconds = 4\nnodeStatusUpdateFrequency = \"1s\"\n\
             [fence]\nnodeMonitorGracePeriod = \"{grace}\"\nnodeMonitorPeriod = \"{period}\"\n\
             unreachableAfter = \"2s\"\n\
             [peers]\nkeyFile = \"/k\"\nstatic = [{{ node = \"b\", address = \"10.0.0.2:9843\" }}]\n"
        )
    };
    let warned = |grace: &str, period: &str| {
        config::from_str_with_warnings(&text(grace, period), None)
            .unwrap_or_else(|e| panic!("{e}"))
            .warnings
            .iter()
            .any(|w| w.key == "fence.nodeMonitorGracePeriod" && w.message.contains("settled 8s"))
    };
    // Renew 1 s + 5 s, then the longer of unreachableAfter (2 s) and renew 1 s + a 1 s request
    // timeout = 8 s; first kill at grace + the monitor period - 2 s margin - 1.04 s (the
    // kubelet's Lease renewal, a quarter of 4 s with its jitter).
    assert!(warned("4s", "0s"));
    assert!(warned("11s", "0s"));
    assert!(!warned("12s", "0s"));
    assert!(warned("6s", "5s"));
    assert!(!warned("7s", "5s"));
}

#[test]
fn peer_rounds_too_far_apart_to_read_the_zone_record_in_a_monitor_period_are_a_warning() {
    let warned = |fence: &str, interval: &str| {
        let text = format!(
            "[fence]\n{fence}\n[peers]\nkeyFile = \"/k\"\ninterval = \"{interval}\"\n\
             static = [{{ node = \"b\", address = \"10.0.0.2:9843\" }}]\n"
        );
        config::from_str_with_warnings(&text, None)
            .unwrap_or_else(|e| panic!("{e}"))
            .warnings
            .into_iter()
            .find(|w| w.key == "peers.interval")
    };
    // 3 s rounds and a second's list against the default 5 s monitor period: in time.
    assert_eq!(warned("", "3s"), None);
    let w = warned("", "4s").expect("a warning");
    assert!(
        w.message.contains("peers.interval (4s)")
            && w.message.contains("fence.nodeMonitorPeriod (5s)")
            && w.message.contains("Judged into a partial disruption"),
        "{}",
        w.message
    );
    assert!(warned("nodeMonitorPeriod = \"4s\"", "3s").is_some());
    // Not enforcing, nothing is stopped on the count either.
    assert_eq!(warned("mode = \"dry-run\"", "4s"), None);
}

#[test]
fn a_file_that_is_not_utf8_is_refused_at_its_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad-utf8.toml");
    // Line 3, after "logging = \"é" — the column counts characters, not bytes.
    std::fs::write(
        &path,
        b"nodeName = \"ok\"\n# \xc3\xa9\nlogging = \"\xc3\xa9\xff\"\n",
    )
    .expect("write");
    let errs = load_err(&path);
    assert_eq!(errs.0.len(), 1, "{errs}");
    let e = &errs.0[0];
    assert_eq!((e.line, e.column), (3, 13), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3:13: not UTF-8 text: an invalid byte sequence starts here (0xff)",
            path.display()
        )
    );
}

#[test]
fn feature_gates_default_off_and_are_set_by_their_upstream_names() {
    let defaults = load_ok("");
    assert!(!defaults.feature_gates.taint_toleration_comparison_operators);
    let on = load_ok("[featureGates]\nTaintTolerationComparisonOperators = true\n");
    assert!(on.feature_gates.taint_toleration_comparison_operators);
    let json = nodewarden::config::effective_json(&on);
    assert_eq!(
        json["featureGates"]["TaintTolerationComparisonOperators"],
        serde_json::json!(true)
    );
    let text = nodewarden::config::effective_text(&defaults);
    assert!(
        text.contains("TaintTolerationComparisonOperators=false (default; alpha since 1.35"),
        "{text}"
    );
}

#[test]
fn check_config_says_which_grace_period_the_fence_mirrors_and_when_it_must_be_off() {
    let text = nodewarden::config::effective_text(&load_ok(""));
    for expected in [
        "the fence mirrors 40s, the controller's default before 1.32",
        "a 1.32+ cluster at its default (50s, kubernetes/kubernetes#126287) evicts 10s later",
        "Set [fence] nodeMonitorGracePeriod to the cluster's --node-monitor-grace-period",
        "--controllers=-taint-eviction-controller, KEP-3902",
        "set [fence] mode = \"off\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in {text}");
    }
    let fifty = load_ok("[fence]\nnodeMonitorGracePeriod = \"50s\"\n");
    let text = nodewarden::config::effective_text(&fifty);
    assert!(
        text.contains("a cluster before 1.32 at its default (40s) evicts 10s EARLIER"),
        "{text}"
    );
}

#[test]
fn the_built_in_defaults_never_warn_about_themselves() {
    // No file at all, or an empty one: PIDPressure has no threshold, as the kubelet's defaults
    // have none for pid.available. That is a note, not a warning: nobody wrote it.
    let loaded = config::from_str_with_warnings("", None).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.warnings.is_empty(), "{:#?}", loaded.warnings);
    assert_eq!(loaded.notes.len(), 1, "{:#?}", loaded.notes);
    assert!(
        loaded.notes[0].message.contains("PIDPressure"),
        "{:#?}",
        loaded.notes
    );

    // A condition the user wrote without a threshold is the user's: a warning at its line.
    let text = "[[conditions]]\ntype = \"PIDPressure\"\nsignals = [\"pid.available\"]\n";
    let loaded = config::from_str_with_warnings(text, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.warnings.len(), 1, "{:#?}", loaded.warnings);
    assert!(loaded.warnings[0].line > 0, "{:#?}", loaded.warnings);
    // The built-in thresholds it leaves unused are the defaults' business: notes.
    assert!(
        loaded
            .notes
            .iter()
            .any(|n| n.message.contains("memory.available")),
        "{:#?}",
        loaded.notes
    );

    // A built-in condition left without a threshold by what the user wrote (an empty
    // evictionHard) stays a warning.
    let loaded =
        config::from_str_with_warnings("[evictionHard]\n", None).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.message.contains("MemoryPressure") && w.message.contains("never True")),
        "{:#?}",
        loaded.warnings
    );
}

#[test]
fn a_condition_named_as_kep_5394_names_its_psi_conditions_is_warned_about() {
    // keps/sig-node/5394-psi-node-conditions/README.md, Design Details 2 and 4: the kubelet owns
    // these condition types once PSINodeCondition is on, the control plane these taints.
    let table = [
        (
            "SystemMemoryContentionPressure",
            "example.com/a",
            &["type"][..],
        ),
        ("SystemDiskContentionPressure", "example.com/a", &["type"]),
        (
            "KubepodsMemoryContentionPressure",
            "example.com/a",
            &["type"],
        ),
        ("KubepodsDiskContentionPressure", "example.com/a", &["type"]),
        (
            "MemoryContention",
            "node.kubernetes.io/memory-contention-pressure",
            &["taintKey"],
        ),
        (
            "CpuContention",
            "node.kubernetes.io/cpu-contention-pressure",
            &["taintKey"],
        ),
        (
            "KubepodsDiskContentionPressure",
            "node.kubernetes.io/disk-contention-pressure",
            &["type", "taintKey"],
        ),
        // Ours, as in the example: no warning.
        ("MemoryContention", "nodewarden.io/memory-contention", &[]),
        // The kubelet's own pressure condition is a different matter (no KEP-5394 name).
        ("MemoryContentionPressure", "example.com/a", &[]),
    ];
    for (condition, taint, want) in table {
        let text = format!(
            r#"
[psiThresholds]
"memory.full.avg60" = 10

[[conditions]]
type = "{condition}"
signals = ["psi.memory.full.avg60"]
trueReason = "High"
trueMessage = "high"
falseReason = "Normal"
falseMessage = "normal"
taintKey = "{taint}"
taintEffect = "NoSchedule"
"#
        );
        let loaded = config::from_str_with_warnings(&text, None).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<&str> = loaded
            .warnings
            .iter()
            .filter(|w| w.message.contains("KEP-5394"))
            .map(|w| w.key.rsplit('.').next().unwrap_or_default())
            .collect();
        assert_eq!(got, want, "{condition} / {taint}: {:#?}", loaded.warnings);
    }
}

#[test]
fn the_controller_managers_lease_is_a_namespace_and_a_name_or_nothing() {
    let default = load_ok("").fence.controller_manager_lease;
    assert_eq!(
        default,
        Some((
            "kube-system".to_string(),
            "kube-controller-manager".to_string()
        ))
    );
    let c = load_ok("[fence]\ncontrollerManagerLease = \"control/kcm.leader\"\n");
    assert_eq!(
        c.fence.controller_manager_lease,
        Some(("control".to_string(), "kcm.leader".to_string()))
    );
    assert_eq!(
        effective_json(&c)["fence"]["controllerManagerLease"],
        json!("control/kcm.leader")
    );
    let none = load_ok("[fence]\ncontrollerManagerLease = \"\"\n");
    assert_eq!(none.fence.controller_manager_lease, None);
    assert_eq!(
        effective_json(&none)["fence"]["controllerManagerLease"],
        json!("")
    );
    assert!(effective_text(&none).contains("none read"));
    for given in [
        "kube-controller-manager",
        "kube-system/",
        "/x",
        "Kube/x",
        "a/b/c",
    ] {
        let text = format!("[fence]\ncontrollerManagerLease = \"{given}\"\n");
        let errors = config::from_str(&text, None).expect_err(given).0;
        assert_eq!(errors.len(), 1, "{given}: {errors:?}");
        let shown = errors[0].to_string();
        assert!(
            shown.contains("fence.controllerManagerLease")
                && shown.contains("namespace/name")
                && shown.contains(":2:"),
            "{given}: {shown}"
        );
    }
}
