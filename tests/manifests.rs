//! The Kubernetes manifests in `packaging/kubernetes/` checked as a cluster would see them: each
//! file against the real API schemas (`kubernetes-validate`, strict), the kustomization through
//! real `kubectl kustomize`, RBAC against the exact list of requests the agent makes, the
//! ConfigMap's configuration through `nodewarden check-config`, and the DaemonSet's security and
//! wiring (the paths the configuration names are the paths the DaemonSet mounts).

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{agent_bin, require};

/// Kubernetes versions the manifests must validate against: 1.30 is the first with
/// `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy and the node-name token claim on
/// by default; 1.32 is the first where that claim is GA (always on); 1.33 is the API the agent
/// is built against (k8s-openapi `v1_33`).
const KUBERNETES_VERSIONS: [&str; 3] = ["1.30.0", "1.32.0", "1.33.0"];

const NAMESPACE: &str = "nodewarden";
const SERVICE_ACCOUNT: &str = "nodewarden";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/kubernetes")
}

/// Reads one manifest (one object per file) as JSON.
fn object(file: &str) -> Value {
    let path = dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parse {path:?}: {e}"))
}

/// The files the kustomization lists, in order.
fn resources() -> Vec<String> {
    let k = object("kustomization.yaml");
    k["resources"]
        .as_array()
        .expect("kustomization has resources")
        .iter()
        .map(|r| r.as_str().expect("resource is a path").to_string())
        .collect()
}

/// Runs `program args` with stdin closed, bounded by `limit`; returns (success, stdout, stderr).
fn run_bounded(program: &str, args: &[&str], limit: Duration) -> (bool, String, String) {
    let ran = support::command::run(Command::new(program).args(args), limit);
    (ran.ok, ran.stdout, ran.stderr)
}

fn tool_answers(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// (kind, namespace, name) of an object; namespace empty for cluster-scoped ones.
fn identity(o: &Value) -> (String, String, String) {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    (
        s(&o["kind"]),
        s(&o["metadata"]["namespace"]),
        s(&o["metadata"]["name"]),
    )
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().expect("a string").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_manifest_validates_against_the_kubernetes_schemas_in_strict_mode() {
    if !require(
        tool_answers("kubernetes-validate", &["--version"]),
        "kubernetes-validate (pip install kubernetes-validate; .ci/install-manifests.sh)",
    ) {
        return;
    }
    let files = resources();
    assert!(files.len() >= 15, "kustomization lists every object");
    let paths: Vec<String> = files
        .iter()
        .map(|f| dir().join(f).to_str().expect("utf-8 path").to_string())
        .collect();
    for version in KUBERNETES_VERSIONS {
        // One run per version over every file (a Python start-up per file costs seconds).
        let mut args = vec!["--strict", "--kubernetes-version", version];
        args.extend(paths.iter().map(String::as_str));
        let (ok, stdout, stderr) =
            run_bounded("kubernetes-validate", &args, Duration::from_secs(120));
        assert!(
            ok,
            "the manifests do not validate against Kubernetes {version}:\n{stdout}{stderr}"
        );
        // The tool passes a kind it has no schema for with a warning: each file must have
        // passed an actual schema.
        for (file, path) in files.iter().zip(&paths) {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.contains(path.as_str()) && l.contains(" passed ")),
                "{file} was not checked against a schema for {version}:\n{stdout}{stderr}"
            );
        }
    }
}

#[test]
fn strict_validation_rejects_a_field_the_schema_lacks() {
    // Proves the check above can fail: a misspelt field in the DaemonSet is an error.
    if !require(
        tool_answers("kubernetes-validate", &["--version"]),
        "kubernetes-validate (pip install kubernetes-validate; .ci/install-manifests.sh)",
    ) {
        return;
    }
    let text = std::fs::read_to_string(dir().join("daemonset.yaml")).expect("read daemonset");
    let broken = text.replacen("hostPID: true", "hostPID: true\n      hostPid: true", 1);
    assert_ne!(broken, text);
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("daemonset.yaml");
    std::fs::write(&path, broken).expect("write broken daemonset");
    let (ok, stdout, stderr) = run_bounded(
        "kubernetes-validate",
        &[
            "--strict",
            "--kubernetes-version",
            KUBERNETES_VERSIONS[1],
            path.to_str().expect("utf-8 path"),
        ],
        Duration::from_secs(120),
    );
    assert!(!ok, "a misspelt field passed:\n{stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("hostPid"),
        "{stdout}{stderr}"
    );
}

