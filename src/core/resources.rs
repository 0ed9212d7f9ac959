//! A pod's effective requests and limits, and their sums over a node's pods against its
//! allocatable (what `kubectl describe node` calls "Allocated resources"). Pure.
//!
//! The effective amount of each resource follows upstream's `PodRequests` / `PodLimits`
//! (k8s.io/component-helpers/resource) and the sidecar rules of the Kubernetes docs:
//! - app containers and sidecars (init containers with `restartPolicy: Always`) run together, so
//!   they are summed;
//! - a regular init container runs alone beside the sidecars started before it: its amount plus
//!   theirs;
//! - the pod needs the larger of the two, resource by resource;
//! - pod-level `spec.resources` (PodLevelResources), where it sets cpu or memory, replaces the
//!   containers' figure for that resource;
//! - `spec.overhead` is added to every request, and to a limit only where a non-zero limit is
//!   set;
//! - in-place resize (GA in 1.35): a container (or sidecar) whose status reports `resources`
//!   counts as upstream's `PodRequests`/`PodLimits` with `UseStatusResources` (what the 1.35+
//!   scheduler and kubelet admission use): requests are the larger, resource by resource, of the
//!   spec's, the status' actual and `allocatedResources`; limits the larger of the spec's and
//!   the actual. While the resize is Infeasible (`PodResizePending` reason `Infeasible`) the spec
//!   is not counted: requests are the larger of actual and allocated, limits the actual
//!   (`determineContainerReqs`/`determineContainerLimits` in
//!   `staging/src/k8s.io/component-helpers/resource/helpers.go`). Regular init containers never
//!   read their status.
//!
//! Sums of limits count an absent limit as zero, as `kubectl describe node` does; the total can
//! therefore be below what the pods may really use, and above 100% of allocatable.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::core::qos::QosClass;
use crate::core::quantity::Quantity;

/// Resource name → amount (`v1.ResourceList`).
pub type ResourceList = BTreeMap<String, Quantity>;

/// The `resources` of one container.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContainerAmounts {
    pub requests: ResourceList,
    pub limits: ResourceList,
    /// An init container with `restartPolicy: Always`.
    pub sidecar: bool,
    /// The container's status when it reports `resources` (in-place resize); `None` otherwise.
    pub status: Option<StatusAmounts>,
}

/// What a container status says about resources (`status.containerStatuses[].resources` and
/// `.allocatedResources`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusAmounts {
    /// `resources.requests`: what the runtime reports as applied.
    pub requests: ResourceList,
    /// `resources.limits`.
    pub limits: ResourceList,
    /// `allocatedResources`: what the kubelet admitted.
    pub allocated: ResourceList,
}

impl ContainerAmounts {
    /// The requests counted for this container: `determineContainerReqs` where the status
    /// reports resources and the container is a regular or sidecar container.
    fn counted_requests(
        &self,
        resize_infeasible: bool,
        regular_init: bool,
    ) -> Cow<'_, ResourceList> {
        match &self.status {
            Some(s) if !regular_init => {
                Cow::Owned(requests_with_status(&self.requests, s, resize_infeasible))
            }
            _ => Cow::Borrowed(&self.requests),
        }
    }

    /// The limits counted for this container: `determineContainerLimits`.
    fn counted_limits(&self, resize_infeasible: bool, regular_init: bool) -> Cow<'_, ResourceList> {
        match &self.status {
            Some(s) if !regular_init && resize_infeasible => Cow::Borrowed(&s.limits),
            Some(s) if !regular_init => Cow::Owned(limits_with_status(&self.limits, s, false)),
            _ => Cow::Borrowed(&self.limits),
        }
    }
}

/// `determineContainerReqs`: while the resize is Infeasible, max(actual, allocated); otherwise
/// max(spec, actual, allocated), resource by resource.
fn requests_with_status(
    spec: &ResourceList,
    status: &StatusAmounts,
    resize_infeasible: bool,
) -> ResourceList {
    let mut out = if resize_infeasible {
        status.requests.clone()
    } else {
        let mut out = spec.clone();
        max_into(&mut out, &status.requests);
        out
    };
    max_into(&mut out, &status.allocated);
    out
}

