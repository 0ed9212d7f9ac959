//! The configuration file: a KubeletConfiguration-like TOML document (DESIGN §4), its defaults,
//! and validation that reports every error at once with file, line, column and key.
//!
//! Loading (helper A) walks a spanned TOML tree (`toml::de::DeTable`) instead of serde structs so
//! that every error can be reported with its position, all at once.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::core::signal::SignalRef;
use crate::core::taint::Effect;
use crate::core::threshold::{PsiThreshold, Threshold};

/// The effective configuration, defaults filled in and validated.
#[derive(Clone, Debug)]
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
    /// `evictionPressureTransitionPeriod` (5m).
    pub eviction_pressure_transition_period: Duration,
    /// `mergeDefaultEvictionSettings` (false).
    pub merge_default_eviction_settings: bool,
    /// Effective eviction thresholds after defaults, hard ones first, in signal order.
    pub thresholds: Vec<Threshold>,
    /// `[psiThresholds]`.
    pub psi_thresholds: Vec<PsiThreshold>,
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
    /// `healthAddress` ("127.0.0.1:9842"): `/healthz`, `/readyz`, `/metrics`.
    pub health_address: SocketAddr,
    /// `stateDirectory` ("/var/lib/nodewarden").
    pub state_directory: PathBuf,
}

/// A condition we own: its type, the signals that feed it, its reasons and messages, its taint.
#[derive(Clone, Debug, PartialEq)]
pub struct ConditionSpec {
    pub condition_type: String,
    pub signals: Vec<SignalRef>,
    pub true_reason: String,
    pub true_message: String,
    pub false_reason: String,
    pub false_message: String,
    pub taint: Option<TaintSpec>,
}

/// The taint a condition maps to while it is True.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaintSpec {
    pub key: String,
    pub effect: Effect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogTarget {
    /// journald when stderr is connected to the journal (`$JOURNAL_STREAM`), stderr otherwise.
    Auto,
    Journald,
    Stderr,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggingConfig {
    /// `target` ("auto").
    pub target: LogTarget,
    /// `level` ("info").
    pub level: log::LevelFilter,
}
