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
//!
//! And `"lease":true`: the asker, restarted and with no contact of its own yet, asks the node to
//! read the asker's kubelet Lease (`kube-node-lease/<from>`) for it. A node that reaches the API
//! server reads it before answering and adds `"kubeletRenewTime"`: the Lease's `renewTime` as the
//! API server returned it (RFC 3339, microseconds), which the asker's kubelet stamped with the
//! asker's own clock (`core::quorum::kubelet_heard`).
//!
//! And `"taint":true`: the asker, cut off, asks the node to read the asker's Node. A node that
//! reaches the API server reads it before answering and adds `"unreachableTainted"`: whether the
//! Node carries `node.kubernetes.io/unreachable:NoExecute` (`core::quorum::TaintReads`); with
//! it, `"unreachableTaintAdded"`, the taint's `timeAdded`, and, while its Ready condition is
//! Unknown, `"readyUnknownSince"`, that condition's `lastTransitionTime` (RFC 3339, as the
//! kubelet Lease's time; `core::quorum::NodeReads`).
//!
//! And `"pods":[uid, …]`: the asker, cut off, asks the node about pods whose cgroups run on the
//! asker and that its view lacks. A node that reaches the API server lists the asker's pods and
//! adds `"pods"`: those of them the list holds (`core::unlisted`).
//!
//! Every answer also carries what the answering node's own reads of the controller-manager's
//! leader Lease prove (`core::quorum::PeerLeader`): `"leaderTimersFromAgeMillis"`, how long
//! before the answer the instant lies before which no taint eviction timer that can still
//! delete a pod started, and `"leaderReadPending":true` while it says it reaches the API server
//! and has not read the Lease since its own requests failed, and `"leaderless":true` while it
//! says it reaches the API server and its latest read found no process leading.
//!
//! And `"kubeletRenewedAgeMillis"`: how long before the answer, on the answering node's
//! monotonic clock, its own kubelet last renewed its Lease, as its readers read it for it since
//! its own last contact (`core::quorum::PeerReport::kubelet_age`).

pub mod auth;
pub mod client;
pub mod counters;
pub mod server;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::core::quorum::PeerReport;

pub use auth::{Key, KeyError};
pub use client::{AskError, ask, ask_all, ask_all_reading, tell_back};
pub use counters::{PeerCounters, Rejection};
pub use server::{
    AnswerFn, LeaseFn, Limits, PodsFn, Reads, TaintFn, ZoneFn, serve, serve_reading,
    serve_with_limits,
};

/// The most a question's body may hold: under 200 bytes in practice (a node name is at most 253
/// bytes), 1.4 KB with the most pods it asks about (`core::unlisted::MAX_ASKED`).
pub const MAX_BODY: usize = 4 << 10;

