//! What the fence task keeps on disk for `nodewarden status` beyond what the fence itself needs:
//! our Node's conditions, taints and allocatable, and each pod's effective requests and limits.
//! Conversion from API objects only; the arithmetic is the core's (`core::resources`).

use k8s_openapi::api::core::v1::Node;

use crate::api::slim::{ResourceAmounts, SlimContainer, SlimPod, SlimResources};
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
                time_added: t
                    .time_added
                    .as_ref()
                    .map(|a| crate::core::clock::rfc3339(std::time::SystemTime::from(a.0))),
            })
            .collect(),
        allocatable: status
            .and_then(|s| s.allocatable.as_ref())
            .map(|a| a.iter().map(|(k, q)| (k.clone(), q.0.clone())).collect())
            .unwrap_or_default(),
        swapped_from: None,
    }
}

/// A watched pod's effective requests and limits, read from the watch cache's compact pod
/// (`api::slim`); an error names the container and resource whose quantity does not parse (the
/// API server would not have stored it).
///
/// An in-place resize counts as upstream's `PodRequests` / `PodLimits` with
/// `UseStatusResources` count it (`core::resources`): each app container and sidecar with its
/// status, matched by name, and the `PodResizePending` condition's Infeasible. The cache keeps
/// only the statuses that change the count (`api::slim::SlimResize`); the others would give
/// the spec's amounts anyway.
pub fn pod_resources(pod: &SlimPod) -> Result<Effective, String> {
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(Effective::default());
    };
    let list = |m: Option<&ResourceAmounts>, whose: &str| {
        m.into_iter()
            .flat_map(|m| m.0.iter())
            .map(|(k, q)| match q.parse::<Quantity>() {
                Ok(v) => Ok((k.to_string(), v)),
                Err(e) => Err(format!("{whose}: {k}: {e}")),
            })
            .collect::<Result<ResourceList, String>>()
    };
    let requirements = |r: Option<&SlimResources>, whose: &str| {
        Ok::<_, String>((
            list(r.and_then(|r| r.requests.as_ref()), whose)?,
            list(r.and_then(|r| r.limits.as_ref()), whose)?,
        ))
    };
    let resize = pod.status.as_ref().and_then(|s| s.resize.as_deref());
    let status_of = |c: &SlimContainer| -> Result<Option<StatusAmounts>, String> {
        let Some(s) = resize.and_then(|r| r.containers.iter().find(|s| *s.name == *c.name)) else {
            return Ok(None);
        };
        let whose = format!("status of container {}", c.name);
        let (requests, limits) = requirements(Some(&s.resources), &whose)?;
        Ok(Some(StatusAmounts {
            requests,
            limits,
            allocated: list(s.allocated_resources.as_ref(), &whose)?,
        }))
    };
    let container = |c: &SlimContainer| {
        let (requests, limits) =
            requirements(c.resources.as_ref(), &format!("container {}", c.name))?;
        Ok::<_, String>(ContainerAmounts {
            requests,
            limits,
            sidecar: c.restart_policy.as_deref() == Some("Always"),
            status: status_of(c)?,
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
        resize_infeasible: resize.is_some_and(|r| r.infeasible),
    };
    Ok(resources::effective(&amounts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A pod with an app container `app` (cpu 1) and a sidecar `proxy` (cpu 1) after a
    /// regular init container `init` (cpu 1), and the given status: cpu 2 from the spec.
    fn pod(status: Value) -> SlimPod {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {
                "initContainers": [
                    {"name": "init", "resources": {"requests": {"cpu": "1"}}},
                    {"name": "proxy", "restartPolicy": "Always",
                     "resources": {"requests": {"cpu": "1"}}}
                ],
                "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]
            },
            "status": status
        });
        match serde_json::from_value(pod) {
            Ok(p) => p,
            Err(e) => panic!("decode: {e}"),
        }
    }

    fn cpu(p: &SlimPod) -> String {
        match pod_resources(p) {
            Ok(e) => e
                .requests
                .get("cpu")
                .map(|q| q.to_string())
                .unwrap_or_default(),
            Err(e) => format!("error: {e}"),
        }
    }

    fn status(name: &str, actual: &str, allocated: &str) -> Value {
        json!({"name": name, "resources": {"requests": {"cpu": actual}},
               "allocatedResources": {"cpu": allocated}})
    }

    fn pending(reason: &str) -> Value {
        json!({"type": "PodResizePending", "status": "True", "reason": reason})
    }

    /// `PodRequests` with `UseStatusResources` of 1.35 (`AggregateContainerRequests`,
    /// `determineContainerReqs`, `IsPodResizeInfeasible` in
    /// `staging/src/k8s.io/component-helpers/resource/helpers.go`).
    #[test]
    fn statuses_are_matched_by_name_and_read_as_upstream_reads_them() {
        type Row<'a> = (&'a str, Value, &'a str);
        let rows: Vec<Row> = vec![
            ("no status: the spec", json!({}), "2"),
            (
                "statuses in another order than the spec's containers",
                json!({"containerStatuses": [status("other", "9", "9"), status("app", "5", "1")],
                       "initContainerStatuses": [status("proxy", "1", "1")]}),
                "6",
            ),
            (
                "a sidecar's status is read from initContainerStatuses",
                json!({"initContainerStatuses": [status("proxy", "6", "1")]}),
                "7",
            ),
            (
                "a regular init container's status is never read",
                json!({"initContainerStatuses": [status("init", "9", "9")]}),
                "2",
            ),
            (
                "a status without resources is not read (allocatedResources alone)",
                json!({"containerStatuses": [{"name": "app", "allocatedResources": {"cpu": "7"}}]}),
                "2",
            ),
            (
                "Infeasible: the spec is not counted, the actual and allocated are",
                json!({"conditions": [pending("Infeasible")],
                       "containerStatuses": [{"name": "app", "resources": {}}]}),
                "1",
            ),
            (
                "Infeasible downsize not applied: max(actual, allocated)",
                json!({"conditions": [pending("Infeasible")],
                       "containerStatuses": [status("app", "5", "2")]}),
                "6",
            ),
            (
                "Deferred is not Infeasible: the spec still counts",
                json!({"conditions": [pending("Deferred")],
                       "containerStatuses": [status("app", "500m", "500m")]}),
                "2",
            ),
        ];
        for (rule, s, want) in rows {
            assert_eq!(cpu(&pod(s)), want, "{rule}");
        }
    }

    /// `IsPodResizeInfeasible` reads the first `PodResizePending` condition only. The flag is
    /// kept with the statuses that change the count (here the app's, actual 3 against 1).
    #[test]
    fn the_first_resize_pending_condition_decides() {
        let infeasible = |conditions: Value| {
            let p = pod(json!({"conditions": conditions,
                               "containerStatuses": [status("app", "3", "1")]}));
            p.status.and_then(|s| s.resize).map(|r| r.infeasible)
        };
        let ready = json!({"type": "Ready", "status": "True"});
        assert_eq!(
            infeasible(json!([ready, pending("Infeasible")])),
            Some(true)
        );
        assert_eq!(
            infeasible(json!([pending("Deferred"), pending("Infeasible")])),
            Some(false)
        );
        assert_eq!(
            infeasible(json!([{"type": "PodResizeInProgress", "status": "True"}])),
            Some(false)
        );
        assert_eq!(infeasible(Value::Null), Some(false));
    }

    /// The cache keeps a status only when it changes the count (`api::slim`), deciding on the
    /// text where it repeats the spec's and on the parsed amounts otherwise.
    #[test]
    fn a_status_that_repeats_the_spec_is_not_kept() {
        let kept = |s: Value| {
            pod(s)
                .status
                .and_then(|s| s.resize)
                .map(|r| r.containers.len())
                .unwrap_or(0)
        };
        let same = json!({"containerStatuses": [status("app", "1", "1")]});
        assert_eq!(kept(same.clone()), 0, "the spec's text");
        let mut infeasible = same;
        infeasible["conditions"] = json!([pending("Infeasible")]);
        assert_eq!(kept(infeasible), 0, "the spec's text, Infeasible");
        assert_eq!(
            kept(json!({"containerStatuses": [status("app", "1000m", "1")]})),
            0,
            "the same amount written otherwise"
        );
        assert_eq!(
            kept(json!({"containerStatuses": [{"name": "app",
                "resources": {"requests": {"cpu": "1"}}}]})),
            0,
            "no allocatedResources (an older kubelet)"
        );
        assert_eq!(
            kept(json!({"containerStatuses": [status("app", "1", "1")],
                        "initContainerStatuses": [status("proxy", "2", "1")]})),
            1,
            "only the sidecar that differs"
        );
        assert_eq!(
            kept(json!({"containerStatuses": [{"name": "app",
                "resources": {"requests": {"cpu": "1", "memory": "0"}},
                "allocatedResources": {"cpu": "1"}}]})),
            1,
            "a resource the spec does not name"
        );
    }

    #[test]
    fn a_status_quantity_that_does_not_parse_is_kept_and_reported() {
        let p = pod(json!({"containerStatuses": [status("app", "lots", "1")]}));
        assert!(
            cpu(&p).starts_with("error: status of container app: cpu:"),
            "{}",
            cpu(&p)
        );
    }
}
