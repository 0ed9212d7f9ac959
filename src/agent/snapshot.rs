//! What the fence task keeps on disk for `nodewarden status` beyond what the fence itself needs:
//! our Node's conditions, taints and allocatable, and each pod's effective requests and limits.
//! Conversion from API objects only; the arithmetic is the core's (`core::resources`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

use crate::core::quantity::Quantity;
use crate::core::resources::{
    self, ContainerAmounts, Effective, PodAmounts, ResourceList, StatusAmounts,
};
use crate::state::{StoredCondition, StoredNode, StoredTaint};

/// The parts of our Node that `status` shows.
pub fn node(n: &Node) -> StoredNode {
    let status = n.status.as_ref();
    StoredNode {
        conditions: status
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|c| StoredCondition {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone().unwrap_or_default(),
                message: c.message.clone().unwrap_or_default(),
                last_transition_time: c
                    .last_transition_time
                    .as_ref()
                    .map(|t| crate::core::clock::rfc3339(std::time::SystemTime::from(t.0))),
            })
            .collect(),
        taints: n
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or_default()
            .iter()
            .map(|t| StoredTaint {
                key: t.key.clone(),
                value: t.value.clone().unwrap_or_default(),
                effect: t.effect.clone(),
            })
            .collect(),
        allocatable: status
            .and_then(|s| s.allocatable.as_ref())
            .map(|a| a.iter().map(|(k, q)| (k.clone(), q.0.clone())).collect())
            .unwrap_or_default(),
    }
}

/// A pod's effective requests and limits; an error names the container and resource whose
/// quantity does not parse (the API server would not have stored it).
pub fn pod_resources(pod: &Pod) -> Result<Effective, String> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(Effective::default());
    };
    let list = |m: Option<&BTreeMap<String, ApiQuantity>>, whose: &str| {
        m.into_iter()
            .flatten()
            .map(|(k, q)| match q.0.parse::<Quantity>() {
                Ok(v) => Ok((k.clone(), v)),
                Err(e) => Err(format!("{whose}: {k}: {e}")),
            })
            .collect::<Result<ResourceList, String>>()
    };
    let requirements = |r: Option<&ResourceRequirements>, whose: &str| {
        Ok::<_, String>((
            list(r.and_then(|r| r.requests.as_ref()), whose)?,
            list(r.and_then(|r| r.limits.as_ref()), whose)?,
        ))
    };
    let status = pod.status.as_ref();
    // In-place resize: the status of the container of that name, where it reports `resources`
    // (upstream's `cs.Resources != nil`; `core::resources` says how it counts).
    let statuses = |c: &Container, init: bool| {
        let of_kind = status.and_then(|s| {
            if init {
                s.init_container_statuses.as_ref()
            } else {
                s.container_statuses.as_ref()
            }
        });
        let Some(cs) = of_kind.into_iter().flatten().find(|cs| cs.name == c.name) else {
            return Ok(None);
        };
        let Some(actual) = cs.resources.as_ref() else {
            return Ok(None);
        };
        let whose = format!("status of container {}", c.name);
        let (requests, limits) = requirements(Some(actual), &whose)?;
        Ok::<_, String>(Some(StatusAmounts {
            requests,
            limits,
            allocated: list(cs.allocated_resources.as_ref(), &whose)?,
        }))
    };
    let container = |c: &Container, init: bool| {
        let (requests, limits) =
            requirements(c.resources.as_ref(), &format!("container {}", c.name))?;
        Ok::<_, String>(ContainerAmounts {
            requests,
            limits,
            sidecar: c.restart_policy.as_deref() == Some("Always"),
            status: statuses(c, init)?,
        })
    };
    let (pod_requests, pod_limits) = requirements(spec.resources.as_ref(), "spec.resources")?;
    let amounts = PodAmounts {
        containers: spec
            .containers
            .iter()
            .map(|c| container(c, false))
            .collect::<Result<_, _>>()?,
        init_containers: spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| container(c, true))
            .collect::<Result<_, _>>()?,
        overhead: list(spec.overhead.as_ref(), "spec.overhead")?,
        pod_requests,
        pod_limits,
        // `IsPodResizeInfeasible`: the PodResizePending condition's reason.
        resize_infeasible: status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.type_ == "PodResizePending")
            .is_some_and(|c| c.reason.as_deref() == Some("Infeasible")),
    };
    Ok(resources::effective(&amounts))
}
