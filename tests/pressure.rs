//! The pressure state machine (docs/semantics.md §7.4–7.5), named after the rules it checks.

use std::time::Duration;

use nodewarden::core::pressure::{PressurePolicy, PressureState};
use nodewarden::core::quantity::Quantity;
use nodewarden::core::signal::{
    Observation, Observations, PsiKind, PsiResource, PsiSignal, PsiWindow, Signal, SignalRef,
};
use nodewarden::core::threshold::{PsiThreshold, Threshold, ThresholdValue};
use proptest::prelude::*;

const PERIOD: Duration = Duration::from_secs(300);

fn q(s: &str) -> ThresholdValue {
    ThresholdValue::Quantity(s.parse::<Quantity>().expect("test quantity"))
}

fn hard(signal: Signal, value: ThresholdValue, min_reclaim: Option<ThresholdValue>) -> Threshold {
    Threshold {
        signal,
        value,
        grace_period: Duration::ZERO,
        min_reclaim,
        soft: false,
    }
}

fn policy(thresholds: Vec<Threshold>) -> PressurePolicy {
    PressurePolicy {
        thresholds,
        psi_thresholds: vec![],
        conditions: vec![
            (
                "MemoryPressure".into(),
                vec![SignalRef::Eviction(Signal::MemoryAvailable)],
            ),
            (
                "DiskPressure".into(),
                vec![
                    SignalRef::Eviction(Signal::NodeFsAvailable),
                    SignalRef::Eviction(Signal::NodeFsInodesFree),
                ],
            ),
        ],
        transition_period: PERIOD,
    }
}

