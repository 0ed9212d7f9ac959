//! The monitoring kit (`packaging/monitoring`) proven with the real tools: `promtool` checks and
//! unit-tests the alert rules (the plain rules file and the PrometheusRule), and lints the real
//! `/metrics` of a running agent; the kustomize component renders beside the DaemonSet and its
//! objects validate against the prometheus-operator's CRD schemas; and a real Prometheus scrapes
//! real agents through a partition, evaluating every alert and every dashboard query
//! (`a_real_prometheus_…`, root only). The README's list of metrics is checked against what
//! `/metrics` really exports.

mod support;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::command::{have, run, run_with_input};
use support::lab::{Lab, LabSpec};
use support::{Agent, field, free_port, is_root, require, test_config, write_config};

/// The alerts issue 24 asks for, at least.
const REQUIRED_ALERTS: [&str; 13] = [
    "NodewardenDown",
    "NodewardenNotScraped",
    "NodewardenCutOff",
    "NodewardenFenceStopping",
    "NodewardenFenceStoppedPods",
    "NodewardenQuorumHold",
    "NodewardenPodViewStale",
    "NodewardenForeignConditionWriter",
    "NodewardenStateWritesFailing",
    "NodewardenPeerRequestsRejected",
    "NodewardenPeersSilent",
    "NodewardenPressure",
    "NodewardenFenceLate",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn kit() -> PathBuf {
    repo().join("packaging/monitoring")
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parse {path:?}: {e}"))
}

fn rules() -> Vec<Value> {
    let file = yaml(&kit().join("nodewarden.rules.yml"));
    file["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules").clone())
        .collect()
}

fn tool(program: &str) -> bool {
    require(
        have(program),
        &format!("{program} (Debian's prometheus package; .ci/install-monitoring.sh)"),
    )
}

fn promtool(args: &[&str]) -> support::command::Ran {
    run(Command::new("promtool").args(args), Duration::from_secs(60))
}

/// Metric names (`nodewarden_…`, `process_…`) an expression or a text mentions.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in text.match_indices(['n', 'p']) {
        let rest = &text[i..];
        if !(rest.starts_with("nodewarden_") || rest.starts_with("process_")) {
            continue;
        }
        if i > 0 && text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        names.insert(rest[..end].to_string());
    }
    names
}

/// The metric families of an exposition, from its `# TYPE` lines (a family without samples yet,
/// a counter of errors that never happened, still has one).
fn exported_families(exposition: &str) -> BTreeSet<String> {
    exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The metrics the README's Monitoring section lists: the first column of its table.
fn readme_metrics() -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let start = text
        .find("### Metrics\n")
        .expect("README has a Monitoring section with a ### Metrics table");
    text[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1))
        .map(|c| c.trim().trim_matches('`').to_string())
        .filter(|c| c.starts_with("nodewarden_") || c.starts_with("process_"))
        .collect()
}

/// One HTTP/1.0 GET (no chunked answers, the server closes after it), bounded: 2 s to connect,
/// 5 s in all, 8 MiB.
fn http_get(to: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {to}\r\n\r\n").as_bytes())?;
    let mut buf = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut chunk = [0u8; 16384];
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 8 << 20 || Instant::now() >= deadline {
            return Err(std::io::Error::other("answer too large or too slow"));
        }
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no header end in {text:?}")))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in {head:?}")))?;
    Ok((status, body.to_string()))
}

/// Percent-encodes a query parameter (RFC 3986 unreserved characters kept).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `promtool check metrics` on an exposition: no lint finding, exit 0.
fn assert_lint_clean(exposition: &str, what: &str) {
    let ran = run_with_input(
        Command::new("promtool").args(["check", "metrics"]),
        exposition.as_bytes(),
        Duration::from_secs(30),
    );
    assert!(
        ran.ok && ran.stdout.trim().is_empty() && ran.stderr.trim().is_empty(),
        "promtool check metrics on {what}:\n{}{}\n--- exposition ---\n{exposition}",
        ran.stdout,
        ran.stderr
    );
}