#[test]
fn kustomize_builds_and_emits_every_object_exactly_once() {
    if !require(
        support::kubectl::available(),
        "kubectl (with its built-in kustomize)",
    ) {
        return;
    }
    // Every manifest in the folder is listed, so none is left out of `kubectl apply -k`.
    let listed: BTreeSet<String> = resources().into_iter().collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(dir())
        .expect("read packaging/kubernetes")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .into_string()
                .expect("utf-8")
        })
        .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
        .collect();
    assert_eq!(listed, on_disk, "kustomization.yaml lists every manifest");

    let (ok, stdout, stderr) = run_bounded(
        "kubectl",
        &["kustomize", dir().to_str().expect("utf-8 path")],
        Duration::from_secs(60),
    );
    assert!(ok, "kubectl kustomize failed:\n{stderr}");
    let mut emitted = Vec::new();
    for doc in stdout.split("\n---\n") {
        if doc.trim().is_empty() {
            continue;
        }
        let o: Value = serde_saphyr::from_str(doc)
            .unwrap_or_else(|e| panic!("kustomize output does not parse: {e}\n{doc}"));
        emitted.push(identity(&o));
    }
    let expected: BTreeSet<_> = listed.iter().map(|f| identity(&object(f))).collect();
    let emitted_set: BTreeSet<_> = emitted.iter().cloned().collect();
    assert_eq!(emitted.len(), emitted_set.len(), "no object twice");
    assert_eq!(
        emitted_set, expected,
        "kustomize emits exactly the manifests"
    );
    // Nothing moved namespace: the Roles stay in kube-node-lease, default and nodewarden.
    for ns in ["kube-node-lease", "default", NAMESPACE] {
        assert!(
            emitted.iter().any(|(k, n, _)| k == "Role" && n == ns),
            "a Role in {ns}: {emitted:?}"
        );
    }
}

/// One permission: (namespace or "" for cluster-wide, apiGroup, resource, verb).
type Grant = (String, String, String, String);

