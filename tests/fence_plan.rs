//! The fence planner (docs/fence.md) as a table of docs/semantics.md §4 edge cases: when the
//! control plane could delete each pod after losing this node, and when the pod is stopped here.

use std::time::Duration;

use nodewarden::core::fence_plan::{
    FencePod, FencePolicy, Mode, Plan, QuorumVerdict, Schedule, StopDue, plan,
};
use nodewarden::core::qos::QosClass;
use nodewarden::core::taint::{Effect, Toleration};
use proptest::prelude::*;

const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const NOT_READY: &str = "node.kubernetes.io/not-ready";
const CONTACT: Duration = Duration::from_secs(1000);

fn policy(mode: Mode) -> FencePolicy {
    FencePolicy {
        node_monitor_grace_period: Duration::from_secs(40),
        node_monitor_period: Duration::ZERO,
        safety_margin: Duration::from_secs(2),
        grace_cap: Duration::from_secs(30),
        mode,
        kubelet_lag: Duration::ZERO,
    }
}

fn pod(tolerations: Vec<Toleration>) -> FencePod {
    FencePod {
        uid: "u1".into(),
        namespace: "default".into(),
        name: "web-1".into(),
        tolerations,
        termination_grace_seconds: 10,
        owner_kind: Some("ReplicaSet".into()),
        static_or_mirror: false,
        qos: QosClass::Burstable,
        opted_out: false,
        terminal: false,
        created: None,
    }
}

fn ne(key: &str) -> Toleration {
    Toleration::exists(key, Some(Effect::NoExecute))
}

/// The eviction delay after last contact the planner chose, or None for never.
fn delay(tolerations: Vec<Toleration>) -> Option<u64> {
    let plans = plan(
        &[pod(tolerations)],
        CONTACT,
        None,
        None,
        &policy(Mode::Enforce),
        &QuorumVerdict::NotConsulted,
    );
    match &plans[0].plan {
        Plan::Stop { schedule, .. } => Some((schedule.eviction_time - CONTACT).as_secs()),
        Plan::Never { .. } => None,
        Plan::Hold { .. } => panic!("not held"),
    }
}

#[test]
fn default_300s_tolerations_mean_grace_plus_300s() {
    let t = vec![
        ne(NOT_READY).with_seconds(300),
        ne(UNREACHABLE).with_seconds(300),
    ];
    assert_eq!(delay(t), Some(40 + 300));
}

#[test]
fn first_matching_toleration_wins() {
    // The wildcard comes first: its 10 s count, not the later 600 s.
    let t = vec![
        Toleration::exists("", None).with_seconds(10),
        ne(UNREACHABLE).with_seconds(600),
    ];
    assert_eq!(delay(t), Some(40 + 10));
    let t = vec![
        ne(UNREACHABLE).with_seconds(600),
        Toleration::exists("", None).with_seconds(10),
    ];
    assert_eq!(delay(t), Some(40 + 600));
}

#[test]
fn zero_and_negative_seconds_evict_at_the_grace_period() {
    assert_eq!(delay(vec![ne(UNREACHABLE).with_seconds(0)]), Some(40));
    assert_eq!(delay(vec![ne(UNREACHABLE).with_seconds(-5)]), Some(40));
}

#[test]
fn nil_seconds_tolerate_forever() {
    assert_eq!(delay(vec![ne(UNREACHABLE)]), None);
}

#[test]
fn a_pod_without_tolerations_is_evicted_at_the_grace_period() {
    assert_eq!(delay(vec![]), Some(40));
}

#[test]
fn a_toleration_with_an_empty_effect_covers_noexecute() {
    assert_eq!(
        delay(vec![Toleration::exists(UNREACHABLE, None).with_seconds(77)]),
        Some(40 + 77)
    );
}

#[test]
fn a_noschedule_toleration_does_not_help() {
    assert_eq!(
        delay(vec![Toleration::exists(
            UNREACHABLE,
            Some(Effect::NoSchedule)
        )]),
        Some(40)
    );
}

#[test]
fn an_equal_toleration_with_a_value_does_not_tolerate_the_valueless_taint() {
    // docs/semantics.md §9 pitfall: such a toleration suppresses the 300 s default but tolerates
    // nothing.
    let t = vec![Toleration::equal(UNREACHABLE, "x", Some(Effect::NoExecute)).with_seconds(600)];
    assert_eq!(delay(t), Some(40));
    let t = vec![Toleration::equal(NOT_READY, "x", Some(Effect::NoExecute)).with_seconds(600)];
    assert_eq!(
        delay(t),
        Some(40),
        "a not-ready toleration is irrelevant to unreachable"
    );
}

#[test]
fn several_matching_tolerations_only_the_first_counts() {
    let t = vec![
        ne(UNREACHABLE).with_seconds(120),
        Toleration::exists(UNREACHABLE, None).with_seconds(5),
    ];
    assert_eq!(delay(t), Some(40 + 120));
}

#[test]
fn daemonset_tolerations_are_never_fenced() {
    // docs/semantics.md §10: the DaemonSet controller adds forever tolerations; the owner alone
    // suffices too.
    let mut p = pod(vec![ne(NOT_READY), ne(UNREACHABLE)]);
    p.owner_kind = Some("DaemonSet".into());
    let plans = plan(
        std::slice::from_ref(&p),
        CONTACT,
        None,
        None,
        &policy(Mode::Enforce),
        &QuorumVerdict::NotConsulted,
    );
    assert!(matches!(&plans[0].plan, Plan::Never { reason } if reason.contains("DaemonSet")));
    p.tolerations.clear();
    let plans = plan(
        &[p],
        CONTACT,
        None,
        None,
        &policy(Mode::Enforce),
        &QuorumVerdict::NotConsulted,
    );
    assert!(matches!(&plans[0].plan, Plan::Never { .. }));
}

