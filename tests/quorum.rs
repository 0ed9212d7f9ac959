//! The peer quorum's verdict (docs/fence.md §5) as a table of docs/semantics.md §5.5: every zone
//! state and zone-size boundary, no peers known, no peers answering, mixed and stale answers; and
//! the hold → enforce rule in the fence plan.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nodewarden::core::fence_plan::{
    FencePod, FencePolicy, Mode, Plan, QuorumVerdict, READ_SLACK, plan,
};
use nodewarden::core::qos::QosClass;
use nodewarden::core::quorum::{
    Gate, Heard, NodeRead, NodeReads, Peer, PeerReport, QuorumPolicy, Remembered, Round,
    ServerReads, TaintReads, Unable, Undecided, Verdict, ZONE_READERS, ZoneRecord,
    asks_zone_record, decide, decide_or_ask, next_round, planning, rest_counted,
    resumed_heard_bound, round_tainted, select, sigterm_waits, unasked, zone_down_tolerated,
    zone_readers,
};
use nodewarden::core::taint::{Effect, Toleration};
use nodewarden::core::unlisted;
use nodewarden::core::zone::{self, NodeZone};

const ZONE: &str = "zone-a";
/// Our own last contact was this long ago at the round.
const OWN_AGE: Duration = Duration::from_secs(20);

fn policy() -> QuorumPolicy {
    QuorumPolicy {
        fixes: nodewarden::core::quorum::Fixes::ALL,
        without_peers: Undecided::Hold,
        whole_zone_cut_off: Undecided::Enforce,
        lost_together: Duration::from_secs(15),
        settled_after: OWN_AGE,
        unreachable_after: Duration::from_secs(15),
        order_tie: Duration::from_secs(5),
        order_tie_read: Duration::from_secs(5),
        unheard_after: Duration::from_secs(15),
        renewed_within: Duration::from_millis(11_400),
        record_in_time: true,
    }
}

/// [`policy`] with one fix switched off, to show the old rule's verdict beside the new one's.
fn policy_without(revert: fn(&mut nodewarden::core::quorum::Fixes)) -> QuorumPolicy {
    let mut p = policy();
    revert(&mut p.fixes);
    p
}

fn report(node: &str, reachable: bool, age: Option<u64>) -> Heard {
    Heard::Report(PeerReport {
        node: node.into(),
        zone: ZONE.into(),
        excluded: false,
        reachable,
        last_contact_age: age.map(Duration::from_secs),
        kubelet_renewed: None,
        node_read: None,
        zone_recorded: None,
        pods: None,
        leader: Default::default(),
        kubelet_age: None,
    })
}

/// What peer `p` answers: reaching the API server (its contact 3 s old), or cut off since our own
/// last contact.
fn answer_of(p: &Peer, reachable: bool) -> Heard {
    let age = if reachable { 3 } else { OWN_AGE.as_secs() };
    Heard::Report(PeerReport {
        node: p.node.clone(),
        zone: p.zone.clone(),
        excluded: false,
        reachable,
        last_contact_age: Some(Duration::from_secs(age)),
        kubelet_renewed: None,
        node_read: None,
        zone_recorded: None,
        pods: None,
        leader: Default::default(),
        kubelet_age: None,
    })
}

/// A peer that lost the API together with us, and went silent certainly before this node did (its
/// last contact older than ours by more than the order tie).
fn cut(i: usize) -> (String, Heard) {
    (ZONE.into(), report(&format!("c{i}"), false, Some(26)))
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
        this_node_counted: true,
        other_zones: 1,
        own_contact_age: OWN_AGE,
        own_silence_age: OWN_AGE,
        heard,
        tainted: false,
        silent_reaching: 0,
        own_kubelet_age: None,
        leaderless_unknown: None,
        cut_off_remembered: Vec::new(),
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
        this_node_counted: true,
        other_zones: 0,
        own_contact_age: OWN_AGE,
        own_silence_age: OWN_AGE,
        heard: vec![],
        tainted: false,
        silent_reaching: 0,
        own_kubelet_age: None,
        leaderless_unknown: None,
        cut_off_remembered: Vec::new(),
    };
    assert!(decide(&empty, &policy(), false).is_hold());
    let enforce = QuorumPolicy {
        fixes: nodewarden::core::quorum::Fixes::ALL,
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
    // Lost exactly 15 s after us: counted together → 3 of 5 cut off, but this node went silent
    // first, so the controller judged it while the zone still counted as healthy → enforce.
    r.heard = vec![peer(Some(5)), peer(Some(5)), up(0), up(1)];
    assert_eq!(word(&r), "enforce");
    // The same two lost before us, past the order tie: the zone was disrupted when the
    // controller came to this node → hold.
    r.heard = vec![peer(Some(26)), peer(Some(26)), up(0), up(1)];
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
        up(1),
        up(2),
    ];
    assert_eq!(word(&r), "enforce");
}