/// `determineContainerLimits`: while the resize is Infeasible, the actual limits; otherwise
/// max(spec, actual).
fn limits_with_status(
    spec: &ResourceList,
    status: &StatusAmounts,
    resize_infeasible: bool,
) -> ResourceList {
    if resize_infeasible {
        return status.limits.clone();
    }
    let mut out = spec.clone();
    max_into(&mut out, &status.limits);
    out
}

/// Whether an app container's or a sidecar's status changes what the container counts for,
/// given its spec's requests and limits: false when the counted amounts equal the spec's (a
/// kubelet of 1.35+ reports `resources` and `allocatedResources` for every running container,
/// equal to the spec outside a resize; so does a pending upsize, whose spec is the larger).
/// A status for which this is false can be dropped without changing [`effective`]: the
/// aggregation reads each container only through its counted amounts. A regular init
/// container's status is never read, so it never matters.
pub fn status_changes_count(
    spec_requests: &ResourceList,
    spec_limits: &ResourceList,
    status: &StatusAmounts,
    resize_infeasible: bool,
) -> bool {
    requests_with_status(spec_requests, status, resize_infeasible) != *spec_requests
        || limits_with_status(spec_limits, status, resize_infeasible) != *spec_limits
}

/// What a pod spec says about resources.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodAmounts {
    pub containers: Vec<ContainerAmounts>,
    /// In spec order: a sidecar counts only for the init containers after it.
    pub init_containers: Vec<ContainerAmounts>,
    /// `spec.overhead` (RuntimeClass).
    pub overhead: ResourceList,
    /// Pod-level `spec.resources.requests`.
    pub pod_requests: ResourceList,
    /// Pod-level `spec.resources.limits`.
    pub pod_limits: ResourceList,
    /// The pod's `PodResizePending` condition has reason `Infeasible` (`IsPodResizeInfeasible`).
    pub resize_infeasible: bool,
}

/// A pod's effective requests and limits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effective {
    pub requests: Amounts,
    pub limits: Amounts,
}

/// The resource names nearly every pod uses: kept without an allocation of their own.
const COMMON_NAMES: [&str; 4] = ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu"];

/// One pod's requests or limits as the agent keeps them, for every pod on the node: one boxed
/// slice sorted by name (the order a `BTreeMap` iterates in), the common names not allocated. A
/// [`ResourceList`] of two entries costs a whole B-tree node, about half a kilobyte (issue 12).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Amounts(Box<[(Cow<'static, str>, Quantity)]>);

