//! QoS class (docs/semantics.md §11) and pod cgroup names (§12). Pure.
//!
//! Resource amounts come in already parsed (any fixed unit; the explain shell uses nano-units),
//! so this module does not depend on the quantity parser.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A pod's QoS class (`status.qosClass`). Kept in the state file as part of a
/// `fence_plan::FencePod` (which says why serde is here), spelled as [`QosClass::as_str`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum QosClass {
    /// Every container has equal, non-zero cpu and memory requests and limits.
    Guaranteed,
    /// Anything between.
    Burstable,
    /// No cpu or memory requests or limits anywhere.
    BestEffort,
}

impl QosClass {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }

    /// Exact, case-sensitive, as the API spells `status.qosClass`.
    pub fn parse(s: &str) -> Option<QosClass> {
        match s {
            "Guaranteed" => Some(QosClass::Guaranteed),
            "Burstable" => Some(QosClass::Burstable),
            "BestEffort" => Some(QosClass::BestEffort),
            _ => None,
        }
    }
}

impl fmt::Display for QosClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The cpu and memory entries of one resource map. Only these two matter for QoS (§11 step 4:
/// hugepages, ephemeral-storage and extended resources are ignored). A missing entry is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuMemory {
    /// `cpu`, in a fixed unit (e.g. nano-cores).
    pub cpu: i128,
    /// `memory`, in a fixed unit (e.g. nano-bytes).
    pub memory: i128,
}

/// The `resources` of one container (or the pod-level `spec.resources`), cpu and memory only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainerResources {
    /// `requests`.
    pub requests: CpuMemory,
    /// `limits`.
    pub limits: CpuMemory,
}

/// Classification of one resource within one container.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ResourceClass {
    BestEffort,
    Guaranteed,
    Burstable,
}

fn resource_class(request: i128, limit: i128) -> ResourceClass {
    // Upstream only counts quantities > 0 (`Cmp(zero) == 1`), so a negative amount is as good
    // as absent; API validation rejects negatives anyway.
    let (request, limit) = (request.max(0), limit.max(0));
    if request != limit {
        ResourceClass::Burstable
    } else if request == 0 {
        ResourceClass::BestEffort
    } else {
        ResourceClass::Guaranteed
    }
}

/// The QoS class of one container (or of pod-level resources), docs/semantics.md §11 step 4: for
/// cpu and memory, request ≠ limit → Burstable; both 0 → best-effort, else guaranteed; cpu and
/// memory disagreeing → Burstable.
pub fn container_qos(resources: &ContainerResources) -> QosClass {
    let cpu = resource_class(resources.requests.cpu, resources.limits.cpu);
    let memory = resource_class(resources.requests.memory, resources.limits.memory);
    match (cpu, memory) {
        (ResourceClass::BestEffort, ResourceClass::BestEffort) => QosClass::BestEffort,
        (ResourceClass::Guaranteed, ResourceClass::Guaranteed) => QosClass::Guaranteed,
        _ => QosClass::Burstable,
    }
}

/// The pod's QoS class from its init and app containers, docs/semantics.md §11 step 3: classify
/// each container, then any Burstable → Burstable, all BestEffort → BestEffort, all Guaranteed →
/// Guaranteed, a mix of BestEffort and Guaranteed → Burstable. No containers → BestEffort.
///
/// Callers should prefer `status.qosClass` when present (§11 step 1, step 5: the raw spec is
/// pre-defaulting) and use [`container_qos`] on pod-level `spec.resources` when set (step 2).
pub fn compute_qos(containers: &[ContainerResources]) -> QosClass {
    let mut classes = containers.iter().map(container_qos);
    let Some(first) = classes.next() else {
        return QosClass::BestEffort;
    };
    classes.fold(
        first,
        |acc, c| if acc == c { acc } else { QosClass::Burstable },
    )
}

/// The kubelet's abstract cgroup name for a pod (docs/semantics.md §12.1), `cgroupsPerQOS: true`:
/// Guaranteed pods sit directly under `kubepods`, the others under a per-class parent.
/// `pod<UID>` keeps the UID's hyphens; the systemd conversion escapes them.
pub fn pod_cgroup_name(uid: &str, qos: QosClass) -> Vec<String> {
    let pod = format!("pod{uid}");
    match qos {
        QosClass::Guaranteed => vec!["kubepods".into(), pod],
        QosClass::Burstable => vec!["kubepods".into(), "burstable".into(), pod],
        QosClass::BestEffort => vec!["kubepods".into(), "besteffort".into(), pod],
    }
}

/// The cgroupfs driver's path (§12.2, `ToCgroupfs`): `/` + components joined with `/`.
pub fn to_cgroupfs(components: &[String]) -> String {
    format!("/{}", components.join("/"))
}

/// The systemd driver's path (§12.3, `ToSystemd` + `ExpandSlice`): escape `-` to `_` in every
/// component, then each prefix of the dash-joined name becomes one nested `.slice`. No
/// components → `/`.
///
/// Because every component is escaped first, joining with `-` and splitting again (what
/// upstream's `ExpandSlice` does) gives back the same components, so we nest them directly.
/// Upstream panics on an empty component (ExpandSlice rejects `a--b`); we skip empty components
/// instead of panicking, and explain rejects an empty UID before getting here.
pub fn to_systemd(components: &[String]) -> String {
    let escaped: Vec<String> = components
        .iter()
        .filter(|c| !c.is_empty())
        .map(|c| c.replace('-', "_"))
        .collect();
    if escaped.is_empty() {
        return "/".into();
    }
    let mut path = String::new();
    for depth in 1..=escaped.len() {
        let prefix = escaped.get(..depth).unwrap_or_default();
        path.push('/');
        path.push_str(&prefix.join("-"));
        path.push_str(".slice");
    }
    path
}

