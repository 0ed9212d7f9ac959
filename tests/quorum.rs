//! The peer quorum's verdict (DESIGN §6 rule 6) as a table of SEMANTICS §5.5: every zone state
//! and zone-size boundary, no peers known, no peers answering, mixed and stale answers; and the
//! hold → enforce rule in the fence plan.

use std::time::Duration;

use nodewarden::core::fence_plan::{FencePod, FencePolicy, Mode, Plan, QuorumVerdict, plan};
use nodewarden::core::qos::QosClass;
use nodewarden::core::quorum::{
    Gate, Heard, PeerReport, QuorumPolicy, Round, Undecided, Verdict, decide,
};
use nodewarden::core::taint::{Effect, Toleration};

const ZONE: &str = "zone-a";
/// Our own last contact was this long ago at the round.
const OWN_AGE: Duration = Duration::from_secs(20);

fn policy() -> QuorumPolicy {
    QuorumPolicy {
        without_peers: Undecided::Hold,
        whole_zone_cut_off: Undecided::Enforce,
        lost_together: Duration::from_secs(15),
        settled_after: OWN_AGE,
    }
}

fn report(node: &str, reachable: bool, age: Option<u64>) -> Heard {
    Heard::Report(PeerReport {
        node: node.into(),
        zone: ZONE.into(),
        reachable,
        last_contact_age: age.map(Duration::from_secs),
    })
}

/// A peer that lost the API together with us (its last contact as old as ours).
fn cut(i: usize) -> (String, Heard) {
    (ZONE.into(), report(&format!("c{i}"), false, Some(20)))
}
fn up(i: usize) -> (String, Heard) {
    (ZONE.into(), report(&format!("u{i}"), true, Some(1)))
}
fn silent() -> (String, Heard) {
    (ZONE.into(), Heard::Silent)
}

/// A zone of `size` nodes (this one included) of which `cut_peers` peers are cut off with us and
/// the rest answer that they reach the API server.
fn zone(size: usize, cut_peers: usize) -> Round {
    let mut heard: Vec<_> = (0..cut_peers).map(cut).collect();
    heard.extend((0..size - 1 - cut_peers).map(up));
    Round {
        zone: ZONE.into(),
        zone_size: size,
        other_zones: 1,
        own_contact_age: OWN_AGE,
        heard,
    }
}

fn word(round: &Round) -> &'static str {
    decide(round, &policy(), true).word()
}

#[test]
fn partial_disruption_holds_from_more_than_two_and_55_percent_in_zones_up_to_50() {
    // (zone size, peers cut off with us) → verdict; "not ready" = peers + this node.
    let table = [
        (5, 0, "enforce"),    // alone: 1 of 5
        (5, 1, "enforce"),    // 2 of 5: not more than two
        (5, 2, "hold"),       // 3 of 5 = 60 %
        (3, 1, "enforce"),    // 2 of 3 = 67 % but not more than two
        (4, 2, "hold"),       // 3 of 4 = 75 %
        (6, 2, "enforce"),    // 3 of 6 = 50 %
        (7, 3, "hold"),       // 4 of 7 = 57 %
        (20, 9, "enforce"),   // 10 of 20 = 50 %
        (20, 10, "hold"),     // 11 of 20 = 55 % exactly: the controller's test is ≥
        (50, 27, "hold"),     // 28 of 50 = 56 %, zone of exactly 50
        (51, 28, "enforce"),  // 29 of 51 = 57 %, but a zone above 50 is still evicted (0.01/s)
        (100, 98, "enforce"), // 99 of 100: still partial, still evicted
    ];
    for (size, cut_peers, want) in table {
        let r = zone(size, cut_peers);
        let v = decide(&r, &policy(), true);
        assert_eq!(
            v.word(),
            want,
            "zone {size}, {cut_peers} peers cut: {}",
            v.reason()
        );
    }
}