#[test]
fn static_mirror_opted_out_and_finished_pods_are_never_fenced() {
    for (edit, word) in [
        (
            (|p: &mut FencePod| p.static_or_mirror = true) as fn(&mut FencePod),
            "static",
        ),
        (|p: &mut FencePod| p.opted_out = true, "opted out"),
        (|p: &mut FencePod| p.terminal = true, "finished"),
    ] {
        let mut p = pod(vec![]);
        edit(&mut p);
        let plans = plan(
            &[p],
            CONTACT,
            None,
            None,
            &policy(Mode::Enforce),
            &QuorumVerdict::NotConsulted,
        );
        match &plans[0].plan {
            Plan::Never { reason } => assert!(reason.contains(word), "{reason}"),
            other => panic!("{word}: {other:?}"),
        }
    }
}

#[test]
fn the_pod_is_stopped_by_its_eviction_time() {
    let mut p = pod(vec![ne(UNREACHABLE).with_seconds(60)]);
    p.termination_grace_seconds = 20;
    let plans = plan(
        &[p],
        CONTACT,
        None,
        None,
        &policy(Mode::Enforce),
        &QuorumVerdict::NotConsulted,
    );
    let Plan::Stop {
        schedule,
        dry_run,
        reason,
    } = &plans[0].plan
    else {
        panic!("{:?}", plans[0].plan)
    };
    assert!(!dry_run);
    assert_eq!(
        *schedule,
        Schedule {
            eviction_time: CONTACT + Duration::from_secs(100),
            kill_at: CONTACT + Duration::from_secs(98),
            sigterm_at: CONTACT + Duration::from_secs(78),
        }
    );
    assert!(reason.contains("60s"), "{reason}");
}

#[test]
fn the_grace_is_capped() {
    let mut p = pod(vec![ne(UNREACHABLE).with_seconds(600)]);
    p.termination_grace_seconds = 3600;
    let plans = plan(
        &[p],
        CONTACT,
        None,
        None,
        &policy(Mode::Enforce),
        &QuorumVerdict::NotConsulted,
    );
    let Plan::Stop { schedule, .. } = &plans[0].plan else {
        panic!()
    };
    assert_eq!(
        schedule.kill_at - schedule.sigterm_at,
        Duration::from_secs(30)
    );
}

#[test]
fn dry_run_plans_the_same_schedule_but_marks_it() {
    let p = pod(vec![ne(UNREACHABLE).with_seconds(60)]);
    let enforce = plan(
        std::slice::from_ref(&p),
        CONTACT,
        None,
        None,
        &policy(Mode::Enforce),
        &QuorumVerdict::NotConsulted,
    );
    let dry = plan(
        &[p],
        CONTACT,
        None,
        None,
        &policy(Mode::DryRun),
        &QuorumVerdict::NotConsulted,
    );
    match (&enforce[0].plan, &dry[0].plan) {
        (
            Plan::Stop { schedule: a, .. },
            Plan::Stop {
                schedule: b,
                dry_run: true,
                ..
            },
        ) => assert_eq!(a, b),
        other => panic!("{other:?}"),
    }
}

#[test]
fn off_plans_nothing_and_a_hold_verdict_holds() {
    let p = pod(vec![]);
    let off = plan(
        std::slice::from_ref(&p),
        CONTACT,
        None,
        None,
        &policy(Mode::Off),
        &QuorumVerdict::NotConsulted,
    );
    assert!(matches!(off[0].plan, Plan::Never { .. }));
    let held = plan(
        &[p],
        CONTACT,
        None,
        None,
        &policy(Mode::Enforce),
        &QuorumVerdict::Hold {
            reason: "zone partially disrupted".into(),
            stop_due: None,
        },
    );
    assert!(
        matches!(&held[0].plan, Plan::Hold { reason, .. } if reason.contains("zone partially disrupted"))
    );
}

