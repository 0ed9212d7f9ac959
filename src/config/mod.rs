//! The configuration file: a KubeletConfiguration-like TOML document (docs/architecture.md §5), its
//! defaults, and validation that reports every error at once with file, line, column and key.
//!
//! serde reads the file into raw structs whose values keep their positions and accept any type
//! (`raw.rs`); one pass then checks every key and translates it, so that every error is reported
//! at once, each with its position (`load.rs`). Defaults live in `defaults.rs`; the effective
//! configuration as JSON and text in `json.rs`.
//!
//! Warnings (accepted but probably not meant: an ignored `containerfs.*` threshold, a threshold
//! that feeds no condition, a condition that can never be True) come back beside the
//! configuration from [`load_with_warnings`] / [`from_str_with_warnings`]; [`load`] and
//! [`from_str`] drop them.

mod defaults;
mod json;
mod load;
mod raw;

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::core::threshold::{PsiThreshold, Threshold};

// The condition and taint specs are core types (the pure core takes plain values and never
// imports the configuration); re-exported so the shell keeps naming them from here.
pub use crate::core::condition::{ConditionSpec, TaintSpec};
pub use defaults::{StandardReasons, standard_conditions, standard_reasons};
pub use json::{effective_json, effective_text};

/// One problem in a configuration file. `line` and `column` are 1-based; both are 0 when the
/// problem has no position (an unreadable file, or a default that conflicts with the file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", format_located(file, *line, *column, key, message))]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// Dotted path of the key, e.g. `evictionHard."memory.available"` or
    /// `conditions[1].taintEffect` (0-based index); empty for TOML syntax errors and I/O errors.
    pub key: String,
    /// What is wrong and what was expected.
    pub message: String,
}

/// Something accepted but probably not meant; same fields and format as [`ConfigError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigWarning {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_located(
            &self.file,
            self.line,
            self.column,
            &self.key,
            &self.message,
        ))
    }
}

/// `<file>:<line>:<column>: <key>: <message>`, leaving out the position when there is none and
/// the key when it is empty.
fn format_located(file: &str, line: usize, column: usize, key: &str, message: &str) -> String {
    let position = if line == 0 {
        String::new()
    } else {
        format!(":{line}:{column}")
    };
    let key = if key.is_empty() {
        String::new()
    } else {
        format!(" {key}:")
    };
    format!("{file}{position}:{key} {message}")
}

/// Every problem found in a configuration file, in file order. Displays one per line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// A loaded configuration and the warnings found while loading it.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<ConfigWarning>,
    /// What is worth knowing about the built-in defaults but is no one's mistake (a warning
    /// names something the user wrote); `check-config` prints these as `info:`.
    pub notes: Vec<ConfigWarning>,
}

/// Reads and validates a configuration file.
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    load_with_warnings(path).map(|l| l.config)
}

/// Reads and validates a configuration file, keeping the warnings.
pub fn load_with_warnings(path: &Path) -> Result<Loaded, ConfigErrors> {
    let error = |line, column, message| {
        Err(ConfigErrors(vec![ConfigError {
            file: path.display().to_string(),
            line,
            column,
            key: String::new(),
            message,
        }]))
    };
    let bytes = match crate::bounded::read(path, crate::bounded::CONFIG) {
        Ok(bytes) => bytes,
        Err(e) => return error(0, 0, format!("cannot read the configuration file: {e}")),
    };
    match String::from_utf8(bytes) {
        Ok(text) => load::load_text(&text, Some(path)),
        Err(e) => {
            // Where the first byte that is not UTF-8 is, as line and character column.
            let bytes = e.as_bytes();
            let at = e.utf8_error().valid_up_to();
            let valid = String::from_utf8_lossy(&bytes[..at]);
            let line = valid.matches('\n').count() + 1;
            let column = valid.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            error(
                line,
                column,
                format!(
                    "not UTF-8 text: an invalid byte sequence starts here (0x{:02x})",
                    bytes[at]
                ),
            )
        }
    }
}

/// Validates configuration text. `source` is the file it came from, used in errors (which say
/// `<config>` when it is `None`) and kept as `Config::source`.
pub fn from_str(text: &str, source: Option<&Path>) -> Result<Config, ConfigErrors> {
    from_str_with_warnings(text, source).map(|l| l.config)
}