fn grants_of(role: &Value) -> Vec<Grant> {
    let ns = role["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let mut out = Vec::new();
    for rule in role["rules"].as_array().expect("rules") {
        let text = rule.to_string();
        assert!(!text.contains('*'), "a wildcard in {ns:?} rule {rule}");
        assert!(
            rule.get("nonResourceURLs").is_none(),
            "non-resource URLs in {rule}"
        );
        for group in strs(&rule["apiGroups"]) {
            for resource in strs(&rule["resources"]) {
                for verb in strs(&rule["verbs"]) {
                    out.push((ns.clone(), group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    out
}

#[test]
fn rbac_grants_exactly_the_requests_the_agent_makes_and_no_wildcards() {
    let g = |ns: &str, group: &str, resource: &str, verb: &str| -> Grant {
        (ns.into(), group.into(), resource.into(), verb.into())
    };
    let expected: BTreeSet<Grant> = [
        g("", "", "nodes", "get"),
        g("", "", "nodes", "list"),
        g("", "", "nodes", "watch"),
        g("", "", "nodes", "patch"),
        g("", "", "nodes/status", "patch"),
        g("", "", "pods", "list"),
        g("", "", "pods", "watch"),
        g("default", "", "events", "create"),
        g("kube-node-lease", "coordination.k8s.io", "leases", "get"),
        g("kube-node-lease", "coordination.k8s.io", "leases", "create"),
        g("kube-node-lease", "coordination.k8s.io", "leases", "update"),
        g("kube-system", "coordination.k8s.io", "leases", "get"),
        g(NAMESPACE, "discovery.k8s.io", "endpointslices", "list"),
        g(NAMESPACE, "discovery.k8s.io", "endpointslices", "watch"),
    ]
    .into_iter()
    .collect();

    let mut granted: Vec<Grant> = Vec::new();
    let mut bound = BTreeSet::new();
    for file in resources() {
        let o = object(&file);
        match o["kind"].as_str() {
            Some("ClusterRole") => {
                assert!(o.get("aggregationRule").is_none(), "{file}: aggregation");
                granted.extend(grants_of(&o));
            }
            Some("Role") => granted.extend(grants_of(&o)),
            Some("ClusterRoleBinding") | Some("RoleBinding") => {
                let subjects = o["subjects"].as_array().expect("subjects");
                assert_eq!(subjects.len(), 1, "{file}: one subject");
                assert_eq!(subjects[0]["kind"], "ServiceAccount", "{file}");
                assert_eq!(subjects[0]["name"], SERVICE_ACCOUNT, "{file}");
                assert_eq!(subjects[0]["namespace"], NAMESPACE, "{file}");
                let ns = o["metadata"]["namespace"].as_str().unwrap_or("");
                let role_kind = o["roleRef"]["kind"].as_str().expect("roleRef.kind");
                // A RoleBinding to a ClusterRole would spread its grants to another scope.
                let expected_kind = if ns.is_empty() { "ClusterRole" } else { "Role" };
                assert_eq!(role_kind, expected_kind, "{file}");
                bound.insert((
                    ns.to_string(),
                    o["roleRef"]["name"].as_str().expect("name").to_string(),
                ));
            }
            _ => {}
        }
    }
    let granted_set: BTreeSet<Grant> = granted.iter().cloned().collect();
    assert_eq!(granted.len(), granted_set.len(), "no grant twice");
    let extra: Vec<_> = granted_set.difference(&expected).collect();
    let missing: Vec<_> = expected.difference(&granted_set).collect();
    assert!(
        extra.is_empty(),
        "granted beyond what the agent uses: {extra:?}"
    );
    assert!(missing.is_empty(), "the agent needs: {missing:?}");

    // Every Role and ClusterRole is bound (in its own namespace), and nothing else is.
    let roles: BTreeSet<(String, String)> = resources()
        .iter()
        .map(|f| object(f))
        .filter(|o| matches!(o["kind"].as_str(), Some("Role") | Some("ClusterRole")))
        .map(|o| {
            let (_, ns, name) = identity(&o);
            (ns, name)
        })
        .collect();
    assert_eq!(bound, roles, "each role bound once, in its namespace");
}

/// The configuration embedded in the ConfigMap.
fn embedded_config() -> String {
    let cm = object("configmap.yaml");
    cm["data"]["config.toml"]
        .as_str()
        .expect("ConfigMap data has config.toml")
        .to_string()
}

fn container() -> Value {
    let ds = object("daemonset.yaml");
    let containers = ds["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .clone();
    assert_eq!(containers.len(), 1, "one container");
    containers[0].clone()
}

fn mount_at(path: &str) -> Option<Value> {
    container()["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .find(|m| m["mountPath"] == path)
        .cloned()
}

#[test]
fn configmap_config_passes_check_config_and_matches_the_daemonset() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("config.toml");
    std::fs::write(&path, embedded_config()).expect("write config");
    let path = path.to_str().expect("utf-8 path");
    let output = Command::new(agent_bin())
        .args(["check-config", "-o", "json", path])
        .env("NODE_NAME", "worker-1")
        .env_remove("JOURNAL_STREAM")
        .output()
        .expect("run nodewarden check-config");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "check-config failed:\n{stderr}");
    // One warning is expected and true at the shipped (default) timings: with peers, the
    // quorum settles 30 s after the last contact, while a pod tolerating the unreachable taint
    // for 0 s is due at 27.6 s (40 s grace − 2 s margin − 10.4 s for the kubelet's Lease), so
    // pods tolerating less than 2.4 s may be stopped up to that much late. Nothing else.
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("warning")).collect();
    assert!(
        warnings
            .iter()
            .all(|w| w.contains("fence.nodeMonitorGracePeriod")
                && w.contains("the peer quorum is settled 30s")
                && w.contains("less than 2s400ms")),
        "check-config warns about the shipped configuration:\n{stderr}"
    );
    assert!(warnings.len() <= 1, "{stderr}");
    let effective: Value = serde_json::from_slice(&output.stdout).expect("check-config JSON");

    // In a pod: probes reach the pod IP, records go to stderr, the fence enforces (gated by the
    // peer quorum of [peers]).
    assert_eq!(effective["logging"]["target"], "stderr");
    assert_eq!(effective["fence"]["mode"], "enforce");
    assert!(
        effective["nodeName"].is_null(),
        "node name comes from NODE_NAME"
    );
    assert!(effective["kubeconfig"].is_null(), "in-cluster credentials");
    let health = effective["healthAddress"].as_str().expect("healthAddress");
    assert!(health.starts_with("0.0.0.0:"), "{health}");
    let port: u64 = health
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    let ports = container()["ports"].as_array().expect("ports").clone();
    assert!(
        ports
            .iter()
            .any(|p| p["name"] == "health" && p["containerPort"] == port),
        "the container's health port is the configured {port}: {ports:?}"
    );

    // Every path the agent reads or writes is a mount of the DaemonSet, with the right access.
    for (key, writable) in [
        ("procPath", false),
        ("cgroupPath", true),
        ("nodefsPath", false),
        ("imagefsPath", false),
        ("stateDirectory", true),
    ] {
        let p = effective[key].as_str().expect(key);
        let m = mount_at(p).unwrap_or_else(|| panic!("{key} {p} is not mounted"));
        assert_eq!(
            m["readOnly"].as_bool().unwrap_or(false),
            !writable,
            "{key} {p}: read-only unless the agent must write there"
        );
    }
    // The configuration is mounted where `run --config` looks for it.
    let args = strs(&container()["args"]);
    let config_at = args
        .iter()
        .position(|a| a == "--config")
        .and_then(|i| args.get(i + 1))
        .expect("--config in args");
    let config_dir = Path::new(config_at).parent().expect("config dir");
    let m = mount_at(config_dir.to_str().expect("utf-8")).expect("config mount");
    assert_eq!(m["readOnly"], true);
}

#[test]
fn daemonset_is_least_privilege_tolerates_everything_and_probes_health() {
    let ds = object("daemonset.yaml");
    let pod = &ds["spec"]["template"]["spec"];
    let c = container();

    assert_eq!(pod["hostPID"], true, "the fence needs host PIDs");
    assert!(pod.get("hostNetwork").is_none_or(|v| v == false));
    assert!(pod.get("hostIPC").is_none_or(|v| v == false));
    assert_eq!(pod["serviceAccountName"], SERVICE_ACCOUNT);
    assert_eq!(ds["metadata"]["namespace"], NAMESPACE);
    assert_eq!(pod["priorityClassName"], "system-node-critical");

    // No privileged container anywhere in the pod (init containers included).
    let text = pod.to_string();
    assert!(!text.contains("\"privileged\":true"), "privileged: {text}");
    let sc = &c["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(strs(&sc["capabilities"]["drop"]), ["ALL"]);
    assert_eq!(strs(&sc["capabilities"]["add"]), ["KILL"]);
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");

    let tolerations = pod["tolerations"].as_array().expect("tolerations");
    assert!(
        tolerations.iter().any(|t| t["operator"] == "Exists"
            && t.get("key").is_none()
            && t.get("effect").is_none()
            && t.get("tolerationSeconds").is_none()),
        "a toleration of every taint, forever: {tolerations:?}"
    );

    let env = c["env"].as_array().expect("env");
    let node_name = env
        .iter()
        .find(|e| e["name"] == "NODE_NAME")
        .expect("NODE_NAME");
    assert_eq!(
        node_name["valueFrom"]["fieldRef"]["fieldPath"],
        "spec.nodeName"
    );

    for (probe, path) in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")] {
        assert_eq!(c[probe]["httpGet"]["path"], path, "{probe}");
        assert_eq!(c[probe]["httpGet"]["port"], "health", "{probe}");
    }
    assert_eq!(c["terminationMessagePolicy"], "FallbackToLogsOnError");
    assert_eq!(c["image"], "nodewarden:0.1.0");

    let r = &c["resources"];
    assert_eq!(r["requests"]["cpu"], "10m");
    assert_eq!(r["requests"]["memory"], "32Mi");
    assert_eq!(r["limits"]["cpu"], "200m");
    assert_eq!(r["limits"]["memory"], "64Mi");

    // Host paths: only the state directory and the cgroup tree are writable.
    let volumes = pod["volumes"].as_array().expect("volumes");
    for m in c["volumeMounts"].as_array().expect("volumeMounts") {
        let v = volumes
            .iter()
            .find(|v| v["name"] == m["name"])
            .expect("mount has a volume");
        let Some(host) = v["hostPath"]["path"].as_str() else {
            continue;
        };
        let writable = !m["readOnly"].as_bool().unwrap_or(false);
        let may_write = matches!(host, "/var/lib/nodewarden" | "/sys/fs/cgroup");
        assert!(
            !writable || may_write,
            "host path {host} is mounted writable"
        );
    }
}

#[test]
fn admission_policy_limits_the_agent_and_only_the_agent_to_its_own_node() {
    // What can be checked without an API server: the wiring. The CEL itself is evaluated only
    // by a real API server (not done here).
    let sa = object("serviceaccount.yaml");
    let user = format!(
        "system:serviceaccount:{}:{}",
        sa["metadata"]["namespace"].as_str().expect("namespace"),
        sa["metadata"]["name"].as_str().expect("name")
    );
    let vap = object("validatingadmissionpolicy.yaml");
    let binding = object("validatingadmissionpolicybinding.yaml");
    assert_eq!(vap["apiVersion"], "admissionregistration.k8s.io/v1");
    assert_eq!(binding["spec"]["policyName"], vap["metadata"]["name"]);
    assert_eq!(strs(&binding["spec"]["validationActions"]), ["Deny"]);
    assert!(binding["spec"].get("paramRef").is_none());
    assert_eq!(vap["spec"]["failurePolicy"], "Fail");

    let rules = vap["spec"]["matchConstraints"]["resourceRules"]
        .as_array()
        .expect("resourceRules");
    let covered: BTreeSet<(String, String)> = rules
        .iter()
        .flat_map(|r| {
            let ops = strs(&r["operations"]);
            strs(&r["resources"])
                .into_iter()
                .flat_map(move |res| ops.clone().into_iter().map(move |op| (res.clone(), op)))
        })
        .collect();
    for resource in ["nodes", "nodes/status"] {
        assert!(
            covered.contains(&(resource.to_string(), "UPDATE".to_string())),
            "{resource} UPDATE (PATCH) is matched: {covered:?}"
        );
    }

    let conditions = vap["spec"]["matchConditions"]
        .as_array()
        .expect("matchConditions");
    assert_eq!(conditions.len(), 1);
    assert_eq!(
        conditions[0]["expression"],
        format!("request.userInfo.username == \"{user}\""),
        "scoped to the agent's ServiceAccount"
    );
    let all = vap["spec"].to_string();
    assert!(all.contains("authentication.kubernetes.io/node-name"));
    assert!(all.contains("object.metadata.name"));
}

/// The `[peers]` table names the Service of `service-peers.yaml`, whose port of `portName`
/// targets the container port of that name, which is the port `listen` binds; `keyFile` is the
/// key of the Secret volume mounted read-only where it points. (Read as plain TOML, so this holds
/// whatever `check-config` makes of the other keys.)
#[test]
fn peers_config_matches_the_service_the_container_port_and_the_key_secret() {
    let config: toml::Table = toml::from_str(&embedded_config()).expect("config.toml is TOML");
    let peers = config
        .get("peers")
        .and_then(toml::Value::as_table)
        .expect("a [peers] table");
    let text = |key: &str| peers.get(key).and_then(toml::Value::as_str);

    let svc = object("service-peers.yaml");
    let service = format!(
        "{}/{}",
        svc["metadata"]["namespace"].as_str().expect("namespace"),
        svc["metadata"]["name"].as_str().expect("name")
    );
    assert_eq!(text("service"), Some(service.as_str()));
    assert_eq!(
        svc["spec"]["clusterIP"], "None",
        "headless: one endpoint per agent"
    );
    assert_eq!(svc["spec"]["publishNotReadyAddresses"], true);

    let port_name = text("portName").unwrap_or("peer");
    let listen: std::net::SocketAddr = text("listen")
        .expect("listen")
        .parse()
        .expect("listen is an address");
    assert!(
        listen.ip().is_unspecified(),
        "peers reach the pod IP: {listen}"
    );
    let svc_port = svc["spec"]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == port_name)
        .unwrap_or_else(|| panic!("the Service has a port {port_name:?}"))
        .clone();
    assert_eq!(svc_port["targetPort"], port_name);
    let container_port = container()["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == port_name)
        .unwrap_or_else(|| panic!("the container has a port {port_name:?}"))
        .clone();
    assert_eq!(container_port["containerPort"], u64::from(listen.port()));

    let key_file = Path::new(text("keyFile").expect("keyFile"));
    let key_dir = key_file.parent().expect("keyFile in a directory");
    let mount = mount_at(key_dir.to_str().expect("utf-8")).expect("the key directory is mounted");
    assert_eq!(mount["readOnly"], true);
    let ds = object("daemonset.yaml");
    let volume = ds["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the mount has a volume")
        .clone();
    assert_eq!(volume["secret"]["secretName"], "nodewarden-peer-key");
    let items = volume["secret"]["items"].as_array().expect("items");
    assert!(
        items.iter().any(|i| i["key"] == "key"
            && Some(i["path"].as_str().unwrap_or(""))
                == key_file.file_name().and_then(|f| f.to_str())),
        "the Secret's key `key` is the file keyFile names: {items:?}"
    );
    // Readable by its owner only.
    assert_eq!(volume["secret"]["defaultMode"], 0o400);
}