/// The cgroup version the kubelet's pods are managed under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CgroupVersion {
    /// One hierarchy per controller (or group of controllers), each mounted under the root.
    V1,
    /// The unified hierarchy mounted at the root.
    V2,
}

/// The kubelet's `cgroupDriver`, which decides how pod cgroups are named (docs/semantics.md §12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CgroupDriver {
    /// Nested `.slice` units: `kubepods.slice/kubepods-burstable.slice/…`.
    Systemd,
    /// Plain directories: `kubepods/burstable/pod<uid>`.
    Cgroupfs,
}

impl fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        })
    }
}

impl fmt::Display for CgroupDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupDriver::Systemd => "systemd",
            CgroupDriver::Cgroupfs => "cgroupfs",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: i128 = 1 << 30;

    fn res(req_cpu: i128, req_mem: i128, lim_cpu: i128, lim_mem: i128) -> ContainerResources {
        ContainerResources {
            requests: CpuMemory {
                cpu: req_cpu,
                memory: req_mem,
            },
            limits: CpuMemory {
                cpu: lim_cpu,
                memory: lim_mem,
            },
        }
    }

    #[test]
    fn container_rules_of_section_11_step_4() {
        let cases: &[(&str, ContainerResources, QosClass)] = &[
            (
                "nothing set is BestEffort",
                res(0, 0, 0, 0),
                QosClass::BestEffort,
            ),
            (
                "equal non-zero cpu and memory is Guaranteed",
                res(500, GI, 500, GI),
                QosClass::Guaranteed,
            ),
            (
                "request below limit is Burstable",
                res(250, GI, 500, GI),
                QosClass::Burstable,
            ),
            (
                "a request without a limit is Burstable",
                res(100, 0, 0, 0),
                QosClass::Burstable,
            ),
            (
                "limits without requests (pre-defaulting) is Burstable",
                res(0, 0, 500, GI),
                QosClass::Burstable,
            ),
            (
                "cpu guaranteed but memory best-effort is Burstable",
                res(500, 0, 500, 0),
                QosClass::Burstable,
            ),
            (
                "memory guaranteed but cpu best-effort is Burstable",
                res(0, GI, 0, GI),
                QosClass::Burstable,
            ),
            (
                "negative amounts count as absent, like upstream's > 0 filter",
                res(-1, -1, -1, -1),
                QosClass::BestEffort,
            ),
        ];
        for (rule, r, want) in cases {
            assert_eq!(container_qos(r), *want, "{rule}");
        }
    }

    #[test]
    fn pod_combination_rules_of_section_11_step_3() {
        let be = res(0, 0, 0, 0);
        let g = res(1, 1, 1, 1);
        let b = res(1, 0, 2, 0);
        let cases: &[(&str, Vec<ContainerResources>, QosClass)] = &[
            ("no containers is BestEffort", vec![], QosClass::BestEffort),
            ("all BestEffort", vec![be, be], QosClass::BestEffort),
            ("all Guaranteed", vec![g, g], QosClass::Guaranteed),
            ("any Burstable wins", vec![g, b, g], QosClass::Burstable),
            (
                "a mix of BestEffort and Guaranteed is Burstable",
                vec![g, be],
                QosClass::Burstable,
            ),
            (
                "the mix is Burstable in either order",
                vec![be, g],
                QosClass::Burstable,
            ),
        ];
        for (rule, cs, want) in cases {
            assert_eq!(compute_qos(cs), *want, "{rule}");
        }
    }

    #[test]
    fn qos_class_round_trips_through_its_api_spelling() {
        for q in [
            QosClass::Guaranteed,
            QosClass::Burstable,
            QosClass::BestEffort,
        ] {
            assert_eq!(QosClass::parse(q.as_str()), Some(q));
        }
        assert_eq!(QosClass::parse("burstable"), None);
    }

    const UID: &str = "6f1c2a3b-4d5e-4f60-8a71-92b3c4d5e6f7";
    const UID_: &str = "6f1c2a3b_4d5e_4f60_8a71_92b3c4d5e6f7";

    #[test]
    fn cgroup_names_for_each_class_and_driver() {
        let cases = [
            (
                QosClass::Guaranteed,
                format!("/kubepods/pod{UID}"),
                format!("/kubepods.slice/kubepods-pod{UID_}.slice"),
            ),
            (
                QosClass::Burstable,
                format!("/kubepods/burstable/pod{UID}"),
                format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID_}.slice"
                ),
            ),
            (
                QosClass::BestEffort,
                format!("/kubepods/besteffort/pod{UID}"),
                format!(
                    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{UID_}.slice"
                ),
            ),
        ];
        for (qos, cgroupfs, systemd) in cases {
            let name = pod_cgroup_name(UID, qos);
            assert_eq!(to_cgroupfs(&name), cgroupfs, "{qos} cgroupfs");
            assert_eq!(to_systemd(&name), systemd, "{qos} systemd");
        }
    }

    #[test]
    fn the_root_maps_to_slash_for_systemd() {
        assert_eq!(to_systemd(&[]), "/");
        assert_eq!(to_systemd(&["kubepods".to_owned()]), "/kubepods.slice");
    }
}