impl Amounts {
    pub fn get(&self, name: &str) -> Option<&Quantity> {
        self.0
            .binary_search_by(|(n, _)| n.as_ref().cmp(name))
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// By name, in byte order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Quantity)> {
        self.0.iter().map(|(n, q)| (n.as_ref(), q))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_ref())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<ResourceList> for Amounts {
    fn from(list: ResourceList) -> Amounts {
        Amounts(
            list.into_iter()
                .map(|(name, q)| {
                    let name = match COMMON_NAMES.iter().find(|c| **c == name) {
                        Some(common) => Cow::Borrowed(*common),
                        None => Cow::Owned(name),
                    };
                    (name, q)
                })
                .collect(),
        )
    }
}

/// As a map's: panics when `name` is absent (use [`Amounts::get`] where it may be).
impl std::ops::Index<&str> for Amounts {
    type Output = Quantity;
    fn index(&self, name: &str) -> &Quantity {
        match self.get(name) {
            Some(q) => q,
            None => panic!("no amount of {name}"),
        }
    }
}

/// As a map: a name given twice keeps the last amount.
impl FromIterator<(String, Quantity)> for Amounts {
    fn from_iter<I: IntoIterator<Item = (String, Quantity)>>(iter: I) -> Amounts {
        Amounts::from(iter.into_iter().collect::<ResourceList>())
    }
}

/// The resources pod-level `spec.resources` may set (upstream `IsSupportedPodLevelResource`).
const POD_LEVEL: [&str; 2] = ["cpu", "memory"];

/// The effective requests and limits of one pod.
pub fn effective(pod: &PodAmounts) -> Effective {
    let infeasible = pod.resize_infeasible;
    let mut requests = aggregate(pod, |c, init| c.counted_requests(infeasible, init));
    let mut limits = aggregate(pod, |c, init| c.counted_limits(infeasible, init));
    for name in POD_LEVEL {
        if let Some(q) = pod.pod_requests.get(name) {
            requests.insert(name.to_string(), *q);
        }
        if let Some(q) = pod.pod_limits.get(name) {
            limits.insert(name.to_string(), *q);
        }
    }
    add_into(&mut requests, &pod.overhead);
    // `PodLimits`: overhead goes only to a limit that is set and not zero.
    for (name, q) in &pod.overhead {
        if let Some(l) = limits.get_mut(name).filter(|l| !l.is_zero()) {
            *l = l.plus(*q);
        }
    }
    Effective {
        requests: requests.into(),
        limits: limits.into(),
    }
}

/// `pick(container, is_a_regular_init_container)`: what the container counts for.
fn aggregate<'p>(
    pod: &'p PodAmounts,
    pick: impl Fn(&'p ContainerAmounts, bool) -> Cow<'p, ResourceList>,
) -> ResourceList {
    let mut running = ResourceList::new();
    for c in &pod.containers {
        add_into(&mut running, &pick(c, false));
    }
    let mut sidecars = ResourceList::new();
    let mut init_peak = ResourceList::new();
    for c in &pod.init_containers {
        let alone = if c.sidecar {
            let amounts = pick(c, false);
            add_into(&mut running, &amounts);
            add_into(&mut sidecars, &amounts);
            sidecars.clone()
        } else {
            let mut with_sidecars = pick(c, true).into_owned();
            add_into(&mut with_sidecars, &sidecars);
            with_sidecars
        };
        max_into(&mut init_peak, &alone);
    }
    max_into(&mut running, &init_peak);
    running
}

fn add_into(total: &mut ResourceList, more: &ResourceList) {
    for (name, q) in more {
        let sum = total.get(name).map_or(*q, |t| t.plus(*q));
        total.insert(name.clone(), sum);
    }
}

fn max_into(total: &mut ResourceList, other: &ResourceList) {
    for (name, q) in other {
        if total.get(name).is_none_or(|t| q > t) {
            total.insert(name.clone(), *q);
        }
    }
}

/// QoS classes in the order tables list them.
pub const QOS_ORDER: [QosClass; 3] = [
    QosClass::Guaranteed,
    QosClass::Burstable,
    QosClass::BestEffort,
];

/// One resource's sums over the pods, against the node's allocatable.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    pub resource: String,
    /// `None` when the node does not advertise the resource (then nothing can fit).
    pub allocatable: Option<Quantity>,
    pub requests: Quantity,
    pub limits: Quantity,
    /// Requests and limits per QoS class, in [`QOS_ORDER`].
    pub by_qos: [(QosClass, Quantity, Quantity); 3],
}