#[test]
fn a_partial_disruption_holds_only_a_node_judged_after_its_zone_was_disrupted() {
    // Issue 22: the controller judges each node when its own grace period ends, counting the
    // zone as it stands then; the first of a zone is tainted while the zone is still Normal and
    // keeps the taint through the partial disruption that follows. A peer went silent certainly
    // before this node when its last contact is older than ours by more than the order tie (5 s
    // here: this agent renews the Lease itself).
    let peer = |age: u64| (ZONE.to_string(), report("p", false, Some(age)));
    // (ages of the four peers of a zone of five; OWN_AGE is 20) → verdict
    let table: [([u64; 4], &str); 6] = [
        // Two certainly before us: 3 of 5 (60 %) when we were judged → hold.
        ([26, 26, 1, 1], "hold"),
        // At the tie exactly: not certainly before → we may have been judged second of five.
        ([25, 25, 1, 1], "enforce"),
        // One before us, one with us: 2 of 5 certainly → the zone may have been Normal.
        ([26, 20, 1, 1], "enforce"),
        // Three cut off with us at once (4 of 5 partial now), none certainly before.
        ([20, 21, 19, 1], "enforce"),
        // Three before us: 4 of 5 when we were judged → hold.
        ([40, 30, 26, 1], "hold"),
        // Two before us, one after: we were the third → hold.
        ([30, 27, 15, 1], "hold"),
    ];
    for (ages, want) in table {
        let mut r = zone(5, 0);
        r.heard = ages
            .iter()
            .map(|&a| if a == 1 { up(0) } else { peer(a) })
            .collect();
        let v = decide(&r, &policy(), true);
        assert_eq!(v.word(), want, "ages {ages:?}: {}", v.reason());
    }
    // No peer says it reaches the API server (the fifth is silent): this may be an outage of the
    // whole control plane with a peer restarting, where nothing is tainted → hold.
    let mut r = zone(5, 0);
    r.heard = vec![peer(20), peer(21), peer(19), silent()];
    let v = decide(&r, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    // With the fix switched off, the old rule held whatever the order.
    let old = policy_without(|f| f.staggered_expiry = false);
    let mut r = zone(5, 0);
    r.heard = vec![peer(20), peer(21), peer(19), up(0)];
    assert!(decide(&r, &old, true).is_hold());
}

#[test]
fn the_staggered_expiry_orders_this_node_by_its_kubelets_renewal_as_peers_read_it() {
    // Issue 22, seed 0x1f40: with a kubelet renewing the Lease (renew 10 s, its lag 10.4 s), a
    // peer went silent certainly before this node only when its contact is 25.4 s older than
    // ours; once peers have read this node's kubelet renewal, 15 s older than that renewal is
    // enough (the peer's kubelet stored its last renewal at most a renew interval after the
    // peer's contact; the monitor tick).
    let policy = QuorumPolicy::new(
        Duration::from_secs(10),
        Duration::from_secs(15),
        Duration::from_millis(10_400),
        Undecided::Hold,
        Undecided::Enforce,
    );
    assert_eq!(policy.order_tie, Duration::from_millis(25_400));
    assert_eq!(policy.order_tie_read, Duration::from_secs(15));
    // A zone of five: three peers cut off, their contacts 40 s old, against our 20 s; one peer
    // reaches the API server.
    let round = |kubelet: Option<u64>| {
        let mut r = zone(5, 0);
        r.heard = vec![
            (ZONE.into(), report("p1", false, Some(40))),
            (ZONE.into(), report("p2", false, Some(40))),
            (ZONE.into(), report("p3", false, Some(40))),
            up(0),
        ];
        r.kubelet_renewed(kubelet.map(Duration::from_secs))
    };
    // By the contacts alone (20 s apart, within 25.4 s) any of the four may have been judged
    // first, while the zone was healthy: enforce.
    let v = decide(&round(None), &policy, true);
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(
        v.reason().contains("only 1 had certainly"),
        "{}",
        v.reason()
    );
    // Our kubelet last renewed 24 s ago, 16 s after the peers' contacts: the three went silent
    // first, so the controller saw 4 of 5 when it judged us: hold.
    let v = decide(&round(Some(24)), &policy, true);
    assert!(v.is_hold(), "{}", v.reason());
    assert!(
        v.reason().contains("4 of them before this node"),
        "{}",
        v.reason()
    );
    // At the tie exactly (25 s): not certain.
    assert!(decide(&round(Some(25)), &policy, true).is_enforce());
    // With the fix switched off, the renewal read changes nothing.
    let mut old = policy;
    old.fixes.kubelet_ordered = false;
    assert!(decide(&round(Some(24)), &old, true).is_enforce());
    // When the agent renews the Lease itself, the contact's own tie (5 s) is the shorter.
    let own = QuorumPolicy::new(
        Duration::from_secs(10),
        Duration::from_secs(15),
        Duration::ZERO,
        Undecided::Hold,
        Undecided::Enforce,
    );
    assert!(own.order_tie < own.order_tie_read);
}

#[test]
fn the_kubelets_renewal_is_aged_only_when_stamped_in_this_run_on_a_steady_clock() {
    use nodewarden::core::clock::Moment;
    use nodewarden::core::quorum::kubelet_age;
    use std::time::SystemTime;
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    // 100 s into the run.
    let now = Moment {
        mono: Duration::from_secs(100),
        wall: started + Duration::from_secs(100),
    };
    let read = started + Duration::from_secs(70);
    assert_eq!(
        kubelet_age(Some(read), now, started, true),
        Some(Duration::from_secs(30))
    );
    // The clock stepped since the run began: the stamp cannot be placed.
    assert_eq!(kubelet_age(Some(read), now, started, false), None);
    // Stamped before this run began: it may predate a step of the clock.
    let before = started - Duration::from_secs(1);
    assert_eq!(kubelet_age(Some(before), now, started, true), None);
    // Later than now, or none read.
    let later = now.wall + Duration::from_secs(1);
    assert_eq!(kubelet_age(Some(later), now, started, true), None);
    assert_eq!(kubelet_age(None, now, started, true), None);
}

#[test]
fn a_node_seen_tainted_is_held_by_no_partial_disruption_and_settles_on_a_peer_heard_after_its_renewal()
 {
    // 3 of 5 cut off, the two peers first: a partial disruption the controller was in when it
    // could first judge this node, so it holds. Seen tainted, the control plane judged it before:
    // a partial disruption that follows keeps the taint (docs/semantics.md §5.5).
    let r = zone(5, 2);
    assert!(decide(&r, &policy(), true).is_hold());
    let v = decide(&r.clone().tainted(true), &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(v.reason().contains("tainted before"), "{}", v.reason());
    let old = policy_without(|f| f.taint_settles = false);
    assert!(decide(&r.clone().tainted(true), &old, true).is_hold());
    // Still no peer that reaches the API server: no live control plane to delete anything.
    let mut r = zone(5, 2);
    r.heard.truncate(2);
    r.heard.push(silent());
    assert!(decide(&r.tainted(true), &policy(), true).is_hold());

    // Not settled yet (13 s after the last contact), every peer reaching the API server. A
    // peer lost together with this node may say so for `lost_together` (15 s) after its
    // contact: the verdict waits, tainted or not, until one was heard more than
    // `renewed_within` (11.4 s) after this node, which only a tainted node counts.
    let own = Duration::from_secs(13);
    let round = |peer_age: u64, tainted: bool| {
        let mut r = zone(5, 0);
        r.own_contact_age = own;
        r.own_silence_age = own;
        for (_, h) in &mut r.heard {
            *h = report("u", true, Some(peer_age));
        }
        r.tainted(tainted)
    };
    let table = [
        (1, false, "pending"), // 12 s after ours
        (1, true, "enforce"),
        (2, true, "pending"), // 11 s after ours: within this node's own next renewal
        (2, false, "pending"),
    ];
    for (peer_age, tainted, want) in table {
        let v = decide(&round(peer_age, tainted), &policy(), true);
        assert_eq!(v.word(), want, "{peer_age} {tainted}: {}", v.reason());
    }
    let v = decide(&round(1, true), &old, true);
    assert_eq!(v.word(), "pending", "{}", v.reason());
}

#[test]
fn which_peers_went_silent_first_is_counted_from_the_earliest_this_kubelet_may_have() {
    // Issue 22, seed 0x16f: an agent restarted with no contact of its own counts peers as lost
    // together with it from its start (the kubelet may have renewed while no agent ran), but
    // its kubelet may as well have gone unheard right after the contact its previous run
    // persisted. Two peers 26 s silent against a start 20 s ago read as judged before this node
    // (3 of 5 then: hold); against a persisted contact 30 s ago they may have been judged after
    // it, while the zone still counted as healthy: enforce.
    let peer = |age: u64| (ZONE.to_string(), report("p", false, Some(age)));
    let mut r = zone(5, 0);
    r.heard = vec![peer(26), peer(26), up(0), up(1)];
    assert!(decide(&r, &policy(), true).is_hold());
    let r = r.silent_for(Duration::from_secs(30));
    assert_eq!(
        r.own_contact_age, OWN_AGE,
        "the settling still counts from the start"
    );
    let v = decide(&r, &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    // Never younger than the contact's age.
    assert_eq!(
        zone(5, 0)
            .silent_for(Duration::from_secs(1))
            .own_silence_age,
        OWN_AGE
    );
    // The earliest moment: this run's contact, else the persisted one, else the start.
    use nodewarden::core::quorum::silent_since;
    assert_eq!(silent_since(Some(7), Some(3), 9), 7);
    assert_eq!(silent_since(None, Some(3), 9), 3);
    assert_eq!(silent_since(None, None, 9), 9);
    // Both ages as the agent's quorum task and the simulator take them: a restart 20 s ago
    // (the bound), a contact persisted 30 s ago, none of this run's yet.
    use nodewarden::core::quorum::{Fixes, own_ages};
    let age = |t: u64| Duration::from_secs(100 - t);
    assert_eq!(
        own_ages(None, Some(70), 80, None, &Fixes::ALL, age),
        (Duration::from_secs(20), Duration::from_secs(30))
    );
    let unordered = Fixes {
        silence_ordered: false,
        ..Fixes::ALL
    };
    assert_eq!(
        own_ages(None, Some(70), 80, None, &unordered, age),
        (Duration::from_secs(20), Duration::from_secs(20))
    );
    // This run's own contact 5 s ago: both from it.
    assert_eq!(
        own_ages(Some(95), Some(70), 80, None, &Fixes::ALL, age),
        (Duration::from_secs(5), Duration::from_secs(5))
    );
    // No contact known at all: unbounded.
    assert_eq!(
        own_ages(None, None, 80, None, &Fixes::ALL, age),
        (Duration::MAX, Duration::MAX)
    );
}

/// A restarted agent with no contact of its own counts itself heard no later than its kubelet's
/// last renewal as its peers read it: the latest `renewTime` any of them reported, placed by this
/// run's wall clock and a second later, and only while the wall clock held steady since the
/// previous run's last write.
/// A kubelet unheard for longer than `unheard_after` (`unreachableAfter`, no less than the
/// kubelet's renew interval, docs/semantics.md §13) proves the link cut for a start with no
/// answer yet; at the bound, with no renewal read, or on a wall clock that stepped, it proves
/// nothing. The renewal the fence counts from is the one read, `RENEWAL_SLACK` earlier.
#[test]
fn a_kubelet_unheard_past_the_bound_is_a_failure_and_its_renewal_counts_a_second_early() {
    use nodewarden::core::clock::Moment;
    use nodewarden::core::quorum::{RENEWAL_SLACK, kubelet_renewal, kubelet_unheard};
    use std::time::SystemTime;
    let s = Duration::from_secs;
    let now = Moment {
        mono: s(100),
        wall: SystemTime::UNIX_EPOCH + s(1_000_100),
    };
    let renewed = |ago: u64| {
        [Heard::Report(PeerReport {
            node: "p".into(),
            zone: ZONE.into(),
            excluded: false,
            reachable: true,
            last_contact_age: Some(s(1)),
            kubelet_renewed: Some(now.wall - s(ago)),
            node_read: None,
            zone_recorded: None,
            pods: None,
            leader: Default::default(),
            kubelet_age: None,
        })]
    };
    let after = s(15);
    // Read "heard" a second later (`kubelet_heard`): 17 s ago reads as 16 s, past 15 s.
    assert_eq!(kubelet_unheard(&renewed(17), now, true, after), Some(s(16)));
    // 16 s ago reads as 15 s: at the bound, not past it.
    assert_eq!(kubelet_unheard(&renewed(16), now, true, after), None);
    assert_eq!(kubelet_unheard(&renewed(5), now, true, after), None);
    assert_eq!(kubelet_unheard(&renewed(60), now, false, after), None);
    assert_eq!(kubelet_unheard(&[Heard::Silent], now, true, after), None);
    assert_eq!(
        kubelet_renewal(&renewed(60), true),
        Some(now.wall - s(60) - RENEWAL_SLACK)
    );
    assert_eq!(kubelet_renewal(&renewed(60), false), None);
}

#[test]
fn a_kubelet_renewal_read_by_peers_bounds_when_a_restarted_agent_was_last_heard() {
    use nodewarden::core::clock::{Moment, Scale, steady};
    use nodewarden::core::quorum::{
        Fixes, Heard, LEASE_READERS, RENEWAL_SLACK, kubelet_heard, lease_readers, note_unable,
        own_ages,
    };
    use std::time::SystemTime;
    let s = Duration::from_secs;
    // The round at monotonic 100 s, wall 1,000,100 s.
    let now = Moment {
        mono: s(100),
        wall: SystemTime::UNIX_EPOCH + s(1_000_100),
    };
    let read = |node: &str, renewed: Option<u64>| {
        let r = PeerReport {
            node: node.into(),
            zone: ZONE.into(),
            excluded: false,
            reachable: true,
            last_contact_age: Some(s(1)),
            kubelet_renewed: renewed.map(|t| SystemTime::UNIX_EPOCH + s(t)),
            node_read: None,
            zone_recorded: None,
            pods: None,
            leader: Default::default(),
            kubelet_age: None,
        };
        (
            nodewarden::core::quorum::Peer {
                node: node.into(),
                address: "10.0.0.1:9843".parse().expect("address"),
                zone: ZONE.into(),
            },
            Heard::Report(r),
        )
    };
    // Two peers read it (one an older read), one did not, one was silent: the latest counts,
    // 30 s ago, plus the slack.
    let mut heard = vec![
        read("a", Some(1_000_060)),
        read("b", Some(1_000_070)),
        read("c", None),
    ];
    heard.push((heard[2].0.clone(), Heard::Silent));
    let hs = || heard.iter().map(|(_, h)| h);
    assert_eq!(kubelet_heard(hs(), now, true), Some(s(70) + RENEWAL_SLACK));
    // Not while the wall clock may have stepped, and not for a renewal that reads as later
    // than now (a step back since).
    assert_eq!(kubelet_heard(hs(), now, false), None);
    let ahead = [read("a", Some(1_000_200))];
    assert_eq!(kubelet_heard(ahead.iter().map(|(_, h)| h), now, true), None);
    // Never later than now.
    let just = [read("a", Some(1_000_100))];
    assert_eq!(
        kubelet_heard(just.iter().map(|(_, h)| h), now, true),
        Some(s(100))
    );
    // The ages: restarted at 80 (the bound), a contact persisted at 50, none of this run's; the
    // kubelet last heard at 71: heard 29 s ago, not 20; silence still from the persisted 50.
    let age = |t: u64| s(100 - t);
    assert_eq!(
        own_ages(None, Some(50), 80, Some(71), &Fixes::ALL, age),
        (s(29), s(50))
    );
    // A renewal older than the contact on disk moves nothing before that contact.
    assert_eq!(
        own_ages(None, Some(50), 80, Some(40), &Fixes::ALL, age),
        (s(50), s(50))
    );
    // A renewal after the start (the bound) moves nothing either; nor one with the fix off;
    // nor any, once this run has a contact of its own.
    assert_eq!(
        own_ages(None, Some(50), 80, Some(90), &Fixes::ALL, age),
        (s(20), s(50))
    );
    let off = Fixes {
        lease_heard: false,
        ..Fixes::ALL
    };
    assert_eq!(
        own_ages(None, Some(50), 80, Some(71), &off, age),
        (s(20), s(50))
    );
    assert_eq!(
        own_ages(Some(95), Some(50), 80, Some(71), &Fixes::ALL, age),
        (s(5), s(5))
    );
    // Who is asked to read it: three, other zones first; nobody when the round skips the read
    // (as it skips listing pods when it asks about none).
    let peer = |node: &str, zone: &str| nodewarden::core::quorum::Peer {
        node: node.into(),
        address: "10.0.0.1:9843".parse().expect("address"),
        zone: zone.into(),
    };
    let asked = [
        peer("a1", "a"),
        peer("a2", "a"),
        peer("b1", "b"),
        peer("a3", "a"),
        peer("c1", "c"),
    ];
    assert_eq!(LEASE_READERS, 3);
    let none = Unable::default();
    assert_eq!(
        lease_readers(&asked, "a", false, &none),
        [true, false, true, false, true]
    );
    assert_eq!(lease_readers(&asked, "a", true, &none), [false; 5]);
    assert_eq!(lease_readers(&asked[..2], "a", false, &none), [true, true]);
    // Peers whose latest answer was not "reachable" are asked last (seed 0xd6b): b1 and a1 said
    // "cut off", a2 was silent, a3 reached the API server; c1 has not been asked yet. Of those,
    // the silent a2 before the two that said "cut off" (forty-ninth session, seed 0x1def).
    let mut unable = Unable::default();
    let said = |p: &nodewarden::core::quorum::Peer, reachable: Option<bool>| {
        let h = match reachable {
            None => Heard::Silent,
            Some(up) => Heard::Report(PeerReport {
                node: p.node.clone(),
                zone: p.zone.clone(),
                excluded: false,
                reachable: up,
                last_contact_age: Some(Duration::from_secs(1)),
                kubelet_renewed: None,
                node_read: None,
                zone_recorded: None,
                pods: None,
                leader: Default::default(),
                kubelet_age: None,
            }),
        };
        (p.clone(), h)
    };
    note_unable(
        &mut unable,
        &[
            said(&asked[0], Some(false)),
            said(&asked[1], None),
            said(&asked[2], Some(false)),
            said(&asked[3], Some(true)),
        ],
        true,
    );
    let first_round = unable.clone();
    assert_eq!(
        lease_readers(&asked, "a", false, &unable),
        [false, true, false, true, true]
    );
    // b1 reaches the API server again: able once more, and first of the other zones.
    note_unable(&mut unable, &[said(&asked[2], Some(true))], true);
    assert_eq!(
        lease_readers(&asked, "a", false, &unable),
        [false, false, true, true, true]
    );
    // c1 and a3 silent now: b1 first, then c1 (another zone), then a2, silent before them; a1,
    // which said "cut off", last.
    note_unable(
        &mut unable,
        &[said(&asked[4], None), said(&asked[3], None)],
        true,
    );
    assert_eq!(
        lease_readers(&asked, "a", false, &unable),
        [false, true, true, false, true]
    );
    // a2 says "cut off" now: after a3, silent, and in the order asked with a1.
    note_unable(&mut unable, &[said(&asked[1], Some(false))], true);
    assert_eq!(
        lease_readers(&asked, "a", false, &unable),
        [false, false, true, true, true]
    );
    // A nudge takes a peer out, whatever it last said: a1 is asked right after b1, before the
    // silent c1 and a3.
    unable.remove("a1");
    assert_eq!(
        lease_readers(&asked, "a", false, &unable),
        [true, false, true, false, true]
    );
    // Without `Fixes::silent_readers_first` silence counts as "cut off": the first round above
    // asks c1, a3 and b1, as before.
    let mut unranked = Unable::default();
    note_unable(
        &mut unranked,
        &[
            said(&asked[0], Some(false)),
            said(&asked[1], None),
            said(&asked[2], Some(false)),
            said(&asked[3], Some(true)),
        ],
        false,
    );
    assert_ne!(unranked, first_round);
    assert_eq!(
        lease_readers(&asked, "a", false, &unranked),
        [false, false, true, true, true]
    );
    // The wall clock held steady: the previous run's scale and the system clock now within a
    // second of this run's, on the same boot.
    let scale = |boot: u128, ns: i64| {
        Some(Scale {
            boot,
            wall_minus_boot_ns: ns,
        })
    };
    assert!(steady(
        scale(1, 5_000_000_000),
        scale(1, 5_900_000_000),
        -1000
    ));
    assert!(!steady(scale(1, 5_000_000_000), scale(1, 6_100_000_000), 0));
    assert!(!steady(scale(1, 5_000_000_000), scale(2, 5_000_000_000), 0));
    assert!(!steady(
        scale(1, 5_000_000_000),
        scale(1, 5_000_000_000),
        1001
    ));
    assert!(!steady(None, scale(1, 5_000_000_000), 0));
    assert!(!steady(scale(1, 5_000_000_000), None, 0));
    // A run whose wall clock was stepped back 100 s while it ran writes its contact on the system
    // clock's scale (`clock::on_system_scale`): the same instant, carried back the same, and a
    // scale the next run finds steady against its own (seeds 0xd6b, 0x1f01).
    use nodewarden::core::clock::{carried, on_system_scale};
    let run = scale(1, 5_000_000_000);
    let written = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let stepped = scale(1, -95_000_000_000);
    let (time, system) = on_system_scale(written, run, stepped);
    assert_eq!(time, written - Duration::from_secs(100));
    assert_eq!(system, stepped);
    let next = scale(1, -95_000_400_000);
    assert_eq!(carried(time, system, next), carried(written, run, next));
    assert!(steady(next, system, 0));
    assert!(!steady(next, run, 0));
    // No step (a suspend moves neither scale), or the system's scale unknown, or another boot's:
    // as the run reads it.
    assert_eq!(on_system_scale(written, run, run), (written, run));
    assert_eq!(on_system_scale(written, run, None), (written, run));
    assert_eq!(
        on_system_scale(written, run, scale(2, -95_000_000_000)),
        (written, run)
    );
}

#[test]
fn the_order_tie_is_the_monitor_tick_alone_only_when_the_agent_renews_the_lease() {
    use nodewarden::core::quorum::order_tie;
    let renew = Duration::from_secs(10);
    assert_eq!(order_tie(renew, Duration::ZERO), Duration::from_secs(5));
    // The kubelet's renewal lies from `lag` before our contact to a renew interval after it.
    assert_eq!(
        order_tie(renew, Duration::from_millis(10_400)),
        Duration::from_millis(25_400)
    );
}

#[test]
fn a_silent_peer_beside_one_that_answers_cut_off_does_not_make_its_zone_look_up() {
    // Every node of our zone cut off; in the other zone one peer answers cut off (lost with us)
    // and one is silent (its agent restarting): every zone is down → hold. Before the fix the
    // silent one made it "no other zone answers" → peers.wholeZoneCutOff (enforce).
    let mut r = zone(3, 2);
    r.heard
        .push(("zone-b".into(), report("b1", false, Some(25))));
    r.heard.push(("zone-b".into(), Heard::Silent));
    let v = decide(&r, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    let old = policy_without(|f| f.silent_peer_ignored = false);
    assert!(decide(&r, &old, true).is_enforce());
    // A third zone entirely silent: it may be up and out of our reach → the policy.
    r.other_zones = 2;
    r.heard.push(("zone-c".into(), Heard::Silent));
    assert!(decide(&r, &policy(), true).is_enforce());
}

#[test]
fn an_enforce_that_turns_on_silent_peers_says_so() {
    // A zone of three: this node and one peer cut off, the third silent (its agent restarting
    // in an outage of the whole control plane, or up and out of our reach). Silence counts as
    // reaching the API server, so the verdict is enforce, and its reason says it rests on the
    // silent peer: were it cut off too, every node would be and this node would hold. The
    // simulator counts violations under that reason as the documented choice.
    let mut r = zone(3, 1);
    r.other_zones = 0;
    r.heard
        .retain(|(_, h)| !matches!(h, Heard::Report(p) if p.reachable));
    r.heard.push(silent());
    let v = decide(&r, &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(
        v.reason().contains("rests on 1 silent peer(s)"),
        "{}",
        v.reason()
    );
    // The silent peer answering "cut off" turns it into a hold.
    let last = r.heard.len() - 1;
    r.heard[last] = cut(9);
    assert!(decide(&r, &policy(), true).is_hold());
    // In a zone where the count says enforce whatever the silent peer is, the reason does not
    // blame it: one cut, five reaching, one silent.
    let mut big = zone(7, 0);
    big.heard.pop();
    big.heard.push(silent());
    let v = decide(&big, &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(!v.reason().contains("silent"), "{}", v.reason());
    // A zone of 60, every peer asked cut off but one silent: the unasked are counted in that
    // proportion, so the zone reads as a partial disruption of a large zone (still evicted) —
    // counted cut off, the silent one would make it a full disruption of every zone (hold).
    let mut large = zone(60, 48);
    large.other_zones = 0;
    large
        .heard
        .retain(|(_, h)| !matches!(h, Heard::Report(p) if p.reachable));
    large.heard.push(silent());
    let v = decide(&large, &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(v.reason().contains("more than 50 nodes"), "{}", v.reason());
    assert!(
        v.reason().contains("rests on 1 silent peer(s)"),
        "{}",
        v.reason()
    );
}

#[test]
fn an_agent_restarted_without_contact_may_have_been_heard_until_it_started() {
    use nodewarden::core::quorum::heard_until;
    let s = |n: u64| Duration::from_secs(n);
    // This run's contact wins.
    assert_eq!(heard_until(Some(s(50)), Some(s(10)), s(40)), s(50));
    // None this run: the kubelet kept renewing while no agent ran.
    assert_eq!(heard_until(None, Some(s(10)), s(40)), s(40));
    assert_eq!(heard_until(None, None, s(40)), s(40));
    // A persisted contact after the start cannot happen on one clock, but never goes back.
    assert_eq!(heard_until(None, Some(s(45)), s(40)), s(45));
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
fn a_pending_enforce_is_settled_early_when_no_peer_not_settled_yet_can_change_it() {
    // Settled 35 s after our last contact; a peer that says "reachable" is settled once its own
    // contact came more than 35 - 15 = 20 s after ours. Our contact 25 s ago: a peer whose
    // contact is 1 s old reached the API server after us; one whose contact is 8 s old may have
    // lost it with us and not know yet.
    let policy = QuorumPolicy {
        settled_after: Duration::from_secs(35),
        ..policy()
    };
    let fresh = |i: usize, zone: &str| (zone.to_string(), report(&format!("f{i}"), true, Some(1)));
    let unsure =
        |i: usize, zone: &str| (zone.to_string(), report(&format!("s{i}"), true, Some(12)));
    let round = |heard: Vec<(String, Heard)>| Round {
        zone: ZONE.into(),
        zone_size: 6,
        this_node_counted: true,
        other_zones: 1,
        own_contact_age: Duration::from_secs(25),
        own_silence_age: Duration::from_secs(25),
        heard,
        tainted: false,
        silent_reaching: 0,
        own_kubelet_age: None,
        leaderless_unknown: None,
        cut_off_remembered: Vec::new(),
    };
    let decide_both = |r: &Round| {
        let early = decide(r, &policy, true);
        let mut reverted = policy;
        reverted.fixes.settled_early = false;
        (early, decide(r, &reverted, true))
    };
    // Settled only early, and saying why.
    let enforced_early = |heard: Vec<(String, Heard)>, why: &str| {
        let (early, settled) = decide_both(&round(heard));
        assert_eq!(settled.word(), "pending", "{}", settled.reason());
        assert_eq!(early.word(), "enforce", "{}", early.reason());
        assert!(early.reason().contains(why), "{}", early.reason());
    };
    // Three of this zone and two of the other reached the API server after us; two of this zone
    // may not know yet. Cut off, they would make 3 of 6: still a healthy zone. Enforce now.
    let mut heard: Vec<_> = (0..3).map(|i| fresh(i, ZONE)).collect();
    heard.extend((0..2).map(|i| unsure(i, ZONE)));
    heard.extend((3..5).map(|i| fresh(i, "zone-b")));
    enforced_early(heard, "settled before 35s: 2 peer(s) may not know yet");
    // Every answer final (seed 0xfb6 of the simulator waited 35 s here, and ran a pod 31 s
    // twice): the peers of this zone reached the API server after us, the other zone too.
    let mut heard: Vec<_> = (0..5).map(|i| fresh(i, ZONE)).collect();
    heard.extend((5..7).map(|i| fresh(i, "zone-b")));
    enforced_early(heard, "every peer that answers reached the API server");
    // No peer of this zone settled, the other zone's settled: every one of them cut off makes
    // this zone fully disrupted, which only `wholeZoneCutOff` decides. That is a bet: it waits.
    let mut heard: Vec<_> = (0..5).map(|i| unsure(i, ZONE)).collect();
    heard.extend((3..5).map(|i| fresh(i, "zone-b")));
    let (early, _) = decide_both(&round(heard));
    assert_eq!(early.word(), "pending", "{}", early.reason());
    // An outage of everyone as this node lost it: no peer settled, in any zone. It waits.
    let mut heard: Vec<_> = (0..3).map(|i| unsure(i, ZONE)).collect();
    heard.extend((3..5).map(|i| unsure(i, "zone-b")));
    heard.extend((5..7).map(|i| unsure(i, ZONE)));
    let (early, _) = decide_both(&round(heard));
    assert_eq!(early.word(), "pending", "{}", early.reason());
    // A silent peer counts as cut off here (it may have lost the API with us): three settled and
    // two silent in this zone make 3 of 6 at most, a healthy zone.
    let mut heard: Vec<_> = (0..3).map(|i| fresh(i, ZONE)).collect();
    heard.extend([silent(), silent()]);
    heard.push(unsure(9, "zone-b"));
    enforced_early(heard, "settled before 35s: 1 peer(s) may not know yet");
}

#[test]
fn peers_of_a_large_zone_not_asked_count_as_the_asked_ones_do() {
    // `peers.ask` (50) caps the peers asked of this zone. Counting the others as ready made a
    // zone of more than 51 nodes never fully disrupted: an outage of the whole control plane read
    // as a partial disruption of a large zone, which the controller evicts (found by the outage
    // search below). The unasked are counted in the asked ones' proportion.
    let mut r = zone(54, 0);
    r.other_zones = 0;
    // Every one of the 50 asked is cut off: the 3 not asked are taken as cut off too → the
    // whole (only) zone is down → hold.
    r.heard = (0..50).map(cut).collect();
    let v = decide(&r, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    assert!(
        v.reason().contains("every node known (54"),
        "{}",
        v.reason()
    );
    // Half the asked are cut off: half the unasked (3 → 2, rounded to the nearer) → 1 + 25 + 2
    // = 28 of 54 = 52 %: not a disruption → enforce.
    r.heard = (0..25).map(cut).chain((0..25).map(up)).collect();
    let v = decide(&r, &policy(), true);
    assert!(v.reason().contains("28 of 54"), "{}", v.reason());
    assert!(v.is_enforce(), "{}", v.reason());
    // 40 of 50 asked cut off → 2 of the 3 unasked: 43 of 54 (80 %), partial in a zone > 50 →
    // still evicted.
    r.heard = (0..40).map(cut).chain((0..10).map(up)).collect();
    let v = decide(&r, &policy(), true);
    assert!(v.reason().contains("43 of 54"), "{}", v.reason());
    assert!(v.is_enforce(), "{}", v.reason());
    // None asked cut off: none unasked either.
    r.heard = (0..50).map(up).collect();
    assert!(decide(&r, &policy(), true).reason().contains("1 of 54"));
}

#[test]
fn a_large_zone_whose_asked_peers_are_all_cut_off_asks_the_rest_before_holding() {
    // Seed 0x129d of the simulator: one zone of 60. The 50 peers a round asks (the first of the
    // list) were all cut off, and the 8 that reached the API server were among the 9 not asked:
    // the zone read as fully disrupted and every node held, while the controller saw 52 of 60 cut
    // off, a large zone partly disrupted, still tainted, and deleted a pod 18 s before the fence
    // stopped it.
    let node = |i: usize| Peer {
        node: format!("a{i:02}"),
        address: "10.0.0.1:9843".parse().expect("address"),
        zone: "a".into(),
    };
    let answer = answer_of;
    let peers: Vec<Peer> = (1..60).map(node).collect();
    let me = NodeZone::from_key("a", false);
    let asked = select(&peers, "a", 50);
    let mut heard: Vec<(Peer, Heard)> = asked
        .iter()
        .map(|p| (p.clone(), answer(p, false)))
        .collect();
    let round = zone::round(&me, &peers, &heard, OWN_AGE);
    assert!(decide(&round, &policy(), true).is_hold());
    assert!(decide_or_ask(&round, &policy(), true).1);
    // The rule before: no other zone, nothing more asked, and the hold stands.
    let before = policy_without(|f| f.own_zone_asked = false);
    assert!(!decide_or_ask(&round, &before, true).1);
    assert!(unasked(&peers, "a", &heard, false).is_empty());
    // The rest: a51 silent (its agent restarting), a52..a59 reach the API server.
    let rest = unasked(&peers, "a", &heard, true);
    assert_eq!(rest.len(), 9);
    let answers: Vec<(Peer, Heard)> = rest
        .iter()
        .map(|p| {
            let h = if p.node == "a51" {
                Heard::Silent
            } else {
                answer(p, true)
            };
            (p.clone(), h)
        })
        .collect();
    heard.extend(rest_counted("a", answers));
    // The silent one stays unasked, counted as the asked ones are (50 of 58 cut off → 1 of 1).
    assert_eq!(heard.len(), 58);
    let round = zone::round(&me, &peers, &heard, OWN_AGE);
    let v = decide(&round, &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(v.reason().contains("52 of 60"), "{}", v.reason());
    assert!(!decide_or_ask(&round, &policy(), true).1);
    // Every one of the rest silent: nothing is added, and the hold stands.
    let silent: Vec<(Peer, Heard)> = rest.iter().map(|p| (p.clone(), Heard::Silent)).collect();
    assert_eq!(rest_counted("a", silent).count(), 0);
    // A silent peer of another zone is kept: `silent_peer_ignored` weighs it there.
    let b = Peer {
        zone: "b".into(),
        ..node(70)
    };
    let kept: Vec<_> = rest_counted("a", vec![(b.clone(), Heard::Silent)]).collect();
    assert_eq!(kept, [(b, Heard::Silent)]);
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

// Zones as the controller counts them (docs/semantics.md §5.5): `GetZoneKey` in
// staging/src/k8s.io/component-helpers/node/topology/helpers.go, and the exclusion in
// `monitorNodeHealth` (pkg/controller/nodelifecycle/node_lifecycle_controller.go).

fn labels(region: Option<&str>, zone: Option<&str>, excluded: bool) -> BTreeMap<String, String> {
    let mut l = BTreeMap::new();
    if let Some(r) = region {
        l.insert(zone::REGION_LABEL.to_string(), r.to_string());
    }
    if let Some(z) = zone {
        l.insert(zone::ZONE_LABEL.to_string(), z.to_string());
    }
    if excluded {
        l.insert(zone::EXCLUDE_DISRUPTION_LABEL.to_string(), String::new());
    }
    l
}

/// A peer as the list gives it (its zone label, no region) and what it answers: its own zone key
/// and exclusion, from its own labels, as every agent forms them.
fn labelled_peer(
    node: &str,
    l: &BTreeMap<String, String>,
    reachable: bool,
    age: u64,
) -> (Peer, Heard) {
    let me = NodeZone::of(Some(l));
    let listed = Peer {
        node: node.into(),
        address: "10.0.0.1:9843".parse().expect("address"),
        zone: me.listed.clone(),
    };
    let report = PeerReport {
        node: node.into(),
        zone: me.key,
        excluded: me.excluded,
        reachable,
        last_contact_age: Some(Duration::from_secs(age)),
        kubelet_renewed: None,
        node_read: None,
        zone_recorded: None,
        pods: None,
        leader: Default::default(),
        kubelet_age: None,
    };
    (listed, Heard::Report(report))
}

fn zone_round(me: &BTreeMap<String, String>, fleet: Vec<(Peer, Heard)>) -> Round {
    let peers: Vec<Peer> = fleet.iter().map(|(p, _)| p.clone()).collect();
    zone::round(&NodeZone::of(Some(me)), &peers, &fleet, OWN_AGE)
}

#[test]
fn a_zone_is_its_region_and_zone_labels_together_as_get_zone_key_forms_it() {
    // One peer of each label combination, each cut off with this node. Upstream keys:
    // "r1:\0:z1", "r1:\0:", ":\0:z1", "" and "r2:\0:z1": five distinct zones, so this node
    // shares its zone with exactly the peer labelled as it is, whichever combination it has.
    let combos = [
        ("both", Some("r1"), Some("z1")),
        ("region only", Some("r1"), None),
        ("zone only", None, Some("z1")),
        ("neither", None, None),
        ("same zone, other region", Some("r2"), Some("z1")),
    ];
    let fleet = || -> Vec<(Peer, Heard)> {
        combos
            .iter()
            .map(|(name, r, z)| labelled_peer(name, &labels(*r, *z, false), false, 26))
            .collect()
    };
    for (name, r, z) in combos {
        let round = zone_round(&labels(r, z, false), fleet());
        let same: Vec<&str> = round
            .heard
            .iter()
            .filter(|(zone, _)| *zone == round.zone)
            .map(|(_, h)| match h {
                Heard::Report(r) => r.node.as_str(),
                Heard::Silent => "silent",
            })
            .collect();
        assert_eq!(same, [name], "this node labelled {name}");
        assert_eq!(round.zone_size, 2, "this node labelled {name}");
        assert_eq!(round.other_zones, 4, "this node labelled {name}");
    }
    // Beside the zone label alone, the same zone name in another region would have been this
    // node's zone: a partial disruption (3 of 4) instead of a whole zone cut off.
    let round = zone_round(
        &labels(Some("r1"), Some("z1"), false),
        vec![
            labelled_peer("a", &labels(Some("r2"), Some("z1"), false), false, 26),
            labelled_peer("b", &labels(Some("r2"), Some("z1"), false), false, 26),
            labelled_peer("c", &labels(Some("r2"), Some("z1"), false), true, 1),
        ],
    );
    assert_eq!(round.zone_size, 1);
    let v = decide(&round, &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
}

#[test]
fn a_silent_peer_is_placed_by_the_list_its_zone_label_against_this_nodes() {
    let me = labels(Some("r1"), Some("z1"), false);
    let silent = |node: &str, listed: &str| {
        (
            Peer {
                node: node.into(),
                address: "10.0.0.1:9843".parse().expect("address"),
                zone: listed.into(),
            },
            Heard::Silent,
        )
    };
    let round = zone_round(&me, vec![silent("s1", "z1"), silent("s2", "z2")]);
    assert_eq!(round.zone, "r1/z1");
    assert_eq!(round.zone_size, 2);
    assert_eq!(round.other_zones, 1);
    assert_eq!(
        round
            .heard
            .iter()
            .map(|(z, _)| z.as_str())
            .collect::<Vec<_>>(),
        ["r1/z1", "z2"]
    );
}

#[test]
fn nodes_labelled_exclude_disruption_are_left_out_of_the_zone_counts() {
    let z = |excluded| labels(Some("r1"), Some("z1"), excluded);
    let cut = |n: &str, excluded| labelled_peer(n, &z(excluded), false, 26);
    let up = |n: &str, excluded| labelled_peer(n, &z(excluded), true, 1);
    let whole_zone_hold = QuorumPolicy {
        whole_zone_cut_off: Undecided::Hold,
        ..policy()
    };
    // (case, this node excluded, its peers, policy, verdict as counted with the exclusion,
    //  verdict had every node been counted)
    type Row = (
        &'static str,
        bool,
        Vec<(Peer, Heard)>,
        QuorumPolicy,
        &'static str,
        &'static str,
    );
    let table: Vec<Row> = vec![
        (
            // 3 of 4 not ready would be a partial disruption; the controller counts 2 of 3.
            "an excluded peer cut off in a zone otherwise partially disrupted",
            false,
            vec![cut("c1", false), cut("x1", true), up("u1", false)],
            policy(),
            "enforce",
            "hold",
        ),
        (
            // 3 of 6 would be healthy; without the excluded ready peer, 3 of 5 = 60 %.
            "an excluded peer that reaches the API server",
            false,
            vec![
                cut("c1", false),
                cut("c2", false),
                up("u1", false),
                up("u2", false),
                up("x1", true),
            ],
            policy(),
            "hold",
            "enforce",
        ),
        (
            // This node is still judged by its zone's state, which the controller computes
            // without it: 2 of 3, not a disruption.
            "this node excluded",
            true,
            vec![cut("c1", false), cut("c2", false), up("u1", false)],
            policy(),
            "enforce",
            "hold",
        ),
        (
            // Still a partial disruption without this node: 3 of 5.
            "this node excluded in a zone partially disrupted without it",
            true,
            vec![
                cut("c1", false),
                cut("c2", false),
                cut("c3", false),
                up("u1", false),
                up("u2", false),
            ],
            policy(),
            "hold",
            "hold",
        ),
        (
            // 3 of 5 without this node, a partial disruption, but only two went silent before
            // it: this node does not count among those judged first either, so it may have been
            // tainted while the zone still counted as healthy (docs/fence.md §5).
            "this node excluded, judged before the zone was disrupted",
            true,
            vec![
                cut("c1", false),
                cut("c2", false),
                labelled_peer("c3", &z(false), false, 21),
                up("u1", false),
                up("u2", false),
            ],
            policy(),
            "enforce",
            "enforce",
        ),
        (
            // No node of the zone counts: the controller keeps no state for it, and its queue
            // the normal rate, while another zone is up (`addPodEvictorForNewZone`).
            "this node excluded and alone in its zone, another zone up",
            true,
            vec![labelled_peer(
                "b1",
                &labels(Some("r1"), Some("z2"), false),
                true,
                1,
            )],
            whole_zone_hold,
            "enforce",
            "hold",
        ),
    ];
    for (case, excluded, fleet, policy, want, counted_all) in table {
        let round = zone_round(&z(excluded), fleet.clone());
        let v = decide(&round, &policy, true);
        assert_eq!(v.word(), want, "{case}: {}", v.reason());
        // The same fleet with the label ignored, to show the row tests the exclusion.
        let ignored: Vec<(Peer, Heard)> = fleet
            .into_iter()
            .map(|(p, h)| match h {
                Heard::Report(r) => (
                    p,
                    Heard::Report(PeerReport {
                        excluded: false,
                        ..r
                    }),
                ),
                h => (p, h),
            })
            .collect();
        let round = zone_round(&z(false), ignored);
        assert_eq!(
            decide(&round, &policy, true).word(),
            counted_all,
            "{case}, counting every node"
        );
    }
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
        created: None,
    }
}

fn eviction(quorum: &QuorumVerdict) -> Option<Duration> {
    let policy = FencePolicy {
        node_monitor_grace_period: Duration::from_secs(40),
        node_monitor_period: Duration::ZERO,
        safety_margin: Duration::from_secs(2),
        grace_cap: Duration::from_secs(30),
        mode: Mode::Enforce,
        kubelet_lag: Duration::ZERO,
    };
    match &plan(
        &[pod()],
        Duration::from_secs(1000),
        None,
        None,
        &policy,
        quorum,
    )[0]
    .plan
    {
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
            reason: "3 of 5".into(),
            stop_due: None,
        }),
        None
    );
    // The round at 1063 enforces: the taint can come no earlier than the last holding round
    // (1060) minus a request timeout (10 s) → 1050, + 30 s toleration.
    assert!(gate.record(s(1063), enforce.clone()));
    let not_before = gate.not_before(s(10));
    assert_eq!(not_before, Some(s(1050)));
    assert_eq!(gate.held_from, Some(s(1030)));
    let held_from = gate.held_from;
    assert_eq!(
        eviction(&QuorumVerdict::Enforce {
            not_before,
            held_from,
            untainted: None,
        }),
        Some(s(1080))
    );
    // Never earlier than the normal rule: a hold that ended before the grace period ran out
    // changes nothing (1000 + 40 + 30).
    let mut early = Gate::default();
    early.record(s(1005), hold);
    early.record(s(1008), enforce);
    assert_eq!(
        eviction(&QuorumVerdict::Enforce {
            not_before: early.not_before(s(10)),
            held_from: early.held_from,
            untainted: None,
        }),
        Some(s(1070))
    );
    assert_eq!(
        eviction(&QuorumVerdict::Enforce {
            not_before: None,
            held_from: None,
            untainted: None,
        }),
        eviction(&QuorumVerdict::NotConsulted)
    );
}

#[test]
fn leaving_an_outage_of_every_zone_counts_from_the_resumption_without_a_new_grace_period() {
    // Issue 21 asked whether leaving "every zone down" should add a grace period, since the
    // controller then resets every node's probe timestamp (`handleDisruption`). It must not: a
    // node the controller already marked Unknown is queued for the taint on its next monitor
    // pass from its stored Ready condition (`processTaintBaseEviction`), whatever its probe
    // timestamp, and tainted as soon as the zone's limiter allows. Counting a grace period more
    // would stop its pods up to 40 s after the control plane deleted them.
    let s = Duration::from_secs;
    let every_zone = Verdict::Hold {
        reason: "every node known (3 in zone zone-a) is cut off".into(),
    };
    // The hold began at 1030, before this node could be tainted (1000 + 40 s).
    let mut gate = Gate::default();
    gate.record(s(1030), every_zone.clone());
    gate.record(s(1100), every_zone);
    gate.record(
        s(1103),
        Verdict::Enforce {
            reason: "1 of 3".into(),
        },
    );
    // Resumed no earlier than the last holding round less a request timeout: 1090, + 30 s.
    let not_before = gate.not_before(s(10));
    assert_eq!(not_before, Some(s(1090)));
    assert_eq!(
        eviction(&QuorumVerdict::Enforce {
            not_before,
            held_from: gate.held_from,
            untainted: None,
        }),
        Some(s(1120))
    );
}

#[test]
fn a_hold_that_began_after_the_node_could_be_tainted_does_not_move_its_deadlines() {
    // Seed 0x591 of the simulator: a node tainted 9 s before an outage of the API server held
    // through it (no peer reached the API server) and, once it enforced again, counted from the
    // end of the hold; the taint added before the outage stayed on the Node, and the taint
    // eviction controller deleted a pod for it 38 s before the fence stopped it. Neither an
    // outage of the API server nor a partial disruption removes a taint; every zone fully
    // disrupted does, and the control plane taints the node again when it resumes, so counting
    // from the first possible taint is early there and never late anywhere.
    let s = Duration::from_secs;
    let hold = Verdict::Hold {
        reason: "5 of 8 cut off".into(),
    };
    let mut gate = Gate::default();
    // Contact at 1000: the node could be tainted from 1040. The first hold is at 1060.
    gate.record(
        s(1020),
        Verdict::Enforce {
            reason: "1 of 8".into(),
        },
    );
    gate.record(s(1060), hold.clone());
    gate.record(s(1090), hold);
    assert!(gate.record(
        s(1110),
        Verdict::Enforce {
            reason: "4 of 8".into(),
        },
    ));
    assert_eq!(
        (gate.held_from, gate.held_at),
        (Some(s(1060)), Some(s(1090)))
    );
    // 1040 + 30 s, not the end of the hold (1080) + 30 s.
    assert_eq!(
        eviction(&QuorumVerdict::Enforce {
            not_before: gate.not_before(s(10)),
            held_from: gate.held_from,
            untainted: None,
        }),
        Some(s(1070))
    );
    // Through `planning`, as the fence task and the simulator call it.
    assert_eq!(
        eviction(&planning(
            gate.verdict.as_ref(),
            (gate.held_at, gate.held_from),
            (None, None),
            false,
            s(10)
        )),
        Some(s(1070))
    );
    // A hold that began at 1040 exactly began before any taint: counted from its end.
    assert_eq!(
        eviction(&QuorumVerdict::Enforce {
            not_before: gate.not_before(s(10)),
            held_from: Some(s(1040)),
            untainted: None,
        }),
        Some(s(1110))
    );
}

/// One agent of a simulated fleet: its zone and the instant (seconds) of its last contact.
struct Agent {
    zone: String,
    contact: f64,
}

/// The last contact of an agent that keeps renewing: [`round_at`] sees it a second old.
const FRESH: f64 = f64::INFINITY;

/// Whom agent `me` of `fleet` asks, as the quorum task does (`core::quorum::select`,
/// `peers.ask` = 50), and the round's zone size and count of other zones.
struct Asking {
    asked: Vec<usize>,
    zone_size: usize,
    other_zones: usize,
}

fn asking(fleet: &[Agent], me: usize) -> Asking {
    use nodewarden::core::quorum::Peer;
    let peers: Vec<Peer> = fleet
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != me)
        .map(|(i, a)| Peer {
            node: format!("n{i:03}"),
            address: format!("127.0.0.1:{}", 20000 + i).parse().expect("address"),
            zone: a.zone.clone(),
        })
        .collect();
    let zone = &fleet[me].zone;
    Asking {
        asked: nodewarden::core::quorum::select(&peers, zone, 50)
            .iter()
            .map(|p| p.node[1..].parse().expect("index"))
            .collect(),
        zone_size: 1 + peers.iter().filter(|p| p.zone == *zone).count(),
        other_zones: peers
            .iter()
            .map(|p| p.zone.as_str())
            .filter(|z| z != zone)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
    }
}

/// The round agent `me` of `fleet` sends at `t` (seconds), each asked peer answering as
/// `peer_answer` does: reachable while its own last contact is at most `unreachableAfter` old.
fn round_at(fleet: &[Agent], me: usize, asking: &Asking, t: f64, after: Duration) -> Round {
    let age = |c: f64| {
        if c == FRESH {
            Duration::from_secs(1)
        } else {
            Duration::from_secs_f64((t - c).max(0.0))
        }
    };
    let heard = asking
        .asked
        .iter()
        .map(|&i| {
            let a = &fleet[i];
            let report = PeerReport {
                node: format!("n{i:03}"),
                zone: a.zone.clone(),
                excluded: false,
                reachable: age(a.contact) <= after,
                last_contact_age: Some(age(a.contact)),
                kubelet_renewed: None,
                node_read: None,
                zone_recorded: None,
                pods: None,
                leader: Default::default(),
                kubelet_age: None,
            };
            (a.zone.clone(), Heard::Report(report))
        })
        .collect();
    Round {
        zone: fleet[me].zone.clone(),
        zone_size: asking.zone_size,
        this_node_counted: true,
        other_zones: asking.other_zones,
        own_contact_age: age(fleet[me].contact),
        own_silence_age: age(fleet[me].contact),
        heard,
        tainted: false,
        silent_reaching: 0,
        own_kubelet_age: None,
        leaderless_unknown: None,
        cut_off_remembered: Vec::new(),
    }
}

/// The policy the agent runs with at the default timings (renew 10 s, request timeout 10 s,
/// `unreachableAfter` 15 s), enforcing a whole zone cut off while another zone answers.
fn default_policy() -> (QuorumPolicy, Duration) {
    let after = Duration::from_secs(15);
    let policy = QuorumPolicy::new(
        Duration::from_secs(10),
        after,
        nodewarden::core::fence_plan::kubelet_lag(Duration::from_secs(40), false),
        Undecided::Hold,
        Undecided::Enforce,
    );
    (policy, after)
}

/// A small deterministic generator (xorshift), so a failing layout can be named by its seed.
struct Draw(u64);
impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Agents' verdicts from the moment each counts itself cut off until 75 s after the outage began
/// (past every settled window), every 250 ms; the first round that says enforce, if any.
fn first_enforce(fleet: &[Agent], outage: f64) -> Option<(usize, f64, String)> {
    let (policy, after) = default_policy();
    // In each zone, the three agents whose last contact came first (cut off first, they see the
    // others still reaching the longest) and the one whose contact came last.
    let mut watched: Vec<usize> = Vec::new();
    let zones: std::collections::BTreeSet<&str> = fleet.iter().map(|a| a.zone.as_str()).collect();
    for z in zones {
        let mut members: Vec<usize> = (0..fleet.len()).filter(|&i| fleet[i].zone == z).collect();
        members.sort_by(|&a, &b| fleet[a].contact.total_cmp(&fleet[b].contact));
        watched.extend(members.iter().take(3));
        watched.extend(members.last().filter(|l| !watched.contains(l)));
    }
    for me in watched {
        let agent = &fleet[me];
        let asking = asking(fleet, me);
        let cut_off_at = agent.contact + after.as_secs_f64();
        let mut t = cut_off_at;
        while t <= outage + 75.0 {
            // As the quorum task: no peer listed is "no peers known".
            let v = decide(
                &round_at(fleet, me, &asking, t, after),
                &policy,
                fleet.len() > 1,
            );
            if v.is_enforce() {
                return Some((me, t, v.reason().to_string()));
            }
            t += 0.25;
        }
    }
    None
}

#[test]
fn in_an_outage_of_the_control_plane_no_agent_in_any_zone_layout_ever_says_enforce() {
    // Issue 21: with the API server down for everyone, an agent of a zone whose four nodes were
    // all cut off said enforce because the one agent of the other zone, whose last renewal came
    // a few seconds later, still answered "reachable". Layouts of 1–3 zones of 1–60 agents,
    // each agent's last renewal anywhere in the renew interval before the outage.
    let mut layouts: Vec<Vec<usize>> = vec![vec![4, 1], vec![1, 4], vec![1], vec![2, 2, 2]];
    let mut draw = Draw(0x5eed_2121);
    for _ in 0..60 {
        let zones = 1 + draw.below(3) as usize;
        layouts.push((0..zones).map(|_| 1 + draw.below(60) as usize).collect());
    }
    let outage = 1000.0;
    for (n, layout) in layouts.iter().enumerate() {
        for phase_seed in 0..4u64 {
            let mut phases = Draw(0x9e37_79b9 ^ (n as u64) << 8 ^ phase_seed);
            let fleet: Vec<Agent> = layout
                .iter()
                .enumerate()
                .flat_map(|(z, &size)| (0..size).map(move |_| z))
                .map(|z| Agent {
                    zone: format!("zone-{z}"),
                    // The last successful renewal: up to one renew interval (10 s) before.
                    contact: outage - phases.below(10_000) as f64 / 1000.0,
                })
                .collect();
            // The lab's layout exactly: site-b's one agent renewed last, just before the outage.
            let fleet = if n == 0 && phase_seed == 0 {
                fleet
                    .into_iter()
                    .enumerate()
                    .map(|(i, a)| Agent {
                        contact: if i == 4 { outage - 0.1 } else { outage - 9.9 },
                        ..a
                    })
                    .collect()
            } else {
                fleet
            };
            if let Some((me, t, reason)) = first_enforce(&fleet, outage) {
                panic!(
                    "layout {layout:?} (phases {phase_seed}): agent {me} of {} said enforce {:.2}s after the outage began, its last contact {:.2}s before it: {reason}",
                    fleet[me].zone,
                    t - outage,
                    outage - fleet[me].contact
                );
            }
        }
    }
}

#[test]
fn a_zone_cut_off_from_a_live_control_plane_is_still_enforced_once_settled() {
    // The other side of the rule above, so that it cannot pass by never enforcing: the same
    // layouts, but only zone-0 loses the API server (the other zones keep renewing), or only
    // one node does. Each cut-off agent of zone-0 says enforce, and no earlier than settled.
    let (policy, after) = default_policy();
    let outage = 1000.0;
    for layout in [vec![4, 1], vec![1, 3], vec![3, 3, 3], vec![60, 2]] {
        let fleet: Vec<Agent> = layout
            .iter()
            .enumerate()
            .flat_map(|(z, &size)| (0..size).map(move |_| z))
            .enumerate()
            .map(|(i, z)| Agent {
                zone: format!("zone-{z}"),
                // Zone-0 is cut off at 1000 (last renewals spread over the 10 s before); the
                // others' contact stays fresh (they renewed a second ago at any round).
                contact: if z == 0 {
                    outage - (i % 10) as f64
                } else {
                    FRESH
                },
            })
            .collect();
        for me in 0..layout[0] {
            let t = fleet[me].contact + policy.settled_after.as_secs_f64() + 0.5;
            let asking = asking(&fleet, me);
            let round = round_at(&fleet, me, &asking, t, after);
            // Zone-0 fully cut off while the others answer: wholeZoneCutOff = enforce.
            let v = decide(&round, &policy, true);
            assert_eq!(
                v.word(),
                "enforce",
                "layout {layout:?}, agent {me}: {}",
                v.reason()
            );
            let early = round_at(&fleet, me, &asking, fleet[me].contact + 16.0, after);
            let v = decide(&early, &policy, true);
            assert!(
                !v.is_enforce(),
                "layout {layout:?}, agent {me}, 16 s after its contact: {}",
                v.reason()
            );
        }
    }
}

/// The quorum task sleeps until `next_round` or a change of its inputs: rounds only while it
/// asks, the first at once, each later one an interval after the last.
#[test]
fn a_round_is_due_at_once_when_cut_off_then_every_interval_and_never_while_connected() {
    let s = Duration::from_secs;
    let interval = s(2);
    /// (rule, asking, last round, now, next round), in seconds.
    type Row = (&'static str, bool, Option<u64>, u64, Option<u64>);
    let rows: &[Row] = &[
        (
            "connected: no round, whatever came before",
            false,
            Some(10),
            11,
            None,
        ),
        ("connected, no round yet: none", false, None, 11, None),
        (
            "cut off, no round in this partition: at once",
            true,
            None,
            11,
            Some(11),
        ),
        (
            "cut off: an interval after the last round",
            true,
            Some(10),
            11,
            Some(12),
        ),
        (
            "a round overdue stays due (not pushed to now)",
            true,
            Some(10),
            30,
            Some(12),
        ),
    ];
    for (rule, asking, last, now, want) in rows {
        assert_eq!(
            next_round(*asking, last.map(s), interval, s(*now)),
            want.map(s),
            "{rule}"
        );
    }
}

#[test]
fn every_zone_down_rests_on_every_peer_of_the_other_zones_not_on_two_of_each() {
    // Seed 0x11d of the simulator: a zone of two nodes cut off whole, three of the other zone's
    // six cut off too. The round asks two of the other zone; both are cut off. Upstream stops
    // evicting only when every zone is fully disrupted, and three nodes of that zone reach the
    // API server: the cut-off zone is evicted. Holding on the two asked ran a pod 138 s twice.
    let node = |n: &str, z: &str| Peer {
        node: n.into(),
        address: "10.0.0.1:9843".parse().expect("address"),
        zone: z.into(),
    };
    let answer = answer_of;
    let mut peers = vec![node("a1", "a")];
    peers.extend((0..6).map(|i| node(&format!("b{i}"), "b")));
    // b0, b1 and b2 are cut off; b3, b4, b5 reach the API server.
    let hears = |p: &Peer| answer(p, p.zone == "b" && p.node.as_str() >= "b3");
    let me = NodeZone::from_key("a", false);
    let asked = select(&peers, "a", 50);
    assert_eq!(
        asked.len(),
        3,
        "one of this zone, two of the other: {asked:?}"
    );
    let mut heard: Vec<(Peer, Heard)> = asked.iter().map(|p| (p.clone(), hears(p))).collect();
    let round = zone::round(&me, &peers, &heard, OWN_AGE);
    assert!(decide(&round, &policy(), true).is_hold());
    assert!(decide_or_ask(&round, &policy(), true).1);
    // The rest of the other zone, asked: one reaches the API server, and the zone is evicted.
    let rest = unasked(&peers, "a", &heard, false);
    let names: Vec<&str> = rest.iter().map(|p| p.node.as_str()).collect();
    assert_eq!(names, ["b2", "b3", "b4", "b5"]);
    heard.extend(rest.iter().map(|p| (p.clone(), hears(p))));
    let round = zone::round(&me, &peers, &heard, OWN_AGE);
    let v = decide(&round, &policy(), true);
    assert!(v.is_enforce(), "{v:?}");
    assert!(!decide_or_ask(&round, &policy(), true).1);
    // Were they all cut off, the hold stands on every answer, and nothing more is asked.
    let all_cut: Vec<(Peer, Heard)> = peers
        .iter()
        .map(|p| (p.clone(), answer(p, false)))
        .collect();
    let round = zone::round(&me, &peers, &all_cut, OWN_AGE);
    assert!(decide(&round, &policy(), true).is_hold());
    assert!(unasked(&peers, "a", &all_cut, false).is_empty());
    // A round with no other zone never asks more.
    let alone = zone::round(&me, &peers[..1], &all_cut[..1], OWN_AGE);
    assert!(!decide_or_ask(&alone, &policy(), true).1);
}

#[test]
fn a_pending_round_leaves_an_enforce_standing_and_a_hold_replaces_it() {
    // Seed 0x11d again: the agent restarted mid-partition and resumed its settled enforce from
    // the state file; its first rounds, counting its peers from its start, were not settled
    // (pending) and held its pods 12 s past their deletion.
    let enforce = Verdict::Enforce {
        reason: "resumed".into(),
    };
    let pending = Verdict::Pending {
        reason: "not settled yet".into(),
    };
    let mut gate = Gate {
        verdict: Some(enforce.clone()),
        held_at: None,
        held_from: None,
    };
    assert!(!gate.record(Duration::from_secs(1), pending.clone()));
    assert_eq!(gate.verdict, Some(enforce.clone()));
    let hold = Verdict::Hold {
        reason: "every node known is cut off".into(),
    };
    assert!(gate.record(Duration::from_secs(2), hold.clone()));
    assert_eq!(gate.verdict, Some(hold));
    assert_eq!(gate.held_at, Some(Duration::from_secs(2)));
    // Pending after a hold (or after nothing) is recorded as it is: it stops nothing.
    assert!(gate.record(Duration::from_secs(3), pending.clone()));
    assert_eq!(gate.verdict, Some(pending.clone()));
    let mut fresh = Gate::default();
    assert!(fresh.record(Duration::from_secs(1), pending.clone()));
    assert_eq!(fresh.verdict, Some(pending));
}

#[test]
fn a_restart_counts_itself_heard_until_its_start_unless_it_stopped_cut_off() {
    let (started, contact) = (Duration::from_secs(100), Some(Duration::from_secs(60)));
    // Connected when it stopped: the kubelet may have renewed until this run started.
    assert_eq!(resumed_heard_bound(started, contact, false), started);
    // Cut off when it stopped: the kubelet shares the link; the contact on disk is the bound.
    assert_eq!(
        resumed_heard_bound(started, contact, true),
        Duration::from_secs(60)
    );
    // No contact on disk: the start.
    assert_eq!(resumed_heard_bound(started, None, true), started);
    // A contact on disk later than the start (a clock that stepped back) is no later bound.
    assert_eq!(
        resumed_heard_bound(started, Some(Duration::from_secs(120)), true),
        started
    );
}

#[test]
fn a_node_with_no_contact_known_is_decided_without_overflow() {
    // Seed 0x1261 of the simulator: an agent whose contact on disk read as later than now (its
    // clock stepped back) had no contact known, its age `Duration::MAX`; a silent peer beside a
    // cut-off one made `decide` add to that age, and the quorum task panicked.
    let mut r = zone(4, 1);
    r.own_contact_age = Duration::MAX;
    r.heard.push(silent());
    r.heard
        .push((ZONE.into(), report("far", false, Some(u64::MAX))));
    let v = decide(&r, &policy(), true);
    assert!(!v.reason().is_empty());
}

/// Every peer asked says it is cut off, but they lost the API server after this node (their
/// contacts 3 s old against our 20 s, more than the lost-together window apart): they counted as
/// Ready when the controller could judge this node, which the old rule took for a healthy zone.
/// No node reaching the API server holds now, whenever each lost it (seed 0x55 of the simulator:
/// a node tainted before an outage of everyone stopped a pod the restarted controller-manager
/// never deleted). A silent peer of this zone, or a peer of another zone that reaches the API
/// server, still leaves the zone's count to decide.
#[test]
fn no_node_reaching_the_api_server_holds_whenever_each_lost_it() {
    let later = |i: usize, zone: &str| (zone.to_string(), report(&format!("l{i}"), false, Some(3)));
    let mut r = zone(4, 0);
    r.heard = (0..3).map(|i| later(i, ZONE)).collect();
    r.heard.push(later(9, "zone-b"));
    // Another zone's silent peer beside one that says "cut off" is no sign that zone is up.
    r.heard.push(("zone-b".into(), Heard::Silent));
    let v = decide(&r, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    assert!(
        v.reason().contains("no node known reaches the API server"),
        "{}",
        v.reason()
    );
    // The rule before: 1 of 4 cut off with us, a healthy zone.
    let old = decide(&r, &policy_without(|f| f.everyone_cut_off = false), true);
    assert!(old.is_enforce(), "{}", old.reason());
    // One that reaches the API server, in any zone, or a silent one in ours: the zone's count.
    for extra in [
        up(7),
        ("zone-b".into(), report("b7", true, Some(1))),
        silent(),
    ] {
        let mut r = r.clone();
        r.heard.push(extra.clone());
        let v = decide(&r, &policy(), true);
        assert!(v.is_enforce(), "{extra:?}: {}", v.reason());
    }
    // The other zone only silent: not known to be down.
    let mut r2 = r.clone();
    r2.heard
        .retain(|(z, h)| z == ZONE || matches!(h, Heard::Silent));
    let v = decide(&r2, &policy(), true);
    assert!(
        !v.reason().contains("no node known reaches"),
        "{}",
        v.reason()
    );
}

/// A peer's answer that read this node's Node (`PeerReport::node_read`).
fn read_node(reachable: bool, tainted: Option<bool>) -> Heard {
    Heard::Report(PeerReport {
        node_read: tainted.map(untimed),
        pods: None,
        ..match report("p", reachable, Some(1)) {
            Heard::Report(r) => r,
            Heard::Silent => unreachable!("a report"),
        }
    })
}

/// A read of this node's Node with no times on it.
fn untimed(tainted: bool) -> NodeRead {
    NodeRead {
        tainted,
        ..NodeRead::default()
    }
}

/// A reaching peer's read of this node's Node with the taint added at `added` (with none when
/// `None`) and Ready written Unknown at `unknown`, both on the control plane's wall clock.
fn timed(added: Option<SystemTime>, unknown: Option<SystemTime>) -> Heard {
    Heard::Report(PeerReport {
        node_read: Some(NodeRead {
            tainted: added.is_some(),
            taint_added: added,
            unknown_since: unknown,
            ..NodeRead::default()
        }),
        ..match report("p", true, Some(1)) {
            Heard::Report(r) => r,
            Heard::Silent => unreachable!("a report"),
        }
    })
}

/// The control plane's wall clock `secs` into the tests' epoch.
fn cp_time(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
}

/// This node's instant `mono`, its clock as the control plane's: mono 1000 s is the control
/// plane's 1000.
fn cp_moment(mono: u64) -> nodewarden::core::clock::Moment {
    nodewarden::core::clock::Moment {
        mono: Duration::from_secs(mono),
        wall: cp_time(mono),
    }
}

/// The times the peers read on this node's Node (`NodeReads`, issue 22, seed 0x889f): the
/// taint's `timeAdded` while the latest read found the taint, the Ready=Unknown's write while it
/// found that and no taint; each counted on this node's wall clock, or from when this run first
/// heard it read if that is earlier; a round with no read (or only cut-off peers' words) changes
/// nothing.
#[test]
fn the_times_the_peers_read_on_the_node_count_from_the_earlier_of_the_wall_and_the_first_answer() {
    use nodewarden::core::clock::Moment;
    let s = Duration::from_secs;
    let (cp, at) = (cp_time, cp_moment);
    let mut reads = NodeReads::<Duration>::default();
    assert!(!reads.note(s(990), [&Heard::Silent, &read_node(true, None)]));
    assert_eq!(reads, NodeReads::default());
    // Queued: Ready written Unknown at 980, no taint yet; read in the round of 990.
    assert!(reads.note(s(990), [&timed(None, Some(cp(980)))]));
    assert_eq!(
        (reads.queued(at(995)), reads.tainted(at(995))),
        (Some(s(980)), None)
    );
    // A cut-off peer's word is no read.
    let mut cut_off = timed(Some(cp(985)), Some(cp(980)));
    if let Heard::Report(r) = &mut cut_off {
        r.reachable = false;
    }
    assert!(!reads.note(s(992), [&cut_off]));
    // Tainted at 985, read at 1000, again at 1010: the first answer stands, the queue is done.
    assert!(reads.note(s(1000), [&timed(Some(cp(985)), Some(cp(980)))]));
    assert!(!reads.note(s(1010), [&timed(Some(cp(985)), Some(cp(980)))]));
    assert_eq!(reads.taint_added.map(|r| r.first_heard), Some(s(1000)));
    assert_eq!(
        (reads.tainted(at(1012)), reads.queued(at(1012))),
        (Some(s(985)), None)
    );
    // This node's clock 60 s behind the control plane's: the taint reads as added at 1045 on
    // it, later than the answer that carried it; the answer counts.
    let behind = Moment {
        mono: s(1012),
        wall: cp(1012) - s(60),
    };
    assert_eq!(reads.tainted(behind), Some(s(1000)));
    // 60 s ahead: the wall counts, earlier still.
    let ahead = Moment {
        mono: s(1012),
        wall: cp(1012) + s(60),
    };
    assert_eq!(reads.tainted(ahead), Some(s(925)));
    // Two peers, one that read the taint and one that read it earlier: tainted, from the
    // earlier `timeAdded`; a taint that carries none counts no time.
    assert!(reads.note(
        s(1020),
        [&timed(None, Some(cp(980))), &timed(Some(cp(984)), None)]
    ));
    assert_eq!(reads.tainted(at(1020)), Some(s(984)));
    assert_eq!(reads.queued(at(1020)), None);
    assert!(reads.note(s(1030), [&read_node(true, Some(true))]));
    assert_eq!(reads, NodeReads::default());
    // Removed, the Node back to Ready=True: nothing is read.
    assert!(!reads.note(s(1040), [&read_node(true, Some(false))]));
    // The same reads with their first answers on another scale.
    assert!(reads.note(s(1050), [&timed(Some(cp(1045)), None)]));
    let on = reads.map(|d| d.as_secs());
    assert_eq!(
        on.taint_added.map(|r| (r.wall, r.first_heard)),
        Some((cp(1045), 1050))
    );
}

/// A reaching peer's read of this node's Node with the not-ready taint added at `not_ready`, or
/// the unreachable one at `unreachable` (the controller swaps the one for the other).
fn read_taints(not_ready: Option<SystemTime>, unreachable: Option<SystemTime>) -> Heard {
    match timed(unreachable, None) {
        Heard::Report(r) => Heard::Report(PeerReport {
            node_read: Some(NodeRead {
                tainted: not_ready.is_some() || unreachable.is_some(),
                taint_added: unreachable,
                not_ready_added: not_ready,
                ..NodeRead::default()
            }),
            ..r
        }),
        Heard::Silent => unreachable!("a report"),
    }
}

/// The not-ready taint's `timeAdded` the peers read (`NodeReads::not_ready`,
/// `Fixes::not_ready_time_read`, seed 0xe8 with `--not-ready`): counted as the unreachable
/// taint's is, and kept through the controller's swap for the unreachable one and back, which
/// keep the timers it started, until a round reads the Node with neither; a tainted read with no
/// time (a reader that predates the field) changes nothing.
#[test]
fn the_not_ready_taint_the_peers_read_counts_through_the_swap_until_a_read_without_either() {
    use nodewarden::core::clock::Moment;
    let s = Duration::from_secs;
    let (cp, at) = (cp_time, cp_moment);
    let mut reads = NodeReads::<Duration>::default();
    // An older reader's tainted read carries no time: nothing to count from.
    assert!(!reads.note(s(990), [&read_node(true, Some(true))]));
    // Added at 985, read at 990: counted from 985, not swapped.
    assert!(reads.note(s(990), [&read_taints(Some(cp(985)), None)]));
    assert_eq!(reads.not_ready(at(995)), Some((s(985), cp(985), false)));
    assert_eq!(reads.tainted(at(995)), None);
    // Read again, and by an older reader: the first answer stands.
    assert!(!reads.note(s(993), [&read_taints(Some(cp(985)), None)]));
    assert!(!reads.note(s(996), [&read_node(true, Some(true))]));
    assert_eq!(reads.not_ready(at(997)).map(|(t, ..)| t), Some(s(985)));
    // The controller swapped it for the unreachable taint at 1030: the not-ready time goes on.
    assert!(reads.note(s(1032), [&read_taints(None, Some(cp(1030)))]));
    assert_eq!(reads.not_ready(at(1033)), Some((s(985), cp(985), true)));
    assert_eq!(reads.tainted(at(1033)), Some(s(1030)));
    // Swapped back as the kubelet posts Ready=False again: a new not-ready taint on the Node,
    // whose run's timers count from the first.
    assert!(reads.note(s(1040), [&read_taints(Some(cp(1038)), None)]));
    assert_eq!(reads.not_ready(at(1041)), Some((s(985), cp(985), false)));
    // Neither taint: the run is over.
    assert!(reads.note(s(1050), [&read_node(true, Some(false))]));
    assert_eq!(reads.not_ready(at(1051)), None);
    // An unreachable taint read with no not-ready one before it is no swap.
    assert!(reads.note(s(1060), [&read_taints(None, Some(cp(1058)))]));
    assert_eq!(reads.not_ready(at(1061)), None);
    // This node's clock behind the control plane's: the first answer counts, as for the other.
    assert!(reads.note(s(1070), [&read_taints(Some(cp(1065)), None)]));
    let behind = Moment {
        mono: s(1072),
        wall: cp(1072) - s(60),
    };
    assert_eq!(reads.not_ready(behind), Some((s(1070), cp(1065), false)));
}

/// What the peers read of this node's Node across rounds (`TaintReads`): the latest round
/// whose reads found no taint, and whether a later one found it; only peers that reach the API
/// server count, and a round with no read changes nothing.
#[test]
fn the_peers_reads_of_the_node_keep_the_latest_round_without_the_taint() {
    let s = Duration::from_secs;
    let mut reads = TaintReads::default();
    assert!(reads.note(s(1050), [&read_node(true, Some(false)), &Heard::Silent]));
    assert_eq!((reads.untainted_at, reads.tainted), (Some(s(1050)), false));
    assert_eq!(reads.tainted_from(), None);
    // No read, or one from a peer that says it is cut off (it could not have read anything).
    assert!(!reads.note(s(1053), [&read_node(true, None), &Heard::Silent]));
    assert!(!reads.note(s(1054), [&read_node(false, Some(false))]));
    assert_eq!(reads.untainted_at, Some(s(1050)));
    // One peer read the taint, another not yet: tainted, added after the round of 1050.
    assert!(reads.note(
        s(1056),
        [&read_node(true, Some(false)), &read_node(true, Some(true))]
    ));
    assert_eq!((reads.untainted_at, reads.tainted), (Some(s(1050)), true));
    // Counted from that round, less `READ_SLACK` (a restart of the agent's own).
    assert_eq!(reads.tainted_from(), Some(s(1040)));
    // Read without it again: removed, and no taint to come counts from before this round.
    assert!(reads.note(s(1062), [&read_node(true, Some(false))]));
    assert_eq!((reads.untainted_at, reads.tainted), (Some(s(1062)), false));
    // A round sent earlier does not move it back.
    assert!(!reads.note(s(1060), [&read_node(true, Some(false))]));
    assert_eq!(reads.untainted_at, Some(s(1062)));
    // A round is of a tainted node when it was seen so, or this round's reads say so, or, with
    // no read in it, the latest reads did.
    let tainted = TaintReads {
        untainted_at: None,
        tainted: true,
    };
    let none = [Heard::Silent];
    let clean = [read_node(true, Some(false))];
    assert!(round_tainted(true, &TaintReads::default(), &clean));
    assert!(!round_tainted(false, &tainted, &clean));
    assert!(round_tainted(false, &tainted, &none));
    assert!(!round_tainted(false, &TaintReads::default(), &none));
}

/// The plan counts no deadline from before the latest round whose reads found no taint, less
/// `READ_SLACK` (`QuorumVerdict::Enforce::untainted`), whatever was seen on the Node before; a
/// taint read later counts from that round, as one seen would. Never earlier than without the
/// reads. Contact at 1000, a 40 s grace period, a pod tolerating 30 s: 1070 by the normal rule.
#[test]
fn no_deadline_counts_from_before_a_read_of_the_node_without_the_taint() {
    let s = Duration::from_secs;
    let enforce = |untainted: Option<Duration>| QuorumVerdict::Enforce {
        not_before: None,
        held_from: None,
        untainted,
    };
    assert_eq!(READ_SLACK, s(10));
    assert_eq!(eviction(&enforce(None)), Some(s(1070)));
    assert_eq!(eviction(&enforce(Some(s(1060)))), Some(s(1080)));
    assert_eq!(eviction(&enforce(Some(s(1045)))), Some(s(1070)));
    let policy = FencePolicy {
        node_monitor_grace_period: s(40),
        node_monitor_period: Duration::ZERO,
        safety_margin: s(2),
        grace_cap: s(30),
        mode: Mode::Enforce,
        kubelet_lag: Duration::ZERO,
    };
    let schedule = |contact: u64,
                    tainted: Option<u64>,
                    verdict: &QuorumVerdict,
                    p: &FencePolicy| {
        match &plan(&[pod()], s(contact), tainted.map(s), None, p, verdict)[0].plan {
            Plan::Stop { schedule, .. } => *schedule,
            other => panic!("{other:?}"),
        }
    };
    // A taint seen on the Node at 1020, then a read without it at 1060: removed since.
    let removed = schedule(1000, Some(1020), &enforce(Some(s(1060))), &policy);
    assert_eq!(removed.eviction_time, s(1080));
    // A taint read after the round of 1060 counts from it (`TaintReads::tainted_from`, 1050),
    // in a partition that began later too.
    let read = schedule(1100, Some(1050), &enforce(Some(s(1060))), &policy);
    assert_eq!(read.eviction_time, s(1080));
    // On the taint while not cut off: the same count, and SIGTERM at most a second before the
    // kill (10 s of grace otherwise).
    let on_taint = QuorumVerdict::Tainted { untainted: None };
    let connected = schedule(1100, Some(1020), &on_taint, &policy.on_taint());
    assert_eq!(connected.eviction_time, s(1050));
    assert_eq!(connected.kill_at, s(1048));
    assert_eq!(connected.sigterm_at, s(1047));
    let cut_off = schedule(1100, Some(1020), &enforce(None), &policy);
    assert_eq!(cut_off.sigterm_at, s(1038));
    let plans = plan(
        &[pod()],
        s(1100),
        Some(s(1020)),
        None,
        &policy.on_taint(),
        &on_taint,
    );
    let Plan::Stop { reason, .. } = &plans[0].plan else {
        panic!("{:?}", plans[0].plan)
    };
    assert!(
        reason.contains("carries the node controller's NoExecute taint"),
        "{reason}"
    );
    // Through `planning`, as the fence task and the simulator call it.
    assert_eq!(
        planning(
            Some(&Verdict::Enforce { reason: "r".into() }),
            (None, None),
            (Some(s(1050)), None),
            false,
            s(10)
        ),
        enforce(Some(s(1050)))
    );
}

#[test]
fn a_taint_read_with_no_untainted_read_since_the_hold_began_may_have_come_during_it() {
    // Seed 0xcdf7 of the simulator: a node held with no peer reaching the API server, though a
    // peer's kubelet was back and the controller saw a healthy zone and tainted the node. The
    // peers read the taint only after the hold, and the fence counted from the hold's end: the
    // pod ran 12.9 s past its deletion.
    let s = Duration::from_secs;
    let enforce = Verdict::Enforce {
        reason: "this node was tainted before".into(),
    };
    // Contact at 1000: taintable from 1040. Held from 1020 to 1060.
    let held = (Some(s(1060)), Some(s(1020)));
    let at = |untainted: Option<Duration>, read_tainted: bool| {
        eviction(&planning(
            Some(&enforce),
            held,
            (untainted, None),
            read_tainted,
            s(10),
        ))
    };
    // Not read tainted: from the hold's end (less a request timeout), 1050 + 30 s.
    assert_eq!(at(None, false), Some(s(1080)));
    // Read tainted, never without the taint: it may have come during the hold, 1040 + 30 s.
    assert_eq!(at(None, true), Some(s(1070)));
    // Read without it only before the hold began: the same.
    assert_eq!(at(Some(s(1010)), true), Some(s(1070)));
    // Read without it after the hold began: the taint came after that read, and the hold stands.
    assert_eq!(at(Some(s(1030)), true), Some(s(1080)));
}

// ---- pods the view missed (`core::unlisted`) ----

fn pod_uid(uid: &str) -> FencePod {
    FencePod {
        uid: uid.into(),
        ..pod()
    }
}

/// A peer's answer that listed `pods` for this node (`None`: not listed).
fn listing(reachable: bool, pods: Option<Vec<FencePod>>) -> Heard {
    let Heard::Report(r) = report("b", reachable, Some(1)) else {
        unreachable!("report() is a report")
    };
    Heard::Report(PeerReport { pods, ..r })
}

#[test]
fn the_pods_asked_about_are_those_running_that_neither_the_view_nor_a_list_holds() {
    let known = [pod_uid("a"), pod_uid("c")];
    let settled = ["d".to_string()].into();
    let running = ["e", "c", "b", "d", "a", "b"];
    assert_eq!(unlisted::unlisted(running, &known, &settled), ["b", "e"]);
    // At most MAX_ASKED, the first by UID.
    let many: Vec<String> = (0..100).map(|i| format!("{i:03}")).collect();
    let asked = unlisted::unlisted(many.iter().map(String::as_str), &[], &settled);
    assert_eq!(asked.len(), unlisted::MAX_ASKED);
    assert_eq!(asked.first().map(String::as_str), Some("000"));
}

#[test]
fn only_a_reaching_peers_list_finds_or_settles_and_only_the_pods_asked_about() {
    let asked = vec!["b".to_string(), "e".to_string()];
    let known = [pod_uid("a")];
    // A cut-off peer's list and a silent peer count for nothing; a reaching peer's answer
    // without a list (its read failed) neither.
    let nothing = [
        listing(false, Some(vec![pod_uid("b")])),
        Heard::Silent,
        listing(true, None),
    ];
    assert_eq!(
        unlisted::read(&asked, &known, &nothing),
        unlisted::PodsRead::default()
    );
    // A reaching peer's list: "b" found (once, though two lists hold it), "e" settled; a pod
    // not asked about ("x") or known already ("a") is not taken from it.
    let heard = [
        listing(true, Some(vec![pod_uid("x"), pod_uid("b"), pod_uid("a")])),
        listing(true, Some(vec![pod_uid("b")])),
    ];
    let read = unlisted::read(&asked, &known, &heard);
    assert_eq!(read.found, [pod_uid("b")]);
    assert_eq!(read.settled, ["e"]);
    // An empty list settles every UID asked about; nothing asked, nothing read.
    let empty = [listing(true, Some(Vec::new()))];
    assert_eq!(unlisted::read(&asked, &known, &empty).settled, asked);
    assert_eq!(
        unlisted::read(&[], &known, &heard),
        unlisted::PodsRead::default()
    );
}

// ---- a taint the peers read settles a pending enforce ----

/// This node alone in zone "x", cut off 10 s ago (before its answers settle at `OWN_AGE`); three
/// peers of zone "a" reach the API server, the first of them with `tainted` as its read of this
/// node's Node, the others with none.
fn alone_in_its_zone(tainted: Option<bool>, reaching: bool) -> Round {
    let peers: Vec<Peer> = (1..4)
        .map(|i| Peer {
            node: format!("a{i}"),
            address: "10.0.0.1:9843".parse().expect("address"),
            zone: "a".into(),
        })
        .collect();
    let heard: Vec<(Peer, Heard)> = peers
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let Heard::Report(r) = report(&p.node, i > 0 || reaching, Some(3)) else {
                unreachable!("report() is a report")
            };
            let read = if i == 0 { tainted } else { None };
            let r = PeerReport {
                zone: "a".into(),
                node_read: read.map(untimed),
                ..r
            };
            (p.clone(), Heard::Report(r))
        })
        .collect();
    zone::round(
        &NodeZone::from_key("x", false),
        &peers,
        &heard,
        Duration::from_secs(10),
    )
}

#[test]
fn a_taint_a_reaching_peer_read_this_round_settles_a_pending_enforce_at_once() {
    let verdict = |round: &Round, policy: &QuorumPolicy| decide_or_ask(round, policy, true).0;
    // Its whole zone cut off: `wholeZoneCutOff` (enforce) waits for the answers to settle.
    let untainted = verdict(&alone_in_its_zone(Some(false), true), &policy());
    assert!(
        matches!(untainted, Verdict::Pending { .. }),
        "{untainted:?}"
    );
    assert!(matches!(
        verdict(&alone_in_its_zone(None, true), &policy()),
        Verdict::Pending { .. }
    ));
    // A peer that reaches the API server read the taint: the control plane judged this node.
    let read = alone_in_its_zone(Some(true), true);
    let settled = verdict(&read, &policy());
    assert!(settled.is_enforce(), "{settled:?}");
    assert!(
        settled
            .reason()
            .contains("settled: a peer that reaches the API server read this node's Node"),
        "{}",
        settled.reason()
    );
    assert!(
        settled.reason().contains("peers.wholeZoneCutOff"),
        "{}",
        settled.reason()
    );
    // The same read from a peer that says it is cut off counts for nothing, nor does the rule
    // reverted.
    let unsure = verdict(&alone_in_its_zone(Some(true), false), &policy());
    assert!(matches!(unsure, Verdict::Pending { .. }), "{unsure:?}");
    let before = policy_without(|f| f.taint_read_settles = false);
    assert!(matches!(verdict(&read, &before), Verdict::Pending { .. }));
    // A hold stays a hold: with `wholeZoneCutOff` set to hold, the read settles nothing.
    let holding = QuorumPolicy {
        whole_zone_cut_off: Undecided::Hold,
        ..policy()
    };
    assert!(verdict(&read, &holding).is_hold());
}

/// An answer of a peer of zone "a".
fn in_a(heard: Heard) -> Heard {
    match heard {
        Heard::Report(r) => Heard::Report(PeerReport {
            zone: "a".into(),
            ..r
        }),
        silent => silent,
    }
}

/// A peer of zone "a" named `n`, for rounds built with `zone::round`.
fn peer_a(n: &str) -> Peer {
    Peer {
        node: n.into(),
        address: "10.0.0.1:9843".parse().expect("address"),
        zone: "a".into(),
    }
}

#[test]
fn a_silent_peer_still_counts_as_reaching_while_its_latest_answer_says_so() {
    let secs = Duration::from_secs;
    let after = policy().unreachable_after;
    let (a, b, c) = (peer_a("a"), peer_a("b"), peer_a("c"));
    let mut memory = Remembered::default();
    // Round sent at 100 s: a reaches the API server (contact 3 s old), b is cut off, c is
    // silent.
    memory.note(
        secs(100),
        &[
            (a.clone(), report("a", true, Some(3))),
            (b.clone(), report("b", false, Some(40))),
            (c.clone(), Heard::Silent),
        ],
    );
    let silent = || {
        vec![
            (a.clone(), Heard::Silent),
            (b.clone(), Heard::Silent),
            (c.clone(), Heard::Silent),
        ]
    };
    // All three silent later: only a's answer still says it reaches the API server, while its
    // contact is at most 15 s old (at 112 s), no longer at 113 s. b's "cut off" and c's silence
    // are nothing to remember.
    assert_eq!(memory.reaching(secs(105), &silent(), after), 1);
    assert_eq!(memory.reaching(secs(112), &silent(), after), 1);
    assert_eq!(memory.reaching(secs(113), &silent(), after), 0);
    // A peer answering this round is counted by its answer, not the memory.
    let answering = vec![(a.clone(), report("a", false, Some(20)))];
    assert_eq!(memory.reaching(secs(105), &answering, after), 0);
    // A later answer "reachable" with an older contact does not move the fact back; a later
    // answer "cut off" replaces it.
    memory.note(secs(101), &[(a.clone(), report("a", true, Some(10)))]);
    assert_eq!(memory.reaching(secs(112), &silent(), after), 1);
    memory.note(secs(106), &[(a.clone(), report("a", false, Some(9)))]);
    assert_eq!(memory.reaching(secs(107), &silent(), after), 0);
}

#[test]
fn a_zone_whose_only_reaching_peer_falls_silent_still_counts_a_live_control_plane() {
    // Issue 22, seed 0x1a62: a zone of four, three cut off together (none certainly before this
    // node, so it may have been tainted while the zone still counted as healthy), the fourth
    // reaching the API server until its agent restarts.
    let peers = [peer_a("p1"), peer_a("p2"), peer_a("up")];
    let cut = |p: &Peer| (p.clone(), in_a(report(&p.node, false, Some(20))));
    let round_of = |heard: &[(Peer, Heard)]| {
        zone::round(
            &NodeZone::from_key("a", false),
            &peers,
            heard,
            Duration::from_secs(22),
        )
    };
    let mut memory = Remembered::default();
    let reaching = [
        cut(&peers[0]),
        cut(&peers[1]),
        (peers[2].clone(), in_a(report("up", true, Some(2)))),
    ];
    memory.note(Duration::from_secs(200), &reaching);
    let answered = decide(&round_of(&reaching), &policy(), true);
    assert!(answered.is_enforce(), "{answered:?}");
    // Three seconds later the reaching peer is silent. Its silence alone is no evidence of a
    // live control plane, and the partial disruption holds; its latest answer (its contact 5 s
    // old) still is, and the verdict stands, saying so.
    let later = [
        cut(&peers[0]),
        cut(&peers[1]),
        (peers[2].clone(), Heard::Silent),
    ];
    let unremembered = decide(&round_of(&later), &policy(), true);
    assert!(unremembered.is_hold(), "{unremembered:?}");
    let n = memory.reaching(Duration::from_secs(203), &later, policy().unreachable_after);
    assert_eq!(n, 1);
    let remembered = decide(&round_of(&later).silent_reaching(n), &policy(), true);
    assert!(remembered.is_enforce(), "{remembered:?}");
    assert!(
        remembered
            .reason()
            .contains("1 silent now said so within the last 15s"),
        "{}",
        remembered.reason()
    );
    // With the fix reverted, the memory counts for nothing.
    let reverted = policy_without(|f| f.silent_remembered = false);
    assert!(decide(&round_of(&later).silent_reaching(n), &reverted, true).is_hold());
}

/// Silence alone holds nothing (`Fixes::cut_off_remembered`, seed 0xb23 with `--not-ready`): a
/// peer silent now that answered "cut off" within `CUT_OFF_STANDS` counts as that answer where
/// counting it as ready alone would hold a partial disruption of a small zone.
#[test]
fn a_peer_silent_after_it_said_cut_off_does_not_make_its_zone_partly_disrupted() {
    use nodewarden::core::quorum::{CUT_OFF_STANDS, RoundBasis};
    let secs = Duration::from_secs;
    // Zone a of six: this node and p1-p5; zone b: q, which reaches the API server.
    let mut peers: Vec<Peer> = (1..=5).map(|i| peer_a(&format!("p{i}"))).collect();
    let q = Peer {
        node: "q".into(),
        address: "10.0.0.2:9843".parse().expect("address"),
        zone: "b".into(),
    };
    peers.push(q.clone());
    let zone = NodeZone::from_key("a", false);
    let reads = TaintReads::default();
    // This node's contact is 22 s old at the first round and ages with the rounds.
    use std::sync::atomic::{AtomicU64, Ordering};
    let own = AtomicU64::new(22);
    let set_own = |d: Duration| own.store(d.as_secs(), Ordering::Relaxed);
    let ages = |_: &[(Peer, Heard)]| {
        let age = secs(own.load(Ordering::Relaxed));
        (age, age)
    };
    let basis = RoundBasis {
        zone: &zone,
        peers: &peers,
        seen: false,
        reads: &reads,
        ages: &ages,
        kubelet_age: None,
        leaderless: None,
        unreachable_after: policy().unreachable_after,
    };
    // p1-p4 lost the API server well before this node (their contact 40 s old: certainly silent
    // first); p5 with it.
    let heard = |p5: Heard, gone: u64| {
        let mut heard: Vec<(Peer, Heard)> = peers[..4]
            .iter()
            .map(|p| (p.clone(), in_a(report(&p.node, false, Some(40 + gone)))))
            .collect();
        heard.push((peers[4].clone(), p5));
        heard.push((q.clone(), report("q", true, Some(2))));
        heard
    };
    let mut memory = Remembered::default();
    // Round at 100 s: all six of zone a cut off, and zone b up: the controller evicts.
    let first = basis.round(
        &heard(in_a(report("p5", false, Some(22))), 0),
        &mut memory,
        secs(100),
    );
    assert!(first.cut_off_counted().is_none());
    let verdict = decide(&first, &policy(), true);
    assert!(verdict.is_enforce(), "{verdict:?}");
    // Round at 103 s: p5 is silent. Counted as ready, it would leave zone a partly disrupted
    // (5 of 6, four of them certainly before this node), which holds.
    set_own(secs(25));
    let later = basis.round(&heard(Heard::Silent, 3), &mut memory, secs(103));
    assert_eq!(later.cut_off_remembered.len(), 1);
    let kept = later.cut_off_counted().expect("p5 remembered");
    assert_eq!(kept.heard.len(), later.heard.len());
    let silent = |r: &Round| r.heard.iter().filter(|(_, h)| *h == Heard::Silent).count();
    assert_eq!((silent(&later), silent(&kept)), (1, 0));
    let reverted = policy_without(|f| f.cut_off_remembered = false);
    let held = decide(&later, &reverted, true);
    assert!(held.is_hold(), "{held:?}");
    // Its answer "cut off" 3 s ago stands: the zone is fully disrupted, and the verdict says why.
    let verdict = decide(&later, &policy(), true);
    assert!(verdict.is_enforce(), "{verdict:?}");
    assert!(
        verdict
            .reason()
            .contains("silent now that answered \"cut off\" within the last 30s"),
        "{}",
        verdict.reason()
    );
    // Without a peer of another zone that says it reaches the API server, the round counted so
    // proves no live control plane: the hold stands (`peers.wholeZoneCutOff` is not consulted
    // on silence), and the peers not asked yet are asked first.
    let mut alone = heard(Heard::Silent, 3);
    alone.pop();
    alone.push((q.clone(), Heard::Silent));
    let mut memory_alone = Remembered::default();
    let mut first_alone = heard(in_a(report("p5", false, Some(22))), 0);
    first_alone.pop();
    first_alone.push((q.clone(), Heard::Silent));
    set_own(secs(22));
    basis.round(&first_alone, &mut memory_alone, secs(100));
    set_own(secs(25));
    let unlive = basis.round(&alone, &mut memory_alone, secs(103));
    assert!(unlive.cut_off_counted().is_some());
    let (verdict, ask_more) = decide_or_ask(&unlive, &policy(), true);
    assert!(verdict.is_hold(), "{verdict:?}");
    assert!(ask_more);
    // Past `CUT_OFF_STANDS` it no longer stands.
    let late = secs(100) + CUT_OFF_STANDS + secs(1);
    set_own(secs(22) + CUT_OFF_STANDS + secs(1));
    let stale = basis.round(&heard(Heard::Silent, 31), &mut memory, late);
    assert!(stale.cut_off_counted().is_none());
    assert!(decide(&stale, &policy(), true).is_hold());
    // A later answer "reachable" replaces the memory.
    basis.round(
        &heard(in_a(report("p5", true, Some(1))), 3),
        &mut memory,
        secs(103),
    );
    let after = basis.round(&heard(Heard::Silent, 4), &mut memory, secs(104));
    assert!(after.cut_off_counted().is_none());
}

/// A round proves the API server answered after it was sent only by a read a peer made for it
/// (`ServerReads`, docs/fence.md §5, *The SIGTERM waits for a read*): peers that say they reach
/// it and read nothing leave the round unread, once peers have read in this run; a round in
/// which none says it reaches the API server, or a run whose peers never read (a build before
/// the reads, or no RBAC for them), is not.
#[test]
fn a_round_whose_peers_say_they_reach_the_api_server_but_read_nothing_from_it_is_unread() {
    let with = |read: fn(&mut PeerReport)| {
        let mut h = report("p1", true, Some(1));
        if let Heard::Report(r) = &mut h {
            read(r);
        }
        h
    };
    let unread = report("p2", true, Some(2));
    let tainted = with(|r| r.node_read = Some(untimed(false)));
    let renewed =
        with(|r| r.kubelet_renewed = Some(std::time::UNIX_EPOCH + Duration::from_secs(9)));
    let listed = with(|r| r.pods = Some(Vec::new()));
    // A cut-off peer's answer carries no read either way.
    let cut_off = report("p3", false, Some(30));

    let mut reads = ServerReads::default();
    assert!(
        !reads.note([&unread, &cut_off]),
        "no read yet in this run: nothing to miss"
    );
    assert!(!reads.unread && !reads.ever);
    for read in [&tainted, &renewed, &listed] {
        let mut r = ServerReads::default();
        assert!(r.note([read, &unread]), "the first read");
        assert!(r.ever && !r.unread, "{read:?}");
        assert!(!r.note([read]), "unchanged");
        assert!(r.note([&unread, &cut_off]), "reaching peers read nothing");
        assert!(r.unread);
        assert!(!r.note([&unread, &cut_off]), "unchanged");
        assert!(r.note([&cut_off]), "no peer says it reaches the API server");
        assert!(!r.unread);
        r.note([&unread]);
        assert!(r.note([&unread, read]), "a read again");
        assert!(!r.unread);
    }
    // No answer at all is not an unread round.
    reads.note([&tainted]);
    assert!(!reads.note(std::iter::empty::<&Heard>()));
    assert!(!reads.note([&Heard::Silent]));
    assert!(!reads.unread);
}

/// When SIGTERMs wait (`sigterm_waits`, docs/fence.md §5, *The SIGTERM waits for a read*): only
/// under an enforce; while the latest round is unread; and, under an enforce the staggered
/// expiry only guesses (`Verdict::in_doubt`), until a peer reads the taint, once peers' reads
/// come back in this run.
#[test]
fn sigterms_wait_on_an_unread_round_or_on_a_guessed_enforce_until_the_taint_is_read() {
    // A zone of four: three cut off together (none certainly before this node), the fourth
    // reaching the API server — the staggered expiry's guess; and the same zone with only this
    // node cut off — a healthy zone, certain.
    let peers = [peer_a("p1"), peer_a("p2"), peer_a("up")];
    let cut = |p: &Peer| (p.clone(), in_a(report(&p.node, false, Some(20))));
    let up = |p: &Peer| (p.clone(), in_a(report(&p.node, true, Some(2))));
    let decided = |heard: &[(Peer, Heard)]| {
        let round = zone::round(
            &NodeZone::from_key("a", false),
            &peers,
            heard,
            Duration::from_secs(22),
        );
        decide(&round, &policy(), true)
    };
    let guessed = decided(&[cut(&peers[0]), cut(&peers[1]), up(&peers[2])]);
    let certain = decided(&[up(&peers[0]), up(&peers[1]), up(&peers[2])]);
    assert!(guessed.is_enforce() && guessed.in_doubt(), "{guessed:?}");
    assert!(certain.is_enforce() && !certain.in_doubt(), "{certain:?}");
    let hold = Verdict::Hold {
        reason: guessed.reason().to_string(),
    };
    assert!(!hold.in_doubt());

    let fixes = policy().fixes;
    let reads = |ever, unread| ServerReads { ever, unread };
    let under = |f: &nodewarden::core::quorum::Fixes,
                 v: Option<&Verdict>,
                 r: ServerReads,
                 tainted: bool| sigterm_waits(v, &r, tainted, f);
    let waits = |v: Option<&Verdict>, r: ServerReads, tainted: bool| under(&fixes, v, r, tainted);
    // No verdict, or a hold: nothing is sent anyway.
    assert!(!waits(None, reads(true, true), false));
    assert!(!waits(Some(&hold), reads(true, true), false));
    // An unread round: any enforce waits.
    assert!(waits(Some(&certain), reads(true, true), false));
    assert!(waits(Some(&guessed), reads(true, true), true));
    // Reads that came back: a certain enforce goes ahead; a guessed one waits for the taint.
    assert!(!waits(Some(&certain), reads(true, false), false));
    assert!(waits(Some(&guessed), reads(true, false), false));
    assert!(!waits(Some(&guessed), reads(true, false), true));
    // Peers that never read in this run: nothing to wait for.
    assert!(!waits(Some(&guessed), reads(false, false), false));
    // Each rule off alone.
    let mut no_read = fixes;
    no_read.sigterm_read = false;
    assert!(!under(&no_read, Some(&certain), reads(true, true), false));
    assert!(under(&no_read, Some(&guessed), reads(true, true), false));
    let mut no_doubt = fixes;
    no_doubt.sigterm_doubt = false;
    assert!(!under(&no_doubt, Some(&guessed), reads(true, false), false));
    assert!(under(&no_doubt, Some(&guessed), reads(true, true), false));
}

// ---- the zone as recorded ----

/// A peer that reaches the API server, with `record` as its read of this node's zone.
fn recording(record: Option<ZoneRecord>, reachable: bool) -> (String, Heard) {
    let Heard::Report(r) = report("reader", reachable, Some(if reachable { 1 } else { 20 })) else {
        unreachable!("report() is a report")
    };
    (
        ZONE.into(),
        Heard::Report(PeerReport {
            zone_recorded: record,
            ..r
        }),
    )
}

/// Each row of `table` (the reader's record, whether it reaches the API server, the verdict's
/// word) decided on the round `round` makes of that reader's answer; a hold's reason says each
/// of `says`.
fn assert_recorded(
    table: &[(Option<ZoneRecord>, bool, &str)],
    round: impl Fn((String, Heard)) -> Round,
    says: &[&str],
) {
    for &(rec, reachable, want) in table {
        let v = decide(&round(recording(rec, reachable)), &policy(), true);
        assert_eq!(
            v.word(),
            want,
            "{rec:?} reachable {reachable}: {}",
            v.reason()
        );
        if want == "hold" {
            assert!(
                says.iter().all(|s| v.reason().contains(s)),
                "{}",
                v.reason()
            );
        }
    }
}

fn record(not_ready: usize, size: usize, tainted: bool) -> Option<ZoneRecord> {
    Some(ZoneRecord {
        not_ready,
        size,
        tainted,
        ..ZoneRecord::default()
    })
}

/// A zone of five, three of them (this node and two peers) cut off together: which of the three
/// the controller judged while the zone was still Normal is a guess (the staggered expiry), and
/// the guess enforces. The other two reach the API server, the first with `first` as its read of
/// the zone.
fn three_of_five_together(first: (String, Heard)) -> Round {
    let tied = |n: &str| (ZONE.to_string(), report(n, false, Some(20)));
    let mut r = zone(5, 0);
    r.heard = vec![tied("c1"), tied("c2"), first, up(1)];
    r
}

#[test]
fn a_zone_the_api_server_records_partly_disrupted_holds_a_node_read_untainted_in_it() {
    // Without a record: the staggered expiry's guess, enforce.
    let v = decide(&three_of_five_together(up(0)), &policy(), true);
    assert!(v.is_enforce() && v.in_doubt(), "{}", v.reason());
    // (the reader's record, whether it reaches the API server) → verdict
    let table = [
        // 3 of 5 recorded not Ready, this node untainted: the controller taints nothing there.
        (record(3, 5, false), true, "hold"),
        (record(4, 5, false), true, "hold"),
        // This node tainted in the same read: judged while the zone was Normal.
        (record(3, 5, true), true, "enforce"),
        // Not yet a partial disruption: two of five.
        (record(2, 5, false), true, "enforce"),
        // 50 % of six is under the 55 % threshold.
        (record(3, 6, false), true, "enforce"),
        // Fully disrupted: tainted again at the normal rate.
        (record(5, 5, false), true, "enforce"),
        // A zone of more than 50 is still tainted in a partial disruption (0.01/s).
        (record(40, 51, false), true, "enforce"),
        (record(40, 50, false), true, "hold"),
        // A record from a peer that says it does not reach the API server is no record.
        (record(3, 5, false), false, "enforce"),
    ];
    assert_recorded(
        &table,
        three_of_five_together,
        &[
            "recorded not Ready (partial disruption)",
            "without node.kubernetes.io/unreachable",
        ],
    );
    // A node seen tainted was judged already: no record holds it.
    let r = three_of_five_together(recording(record(3, 5, false), true)).tainted(true);
    assert!(decide(&r, &policy(), true).is_enforce());
    // With the rule switched off, the record changes nothing.
    let old = policy_without(|f| f.zone_recorded = false);
    let r = three_of_five_together(recording(record(3, 5, false), true));
    assert!(decide(&r, &old, true).is_enforce());
}

/// A record of `not_ready` of `size` Nodes not Ready, this node untainted and still Ready in it.
fn record_ready(not_ready: usize, size: usize) -> Option<ZoneRecord> {
    Some(ZoneRecord {
        asker_ready: true,
        ..record(not_ready, size, false).expect("a record")
    })
}

#[test]
fn a_node_still_recorded_ready_whose_judgement_makes_its_small_zone_partly_disrupted_holds() {
    // Forty-second session, seed 0x47a: of a zone of four, this node was cut off 15 s after two
    // others, within the order's tie, so the count guesses it may have been judged first. The
    // API server records the two Unknown and this node still Ready: the pass that judges it
    // counts three of four and stops tainting, and the pass after it, which queues it, has no
    // token to give.
    let table = [
        // Judged, three of five not Ready: a partial disruption of a small zone. (Three of
        // five recorded already hold as a partial disruption recorded, above.)
        (record_ready(2, 5), true, "hold"),
        // Two of five with this node: normal, tainted at 0.1/s.
        (record_ready(1, 5), true, "enforce"),
        // Every node not Ready once judged: fully disrupted, tainted at the normal rate.
        (record_ready(2, 3), true, "enforce"),
        // 50 % of six is under the 55 % threshold; a zone of 51 is still tainted (29 of 51
        // judged, 57 %), one of 50 is not (28 of 50, 56 %).
        (record_ready(2, 6), true, "enforce"),
        (record_ready(28, 51), true, "enforce"),
        (record_ready(27, 50), true, "hold"),
        // This node not Ready in the record already (or from a reader that does not say): two
        // of five is the count the controller stopped at, a normal zone.
        (record(2, 5, false), true, "enforce"),
        // Tainted in the same read; a record from a peer that does not reach the API server.
        (
            Some(ZoneRecord {
                tainted: true,
                ..record_ready(2, 5).expect("a record")
            }),
            true,
            "enforce",
        ),
        (record_ready(2, 5), false, "enforce"),
    ];
    assert_recorded(
        &table,
        three_of_five_together,
        &[
            "node(s) of zone zone-a recorded not Ready and this node's Node still Ready",
            "the pass that judges it records a partial disruption",
        ],
    );
    // A zone the peers' answers count as healthy, recorded the same: the same hold (seed 0x85e:
    // the three cut off first had lost their peer links too, and counted as ready).
    let mut r = zone(5, 0);
    r.heard = vec![
        silent(),
        silent(),
        recording(record_ready(2, 5), true),
        up(1),
    ];
    assert!(decide(&r, &policy(), true).is_hold());
    r.heard[2] = recording(record(2, 5, false), true);
    assert!(decide(&r, &policy(), true).is_enforce());
    // A node seen tainted was judged already; with the rule switched off, the record changes
    // nothing.
    let held = || three_of_five_together(recording(record_ready(2, 5), true));
    assert!(decide(&held().tainted(true), &policy(), true).is_enforce());
    let old = policy_without(|f| f.judged_partial = false);
    assert!(decide(&held(), &old, true).is_enforce());
    // Rounds too far apart to read the record again before the controller could taint this
    // node after a post: no such hold.
    let slow = QuorumPolicy {
        record_in_time: false,
        ..policy()
    };
    assert!(decide(&held(), &slow, true).is_enforce());
    // The defaults (rounds 3 s apart, a 5 s monitor period) are in time; rounds 4 s apart are
    // not, nor is a 4 s monitor period.
    let in_time = nodewarden::core::quorum::record_in_time;
    assert!(in_time(Duration::from_secs(3), Duration::from_secs(5)));
    assert!(!in_time(Duration::from_secs(4), Duration::from_secs(5)));
    assert!(!in_time(Duration::from_secs(3), Duration::from_secs(4)));
}

#[test]
fn a_record_says_whether_judging_the_asker_makes_its_zone_partly_disrupted() {
    let judged = |r: Option<ZoneRecord>| r.expect("a record").disrupted_once_judged();
    assert!(judged(record_ready(2, 5)));
    assert!(!judged(record(2, 5, false)));
    assert!(!judged(record_ready(1, 5)));
    assert!(!judged(record_ready(2, 3)));
    // A record whose asker is Ready with no Node Ready cannot be.
    let impossible = ZoneRecord {
        not_ready: 5,
        ..record_ready(5, 5).expect("a record")
    };
    assert!(impossible.impossible().is_some());
    assert_eq!(record_ready(2, 5).expect("a record").impossible(), None);
    // On the wire as "askerReady", absent when false.
    let text = serde_json::to_string(&record_ready(2, 5)).expect("json");
    assert!(
        text.ends_with(r#""unreachableTainted":false,"askerReady":true}"#),
        "{text}"
    );
    let text = serde_json::to_string(&record(2, 5, false)).expect("json");
    assert!(!text.contains("askerReady"), "{text}");
}

#[test]
fn a_zone_that_looks_healthy_to_the_peers_asked_but_is_recorded_disrupted_holds() {
    // Issue 22, seed 0x381: the peers of this node's zone that lost the API server long before it
    // also lost their peer links, so they are silent, and a silent peer counts as ready: the count
    // says one of six cut off, a healthy zone. The API server records four of six not Ready.
    let mut r = zone(6, 0);
    r.heard = vec![silent(), silent(), silent(), up(0), up(1)];
    let v = decide(&r, &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    r.heard[3] = recording(record(4, 6, false), true);
    let v = decide(&r, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    assert!(v.reason().contains("4 of the 6 node(s)"), "{}", v.reason());
    // The same record with this node's Node tainted: evicted.
    r.heard[3] = recording(record(4, 6, true), true);
    assert!(decide(&r, &policy(), true).is_enforce());
}

/// A zone recorded with none of its `size` nodes Ready, this node untainted, and the two facts of
/// master disruption as given (`ZoneRecord::every_zone_down`).
fn all_down(size: usize, only_zone: bool, asker_last: bool) -> Option<ZoneRecord> {
    Some(ZoneRecord {
        not_ready: size,
        size,
        only_zone,
        asker_last,
        ..ZoneRecord::default()
    })
}

#[test]
fn a_zone_recorded_with_every_zone_down_since_this_node_was_judged_holds() {
    // Issue 22, seed 0x8aa: the only zone, here of three nodes, all cut off; the controller
    // judged this node last, and every zone was down from that pass. The other two are back and
    // reach the API server, but their kubelets have not posted Ready yet. Counted: a healthy
    // zone, enforce.
    let round = |first: (String, Heard)| {
        let mut r = zone(3, 0);
        r.other_zones = 0;
        r.heard = vec![first, up(1)];
        r
    };
    assert!(decide(&round(up(0)), &policy(), true).is_enforce());
    // (the reader's record, whether it reaches the API server) → verdict
    let table = [
        (all_down(3, true, true), true, "hold"),
        // A Node outside the zone (or no list of them): not known to be every zone.
        (all_down(3, false, true), true, "enforce"),
        // The other node left Ready after this one: this node may have been tainted while that
        // one still counted Ready, and the taint removed when every zone went down, its pods
        // tolerating less deleted all the same. With this node's Node read written Unknown, a
        // hold that still stops those (`Fixes::zone_down_due`, below).
        (all_down(3, true, false), true, "enforce"),
        // This node tainted in the same read.
        (
            Some(ZoneRecord {
                tainted: true,
                ..all_down(3, true, true).expect("a record")
            }),
            true,
            "enforce",
        ),
        // A node is Ready again: not every zone down (the facts are only given without one).
        (
            Some(ZoneRecord {
                not_ready: 2,
                ..all_down(3, true, true).expect("a record")
            }),
            true,
            "enforce",
        ),
        // A record from a peer that says it does not reach the API server is no record (two of
        // three cut off: still a healthy zone).
        (all_down(3, true, true), false, "enforce"),
    ];
    assert_recorded(&table, round, &["every zone is down", "3 of the 3 node(s)"]);
    let held = || round(recording(all_down(3, true, true), true));
    // A node seen tainted was judged already: no record holds it.
    assert!(decide(&held().tainted(true), &policy(), true).is_enforce());
    // While no controller-manager leads, with the Unknown this node saw read again: the next
    // leader's first pass may taint it before it counts every zone down.
    let unknown = UNIX_EPOCH + Duration::from_secs(1_000);
    let mut r = held().leaderless_unknown(Some(unknown));
    if let (_, Heard::Report(reader)) = &mut r.heard[0] {
        reader.node_read = Some(NodeRead {
            tainted: false,
            unknown_since: Some(unknown),
            ..NodeRead::default()
        });
    }
    assert!(decide(&r, &policy(), true).is_enforce());
    assert!(decide(&held(), &policy(), true).is_hold());
    assert!(!decide(&held(), &policy(), true).stops_due());
    // With the rule switched off, the record changes nothing.
    let old = policy_without(|f| f.master_recorded = false);
    assert!(decide(&held(), &old, true).is_enforce());
    // Another node left Ready after this one (issue 22, seed 0x1b9c): a hold whose plan still
    // stops each pod that may have been deleted while a taint stood before every zone went down.
    let judged = |mut r: Round| {
        if let (_, Heard::Report(reader)) = &mut r.heard[0] {
            reader.node_read = Some(NodeRead {
                tainted: false,
                unknown_since: Some(UNIX_EPOCH + Duration::from_secs(1_000)),
                ..NodeRead::default()
            });
        }
        r
    };
    let after = || judged(round(recording(all_down(3, true, false), true)));
    let v = decide(&after(), &policy(), true);
    assert!(v.is_hold() && v.stops_due(), "{}", v.reason());
    assert!(
        v.reason().contains("may have been tainted before"),
        "{}",
        v.reason()
    );
    // Planned as a hold that stops what was due by the round's send time, with its read.
    let s = Duration::from_secs;
    let planned = |v: &Verdict| {
        planning(
            Some(v),
            (Some(s(1060)), Some(s(1020))),
            (Some(s(1055)), Some(9)),
            false,
            s(10),
        )
    };
    let due = nodewarden::core::fence_plan::StopDue {
        by: s(1060),
        untainted: Some(s(1055)),
        tolerated_from: Some(9),
    };
    assert!(
        matches!(planned(&v), QuorumVerdict::Hold { stop_due: Some(d), .. } if d == due),
        "{:?}",
        planned(&v)
    );
    assert!(matches!(
        planned(&decide(&held(), &policy(), true)),
        QuorumVerdict::Hold { stop_due: None, .. }
    ));
    // Never judged (no Unknown read on its Node, as where no kubelet posts): never tainted
    // either, and the record holds nothing new.
    let unjudged = round(recording(all_down(3, true, false), true));
    assert!(decide(&unjudged, &policy(), true).is_enforce());
    // Only what would enforce: a node seen tainted enforces as before, and so does every
    // verdict with the rule switched off.
    assert!(decide(&after().tainted(true), &policy(), true).is_enforce());
    let before = policy_without(|f| f.zone_down_due = false);
    assert!(decide(&after(), &before, true).is_enforce());
    // How long a taint could have stood before every zone went down (forty-ninth session, seed
    // 0x2531): the seconds from this node's Unknown write to the last one, plus two. None from a
    // record without them, with the rule off, or for a node that holds whole.
    let timed = |asker_last: bool, s: Option<u64>| {
        let record = all_down(3, true, asker_last).map(|z| ZoneRecord {
            last_down_after: s,
            ..z
        });
        judged(round(recording(record, true)))
    };
    assert_eq!(
        zone_down_tolerated(&timed(false, Some(5)), &policy()),
        Some(7)
    );
    assert!(decide(&timed(false, Some(5)), &policy(), true).stops_due());
    assert_eq!(zone_down_tolerated(&timed(false, None), &policy()), None);
    let unwindowed = policy_without(|f| f.zone_down_window = false);
    assert_eq!(
        zone_down_tolerated(&timed(false, Some(5)), &unwindowed),
        None
    );
    assert_eq!(zone_down_tolerated(&timed(true, Some(5)), &policy()), None);
    // A round that holds on its counts holds as it did, whole: two of a zone of five went
    // silent before this node.
    let mut held_anyway = zone(5, 2);
    held_anyway.other_zones = 0;
    held_anyway.heard.swap(0, 2);
    held_anyway.heard[0] = recording(all_down(5, true, false), true);
    let v = decide(&judged(held_anyway), &policy(), true);
    assert!(
        v.is_hold() && !v.stops_due(),
        "{}: {}",
        v.word(),
        v.reason()
    );
}

#[test]
fn two_peers_read_the_zone_the_likeliest_to_reach_the_api_server_and_none_it_cannot_list() {
    let p = |n: &str, z: &str| Peer {
        node: n.into(),
        address: "10.0.0.1:9843".parse().expect("address"),
        zone: z.into(),
    };
    let asked = [p("a1", "a"), p("a2", "a"), p("b1", "b"), p("b2", "b")];
    let none = Unable::default();
    // Other zones first, as for the Lease: two flags only.
    let flags = zone_readers(&asked, "a", false, &none, ZONE_READERS);
    assert_eq!(flags, [false, false, true, true]);
    // A peer whose latest answer was not "reachable" comes after every other.
    let mut unable = Unable::default();
    nodewarden::core::quorum::note_unable(&mut unable, &[(asked[2].clone(), Heard::Silent)], true);
    assert_eq!(
        zone_readers(&asked, "a", false, &unable, ZONE_READERS),
        [true, false, false, true]
    );
    assert_eq!(
        zone_readers(&asked, "a", true, &none, ZONE_READERS),
        [false; 4]
    );
    // One, in the simulator's runs that revert `Fixes::two_zone_readers`: the likeliest.
    assert_eq!(
        zone_readers(&asked, "a", false, &unable, 1),
        [false, false, false, true]
    );
    // Asked only for a zone the list does not show larger than a reader lists, 100 (this node
    // and its peers of the zone), with the rule on; peers of other zones do not count. Larger
    // than 50 only for a node read queued for the taint (`Fixes::queue_read_settles`): such a
    // zone's record holds nothing.
    let fixes = nodewarden::core::quorum::Fixes::ALL;
    let listed = |own: usize| -> Vec<Peer> {
        let mut l: Vec<Peer> = (0..own).map(|i| p(&format!("a{i}"), "a")).collect();
        l.extend((0..10).map(|i| p(&format!("b{i}"), "b")));
        l
    };
    assert!(asks_zone_record(&fixes, &listed(49), "a"));
    assert!(asks_zone_record(&fixes, &listed(99), "a"));
    assert!(!asks_zone_record(&fixes, &listed(100), "a"));
    let unqueued = nodewarden::core::quorum::Fixes {
        queue_read_settles: false,
        ..fixes
    };
    assert!(asks_zone_record(&unqueued, &listed(49), "a"));
    assert!(!asks_zone_record(&unqueued, &listed(50), "a"));
    let off = nodewarden::core::quorum::Fixes {
        zone_recorded: false,
        ..fixes
    };
    assert!(!asks_zone_record(&off, &listed(4), "a"));
}

#[test]
fn a_zone_is_recorded_from_the_nodes_of_its_key_that_count_in_disruption_checks() {
    let a = labels(None, Some("a"), false);
    let a_excluded = labels(None, Some("a"), true);
    // GA label "a" but the deprecated one says "b": upstream's key is "b".
    let mut a_but_b = labels(None, Some("a"), false);
    a_but_b.insert(zone::BETA_ZONE_LABEL.to_string(), "b".to_string());
    let other = labels(None, Some("c"), false);
    let at = |s: u64| Some(UNIX_EPOCH + Duration::from_secs(s));
    let listed = |name, labels, ready, tainted| {
        zone::Listed::of(name, Some(labels), (ready, at(100)), tainted)
    };
    let nodes = vec![
        listed("me", &a, false, false),
        listed("n2", &a, false, true),
        listed("n3", &a, true, false),
        listed("n4", &a_excluded, false, false),
        listed("n5", &a_but_b, false, false),
        listed("n6", &other, false, false),
    ];
    let r = zone::record(&nodes, "me", "a", true).expect("a record");
    // me, n2 and n3 count (n4 excluded, n5 and n6 in other zones); me and n2 not Ready. With n3
    // Ready, neither fact of a zone with no node Ready is given.
    assert_eq!(
        r,
        ZoneRecord {
            not_ready: 2,
            size: 3,
            ..ZoneRecord::default()
        }
    );
    // A Ready node keeps no time.
    assert_eq!(nodes[2].down_since, None);
    // n2's own read says it is tainted.
    assert!(zone::record(&nodes, "n2", "a", true).expect("n2").tainted);
    // An excluded asker is still found, and left out of the counts.
    assert_eq!(
        zone::record(&nodes, "n4", "a", true).map(|r| r.size),
        Some(3)
    );
    // An asker counted and Ready is said to be; one not Ready, or excluded, is not.
    let ready = |asker| zone::record(&nodes, asker, "a", true).map(|r| r.asker_ready);
    assert_eq!(ready("n3"), Some(true));
    assert_eq!(ready("me"), Some(false));
    let mut ready_excluded = nodes.clone();
    ready_excluded[3] = zone::Listed::of("n4", Some(&a_excluded), (true, at(100)), false);
    assert_eq!(
        zone::record(&ready_excluded, "n4", "a", true).map(|r| r.asker_ready),
        Some(false)
    );
    // An asker not listed, or listed in another zone, gets no record.
    assert_eq!(zone::record(&nodes, "n9", "a", true), None);
    assert_eq!(zone::record(&nodes, "n5", "a", true), None);
    assert!(zone::record(&nodes, "n5", "b", true).is_some());
    // Zone a with n3 gone from Ready at 90, before me and n2 (100), and n4 (excluded) at 120:
    // none counted is Ready, and no counted node left Ready after me or n2.
    let mut down = nodes.clone();
    down[2] = zone::Listed::of("n3", Some(&a), (false, at(90)), false);
    down[3] = zone::Listed::of("n4", Some(&a_excluded), (false, at(120)), false);
    let facts = |nodes: &[zone::Listed], asker, whole| {
        let r = zone::record(nodes, asker, "a", whole).expect("a record");
        assert_eq!((r.not_ready, r.size), (3, 3));
        (r.only_zone, r.asker_last, r.every_zone_down())
    };
    // Other zones are listed (n5, n6): not the only zone, whatever `whole` says.
    assert_eq!(facts(&down, "me", true), (false, true, false));
    assert_eq!(facts(&down, "n3", true), (false, false, false));
    // Zone a alone, and listed whole: master disruption since me was judged, not since n3 was.
    let alone: Vec<zone::Listed> = down.iter().take(4).cloned().collect();
    assert_eq!(facts(&alone, "me", true), (true, true, true));
    assert_eq!(facts(&alone, "n2", true), (true, true, true));
    assert_eq!(facts(&alone, "n3", true), (true, false, false));
    // An excluded asker judged last too.
    assert_eq!(facts(&alone, "n4", true), (true, true, true));
    // Not known to be the whole cluster (a list outside the zone found a Node, or failed).
    assert_eq!(facts(&alone, "me", false), (false, true, false));
    // A node with no time for its Ready (no condition at all): no asker is known to be last.
    let mut untimed = alone.clone();
    untimed[2] = zone::Listed::of("n3", Some(&a), (false, None), false);
    assert_eq!(facts(&untimed, "me", true), (true, false, false));
    // n2 left Ready a second after me: me is not last.
    let mut later = alone.clone();
    later[1] = zone::Listed::of("n2", Some(&a), (false, at(101)), true);
    assert_eq!(facts(&later, "me", true), (true, false, false));
    assert_eq!(facts(&later, "n2", true), (true, true, true));
    // Every Ready written Unknown by the controller (forty-ninth session): the seconds from the
    // asker's write to the last one, the excluded n4 (120) left out; none while a Node's Ready
    // is not Unknown, or outside the only zone.
    let unknown = |nodes: &[zone::Listed]| -> Vec<zone::Listed> {
        nodes
            .iter()
            .map(|n| zone::Listed {
                unknown: true,
                ..n.clone()
            })
            .collect()
    };
    let after = |nodes: &[zone::Listed], asker, whole| {
        zone::record(nodes, asker, "a", whole).and_then(|r| r.last_down_after)
    };
    let written = unknown(&later);
    assert_eq!(after(&written, "me", true), Some(1));
    assert_eq!(after(&written, "n2", true), Some(0));
    assert_eq!(after(&written, "n3", true), Some(11));
    assert_eq!(
        zone::record(&written, "n3", "a", true).and_then(|r| r.tolerated_from()),
        Some(13)
    );
    assert_eq!(after(&written, "me", false), None);
    assert_eq!(after(&later, "me", true), None);
    let mut one_false = written.clone();
    one_false[2].unknown = false;
    assert_eq!(after(&one_false, "me", true), None);
    assert_eq!(after(&unknown(&untimed), "me", true), None);
    // The outside selector: every Node without the zone's label value; none for no zone.
    assert_eq!(
        zone::outside_selector("r1/a").as_deref(),
        Some("topology.kubernetes.io/zone!=a")
    );
    assert_eq!(zone::outside_selector("r1/"), None);
    // The selector narrows by the GA zone label; an unlabelled zone is listed whole.
    assert_eq!(
        zone::record_selector("a").as_deref(),
        Some("topology.kubernetes.io/zone=a")
    );
    assert_eq!(
        zone::record_selector("r1/a").as_deref(),
        Some("topology.kubernetes.io/zone=a")
    );
    assert_eq!(zone::record_selector(""), None);
    assert_eq!(zone::record_selector("r1/"), None);
}

// ---- a node read queued for the taint ----

/// A zone of five, this node cut off 5 s ago and its four peers reaching the API server (no other
/// zone): a healthy zone evicts it, once the answers settle. The first peer read this node's Node
/// as `read`, and its zone as `rec`.
fn read_queued(read: Option<NodeRead>, rec: Option<ZoneRecord>) -> Round {
    let mut r = zone(5, 0);
    r.other_zones = 0;
    r.own_contact_age = Duration::from_secs(5);
    r.own_silence_age = r.own_contact_age;
    if let (_, Heard::Report(first)) = &mut r.heard[0] {
        first.node_read = read;
        first.zone_recorded = rec;
    }
    r
}

#[test]
fn a_node_read_queued_for_the_taint_in_a_zone_recorded_as_tainting_enforces_at_once() {
    let verdict = |round: &Round, policy: &QuorumPolicy| decide_or_ask(round, policy, true).0;
    let written = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let queued = Some(NodeRead {
        unknown_since: Some(written),
        ..NodeRead::default()
    });
    let ready = Some(NodeRead::default());
    let word = |r: &Round, p: &QuorumPolicy| verdict(r, p).word();
    // Unread, or read Ready: the answers settle first.
    assert_eq!(word(&read_queued(None, None), &policy()), "pending");
    assert_eq!(
        word(&read_queued(ready, record(1, 5, false)), &policy()),
        "pending"
    );
    // Read with Ready=Unknown and no taint: queued, and its zone recorded normal.
    for rec in [record(0, 5, false), record(2, 5, false)] {
        let v = verdict(&read_queued(queued, rec), &policy());
        assert!(v.is_enforce(), "{rec:?}: {}", v.reason());
        assert!(
            v.reason().contains("healthy zone")
                && v.reason()
                    .contains("it is queued for the taint, and its zone is recorded normal"),
            "{}",
            v.reason()
        );
    }
    // No record read (the reader failed, or a zone too large to be read), or one of a zone fully
    // disrupted (every zone may be, and then nothing is tainted): the answers settle first.
    assert_eq!(word(&read_queued(queued, None), &policy()), "pending");
    assert_eq!(
        word(&read_queued(queued, record(5, 5, false)), &policy()),
        "pending"
    );
    // Recorded partially disrupted (a zone of five): the controller taints nothing there.
    let partial = read_queued(queued, record(3, 5, false));
    assert_eq!(word(&partial, &policy()), "hold");
    // Unless no controller-manager leads, and this node's own view showed the same Unknown: the
    // next leader's first pass may take it first.
    let leaderless = verdict(
        &partial.clone().leaderless_unknown(Some(written)),
        &policy(),
    );
    assert!(
        leaderless.is_enforce()
            && leaderless.reason().contains(
                "no controller-manager leads, and the next one's first pass may take it first"
            ),
        "{}",
        leaderless.reason()
    );
    // Nor does a record read then matter.
    assert_eq!(
        word(
            &read_queued(queued, None).leaderless_unknown(Some(written)),
            &policy()
        ),
        "enforce"
    );
    let later = written + Duration::from_secs(30);
    assert_eq!(
        word(&partial.clone().leaderless_unknown(Some(later)), &policy()),
        "hold"
    );
    // A read from a peer that says it is cut off is no read.
    let mut unsure = read_queued(queued, record(1, 5, false));
    if let (_, Heard::Report(first)) = &mut unsure.heard[0] {
        first.reachable = false;
        first.last_contact_age = Some(Duration::from_secs(1));
    }
    assert_eq!(word(&unsure, &policy()), "pending");
    // Each rule switched off.
    let before = policy_without(|f| f.queue_read_settles = false);
    assert_eq!(
        word(&read_queued(queued, record(1, 5, false)), &before),
        "pending"
    );
    let before = policy_without(|f| f.leaderless_first = false);
    assert_eq!(
        word(&partial.leaderless_unknown(Some(written)), &before),
        "hold"
    );
}

/// A Node read with its kubelet's Ready=False and neither taint is queued for the not-ready taint
/// as one read with Ready=Unknown is for the unreachable one (docs/fence.md §5, *A node read
/// queued for the taint*): in a zone recorded normal a pending enforce settles at once.
#[test]
fn a_node_read_with_its_kubelets_ready_false_and_no_taint_is_queued_for_the_taint() {
    let word = |r: &Round, p: &QuorumPolicy| decide_or_ask(r, p, true).0.word();
    let posted = Some(NodeRead {
        ready_false: true,
        ..NodeRead::default()
    });
    let v = decide_or_ask(&read_queued(posted, record(1, 5, false)), &policy(), true).0;
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(
        v.reason().contains(
            "with its kubelet's Ready=False and without node.kubernetes.io/not-ready: it is queued for the taint, and its zone is recorded normal"
        ),
        "{}",
        v.reason()
    );
    // Recorded partially disrupted: held; no record read: the answers settle first.
    assert_eq!(
        word(&read_queued(posted, record(3, 5, false)), &policy()),
        "hold"
    );
    assert_eq!(word(&read_queued(posted, None), &policy()), "pending");
    // Read tainted already: a node seen tainted, settled by that read's own rule.
    let tainted = Some(NodeRead {
        tainted: true,
        ready_false: true,
        ..NodeRead::default()
    });
    let v = decide_or_ask(&read_queued(tainted, record(1, 5, false)), &policy(), true).0;
    assert!(
        v.is_enforce() && !v.reason().contains("it is queued for the taint"),
        "{}",
        v.reason()
    );
    // The rule switched off: the answers settle first.
    let before = policy_without(|f| f.ready_false_read = false);
    assert_eq!(
        word(&read_queued(posted, record(1, 5, false)), &before),
        "pending"
    );
}

/// What the peers' reads of the controller-manager's leader Lease prove (`LeaderReads`): the
/// round's sending less each peer's age, the latest over every round and never moved back; a
/// read pending counts only from a peer that says it reaches the API server, and only for the
/// latest round.
#[test]
fn a_peers_leader_proof_counts_from_the_rounds_sending_less_its_age() {
    use nodewarden::core::quorum::{LeaderReads, PeerLeader};
    let with =
        |reachable: bool, age_ms: Option<u64>, pending: bool| match report("p", reachable, Some(1))
        {
            Heard::Report(r) => Heard::Report(PeerReport {
                leader: PeerLeader {
                    timers_from_age: age_ms.map(Duration::from_millis),
                    pending,
                    leaderless: false,
                },
                ..r
            }),
            silent => silent,
        };
    let mut reads = LeaderReads::default();
    let proven = [
        with(true, Some(3_000), false),
        with(true, Some(5_000), false),
        Heard::Silent,
    ];
    assert!(reads.note(Duration::from_secs(100), &proven));
    assert_eq!(reads.timers_from, Some(Duration::from_secs(97)));
    assert!(!reads.pending);
    // An older instant proven later moves nothing; a peer cut off is not waited for.
    let older = [with(true, Some(20_000), false), with(false, None, true)];
    assert!(!reads.note(Duration::from_secs(110), &older));
    assert_eq!(reads.timers_from, Some(Duration::from_secs(97)));
    assert!(reads.note(Duration::from_secs(111), &[with(true, None, true)]));
    assert!(reads.pending);
    assert!(reads.note(Duration::from_secs(112), &[with(true, Some(1_000), false)]));
    assert_eq!(reads.timers_from, Some(Duration::from_secs(111)));
    assert!(!reads.pending);
    // The fence counts from the later of its own bound and its peers'.
    let s = Duration::from_secs;
    assert_eq!(reads.bound(None), Some(s(111)));
    assert_eq!(reads.bound(Some(s(100))), Some(s(111)));
    assert_eq!(reads.bound(Some(s(120))), Some(s(120)));
    assert_eq!(LeaderReads::default().bound(Some(s(5))), Some(s(5)));
    // What a peer answers of its own reads: the proven instant's age, and a pending read and
    // a lead found lapsed only while it says it reaches the API server.
    let answered = |reachable| PeerLeader::answered(Some(s(90)), (true, true), s(100), reachable);
    assert_eq!(answered(true).timers_from_age, Some(s(10)));
    assert!(answered(true).pending && answered(true).leaderless);
    assert!(!answered(false).pending && !answered(false).leaderless);
    assert_eq!(
        PeerLeader::answered(None, (false, false), s(100), true),
        PeerLeader::default()
    );
    // The steps wait on a pending read only after a hold, and at most two seconds from the first
    // round in a row that says so.
    let pending = LeaderReads {
        timers_from: None,
        pending: true,
    };
    let mut since = None;
    assert_eq!(pending.read_awaited(false, &mut since, s(50)), None);
    assert_eq!(since, None);
    assert_eq!(pending.read_awaited(true, &mut since, s(50)), Some(s(52)));
    let later = Duration::from_millis(51_900);
    assert_eq!(pending.read_awaited(true, &mut since, later), Some(s(52)));
    assert_eq!(pending.read_awaited(true, &mut since, s(52)), None);
    let read = LeaderReads {
        pending: false,
        ..pending
    };
    assert_eq!(read.read_awaited(true, &mut since, s(53)), None);
    assert_eq!(since, None);
    assert_eq!(pending.read_awaited(true, &mut since, s(60)), Some(s(62)));
}

/// A cut-off peer whose own kubelet's last renewal, as its readers read it, came more than the
/// monitor period (5 s) before this node's, as its own readers read it, was judged first
/// (`Fixes::peer_kubelet_ordered`, `PeerReport::kubelet_age`; forty-sixth session, seed 0xe0e):
/// the contacts, seconds apart, leave the order to the kubelets' renewals.
#[test]
fn a_peer_whose_own_kubelet_renewed_first_counts_as_judged_first() {
    let s = Duration::from_secs;
    let peer = |name: &str, kubelet: Option<u64>| match report(name, false, Some(21)) {
        Heard::Report(r) => Heard::Report(PeerReport {
            kubelet_age: kubelet.map(s),
            ..r
        }),
        silent => silent,
    };
    // A zone of five: three peers cut off, their contacts a second older than ours (within the
    // 5 s tie); one reaches the API server. Our kubelet last renewed 24 s ago.
    let round = |kubelet: u64, fifth: (String, Heard)| {
        let mut r = zone(5, 0);
        r.heard = vec![
            (ZONE.into(), peer("p1", Some(kubelet))),
            (ZONE.into(), peer("p2", Some(kubelet))),
            (ZONE.into(), peer("p3", Some(kubelet))),
            fifth,
        ];
        r.kubelet_renewed(Some(s(24)))
    };
    // The peers' kubelets renewed 30 s ago, 6 s before ours: judged first; 4 of 5 when the
    // controller judged this node, a partial disruption: hold.
    let v = decide(&round(30, up(0)), &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    assert!(v.reason().contains("4 of them before"), "{}", v.reason());
    // 29 s ago, 5 s before ours: within the monitor period, either may have come first.
    let v = decide(&round(29, up(0)), &policy(), true);
    assert!(v.is_enforce() && v.in_doubt(), "{}", v.reason());
    // The fix switched off: the renewals change nothing.
    let old = policy_without(|f| f.peer_kubelet_ordered = false);
    assert!(decide(&round(30, up(0)), &old, true).is_enforce());
    // The fifth silent, and no node of the zone reaching the API server (a peer of another zone
    // does): it may be cut off from everything, and the zone fully disrupted. The order would
    // rest on its silence: not used.
    let elsewhere = ("zone-b".to_string(), report("b1", true, Some(1)));
    let mut r = round(30, silent());
    r.heard.push(elsewhere.clone());
    let v = decide(&r, &policy(), true);
    assert!(v.is_enforce() && v.in_doubt(), "{}", v.reason());
    // With a node of the zone that reaches the API server beside it, the zone is not fully
    // disrupted whatever the silent one is.
    let mut r = zone(6, 0);
    r.heard = round(30, silent()).heard;
    r.heard.extend([up(1), elsewhere]);
    let r = r.kubelet_renewed(Some(s(24)));
    let v = decide(&r, &policy(), true);
    assert!(v.is_hold(), "{}", v.reason());
    // Our own kubelet's renewal not read: the peers' renewals order nothing.
    let mut r = round(30, up(0));
    r.own_kubelet_age = None;
    assert!(decide(&r, &policy(), true).is_enforce());
}

/// What a node answers of its own kubelet's renewal (`quorum::kubelet_answered`): the read's age
/// only when the read came after its last contact.
#[test]
fn a_node_answers_its_kubelets_renewal_only_as_read_since_its_last_contact() {
    use nodewarden::core::clock::Moment;
    use nodewarden::core::quorum::kubelet_answered;
    let s = Duration::from_secs;
    let started = UNIX_EPOCH + s(1_000_000);
    let now = Moment {
        mono: s(100),
        wall: started + s(100),
    };
    let stamped = started + s(70);
    // Read at 80 s (monotonic), after the contact at 75 s: 30 s old.
    assert_eq!(
        kubelet_answered(Some((stamped, s(80))), Some(s(75)), now, started, true),
        Some(s(30))
    );
    // With no contact in this run, any read of this run counts.
    assert_eq!(
        kubelet_answered(Some((stamped, s(80))), None, now, started, true),
        Some(s(30))
    );
    // Read before the contact: of an earlier partition, and the kubelet renewed since.
    assert_eq!(
        kubelet_answered(Some((stamped, s(80))), Some(s(80)), now, started, true),
        None
    );
    // The clock did not hold, or nothing read.
    assert_eq!(
        kubelet_answered(Some((stamped, s(80))), Some(s(75)), now, started, false),
        None
    );
    assert_eq!(
        kubelet_answered::<Duration>(None, None, now, started, true),
        None
    );
}

/// A peer that reaches the API server and found no process leading the controller-manager
/// counts as this node's own such read (`Fixes::peer_leaderless`; forty-sixth session, seed
/// 0xbd5): with this node read queued for the taint (Ready=Unknown, no taint), the next leader's
/// first pass may taint it on the zone's fresh token, so its zone's partial disruption holds it
/// neither by the record nor by the count.
#[test]
fn a_peer_that_reads_no_leader_holds_a_queued_node_by_no_partial_disruption() {
    use nodewarden::core::quorum::PeerLeader;
    let unknown = UNIX_EPOCH + Duration::from_secs(1_000_000);
    let reader = |leaderless: bool, queued: bool| match report("r", true, Some(1)) {
        Heard::Report(r) => Heard::Report(PeerReport {
            leader: PeerLeader {
                leaderless,
                ..PeerLeader::default()
            },
            node_read: queued.then(|| NodeRead {
                tainted: false,
                unknown_since: Some(unknown),
                ..NodeRead::default()
            }),
            ..r
        }),
        silent => silent,
    };
    // A zone of five, three peers cut off long before this node (26 s against 20 s, past the
    // 5 s tie): 4 of 5 when the controller judged it, a partial disruption: hold.
    let round = |leaderless: bool, queued: bool| {
        let mut r = zone(5, 3);
        r.heard[3] = (ZONE.into(), reader(leaderless, queued));
        r
    };
    assert!(decide(&round(false, true), &policy(), true).is_hold());
    // The reader found no leader: enforce, a guess whose SIGTERMs wait for a read of the taint.
    let v = decide(&round(true, true), &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(v.in_doubt(), "{}", v.reason());
    assert!(
        v.reason().contains("no controller-manager leads"),
        "{}",
        v.reason()
    );
    // Not read queued (no read of the Node this round): nothing says the node waits for it.
    assert!(decide(&round(true, false), &policy(), true).is_hold());
    // The fix switched off.
    let old = policy_without(|f| f.peer_leaderless = false);
    assert!(decide(&round(true, true), &old, true).is_hold());
}

/// A partial disruption by the answers' count holds nothing while a peer that reaches the API
/// server reads the zone recorded with none of its Nodes Ready, and a node of another zone
/// reaches it (`Fixes::full_recorded`; forty-sixth session, `--not-ready`, seed 0x1304): the
/// node that answers "reachable" may have posted Ready=False, and the controller taints a fully
/// disrupted zone at the normal rate.
#[test]
fn a_zone_recorded_with_no_node_ready_is_no_partial_disruption() {
    // A zone of five, three peers cut off long before this node: 4 of 5, hold. The fifth
    // reaches the API server and reads the zone.
    let round = |read: Option<ZoneRecord>, elsewhere: bool| {
        let mut r = zone(5, 3);
        r.heard[3] = match report("u0", true, Some(1)) {
            Heard::Report(p) => (
                ZONE.into(),
                Heard::Report(PeerReport {
                    zone_recorded: read,
                    ..p
                }),
            ),
            silent => (ZONE.into(), silent),
        };
        if elsewhere {
            r.heard
                .push(("zone-b".to_string(), report("b1", true, Some(1))));
        }
        r
    };
    assert!(decide(&round(None, true), &policy(), true).is_hold());
    // Read with none of the five Ready, this node untainted: enforce.
    let v = decide(&round(record(5, 5, false), true), &policy(), true);
    assert!(v.is_enforce(), "{}", v.reason());
    assert!(
        v.reason()
            .contains("none of the zone's Nodes recorded Ready"),
        "{}",
        v.reason()
    );
    // With no other zone reaching the API server every zone may be down: the hold stands.
    assert!(decide(&round(record(5, 5, false), false), &policy(), true).is_hold());
    // One Node of the zone recorded Ready: a partial disruption, as counted.
    assert!(decide(&round(record(4, 5, false), true), &policy(), true).is_hold());
    // The fix switched off.
    let old = policy_without(|f| f.full_recorded = false);
    assert!(decide(&round(record(5, 5, false), true), &old, true).is_hold());
}
