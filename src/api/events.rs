//! core/v1 Events for condition transitions (docs/semantics.md §6.3: "Node <name> status is now:
//! <Event>"), recorded in the `default` namespace against the Node as the kubelet does.

use std::time::SystemTime;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff;
use kube::Api;
use kube::api::PostParams;

use crate::api::{ApiError, FIELD_MANAGER, Requests};

/// Node events live in the `default` namespace (the Node is cluster-scoped).
pub const EVENT_NAMESPACE: &str = "default";

pub use crate::core::event::PendingEvent;

/// 32-bit FNV-1a of the reason, type and message: stable across processes and builds.
fn digest(event: &PendingEvent) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    let kind: &[u8] = if event.warning { b"W" } else { b"N" };
    for part in [event.reason.as_bytes(), kind, event.message.as_bytes()] {
        for &b in part.iter().chain(&[0u8]) {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    h
}

fn timestamp(t: SystemTime) -> Option<jiff::Timestamp> {
    jiff::Timestamp::try_from(t).ok()
}

/// Creates one Event about our Node. An event that already exists (a retry of a create whose
/// answer was lost) counts as delivered.
pub async fn send(
    requests: &Requests,
    api: &Api<Event>,
    node: &str,
    node_uid: Option<&str>,
    event: &PendingEvent,
) -> Result<(), ApiError> {
    let nanos = event
        .at
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let at = timestamp(event.at).map(Time);
    let body = Event {
        metadata: ObjectMeta {
            // The kubelet's naming, <object>.<hex timestamp>, plus a digest of what the event
            // says: events of the same instant (several conditions flipping in one cycle) get
            // distinct names, and every retry of one event — after a lost answer or a restart —
            // gets the same name, so a second delivery is AlreadyExists, not a duplicate.
            name: Some(format!("{node}.{nanos:x}.{:08x}", digest(event))),
            namespace: Some(EVENT_NAMESPACE.to_string()),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".to_string()),
            kind: Some("Node".to_string()),
            name: Some(node.to_string()),
            uid: node_uid.map(str::to_string),
            ..ObjectReference::default()
        },
        reason: Some(event.reason.clone()),
        message: Some(event.message.clone()),
        type_: Some(if event.warning { "Warning" } else { "Normal" }.to_string()),
        source: Some(EventSource {
            component: Some(FIELD_MANAGER.to_string()),
            host: Some(node.to_string()),
        }),
        reporting_component: Some(FIELD_MANAGER.to_string()),
        reporting_instance: Some(node.to_string()),
        first_timestamp: at.clone(),
        last_timestamp: at,
        count: Some(1),
        ..Event::default()
    };
    let pp = PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PostParams::default()
    };
    match requests
        .call(
            "create",
            format!("events/{EVENT_NAMESPACE}"),
            api.create(&pp, &body),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(ApiError::Status {
            code: 409, reason, ..
        }) if reason == "AlreadyExists" => Ok(()),
        Err(e) => Err(e),
    }
}