#[test]
fn both_rule_files_pass_promtool_and_every_alert_has_severity_annotations_and_a_runbook() {
    if !tool("promtool") {
        return;
    }
    let plain = kit().join("nodewarden.rules.yml");
    let ran = promtool(&["check", "rules", plain.to_str().expect("utf-8")]);
    assert!(
        ran.ok,
        "promtool check rules:\n{}{}",
        ran.stdout, ran.stderr
    );

    // The PrometheusRule's spec is the rules file; promtool checks it as one.
    let object = yaml(&kit().join("kubernetes/prometheusrule.yaml"));
    assert_eq!(object["kind"], "PrometheusRule");
    assert_eq!(
        object["spec"],
        yaml(&plain),
        "the PrometheusRule's spec differs from nodewarden.rules.yml"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = dir.path().join("prometheusrule-spec.json");
    std::fs::write(&spec, object["spec"].to_string()).expect("write spec");
    let ran = promtool(&["check", "rules", spec.to_str().expect("utf-8")]);
    assert!(
        ran.ok,
        "promtool check rules on the PrometheusRule's spec:\n{}{}",
        ran.stdout, ran.stderr
    );

    let rules = rules();
    let names: BTreeSet<&str> = rules.iter().filter_map(|r| r["alert"].as_str()).collect();
    for required in REQUIRED_ALERTS {
        assert!(names.contains(required), "no alert {required}");
    }
    let mut pages = BTreeSet::new();
    for rule in &rules {
        let alert = rule["alert"].as_str().expect("alerting rules only");
        assert!(
            matches!(
                rule["labels"]["severity"].as_str(),
                Some("critical" | "warning")
            ),
            "{alert}: severity"
        );
        for key in ["summary", "description", "runbook_url"] {
            assert!(
                rule["annotations"][key]
                    .as_str()
                    .is_some_and(|s| !s.trim().is_empty()),
                "{alert}: no {key}"
            );
        }
        let url = rule["annotations"]["runbook_url"].as_str().unwrap_or("");
        assert_eq!(
            url,
            format!("packaging/monitoring/runbooks/{alert}.md"),
            "{alert}: runbook_url"
        );
        let page = std::fs::read_to_string(repo().join(url))
            .unwrap_or_else(|e| panic!("{alert}: runbook {url}: {e}"));
        for section in ["## What it means", "## How to confirm", "## What to do"] {
            assert!(page.contains(section), "{url} has no {section:?}");
        }
        assert!(
            page.contains("nodewarden status") || page.contains("journalctl"),
            "{url} says how to confirm with nodewarden status or journalctl"
        );
        pages.insert(format!("{alert}.md"));
        // Only metrics the agent exports (the README's list, which the tests below hold to
        // the real /metrics).
        let expr = rule["expr"].as_str().expect("expr");
        for name in metric_names(expr) {
            assert!(
                readme_metrics().contains(&name),
                "{alert} uses {name}, which the agent does not export"
            );
        }
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(kit().join("runbooks"))
        .expect("runbooks")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert_eq!(on_disk, pages, "a runbook for each alert and no other");
}

/// The unit tests, and proof that they hold each alert to its firing and to its `for:`: with an
/// alert's expression replaced by one that never fires, or its `for:` removed, they fail.
#[test]
fn promtool_unit_tests_pass_and_fail_without_each_alert_or_its_for() {
    if !tool("promtool") {
        return;
    }
    let tests = kit().join("tests/nodewarden.rules.test.yml");
    let ran = promtool(&["test", "rules", tests.to_str().expect("utf-8")]);
    assert!(ran.ok, "promtool test rules:\n{}{}", ran.stdout, ran.stderr);

    let plain = yaml(&kit().join("nodewarden.rules.yml"));
    let unit_tests = yaml(&tests);
    assert_eq!(unit_tests["rule_files"], json!(["../nodewarden.rules.yml"]));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("tests")).expect("mkdir");
    let mutant_tests = dir.path().join("tests/t.json");
    let groups = plain["groups"].as_array().expect("groups");
    let mut mutants = 0;
    for (g, group) in groups.iter().enumerate() {
        for (r, rule) in group["rules"].as_array().expect("rules").iter().enumerate() {
            let alert = rule["alert"].as_str().expect("alert");
            // Only the test cases of this alert (promtool takes seconds for the whole file).
            let mut own = unit_tests.clone();
            own["rule_files"] = json!(["../mutant.json"]);
            own["tests"] = json!(
                unit_tests["tests"]
                    .as_array()
                    .expect("tests")
                    .iter()
                    .filter(|t| t["alert_rule_test"]
                        .as_array()
                        .is_some_and(|cs| cs.iter().any(|c| c["alertname"] == alert)))
                    .collect::<Vec<_>>()
            );
            assert!(
                own["tests"].as_array().is_some_and(|t| !t.is_empty()),
                "no test of {alert}"
            );
            std::fs::write(&mutant_tests, own.to_string()).expect("write tests");
            let mut changes = vec![("never fires", json!("vector(1) == 0"), "expr")];
            if rule.get("for").is_some() {
                changes.push(("without its for:", Value::Null, "for"));
            }
            for (what, value, key) in changes {
                let mut mutant = plain.clone();
                let target = &mut mutant["groups"][g]["rules"][r];
                match (value, target.as_object_mut()) {
                    (Value::Null, Some(o)) => {
                        o.remove(key);
                    }
                    (v, Some(o)) => {
                        o.insert(key.into(), v);
                    }
                    (_, None) => panic!("rule is a mapping"),
                }
                std::fs::write(dir.path().join("mutant.json"), mutant.to_string())
                    .expect("write mutant");
                let ran = promtool(&["test", "rules", mutant_tests.to_str().expect("utf-8")]);
                assert!(
                    !ran.ok,
                    "the unit tests still pass with {alert} {what}: they do not test it"
                );
                mutants += 1;
            }
        }
    }
    assert!(
        mutants >= 2 * REQUIRED_ALERTS.len() - 5,
        "{mutants} mutants"
    );
}

/// The component renders with the DaemonSet's kustomization (`kubectl kustomize`), adds exactly
/// the PodMonitor and the PrometheusRule, and both validate strictly against the operator's
/// CRD schemas; the PodMonitor selects the DaemonSet's pods by its port name, and names the job
/// the rules select.
#[test]
fn the_monitoring_component_renders_beside_the_daemonset_and_validates_against_the_crds() {
    if !require(
        have("kubectl"),
        "kubectl (with its built-in kustomize; .ci/install-manifests.sh)",
    ) || !require(
        Command::new("python3")
            .args(["-c", "import yaml, cloudcoil.models.prometheus_operator.v1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success()),
        "cloudcoil-models-prometheus-operator (.ci/install-monitoring.sh)",
    ) {
        return;
    }
    // An overlay as an operator writes one: the base and the component by relative path
    // (kustomize refuses absolute ones).
    let dir = tempfile::tempdir().expect("tempdir");
    let up = "../".repeat(dir.path().components().count() - 1);
    let rel = |p: &str| {
        format!(
            "{up}{}",
            repo().join(p).to_str().expect("utf-8")[1..].to_owned()
        )
    };
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        format!(
            "resources: [{}]\ncomponents: [{}]\n",
            rel("packaging/kubernetes"),
            rel("packaging/monitoring/kubernetes")
        ),
    )
    .expect("write overlay");
    let ran = run(
        Command::new("kubectl").args(["kustomize", dir.path().to_str().expect("utf-8")]),
        Duration::from_secs(60),
    );
    assert!(ran.ok, "kubectl kustomize:\n{}", ran.stderr);
    let rendered = dir.path().join("rendered.yaml");
    std::fs::write(&rendered, &ran.stdout).expect("write rendered");
    let docs: Vec<Value> = ran
        .stdout
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap_or_else(|e| panic!("parse {d}: {e}")))
        .collect();
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    for kind in ["PodMonitor", "PrometheusRule", "DaemonSet"] {
        assert_eq!(
            kinds.iter().filter(|k| **k == kind).count(),
            1,
            "{kind} once in {kinds:?}"
        );
    }
    let base = run(
        Command::new("kubectl").args([
            "kustomize",
            repo().join("packaging/kubernetes").to_str().expect("utf-8"),
        ]),
        Duration::from_secs(60),
    );
    assert!(base.ok, "kubectl kustomize of the base:\n{}", base.stderr);
    assert_eq!(
        kinds.len(),
        base.stdout.split("\n---\n").count() + 2,
        "the component adds exactly two objects"
    );

    let checked = run(
        Command::new("python3")
            .arg(repo().join("tests/support/prometheus_operator.py"))
            .arg(&rendered),
        Duration::from_secs(60),
    );
    assert!(
        checked.ok,
        "the CRD validation failed:\n{}{}",
        checked.stdout, checked.stderr
    );
    for kind in ["PodMonitor/nodewarden", "PrometheusRule/nodewarden"] {
        assert!(
            checked
                .stdout
                .lines()
                .any(|l| l.contains(kind) && l.ends_with(" passed")),
            "{kind} was not validated:\n{}",
            checked.stdout
        );
    }

    let find = |kind: &str| docs.iter().find(|d| d["kind"] == kind).expect(kind);
    let (monitor, daemonset) = (find("PodMonitor"), find("DaemonSet"));
    let pod_labels = &daemonset["spec"]["template"]["metadata"]["labels"];
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    for (k, v) in selector {
        assert_eq!(&pod_labels[k], v, "the PodMonitor selects the agent's pods");
    }
    assert_eq!(
        monitor["metadata"]["namespace"],
        daemonset["metadata"]["namespace"]
    );
    let job_label = monitor["spec"]["jobLabel"].as_str().expect("jobLabel");
    assert_eq!(
        pod_labels[job_label], "nodewarden",
        "the job the rules select"
    );
    let port = monitor["spec"]["podMetricsEndpoints"][0]["port"]
        .as_str()
        .expect("port");
    let ports = &daemonset["spec"]["template"]["spec"]["containers"][0]["ports"];
    assert!(
        ports
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["name"] == port)),
        "the DaemonSet has a port {port}"
    );
    let relabel = &monitor["spec"]["podMetricsEndpoints"][0]["relabelings"];
    assert!(
        relabel
            .as_array()
            .is_some_and(|rs| rs.iter().any(|r| r["targetLabel"] == "node"
                && r["sourceLabels"][0] == "__meta_kubernetes_pod_node_name")),
        "every series gets its node label"
    );
}

