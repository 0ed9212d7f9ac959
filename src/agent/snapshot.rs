//! What the fence task keeps on disk for `nodewarden status` beyond what the fence itself needs:
//! our Node's conditions, taints and allocatable, and each pod's effective requests and limits.
//! Conversion from API objects only; the arithmetic is the core's (`core::resources`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Node, Pod, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

use crate::core::quantity::Quantity;
use crate::core::resources::{self, ContainerAmounts, Effective, PodAmounts, ResourceList};
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
    let container = |c: &Container| {
        let (requests, limits) =
            requirements(c.resources.as_ref(), &format!("container {}", c.name))?;
        Ok::<_, String>(ContainerAmounts {
            requests,
            limits,
            sidecar: c.restart_policy.as_deref() == Some("Always"),
        })
    };
    let (pod_requests, pod_limits) = requirements(spec.resources.as_ref(), "spec.resources")?;
    let amounts = PodAmounts {
        containers: spec
            .containers
            .iter()
            .map(container)
            .collect::<Result<_, _>>()?,
        init_containers: spec
            .init_containers
            .iter()
            .flatten()
            .map(container)
            .collect::<Result<_, _>>()?,
        overhead: list(spec.overhead.as_ref(), "spec.overhead")?,
        pod_requests,
        pod_limits,
    };
    Ok(resources::effective(&amounts))
}
