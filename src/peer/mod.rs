//! The peer protocol (docs/fence.md §5, issue 9): agents of one zone ask each other "do you
//! reach the API server, and when did you last?" before the fence acts. This module owns the wire
//! protocol only — both ends and their counters; deciding what the answers mean is
//! `core::quorum`'s.
//!
//! One exchange: `POST /v1/contact` with `{"from":…,"zone":…}`, signed (`auth`); the answer
//! `{"node":…,"zone":…,"reachable":…,"lastContactAgeMillis":…}` is signed too, bound to the
//! question's nonce. `server` answers (bounded in rate, size, time and connections); `client`
//! asks; `counters` counts both sides for `/metrics`.
//!
//! A question may also carry `"back":true`: the asker reaches the API server again, and the node
//! asked had answered it "cut off" since. The node asked answers as always, and, if it is cut off
//! itself, asks its own peers at once instead of at its next round (docs/fence.md §5).

pub mod auth;
pub mod client;
pub mod counters;
pub mod server;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::core::quorum::PeerReport;

pub use auth::{Key, KeyError};
pub use client::{AskError, ask, ask_all, tell_back};
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
    /// The asking node reaches the API server again, after the node asked answered it "cut off"
    /// (`agent::quorum::Nudges`). Absent when false, so a question from an agent that predates
    /// the field reads as an ordinary one, and such an agent ignores it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub back: bool,
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

    #[test]
    fn a_question_says_back_only_when_it_is() {
        let ordinary = Question {
            from: "n1".into(),
            zone: "z".into(),
            back: false,
        };
        let text = serde_json::to_string(&ordinary).expect("json");
        assert_eq!(text, r#"{"from":"n1","zone":"z"}"#);
        let told = Question {
            back: true,
            ..ordinary.clone()
        };
        let text = serde_json::to_string(&told).expect("json");
        assert_eq!(text, r#"{"from":"n1","zone":"z","back":true}"#);
        assert_eq!(
            serde_json::from_str::<Question>(&text).expect("parse"),
            told
        );
        // An older agent's question has no such field.
        let old: Question = serde_json::from_str(r#"{"from":"n1","zone":"z"}"#).expect("parse");
        assert_eq!(old, ordinary);
    }
}
