//! Node Allocatable computed on this node, for `sample` and `status`: reads the capacity
//! (`sample::capacity`), translates the configuration into the core's plain input (the edge
//! where `config` meets `core::allocatable`), and lines the result up beside the Node's
//! `status.allocatable` when the agent has seen the Node, flagging every difference.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::config::Config;
use crate::core::allocatable::{self, AllocatableInput};
use crate::core::quantity::Quantity;
use crate::core::resources::ResourceList;
use crate::sample::capacity::{self, CapacityReading};

/// Local allocatable, resource by resource, and the figures that could not be read.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocatableReport {
    pub resources: Vec<AllocatableLine>,
    /// Capacity figures that could not be read (their resources are missing above).
    pub unreadable: Vec<String>,
    /// Whether the Node's allocatable was known to compare against.
    pub node_known: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocatableLine {
    pub resource: String,
    pub capacity: String,
    /// kubeReserved + systemReserved + hard eviction threshold (+ hugepages, for memory).
    pub reserved: String,
    /// Computed here.
    pub allocatable: String,
    /// The Node's `status.allocatable` for this resource; `None` when the Node is unknown or
    /// does not advertise it (the Node never advertises `pid`).
    pub node: Option<String>,
    /// The Node advertises a different amount.
    pub differs: bool,
}

/// The core's input from the configuration and a capacity.
pub fn input(config: &Config, capacity: ResourceList) -> AllocatableInput {
    AllocatableInput {
        capacity,
        kube_reserved: config.kube_reserved.clone(),
        system_reserved: config.system_reserved.clone(),
        reserved_system_cpus: config.reserved_system_cpus.as_ref().map(|r| r.count),
        // The kubelet reserves for its hard thresholds only (`evictionHard`).
        hard_eviction: config
            .thresholds
            .iter()
            .filter(|t| !t.soft)
            .map(|t| (t.signal, t.value.clone()))
            .collect(),
    }
}

/// Reads the capacity under the configured paths and computes local allocatable; `node` is the
/// Node's `status.allocatable` as last seen, when known.
pub fn report(config: &Config, node: Option<&BTreeMap<String, String>>) -> AllocatableReport {
    compare(
        config,
        capacity::read(&config.proc_path, &config.nodefs_path),
        node,
    )
}

/// [`report`] for a capacity already read.
pub fn compare(
    config: &Config,
    reading: CapacityReading,
    node: Option<&BTreeMap<String, String>>,
) -> AllocatableReport {
    let rows = allocatable::allocatable(&input(config, reading.capacity.resource_list()));
    AllocatableReport {
        resources: rows
            .into_iter()
            .map(|r| {
                let advertised = node.and_then(|n| n.get(&r.resource));
                // A Node value that does not parse differs by definition; show it as written.
                let differs =
                    advertised.is_some_and(|a| a.parse::<Quantity>().ok() != Some(r.allocatable));
                AllocatableLine {
                    resource: r.resource,
                    capacity: r.capacity.to_string(),
                    reserved: r.reserved.to_string(),
                    allocatable: r.allocatable.to_string(),
                    node: advertised.cloned(),
                    differs,
                }
            })
            .collect(),
        unreadable: reading.errors.iter().map(|e| e.to_string()).collect(),
        node_known: node.is_some(),
    }
}

/// The Node's `status.allocatable` as the agent last saw it (the state directory), read without
/// side effects: `sample` must not move a corrupt state file aside as `status` does. `None` when
/// there is no readable state of a format this build reads, or it holds no Node yet.
pub fn node_as_last_seen(state_directory: &Path) -> Option<BTreeMap<String, String>> {
    let path = state_directory.join(crate::state::STATE_FILE);
    let bytes = crate::bounded::read(&path, crate::bounded::STATE).ok()?;
    let state: crate::state::State = serde_json::from_slice(&bytes).ok()?;
    if state.version > crate::state::VERSION {
        return None;
    }
    state.node_status.map(|n| n.allocatable)
}