#[test]
fn a_whole_zone_cut_off_follows_the_other_zones_and_the_policy() {
    let mut r = zone(3, 2);
    // Another zone reaches the API server: the control plane is up and evicts a fully disrupted
    // zone (rate 0.1) → the policy, enforce by default.
    r.heard.push(("zone-b".into(), report("b1", true, Some(1))));
    assert_eq!(word(&r), "enforce");
    let hold = QuorumPolicy {
        whole_zone_cut_off: Undecided::Hold,
        ..policy()
    };
    assert!(decide(&r, &hold, true).is_hold());
    // Every peer asked in the other zone is cut off too: every zone down, nothing is evicted.
    r.heard.pop();
    r.heard
        .push(("zone-b".into(), report("b1", false, Some(25))));
    let v = decide(&r, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    // The other zone is silent: cannot tell → the policy.
    r.heard.pop();
    r.heard.push(("zone-b".into(), Heard::Silent));
    assert_eq!(word(&r), "enforce");
    assert!(decide(&r, &hold, true).is_hold());
    // One zone only, all of it cut off: the control plane sees every zone down.
    let mut single = zone(3, 2);
    single.other_zones = 0;
    let v = decide(&single, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    // A zone of two, both cut off: not partial (not more than two) but full disruption.
    let mut two = zone(2, 1);
    two.other_zones = 0;
    assert_eq!(word(&two), "hold");
}

#[test]
fn no_peers_known_follows_without_peers_and_silence_never_holds() {
    let empty = Round {
        zone: ZONE.into(),
        zone_size: 1,
        other_zones: 0,
        own_contact_age: OWN_AGE,
        heard: vec![],
    };
    assert!(decide(&empty, &policy(), false).is_hold());
    let enforce = QuorumPolicy {
        without_peers: Undecided::Enforce,
        ..policy()
    };
    assert_eq!(decide(&empty, &enforce, false).word(), "enforce");
    // Peers known, none answers (this node lost every link): it is alone → enforce.
    let mut r = zone(5, 0);
    r.heard = vec![silent(), silent(), silent(), silent()];
    let v = decide(&r, &policy(), true);
    assert_eq!(v.word(), "enforce", "{}", v.reason());
    assert!(v.reason().contains("no peer answers"));
    // Two cut off with us, two silent: silence counts as healthy → 3 of 5 still holds; with
    // one cut off, 2 of 5 enforces.
    r.heard = vec![cut(0), cut(1), silent(), silent()];
    assert_eq!(word(&r), "hold");
    r.heard = vec![cut(0), silent(), silent(), silent()];
    assert_eq!(word(&r), "enforce");
}

#[test]
fn only_peers_lost_together_with_this_node_count_against_its_zone() {
    // Four peers cut off; what their last contact says decides whether the controller sees them
    // not ready at the moment it can first taint this node.
    let mut r = zone(5, 0);
    let peer = |age: Option<u64>| (ZONE.to_string(), report("p", false, age));
    // Lost 16 s after us (age 4 s vs our 20 s): past `lost_together` (15 s) → still Ready when
    // this node is tainted → enforce.
    r.heard = vec![peer(Some(4)), peer(Some(4)), up(0), up(1)];
    assert_eq!(word(&r), "enforce");
    // Lost exactly 15 s after us: counted together → 3 of 5 → hold.
    r.heard = vec![peer(Some(5)), peer(Some(5)), up(0), up(1)];
    assert_eq!(word(&r), "hold");
    // Stale peers (contact long before ours, or never) are not ready already.
    r.heard = vec![peer(Some(3600)), peer(None), up(0), up(1)];
    assert_eq!(word(&r), "hold");
    // A peer that answers "reachable" with an old contact is healthy (its own rule).
    r.heard = vec![
        (ZONE.into(), report("p", true, Some(3600))),
        cut(0),
        up(0),
        up(1),
    ];
    assert_eq!(word(&r), "enforce");
    // Answers from other zones never count against this zone.
    r.heard = vec![
        ("zone-b".into(), report("b", false, Some(20))),
        ("zone-b".into(), report("b2", false, Some(20))),
        cut(0),
        up(0),
    ];
    assert_eq!(word(&r), "enforce");
}

#[test]
fn a_count_that_says_enforce_waits_until_peers_lost_together_show_it() {
    // Our last contact 10 s ago, settled only at 20 s: four peers answer "reachable", but one
    // that lost the API 5 s after us may not know yet.
    let mut r = zone(5, 0);
    r.own_contact_age = Duration::from_secs(10);
    let v = decide(&r, &policy(), true);
    assert_eq!(v.word(), "pending", "{}", v.reason());
    // A hold needs no waiting (peers already say so), nor does silence.
    let mut held = zone(5, 2);
    held.own_contact_age = Duration::from_secs(10);
    assert_eq!(word(&held), "hold");
    r.heard = vec![silent(), silent(), silent(), silent()];
    assert_eq!(word(&r), "enforce");
    // Pending is no evidence of a hold: it does not move deadlines once the verdict enforces.
    let mut gate = Gate::default();
    gate.record(Duration::from_secs(1010), v);
    gate.record(
        Duration::from_secs(1020),
        Verdict::Enforce {
            reason: "settled".into(),
        },
    );
    assert_eq!(gate.not_before(Duration::from_secs(10)), None);
}

#[test]
fn a_list_smaller_than_the_answers_never_divides_below_one() {
    // A stale peer list (zone size 1) but three peers answered from our zone, two cut off: the
    // zone has at least four nodes, one ready → 3 of 4, partial disruption, not a full one.
    let mut r = zone(1, 0);
    r.heard = vec![cut(0), cut(1), up(0)];
    r.other_zones = 0;
    let v = decide(&r, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    assert!(v.reason().contains("3 of 4"), "{}", v.reason());
}

fn pod() -> FencePod {
    FencePod {
        uid: "u1".into(),
        namespace: "default".into(),
        name: "web-1".into(),
        tolerations: vec![Toleration {
            toleration_seconds: Some(30),
            ..Toleration::exists("node.kubernetes.io/unreachable", Some(Effect::NoExecute))
        }],
        termination_grace_seconds: 10,
        owner_kind: Some("ReplicaSet".into()),
        static_or_mirror: false,
        qos: QosClass::Burstable,
        opted_out: false,
        terminal: false,
    }
}

fn eviction(quorum: &QuorumVerdict) -> Option<Duration> {
    let policy = FencePolicy {
        node_monitor_grace_period: Duration::from_secs(40),
        safety_margin: Duration::from_secs(2),
        grace_cap: Duration::from_secs(30),
        mode: Mode::Enforce,
    };
    match &plan(&[pod()], Duration::from_secs(1000), &policy, quorum)[0].plan {
        Plan::Stop { schedule, .. } => Some(schedule.eviction_time),
        Plan::Hold { .. } => None,
        Plan::Never { reason } => panic!("never: {reason}"),
    }
}

#[test]
fn hold_turning_to_enforce_counts_from_the_end_of_the_hold_never_before() {
    let s = Duration::from_secs;
    let mut gate = Gate::default();
    let hold = Verdict::Hold {
        reason: "3 of 5".into(),
    };
    let enforce = Verdict::Enforce {
        reason: "1 of 5".into(),
    };
    // Rounds at 1030 and 1060 hold; the plan holds.
    assert!(gate.record(s(1030), hold.clone()));
    assert!(
        !gate.record(s(1060), hold.clone()),
        "the same verdict is no change"
    );
    assert_eq!(
        eviction(&QuorumVerdict::Hold {
            reason: "3 of 5".into()
        }),
        None
    );
    // The round at 1063 enforces: the taint can come no earlier than the last holding round
    // (1060) minus a request timeout (10 s) → 1050, + 30 s toleration.
    assert!(gate.record(s(1063), enforce.clone()));
    let not_before = gate.not_before(s(10));
    assert_eq!(not_before, Some(s(1050)));
    assert_eq!(
        eviction(&QuorumVerdict::Enforce { not_before }),
        Some(s(1080))
    );
    // Never earlier than the normal rule: a hold that ended before the grace period ran out
    // changes nothing (1000 + 40 + 30).
    let mut early = Gate::default();
    early.record(s(1005), hold);
    early.record(s(1008), enforce);
    assert_eq!(
        eviction(&QuorumVerdict::Enforce {
            not_before: early.not_before(s(10))
        }),
        Some(s(1070))
    );
    assert_eq!(
        eviction(&QuorumVerdict::Enforce { not_before: None }),
        eviction(&QuorumVerdict::NotConsulted)
    );
}