/// `prometheus.yml` (the scrape job for a Prometheus without the operator) passes
/// `promtool check config`. Debian builds Prometheus without Kubernetes discovery, so the job's
/// `kubernetes_sd_configs` is checked by this promtool with the discovery swapped for a static
/// target; the relabelling the job relies on is exercised by the partition test below.
#[test]
fn the_plain_scrape_job_passes_promtool_check_config() {
    if !tool("promtool") {
        return;
    }
    let config = yaml(&kit().join("prometheus.yml"));
    let job = &config["scrape_configs"][0];
    assert_eq!(job["job_name"], "nodewarden");
    assert_eq!(job["kubernetes_sd_configs"][0]["role"], "pod");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        kit().join("nodewarden.rules.yml"),
        dir.path().join("nodewarden.rules.yml"),
    )
    .expect("copy rules");
    let direct = promtool(&[
        "check",
        "config",
        kit().join("prometheus.yml").to_str().expect("utf-8"),
    ]);
    let mut swapped = config.clone();
    let job = &mut swapped["scrape_configs"][0];
    if let Some(o) = job.as_object_mut() {
        o.remove("kubernetes_sd_configs");
        o.insert(
            "static_configs".into(),
            json!([{"targets": ["127.0.0.1:9842"]}]),
        );
    }
    let path = dir.path().join("prometheus.json");
    std::fs::write(&path, swapped.to_string()).expect("write config");
    let ran = promtool(&["check", "config", path.to_str().expect("utf-8")]);
    assert!(
        ran.ok,
        "promtool check config:\n{}{}",
        ran.stdout, ran.stderr
    );
    // A promtool built with Kubernetes discovery checks the file as shipped.
    if !(direct.stdout + &direct.stderr).contains("kubernetes_sd_configs not found") {
        let ran = promtool(&[
            "check",
            "config",
            kit().join("prometheus.yml").to_str().expect("utf-8"),
        ]);
        assert!(
            ran.ok,
            "promtool check config:\n{}{}",
            ran.stdout, ran.stderr
        );
    }
}

