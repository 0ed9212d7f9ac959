//! The peer protocol (docs/fence.md §5, issue 9): agents of one zone ask each other "do you
//! reach the API server, and when did you last?" before the fence acts. This module owns the wire
//! protocol only — both ends and their counters; deciding what the answers mean is
//! `core::quorum`'s.
//!
//! One exchange: `POST /v1/contact` with `{"from":…,"zone":…}`, signed (`auth`); the answer
//! `{"node":…,"zone":…,"reachable":…,"lastContactAgeMillis":…}` is signed too, bound to the
//! question's nonce. `server` answers (bounded in rate, size, time and connections); `client`
//! asks; `counters` counts both sides for `/metrics`.

pub mod auth;
pub mod client;
pub mod counters;
pub mod server;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::core::quorum::PeerReport;

pub use auth::{Key, KeyError};
pub use client::{AskError, ask, ask_all};
pub use counters::{PeerCounters, Rejection};
pub use server::{AnswerFn, Limits, serve, serve_with_limits};

/// The most a question's or an answer's body may hold. Both are under 200 bytes in practice
/// (a node name is at most 253 bytes).
pub const MAX_BODY: usize = 4 << 10;

/// The question's body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// The asking node's name.
    pub from: String,
    /// The asking node's zone.
    pub zone: String,
}

/// The answer's body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub node: String,
    /// The answering node's zone key (`core::zone::zone_key`).
    pub zone: String,
    /// Its Node is labelled `node.kubernetes.io/exclude-disruption`. Absent when false, so an
    /// answer from an agent that predates the field reads as "not excluded", and such an agent
    /// ignores it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub excluded: bool,
    pub reachable: bool,
    /// Milliseconds since the answering node's last contact, on its monotonic clock; null when
    /// it never had one.
    pub last_contact_age_millis: Option<u64>,
}

impl From<&PeerReport> for Answer {
    fn from(r: &PeerReport) -> Answer {
        Answer {
            node: r.node.clone(),
            zone: r.zone.clone(),
            excluded: r.excluded,
            reachable: r.reachable,
            last_contact_age_millis: r
                .last_contact_age
                .map(|age| u64::try_from(age.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

impl From<Answer> for PeerReport {
    fn from(a: Answer) -> PeerReport {
        PeerReport {
            node: a.node,
            zone: a.zone,
            excluded: a.excluded,
            reachable: a.reachable,
            last_contact_age: a.last_contact_age_millis.map(Duration::from_millis),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_keeps_its_wire_names_and_round_trips() {
        let report = PeerReport {
            node: "n1".into(),
            zone: "z".into(),
            excluded: false,
            reachable: false,
            last_contact_age: Some(Duration::from_millis(1500)),
        };
        let text = serde_json::to_string(&Answer::from(&report)).expect("json");
        assert_eq!(
            text,
            r#"{"node":"n1","zone":"z","reachable":false,"lastContactAgeMillis":1500}"#
        );
        let back: Answer = serde_json::from_str(&text).expect("parse");
        assert_eq!(PeerReport::from(back), report);
        let never: Answer = serde_json::from_str(
            r#"{"node":"n","zone":"","reachable":true,"lastContactAgeMillis":null}"#,
        )
        .expect("parse");
        assert_eq!(PeerReport::from(never).last_contact_age, None);
        let excluded = PeerReport {
            excluded: true,
            ..report
        };
        let text = serde_json::to_string(&Answer::from(&excluded)).expect("json");
        assert!(text.contains(r#""excluded":true"#), "{text}");
        let back: Answer = serde_json::from_str(&text).expect("parse");
        assert_eq!(PeerReport::from(back), excluded);
    }
}