/// The most an answer's body may hold: under 400 bytes in practice, more with pods listed for
/// the asker (`Answer::pods`); the server leaves out pods beyond it.
pub const MAX_ANSWER_BODY: usize = 64 << 10;

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
    /// The asking node asks for its kubelet Lease's `renewTime` (`core::quorum::lease_readers`).
    /// Absent when false, as `back`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lease: bool,
    /// The asking node asks whether its Node carries the unreachable taint
    /// (`core::quorum::TaintReads`). Absent when false, as `back`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub taint: bool,
    /// The UIDs of pods whose cgroups run on the asking node and that its view lacks
    /// (`core::unlisted`, at most `unlisted::MAX_ASKED`): a node that reaches the API server
    /// lists the asker's pods and answers with these of them. Absent when empty, as `back`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods: Vec<String>,
    /// The asking node asks for its zone as the API server records it
    /// (`core::quorum::ZoneRecord`, `core::quorum::zone_readers`). Absent when false, as `back`.
    #[serde(
        default,
        rename = "zoneRecord",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub zone_record: bool,
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
    /// The asking node's kubelet Lease `renewTime`, read for a question with `lease` (RFC 3339
    /// with microseconds). Absent when not asked, not read, or not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet_renew_time: Option<String>,
    /// Whether the asking node's Node carries `node.kubernetes.io/unreachable:NoExecute`, or
    /// (since the fortieth session) the not-ready one, whose timers the controller's swap keeps;
    /// read for a question with `taint`. Absent when not asked, not read, or not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable_tainted: Option<bool>,
    /// That taint's `timeAdded`, read with `unreachable_tainted` (RFC 3339). Absent without the
    /// taint, without the field, or when not read; an agent that predates it reads the taint
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable_taint_added: Option<String>,
    /// The `timeAdded` of `node.kubernetes.io/not-ready:NoExecute` on the asking node's Node,
    /// read with `unreachable_tainted` (RFC 3339). Absent as `unreachable_taint_added`; an agent
    /// that predates it never sends it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_ready_taint_added: Option<String>,
    /// The `lastTransitionTime` of the asking node's Ready condition while it is Unknown, read
    /// with `unreachable_tainted` (RFC 3339). Absent otherwise, as `unreachable_taint_added`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_unknown_since: Option<String>,
    /// The asking node's Ready condition was False (its kubelet posted it), read with
    /// `unreachable_tainted`. Absent when false, as `excluded`; an agent that predates it never
    /// sends it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ready_false: bool,
    /// The pods asked about (`Question::pods`) that the list of the asking node's pods held, in
    /// the state file's form of a pod (`core::fence_plan::FencePod`); an empty list when it held
    /// none. Absent when not asked, not listed, or not readable. Read apart from the rest of the
    /// answer: a list with a pod this build cannot read (a later build's fields) counts as not
    /// listed, and the answer stands without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pods: Option<Vec<serde_json::Value>>,
    /// The asking node's zone as the API server records it, read for a question with
    /// `zoneRecord` (`core::quorum::ZoneRecord`). Absent when not asked, not read, or not
    /// readable. Refused with more Nodes not Ready than the zone holds, or with `onlyZone` or
    /// `askerLast` while one is Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_record: Option<crate::core::quorum::ZoneRecord>,
    /// How long before this answer, in milliseconds of the answering node's monotonic clock
    /// (rounded up), lies the instant before which its reads of the controller-manager's leader
    /// Lease prove that no taint eviction timer that can still delete a pod started
    /// (`core::quorum::PeerLeader::timers_from_age`). Absent until a read proves one; an agent
    /// that predates the field ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_timers_from_age_millis: Option<u64>,
    /// The answering node says it reaches the API server, and has not read that Lease since its
    /// own requests failed (`core::quorum::PeerLeader::pending`). Absent when false, as
    /// `excluded`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leader_read_pending: bool,
    /// The answering node says it reaches the API server, and its latest read of that Lease
    /// found no process leading (`core::quorum::PeerLeader::leaderless`). Absent when false, as
    /// `excluded`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leaderless: bool,
    /// How long before this answer, in milliseconds of the answering node's monotonic clock
    /// (rounded down), its own kubelet last renewed its Lease, as its readers read it for it
    /// since its own last contact (`core::quorum::PeerReport::kubelet_age`). Absent when no such
    /// read came back; an agent that predates the field ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubelet_renewed_age_millis: Option<u64>,
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
            kubelet_renew_time: r.kubelet_renewed.and_then(wire_text),
            unreachable_tainted: r.node_read.map(|n| n.tainted),
            unreachable_taint_added: r.node_read.and_then(|n| n.taint_added).and_then(wire_text),
            not_ready_taint_added: r
                .node_read
                .and_then(|n| n.not_ready_added)
                .and_then(wire_text),
            ready_unknown_since: r
                .node_read
                .and_then(|n| n.unknown_since)
                .and_then(wire_text),
            ready_false: r.node_read.is_some_and(|n| n.ready_false),
            // Without the pod's creation time: an asker that predates the field would read no
            // list with it, and the asker plans such a pod as one whose creation it does not
            // know (its counts move for none: early, never late).
            pods: r.pods.as_ref().map(|pods| {
                pods.iter()
                    .filter_map(|p| {
                        let mut pod = serde_json::to_value(p).ok()?;
                        if let Some(fields) = pod.as_object_mut() {
                            fields.remove("creationTimestamp");
                        }
                        Some(pod)
                    })
                    .collect()
            }),
            zone_record: r.zone_recorded,
            // Rounded up: the asker counts from its question's sending less this age, and an
            // older instant is never later than the one proven.
            leader_timers_from_age_millis: r
                .leader
                .timers_from_age
                .map(|age| u64::try_from(age.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)),
            leader_read_pending: r.leader.pending,
            leaderless: r.leader.leaderless,
            // Rounded down: the asker counts this peer judged first only when the age exceeds
            // its own kubelet's by more than the monitor period, and a younger age never does
            // sooner than the one read.
            kubelet_renewed_age_millis: r
                .kubelet_age
                .map(|age| u64::try_from(age.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

impl TryFrom<Answer> for PeerReport {
    /// What is wrong with the answer.
    type Error = String;

    fn try_from(a: Answer) -> Result<PeerReport, String> {
        let kubelet_renewed = wire_time("kubeletRenewTime", a.kubelet_renew_time.as_deref())?;
        let node_read = match a.unreachable_tainted {
            None => None,
            Some(tainted) => Some(crate::core::quorum::NodeRead {
                tainted,
                taint_added: wire_time(
                    "unreachableTaintAdded",
                    a.unreachable_taint_added.as_deref(),
                )?
                .filter(|_| tainted),
                not_ready_added: wire_time(
                    "notReadyTaintAdded",
                    a.not_ready_taint_added.as_deref(),
                )?
                .filter(|_| tainted),
                unknown_since: wire_time("readyUnknownSince", a.ready_unknown_since.as_deref())?,
                ready_false: a.ready_false,
            }),
        };
        if let Some(why) = a.zone_record.and_then(|z| z.impossible()) {
            return Err(format!("zoneRecord: {why}"));
        }
        Ok(PeerReport {
            node: a.node,
            zone: a.zone,
            excluded: a.excluded,
            reachable: a.reachable,
            last_contact_age: a.last_contact_age_millis.map(Duration::from_millis),
            kubelet_renewed,
            node_read,
            // A list with a pod this build cannot read is no list: leaving that pod out would
            // tell the asker it is not in the API.
            pods: a.pods.and_then(|pods| {
                pods.into_iter()
                    .map(serde_json::from_value)
                    .collect::<Result<Vec<_>, _>>()
                    .ok()
            }),
            zone_recorded: a.zone_record,
            leader: crate::core::quorum::PeerLeader {
                timers_from_age: a.leader_timers_from_age_millis.map(Duration::from_millis),
                pending: a.leader_read_pending,
                leaderless: a.leaderless,
            },
            kubelet_age: a.kubelet_renewed_age_millis.map(Duration::from_millis),
        })
    }
}

/// A time as the answer carries it (RFC 3339 with microseconds), or `None` for one the format
/// cannot hold: before 1970 or after 9999. The API server keeps such a time in an object (a
/// Lease's `renewTime` or a taint's `timeAdded` of 1969 is valid there), and formatting it
/// would panic (`humantime`'s `Display` does); the answer goes without it, as if it were not
/// read.
fn wire_text(t: std::time::SystemTime) -> Option<String> {
    use std::fmt::Write;
    t.duration_since(std::time::UNIX_EPOCH).ok()?;
    let mut text = String::new();
    write!(text, "{}", humantime::format_rfc3339_micros(t)).ok()?;
    Some(text)
}

/// A time of the answer (`name` on the wire), RFC 3339; an answer with one that is not is refused.
fn wire_time(name: &str, text: Option<&str>) -> Result<Option<std::time::SystemTime>, String> {
    text.map(|text| {
        humantime::parse_rfc3339(text).map_err(|e| {
            let shown = crate::bounded::excerpt(text);
            format!("{name} {shown:?}: {e}")
        })
    })
    .transpose()
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
            kubelet_renewed: None,
            node_read: None,
            zone_recorded: None,
            pods: None,
            leader: Default::default(),
            kubelet_age: None,
        };
        let text = serde_json::to_string(&Answer::from(&report)).expect("json");
        assert_eq!(
            text,
            r#"{"node":"n1","zone":"z","reachable":false,"lastContactAgeMillis":1500}"#
        );
        let back: Answer = serde_json::from_str(&text).expect("parse");
        assert_eq!(PeerReport::try_from(back), Ok(report.clone()));
        let never: Answer = serde_json::from_str(
            r#"{"node":"n","zone":"","reachable":true,"lastContactAgeMillis":null}"#,
        )
        .expect("parse");
        assert_eq!(
            PeerReport::try_from(never).map(|r| r.last_contact_age),
            Ok(None)
        );
        let excluded = PeerReport {
            excluded: true,
            ..report
        };
        let text = serde_json::to_string(&Answer::from(&excluded)).expect("json");
        assert!(text.contains(r#""excluded":true"#), "{text}");
        let back: Answer = serde_json::from_str(&text).expect("parse");
        assert_eq!(PeerReport::try_from(back), Ok(excluded));
    }

    #[test]
    fn a_lapsed_lead_and_the_own_kubelets_age_travel_and_an_older_answer_has_neither() {
        let report = PeerReport {
            leader: crate::core::quorum::PeerLeader {
                leaderless: true,
                ..Default::default()
            },
            kubelet_age: Some(Duration::from_micros(1_500_999)),
            ..reaching("n1")
        };
        let text = serde_json::to_string(&Answer::from(&report)).expect("json");
        assert!(
            text.ends_with(r#","leaderless":true,"kubeletRenewedAgeMillis":1500}"#),
            "{text}"
        );
        // Rounded down: never older than the age read.
        let back: Answer = serde_json::from_str(&text).expect("parse");
        let back = PeerReport::try_from(back).expect("a report");
        assert!(back.leader.leaderless);
        assert_eq!(back.kubelet_age, Some(Duration::from_millis(1500)));
        // Neither on the wire when false or unknown, and an agent that predates them sends
        // neither.
        let text = serde_json::to_string(&Answer::from(&reaching("n1"))).expect("json");
        assert!(
            !text.contains("leaderless") && !text.contains("kubeletRenewedAge"),
            "{text}"
        );
        let old: Answer = serde_json::from_str(
            r#"{"node":"n","zone":"","reachable":true,"lastContactAgeMillis":1}"#,
        )
        .expect("parse");
        let old = PeerReport::try_from(old).expect("a report");
        assert!(!old.leader.leaderless);
        assert_eq!(old.kubelet_age, None);
    }

    #[test]
    fn what_the_leader_reads_prove_travels_rounded_up_and_an_older_answer_proves_nothing() {
        let report = PeerReport {
            leader: crate::core::quorum::PeerLeader {
                timers_from_age: Some(Duration::from_micros(1_500_001)),
                pending: true,
                leaderless: false,
            },
            ..reaching("n1")
        };
        let text = serde_json::to_string(&Answer::from(&report)).expect("json");
        assert!(
            text.ends_with(r#","leaderTimersFromAgeMillis":1501,"leaderReadPending":true}"#),
            "{text}"
        );
        let back: Answer = serde_json::from_str(&text).expect("parse");
        let back = PeerReport::try_from(back).expect("a report");
        assert_eq!(
            back.leader.timers_from_age,
            Some(Duration::from_millis(1501))
        );
        assert!(back.leader.pending);
        // Nothing proven, nothing pending: neither field on the wire.
        let text = serde_json::to_string(&Answer::from(&reaching("n1"))).expect("json");
        assert!(!text.contains("leader"), "{text}");
        // An agent that predates the fields proves nothing.
        let old: Answer = serde_json::from_str(
            r#"{"node":"n","zone":"","reachable":true,"lastContactAgeMillis":1}"#,
        )
        .expect("parse");
        assert_eq!(
            PeerReport::try_from(old).map(|r| r.leader),
            Ok(crate::core::quorum::PeerLeader::default())
        );
    }

    #[test]
    fn a_question_says_back_only_when_it_is() {
        let ordinary = question_of("n1");
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
        let reading = Question {
            lease: true,
            ..ordinary
        };
        let text = serde_json::to_string(&reading).expect("json");
        assert_eq!(text, r#"{"from":"n1","zone":"z","lease":true}"#);
    }

    #[test]
    fn a_kubelet_renewal_read_for_the_asker_travels_to_the_microsecond_and_garbage_is_refused() {
        let renewed =
            std::time::SystemTime::UNIX_EPOCH + Duration::from_micros(1_764_806_400_123_456);
        let report = PeerReport {
            node: "n1".into(),
            zone: "z".into(),
            excluded: false,
            reachable: true,
            last_contact_age: Some(Duration::from_millis(10)),
            kubelet_renewed: Some(renewed),
            node_read: None,
            zone_recorded: None,
            pods: None,
            leader: Default::default(),
            kubelet_age: None,
        };
        let text = serde_json::to_string(&Answer::from(&report)).expect("json");
        assert!(
            text.ends_with(r#","kubeletRenewTime":"2025-12-04T00:00:00.123456Z"}"#),
            "{text}"
        );
        let back: Answer = serde_json::from_str(&text).expect("parse");
        assert_eq!(PeerReport::try_from(back), Ok(report));
        let garbage: Answer = serde_json::from_str(
            r#"{"node":"n","zone":"","reachable":true,"lastContactAgeMillis":1,"kubeletRenewTime":"yesterday"}"#,
        )
        .expect("parse");
        let refused = PeerReport::try_from(garbage).expect_err("not a time");
        assert!(
            refused.contains("kubeletRenewTime \"yesterday\""),
            "{refused}"
        );
    }

    #[test]
    fn the_times_read_on_the_askers_node_travel_to_the_microsecond_and_garbage_is_refused() {
        let unknown =
            std::time::SystemTime::UNIX_EPOCH + Duration::from_micros(1_800_000_000_123_456);
        let report = PeerReport {
            node_read: Some(crate::core::quorum::NodeRead {
                tainted: true,
                taint_added: Some(unknown + Duration::from_secs(5)),
                not_ready_added: None,
                unknown_since: Some(unknown),
                ready_false: false,
            }),
            ..reaching("n1")
        };
        round_trips(
            &report,
            r#","unreachableTainted":true,"unreachableTaintAdded":"2027-01-15T08:00:05.123456Z","readyUnknownSince":"2027-01-15T08:00:00.123456Z"}"#,
        );
        let read = |extra: &str| {
            let text = format!(
                r#"{{"node":"n","zone":"","reachable":true,"lastContactAgeMillis":1{extra}}}"#
            );
            let a: Answer = serde_json::from_str(&text).expect("an answer");
            PeerReport::try_from(a).map(|r| r.node_read)
        };
        // An agent that predates the times sends the taint alone.
        let alone = crate::core::quorum::NodeRead {
            tainted: true,
            ..Default::default()
        };
        assert_eq!(read(r#","unreachableTainted":true"#), Ok(Some(alone)));
        // A taint's time on a read without the taint counts nothing; times with no read are none.
        let untainted =
            read(r#","unreachableTainted":false,"unreachableTaintAdded":"2027-01-15T08:00:05Z""#);
        assert_eq!(untainted.map(|r| r.and_then(|r| r.taint_added)), Ok(None));
        assert_eq!(
            read(r#","readyUnknownSince":"2027-01-15T08:00:05Z""#),
            Ok(None)
        );
        let refused = read(r#","unreachableTainted":false,"readyUnknownSince":"soon""#)
            .expect_err("not a time");
        assert!(refused.contains("readyUnknownSince \"soon\""), "{refused}");
        // The kubelet's Ready=False: `"readyFalse": true`, absent when false, and read back.
        let posted = PeerReport {
            node_read: Some(crate::core::quorum::NodeRead {
                ready_false: true,
                ..Default::default()
            }),
            ..reaching("n1")
        };
        round_trips(&posted, r#","unreachableTainted":false,"readyFalse":true}"#);
        let ready = read(r#","unreachableTainted":false"#).expect("a read");
        assert_eq!(ready.map(|r| r.ready_false), Some(false));
        // An older reader never sends it; with no read of the Node it means nothing.
        assert_eq!(read(r#","readyFalse":true"#), Ok(None));
        // The not-ready taint's `timeAdded`: `"notReadyTaintAdded"`, read back to the
        // microsecond; on a read without a taint it counts nothing, and garbage is refused.
        let not_ready = PeerReport {
            node_read: Some(crate::core::quorum::NodeRead {
                tainted: true,
                not_ready_added: Some(unknown),
                ..Default::default()
            }),
            ..reaching("n1")
        };
        round_trips(
            &not_ready,
            r#","unreachableTainted":true,"notReadyTaintAdded":"2027-01-15T08:00:00.123456Z"}"#,
        );
        let untainted =
            read(r#","unreachableTainted":false,"notReadyTaintAdded":"2027-01-15T08:00:05Z""#);
        assert_eq!(
            untainted.map(|r| r.and_then(|r| r.not_ready_added)),
            Ok(None)
        );
        let refused = read(r#","unreachableTainted":true,"notReadyTaintAdded":"later""#)
            .expect_err("not a time");
        assert!(
            refused.contains("notReadyTaintAdded \"later\""),
            "{refused}"
        );
    }

    /// A time read from the API server that RFC 3339 as the answer writes it cannot hold (before
    /// 1970, after 9999) leaves the answer without that time, never panics the peer's server.
    #[test]
    fn a_time_the_wire_cannot_hold_is_left_out_of_the_answer() {
        let epoch = std::time::SystemTime::UNIX_EPOCH;
        let before = epoch - Duration::from_secs(1);
        let after = epoch + Duration::from_secs(253_402_300_800);
        for t in [before, after] {
            let report = PeerReport {
                kubelet_renewed: Some(t),
                node_read: Some(crate::core::quorum::NodeRead {
                    tainted: true,
                    taint_added: Some(t),
                    not_ready_added: Some(t),
                    unknown_since: Some(t),
                    ready_false: false,
                }),
                ..reaching("n1")
            };
            let answer = Answer::from(&report);
            assert_eq!(
                (
                    answer.kubelet_renew_time.as_deref(),
                    answer.unreachable_tainted,
                    answer.unreachable_taint_added.as_deref(),
                    answer.not_ready_taint_added.as_deref(),
                    answer.ready_unknown_since.as_deref()
                ),
                (None, Some(true), None, None, None),
                "{t:?}"
            );
        }
        assert_eq!(
            wire_text(epoch).as_deref(),
            Some("1970-01-01T00:00:00.000000Z")
        );
    }

    #[test]
    fn a_zone_record_travels_under_its_wire_names_and_an_impossible_one_is_refused() {
        let report = PeerReport {
            zone_recorded: Some(crate::core::quorum::ZoneRecord {
                not_ready: 3,
                size: 5,
                ..Default::default()
            }),
            ..reaching("n1")
        };
        let text = serde_json::to_string(&Answer::from(&report)).expect("json");
        assert!(
            text.ends_with(r#","zoneRecord":{"notReady":3,"size":5,"unreachableTainted":false}}"#),
            "{text}"
        );
        let back: Answer = serde_json::from_str(&text).expect("parse");
        assert_eq!(PeerReport::try_from(back), Ok(report));
        // An answer with the record `zone_record`, refused for `why`.
        let refused = |zone_record: &str, why: &str| {
            let impossible: Answer = serde_json::from_str(&format!(
                r#"{{"node":"n","zone":"","reachable":true,"lastContactAgeMillis":1,"zoneRecord":{zone_record}}}"#
            ))
            .expect("parse");
            let refused = PeerReport::try_from(impossible).expect_err(why);
            assert!(refused.contains(why), "{refused}");
        };
        refused(
            r#"{"notReady":6,"size":5,"unreachableTainted":false}"#,
            "notReady 6 of size 5",
        );
        // A zone with no node Ready, with both facts: they travel; with a node Ready, refused.
        let down = PeerReport {
            zone_recorded: Some(crate::core::quorum::ZoneRecord {
                not_ready: 5,
                size: 5,
                only_zone: true,
                asker_last: true,
                ..Default::default()
            }),
            ..reaching("n1")
        };
        let text = serde_json::to_string(&Answer::from(&down)).expect("json");
        assert!(
            text.ends_with(r#""unreachableTainted":false,"onlyZone":true,"askerLast":true}}"#),
            "{text}"
        );
        let back: Answer = serde_json::from_str(&text).expect("parse");
        assert_eq!(PeerReport::try_from(back), Ok(down.clone()));
        refused(
            r#"{"notReady":4,"size":5,"unreachableTainted":false,"askerLast":true}"#,
            "askerLast with notReady 4 of size 5",
        );
        // The seconds to the last Unknown write travel with `onlyZone`, and are refused without.
        let timed = PeerReport {
            zone_recorded: down.zone_recorded.map(|z| crate::core::quorum::ZoneRecord {
                asker_last: false,
                last_down_after: Some(5),
                ..z
            }),
            ..reaching("n1")
        };
        round_trips(&timed, r#""onlyZone":true,"lastDownAfterSeconds":5}}"#);
        refused(
            r#"{"notReady":5,"size":5,"unreachableTainted":false,"lastDownAfterSeconds":5}"#,
            "lastDownAfterSeconds without onlyZone",
        );
        let asking = Question {
            zone_record: true,
            ..question_of("n1")
        };
        let text = serde_json::to_string(&asking).expect("json");
        assert_eq!(text, r#"{"from":"n1","zone":"z","zoneRecord":true}"#);
    }

    /// The answer of `node`, which reaches the API server (its contact 10 ms old).
    /// `report`'s answer ends with `tail` on the wire, and reads back as `report`.
    fn round_trips(report: &PeerReport, tail: &str) {
        let text = serde_json::to_string(&Answer::from(report)).expect("serialize");
        assert!(text.ends_with(tail), "{text}");
        let back: Answer = serde_json::from_str(&text).expect("parse");
        assert_eq!(PeerReport::try_from(back).as_ref(), Ok(report));
    }

    fn reaching(node: &str) -> PeerReport {
        crate::core::quorum::answer(
            node,
            "z",
            Some(Duration::from_millis(10)),
            Duration::from_secs(15),
        )
    }

    fn question_of(from: &str) -> Question {
        Question {
            from: from.into(),
            zone: "z".into(),
            back: false,
            lease: false,
            taint: false,
            pods: Vec::new(),
            zone_record: false,
        }
    }

    #[test]
    fn a_list_with_a_pod_this_build_cannot_read_counts_as_not_listed() {
        let pod = |extra: &str| {
            format!(
                r#"{{"uid":"u1","namespace":"d","name":"p","tolerations":[],"terminationGracePeriodSeconds":30,"ownerKind":null,"staticOrMirror":false,"qosClass":"BestEffort","optedOut":false,"terminal":false{extra}}}"#
            )
        };
        let answer = |pods: &str| -> PeerReport {
            let text = format!(
                r#"{{"node":"n","zone":"","reachable":true,"lastContactAgeMillis":1,"pods":[{pods}]}}"#
            );
            let a: Answer = serde_json::from_str(&text).expect("an answer");
            PeerReport::try_from(a).expect("a report")
        };
        let read = answer(&pod(""));
        assert_eq!(read.pods.as_ref().map(Vec::len), Some(1));
        let later = answer(&format!("{},{}", pod(""), pod(r#","laterField":1"#)));
        assert_eq!(later.pods, None);
        assert!(later.reachable);
        // A pod goes without its creation time, which an older asker could not read: the list
        // it sends is one such an asker reads, and the pod comes back without the time.
        let mut listed = read.pods.expect("listed")[0].clone();
        listed.created = Some(std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let report = PeerReport {
            pods: Some(vec![listed.clone()]),
            ..reaching("n1")
        };
        let sent = Answer::from(&report);
        let sent_pods = sent.pods.clone().expect("pods");
        assert!(
            sent_pods[0].get("creationTimestamp").is_none(),
            "{sent_pods:?}"
        );
        let older: serde_json::Value = serde_json::from_str(&pod("")).expect("a pod");
        assert_eq!(sent_pods[0], older);
        let back = PeerReport::try_from(sent).expect("a report");
        listed.created = None;
        assert_eq!(back.pods, Some(vec![listed]));
    }
}