/// A hold with `stop_due` (every zone down, this node maybe tainted before it,
/// `core::quorum::Verdict::stops_due`) still stops each pod that an enforce with no hold, and the
/// same read without the taint, makes due by then: one may have been deleted while a taint
/// stood. The others are held.
#[test]
fn a_hold_that_stops_what_was_due_stops_only_that() {
    let tolerating = |uid: &str, s: i64| FencePod {
        uid: uid.into(),
        ..pod(vec![ne(UNREACHABLE).with_seconds(s)])
    };
    let pods = [tolerating("short", 5), tolerating("long", 60)];
    let windowed = |by: u64, untainted: Option<u64>, tolerated_from| QuorumVerdict::Hold {
        reason: "every zone down".into(),
        stop_due: Some(StopDue {
            by: Duration::from_secs(by),
            untainted: untainted.map(Duration::from_secs),
            tolerated_from,
        }),
    };
    let hold = |by: u64, untainted: Option<u64>| windowed(by, untainted, None);
    let plans = |q: &QuorumVerdict| {
        plan(&pods, CONTACT, None, None, &policy(Mode::Enforce), q)
            .into_iter()
            .map(|p| match p.plan {
                Plan::Stop { schedule, .. } => Some(schedule.eviction_time.as_secs()),
                Plan::Hold { .. } => None,
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>()
    };
    // Counted from the contact (1000 + 40 s): "short" due at 1045, "long" at 1100.
    assert_eq!(plans(&hold(1050, None)), [Some(1045), None]);
    assert_eq!(plans(&hold(1100, None)), [Some(1045), Some(1100)]);
    assert_eq!(plans(&hold(1044, None)), [None, None]);
    // A read without the taint at 1060 counts from 1050 (less the slack), as an enforce would.
    assert_eq!(plans(&hold(1050, Some(1060))), [None, None]);
    assert_eq!(plans(&hold(1055, Some(1060))), [Some(1055), None]);
    // A pod that tolerates the taint for as long as it could have stood, or longer, is held
    // (`StopDue::tolerated_from`; forty-ninth session): "short" (5 s) is stopped with a window
    // of 6 s, not of 5; "long" (60 s) only with one of 61.
    assert_eq!(plans(&windowed(1100, None, Some(6))), [Some(1045), None]);
    assert_eq!(plans(&windowed(1100, None, Some(5))), [None, None]);
    assert_eq!(
        plans(&windowed(1100, None, Some(61))),
        [Some(1045), Some(1100)]
    );
    // Without `stop_due`, a hold stops nothing.
    let whole = QuorumVerdict::Hold {
        reason: "every zone down".into(),
        stop_due: None,
    };
    assert_eq!(plans(&whole), [None, None]);
}

proptest! {
    /// A longer tolerationSeconds never makes the stop earlier, and the stop is never after the
    /// eviction time.
    #[test]
    fn stop_never_earlier_with_more_toleration_and_never_late(
        a in -10i64..5000, b in -10i64..5000, grace in 0i64..100_000,
    ) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let run = |s: i64| {
            let mut p = pod(vec![ne(UNREACHABLE).with_seconds(s)]);
            p.termination_grace_seconds = grace;
            match plan(&[p], CONTACT, None, None, &policy(Mode::Enforce), &QuorumVerdict::NotConsulted)[0].plan.clone() {
                Plan::Stop { schedule, .. } => schedule,
                other => panic!("{other:?}"),
            }
        };
        let (s_lo, s_hi) = (run(lo), run(hi));
        prop_assert!(s_lo.sigterm_at <= s_hi.sigterm_at);
        prop_assert!(s_lo.eviction_time <= s_hi.eviction_time);
        prop_assert!(s_hi.sigterm_at <= s_hi.kill_at && s_hi.kill_at <= s_hi.eviction_time);
    }
}

#[test]
fn eviction_counts_from_when_the_kubelet_may_last_have_renewed_the_node_lease() {
    // The controller judges the node by the kubelet's Lease (docs/semantics.md §5.2), renewed on
    // its own phase every quarter of nodeLeaseDurationSeconds with up to 4 % jitter; our last
    // contact can come up to that much later. Counting from our contact alone was up to 10.4 s
    // late.
    use nodewarden::core::fence_plan::kubelet_lag;
    assert_eq!(
        kubelet_lag(Duration::from_secs(40), false),
        Duration::from_millis(10_400)
    );
    assert_eq!(
        kubelet_lag(Duration::from_secs(4), false),
        Duration::from_millis(1_040)
    );
    // No kubelet: this agent renews the node's Lease itself.
    assert_eq!(kubelet_lag(Duration::from_secs(40), true), Duration::ZERO);
    let lagged = FencePolicy {
        kubelet_lag: kubelet_lag(Duration::from_secs(40), false),
        ..policy(Mode::Enforce)
    };
    let toleration = Toleration {
        toleration_seconds: Some(30),
        ..ne("node.kubernetes.io/unreachable")
    };
    let plans = plan(
        &[pod(vec![toleration])],
        CONTACT,
        None,
        None,
        &lagged,
        &QuorumVerdict::NotConsulted,
    );
    let Plan::Stop {
        schedule, reason, ..
    } = &plans[0].plan
    else {
        panic!("{:?}", plans[0].plan);
    };
    // 1000 − 10.4 + 40 + 30.
    assert_eq!(schedule.eviction_time, Duration::from_millis(1_059_600));
    assert_eq!(schedule.kill_at, Duration::from_millis(1_057_600));
    assert!(reason.contains("counted from 10.4s before it"), "{reason}");
}

#[test]
fn the_taint_counts_a_monitor_period_after_the_unknown_write() {
    // The pass that finds the grace period run out writes the node's Ready Unknown; the next
    // one, a `node-monitor-period` later, queues it for the taint (docs/semantics.md §5.5).
    use nodewarden::core::fence_plan::queued_contact;
    let periodic = FencePolicy {
        node_monitor_period: Duration::from_secs(5),
        ..policy(Mode::Enforce)
    };
    let toleration = ne(UNREACHABLE).with_seconds(30);
    let eviction = |contact: Duration, tainted: Option<Duration>, policy: &FencePolicy| {
        let plans = plan(
            &[pod(vec![toleration.clone()])],
            contact,
            tainted,
            None,
            policy,
            &QuorumVerdict::NotConsulted,
        );
        match &plans[0].plan {
            Plan::Stop {
                schedule, reason, ..
            } => (schedule.eviction_time, reason.to_string()),
            other => panic!("{other:?}"),
        }
    };
    // 1000 + 40 + 5 + 30, and the sentence says where the 5 s come from.
    let (at, reason) = eviction(CONTACT, None, &periodic);
    assert_eq!(at, Duration::from_secs(1075));
    assert!(
        reason
            .contains("75s after last contact (40s node-monitor grace + 5s monitor period + 30s)"),
        "{reason}"
    );
    // Without it, as before.
    let (at, reason) = eviction(CONTACT, None, &policy(Mode::Enforce));
    assert_eq!(at, Duration::from_secs(1070));
    assert!(
        reason.contains("(40s node-monitor grace + 30s)"),
        "{reason}"
    );
    // A Node recorded Unknown at 1010 s: queued no earlier than a period after that write,
    // whatever later contact this node made.
    let contact = queued_contact(
        Duration::from_secs(1100),
        Some(Duration::from_secs(1010)),
        &periodic,
    );
    assert_eq!(
        eviction(contact, None, &periodic).0,
        Duration::from_secs(1045)
    );
    // A taint seen on the Node counts from its own time: the period is behind it already.
    let (at, _) = eviction(CONTACT, Some(Duration::from_secs(1020)), &periodic);
    assert_eq!(at, Duration::from_secs(1050));
}

/// KEP-5471: a pod stored while `TaintTolerationComparisonOperators` was on keeps its `Lt`/`Gt`
/// tolerations (validation ratchets). Such a toleration reads the unreachable taint's empty value
/// as no integer (`compareNumericValues`), and with the gate off never matches at all: either
/// way it tolerates nothing here, and the next toleration decides. The fence reads the pod
/// (it used to leave it unfenced as unreadable) and plans it as the controller does.
#[test]
fn a_stored_pod_with_gt_tolerations_is_fenced_as_the_controller_evicts_it() {
    let pod: nodewarden::api::slim::SlimPod = serde_json::from_value(serde_json::json!({
        "metadata": {"uid": "u1", "namespace": "default", "name": "web-1"},
        "spec": {
            "containers": [],
            "tolerations": [
                {"key": UNREACHABLE, "operator": "Gt", "value": "5", "effect": "NoExecute", "tolerationSeconds": 1000},
                {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]
        }
    }))
    .expect("a Pod");
    let fp = nodewarden::agent::fence_task::fence_pod(&pod).expect("the pod is read");
    // The watch cache keeps only tolerations that may tolerate the unreachable taint (issue 25):
    // the Gt one never can, so the Exists one is all the fence holds, and it decides.
    assert_eq!(fp.tolerations.len(), 1, "{:?}", fp.tolerations);
    assert_eq!(delay(fp.tolerations.clone()), Some(40 + 300));
    // Alone, the Gt toleration tolerates nothing: the pod is read, kept with no toleration, and
    // evicted at the grace period.
    let alone: nodewarden::api::slim::SlimPod = serde_json::from_value(serde_json::json!({
        "metadata": {"uid": "u2", "namespace": "default", "name": "web-2"},
        "spec": {
            "containers": [],
            "tolerations": [
                {"key": UNREACHABLE, "operator": "Gt", "value": "5", "effect": "NoExecute", "tolerationSeconds": 1000}
            ]
        }
    }))
    .expect("a Pod");
    let fp = nodewarden::agent::fence_task::fence_pod(&alone).expect("the pod is read");
    assert!(fp.tolerations.is_empty(), "{:?}", fp.tolerations);
    assert_eq!(delay(fp.tolerations.clone()), Some(40));
}

/// No eviction counts from before the instant the controller-manager's leader Lease proves no
/// running timer started (`core::leader`): a taint seen long ago counts from there, a later count
/// stays, and a pod never evicted stays so.
#[test]
fn no_eviction_counts_from_before_every_timer_started_again() {
    let at = |tainted: Option<u64>, timers_from: Option<u64>, t: Vec<Toleration>| {
        let plans = plan(
            &[pod(t)],
            CONTACT,
            tainted.map(Duration::from_secs),
            timers_from.map(Duration::from_secs),
            &policy(Mode::Enforce),
            &QuorumVerdict::Tainted { untainted: None },
        );
        match &plans[0].plan {
            Plan::Stop { schedule, .. } => Some(schedule.eviction_time.as_secs()),
            Plan::Never { .. } => None,
            Plan::Hold { .. } => panic!("not held"),
        }
    };
    let tolerates =
        |secs| vec![Toleration::exists(UNREACHABLE, Some(Effect::NoExecute)).with_seconds(secs)];
    // The taint seen at 900 s; pods tolerating 60 s.
    assert_eq!(at(Some(900), None, tolerates(60)), Some(960));
    // Every timer started again no earlier than 1,200 s: the eviction moves with it.
    assert_eq!(at(Some(900), Some(1200), tolerates(60)), Some(1260));
    // Counted from the contact, later than the timers' start: unchanged.
    assert_eq!(
        at(None, Some(500), tolerates(60)),
        at(None, None, tolerates(60))
    );
    assert_eq!(at(Some(900), Some(800), tolerates(60)), Some(960));
    // A pod tolerating the taint forever is never stopped, whatever the Lease says.
    let forever = vec![Toleration::exists(UNREACHABLE, Some(Effect::NoExecute))];
    assert_eq!(at(Some(900), Some(1200), forever), None);
    // The plan says why, only where the read moved it.
    let reason = |timers_from: u64| {
        let plans = plan(
            &[pod(tolerates(60))],
            CONTACT,
            Some(Duration::from_secs(900)),
            Some(Duration::from_secs(timers_from)),
            &policy(Mode::Enforce),
            &QuorumVerdict::Tainted { untainted: None },
        );
        match &plans[0].plan {
            Plan::Stop { reason, .. } => reason.to_string(),
            other => panic!("{other:?}"),
        }
    };
    let said = "no earlier than the read of the controller-manager's leader Lease";
    assert!(reason(1200).contains(said), "{}", reason(1200));
    assert!(!reason(800).contains(said), "{}", reason(800));
}

/// Fencing on the taint, not cut off: a taint whose time, to the second, is no earlier than a
/// peer's latest read of the Node without it came after that read, and counts from the later of
/// the two even when that is later than the count from contact (`fence_plan::after_read`,
/// `Taints::unreachable_after_read`, docs/fence.md §3; forty-seventh session, seeds 0x114, 0x892
/// and 0xae6). Without that proof, a taint seen later than the count from contact counts from the
/// contact, or from the read less `READ_SLACK` if that is later.
#[test]
fn a_taint_added_after_a_read_without_it_counts_from_its_own_time() {
    use nodewarden::core::fence_plan::{READ_SLACK, Taints, after_read};
    let s = Duration::from_secs;
    const GRACE: Duration = Duration::from_secs(40);
    // Contact at 1,000 s: counted from 1,040 s (grace 40 s, no monitor period, no lag); pods
    // tolerating 60 s.
    let at = |taints: Taints, untainted: Option<u64>| {
        let plans = plan(
            &[pod(vec![ne(UNREACHABLE).with_seconds(60)])],
            CONTACT,
            taints,
            None,
            &policy(Mode::Enforce),
            &QuorumVerdict::Tainted {
                untainted: untainted.map(s),
            },
        );
        match &plans[0].plan {
            Plan::Stop { schedule, .. } => schedule.eviction_time.as_secs(),
            other => panic!("{other:?}"),
        }
    };
    let seen = |t: u64| Taints {
        unreachable: Some(s(t)),
        ..Taints::default()
    };
    let proven = |t: u64| Taints {
        unreachable_after_read: true,
        ..seen(t)
    };
    let added = |secs: u64| Some(std::time::UNIX_EPOCH + s(secs));
    // The taint seen at 1,070 s, the peers' last read without it at 1,065 s: its own time counts,
    // with its `timeAdded`.
    assert_eq!(
        after_read(Some((s(1070), added(7))), Some(s(1065)), GRACE),
        Some((s(1070), added(7)))
    );
    assert_eq!(at(proven(1070), Some(1065)), 1130);
    // Without the proof, the read less the slack counts (later than the contact's count)...
    assert_eq!(at(seen(1070), Some(1065)), 1065 - READ_SLACK.as_secs() + 60);
    // ... or, without a read, the contact.
    assert_eq!(at(seen(1070), None), 1100);
    // A `timeAdded` within the second before the read may be of a taint added after it: the
    // read counts, without the `timeAdded` (a pod created later moves no count of a read).
    let ms = Duration::from_millis;
    assert_eq!(
        after_read(Some((ms(1_064_600), added(7))), Some(s(1065)), GRACE),
        Some((s(1065), None))
    );
    // A whole second earlier, the taint was added before the read (and removed since); and
    // nothing without either.
    assert_eq!(
        after_read(Some((s(1064), added(7))), Some(s(1065)), GRACE),
        None
    );
    assert_eq!(after_read(Some((s(1070), added(7))), None, GRACE), None);
    assert_eq!(
        after_read::<std::time::SystemTime>(None, Some(s(1065)), GRACE),
        None
    );
    // A taint earlier than the count from contact counts from itself either way.
    assert_eq!(at(proven(1020), Some(1010)), 1080);
    assert_eq!(at(seen(1020), None), 1080);
    // A taint a whole grace period after the read may be the swap of a not-ready taint added
    // after it, whose timers go on: the read proves nothing of it.
    assert_eq!(
        after_read(Some((s(1105), added(7))), Some(s(1065)), GRACE),
        None
    );
    assert_eq!(
        after_read(Some((s(1104), added(7))), Some(s(1065)), GRACE),
        Some((s(1104), added(7)))
    );
}

/// A `not-ready:NoExecute` taint the Node carried when last seen started each pod's timer for it,
/// and the controller's swap for the unreachable taint as the node goes Unknown keeps that timer
/// (docs/semantics.md §4.3): the pod is deleted its not-ready toleration after that taint, when
/// that is earlier than the count from contact. A pod that tolerates unreachable forever is
/// deleted by its not-ready timer only when that ends before the swap can cancel it.
#[test]
fn a_not_ready_taint_seen_before_the_cut_keeps_its_timer_through_the_swap() {
    use nodewarden::core::fence_plan::Taints;
    let enforce = QuorumVerdict::Enforce {
        not_before: None,
        held_from: None,
        untainted: None,
    };
    let planned = |tolerations: Vec<Toleration>, taints: Taints, verdict: &QuorumVerdict| {
        let plans = plan(
            &[pod(tolerations)],
            CONTACT,
            taints,
            None,
            &policy(Mode::Enforce),
            verdict,
        );
        plans[0].plan.clone()
    };
    let eviction = |plan: &Plan| match plan {
        Plan::Stop {
            schedule, reason, ..
        }
        | Plan::Hold { schedule, reason } => (schedule.eviction_time, reason.to_string()),
        Plan::Never { reason } => panic!("never: {reason}"),
    };
    // The admission plugin's defaults: 300 s for each. NotReady 200 s before the last contact:
    // deleted at 1100, not 1000 + 40 + 300.
    let defaults = vec![
        ne(NOT_READY).with_seconds(300),
        ne(UNREACHABLE).with_seconds(300),
    ];
    let not_ready = |at: u64| Taints {
        unreachable_after_read: false,
        added: Default::default(),
        unreachable: None,
        not_ready: Some(Duration::from_secs(at)),
        swapped_from: None,
    };
    let (at, reason) = eviction(&planned(defaults.clone(), not_ready(800), &enforce));
    assert_eq!(at, Duration::from_secs(1100));
    assert!(
        reason.contains(
            "but deleted earlier, 300s after the node.kubernetes.io/not-ready:NoExecute taint"
        ),
        "{reason}"
    );
    // A not-ready taint added since the last contact ends later than the count: the count stands.
    let (at, reason) = eviction(&planned(defaults.clone(), not_ready(1_100), &enforce));
    assert_eq!(at, Duration::from_secs(1340));
    assert!(!reason.contains("not-ready"), "{reason}");
    // Without the taint, as before.
    let (at, _) = eviction(&planned(defaults.clone(), Taints::default(), &enforce));
    assert_eq!(at, Duration::from_secs(1340));
    // Each taint's own toleration: not-ready tolerated 20 s, unreachable 600 s.
    let own = vec![
        ne(NOT_READY).with_seconds(20),
        ne(UNREACHABLE).with_seconds(600),
    ];
    let (at, _) = eviction(&planned(own, not_ready(990), &enforce));
    assert_eq!(at, Duration::from_secs(1010));
    // Not tolerated at all: deleted as the taint was added.
    let (at, _) = eviction(&planned(
        vec![ne(UNREACHABLE).with_seconds(300)],
        not_ready(900),
        &enforce,
    ));
    assert_eq!(at, Duration::from_secs(900));
    // Not-ready tolerated forever: no timer; the swap starts the unreachable one.
    let (at, _) = eviction(&planned(
        vec![ne(NOT_READY), ne(UNREACHABLE).with_seconds(300)],
        not_ready(800),
        &enforce,
    ));
    assert_eq!(at, Duration::from_secs(1340));
    // Unreachable tolerated forever: the swap cancels the timer, but one that ends first deletes
    // the pod. The swap comes by the last contact + the kubelet's lag + the grace period + two
    // monitor periods (1000 + 0 + 40 + 0 here).
    let (at, reason) = eviction(&planned(
        vec![ne(NOT_READY).with_seconds(10), ne(UNREACHABLE)],
        not_ready(800),
        &enforce,
    ));
    assert_eq!(at, Duration::from_secs(810));
    assert!(
        reason.contains("tolerates node.kubernetes.io/unreachable:NoExecute forever, but"),
        "{reason}"
    );
    for ends in [1_040, 1_100] {
        assert!(matches!(
            planned(
                vec![ne(NOT_READY).with_seconds(ends - 800), ne(UNREACHABLE)],
                not_ready(800),
                &enforce
            ),
            Plan::Never { .. }
        ));
    }
    let (at, _) = eviction(&planned(
        vec![ne(NOT_READY).with_seconds(239), ne(UNREACHABLE)],
        not_ready(800),
        &enforce,
    ));
    assert_eq!(at, Duration::from_secs(1_039));
    // And under a hold, nothing.
    let held_now = QuorumVerdict::Hold {
        reason: "every node known is cut off".into(),
        stop_due: None,
    };
    assert!(matches!(
        planned(
            vec![ne(NOT_READY).with_seconds(10), ne(UNREACHABLE)],
            not_ready(800),
            &held_now
        ),
        Plan::Never { .. }
    ));
    // A hold keeps its own rules (the quorum never holds a node seen with the taint in a partial
    // disruption; an outage of the API server or every zone down deletes nothing).
    let held = QuorumVerdict::Hold {
        reason: "every node known is cut off".into(),
        stop_due: None,
    };
    let (at, _) = eviction(&planned(defaults.clone(), not_ready(800), &held));
    assert_eq!(at, Duration::from_secs(1340));
    // Both taints known: each pod's earlier timer.
    let both = Taints {
        unreachable_after_read: false,
        added: Default::default(),
        unreachable: Some(Duration::from_secs(1_020)),
        not_ready: Some(Duration::from_secs(700)),
        swapped_from: None,
    };
    let (at, _) = eviction(&planned(defaults, both, &enforce));
    assert_eq!(at, Duration::from_secs(1000));
    // A run that began with the unreachable taint, swapped for not-ready as the kubelet posted
    // Ready=False: the unreachable timer goes on (900 + 300), earlier than the not-ready one
    // (950 + 600) and the count from contact (1340).
    let swapped = Taints {
        unreachable_after_read: false,
        added: Default::default(),
        unreachable: None,
        not_ready: Some(Duration::from_secs(950)),
        swapped_from: Some((Duration::from_secs(900), false)),
    };
    let own = vec![
        ne(NOT_READY).with_seconds(600),
        ne(UNREACHABLE).with_seconds(300),
    ];
    let (at, reason) = eviction(&planned(own, swapped, &enforce));
    assert_eq!(at, Duration::from_secs(1200));
    assert!(
        reason.contains("300s after the node.kubernetes.io/unreachable:NoExecute taint"),
        "{reason}"
    );
    // A pod that tolerates the taint on now forever lost its timer at the swap.
    let forever_now = vec![ne(NOT_READY), ne(UNREACHABLE).with_seconds(300)];
    let (at, _) = eviction(&planned(forever_now, swapped, &enforce));
    assert_eq!(at, Duration::from_secs(1340));
}

/// A pod that tolerates the unreachable taint forever is planned on the not-ready taint's timer
/// until the controller can swap that taint, counted from the latest contact it may have heard
/// (`PlanContact::latest`), not from the count of the deadlines (`Fixes::swap_latest`, seed 0xf61
/// with `--not-ready`). The unreachable taint's own deadlines still count from the count.
#[test]
fn a_plan_on_the_not_ready_timer_lasts_until_the_latest_swap() {
    use nodewarden::core::fence_plan::{PlanContact, Taints};
    let enforce = QuorumVerdict::Enforce {
        not_before: None,
        held_from: None,
        untainted: None,
    };
    let not_ready = Taints {
        unreachable_after_read: false,
        added: Default::default(),
        unreachable: None,
        not_ready: Some(Duration::from_secs(800)),
        swapped_from: None,
    };
    let eviction = |tolerations: Vec<Toleration>, contact: PlanContact| {
        let plans = plan(
            &[pod(tolerations)],
            contact,
            not_ready,
            None,
            &policy(Mode::Enforce),
            &enforce,
        );
        match &plans[0].plan {
            Plan::Stop { schedule, .. } => Some(schedule.eviction_time.as_secs()),
            Plan::Never { .. } => None,
            Plan::Hold { .. } => panic!("not held"),
        }
    };
    let contact = |counted: u64, latest: u64| PlanContact {
        counted: Duration::from_secs(counted),
        latest: Duration::from_secs(latest),
    };
    // Not-ready tolerated 250 s: its timer ends at 1050. Counted from 1000, the swap comes by
    // 1040 (no kubelet lag or monitor period in this policy) and cancels it first.
    let forever = vec![ne(NOT_READY).with_seconds(250), ne(UNREACHABLE)];
    assert_eq!(eviction(forever.clone(), CONTACT.into()), None);
    // The node was heard until 1030 (a return too short to move the count): the swap may come as
    // late as 1070, so the timer deletes the pod at 1050.
    assert_eq!(eviction(forever.clone(), contact(1000, 1030)), Some(1050));
    // A latest contact no later than the count changes nothing.
    assert_eq!(eviction(forever.clone(), contact(1000, 990)), None);
    // A timer that ends after the latest swap too is still cancelled by it.
    let longer = vec![ne(NOT_READY).with_seconds(280), ne(UNREACHABLE)];
    assert_eq!(eviction(longer, contact(1000, 1030)), None);
    // The unreachable taint's deadline counts from the count, whatever the latest contact:
    // 1000 + 40 + 60.
    let sixty = vec![ne(UNREACHABLE).with_seconds(60), ne(NOT_READY)];
    assert_eq!(eviction(sixty.clone(), contact(1000, 1030)), Some(1100));
    assert_eq!(eviction(sixty, CONTACT.into()), Some(1100));
}

/// The not-ready taint the peers read (`Taints::with_not_ready_read`, `Fixes::not_ready_time_read`,
/// seed 0xe8 with `--not-ready`): on the Node still, it counts as the same taint on this node's own
/// view, from the earlier of the two, with that one's `timeAdded`; swapped since for the
/// unreachable one, as the first taint of the run, whose timers go on unless the pod tolerates
/// the unreachable taint forever.
#[test]
fn the_not_ready_taint_the_peers_read_counts_as_the_one_on_the_nodes_own_view() {
    use nodewarden::core::fence_plan::{Taints, TaintsAdded};
    use std::time::{SystemTime, UNIX_EPOCH};
    let s = Duration::from_secs;
    let cp = |t: u64| UNIX_EPOCH + s(1_800_000_000 + t);
    let enforce = QuorumVerdict::Enforce {
        not_before: None,
        held_from: None,
        untainted: None,
    };
    let own = |not_ready: Option<u64>, swapped_from: Option<(u64, bool)>| Taints {
        unreachable_after_read: false,
        not_ready: not_ready.map(s),
        swapped_from: swapped_from.map(|(t, nr)| (s(t), nr)),
        added: TaintsAdded {
            not_ready: not_ready.map(cp),
            swapped_from: swapped_from.map(|(t, _)| cp(t)),
            ..TaintsAdded::default()
        },
        ..Taints::default()
    };
    let read = |t: u64, swapped: bool| -> Option<(Duration, SystemTime, bool)> {
        Some((s(t), cp(t), swapped))
    };
    // Nothing read: the own view's alone.
    assert_eq!(
        own(Some(990), None).with_not_ready_read(None),
        own(Some(990), None)
    );
    // On the Node: the earlier of the two, with its time.
    assert_eq!(
        own(None, None).with_not_ready_read(read(980, false)),
        own(Some(980), None)
    );
    assert_eq!(
        own(Some(990), None).with_not_ready_read(read(980, false)),
        own(Some(980), None)
    );
    assert_eq!(
        own(Some(970), None).with_not_ready_read(read(980, false)),
        own(Some(970), None)
    );
    // Swapped: the run's first; the own view's, if it knew an earlier one of the same taint.
    assert_eq!(
        own(None, None).with_not_ready_read(read(980, true)),
        own(None, Some((980, true)))
    );
    assert_eq!(
        own(None, Some((990, true))).with_not_ready_read(read(980, true)),
        own(None, Some((980, true)))
    );
    assert_eq!(
        own(None, Some((970, true))).with_not_ready_read(read(980, true)),
        own(None, Some((970, true)))
    );
    assert_eq!(
        own(None, Some((960, false))).with_not_ready_read(read(980, true)),
        own(None, Some((960, false)))
    );
    // Planned: not-ready tolerated 20 s, unreachable 600 s; the own view, cut before it saw the
    // taint, has none. Deleted at 1010 whether the taint is on or swapped, not at 1000 + 40 + 600.
    let tolerating = vec![
        ne(NOT_READY).with_seconds(20),
        ne(UNREACHABLE).with_seconds(600),
    ];
    for read in [read(990, false), read(990, true)] {
        let taints = Taints::default().with_not_ready_read(read);
        let plans = plan(
            &[pod(tolerating.clone())],
            CONTACT,
            taints,
            None,
            &policy(Mode::Enforce),
            &enforce,
        );
        match &plans[0].plan {
            Plan::Stop { schedule, .. } => assert_eq!(schedule.eviction_time, s(1010), "{read:?}"),
            other => panic!("{read:?}: {other:?}"),
        }
    }
    // Unreachable tolerated forever: the swap cancelled the not-ready timer.
    let forever = vec![ne(NOT_READY).with_seconds(20), ne(UNREACHABLE)];
    let planned = |read| {
        plan(
            &[pod(forever.clone())],
            CONTACT,
            Taints::default().with_not_ready_read(read),
            None,
            &policy(Mode::Enforce),
            &enforce,
        )[0]
        .plan
        .clone()
    };
    assert!(matches!(planned(read(990, true)), Plan::Never { .. }));
    assert!(matches!(planned(read(990, false)), Plan::Stop { .. }));
}

/// A pod's timers start no earlier than its creation (`FencePod::created`, `Fixes::pod_created`,
/// seed 0x21 with `--not-ready`): the controller starts the timer of a pod created on a Node
/// already tainted when it handles the pod, not at the taint's `timeAdded` (docs/semantics.md
/// §4.3). The count of a taint moves by how much later than its `timeAdded` the pod was created:
/// both are the control plane's times, so this node's clock does not come between them. Without
/// either time, or for a count from contact, nothing moves.
#[test]
fn a_pod_created_on_a_tainted_node_counts_from_its_creation() {
    use nodewarden::core::fence_plan::{Taints, TaintsAdded};
    use std::time::{SystemTime, UNIX_EPOCH};
    let s = Duration::from_secs;
    // The control plane's clock; this node's may be anywhere: the counts below are its own.
    let cp = |t: u64| UNIX_EPOCH + s(1_800_000_000 + t);
    let tolerating = vec![
        ne(NOT_READY).with_seconds(240),
        ne(UNREACHABLE).with_seconds(300),
    ];
    // The taints counted at `at` on this node's scale, added at `added` on the control plane's.
    let not_ready = |at: u64, added: Option<u64>| Taints {
        unreachable_after_read: false,
        not_ready: Some(s(at)),
        added: TaintsAdded {
            not_ready: added.map(cp),
            ..TaintsAdded::default()
        },
        ..Taints::default()
    };
    let unreachable = |at: u64, added: Option<u64>| Taints {
        unreachable_after_read: false,
        unreachable: Some(s(at)),
        added: TaintsAdded {
            unreachable: added.map(cp),
            ..TaintsAdded::default()
        },
        ..Taints::default()
    };
    let planned = |created: Option<SystemTime>, taints: Taints, verdict: &QuorumVerdict| {
        let pod = FencePod {
            created,
            ..pod(tolerating.clone())
        };
        plan(
            &[pod],
            CONTACT,
            taints,
            None,
            &policy(Mode::Enforce),
            verdict,
        )[0]
        .plan
        .clone()
    };
    let on_taint = QuorumVerdict::Tainted { untainted: None };
    let eviction = |plan: &Plan| match plan {
        Plan::Stop {
            schedule, reason, ..
        } => (schedule.eviction_time.as_secs(), reason.to_string()),
        other => panic!("{other:?}"),
    };
    // The not-ready taint added at 900 (counted at 900); the pod created 110 s later: deleted at
    // 1010 + 240.
    let (at, reason) = eviction(&planned(
        Some(cp(1_010)),
        not_ready(900, Some(900)),
        &on_taint,
    ));
    assert_eq!(at, 1_250);
    assert!(
        reason.contains("counted from the pod's creation (its creationTimestamp), which is later"),
        "{reason}"
    );
    // This node's clock 60 s behind, so the taint counted from when this run first saw it (910
    // here, not 960): the pod's count moves by the same 110 s, from 910.
    let (at, _) = eviction(&planned(
        Some(cp(1_010)),
        not_ready(910, Some(900)),
        &on_taint,
    ));
    assert_eq!(at, 1_260);
    // Created before the taint: the taint counts (900 + 240), and the reason says nothing of it.
    let (at, reason) = eviction(&planned(
        Some(cp(850)),
        not_ready(900, Some(900)),
        &on_taint,
    ));
    assert_eq!(at, 1_140);
    assert!(!reason.contains("creationTimestamp"), "{reason}");
    // Without either time, the taint counts.
    for (created, added) in [(None, Some(900)), (Some(cp(1_010)), None)] {
        let (at, _) = eviction(&planned(created, not_ready(900, added), &on_taint));
        assert_eq!(at, 1_140);
    }
    // The unreachable taint alike (added 980, created 1030: from 1030, + 300).
    let (at, _) = eviction(&planned(
        Some(cp(1_030)),
        unreachable(980, Some(980)),
        &on_taint,
    ));
    assert_eq!(at, 1_330);
    // A count from contact (1000 + 40 + 300) has no `timeAdded`: nothing moves.
    let enforce = QuorumVerdict::Enforce {
        not_before: None,
        held_from: None,
        untainted: None,
    };
    let (at, _) = eviction(&planned(Some(cp(1_045)), Taints::default(), &enforce));
    assert_eq!(at, 1_340);
    // A run that began with the unreachable taint (added 900), swapped for not-ready at 950, and a
    // pod tolerating unreachable 48 s, not-ready 330 s: created before the swap, it keeps the
    // first one's timer (from its creation at 920, + 48); created after it, it never had that
    // timer, and counts from contact (1000 + 40 + 48), its not-ready timer (from 1000, + 330)
    // being later.
    let swapped = Taints {
        unreachable_after_read: false,
        not_ready: Some(s(950)),
        swapped_from: Some((s(900), false)),
        added: TaintsAdded {
            not_ready: Some(cp(950)),
            swapped_from: Some(cp(900)),
            ..TaintsAdded::default()
        },
        ..Taints::default()
    };
    let short = |created: u64| {
        let pod = FencePod {
            created: Some(cp(created)),
            ..pod(vec![
                ne(NOT_READY).with_seconds(330),
                ne(UNREACHABLE).with_seconds(48),
            ])
        };
        let plans = plan(
            &[pod],
            CONTACT,
            swapped,
            None,
            &policy(Mode::Enforce),
            &on_taint,
        );
        eviction(&plans[0].plan).0
    };
    assert_eq!(short(920), 968);
    assert_eq!(short(1_000), 1_088);
    // A pod that tolerates unreachable forever, deleted by its not-ready timer: from creation too.
    let forever = FencePod {
        created: Some(cp(1_010)),
        ..pod(vec![ne(NOT_READY).with_seconds(20), ne(UNREACHABLE)])
    };
    let plans = plan(
        &[forever],
        CONTACT,
        not_ready(900, Some(900)),
        None,
        &policy(Mode::Enforce),
        &on_taint,
    );
    assert_eq!(eviction(&plans[0].plan).0, 1_030);
}

/// The fence reads a pod's `creationTimestamp` from the watch cache's pod (`api::slim` keeps it):
/// to the second as the API server writes it; absent, or one RFC 3339 cannot hold (the zero time
/// of year 1), it is not known.
#[test]
fn the_fence_reads_a_pods_creation_time_as_the_api_server_stored_it() {
    use std::time::UNIX_EPOCH;
    let read = |created: serde_json::Value| {
        let pod: nodewarden::api::slim::SlimPod = serde_json::from_value(serde_json::json!({
            "metadata": {"uid": "u1", "namespace": "default", "name": "web-1",
                         "creationTimestamp": created},
            "spec": {"containers": []}
        }))
        .expect("a Pod");
        nodewarden::agent::fence_task::fence_pod(&pod)
            .expect("the pod is read")
            .created
    };
    assert_eq!(
        read("2027-01-15T08:00:05Z".into()),
        Some(UNIX_EPOCH + Duration::from_secs(1_800_000_005))
    );
    assert_eq!(read(serde_json::Value::Null), None);
    assert_eq!(read("0001-01-01T00:00:00Z".into()), None);
}
