//! Node Allocatable, computed on the node as the kubelet computes it. Pure: capacity, the
//! reservations and the hard eviction thresholds come in as plain values; the configuration is
//! translated at the edge.
//!
//! The rules, from "Reserve Compute Resources for System Daemons"
//! (<https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/>) and the
//! kubelet code it describes (`GetNodeAllocatableReservation`, `hardEvictionReservation`,
//! `nodestatus.MachineInfo`):
//!
//! - allocatable = capacity − kubeReserved − systemReserved − hard eviction threshold, resource
//!   by resource, for every resource in capacity (cpu, memory, ephemeral-storage, pid,
//!   hugepages-<size>);
//! - reservations may name cpu, memory, ephemeral-storage and pid;
//! - only `memory.available` (→ memory) and `nodefs.available` (→ ephemeral-storage) hard
//!   thresholds are subtracted: evictions exist only for memory and ephemeral-storage;
//! - a percentage threshold is that share of the resource's capacity
//!   (`GetThresholdQuantity`: `nodefs.available: 10%` on 100Gi is 10Gi);
//! - `reservedSystemCPUs` replaces the cpu of both reservations: systemReserved cpu becomes the
//!   number of CPUs in the list and kubeReserved cpu is dropped;
//! - pre-allocated hugepages are taken out of memory allocatable as well;
//! - an allocatable below zero is zero.

use crate::core::quantity::Quantity;
use crate::core::resources::ResourceList;
use crate::core::signal::Signal;
use crate::core::threshold::ThresholdValue;

/// The kubelet's name for the PID resource in reservations (`pidlimit.PIDs`).
pub const PID: &str = "pid";

/// Resources a `kubeReserved` / `systemReserved` map may name (the kubelet's
/// `parseResourceList` rejects any other with "cannot reserve").
pub const RESERVABLE: [&str; 4] = ["cpu", "memory", "ephemeral-storage", PID];

/// Everything the computation needs, as plain values.
#[derive(Clone, Debug, Default)]
pub struct AllocatableInput {
    /// The machine's capacity: `cpu`, `memory`, `ephemeral-storage`, `pid`, `hugepages-<size>`.
    pub capacity: ResourceList,
    pub kube_reserved: ResourceList,
    pub system_reserved: ResourceList,
    /// How many CPUs `reservedSystemCPUs` lists; `None` when it is unset.
    pub reserved_system_cpus: Option<u32>,
    /// The hard eviction thresholds (`evictionHard` after defaults), by signal.
    pub hard_eviction: Vec<(Signal, ThresholdValue)>,
}

/// One resource's line of the computation.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocatableRow {
    pub resource: String,
    pub capacity: Quantity,
    /// kubeReserved + systemReserved + hard eviction threshold (+ hugepages, for memory).
    pub reserved: Quantity,
    pub allocatable: Quantity,
}

/// The resource a hard threshold on `signal` reserves, if any.
fn evicted_resource(signal: Signal) -> Option<&'static str> {
    match signal {
        Signal::MemoryAvailable => Some("memory"),
        Signal::NodeFsAvailable => Some("ephemeral-storage"),
        _ => None,
    }
}

/// Node Allocatable for every resource in capacity, in resource-name order.
pub fn allocatable(input: &AllocatableInput) -> Vec<AllocatableRow> {
    let mut kube = input.kube_reserved.clone();
    let mut system = input.system_reserved.clone();
    if let Some(cpus) = input.reserved_system_cpus {
        // The explicit CPU list overrides both reservations' cpu (kubelet server.go).
        kube.remove("cpu");
        system.insert(
            "cpu".into(),
            Quantity::from_units(i64::from(cpus), crate::core::quantity::Format::DecimalSI),
        );
    }
    let hugepages: Quantity = input
        .capacity
        .iter()
        .filter(|(k, _)| k.starts_with("hugepages-"))
        .fold(Quantity::zero(), |sum, (_, q)| sum.plus(*q));
    input
        .capacity
        .iter()
        .map(|(resource, capacity)| {
            let mut reserved = Quantity::zero();
            for list in [&system, &kube] {
                if let Some(q) = list.get(resource) {
                    reserved = reserved.plus(*q);
                }
            }
            for (signal, value) in &input.hard_eviction {
                if evicted_resource(*signal) == Some(resource.as_str()) {
                    let bytes = value.resolve(capacity.value());
                    reserved = reserved.plus(Quantity::from_units(bytes, capacity.format()));
                }
            }
            if resource == "memory" {
                reserved = reserved.plus(hugepages);
            }
            let left = capacity.minus(reserved);
            AllocatableRow {
                resource: resource.clone(),
                capacity: *capacity,
                reserved,
                allocatable: if left.is_negative() {
                    Quantity::zero()
                } else {
                    left
                },
            }
        })
        .collect()
}