/// Validates configuration text, keeping the warnings.
pub fn from_str_with_warnings(text: &str, source: Option<&Path>) -> Result<Loaded, ConfigErrors> {
    load::load_text(text, source)
}

/// The effective configuration, defaults filled in and validated.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The file it was read from; `None` for built-in defaults.
    pub source: Option<PathBuf>,
    /// `nodeName`; `None` means `NODE_NAME` or the host name.
    pub node_name: Option<String>,
    /// `kubeconfig`; `None` (and not in a cluster) means standalone.
    pub kubeconfig: Option<PathBuf>,
    /// `standalone`: never talk to an API server even if credentials exist.
    pub standalone: bool,
    /// `nodeStatusUpdateFrequency` (10s): how often signals are sampled and status computed.
    pub node_status_update_frequency: Duration,
    /// `nodeStatusReportFrequency` (1m): how often an unchanged status is reported/summarised.
    pub node_status_report_frequency: Duration,
    /// `nodeLeaseDurationSeconds` (40).
    pub node_lease_duration_seconds: u32,
    /// `leaseName` ("nodewarden-<node name>"): our own heartbeat Lease.
    pub lease_name: Option<String>,
    /// `leaseNamespace` ("kube-node-lease").
    pub lease_namespace: String,
    /// `onlyStatusReporter` (false): no kubelet runs on this node, so the agent may renew the
    /// node's own Lease (`kube-node-lease/<node>`) if `leaseName` names it.
    pub only_status_reporter: bool,
    /// `evictionPressureTransitionPeriod` (5m).
    pub eviction_pressure_transition_period: Duration,
    /// `mergeDefaultEvictionSettings` (false).
    pub merge_default_eviction_settings: bool,
    /// Effective eviction thresholds after defaults, hard ones first, in signal order.
    pub thresholds: Vec<Threshold>,
    /// `[psiThresholds]`.
    pub psi_thresholds: Vec<PsiThreshold>,
    /// `[kubeReserved]` (empty): resource → amount set aside for Kubernetes daemons (kubelet,
    /// runtime); one of cpu, memory, ephemeral-storage, pid.
    pub kube_reserved: crate::core::resources::ResourceList,
    /// `[systemReserved]` (empty): the same for the OS's daemons (sshd, udev, the kernel).
    pub system_reserved: crate::core::resources::ResourceList,
    /// `reservedSystemCPUs` (unset): an explicit CPU list for the system and Kubernetes
    /// daemons; when set, it replaces the cpu of both reservations.
    pub reserved_system_cpus: Option<ReservedCpus>,
    /// `procPath` ("/proc").
    pub proc_path: PathBuf,
    /// `cgroupPath` ("/sys/fs/cgroup").
    pub cgroup_path: PathBuf,
    /// `nodefsPath` ("/var/lib/kubelet").
    pub nodefs_path: PathBuf,
    /// `imagefsPath` ("/var/lib/containerd").
    pub imagefs_path: PathBuf,
    /// `[[conditions]]`: the conditions we own. Default: MemoryPressure, DiskPressure, PIDPressure.
    pub conditions: Vec<ConditionSpec>,
    /// `[logging]`.
    pub logging: LoggingConfig,
    /// `[fence]`.
    pub fence: FenceConfig,
    /// `[peers]`.
    pub peers: PeersConfig,
    /// `healthAddress` ("127.0.0.1:9842"): `/healthz`, `/readyz`, `/metrics`.
    pub health_address: SocketAddr,
    /// `stateDirectory` ("/var/lib/nodewarden").
    pub state_directory: PathBuf,
    /// `featureGates` (KubeletConfiguration's `map[string]bool`): the upstream switches that
    /// choose which Kubernetes rule is mirrored; see `core::features::KNOWN`.
    pub feature_gates: crate::core::features::FeatureGates,
}

/// `reservedSystemCPUs`: the CPU list as written (`"0-1,8"`) and how many CPUs it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservedCpus {
    pub list: String,
    pub count: u32,
}