/// Sums `pods` (the caller leaves out terminal ones) per resource: one row for every resource
/// the node advertises or a pod asks for, except `pods` (a count, not an amount).
pub fn allocated(pods: &[(QosClass, &Effective)], allocatable: &ResourceList) -> Vec<Allocation> {
    let mut names: Vec<&str> = allocatable.keys().map(String::as_str).collect();
    for (_, e) in pods {
        names.extend(e.requests.keys().chain(e.limits.keys()));
    }
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| *n != "pods")
        .map(|name| {
            let sum = |qos: Option<QosClass>, pick: fn(&Effective) -> &Amounts| {
                pods.iter()
                    .filter(|(q, _)| qos.is_none_or(|want| *q == want))
                    .filter_map(|(_, e)| pick(e).get(name))
                    .fold(Quantity::zero(), |acc, q| acc.plus(*q))
            };
            let row = |qos: QosClass| {
                (
                    qos,
                    sum(Some(qos), |e| &e.requests),
                    sum(Some(qos), |e| &e.limits),
                )
            };
            Allocation {
                resource: name.to_string(),
                allocatable: allocatable.get(name).copied(),
                requests: sum(None, |e| &e.requests),
                limits: sum(None, |e| &e.limits),
                by_qos: QOS_ORDER.map(row),
            }
        })
        .collect()
}