fn obs(signal: Signal, available: i64, capacity: i64) -> Observations {
    let mut o = Observations::default();
    o.eviction.insert(
        signal,
        Observation {
            available,
            capacity,
        },
    );
    o
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn threshold_met_only_when_available_is_strictly_below() {
    let p = policy(vec![hard(Signal::MemoryAvailable, q("100"), None)]);
    let (_, at) = p.evaluate(
        &obs(Signal::MemoryAvailable, 100, 1000),
        &PressureState::default(),
        secs(0),
    );
    assert!(!at.thresholds[0].met, "available == threshold is not met");
    assert!(!at.pressure["MemoryPressure"]);
    let (_, below) = p.evaluate(
        &obs(Signal::MemoryAvailable, 99, 1000),
        &PressureState::default(),
        secs(0),
    );
    assert!(below.thresholds[0].met);
    assert!(below.pressure["MemoryPressure"], "entry has no delay");
}

#[test]
fn percentage_resolves_against_capacity_truncated() {
    // 10% of 1005 = 100.5 → 100 (int64 truncation, §7.4)
    let p = policy(vec![hard(
        Signal::NodeFsAvailable,
        ThresholdValue::Percentage(0.1),
        None,
    )]);
    let (_, e) = p.evaluate(
        &obs(Signal::NodeFsAvailable, 100, 1005),
        &PressureState::default(),
        secs(0),
    );
    assert_eq!(e.thresholds[0].threshold, 100);
    assert!(!e.thresholds[0].met);
    let (_, e) = p.evaluate(
        &obs(Signal::NodeFsAvailable, 99, 1005),
        &PressureState::default(),
        secs(0),
    );
    assert!(e.thresholds[0].met);
    assert!(e.pressure["DiskPressure"]);
}

#[test]
fn condition_clears_only_after_the_transition_period() {
    let p = policy(vec![hard(Signal::MemoryAvailable, q("100"), None)]);
    let (s, e) = p.evaluate(
        &obs(Signal::MemoryAvailable, 50, 1000),
        &PressureState::default(),
        secs(10),
    );
    assert!(e.pressure["MemoryPressure"]);
    // Relieved at once, but still reported until 300 s after the last observation (t=10).
    let (s, e) = p.evaluate(&obs(Signal::MemoryAvailable, 900, 1000), &s, secs(20));
    assert!(!e.observed_now["MemoryPressure"]);
    assert!(e.pressure["MemoryPressure"]);
    let (s, e) = p.evaluate(&obs(Signal::MemoryAvailable, 900, 1000), &s, secs(309));
    assert!(
        e.pressure["MemoryPressure"],
        "299 s after: still inside the period"
    );
    let (_, e) = p.evaluate(&obs(Signal::MemoryAvailable, 900, 1000), &s, secs(310));
    assert!(!e.pressure["MemoryPressure"], "300 s after: cleared");
}

#[test]
fn renewed_pressure_restarts_the_transition_period() {
    let p = policy(vec![hard(Signal::MemoryAvailable, q("100"), None)]);
    let (s, _) = p.evaluate(
        &obs(Signal::MemoryAvailable, 50, 1000),
        &PressureState::default(),
        secs(0),
    );
    let (s, _) = p.evaluate(&obs(Signal::MemoryAvailable, 50, 1000), &s, secs(200));
    let (_, e) = p.evaluate(&obs(Signal::MemoryAvailable, 900, 1000), &s, secs(400));
    assert!(
        e.pressure["MemoryPressure"],
        "last observed at 200 s, so still True at 400 s"
    );
}

#[test]
fn zero_transition_period_clears_at_once() {
    let mut p = policy(vec![hard(Signal::MemoryAvailable, q("100"), None)]);
    p.transition_period = Duration::ZERO;
    let (s, e) = p.evaluate(
        &obs(Signal::MemoryAvailable, 50, 1000),
        &PressureState::default(),
        secs(0),
    );
    assert!(e.pressure["MemoryPressure"]);
    let (_, e) = p.evaluate(&obs(Signal::MemoryAvailable, 900, 1000), &s, secs(1));
    assert!(!e.pressure["MemoryPressure"]);
}

#[test]
fn minimum_reclaim_keeps_a_met_threshold_until_threshold_plus_reclaim() {
    let p = policy(vec![hard(Signal::MemoryAvailable, q("100"), Some(q("10")))]);
    let (s, e) = p.evaluate(
        &obs(Signal::MemoryAvailable, 90, 1000),
        &PressureState::default(),
        secs(0),
    );
    assert!(e.thresholds[0].met);
    let (s, e) = p.evaluate(&obs(Signal::MemoryAvailable, 109, 1000), &s, secs(10));
    assert!(e.thresholds[0].met, "109 < 100 + 10: not yet reclaimed");
    let (_, e) = p.evaluate(&obs(Signal::MemoryAvailable, 110, 1000), &s, secs(20));
    assert!(!e.thresholds[0].met, "110 ≥ 100 + 10: reclaimed");
}

#[test]
fn minimum_reclaim_does_not_apply_to_a_threshold_that_was_not_met() {
    let p = policy(vec![hard(Signal::MemoryAvailable, q("100"), Some(q("10")))]);
    let (_, e) = p.evaluate(
        &obs(Signal::MemoryAvailable, 105, 1000),
        &PressureState::default(),
        secs(0),
    );
    assert!(!e.thresholds[0].met);
}

#[test]
fn minimum_reclaim_percentage_resolves_against_capacity() {
    // 5% of 1000 = 50: stays met until available ≥ 150.
    let p = policy(vec![hard(
        Signal::NodeFsAvailable,
        q("100"),
        Some(ThresholdValue::Percentage(0.05)),
    )]);
    let (s, _) = p.evaluate(
        &obs(Signal::NodeFsAvailable, 10, 1000),
        &PressureState::default(),
        secs(0),
    );
    let (s, e) = p.evaluate(&obs(Signal::NodeFsAvailable, 149, 1000), &s, secs(1));
    assert!(e.thresholds[0].met);
    let (_, e) = p.evaluate(&obs(Signal::NodeFsAvailable, 150, 1000), &s, secs(2));
    assert!(!e.thresholds[0].met);
}

#[test]
fn soft_threshold_sets_the_condition_at_once_but_waits_its_grace_period() {
    let soft = Threshold {
        signal: Signal::MemoryAvailable,
        value: q("300"),
        grace_period: secs(90),
        min_reclaim: None,
        soft: true,
    };
    let p = policy(vec![soft]);
    let (s, e) = p.evaluate(
        &obs(Signal::MemoryAvailable, 200, 1000),
        &PressureState::default(),
        secs(0),
    );
    assert!(
        e.pressure["MemoryPressure"],
        "conditions ignore grace periods"
    );
    assert!(!e.thresholds[0].grace_elapsed);
    let (s, e) = p.evaluate(&obs(Signal::MemoryAvailable, 200, 1000), &s, secs(89));
    assert!(!e.thresholds[0].grace_elapsed);
    let (s, e) = p.evaluate(&obs(Signal::MemoryAvailable, 200, 1000), &s, secs(90));
    assert!(e.thresholds[0].grace_elapsed);
    // Relief resets the first-observed time: the grace starts over.
    let (s, _) = p.evaluate(&obs(Signal::MemoryAvailable, 900, 1000), &s, secs(100));
    let (_, e) = p.evaluate(&obs(Signal::MemoryAvailable, 200, 1000), &s, secs(110));
    assert!(e.thresholds[0].met);
    assert!(!e.thresholds[0].grace_elapsed);
}

#[test]
fn hard_threshold_grace_is_elapsed_at_once() {
    let p = policy(vec![hard(Signal::MemoryAvailable, q("100"), None)]);
    let (_, e) = p.evaluate(
        &obs(Signal::MemoryAvailable, 1, 1000),
        &PressureState::default(),
        secs(0),
    );
    assert!(e.thresholds[0].grace_elapsed);
}

#[test]
fn an_unobserved_signal_meets_no_threshold() {
    let p = policy(vec![hard(Signal::NodeFsInodesFree, q("100"), None)]);
    let (_, e) = p.evaluate(&Observations::default(), &PressureState::default(), secs(0));
    assert!(!e.thresholds[0].met);
    assert_eq!(e.thresholds[0].available, None);
    assert!(!e.pressure["DiskPressure"]);
}

#[test]
fn any_signal_of_a_condition_sets_it() {
    let p = policy(vec![
        hard(
            Signal::NodeFsAvailable,
            ThresholdValue::Percentage(0.1),
            None,
        ),
        hard(
            Signal::NodeFsInodesFree,
            ThresholdValue::Percentage(0.05),
            None,
        ),
    ]);
    let mut o = obs(Signal::NodeFsAvailable, 500, 1000);
    o.eviction.insert(
        Signal::NodeFsInodesFree,
        Observation {
            available: 4,
            capacity: 100,
        },
    );
    let (_, e) = p.evaluate(&o, &PressureState::default(), secs(0));
    assert!(!e.thresholds[0].met);
    assert!(e.thresholds[1].met);
    assert!(e.pressure["DiskPressure"]);
    assert!(!e.pressure["MemoryPressure"]);
}

#[test]
fn psi_threshold_is_met_strictly_above() {
    let sig = PsiSignal {
        resource: PsiResource::Memory,
        kind: PsiKind::Full,
        window: PsiWindow::Avg10,
    };
    let p = PressurePolicy {
        thresholds: vec![],
        psi_thresholds: vec![PsiThreshold {
            signal: sig,
            above_percent: 10.0,
        }],
        conditions: vec![("MemoryContention".into(), vec![SignalRef::Psi(sig)])],
        transition_period: PERIOD,
    };
    let mut o = Observations::default();
    o.psi.insert(sig, 10.0);
    let (_, e) = p.evaluate(&o, &PressureState::default(), secs(0));
    assert!(!e.pressure["MemoryContention"]);
    o.psi.insert(sig, 10.01);
    let (_, e) = p.evaluate(&o, &PressureState::default(), secs(0));
    assert!(e.pressure["MemoryContention"]);
}

proptest! {
    /// No condition flaps inside the transition period: a reported True→False change happens
    /// only when pressure was last observed at least one period earlier.
    #[test]
    fn no_condition_flaps_inside_the_transition_period(
        steps in prop::collection::vec((1u64..120, 0i64..300), 1..60),
        reclaim in 0i64..50,
    ) {
        let p = policy(vec![hard(Signal::MemoryAvailable, q("100"), Some(ThresholdValue::Quantity(
            Quantity::from_units(reclaim, nodewarden::core::quantity::Format::DecimalSI))))]);
        let mut state = PressureState::default();
        let mut now = Duration::ZERO;
        let mut last_observed: Option<Duration> = None;
        let mut reported = false;
        for (dt, available) in steps {
            now += secs(dt);
            let (next, e) = p.evaluate(&obs(Signal::MemoryAvailable, available, 1000), &state, now);
            state = next;
            if e.observed_now["MemoryPressure"] {
                last_observed = Some(now);
            }
            let r = e.pressure["MemoryPressure"];
            if reported && !r {
                let last = last_observed.expect("was True, so observed once");
                prop_assert!(now - last >= PERIOD, "cleared {}s after last observation", (now - last).as_secs());
            }
            if e.observed_now["MemoryPressure"] {
                prop_assert!(r, "observed pressure is always reported");
            }
            reported = r;
        }
    }
}