/// The fence policy the `[fence]` table asks for: the configuration is translated to the core's
/// plain values here, at the edge, so the pure core never imports the configuration.
impl From<&Config> for crate::core::fence_plan::FencePolicy {
    fn from(config: &Config) -> Self {
        let fence = &config.fence;
        crate::core::fence_plan::FencePolicy {
            node_monitor_grace_period: fence.node_monitor_grace_period,
            node_monitor_period: fence.node_monitor_period,
            safety_margin: fence.safety_margin,
            grace_cap: fence.grace_period_cap,
            mode: fence.mode,
            kubelet_lag: crate::core::fence_plan::kubelet_lag(
                std::time::Duration::from_secs(u64::from(config.node_lease_duration_seconds)),
                config.renews_node_lease(),
            ),
        }
    }
}

/// kube-controller-manager's `--node-monitor-grace-period` default since 1.32
/// (kubernetes/kubernetes#126287, "increased to 50s (earlier 40s)"; docs/semantics.md §5.1).
pub const CONTROLLER_GRACE_PERIOD_SINCE_1_32: Duration = Duration::from_secs(50);
/// The same default before 1.32, and ours (`[fence] nodeMonitorGracePeriod`).
pub const CONTROLLER_GRACE_PERIOD_BEFORE_1_32: Duration = Duration::from_secs(40);

/// What `check-config` and `status` say about the grace period the fence mirrors: which value,
/// what a cluster at either upstream default does instead, how to set it, and when the fence
/// must be off (no taint-eviction controller, KEP-3902).
pub fn grace_period_note(mirrored: Duration) -> String {
    let secs = mirrored.as_secs();
    let (new, old) = (
        CONTROLLER_GRACE_PERIOD_SINCE_1_32.as_secs(),
        CONTROLLER_GRACE_PERIOD_BEFORE_1_32.as_secs(),
    );
    let versus = if mirrored == CONTROLLER_GRACE_PERIOD_BEFORE_1_32 {
        format!(
            "the fence mirrors {secs}s, the controller's default before 1.32; a 1.32+ cluster at its \
             default ({new}s, kubernetes/kubernetes#126287) evicts {}s later, so the fence stops pods \
             that much early there (never late)",
            new - old
        )
    } else if mirrored == CONTROLLER_GRACE_PERIOD_SINCE_1_32 {
        format!(
            "the fence mirrors {secs}s, the controller's default since 1.32; a cluster before 1.32 at \
             its default ({old}s) evicts {}s EARLIER than the fence plans",
            new - old
        )
    } else {
        format!(
            "the fence mirrors {secs}s (the controller's default is {new}s since 1.32, {old}s before)"
        )
    };
    format!(
        "{versus}. Set [fence] nodeMonitorGracePeriod to the cluster's \
         --node-monitor-grace-period to mirror it. If the taint-eviction controller is disabled or \
         replaced (--controllers=-taint-eviction-controller, KEP-3902), nothing deletes pods for \
         the unreachable taint: set [fence] mode = \"off\"."
    )
}

impl Config {
    /// Whether this agent renews the node's own Lease (`kube-node-lease/<node>`): only with
    /// `onlyStatusReporter`, when no kubelet runs here and `leaseName` names that Lease.
    pub fn renews_node_lease(&self) -> bool {
        self.only_status_reporter
            && self.lease_namespace == "kube-node-lease"
            && self.lease_name.is_some()
            && self.lease_name == self.node_name
    }

    /// Every API request's timeout, by the kubelet's rule for its heartbeat client:
    /// min(`nodeStatusUpdateFrequency`, Lease duration), so a hung request never outlives a
    /// status period or the Lease it is renewing.
    pub fn request_timeout(&self) -> std::time::Duration {
        let lease = std::time::Duration::from_secs(u64::from(self.node_lease_duration_seconds));
        self.node_status_update_frequency.min(lease)
    }
}

/// Where log records go (`[logging] target`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogTarget {
    /// journald when stderr is connected to the journal (`$JOURNAL_STREAM`), stderr otherwise.
    Auto,
    /// Always journald.
    Journald,
    /// Always stderr.
    Stderr,
}

/// `[logging]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggingConfig {
    /// `target` ("auto").
    pub target: LogTarget,
    /// `level` ("info").
    pub level: log::LevelFilter,
}