/// The text table: `RESOURCE CAPACITY RESERVED ALLOCATABLE [NODE]`, a `DIFFERS` mark per
/// difference.
pub fn text(r: &AllocatableReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nallocatable computed here (capacity − kubeReserved − systemReserved − hard eviction){}",
        if r.node_known {
            ", beside the Node's"
        } else {
            ""
        }
    );
    let _ = write!(
        out,
        "{:<20} {:>16} {:>16} {:>16}",
        "RESOURCE", "CAPACITY", "RESERVED", "ALLOCATABLE"
    );
    if r.node_known {
        let _ = write!(out, " {:>16}", "NODE");
    }
    out.push('\n');
    for l in &r.resources {
        // Bytes with binary suffixes; the JSON form keeps the exact quantities.
        let amount = |q: &str| crate::core::units::resource_amount(&l.resource, q);
        let _ = write!(
            out,
            "{:<20} {:>16} {:>16} {:>16}",
            l.resource,
            amount(&l.capacity),
            amount(&l.reserved),
            amount(&l.allocatable)
        );
        if r.node_known {
            let node = l.node.as_deref().map_or_else(|| "-".to_string(), amount);
            let _ = write!(out, " {node:>16}");
            if l.differs {
                out.push_str("  DIFFERS");
            }
        }
        out.push('\n');
    }
    for u in &r.unreadable {
        let _ = writeln!(out, "unreadable: {u}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::capacity::MachineCapacity;

    fn config(text: &str) -> Config {
        crate::config::from_str(text, None).unwrap()
    }

    fn reading() -> CapacityReading {
        CapacityReading {
            capacity: MachineCapacity {
                cpus: Some(4),
                memory_bytes: Some(32 << 30),
                ephemeral_storage_bytes: Some(100 << 30),
                pid_max: Some(32768),
                hugepages: None,
            },
            errors: vec![],
        }
    }

    #[test]
    fn configuration_reservations_and_hard_thresholds_reach_the_computation() {
        // Soft thresholds reserve nothing; the hard memory.available 100Mi does.
        let c = config(
            "[kubeReserved]\nmemory = \"1Gi\"\ncpu = \"500m\"\n[systemReserved]\nmemory = \"500Mi\"\n\
             [evictionHard]\n\"memory.available\" = \"100Mi\"\n\
             [evictionSoft]\n\"memory.available\" = \"2Gi\"\n[evictionSoftGracePeriod]\n\"memory.available\" = \"1m\"\n",
        );
        let r = compare(&c, reading(), None);
        let get = |name: &str| r.resources.iter().find(|l| l.resource == name).unwrap();
        assert_eq!(get("memory").allocatable, "31144Mi");
        assert_eq!(get("cpu").allocatable, "3500m");
        // evictionHard set without nodefs.available: no storage reservation.
        assert_eq!(get("ephemeral-storage").allocatable, "100Gi");
        assert!(!r.node_known && r.resources.iter().all(|l| l.node.is_none() && !l.differs));
        let text = text(&r);
        assert!(
            !text.contains("NODE") && !text.contains("DIFFERS"),
            "{text}"
        );
    }

    #[test]
    fn a_node_value_that_differs_is_flagged_and_an_equal_one_is_not() {
        let c = config("[kubeReserved]\ncpu = \"1\"\n");
        let node: BTreeMap<String, String> = [
            ("cpu", "3"),                  // 4 − 1: equal
            ("memory", "30Gi"),            // differs from 32Gi − 100Mi
            ("ephemeral-storage", "lots"), // unparseable: differs
            ("pods", "110"),               // not ours to compare
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let r = compare(&c, reading(), Some(&node));
        let get = |name: &str| r.resources.iter().find(|l| l.resource == name).unwrap();
        assert!(!get("cpu").differs);
        assert!(get("memory").differs);
        assert_eq!(get("memory").node.as_deref(), Some("30Gi"));
        assert!(get("ephemeral-storage").differs);
        // The Node never advertises pid: nothing to compare, no flag.
        assert_eq!(
            (get("pid").node.as_deref(), get("pid").differs),
            (None, false)
        );
        assert!(r.resources.iter().all(|l| l.resource != "pods"));
        let text = text(&r);
        assert_eq!(text.matches("DIFFERS").count(), 2, "{text}");
    }
}
