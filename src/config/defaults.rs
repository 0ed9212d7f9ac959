//! Built-in defaults (docs/architecture.md §5, docs/semantics.md §6.1, §6.3, §7.3): what an empty
//! file gives.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::core::signal::{Signal, SignalRef};
use crate::core::taint::Effect;
use crate::core::threshold::{EvictionInput, parse_thresholds};

use super::{ConditionSpec, Config, LogTarget, LoggingConfig, TaintSpec};

/// `nodeStatusUpdateFrequency` (docs/semantics.md §6.1).
pub const NODE_STATUS_UPDATE_FREQUENCY: Duration = Duration::from_secs(10);
/// `nodeStatusReportFrequency`: 1m, our own default (docs/architecture.md §5), not the kubelet's
/// 5m, and it does not follow `nodeStatusUpdateFrequency` when that is set.
pub const NODE_STATUS_REPORT_FREQUENCY: Duration = Duration::from_secs(60);
/// `nodeLeaseDurationSeconds` (docs/semantics.md §6.1).
pub const NODE_LEASE_DURATION_SECONDS: u32 = 40;
/// `evictionPressureTransitionPeriod` (docs/semantics.md §6.1).
pub const EVICTION_PRESSURE_TRANSITION_PERIOD: Duration = Duration::from_secs(300);
pub const PROC_PATH: &str = "/proc";
pub const CGROUP_PATH: &str = "/sys/fs/cgroup";
pub const NODEFS_PATH: &str = "/var/lib/kubelet";
pub const IMAGEFS_PATH: &str = "/var/lib/containerd";
pub const STATE_DIRECTORY: &str = "/var/lib/nodewarden";
/// `healthAddress`: loopback only by default (docs/architecture.md §7).
pub const HEALTH_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9842);

/// The kubelet's reasons and messages for a standard condition (docs/semantics.md §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandardReasons {
    pub true_reason: &'static str,
    pub true_message: &'static str,
    pub false_reason: &'static str,
    pub false_message: &'static str,
}

/// Reasons and messages for MemoryPressure, DiskPressure and PIDPressure; `None` for other types.
pub fn standard_reasons(condition_type: &str) -> Option<StandardReasons> {
    match condition_type {
        "MemoryPressure" => Some(StandardReasons {
            true_reason: "KubeletHasInsufficientMemory",
            true_message: "kubelet has insufficient memory available",
            false_reason: "KubeletHasSufficientMemory",
            false_message: "kubelet has sufficient memory available",
        }),
        "DiskPressure" => Some(StandardReasons {
            true_reason: "KubeletHasDiskPressure",
            true_message: "kubelet has disk pressure",
            false_reason: "KubeletHasNoDiskPressure",
            false_message: "kubelet has no disk pressure",
        }),
        "PIDPressure" => Some(StandardReasons {
            true_reason: "KubeletHasInsufficientPID",
            true_message: "kubelet has insufficient PID available",
            false_reason: "KubeletHasSufficientPID",
            false_message: "kubelet has sufficient PID available",
        }),
        _ => None,
    }
}

fn standard_condition(condition_type: &str, signals: &[Signal], taint_key: &str) -> ConditionSpec {
    let reasons = standard_reasons(condition_type);
    let text =
        |pick: fn(&StandardReasons) -> &'static str| reasons.as_ref().map(pick).unwrap_or_default();
    ConditionSpec {
        condition_type: condition_type.to_string(),
        signals: signals.iter().copied().map(SignalRef::Eviction).collect(),
        true_reason: text(|r| r.true_reason).to_string(),
        true_message: text(|r| r.true_message).to_string(),
        false_reason: text(|r| r.false_reason).to_string(),
        false_message: text(|r| r.false_message).to_string(),
        taint: Some(TaintSpec {
            key: taint_key.to_string(),
            effect: Effect::NoSchedule,
        }),
    }
}

/// The conditions used when `[[conditions]]` is absent: the kubelet's three pressure conditions
/// fed by their signals (docs/semantics.md §7.1), each mapped to its well-known NoSchedule taint.
pub fn standard_conditions() -> Vec<ConditionSpec> {
    vec![
        standard_condition(
            "MemoryPressure",
            &[Signal::MemoryAvailable],
            "node.kubernetes.io/memory-pressure",
        ),
        standard_condition(
            "DiskPressure",
            &[
                Signal::NodeFsAvailable,
                Signal::NodeFsInodesFree,
                Signal::ImageFsAvailable,
                Signal::ImageFsInodesFree,
            ],
            "node.kubernetes.io/disk-pressure",
        ),
        standard_condition(
            "PIDPressure",
            &[Signal::PidAvailable],
            "node.kubernetes.io/pid-pressure",
        ),
    ]
}

impl Config {
    /// The configuration an empty file gives.
    pub fn defaults() -> Config {
        Config {
            source: None,
            node_name: None,
            kubeconfig: None,
            fence: super::FenceConfig {
                mode: crate::core::fence_plan::Mode::Enforce,
                node_monitor_grace_period: Duration::from_secs(40),
                node_monitor_period: Duration::from_secs(5),
                unreachable_after: Duration::from_secs(15),
                safety_margin: Duration::from_secs(2),
                grace_period_cap: Duration::from_secs(30),
                cgroup_driver: None,
                cgroup_version: None,
                cgroup_root: None,
                kubelet_server: None,
                controller_manager_lease: Some((
                    "kube-system".to_string(),
                    "kube-controller-manager".to_string(),
                )),
            },
            peers: super::PeersConfig {
                service: None,
                port_name: "peer".to_string(),
                static_peers: Vec::new(),
                listen: None,
                key_file: None,
                ask: 50,
                timeout: Duration::from_secs(1),
                interval: Duration::from_secs(3),
                without_peers: super::Undecided::Hold,
                whole_zone_cut_off: super::Undecided::Enforce,
            },
            lease_name: None,
            lease_namespace: "kube-node-lease".to_string(),
            only_status_reporter: false,
            standalone: false,
            node_status_update_frequency: NODE_STATUS_UPDATE_FREQUENCY,
            node_status_report_frequency: NODE_STATUS_REPORT_FREQUENCY,
            node_lease_duration_seconds: NODE_LEASE_DURATION_SECONDS,
            eviction_pressure_transition_period: EVICTION_PRESSURE_TRANSITION_PERIOD,
            merge_default_eviction_settings: false,
            // The Linux defaults always parse; an empty list would only hide a bug in them.
            thresholds: parse_thresholds(&EvictionInput::default())
                .map(|p| p.thresholds)
                .unwrap_or_default(),
            psi_thresholds: Vec::new(),
            kube_reserved: Default::default(),
            system_reserved: Default::default(),
            reserved_system_cpus: None,
            proc_path: PathBuf::from(PROC_PATH),
            cgroup_path: PathBuf::from(CGROUP_PATH),
            nodefs_path: PathBuf::from(NODEFS_PATH),
            imagefs_path: PathBuf::from(IMAGEFS_PATH),
            conditions: standard_conditions(),
            logging: LoggingConfig {
                target: LogTarget::Auto,
                level: log::LevelFilter::Info,
            },
            health_address: HEALTH_ADDRESS,
            state_directory: PathBuf::from(STATE_DIRECTORY),
            feature_gates: crate::core::features::FeatureGates::default(),
        }
    }
}