/// `[fence]`: local NoExecute honoring while the control plane is unreachable (docs/fence.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FenceConfig {
    /// `mode` ("dry-run"): `enforce`, `dry-run` or `off`. Enforcement is opted into until peer
    /// quorum exists.
    pub mode: crate::core::fence_plan::Mode,
    /// `nodeMonitorGracePeriod` ("40s"): the control plane's setting the fence mirrors; 40s, the
    /// smaller historical default, so a fence is never late.
    pub node_monitor_grace_period: std::time::Duration,
    /// `nodeMonitorPeriod` ("5s"): the control plane's `node-monitor-period`. The controller
    /// queues a node for the unreachable taint one such period after the pass that wrote its
    /// Ready Unknown, so the fence counts the taint that much later; "0s" counts it from the
    /// write (never late, whatever the controller's period).
    pub node_monitor_period: std::time::Duration,
    /// `unreachableAfter` ("15s"): no answer from the API server for this long means cut off.
    /// Must exceed the Lease renew interval (`nodeLeaseDurationSeconds / 4`), since renewals are
    /// what proves contact while nothing else is written.
    pub unreachable_after: std::time::Duration,
    /// `safetyMargin` ("2s"): pods are stopped this much before their eviction time.
    pub safety_margin: std::time::Duration,
    /// `gracePeriodCap` ("30s"): the most SIGTERM grace a pod gets.
    pub grace_period_cap: std::time::Duration,
    /// `cgroupDriver` ("auto").
    pub cgroup_driver: Option<crate::core::qos::CgroupDriver>,
    /// `cgroupVersion` ("auto").
    pub cgroup_version: Option<crate::core::qos::CgroupVersion>,
    /// `cgroupRoot` (unset: `cgroupPath`): where the pods' cgroups are looked for.
    pub cgroup_root: Option<std::path::PathBuf>,
    /// `kubeletServer` (unset: the agent's own server): the API server's URL as this node's
    /// kubelet reaches it, `scheme://host[:port]`. While the agent's own requests fail, each round
    /// of the quorum reads its `/readyz` with the agent's own credentials (docs/fence.md §5, *The
    /// kubelet's path probed*).
    pub kubelet_server: Option<String>,
    /// `controllerManagerLease` ("kube-system/kube-controller-manager"; "" reads none): the
    /// kube-controller-manager's leader Lease, read while connected and at once when contact
    /// returns. A read that shows its holder lapsed, no holder, or a new one bounds when the taint
    /// eviction controller's timers count from (`core::leader`, docs/fence.md §7, *The
    /// controller-manager's Lease*).
    pub controller_manager_lease: Option<(String, String)>,
}

pub use crate::core::quorum::Undecided;

/// `[peers]`: the other agents the fence asks before it stops anything (docs/fence.md §5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeersConfig {
    /// `service` (unset): `namespace/name` of the headless Service whose EndpointSlices list the
    /// agents (the DaemonSet install). Exclusive with `static`.
    pub service: Option<(String, String)>,
    /// `portName` ("peer"): the EndpointSlice port that is the peer endpoint.
    pub port_name: String,
    /// `static` ([]): `{ node, address, zone }` tables (systemd installs).
    pub static_peers: Vec<crate::core::quorum::Peer>,
    /// `listen` (unset: no endpoint): where this agent answers its peers.
    pub listen: Option<SocketAddr>,
    /// `keyFile` (unset): the shared HMAC key; required once `listen`, `service` or `static` is set.
    pub key_file: Option<std::path::PathBuf>,
    /// `ask` (50): at most this many peers of this node's zone are asked per round; 50 is the
    /// controller's large-cluster threshold, above which a zone's partial disruption still evicts.
    pub ask: usize,
    /// `timeout` ("1s"): how long one round waits for answers.
    pub timeout: std::time::Duration,
    /// `interval` ("3s"): how often the verdict is re-evaluated while cut off.
    pub interval: std::time::Duration,
    /// `withoutPeers` ("hold"): the verdict when no peer is known at all.
    pub without_peers: Undecided,
    /// `wholeZoneCutOff` ("enforce"): the verdict when every node of this zone is cut off and no
    /// other zone is known to be down too.
    pub whole_zone_cut_off: Undecided,
}
