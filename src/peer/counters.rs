//! Counters of the peer protocol, both ends: questions this node answered or rejected (by
//! reason), and answers it got when asking (by outcome). Atomics, so the server's tasks and the
//! fence's asks count without a lock; rendered as Prometheus text for `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::core::quorum::PeerReport;
use crate::peer::client::AskError;

/// Why the server refused a question. Each is counted and logged (rate-limited).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rejection {
    /// A signature header is missing or not in its format.
    Unsigned,
    /// The signature does not match (wrong key, or the message was changed after signing).
    BadSignature,
    /// The signed timestamp is more than 30 s from our clock.
    Stale,
    /// The nonce was already used within the replay window.
    Replayed,
    /// The body is over the 4 KiB limit.
    TooLarge,
    /// Over the request rate, the connection limit, or the replay cache is full.
    RateLimited,
    /// Not `POST /v1/contact`, or a body that is not the question.
    BadRequest,
}

impl Rejection {
    pub const ALL: [Rejection; 7] = [
        Rejection::Unsigned,
        Rejection::BadSignature,
        Rejection::Stale,
        Rejection::Replayed,
        Rejection::TooLarge,
        Rejection::RateLimited,
        Rejection::BadRequest,
    ];

    /// The metric label and log reason.
    pub fn label(self) -> &'static str {
        match self {
            Rejection::Unsigned => "unsigned",
            Rejection::BadSignature => "bad_signature",
            Rejection::Stale => "stale",
            Rejection::Replayed => "replayed",
            Rejection::TooLarge => "too_large",
            Rejection::RateLimited => "rate_limited",
            Rejection::BadRequest => "bad_request",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The outcomes of asking a peer, as metric labels: "ok" then [`AskError::reason`]s.
pub const ANSWER_OUTCOMES: [&str; 9] = [
    "ok",
    "timeout",
    "connect",
    "http",
    "unsigned",
    "bad_signature",
    "stale",
    "wrong_peer",
    "malformed",
];

/// Both ends' counters. Shared (`Arc`) between the server, the asking side and `/metrics`.
#[derive(Debug, Default)]
pub struct PeerCounters {
    accepted: AtomicU64,
    rejected: [AtomicU64; Rejection::ALL.len()],
    asked: [AtomicU64; ANSWER_OUTCOMES.len()],
}

impl PeerCounters {
    /// Counts one question answered.
    pub fn record_accepted(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one question refused.
    pub fn record_rejected(&self, reason: Rejection) {
        self.rejected[reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the outcome of one ask.
    pub fn record_asked(&self, result: &Result<PeerReport, AskError>) {
        let outcome = match result {
            Ok(_) => "ok",
            Err(e) => e.reason(),
        };
        if let Some(i) = ANSWER_OUTCOMES.iter().position(|o| *o == outcome) {
            self.asked[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Questions answered so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Questions refused for `reason` so far.
    pub fn rejected(&self, reason: Rejection) -> u64 {
        self.rejected[reason.index()].load(Ordering::Relaxed)
    }

    /// Questions refused for any reason so far.
    pub fn rejected_total(&self) -> u64 {
        Rejection::ALL.iter().map(|r| self.rejected(*r)).sum()
    }

    /// Asks that ended with `outcome` (one of [`ANSWER_OUTCOMES`]; 0 for any other).
    pub fn asked(&self, outcome: &str) -> u64 {
        ANSWER_OUTCOMES
            .iter()
            .position(|o| *o == outcome)
            .map_or(0, |i| self.asked[i].load(Ordering::Relaxed))
    }

    /// Appends the Prometheus text exposition of both counters, every label present (at 0 too,
    /// so a rate over them never starts from a missing series).
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP nodewarden_peer_requests_total Peer questions this node received, by result (accepted or the reason for refusing)."
        );
        let _ = writeln!(out, "# TYPE nodewarden_peer_requests_total counter");
        let _ = writeln!(
            out,
            "nodewarden_peer_requests_total{{result=\"accepted\"}} {}",
            self.accepted()
        );
        for reason in Rejection::ALL {
            let _ = writeln!(
                out,
                "nodewarden_peer_requests_total{{result=\"{}\"}} {}",
                reason.label(),
                self.rejected(reason)
            );
        }
        let _ = writeln!(
            out,
            "# HELP nodewarden_peer_answers_total Peer questions this node asked, by outcome."
        );
        let _ = writeln!(out, "# TYPE nodewarden_peer_answers_total counter");
        for (outcome, n) in ANSWER_OUTCOMES.iter().zip(&self.asked) {
            let _ = writeln!(
                out,
                "nodewarden_peer_answers_total{{result=\"{outcome}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_rendered_with_its_count() {
        let c = PeerCounters::default();
        c.record_accepted();
        c.record_rejected(Rejection::Replayed);
        c.record_rejected(Rejection::Replayed);
        c.record_asked(&Err(AskError::WrongPeer {
            expected: "a".into(),
            got: "b".into(),
        }));
        let mut out = String::new();
        c.render(&mut out);
        assert!(out.contains("# TYPE nodewarden_peer_requests_total counter\n"));
        assert!(out.contains("nodewarden_peer_requests_total{result=\"accepted\"} 1\n"));
        assert!(out.contains("nodewarden_peer_requests_total{result=\"replayed\"} 2\n"));
        assert!(out.contains("nodewarden_peer_requests_total{result=\"too_large\"} 0\n"));
        assert!(out.contains("nodewarden_peer_answers_total{result=\"wrong_peer\"} 1\n"));
        assert!(out.contains("nodewarden_peer_answers_total{result=\"ok\"} 0\n"));
        assert_eq!(
            out.lines()
                .filter(|l| l.starts_with("nodewarden_peer_requests_total{"))
                .count(),
            8
        );
        assert_eq!(
            out.lines()
                .filter(|l| l.starts_with("nodewarden_peer_answers_total{"))
                .count(),
            9
        );
    }

    #[test]
    fn labels_are_distinct_and_indices_match() {
        for (i, r) in Rejection::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
        let mut labels: Vec<_> = Rejection::ALL.iter().map(|r| r.label()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), Rejection::ALL.len());
    }
}