/// `used` as a whole percentage of `of`, truncated as `kubectl describe node` prints it; `None`
/// when `of` is not positive.
pub fn percent(used: Quantity, of: Quantity) -> Option<i128> {
    (of.as_nanos() > 0).then(|| used.as_nanos().saturating_mul(100) / of.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs
            .iter()
            .map(|(k, v)| match v.parse::<Quantity>() {
                Ok(q) => (k.to_string(), q),
                Err(e) => panic!("{v}: {e}"),
            })
            .collect()
    }

    fn amounts(pairs: &[(&str, &str)]) -> Amounts {
        list(pairs).into()
    }

    #[test]
    fn amounts_are_sorted_like_a_map_and_the_last_of_a_name_wins() {
        let a: Amounts = [
            ("memory", "1Gi"),
            ("cpu", "1"),
            ("example.com/foo", "2"),
            ("cpu", "2"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.parse::<Quantity>().unwrap_or_default()))
        .collect();
        let names: Vec<&str> = a.keys().collect();
        assert_eq!(names, ["cpu", "example.com/foo", "memory"]);
        assert_eq!(a.get("cpu").map(|q| q.to_string()), Some("2".into()));
        assert_eq!(
            a.get("example.com/foo").map(|q| q.to_string()),
            Some("2".into())
        );
        assert_eq!(a.get("pods"), None);
        assert_eq!(a.len(), 3);
    }

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> ContainerAmounts {
        ContainerAmounts {
            requests: list(requests),
            limits: list(limits),
            sidecar: false,
            status: None,
        }
    }

    fn sidecar(requests: &[(&str, &str)]) -> ContainerAmounts {
        ContainerAmounts {
            sidecar: true,
            ..container(requests, &[])
        }
    }

    fn resized(
        spec: &[(&str, &str)],
        spec_limits: &[(&str, &str)],
        actual: &[(&str, &str)],
        actual_limits: &[(&str, &str)],
        allocated: &[(&str, &str)],
    ) -> ContainerAmounts {
        ContainerAmounts {
            status: Some(StatusAmounts {
                requests: list(actual),
                limits: list(actual_limits),
                allocated: list(allocated),
            }),
            ..container(spec, spec_limits)
        }
    }

    /// In-place resize as `PodRequests`/`PodLimits` with `UseStatusResources` count it; the
    /// first rows are upstream's own (`TestPodResourceRequests`, `TestPodResourceLimits` in
    /// `staging/src/k8s.io/component-helpers/resource/helpers_test.go`).
    #[test]
    fn a_resize_counts_the_larger_of_desired_and_actual_or_allocated() {
        type Row<'a> = (
            &'a str,
            ContainerAmounts,
            bool,
            &'a [(&'a str, &'a str)],
            &'a [(&'a str, &'a str)],
        );
        let cases: Vec<Row> = vec![
            (
                "resized, infeasible: the spec's 4 is not counted, the actual 2 is",
                resized(&[("cpu", "4")], &[], &[("cpu", "2")], &[], &[]),
                true,
                &[("cpu", "2")],
                &[],
            ),
            (
                "resized, no resize status: max(spec 4, actual 2)",
                resized(&[("cpu", "4")], &[], &[("cpu", "2")], &[], &[]),
                false,
                &[("cpu", "4")],
                &[],
            ),
            (
                "pod scaled up: limits max(spec 2Gi, actual 1Gi)",
                resized(&[], &[("memory", "2Gi")], &[], &[("memory", "1Gi")], &[]),
                false,
                &[],
                &[("memory", "2Gi")],
            ),
            (
                "pod scaled down: limits max(spec 1Gi, actual 2Gi)",
                resized(&[], &[("memory", "1Gi")], &[], &[("memory", "2Gi")], &[]),
                false,
                &[],
                &[("memory", "2Gi")],
            ),
            (
                "scaled down, allocated still larger: the allocation counts",
                resized(&[("cpu", "1")], &[], &[("cpu", "1")], &[], &[("cpu", "3")]),
                false,
                &[("cpu", "3")],
                &[],
            ),
            (
                "infeasible: limits are the actual ones alone",
                resized(&[], &[("cpu", "8")], &[], &[("cpu", "2")], &[]),
                true,
                &[],
                &[("cpu", "2")],
            ),
            (
                "infeasible: requests max(actual, allocated)",
                resized(&[("cpu", "8")], &[], &[("cpu", "1")], &[], &[("cpu", "2")]),
                true,
                &[("cpu", "2")],
                &[],
            ),
        ];
        for (rule, c, infeasible, requests, limits) in cases {
            let pod = PodAmounts {
                containers: vec![c],
                resize_infeasible: infeasible,
                ..Default::default()
            };
            let e = effective(&pod);
            assert_eq!(e.requests, amounts(requests), "{rule}");
            assert_eq!(e.limits, amounts(limits), "{rule}");
        }
    }

    /// Sidecars read their status as app containers do; a regular init container never does
    /// (`AggregateContainerRequests` checks `RestartPolicy == Always` first).
    #[test]
    fn only_app_containers_and_sidecars_read_their_resize_status() {
        let mut sidecar_resized = resized(&[("cpu", "1")], &[], &[("cpu", "3")], &[], &[]);
        sidecar_resized.sidecar = true;
        let init_resized = resized(&[("cpu", "1")], &[], &[("cpu", "9")], &[], &[]);
        let pod = PodAmounts {
            init_containers: vec![sidecar_resized, init_resized],
            containers: vec![container(&[("cpu", "1")], &[])],
            ..Default::default()
        };
        // running: app 1 + sidecar max(1, 3) = 4; init peak: 1 + sidecar 3 = 4; so 4, not 12.
        assert_eq!(effective(&pod).requests, amounts(&[("cpu", "4")]));
    }

    /// Which statuses the watch cache may drop (`api::slim`): only those whose counted amounts
    /// equal the spec's. Since 1.35 every running container reports `resources` (the
    /// kubelet's `convertContainerStatusResources`) and `allocatedResources`, equal to the
    /// spec outside a resize.
    #[test]
    fn only_a_status_that_differs_from_the_spec_changes_the_count() {
        type Row<'a> = (&'a str, ContainerAmounts, bool, bool);
        let cpu = |v| vec![("cpu", v)];
        let rows: Vec<Row> = vec![
            (
                "not resizing: actual and allocated equal the spec",
                resized(&cpu("1"), &cpu("2"), &cpu("1"), &cpu("2"), &cpu("1")),
                false,
                false,
            ),
            (
                "equal amounts written differently",
                resized(&cpu("1"), &[], &cpu("1000m"), &[], &cpu("1")),
                false,
                false,
            ),
            (
                "a pending upsize: the spec is already the larger",
                resized(&cpu("2"), &cpu("4"), &cpu("1"), &cpu("2"), &cpu("1")),
                false,
                false,
            ),
            (
                "a downsize not yet actuated: the actual is larger",
                resized(&cpu("1"), &[], &cpu("2"), &[], &cpu("1")),
                false,
                true,
            ),
            (
                "allocated larger than spec and actual",
                resized(&cpu("1"), &[], &cpu("1"), &[], &cpu("2")),
                false,
                true,
            ),
            (
                "actual limits larger",
                resized(&[], &cpu("1"), &[], &cpu("2"), &[]),
                false,
                true,
            ),
            (
                "a resource only the status names",
                resized(&[], &[], &[("memory", "64Mi")], &[], &[]),
                false,
                true,
            ),
            (
                "infeasible, status equal to the spec",
                resized(&cpu("1"), &cpu("2"), &cpu("1"), &cpu("2"), &cpu("1")),
                true,
                false,
            ),
            (
                "infeasible upsize: the spec's 8 is not counted",
                resized(&cpu("8"), &cpu("8"), &cpu("1"), &cpu("1"), &cpu("1")),
                true,
                true,
            ),
            (
                "infeasible: a spec request the status does not report is not counted",
                resized(&[("memory", "1Gi")], &[], &[], &[], &[]),
                true,
                true,
            ),
        ];
        for (rule, c, infeasible, changes) in rows {
            let s = c.status.as_ref().expect("a status");
            assert_eq!(
                status_changes_count(&c.requests, &c.limits, s, infeasible),
                changes,
                "{rule}"
            );
            // And it means what it says: the pod's count with the status against without it.
            let with = |c: ContainerAmounts| {
                effective(&PodAmounts {
                    containers: vec![c],
                    resize_infeasible: infeasible,
                    ..Default::default()
                })
            };
            let without = ContainerAmounts {
                status: None,
                ..c.clone()
            };
            assert_eq!(with(c) != with(without), changes, "{rule}");
        }
    }

    mod compaction {
        use super::*;
        use proptest::prelude::*;

        /// Few values, so that spec, actual and allocated often coincide.
        fn amounts() -> impl Strategy<Value = ResourceList> {
            proptest::collection::btree_map(
                prop_oneof![Just("cpu".to_string()), Just("memory".to_string())],
                prop_oneof![Just("0"), Just("1"), Just("1000m"), Just("2")]
                    .prop_map(|v| v.parse::<Quantity>().unwrap_or_default()),
                0..=2,
            )
        }

        fn container() -> impl Strategy<Value = ContainerAmounts> {
            (
                amounts(),
                amounts(),
                any::<bool>(),
                proptest::option::of((amounts(), amounts(), amounts())),
                any::<bool>(),
            )
                .prop_map(|(requests, limits, sidecar, status, like_spec)| {
                    // Half the statuses repeat the spec (what a kubelet reports outside a
                    // resize), so both branches of the compaction are exercised.
                    let status = status.map(|(r, l, a)| {
                        if like_spec {
                            StatusAmounts {
                                requests: requests.clone(),
                                limits: limits.clone(),
                                allocated: requests.clone(),
                            }
                        } else {
                            StatusAmounts {
                                requests: r,
                                limits: l,
                                allocated: a,
                            }
                        }
                    });
                    ContainerAmounts {
                        requests,
                        limits,
                        sidecar,
                        status,
                    }
                })
        }

        /// What the watch cache keeps: a status only where it changes the container's count
        /// (never a regular init container's, which is not read).
        fn compacted(pod: &PodAmounts) -> PodAmounts {
            let keep = |c: &ContainerAmounts, app: bool| ContainerAmounts {
                status: c.status.clone().filter(|s| {
                    (app || c.sidecar)
                        && status_changes_count(&c.requests, &c.limits, s, pod.resize_infeasible)
                }),
                ..c.clone()
            };
            PodAmounts {
                containers: pod.containers.iter().map(|c| keep(c, true)).collect(),
                init_containers: pod.init_containers.iter().map(|c| keep(c, false)).collect(),
                ..pod.clone()
            }
        }

        proptest! {
            #[test]
            fn dropping_the_statuses_that_change_nothing_keeps_the_count(
                containers in proptest::collection::vec(container(), 1..4),
                init_containers in proptest::collection::vec(container(), 0..4),
                resize_infeasible in any::<bool>(),
                pod_requests in amounts(),
            ) {
                let pod = PodAmounts {
                    containers,
                    init_containers,
                    resize_infeasible,
                    pod_requests,
                    ..Default::default()
                };
                prop_assert_eq!(effective(&compacted(&pod)), effective(&pod));
            }
        }
    }

    /// Pod-level resources (beta in 1.34) still replace the containers' figure for cpu and
    /// memory during a resize (`PodRequests` applies them after aggregating).
    #[test]
    fn pod_level_resources_win_over_a_container_resize() {
        let pod = PodAmounts {
            containers: vec![resized(&[("cpu", "1")], &[], &[("cpu", "3")], &[], &[])],
            pod_requests: list(&[("cpu", "2")]),
            ..Default::default()
        };
        assert_eq!(effective(&pod).requests, amounts(&[("cpu", "2")]));
    }

    #[test]
    fn app_containers_are_summed() {
        let pod = PodAmounts {
            containers: vec![
                container(&[("cpu", "100m"), ("memory", "64Mi")], &[("cpu", "1")]),
                container(&[("cpu", "250m"), ("nvidia.com/gpu", "1")], &[]),
            ],
            ..Default::default()
        };
        let e = effective(&pod);
        assert_eq!(
            e.requests,
            amounts(&[("cpu", "350m"), ("memory", "64Mi"), ("nvidia.com/gpu", "1")])
        );
        assert_eq!(e.limits, amounts(&[("cpu", "1")]));
    }

    #[test]
    fn the_largest_init_container_wins_over_a_smaller_sum() {
        // Docs example: init 200Mi and 150Mi, apps 120Mi + 140Mi → max(200, 260) = 260Mi; with
        // a 300Mi init container the init peak wins instead.
        let mut pod = PodAmounts {
            init_containers: vec![
                container(&[("memory", "200Mi")], &[]),
                container(&[("memory", "150Mi")], &[]),
            ],
            containers: vec![
                container(&[("memory", "120Mi")], &[]),
                container(&[("memory", "140Mi")], &[]),
            ],
            ..Default::default()
        };
        assert_eq!(effective(&pod).requests, amounts(&[("memory", "260Mi")]));
        pod.init_containers[1] = container(&[("memory", "300Mi")], &[]);
        assert_eq!(effective(&pod).requests, amounts(&[("memory", "300Mi")]));
    }

    #[test]
    fn a_sidecar_runs_beside_the_apps_and_the_init_containers_after_it() {
        // init-a (500m) runs before the sidecar; init-b (400m) runs beside it (100m): 500m.
        // Apps 200m + sidecar 100m = 300m. Effective: max(300m, 500m) = 500m.
        let mut pod = PodAmounts {
            init_containers: vec![
                container(&[("cpu", "500m")], &[]),
                sidecar(&[("cpu", "100m")]),
                container(&[("cpu", "400m")], &[]),
            ],
            containers: vec![container(&[("cpu", "200m")], &[])],
            ..Default::default()
        };
        assert_eq!(effective(&pod).requests, amounts(&[("cpu", "500m")]));
        // The later init container with the sidecar beside it is the peak: 450m + 100m.
        pod.init_containers[2] = container(&[("cpu", "450m")], &[]);
        assert_eq!(effective(&pod).requests, amounts(&[("cpu", "550m")]));
        // A sidecar does not count for init containers before it.
        pod.init_containers = vec![
            container(&[("cpu", "450m")], &[]),
            sidecar(&[("cpu", "100m")]),
        ];
        assert_eq!(effective(&pod).requests, amounts(&[("cpu", "450m")]));
    }

    #[test]
    fn pod_level_resources_replace_cpu_and_memory_only() {
        let pod = PodAmounts {
            containers: vec![container(
                &[
                    ("cpu", "100m"),
                    ("memory", "1Gi"),
                    ("ephemeral-storage", "1Gi"),
                ],
                &[("memory", "2Gi")],
            )],
            pod_requests: list(&[("cpu", "1"), ("ephemeral-storage", "5Gi")]),
            pod_limits: list(&[("cpu", "2")]),
            ..Default::default()
        };
        let e = effective(&pod);
        assert_eq!(
            e.requests,
            amounts(&[
                ("cpu", "1"),
                ("memory", "1Gi"),
                ("ephemeral-storage", "1Gi")
            ])
        );
        assert_eq!(e.limits, amounts(&[("cpu", "2"), ("memory", "2Gi")]));
    }

    #[test]
    fn overhead_adds_to_every_request_but_only_to_set_limits() {
        let pod = PodAmounts {
            containers: vec![container(&[("cpu", "100m")], &[("cpu", "200m")])],
            overhead: list(&[("cpu", "250m"), ("memory", "120Mi")]),
            ..Default::default()
        };
        let e = effective(&pod);
        assert_eq!(e.requests, amounts(&[("cpu", "350m"), ("memory", "120Mi")]));
        assert_eq!(e.limits, amounts(&[("cpu", "450m")]));
        // A zero limit gets none (`PodLimits`: `ok && !value.IsZero()`).
        let pod = PodAmounts {
            containers: vec![container(&[], &[("cpu", "0"), ("memory", "1Gi")])],
            overhead: list(&[("cpu", "250m"), ("memory", "120Mi")]),
            ..Default::default()
        };
        assert_eq!(
            effective(&pod).limits,
            amounts(&[("cpu", "0"), ("memory", "1144Mi")])
        );
    }

    #[test]
    fn sums_per_resource_and_qos_class_against_allocatable() {
        let g = effective(&PodAmounts {
            containers: vec![container(
                &[("cpu", "500m"), ("memory", "1Gi")],
                &[("cpu", "500m"), ("memory", "1Gi")],
            )],
            ..Default::default()
        });
        let b = effective(&PodAmounts {
            containers: vec![container(
                &[("cpu", "250m"), ("nvidia.com/gpu", "1")],
                &[("memory", "512Mi"), ("nvidia.com/gpu", "1")],
            )],
            ..Default::default()
        });
        let be = Effective::default();
        let rows = allocated(
            &[
                (QosClass::Guaranteed, &g),
                (QosClass::Burstable, &b),
                (QosClass::BestEffort, &be),
            ],
            &list(&[
                ("cpu", "2"),
                ("memory", "4Gi"),
                ("ephemeral-storage", "10Gi"),
                ("pods", "110"),
            ]),
        );
        let names: Vec<_> = rows.iter().map(|r| r.resource.as_str()).collect();
        assert_eq!(
            names,
            ["cpu", "ephemeral-storage", "memory", "nvidia.com/gpu"]
        );
        let cpu = &rows[0];
        assert_eq!(cpu.requests.to_string(), "750m");
        assert_eq!(cpu.limits.to_string(), "500m");
        assert_eq!(cpu.allocatable.map(|q| q.to_string()), Some("2".into()));
        assert_eq!(
            percent(cpu.requests, cpu.allocatable.unwrap_or_default()),
            Some(37)
        );
        assert_eq!(cpu.by_qos[0].1.to_string(), "500m");
        assert_eq!(cpu.by_qos[1].1.to_string(), "250m");
        assert!(cpu.by_qos[2].1.is_zero());
        let mem = &rows[2];
        assert_eq!(mem.limits.to_string(), "1536Mi");
        let gpu = &rows[3];
        assert_eq!(gpu.allocatable, None, "the node advertises no GPU");
        assert_eq!(gpu.requests.to_string(), "1");
        assert!(rows[1].requests.is_zero());
    }

    #[test]
    fn percent_truncates_and_refuses_zero() {
        let q = |s: &str| s.parse::<Quantity>().unwrap_or_default();
        assert_eq!(percent(q("999m"), q("1")), Some(99));
        assert_eq!(percent(q("3"), q("2")), Some(150));
        assert_eq!(percent(q("1"), q("0")), None);
    }
}