/// How many CPUs a Linux CPU list such as `0-3,8` names (the kubelet's `cpuset.Parse` syntax).
/// The empty list names none. Duplicates count once.
pub fn count_cpu_list(list: &str) -> Result<u32, String> {
    let mut cpus = std::collections::BTreeSet::new();
    if list.trim().is_empty() {
        return Ok(0);
    }
    for part in list.split(',') {
        let part = part.trim();
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("{s:?} in {list:?} is not a CPU number"))
        };
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(part)?;
                (n, n)
            }
        };
        if first > last {
            return Err(format!("range {part:?} in {list:?} runs backwards"));
        }
        // A real CPU list has at most a few thousand CPUs; refuse ranges that would make the
        // set huge rather than allocate for them.
        if last - first > 65_535 {
            return Err(format!(
                "range {part:?} in {list:?} names more than 65536 CPUs"
            ));
        }
        cpus.extend(first..=last);
    }
    u32::try_from(cpus.len()).map_err(|_| format!("{list:?} names too many CPUs"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        s.parse().unwrap()
    }

    fn list(entries: &[(&str, &str)]) -> ResourceList {
        entries.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
    }

    fn row<'r>(rows: &'r [AllocatableRow], resource: &str) -> &'r AllocatableRow {
        rows.iter().find(|r| r.resource == resource).unwrap()
    }

    fn hard(entries: &[(Signal, &str)]) -> Vec<(Signal, ThresholdValue)> {
        entries
            .iter()
            .map(|(s, v)| {
                let value = match v.strip_suffix('%') {
                    Some(p) => ThresholdValue::Percentage(p.parse::<f32>().unwrap() / 100.0),
                    None => ThresholdValue::Quantity(q(v)),
                };
                (*s, value)
            })
            .collect()
    }

    #[test]
    fn memory_is_capacity_less_both_reservations_and_the_hard_threshold() {
        // The example: 32Gi, kubeReserved 1Gi, systemReserved 500Mi, hard 100Mi → 30.4Gi.
        let capacity = list(&[("memory", "32Gi")]);
        let kube = list(&[("memory", "1Gi")]);
        let system = list(&[("memory", "500Mi")]);
        let hard = hard(&[(Signal::MemoryAvailable, "100Mi")]);
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: kube.clone(),
            system_reserved: system.clone(),
            hard_eviction: hard.clone(),
            ..Default::default()
        });
        let memory = row(&rows, "memory");
        assert_eq!(memory.allocatable, q("31144Mi"));
        assert_eq!(memory.allocatable.to_string(), "31144Mi");
        assert_eq!(memory.reserved, q("1624Mi"));
        // 31144Mi is 30.41Gi.
        let gib = memory.allocatable.value() as f64 / (1u64 << 30) as f64;
        assert!((gib - 30.41).abs() < 0.01, "{gib}");
    }

    #[test]
    fn the_documented_example_scenario_gives_14_5_cpus_28_5gi_and_88gi() {
        // kubernetes.io "Example Scenario": 16 CPU, 32Gi, 100Gi storage; kubeReserved cpu=1,
        // memory=2Gi, ephemeral-storage=1Gi; systemReserved cpu=500m, memory=1Gi,
        // ephemeral-storage=1Gi; evictionHard memory.available 500Mi, nodefs.available 10%.
        let capacity = list(&[
            ("cpu", "16"),
            ("memory", "32Gi"),
            ("ephemeral-storage", "100Gi"),
        ]);
        let kube = list(&[
            ("cpu", "1"),
            ("memory", "2Gi"),
            ("ephemeral-storage", "1Gi"),
        ]);
        let system = list(&[
            ("cpu", "500m"),
            ("memory", "1Gi"),
            ("ephemeral-storage", "1Gi"),
        ]);
        let hard = hard(&[
            (Signal::MemoryAvailable, "500Mi"),
            (Signal::NodeFsAvailable, "10%"),
        ]);
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: kube.clone(),
            system_reserved: system.clone(),
            hard_eviction: hard.clone(),
            ..Default::default()
        });
        assert_eq!(row(&rows, "cpu").allocatable, q("14.5"));
        assert_eq!(row(&rows, "cpu").allocatable.to_string(), "14500m");
        // The page rounds: 32Gi − 3Gi − 500Mi is 29196Mi (28.51Gi), which it calls 28.5Gi.
        assert_eq!(row(&rows, "memory").allocatable, q("29196Mi"));
        // And 10% is a float32 fraction, as in the kubelet: 0.1f32 × 100Gi is 160 bytes above
        // 10Gi, so "88Gi" is 88Gi less 160 bytes.
        assert_eq!(
            row(&rows, "ephemeral-storage").allocatable,
            q("88Gi").minus(Quantity::from_units(
                160,
                crate::core::quantity::Format::BinarySI
            ))
        );
    }

    #[test]
    fn only_memory_and_nodefs_hard_thresholds_are_subtracted() {
        let capacity = list(&[
            ("cpu", "4"),
            ("memory", "8Gi"),
            ("ephemeral-storage", "100Gi"),
            ("pid", "4194304"),
        ]);
        let empty = ResourceList::new();
        let hard = hard(&[
            (Signal::NodeFsInodesFree, "5%"),
            (Signal::ImageFsAvailable, "15%"),
            (Signal::PidAvailable, "1000"),
        ]);
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: empty.clone(),
            system_reserved: empty.clone(),
            hard_eviction: hard.clone(),
            ..Default::default()
        });
        for r in &rows {
            assert_eq!(r.allocatable, r.capacity, "{}", r.resource);
            assert!(r.reserved.is_zero(), "{}", r.resource);
        }
    }

    #[test]
    fn a_percentage_threshold_is_a_share_of_that_resource_capacity() {
        let capacity = list(&[("memory", "10Gi"), ("ephemeral-storage", "200Gi")]);
        let empty = ResourceList::new();
        let hard = hard(&[
            (Signal::MemoryAvailable, "5%"),
            (Signal::NodeFsAvailable, "10%"),
        ]);
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: empty.clone(),
            system_reserved: empty.clone(),
            hard_eviction: hard.clone(),
            ..Default::default()
        });
        // int64(float64(capacity) × float64(fraction)) with the fraction a float32, as the
        // kubelet's GetThresholdQuantity: 5% of 10Gi is 536870920 bytes, not 536870912.
        let bytes = |s: &str| q(s).value();
        assert_eq!(
            row(&rows, "memory").allocatable.value(),
            bytes("10Gi") - (bytes("10Gi") as f64 * f64::from(0.05f32)) as i64
        );
        assert_eq!(row(&rows, "memory").allocatable.value(), bytes("9.5Gi") - 8);
        assert_eq!(
            row(&rows, "ephemeral-storage").allocatable.value(),
            bytes("180Gi") - 320
        );
    }

    #[test]
    fn allocatable_is_floored_at_zero() {
        let capacity = list(&[("cpu", "2"), ("memory", "1Gi")]);
        let kube = list(&[("cpu", "3"), ("memory", "2Gi")]);
        let empty = ResourceList::new();
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: kube.clone(),
            system_reserved: empty.clone(),
            ..Default::default()
        });
        assert_eq!(row(&rows, "cpu").allocatable, Quantity::zero());
        assert_eq!(row(&rows, "memory").allocatable, Quantity::zero());
        assert_eq!(row(&rows, "cpu").reserved, q("3"));
    }

    #[test]
    fn reserved_system_cpus_replace_both_reservations_cpu() {
        let capacity = list(&[("cpu", "16"), ("memory", "4Gi")]);
        let kube = list(&[("cpu", "2"), ("memory", "1Gi")]);
        let system = list(&[("cpu", "1")]);
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: kube.clone(),
            system_reserved: system.clone(),
            reserved_system_cpus: Some(4),
            ..Default::default()
        });
        assert_eq!(row(&rows, "cpu").allocatable, q("12"));
        // Only cpu is replaced: kubeReserved memory still counts.
        assert_eq!(row(&rows, "memory").allocatable, q("3Gi"));
    }

    #[test]
    fn pids_are_capacity_less_both_reservations() {
        let capacity = list(&[("pid", "32768")]);
        let kube = list(&[("pid", "1000")]);
        let system = list(&[("pid", "768")]);
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: kube.clone(),
            system_reserved: system.clone(),
            ..Default::default()
        });
        assert_eq!(row(&rows, "pid").allocatable, q("31000"));
    }

    #[test]
    fn hugepages_are_allocatable_whole_and_taken_out_of_memory() {
        let capacity = list(&[("memory", "8Gi"), ("hugepages-2Mi", "1Gi")]);
        let system = list(&[("memory", "1Gi")]);
        let empty = ResourceList::new();
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: empty.clone(),
            system_reserved: system.clone(),
            ..Default::default()
        });
        assert_eq!(row(&rows, "hugepages-2Mi").allocatable, q("1Gi"));
        assert_eq!(row(&rows, "memory").allocatable, q("6Gi"));
    }

    #[test]
    fn a_reservation_for_a_resource_without_capacity_adds_no_row() {
        let capacity = list(&[("memory", "8Gi")]);
        let kube = list(&[("cpu", "1"), ("pid", "100")]);
        let empty = ResourceList::new();
        let rows = allocatable(&AllocatableInput {
            capacity: capacity.clone(),
            kube_reserved: kube.clone(),
            system_reserved: empty.clone(),
            ..Default::default()
        });
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].allocatable, q("8Gi"));
    }

    #[test]
    fn cpu_lists_count_ranges_and_singles_once_each() {
        assert_eq!(count_cpu_list("0-3,8"), Ok(5));
        assert_eq!(count_cpu_list("0,0,1"), Ok(2));
        assert_eq!(count_cpu_list(" 2 - 3 , 7"), Ok(3));
        assert_eq!(count_cpu_list(""), Ok(0));
        assert!(count_cpu_list("3-1").is_err());
        assert!(count_cpu_list("a").is_err());
        assert!(count_cpu_list("0-").is_err());
        assert!(count_cpu_list("0-4294967295").is_err());
    }
}