/// A standalone agent's real `/metrics`: no promtool lint finding, and only metrics the README
/// lists.
#[test]
fn a_standalone_agents_metrics_pass_promtool_lint_and_are_in_the_readme() {
    if !tool("promtool") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = write_config(
        dir.path(),
        &test_config(port, "").replace(
            "/tmp/nodewarden-test-state",
            dir.path().join("state").to_str().expect("utf-8"),
        ),
    );
    let mut agent = Agent::start(&config, &[]);
    let to = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(15);
    let text = loop {
        if let Ok((200, text)) = http_get(to, "/metrics")
            && text
                .lines()
                .any(|l| l.starts_with("nodewarden_samples_total ") && !l.ends_with(" 0"))
        {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no sample on /metrics within 15 s:\n{}",
            agent.dump()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = agent.terminate(Duration::from_secs(5));
    assert_lint_clean(&text, "a standalone agent's /metrics");
    let listed = readme_metrics();
    let exported = exported_families(&text);
    let missing: Vec<_> = exported.difference(&listed).collect();
    assert!(missing.is_empty(), "README's metrics lack {missing:?}");
}

/// Prometheus started by the test on a loopback port; SIGTERM to its PID and reaped on drop.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(config: &Value, rules: &Value) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("rules.json"), rules.to_string()).expect("rules");
        let config_path = dir.path().join("prometheus.json");
        std::fs::write(&config_path, config.to_string()).expect("config");
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let log = std::fs::File::create(dir.path().join("log")).expect("log");
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !matches!(http_get(addr, "/-/ready"), Ok((200, _))) {
            assert!(
                Instant::now() < deadline,
                "prometheus not ready in 20 s:\n{}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("log")).unwrap_or_default()
    }

    /// GET on the HTTP API; the `data` of a `success` answer, or the error text.
    fn api(&self, path: &str) -> Result<Value, String> {
        let (status, body) = http_get(self.addr, path).map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_str(&body).map_err(|e| format!("{status}: {e}: {body}"))?;
        if status == 200 && v["status"] == "success" {
            Ok(v["data"].clone())
        } else {
            Err(format!("{status}: {body}"))
        }
    }

    /// An instant query's result vector.
    fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let data = self.api(&format!("/api/v1/query?query={}", encode(expr)))?;
        Ok(data["result"].as_array().cloned().unwrap_or_default())
    }

    /// A range query over `[start, end]` (Unix seconds) at 1 s steps: its series.
    fn query_range(&self, expr: &str, start: f64, end: f64) -> Result<Vec<Value>, String> {
        let data = self.api(&format!(
            "/api/v1/query_range?query={}&start={start:.3}&end={end:.3}&step=1",
            encode(expr)
        ))?;
        Ok(data["result"].as_array().cloned().unwrap_or_default())
    }

    /// The alerts firing now, as (alertname, node).
    fn firing(&self) -> BTreeSet<(String, String)> {
        self.api("/api/v1/alerts")
            .ok()
            .and_then(|d| d["alerts"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter(|a| a["state"] == "firing")
            .map(|a| {
                (
                    a["labels"]["alertname"].as_str().unwrap_or("").to_string(),
                    a["labels"]["node"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The rules as the partition test loads them: every `for:` shortened to 1 s and every range
/// window (`[10m]`, `[30m]`) to 10 s, so what takes minutes on a real fleet takes seconds.
fn rules_for_the_partition_test() -> Value {
    let mut file = yaml(&kit().join("nodewarden.rules.yml"));
    for group in file["groups"].as_array_mut().expect("groups") {
        for rule in group["rules"].as_array_mut().expect("rules") {
            let o = rule.as_object_mut().expect("rule");
            if o.contains_key("for") {
                o.insert("for".into(), json!("1s"));
            }
            let expr = o["expr"].as_str().expect("expr").to_string();
            let mut short = expr.clone();
            for window in ["[10m]", "[30m]"] {
                short = short.replace(window, "[10s]");
            }
            assert!(
                !short.contains("m]"),
                "a window the test does not shorten: {expr}"
            );
            o.insert("expr".into(), json!(short));
        }
    }
    file
}

/// Every query of the dashboard, with its panel's title, the Grafana variables filled in as
/// Grafana would for "All" nodes at a 1 s scrape interval.
fn dashboard_queries() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(kit().join("grafana-dashboard.json")).expect("dashboard");
    let d: Value = serde_json::from_str(&text).expect("dashboard is JSON");
    let mut out = Vec::new();
    for panel in d["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("expr");
            out.push((
                format!("{} / {}", panel["title"], target["refId"]),
                // $__rate_interval: four scrape intervals at least (Grafana's rule).
                expr.replace("$node", ".*")
                    .replace("$__rate_interval", "4s"),
            ));
        }
    }
    out
}

/// Dashboard queries that may return nothing in this lab, and why.
const MAY_BE_EMPTY: [(&str, &str); 3] = [
    ("sample_errors_total", "every signal reads in the lab"),
    (
        "state_write_failures_total",
        "the state directory never fails here",
    ),
    (
        "taint_writes_total",
        "no pressure in the lab, so no taint write",
    ),
];

#[test]
fn the_dashboard_is_valid_json_with_a_datasource_variable_a_stable_uid_and_known_metrics() {
    let text = std::fs::read_to_string(kit().join("grafana-dashboard.json")).expect("dashboard");
    let d: Value = serde_json::from_str(&text).expect("dashboard is JSON");
    assert_eq!(d["uid"], "nodewarden-overview");
    let vars = d["templating"]["list"].as_array().expect("variables");
    assert!(
        vars.iter()
            .any(|v| v["type"] == "datasource" && v["name"] == "datasource")
    );
    assert!(vars.iter().any(|v| v["name"] == "node"));
    let rows: Vec<&str> = d["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .filter(|p| p["type"] == "row")
        .filter_map(|p| p["title"].as_str())
        .collect();
    assert_eq!(rows, ["Fleet", "Node $node"]);
    for panel in d["panels"].as_array().expect("panels") {
        if panel["type"] != "row" {
            assert_eq!(
                panel["datasource"]["uid"], "${datasource}",
                "{}",
                panel["title"]
            );
        }
    }
    let listed = readme_metrics();
    for (title, expr) in dashboard_queries() {
        for name in metric_names(&expr) {
            assert!(listed.contains(&name), "{title}: {name} is not exported");
        }
    }
}

/// A real Prometheus (1 s scrapes, the rules with `for:` and windows shortened: see
/// [`rules_for_the_partition_test`]) scrapes three real connected agents with peers in the lab
/// (network namespaces, the API test server on a bridge) through a partition of node 1 from the
/// API server. Every alert expression and every dashboard query parses and answers through the
/// HTTP API; the cut-off and fence alerts fire for n1 during the partition and resolve after it,
/// no other alert fires (bar the lateness and pressure ones, which depend on the host), n1's next
/// SIGTERM deadline is the one its fence logged and goes with the partition, the scrape job's
/// relabelling from prometheus.yml gives every series its `node`; and each agent's
/// connected /metrics passes promtool's lint and holds exactly the README's metrics.
#[test]
fn a_real_prometheus_sees_the_cut_off_and_fence_alerts_fire_and_resolve_through_a_partition() {
    if !require(is_root(), "root (network namespaces, cgroups)")
        || !tool("prometheus")
        || !tool("promtool")
    {
        return;
    }
    let began = Instant::now();
    let mut lab = Lab::build(&LabSpec {
        nodes: 3,
        // Long enough that the short pod's SIGTERM is still ahead once the peer quorum settles
        // (8.5 s after the last contact here): the deadline it is planned for is shown, scraped
        // and checked below. With the default 2 s it is already due when the stop is planned.
        toleration: Duration::from_secs(8),
        ..LabSpec::default()
    });
    // The scrape job of prometheus.yml with Kubernetes discovery replaced by static targets
    // carrying the labels that discovery would set (Debian's Prometheus has no Kubernetes
    // discovery): the job's own relabelling then keeps the `health` port and sets `node`.
    let shipped = yaml(&kit().join("prometheus.yml"));
    let mut job = shipped["scrape_configs"][0].clone();
    let targets: Vec<Value> = lab
        .nodes
        .iter()
        .map(|n| {
            json!({"targets": [n.health_addr().to_string()], "labels": {
                "__meta_kubernetes_pod_node_name": n.name,
                "__meta_kubernetes_pod_container_port_name": "health",
                "__meta_kubernetes_namespace": "nodewarden",
                "__meta_kubernetes_pod_name": format!("nodewarden-{}", n.name),
            }})
        })
        .collect();
    if let Some(o) = job.as_object_mut() {
        o.remove("kubernetes_sd_configs");
        o.insert("static_configs".into(), json!(targets));
        o.insert("scrape_interval".into(), json!("1s"));
        o.insert("scrape_timeout".into(), json!("900ms"));
    }
    let config = json!({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": ["rules.json"],
        "scrape_configs": [job],
    });
    let prometheus = Prometheus::start(&config, &rules_for_the_partition_test());
    lab.start_all();

    // All three scraped, each series with its node.
    let wait = |what: &str, limit: Duration, mut done: Box<dyn FnMut() -> bool + '_>| {
        let deadline = Instant::now() + limit;
        while !done() {
            assert!(Instant::now() < deadline, "{what} within {limit:?}");
            std::thread::sleep(Duration::from_millis(250));
        }
    };
    wait(
        "three targets up, with samples",
        Duration::from_secs(15),
        Box::new(|| {
            prometheus
                .query(r#"nodewarden_samples_total{job="nodewarden"} > 0"#)
                .is_ok_and(|r| r.len() == 3)
        }),
    );
    let nodes: BTreeSet<String> = prometheus
        .query(r#"up{job="nodewarden"}"#)
        .expect("up")
        .iter()
        .filter_map(|s| s["metric"]["node"].as_str().map(str::to_string))
        .collect();
    assert_eq!(nodes, ["n1", "n2", "n3"].map(String::from).into());
    // NodewardenNotScraped fired while Prometheus waited for the agents to start: once they are
    // scraped nothing fires (the range checked below starts here).
    wait(
        "no alert firing once every agent is scraped",
        Duration::from_secs(5),
        Box::new(|| prometheus.firing().is_empty()),
    );
    let start = now_unix();

    // The partition: n1 loses the API server, keeps its peers and its scraper.
    lab.cut_api(1);
    let cut = Instant::now();
    let n1 = |a: &str| (a.to_string(), "n1".to_string());
    let mut seen = BTreeSet::new();
    wait(
        "the cut-off, fence-stopping and stopped-pods alerts firing for n1",
        Duration::from_secs(20),
        Box::new(|| {
            seen.extend(prometheus.firing());
            [
                "NodewardenCutOff",
                "NodewardenFenceStopping",
                "NodewardenFenceStoppedPods",
            ]
            .iter()
            .all(|a| seen.contains(&n1(a)))
        }),
    );
    let partitioned_for = cut.elapsed();
    let short = lab.nodes[0].pod("short");
    assert!(!short.alive(), "n1's short pod was stopped by the fence");
    let during = now_unix();
    // The next fence steps n1 showed while cut off are its short pod's SIGTERM and kill, as the
    // fence's plan record logs them (the same instants, to the log's millisecond), after the cut.
    let log = lab.nodes[0].log();
    let planned = |action: &str| -> Vec<f64> {
        log.lines()
            .filter(|l| l.contains("fence plan for"))
            .filter(|l| field(l, "pod").is_some_and(|p| p.ends_with("-short")))
            .filter_map(|l| field(l, &format!("{action}_at")))
            .filter_map(|t| humantime::parse_rfc3339(&t).ok())
            .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64())
            .collect()
    };
    let shown = prometheus
        .query_range(
            r#"nodewarden_fence_next_deadline_timestamp_seconds{node="n1"}"#,
            start,
            during,
        )
        .expect("deadline query");
    let cut_unix = during - partitioned_for.as_secs_f64();
    let mut samples = 0;
    for series in &shown {
        let action = series["metric"]["action"].as_str().unwrap_or("");
        let logged = planned(if action == "kill" { "kill" } else { "sigterm" });
        assert!(
            action == "sigterm" || action == "kill",
            "n1 enforces: {action}"
        );
        for v in series["values"].as_array().into_iter().flatten() {
            let v: f64 = v[1].as_str().and_then(|x| x.parse().ok()).expect("value");
            samples += 1;
            assert!(
                logged.iter().any(|p| (p - v).abs() < 0.002),
                "{action} deadline {v} is none of the logged times {logged:?}"
            );
            assert!(v > cut_unix, "deadline {v} before the cut at {cut_unix}");
        }
    }
    eprintln!(
        "deadlines shown for n1: {samples} samples; logged SIGTERM {:?}, kill {:?}, cut {cut_unix}",
        planned("sigterm"),
        planned("kill")
    );
    assert!(samples > 0, "no fence deadline for n1 during the partition");
    lab.heal_api(1);
    wait(
        "the cut-off and fence-stopping alerts resolved",
        Duration::from_secs(15),
        Box::new(|| {
            let firing = prometheus.firing();
            seen.extend(firing.clone());
            !firing.contains(&n1("NodewardenCutOff"))
                && !firing.contains(&n1("NodewardenFenceStopping"))
        }),
    );
    let end = now_unix();
    // Contact back: no deadline is shown.
    assert_eq!(
        prometheus
            .query(r#"nodewarden_fence_next_deadline_timestamp_seconds{node="n1"}"#)
            .expect("deadline query"),
        Vec::<Value>::new(),
        "a fence deadline shown after the partition"
    );

    // No other alert fired at any time: only n1's partition alerts (and those that depend on
    // the host: a lateness above 100 ms on a loaded machine, pressure of its real disk).
    let host_dependent = ["NodewardenFenceLate", "NodewardenPressure"];
    let ever = prometheus
        .query_range(r#"ALERTS{alertstate="firing"}"#, start, end)
        .expect("ALERTS");
    for series in &ever {
        let (alert, node) = (
            series["metric"]["alertname"].as_str().unwrap_or(""),
            series["metric"]["node"].as_str().unwrap_or(""),
        );
        let expected = node == "n1"
            && [
                "NodewardenCutOff",
                "NodewardenFenceStopping",
                "NodewardenFenceStoppedPods",
            ]
            .contains(&alert);
        assert!(
            expected || host_dependent.contains(&alert),
            "{alert} fired for {node:?}"
        );
    }

    // Every alert expression parses and answers, at the end and during the partition; the
    // partition's own return the node.
    for rule in rules_for_the_partition_test()["groups"][0]["rules"]
        .as_array()
        .expect("rules")
    {
        let (alert, expr) = (
            rule["alert"].as_str().unwrap_or(""),
            rule["expr"].as_str().unwrap_or(""),
        );
        let now = prometheus
            .query(expr)
            .unwrap_or_else(|e| panic!("{alert}: {expr}: {e}"));
        let then = prometheus
            .query_range(expr, during - 3.0, during)
            .unwrap_or_else(|e| panic!("{alert}: {expr}: {e}"));
        if [
            "NodewardenCutOff",
            "NodewardenFenceStopping",
            "NodewardenFenceStoppedPods",
        ]
        .contains(&alert)
        {
            assert!(
                then.iter().any(|s| s["metric"]["node"] == "n1"),
                "{alert} returned no series for n1 during the partition: {then:?}"
            );
        }
        if !host_dependent.contains(&alert) && alert != "NodewardenFenceStoppedPods" {
            assert!(
                now.is_empty(),
                "{alert} still returns {now:?} after the partition"
            );
        }
    }

    // Every dashboard query parses and returns series over the test's range, each carrying its
    // node where it is per node.
    for (title, expr) in dashboard_queries() {
        let series = prometheus
            .query_range(&expr, start, end)
            .unwrap_or_else(|e| panic!("dashboard {title}: {expr}: {e}"));
        if MAY_BE_EMPTY.iter().any(|(m, _)| expr.contains(m)) {
            continue;
        }
        assert!(
            !series.is_empty(),
            "dashboard {title}: {expr} returned nothing"
        );
        if expr.contains("{node=") && !expr.starts_with("sum(") {
            assert!(
                series.iter().all(|s| s["metric"]["node"].is_string()),
                "dashboard {title}: a series without node: {series:?}"
            );
        }
    }

    // Each connected agent's real /metrics: lint-clean, and the README lists exactly what they
    // export together.
    let mut exported = BTreeSet::new();
    for node in &lab.nodes {
        let (status, text) = http_get(node.health_addr().into(), "/metrics").expect("GET /metrics");
        assert_eq!(status, 200);
        assert_lint_clean(&text, &format!("{}'s connected /metrics", node.name));
        exported.extend(exported_families(&text));
    }
    assert_eq!(
        readme_metrics(),
        exported,
        "README's metrics table against what the connected agents export"
    );
    eprintln!(
        "monitoring e2e: partition {partitioned_for:?}, whole test {:?}",
        began.elapsed()
    );
    drop(prometheus);
    lab.reap();
}
