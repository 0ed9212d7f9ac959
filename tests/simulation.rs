//! The deterministic simulator (issue 22, `nodewarden::sim`): a seed replays exactly; with each
//! of issue 21's and 22's fixes reverted, the random search finds the defect it fixed by itself
//! (the seeds are kept as regressions); and the defects the search found that are still open,
//! and the known limits, reproduce from their seeds, so the closing note's account of them can
//! be checked. The long
//! searches run from `examples/simulate.rs` (README, *Simulation*).

use std::time::Duration;

use nodewarden::sim::world::kind;
use nodewarden::sim::{self, Event, Scenario, Settings, Violation};

/// The settings the seeds below were found with: every fix on, and the controllers keeping their
/// state through any outage of the API server. Since the thirteenth session the simulator also
/// models the controller-manager's restart after a long outage by default (`control::Leader`);
/// these seeds replay the world they were found in, and [`the_controller_manager_restarts_after_a_long_outage`]
/// pins the new model. So with the controller's passes: exactly periodic, as the seeds were found,
/// where since the fourteenth session each pass takes `pass_duration` and the next starts a period
/// after it ends. And without the probe of the kubelet's path (`Fixes::node_path`, the
/// twenty-fourth session): a cut-off agent whose probe finds the node's link up holds, which
/// also covers the returns a hung request missed, and hides most of the defects below behind it.
/// And with a node counted Ready again on its Lease's renewal, as the simulator had it until the
/// thirty-third session (`ControllerSettings::ready_on_status`). And, as every test here, with a
/// node queued for the taint in the pass that writes its Ready=Unknown ([`queued_on_write`]).
fn settings() -> Settings {
    let mut s = periodic_passes();
    s.controller.leader = None;
    s.controller.ready_on_status = false;
    s.fixes.node_path = false;
    s
}

/// `s` without the twenty-ninth session's waits of a SIGTERM (`Fixes::sigterm_read`,
/// `Fixes::sigterm_doubt`).
fn before_waits(mut s: Settings) -> Settings {
    s.fixes.sigterm_read = false;
    s.fixes.sigterm_doubt = false;
    s
}

/// `s` without the two rules of the nineteenth session: peers read this node's Node for it
/// (`Fixes::taint_read`), and the fence plans on a taint while not cut off
/// (`Fixes::fence_on_taint`). Both move stops: the first later while the Node is read without the
/// taint, the second earlier after a short return. A seed pinned before them shows the defect its
/// test guards at the moment it was found only with both off, as the build it was found on had
/// them.
fn before_reads(mut s: Settings) -> Settings {
    s.fixes.taint_read = false;
    s.fixes.fence_on_taint = false;
    s
}

/// The default model as it was until the thirty-fourth session, which every seed below was
/// found in and replays: the controller queues a node for the taint in the pass that writes its
/// Ready=Unknown, its tainting worker after that pass (`ControllerSettings::queue_on_observed`
/// off), and the agents count no monitor period before the taint (`Settings::monitor_period`
/// zero). Upstream queues the node on the next pass; [`a_node_is_queued_for_the_taint_a_monitor_period_after_it_is_written_unknown`]
/// pins that model. And, as every run judged until the forty-sixth session, with the stops
/// under a policy counted apart searched for a witness too (`Settings::judge_policy_stops`):
/// the judge's tests below weigh such stops, and the pinned counts were taken so.
fn queued_on_write() -> Settings {
    let mut s = Settings::default();
    s.controller.queue_on_observed = false;
    s.monitor_period = Duration::ZERO;
    s.judge_policy_stops = true;
    s
}

/// Since the forty-sixth session a stop under a policy counted apart is searched for a witness
/// only when a run asks (`Settings::judge_policy_stops`): it is the configured choice for a case
/// no agent can decide, a defect neither way, and the search took more than half of the CI run's
/// time. Seed 15 (the default model): two such stops, both excused by a witness when searched,
/// counted as the policy's cost when not; what the agents and the control plane did, and the
/// defects, are the same either way.
#[test]
fn a_stop_under_a_policy_counted_apart_is_searched_for_a_witness_only_when_asked() {
    let scenario = Scenario::generate(15);
    let judging = Settings {
        judge_policy_stops: true,
        ..Settings::default()
    };
    let judged = sim::run(&scenario, &judging, true);
    let counted = sim::run(&scenario, &Settings::default(), true);
    let policy = |o: &sim::Outcome| {
        o.violations
            .iter()
            .filter(|v| kind(v) == "wrongful-stop-by-policy")
            .count()
    };
    let defects = |o: &sim::Outcome| {
        o.violations
            .iter()
            .filter(|v| sim::world::is_defect(kind(v)))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(policy(&judged), 0, "{:?}", judged.violations);
    assert_eq!(policy(&counted), 2, "{:?}", counted.violations);
    assert_eq!(
        judged.indistinguishable.len(),
        counted.indistinguishable.len() + 2
    );
    let unsearched = |o: &sim::Outcome| {
        o.timeline
            .iter()
            .filter(|l| l.contains("not searched for a witness"))
            .count()
    };
    assert_eq!((unsearched(&judged), unsearched(&counted)), (0, 2));
    assert_eq!(defects(&judged), defects(&counted));
    assert_eq!(judged.stopped, counted.stopped);
    assert_eq!(judged.deleted, counted.deleted);
}

/// The default model but with the controller's passes exactly periodic, as the simulator had
/// them until the fourteenth session.
fn periodic_passes() -> Settings {
    let mut s = queued_on_write();
    s.controller.pass_duration = Duration::ZERO;
    s
}

/// The violations of `kind` that `reverted` lets through on `seed` and the fixed agent does not.
fn found(seed: u64, reverted: &Settings, kind_name: &str) -> Vec<Violation> {
    let scenario = Scenario::generate(seed);
    let with = sim::run(&scenario, &settings(), false).violations;
    sim::run(&scenario, reverted, false)
        .violations
        .into_iter()
        .filter(|v| !with.contains(v) && kind(v) == kind_name)
        .collect()
}

/// With every fix on, `seed` runs no pod twice (the guard a fixed defect's seed keeps).
fn assert_runs_nothing_twice(seed: u64) {
    let fixed = sim::run(&Scenario::generate(seed), &settings(), false);
    assert!(
        fixed.violations.iter().all(|v| kind(v) != "running-twice"),
        "seed {seed:#x}: {:?}",
        fixed.violations
    );
}

/// The first seed from 1 on which the search finds it, within `cap` scenarios.
fn search(reverted: &Settings, kind_name: &str, cap: u64) -> Option<u64> {
    (1..=cap).find(|&seed| !found(seed, reverted, kind_name).is_empty())
}

#[test]
fn a_seed_replays_exactly() {
    let scenario = Scenario::generate(0x25);
    assert_eq!(scenario, Scenario::generate(0x25));
    let a = sim::run(&scenario, &settings(), true);
    let b = sim::run(&scenario, &settings(), true);
    assert_eq!(a.timeline, b.timeline);
    assert_eq!(a.violations, b.violations);
    assert!(a.timeline.len() > 20, "{:?}", a.timeline);
    assert_ne!(Scenario::generate(0x26), scenario);
}

#[test]
fn the_search_finds_an_enforce_before_other_zones_settle_when_that_fix_is_reverted() {
    // Issue 21 item 2: a zone enforced while another zone's agent had not noticed the same
    // outage of the control plane yet. Found at the second scenario of the search.
    let mut reverted = settings();
    reverted.fixes.settled_every_zone = false;
    assert_eq!(search(&reverted, "enforce-in-outage", 50), Some(0x2));
    let v = found(0x2, &reverted, "enforce-in-outage");
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::EnforceInOutage { reason, .. }
            if reason.contains("while another zone reaches the API server"))),
        "{v:?}"
    );
}

#[test]
fn the_search_finds_a_late_kill_when_the_kubelet_lease_lag_is_reverted() {
    // The fence counted from its own last write, not from when the kubelet may last have
    // renewed the node's Lease: a pod killed after the controller deleted it. Found at the
    // 125th scenario of the search (0x7d), kept as its regression seed.
    let reverted = Settings {
        kubelet_lag: Duration::ZERO,
        ..settings()
    };
    // The search itself (`simulate --differential --revert kubelet-lag --kind running-twice`) is
    // too slow for a debug build since the judge searches for witness worlds; its seed is kept.
    assert!(found(0x7c, &reverted, "running-twice").is_empty());
    let v = found(0x7d, &reverted, "running-twice");
    assert!(
        v.iter().any(|v| matches!(
            v,
            Violation::RunningTwice {
                killed_late: true,
                ..
            }
        )),
        "{v:?}"
    );
}

#[test]
fn the_search_found_the_other_issue_21_defects_with_their_fixes_reverted() {
    // Searches too long for a debug build, replayed from the seeds they stopped at
    // (`simulate --differential --revert FIX --kind KIND`): a zone of more than 51 nodes never
    // fully disrupted (scenario 230), and a pod view blind for the client's read timeout after a
    // start into a hung API server (scenario 1478, 0x5c6).
    let mut unasked = settings();
    unasked.fixes.unasked_counted = false;
    let v = found(0xe6, &unasked, "enforce-in-outage");
    assert!(
        v.iter()
            .any(|v| matches!(v, Violation::EnforceInOutage { reason, .. }
            if reason.contains("of more than 50 nodes is still evicted"))),
        "{v:?}"
    );
    let blind = Settings {
        list_hang: Duration::from_secs(180),
        ..settings()
    };
    assert!(!found(0x5c6, &blind, "running-twice").is_empty());
    // Found at 1133 while the simulated kubelet renewed on its usual cadence after a failure
    // (the scenarios drew late watches; with the lease controller's backoff, 0x5c6 again).
    let blind_then = Settings {
        kubelet_backoff: false,
        ..blind
    };
    assert!(!found(0x46d, &blind_then, "running-twice").is_empty());
}

#[test]
fn the_search_finds_the_issue_22_defects_with_their_fixes_reverted() {
    // Found by the search and fixed (`simulate --differential --revert FIX --kind KIND`):
    // the first node of a small zone to go silent was tainted while the zone still counted as
    // healthy and kept its taint through the partial disruption that followed, while every agent
    // held (scenario 39); a silent (restarting) peer in another zone turned every zone down into
    // `peers.wholeZoneCutOff`; an agent restarted in an outage counted from the contact on its
    // disk, older than its peers', and stopped pods the control plane kept (both scenario 2).
    let mut staggered = settings();
    staggered.fixes.staggered_expiry = false;
    assert!(!found(0x27, &staggered, "running-twice").is_empty());
    // Since the nudges (twelfth session) the search met it first at scenario 17, 0x11, an open
    // seed whose pod 1 ran 0.7 s twice with the fix and 2.0 s without it; since the twenty-second
    // session that counts apart (every node was cut off until moments before the deletion, and
    // the stop came within the agents' reaction: below), and the search meets it at 0x27 again,
    // the seed it was found on.
    assert_eq!(search(&staggered, "running-twice", 60), Some(0x27));
    let mut silent = settings();
    silent.fixes.silent_peer_ignored = false;
    assert!(!found(0x2, &silent, "enforce-in-outage-by-policy").is_empty());
    // (Since the sixteenth session no node reaching the API server holds whenever each lost it,
    // which covers this restart as well: `everyone_cut_off` is reverted with it.)
    let mut restart = settings();
    restart.fixes.restart_heard = false;
    restart.fixes.everyone_cut_off = false;
    assert!(!found(0x2, &restart, "wrongful-stop").is_empty());
    restart.fixes.restart_heard = true;
    assert!(found(0x2, &restart, "wrongful-stop").is_empty());
    // Every zone taken for down on two peers of another zone, both cut off, while the rest of
    // it reached the API server: the cut-off zone was evicted while the fence held (scenario
    // 207 of the search, 0xcf; 0x11d ran a pod 138 s twice). The rest are asked now.
    let mut asked = settings();
    asked.fixes.other_zones_asked = false;
    assert!(!found(0xcf, &asked, "running-twice").is_empty());
    assert!(!found(0x11d, &asked, "running-twice").is_empty());
    // An agent restarted mid-partition counted itself heard until its start and waited 35 s
    // for its rounds to settle, although its previous run had stopped cut off (scenario 144 of
    // the search, 0x90: 30 s running twice; 0xa0b, open until now, 12-15 s). Since verdicts
    // settle early, those two stop on time with only this fix reverted; the search finds it at
    // scenario 408 (0x198: a pod 59 s twice), and the first two showed it again with both fixes
    // reverted. Since the quorum settles 30 s after the last contact, not 35 s (fourteenth
    // session), 0x90 stops its pods on time even then; 0xa0b still runs three 7-10 s twice.
    // Since peers read a restarted agent's kubelet Lease for it (fifteenth session), its
    // kubelet's last renewal bounds when it was heard as the contact on disk does, so this fix
    // shows only where no peer can read it (`lease_heard` off: an identity without `get` on
    // Leases, a wall step between the two runs). Since the simulated controller swaps its
    // limiters in empty, as upstream's does (twenty-sixth session), 0xa0b runs no pod twice even
    // with all three reverted; the search meets the defect first at 0x15e then. Since a peer's
    // read of the Node queued for the taint settles a pending verdict (thirty-seventh session,
    // `Fixes::queue_read_settles`), 0x198 shows it only with that rule off too.
    let mut resumed = settings();
    resumed.fixes.resumed_cut_off = false;
    resumed.fixes.lease_heard = false;
    resumed.fixes.queue_read_settles = false;
    assert!(!found(0x198, &resumed, "running-twice").is_empty());
    resumed.fixes.settled_early = false;
    assert!(!found(0x15e, &resumed, "running-twice").is_empty());
    // A wall step back between two runs: the restarted fence took the contact on its disk,
    // which read as later than now, for now, and counted its deadlines from its start (scenario
    // 2,279 of the search, 0x8e7: 45 s running twice; 0x14e8, open until now, 25 s).
    // (Since the seventeenth session the contact file names the system clock's scale at its
    // write, and its time read as it stands is then already on the next run's clock unless the
    // step came while no agent ran: reverted with it, as the build it was found on wrote it.)
    let mut unscaled = settings();
    unscaled.fixes.wall_scale_carried = false;
    unscaled.fixes.system_scale_written = false;
    assert!(!found(0x8e7, &unscaled, "running-twice").is_empty());
    assert!(!found(0x14e8, &unscaled, "running-twice").is_empty());
    assert_runs_nothing_twice(0x8e7);
    // A link back for 5.5 s between two cuts, in which the kubelet's renewal did not fall:
    // the fence counted from the contact made then, and stopped a pod 14 s after its deletion
    // (scenario 208 of the search, 0xd0). A contact now counts only once it comes the kubelet's
    // lag after the first one past a failure, and the agent renews then to prove it.
    let mut returned = settings();
    returned.fixes.kubelet_after_return = false;
    assert!(!found(0xd0, &returned, "running-twice").is_empty());
    assert_runs_nothing_twice(0xd0);
    // An agent killed just after its link was cut, restarted 18 s later, counted itself heard
    // until its start and waited 35 s from there for its rounds to settle; the controller had
    // judged the node by its kubelet's renewal before the cut and deleted two pods 7-9 s before
    // the fence stopped them (scenario 522 of the search, 0x20a). Peers of the other zones that
    // reached the API server 20 s after that start settled it 12 s sooner: an enforce that no
    // answer still to settle can change is settled at once (`core::quorum::settled_early`).
    // (Where no peer reads the restarted agent's kubelet Lease for it: with that read, its
    // renewal before the cut bounds its hearing, and its rounds settle on time either way.)
    // (And where its peers' read of the taint does not settle it, since the twentieth session,
    // nor their read of its Node queued for the taint, since the thirty-seventh: reverted too,
    // as the build it was found on had them.)
    let mut waited = settings();
    waited.fixes.settled_early = false;
    waited.fixes.lease_heard = false;
    waited.fixes.taint_read_settles = false;
    waited.fixes.queue_read_settles = false;
    assert!(!found(0x20a, &waited, "running-twice").is_empty());
    assert_runs_nothing_twice(0x20a);
    // A node the controller could taint before an outage of the API server held through it and,
    // enforcing again after it, counted from the end of the hold; the taint added before the
    // outage stayed, and the taint eviction controller deleted a pod for it (scenario 600 of the
    // search, 0x258: 23.8 s running twice, 1.7 s with the fix, the agent's first round after
    // the return; 0x591: 38 s, none with it). A hold that began after the node could be tainted
    // no longer moves its deadlines.
    let mut resumed_hold = before_reads(settings());
    resumed_hold.fixes.taint_outlasts_hold = false;
    assert!(!found(0x258, &resumed_hold, "running-twice").is_empty());
    assert!(!found(0x591, &resumed_hold, "running-twice").is_empty());
    assert_runs_nothing_twice(0x591);
    // A peer's renewal sent after a failure hung across the API server's return until its 10 s
    // timeout: the peer told the cut-off node it reached the API server only 2.4 s after the
    // return, and a pod tolerating `unreachable` for 0 s ran 0.7 s past its deletion (scenario
    // 142 of the search, 0x8e). The heartbeat probes the API server every second while such a
    // renewal hangs and renews at once when a probe is answered (`agent::heartbeat`).
    // Found before the nudges (below), and shown without them. With them, the first agent back
    // told the peers whose renewals hung; each read its own Lease, renewed at once and told the
    // cut-off node in turn. The search then meets the probe's absence first at 0x11 (pod 1 runs
    // 1.2 s twice, 0.7 s with the probe).
    let unprobed = Settings {
        probe: None,
        nudge: false,
        ..settings()
    };
    assert!(!found(0x8e, &unprobed, "running-twice").is_empty());
    assert_runs_nothing_twice(0x8e);
    // Peers heard of a return only at their next round (the twelfth session's search, on
    // 1-10,000 of the run). 0x24, scenario 36: after an outage of the API server for everyone,
    // one agent renewed first, and others asked their peers before their own renewals went
    // through; one enforced and stopped two pods 150 ms before the API server failed again, and
    // the control plane kept them. 0x75, scenario 117: a node of a zone of two held while every
    // node was cut off, and heard of the other zones' return at its next round, 68 ms after the
    // controller deleted two of its pods. A peer back now tells the cut-off nodes it answered
    // "cut off"; each reads its own Lease at once, and renews if that is answered or asks its
    // peers at once if not (`agent::quorum::Nudges`).
    let unnudged = Settings {
        nudge: false,
        ..settings()
    };
    assert!(!found(0x24, &unnudged, "wrongful-stop").is_empty());
    let told = sim::run(&Scenario::generate(0x24), &settings(), false);
    assert!(told.violations.is_empty(), "{:?}", told.violations);
    assert!(!found(0x75, &unnudged, "running-twice").is_empty());
    assert_runs_nothing_twice(0x75);
    // The controller tainted a node as an outage of the API server ended, before its kubelet
    // renewed; the node's agent, back for 25 s, saw the taint on its Node and was cut off again
    // before the controller removed it. The taint eviction controller deleted a pod tolerating
    // 19 s for that taint, and the fence, counting from its contact after the return, stopped it
    // 30 s late (scenario 5,320 of the search, 0x14c8). It now counts from the `timeAdded` of an
    // unreachable taint its Node carried when last seen: 4.4 s late, the time it takes to know
    // itself cut off and settle its verdict (`fence_plan::plan`). (Replayed without the
    // kubelets' node status, as found: since the twenty-second session the kubelet posts its
    // status in the return, the controller hears the node by it and removes the taint before
    // the cut, and the pod is deleted only for a later taint, after the fence stopped it.)
    let found = Settings {
        kubelet_status: false,
        ..settings()
    };
    let mut unseen = found;
    unseen.fixes.seen_taint = false;
    let ran_for = |seed: u64, pod: usize, settings: &Settings| {
        sim::run(&Scenario::generate(seed), settings, false)
            .violations
            .iter()
            .find_map(|v| match v {
                Violation::RunningTwice {
                    pod: p, ran_for, ..
                } if *p == pod => Some(*ran_for),
                _ => None,
            })
    };
    // Since the simulated controller swaps its limiters in empty, as upstream's does
    // (twenty-sixth session), that taint comes a limiter period later, after the node's second
    // cut: the agent never sees it, and pod 18 runs 20 s twice with every fix on. It is the open
    // class of a return counted as proved once it lasted the kubelet's lag, while the kubelet,
    // backing off after the outage, had not renewed (BENCHMARKS.md, *The tainting limiter
    // swapped in empty*; 0xa7 with keep-state). The kubelet's node status, posted in the return,
    // hides it. Since the thirty-third session the Node the agent saw in the return, recorded
    // Unknown (no status posted in this model), counts from that write
    // (`Fixes::unknown_queued`): the pod is stopped in time. Since the thirty-fifth session the
    // peers' answers carry the taint's `timeAdded` (`Fixes::node_times_read`), which stops it in
    // time as well: the open class is replayed without both.
    let mut unqueued = found;
    unqueued.fixes.unknown_queued = false;
    unqueued.fixes.node_times_read = false;
    let mut times_read = unqueued;
    times_read.fixes.node_times_read = true;
    assert_eq!(ran_for(0x14c8, 18, &times_read), None);
    let open = ran_for(0x14c8, 18, &unqueued);
    assert!(
        open.is_some_and(|t| t > Duration::from_secs(19) && t < Duration::from_secs(21)),
        "{open:?}"
    );
    unseen.fixes.unknown_queued = false;
    unseen.fixes.node_times_read = false;
    assert_eq!(ran_for(0x14c8, 18, &unseen), open);
    assert_eq!(ran_for(0x14c8, 18, &found), None);
    assert_eq!(
        ran_for(
            0x14c8,
            18,
            &Settings {
                kubelet_status: true,
                ..found
            }
        ),
        None
    );
    // The fix is now pinned on 0x46d, the first seed of the search with it reverted in this
    // model: 27 s twice without it, 12.8 s with it but without the nineteenth session's two
    // rules ([`before_reads`]). (Both without the thirty-third session's count from a Node
    // recorded Unknown, which covers this return as well.)
    assert!(ran_for(0x46d, 5, &unseen).is_some_and(|t| t > Duration::from_secs(25)));
    assert!(
        ran_for(0x46d, 5, &before_reads(unqueued)).is_some_and(|t| t < Duration::from_secs(15))
    );
    // Since the nineteenth session the fence plans on the taint it saw while its link was back
    // (`Fixes::fence_on_taint`): the pod is stopped before its deletion, in the return.
    assert_eq!(ran_for(0x46d, 5, &found), None);
    unseen.kubelet_status = true;
    assert_eq!(ran_for(0x46d, 5, &unseen), None);
}

/// The agent's probes (`agent::heartbeat`) run only while the renewal they watch hangs: one a
/// second, fewer than its timeout has seconds, and none once it is answered. (They once went on
/// after it, a chain more for each failed renewal.)
#[test]
fn probes_stop_when_the_renewal_they_watch_is_answered() {
    let settings = settings();
    let most = settings.request_timeout.as_secs() as usize - 1;
    let (mut renewals, mut probes) = (0, 0);
    for seed in 1..=150u64 {
        let outcome = sim::run(&Scenario::generate(seed), &settings, false);
        assert!(
            outcome.probes <= outcome.probed_renewals * most,
            "seed {seed:#x}: {} probes for {} probed renewals",
            outcome.probes,
            outcome.probed_renewals
        );
        renewals += outcome.probed_renewals;
        probes += outcome.probes;
    }
    // The sweep has renewals that hung after a failure, and probes for them.
    assert!(renewals > 100 && probes > renewals, "{renewals} {probes}");
}

#[test]
fn open_defects_and_known_limits_reproduce_from_their_seeds() {
    // Still open (README, *Simulation*), each pinned so the closing note's account can be
    // checked; when one is fixed, its assertion turns into the guard. `kinds` lists the kinds a
    // seed shows with every fix on.
    let kinds = |seed: u64| -> Vec<&'static str> {
        sim::run(&Scenario::generate(seed), &settings(), false)
            .violations
            .iter()
            .map(kind)
            .collect()
    };
    // Known limit: the first node of a cluster whose every node goes silent is tainted until
    // every zone is fully disrupted; a pod tolerating less than that is deleted, and no agent can
    // tell this from an outage of the API server, where it must hold. (Seed 0x25 showed it with
    // the kubelet renewing on its usual cadence after a failure, as the simulator modelled it
    // when the seed was found; since the twenty-second session its pod 3 runs on only until a
    // replacement can start, once a node's kubelet posts Ready=True, and it was stopped before.
    // Seed 0x1b5c shows it now: pod 0, 69 ms.)
    let fixed_cadence = Settings {
        kubelet_backoff: false,
        ..settings()
    };
    let kinds_then = |seed: u64| -> Vec<&'static str> {
        sim::run(&Scenario::generate(seed), &fixed_cadence, false)
            .violations
            .iter()
            .map(kind)
            .collect()
    };
    assert!(
        kinds_then(0x25)
            .iter()
            .all(|k| !k.starts_with("running-twice"))
    );
    assert!(kinds(0x1b5c).contains(&"running-twice-transient-taint"));
    assert!(!kinds(0x1b5c).contains(&"running-twice"));
    // Known limit (it was open): a peer restarting during an outage of the whole control plane
    // is silent, counted as reaching the API server, and its zone looks healthy → enforce. The
    // verdict now says it rests on the silent peer, and such violations are counted apart.
    assert!(kinds(0x3b).contains(&"enforce-in-outage-by-policy"));
    assert!(!kinds(0x3b).contains(&"enforce-in-outage"));
    // Open, in part: when the kubelets renew the Leases, no agent can tell which node of a
    // partially disrupted zone the controller judged first, so all of them enforce and stopped
    // their pods though the controller tainted none. Since the nineteenth session their peers
    // that reach the API server read each one's Node for it, and no deadline counts from before
    // a read without the taint, less `READ_SLACK` (`Fixes::taint_read`): pods 9 and 10 are
    // kept; 6 and 12, tolerating 25 s and 40 s with 30 s of SIGTERM grace, were still signalled
    // before the first read until, in the twenty-ninth session, a SIGTERM under such a guessed
    // enforce waited for a peer to read the taint (`Fixes::sigterm_doubt`).
    let wrongful = |settings: &Settings| -> Vec<usize> {
        sim::run(&Scenario::generate(0x14), settings, false)
            .violations
            .iter()
            .filter_map(|v| match v {
                Violation::WrongfulStop { pod, .. } => Some(*pod),
                _ => None,
            })
            .collect()
    };
    assert_eq!(wrongful(&settings()), Vec::<usize>::new());
    // Since the thirty-second session the judge also lets the zone's tainting queue take the
    // stopping node first from its stop on (upstream's order among waiting nodes is any): without
    // the waits, pods 6 and 12 are excused that way. Without the reads (below) they are not.
    assert_eq!(wrongful(&before_waits(settings())), Vec::<usize>::new());
    // Since the thirty-first session the zone as recorded (`Fixes::zone_recorded`) keeps pods 9
    // and 10 without the reads as well: the controller had recorded the zone partially disrupted
    // before they were due.
    // And since the thirty-eighth session a peer back reads the zone for the nodes it nudged
    // (`Fixes::nudger_reads`), which keeps pods 6 and 12 without the reads too.
    assert_eq!(wrongful(&before_reads(settings())), Vec::<usize>::new());
    let mut unnudged = before_reads(settings());
    unnudged.fixes.nudger_reads = false;
    assert_eq!(wrongful(&unnudged), [6, 12]);
    let mut unread = before_reads(settings());
    unread.fixes.zone_recorded = false;
    assert_eq!(wrongful(&unread), [6, 10, 9, 12]);
    // Fixed (it ran a pod 138 s twice, then 12 s): another zone taken for down on two of its
    // peers, and a restarted agent's resumed enforce replaced by its unsettled rounds' pending.
    assert!(!kinds(0x11d).contains(&"running-twice"));
    // Counted apart since the twenty-second session (it was open): a node that heals half a
    // second after its neighbours ran a pod the control plane deleted while every node was cut
    // off and every agent held, beside its replacement, for that half second; 0.67 s after the
    // first node came back, within the agents' reaction. In the default model the pod is
    // deleted 0.5 s after that return and stopped 0.67 s after it: counted apart too.
    assert!(kinds(0x11).contains(&"running-twice-every-node-cut-off"));
    assert!(!kinds(0x11).contains(&"running-twice"));
    assert!(running_twice(0x11, &queued_on_write()).is_empty());
    // Fixed (found by the 10,000-scenario run): an agent restarted during an outage of the
    // whole control plane and cut off again as the API server returns counted itself heard
    // until its start, so its verdict settled 35 s after the start, and the node's
    // short-tolerating pods ran 12-15 s past their deletion. Its previous run had stopped cut
    // off: it now counts from the contact on its disk.
    assert!(!kinds(0xa0b).contains(&"running-twice"));
    // Fixed (found once the scenarios step the nodes' wall clocks): a node's clock stepped back
    // 109 s, its agent restarted, and the contact on its disk read as later than now was taken
    // for now, so it told its peers it reached the API server in an outage of everyone, and they
    // enforced. Such a contact is now unknown. Seed 0x1261 (the same, with a silent peer) made
    // the quorum overflow adding to the age of an unknown contact.
    assert!(!kinds(0xd9d).contains(&"enforce-in-outage"));
    assert!(kinds(0x1261).iter().all(|k| !k.is_empty()));
    // Fixed: the fence's own deadlines after the same step back and restart started from the
    // restart (the contact on disk read as later than now), 47 s late: a pod ran 25 s twice.
    // Each file now names its writer's place on the boot clock, and a restart carries the
    // times onto its own scale (`core::clock::Scale`).
    assert!(!kinds(0x14e8).contains(&"running-twice"));
    // Found once the pod watches are late: a pod created seconds before its node's link was
    // cut; the kubelet's watch delivered it and the kubelet started it, the agent's watch had
    // not, and the agent never knew the pod. Fixed (twentieth session) where a peer that reaches
    // the API server answers: the agent, cut off, asks its peers about the pods whose cgroups it
    // finds and its view lacks, and plans those a peer lists (`Fixes::pods_read`). Seed 0x1e1
    // (93 s, while the kubelet renewed on its usual cadence after a failure) is fixed so. Since
    // the twenty-seventh session the agent also lists its node's pods itself as the pod's
    // cgroup appears, before the cut (`Fixes::cgroup_listed`), which fixes 0x1e1 on its own:
    // each fix is checked here with the other off.
    let late = |seed: u64, s: &Settings| {
        sim::run(&Scenario::generate(seed), s, false)
            .violations
            .iter()
            .any(|v| kind(v) == "running-twice-late-watch")
    };
    let mut read = fixed_cadence;
    read.fixes.cgroup_listed = false;
    let mut unread = read;
    unread.fixes.pods_read = false;
    let mut listed = fixed_cadence;
    listed.fixes.pods_read = false;
    assert!(late(0x1e1, &unread) && !late(0x1e1, &read) && !late(0x1e1, &listed));
    assert!(!kinds_then(0x1e1).contains(&"running-twice-late-watch"));
    // Open until the twenty-seventh session where no peer lists the pod: seed 0x57d, 52 of a
    // zone of 53 cut off and the one node that reaches the API server silent to them; the pod,
    // created 4.2 s before the cut (the agent's watch 9.4 s late), ran 62 s past its deletion.
    // The agent's own list as its cgroup appeared fixes it.
    let mut unlisted = settings();
    unlisted.fixes.cgroup_listed = false;
    assert!(late(0x57d, &unlisted));
    assert!(!kinds(0x57d).contains(&"running-twice-late-watch"));
    // Fixed (nineteenth session; found with a pod created just before a cut): the controller
    // tainted the node a second after an outage of the API server; the agent reconnected, and
    // the link was cut again before the controller removed the taint. The controller deleted a
    // pod tolerating 4 s for that taint; the fence's deadline had passed (its contact after the
    // return was too short to count), but it knows itself cut off only `unreachableAfter` after
    // its last contact, and its verdict settles 6 s later: 16 s late (32 s when found, 14 s once
    // verdicts settled early). The fence now plans on the taint its Node carries while not cut
    // off (`Fixes::fence_on_taint`).
    assert!(!kinds(0x292).contains(&"running-twice"));
    assert!(
        sim::run(&Scenario::generate(0x292), &before_reads(settings()), false)
            .violations
            .iter()
            .any(|v| kind(v) == "running-twice")
    );
}

#[test]
fn a_fenced_pod_the_kubelet_restarts_in_a_short_return_is_killed_again() {
    // Seed 0x119d: the fence killed a pod; the link came back for 3.6 s, too short to count as
    // contact, and the kubelet started the pod again; then the link was cut again and the
    // controller deleted the pod. The fence task's sweep kills a fenced pod's new processes
    // while cut off: without it in the simulator this ran 143 s twice.
    // (Since the nineteenth session the fence also plans on the taint while the link is back,
    // and stops the pod in the return itself: the sweep shows with that rule off.)
    let o = sim::run(&Scenario::generate(0x119d), &before_reads(settings()), true);
    assert!(
        o.timeline
            .iter()
            .any(|l| l.contains("n1 sweeps pod 3 again")),
        "{:#?}",
        o.timeline
    );
    assert!(o.violations.is_empty(), "{:?}", o.violations);
    let o = sim::run(&Scenario::generate(0x119d), &settings(), true);
    assert!(o.violations.is_empty(), "{:?}", o.violations);
}

#[test]
fn some_scenarios_have_late_pod_watches() {
    // Drawn last (the seeds kept above keep their other draws): about 30 % of the scenarios give
    // every node's agent and kubelet a watch lag, a few of them seconds long.
    let lagged = (1..=1_000u64)
        .filter(|&seed| {
            let s = Scenario::generate(seed);
            s.agent_watch_lag.iter().any(|l| !l.is_zero())
        })
        .count();
    assert!((200..=400).contains(&lagged), "{lagged} of 1,000");
    let s = Scenario::generate(0x1e1);
    assert_eq!(s.agent_watch_lag[2], Duration::from_millis(9_408));
}

#[test]
fn the_judge_counts_no_stop_wrongful_that_a_world_it_cannot_see_would_need() {
    // Seed 0x55: a node tainted, then the API server down for everyone before the taint's
    // pods were due. The fence stops one on time; the controller deletes it for that taint as
    // soon as the API server is back. Judged while the API server was down, the stop looked
    // needless; judged by the end of the run it was early. The timeline says which.
    // (With `everyone_cut_off`, since the sixteenth session, the fence holds there once no
    // node reaches the API server, and nothing is stopped to judge: this is the judge's test.)
    let mut before = before_reads(settings());
    before.fixes.everyone_cut_off = false;
    let o = sim::run(&Scenario::generate(0x55), &before, true);
    assert!(
        o.violations.iter().all(|v| kind(v) != "wrongful-stop"),
        "{:?}",
        o.violations
    );
    assert!(
        o.timeline
            .iter()
            .any(|l| l.contains("was early: the controller deleted it for that taint")),
        "the deferred judgement was never exercised"
    );
    // Seed 0x5a, a zone of 40 (0x56 until restarted agents renewed at once in the simulation,
    // as `agent::heartbeat` does: its agents then no longer stopped a pod that needed a
    // witness): stops this run's own world leaves unexplained are excused through witness
    // worlds (kubelets renewing at other instants before their cuts, anchored so the renewals'
    // jitter cannot move them), and none is left wrongful. Run as the agents decided before
    // verdicts settled early and deadlines outlasted a hold, as 0x56 was.
    let mut as_found = settings();
    as_found.fixes.settled_early = false;
    as_found.fixes.taint_outlasts_hold = false;
    let o = sim::run(&Scenario::generate(0x5a), &as_found, false);
    assert!(!o.indistinguishable.is_empty());
    assert!(
        o.violations.iter().all(|v| kind(v) != "wrongful-stop"),
        "{:?}",
        o.violations
    );
}

#[test]
fn the_judge_weighs_a_stop_by_what_could_be_known_when_it_was_made() {
    let run = |seed: u64| sim::run(&Scenario::generate(seed), &settings(), false);
    let wrongful = |o: &sim::Outcome| {
        o.violations
            .iter()
            .filter(|v| kind(v) == "wrongful-stop")
            .count()
    };
    // Seed 0x114: the node's link came back before the control plane deleted the pod it had
    // begun to stop; had the partition gone on, the pod was deleted in time. No agent sees the
    // end of its partition coming. (As the agents stopped pods before their SIGTERMs waited:
    // the stop was under the staggered expiry's guess, and since the twenty-ninth session its
    // SIGTERM waits for the taint. The pod is then stopped only after the return, on a taint
    // the controller removed 59 ms later, which is judged wrongful: the stop the old build also
    // made then, unjudged behind its first.)
    let o = sim::run(&Scenario::generate(0x114), &before_waits(settings()), false);
    assert!(o.ended_after_stop > 0, "{:?}", o.violations);
    assert_eq!(wrongful(&o), 0, "{:?}", o.violations);
    // Seed 0xe2: the API server went down for everyone five seconds before the stops, while
    // every peer still said it reached it (its last contact was seconds old). Seven stops were
    // wrongful before the judge tried the world in which that outage was a partition of every
    // node from a control plane that stayed up until it had judged the node.
    let o = run(0xe2);
    assert!(o.outage_as_partition > 0, "{:?}", o.violations);
    assert_eq!(wrongful(&o), 0, "{:?}", o.violations);
    // Seed 0x14: stops a second after the API server came back, while the peers still cut off
    // had not renewed yet. Until the thirty-second session the witness brought their links back
    // with the server, where the controller saw a healthy zone and deleted the pods. Now a world
    // with one change fewer suffices for most: the kubelets renewed just before their cuts, after
    // the controller's last pass before the outage, so its first pass after the return counts
    // those renewals fresh and the zone healthy, and its queue takes the stopping node first.
    let o = run(0x14);
    assert!(o.first_in_queue > 0, "{:?}", o.violations);
    assert_eq!(wrongful(&o), 0, "{:?}", o.violations);
    // Seed 0x778: n3 stops pod 7 at 159.1 s, 63 s after the API server's return; only with every
    // other node's link back with the server is the pod deleted by then.
    let o = run(0x778);
    assert!(o.others_back > 0, "{:?}", o.violations);
    assert_eq!(wrongful(&o), 0, "{:?}", o.violations);
    // Seed 0x117: a witness world anchored the kubelet of a node that had gone silent long
    // before this one just before its cut, which delayed this node's taint behind it; anchored
    // as early as its cut allows, the node is tainted (and the pod deleted) in time.
    assert_eq!(wrongful(&run(0x117)), 0);
}

#[test]
fn a_sweep_exercises_the_fence_and_the_control_plane() {
    // Not vacuous: across forty scenarios the control plane deletes pods and the fence stops
    // some, well before the deletion on the whole (earliness is positive for most).
    let (mut stops, mut deletions, mut early) = (0, 0, 0);
    let mut earliness = 0usize;
    for seed in 1000..1040 {
        let o = sim::run(&Scenario::generate(seed), &settings(), false);
        stops += o.stops;
        deletions += o.deletions;
        earliness += o.earliness_ms.len();
        early += o.earliness_ms.iter().filter(|e| **e > 0).count();
    }
    assert!(stops > 20, "{stops} stops");
    assert!(deletions > 20, "{deletions} deletions");
    assert!(
        earliness > 0 && early * 10 >= earliness * 9,
        "{early} of {earliness}"
    );
}

#[test]
fn a_dead_link_may_refuse_at_once_and_a_restarted_agent_renews_at_once() {
    // Drawn last too: about 30 % of the scenarios make about half of their nodes' dead links
    // refuse at once (a proxy's 503) instead of hanging each request for its timeout.
    let refusing = (1..=1_000u64)
        .filter(|&seed| Scenario::generate(seed).refusing.iter().any(|r| *r))
        .count();
    assert!((200..=400).contains(&refusing), "{refusing} of 1,000");
    // Seed 0xb: n1's link is cut at 90.588 s and its agent restarts at 114.304 s. Its first
    // renewal goes out at its start (`agent::heartbeat`'s first tick) and is refused at once:
    // cut off 30 ms later. Through a link that hangs, the same renewal fails only after the
    // request timeout; but peers read its kubelet Lease at its start, unheard since before the
    // cut 24 s earlier, and it is cut off at once (`quorum::kubelet_unheard`).
    let cut_off_after_start = |s: &Scenario, settings: &Settings| {
        let o = sim::run(s, settings, true);
        // The instants of the timeline's lines that say `needle`.
        let times = |needle: &str| -> Vec<f64> {
            o.timeline
                .iter()
                .filter(|l| l.contains(needle))
                .filter_map(|l| {
                    l.split_whitespace()
                        .next()?
                        .trim_end_matches('s')
                        .parse()
                        .ok()
                })
                .collect()
        };
        let started = *times("n1 agent starts (run 2)")
            .first()
            .expect("n1 restarts");
        let cut = times("n1 cut off")
            .into_iter()
            .find(|t| *t >= started)
            .expect("n1 cut off after its restart");
        cut - started
    };
    let refused = Scenario::generate(0xb);
    assert!(refused.refuses(1));
    let after = cut_off_after_start(&refused, &settings());
    assert!(after < 0.1, "cut off {after} s after the restart");
    let mut hanging = refused.clone();
    hanging.refusing = vec![false; hanging.nodes()];
    let mut unread = settings();
    unread.fixes.unheard_at_start = false;
    let after = cut_off_after_start(&hanging, &unread);
    assert!(after >= 10.0, "cut off {after} s after the restart");
    let after = cut_off_after_start(&hanging, &settings());
    assert!(after < 0.1, "cut off {after} s after the restart");
}

/// A hand-built zone of three nodes, renewing at fixed phases, the controller's pass at 1.234 s,
/// with one pod on node 0 tolerating the unreachable taint for `toleration` seconds.
fn three_nodes(
    toleration: Option<u64>,
    events: Vec<(Duration, sim::Event)>,
    length: Duration,
) -> Scenario {
    Scenario {
        seed: 0,
        zones: vec![3],
        agent_phase: vec![Duration::from_secs(1); 3],
        kubelet_phase: vec![
            Duration::from_secs(2),
            Duration::from_secs(3),
            Duration::from_secs(4),
        ],
        kubelet_anchor: vec![None; 3],
        monitor_phase: Duration::from_millis(1_234),
        queue_first: None,
        agent_watch_lag: vec![Duration::from_millis(50); 3],
        kubelet_watch_lag: vec![Duration::from_millis(50); 3],
        refusing: vec![false; 3],
        pods: vec![sim::PodSpec {
            node: 0,
            toleration,
            not_ready: toleration,
            grace: 0,
        }],
        events,
        length,
    }
}

/// The default model: kube-controller-manager loses its leader lease in an outage of the API
/// server longer than the renew deadline, and the process that takes over removes every taint at
/// its first pass and taints the nodes still recorded Unknown again (docs/semantics.md §5.2,
/// §4.3). A pod tolerating 60 s on a node tainted before a 30 s outage is deleted 60 s after the
/// new taint, not for its first timer as soon as the API server answers.
#[test]
fn the_controller_manager_restarts_after_a_long_outage() {
    let origin = Duration::from_secs(1_000);
    let scenario = three_nodes(
        Some(60),
        vec![
            (Duration::from_secs(10), sim::Event::CutApi(0)),
            (Duration::from_secs(100), sim::Event::ApiDown),
            (Duration::from_secs(130), sim::Event::ApiUp),
            // Created on the tainted node while the new process waits for the old lease.
            (
                Duration::from_secs(135),
                sim::Event::Create(sim::PodSpec {
                    node: 0,
                    toleration: Some(2),
                    not_ready: Some(2),
                    grace: 0,
                }),
            ),
        ],
        Duration::from_secs(400),
    );
    let deletion = |settings: &Settings| {
        let out = sim::run(&scenario, settings, false);
        let at = out.deleted[0].expect("the pod is deleted");
        let taint = out.deleted_for[0].expect("for a taint");
        (at - origin, taint - origin)
    };
    // Kept state: tainted about 50 s in, its 60 s timer runs out in the outage, and the delete
    // goes through as soon as the API server answers (130 s, retried each second).
    let (kept, taint) = deletion(&settings());
    assert!(taint < Duration::from_secs(60), "tainted at {taint:?}");
    assert!(
        kept >= Duration::from_secs(130) && kept <= Duration::from_secs(131),
        "deleted at {kept:?}"
    );
    // Restarted: the new process leads from 145 s; its first pass (146.234 s) removes the taint
    // and queues the node, still recorded Unknown, and its tainting worker, whose limiter starts
    // full, taints it again at once: deleted 60 s later, for the new taint.
    // (Exactly periodic passes, as in `settings()`, so that the instants are round.)
    let restart = periodic_passes();
    let (restarted, again) = deletion(&restart);
    assert_eq!(again, Duration::from_millis(146_234));
    assert_eq!(restarted, Duration::from_millis(206_234));
    // The pod created at 135 s, tolerating 2 s: no timer runs before the new process leads; it
    // is deleted 2 s after that first pass, not at 137 s.
    let out = sim::run(&scenario, &restart, false);
    assert_eq!(
        out.deleted.get(1).copied().flatten().map(|d| d - origin),
        Some(Duration::from_millis(148_234))
    );
}

/// Upstream's tainting queue takes the nodes waiting in it in any order (each monitor pass queues
/// every untainted node found Unknown afresh, in parallel workers), which no agent sees. Seed
/// 0x1abf: all 42 nodes of zone-0 lose the API server, 13 of them 47 s before the rest, and the
/// controller taints the zone's nodes one every 10 s while it counts as healthy or fully
/// disrupted. Fifteen pods of the later nodes are stopped on the whole zone's cut, tainted in node
/// order after the early nodes, or not at all once the zone is partially disrupted; had the queue
/// taken each stopping node first from its stop on, it would have been tainted at the next token.
/// Those stops are excused, and only there: n39's pod 76 (14 s) is still a wrongful stop, the one
/// token its node could have had coming before its stop.
#[test]
fn the_judge_lets_a_zones_queue_take_the_stopping_node_first() {
    let o = sim::run(&Scenario::generate(0x1abf), &queued_on_write(), true);
    assert_eq!(o.first_in_queue, 15, "{:?}", o.violations);
    assert_excused(
        &o,
        36,
        &["its zone's tainting queue taking it first from the stop on"],
    );
    assert_eq!(
        wrongful_stops(&Scenario::generate(0x1abf), &queued_on_write()),
        [76]
    );
}

/// A node cut off from its peers and from the API server is silent: no peer sees whether it still
/// reaches the API server, and one silent since before a node's own cut counts by what it last
/// answered. Seed 0x85e: n19, n20 and n21 of zone-1 (five nodes) lose both links at 211 s; n22
/// loses the API server at 226.8 s, hears n23 reach it, enforces as in a healthy zone and stops pod
/// 41 (tolerating 0 s) at 244.7 s. The controller judges the three first, records the zone
/// partially disrupted at 251.5 s and never taints n22. Had the three kept the API server, it
/// would have tainted n22 and deleted the pod by the judgement: no agent can tell.
#[test]
fn the_judge_lets_the_nodes_cut_off_from_their_peers_keep_the_api_server() {
    let o = sim::run(&Scenario::generate(0x85e), &queued_on_write(), true);
    assert_eq!(o.silent_kept_api, 1, "{:?}", o.violations);
    assert_excused(
        &o,
        41,
        &["the nodes cut off from their peers keeping the API server"],
    );
}

/// An outage of the API server for everyone, over before a stop, may have been every node's link
/// cut from a live control plane: the agents see the same. No controller-manager restarts there,
/// and the control plane taints a node it judged before as soon as the zone allows. Seed 0x56
/// (the default model): n10 stops pod 19 at 261.8 s, after the API server's return at 209.7 s; the
/// restarted controller-manager keeps the pod, a live one would have deleted it by then. The stop
/// is excused, and the timeline says by which world.
#[test]
fn the_judge_excuses_a_stop_after_an_outage_that_a_live_control_plane_would_make() {
    let o = sim::run(&Scenario::generate(0x56), &queued_on_write(), true);
    assert!(o.outage_over_as_partition >= 1, "{:?}", o.violations);
    assert_excused(
        &o,
        19,
        &["a partition of every node from a live control plane"],
    );
}

/// An outage of the API server for everyone that no agent could see yet when a pod was stopped
/// may have been every node's link cut from a control plane that stayed up: the agents see the
/// same, and that control plane deletes the pods whose tolerations run out before every zone
/// counts as fully disrupted. Seed 0x1058 (the default model): n15, cut off alone at 126.8 s,
/// stops pod 35 (tolerating 11 s) at 154.4 s; the API server failed for everyone at 145.8 s,
/// before the controller could judge n15. A control plane that failed once it had judged n15
/// (the witness the judge tried before) never deletes the pod; one that stayed up deletes it
/// before the stop is judged. Before the judge tried that world, the stop was a wrongful one.
#[test]
fn the_judge_excuses_a_stop_that_a_control_plane_cut_off_from_every_node_would_make() {
    let o = sim::run(&Scenario::generate(0x1058), &queued_on_write(), true);
    assert_excused(&o, 35, &["from a live control plane that stayed up"]);
}

/// Outages of the API server are drawn independently and may overlap: the server is down from
/// the first beginning to the first return. Seed 0x10af: it fails at 202.7 s and again at
/// 206.96 s, and answers again at 216.1 s; n0 stops pod 2 at 213.1 s, before any agent could
/// see the outage. The judge takes the outage from 202.7 s: as a partition of every node from
/// a control plane that failed after judging n0, the pod is deleted. Counted from the second
/// beginning, the first left the API server down in that world and the stop was wrongful.
#[test]
fn the_judge_takes_overlapping_outages_of_the_api_server_for_one() {
    let s = Scenario::generate(0x10af);
    let downs: Vec<_> = s
        .events
        .iter()
        .filter(|(_, e)| matches!(e, Event::ApiDown))
        .collect();
    assert!(downs.len() >= 2, "{:?}", s.events);
    let o = sim::run(&s, &queued_on_write(), true);
    assert_excused(
        &o,
        2,
        &["from a live control plane that failed after judging it"],
    );
}

/// The stop of `pod` was excused by a witness whose account names each of `how`, and is no
/// wrongful stop.
fn assert_excused(o: &sim::Outcome, pod: usize, how: &[&str]) {
    let kept = format!("stop of pod {pod} kept here");
    assert!(
        o.timeline
            .iter()
            .any(|l| l.contains(&kept) && how.iter().all(|h| l.contains(h))),
        "pod {pod}'s stop was not excused by {how:?}"
    );
    assert!(
        o.violations
            .iter()
            .all(|v| !matches!(v, Violation::WrongfulStop { pod: p, .. } if *p == pod)),
        "{:?}",
        o.violations
    );
}

/// The judge combines the two futures no agent sees when it stops a pod: its own link's return
/// and an outage of the API server for everyone that begins later. Seed 0x12 (the default
/// model): n3, its link cut at 23.6 s, stops pod 5 (tolerating 43 s, 60 s of grace) at 54.194 s;
/// the API server fails for everyone 0.65 s later (54.846 s to 132.459 s), and n3's link comes
/// back at 71.972 s. With the outage, nothing is deleted before the judgement; without it, the
/// link's return has the controller remove the taint first. With neither, a kubelet that last
/// renewed at 13.645 s has the pod deleted within the tolerance of the eviction the fence
/// planned. (Under the exactly periodic passes the simulator had before, seed 0x1c showed the
/// same; with the passes drifting, as upstream's do, its partition going on alone suffices.)
#[test]
fn the_judge_excuses_a_stop_that_both_unseen_futures_make_needless() {
    let o = sim::run(&Scenario::generate(0x12), &queued_on_write(), true);
    assert!(o.combined >= 1, "{:?}", o.violations);
    assert_excused(
        &o,
        5,
        &[
            "its partition gone on past the stop",
            "without the outage of the API server that began after the stop",
        ],
    );
}

/// The controller's passes drift as upstream's do: `wait.UntilWithContext` starts the 5 s period
/// when a pass ends, so a node whose last renewal a pass saw is judged on the eighth pass after
/// it (40 s and the passes' durations later; the test is strictly "after" the grace period), not
/// on the ninth, as exactly periodic passes had it. Node 0 of three, its link cut at 10 s, with a
/// pod tolerating 0 s: its taint, and the pod's deletion, come one monitor period sooner.
#[test]
fn the_controller_judges_a_node_on_the_pass_its_grace_period_has_run_out() {
    let origin = Duration::from_secs(1_000);
    let scenario = three_nodes(
        Some(0),
        vec![(Duration::from_secs(10), sim::Event::CutApi(0))],
        Duration::from_secs(120),
    );
    let taint = |settings: &Settings| {
        let out = sim::run(&scenario, settings, false);
        let deleted = out.deleted[0].expect("the pod is deleted") - origin;
        let taint = out.deleted_for[0].expect("for a taint") - origin;
        assert_eq!(deleted, taint, "tolerating 0 s");
        taint
    };
    let exact = periodic_passes();
    // The kubelet last renewed at 2 s. Periodic passes at 1.234 s + 5k s: seen at 6.234 s, and
    // 46.234 s is not after 40 s from then, so 51.234 s. Passes taking 5 ms: seen at 6.239 s, and
    // the ninth pass from the first, at 46.279 s, is after 46.239 s.
    assert_eq!(taint(&exact), Duration::from_millis(51_234));
    assert_eq!(taint(&queued_on_write()), Duration::from_millis(46_279));
}

/// Seed 0x117 (the default model, scenario 279 of the search once the controller's passes drift
/// as upstream's): n14's verdict that its whole zone is cut off can settle only once every peer
/// lost together with it says so. Waiting 35 s after its last contact (the longer of
/// `unreachableAfter` and a renew interval plus a request timeout, after the lost-together
/// window), it stopped pod 31 (tolerating 0 s) 3.7 s after the controller deleted it; a peer's
/// answer follows its contact's age alone, so 30 s suffices (`quorum::windows`), and the pod is
/// stopped before its deletion.
#[test]
fn a_verdict_settles_once_every_peer_lost_together_says_cut_off() {
    assert_eq!(
        nodewarden::core::quorum::windows(Duration::from_secs(10), Duration::from_secs(15)),
        (Duration::from_secs(15), Duration::from_secs(30))
    );
    let o = sim::run(&Scenario::generate(0x117), &queued_on_write(), false);
    let twice = any_running_twice(&o);
    assert!(twice.is_empty(), "{twice:?}");
    assert!(o.stopped[31].is_some(), "pod 31 is stopped");
}

/// Seed 0x16f (the default model; scenario 367 of the search with `--revert silence-ordered`):
/// n1's agent was killed 8.4 s after its link was cut, before it knew, and restarted 19.5 s
/// later. Counting its silence from that start, it took the 16 of 23 peers of its zone cut off
/// with it for nodes judged before it and held a partial disruption, while the controller had
/// judged n1 first, tainted it, and deleted pods 1 and 2 24–27 s before the agent stopped them.
/// Counted from the contact its previous run persisted (`quorum::silent_since`), n1 may have
/// been the first judged, and enforces in time. Also 0xdaa (an agent killed 10.6 s after its
/// cut: 19.6 s running twice until now).
#[test]
fn a_restarted_agent_orders_its_silence_from_the_contact_on_its_disk() {
    let scenario = Scenario::generate(0x16f);
    let twice = |settings: &Settings| {
        sim::run(&scenario, settings, false)
            .violations
            .into_iter()
            .filter(|v| kind(v) == "running-twice")
            .count()
    };
    assert_eq!(twice(&queued_on_write()), 0);
    let mut reverted = before_reads(queued_on_write());
    reverted.fixes.silence_ordered = false;
    // Where no peer reads its kubelet Lease for it (otherwise the renewal read bounds its
    // hearing and the round settles on time: see the test of 0x33b).
    reverted.fixes.lease_heard = false;
    assert_eq!(twice(&reverted), 2);
    let daa = sim::run(&Scenario::generate(0xdaa), &queued_on_write(), false);
    assert!(
        daa.violations.iter().all(|v| kind(v) != "running-twice"),
        "{:?}",
        daa.violations
    );
}

/// No fence stops a pod while its node's agent is not running. Seed 0x25f1 (the default model):
/// n1's agent, enforcing since 83 s, was SIGKILLed at 172.3 s and restarted 17.9 s later; the
/// controller deleted pod 1 (tolerating 86 s, stopped at its deletion by plan) at 187.3 s, and
/// the pod ran until the link came back 0.8 s later, all of it while no agent ran: counted apart.
/// Seed 0x2420: the pod's deletion also fell while n0's agent was down, but the restarted agent
/// took more time to know itself cut off (10 s, now 1 s); that time counts as the defect it is.
/// (Its peer links were cut with its link to the API server, so no peer could read its kubelet
/// Lease for it, as one does for 0x11d4 below.)
/// Seed 0x7a0: the four nodes of a zone cut off within 2.5 s of each other, n0 first to go
/// silent; every agent holds. The controller taints n0 33 s later, while the other three still
/// count as healthy, and deletes its pods 1, 12 and 13 (tolerating 0–1 s). n1 comes back 8.7 s
/// after that, its Ready condition already written Unknown by the controller (its grace period
/// had run out): the scheduler binds no replacement to a node carrying `unreachable:NoSchedule`,
/// and that taint goes only when its kubelet posts its status, on its 10 s cadence. n0's agent
/// hears of n1's return and stops the three pods 0.8 s after it, before any kubelet posts. The
/// judge counted each as 0.8 s running twice until the twenty-second session, taking a node that
/// reaches the API server for one that can run the replacement.
#[test]
fn a_replacement_waits_for_a_node_written_unknown_to_post_its_status() {
    let o = sim::run(&Scenario::generate(0x7a0), &queued_on_write(), true);
    let at = |needle: &str| {
        o.timeline
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} not in {:#?}", o.timeline))
    };
    assert!(at("HealApi(1)") < at("n0 SIGTERM pod 1"));
    assert!(at("n0 kills pod 13") < at("n1's kubelet posts Ready=True"));
    assert!(at("n1's kubelet posts Ready=True") <= at("the replacement of pod 1 can start"));
    let twice = any_running_twice(&o);
    assert!(twice.is_empty(), "{twice:?}");
}

/// Seed 0x1f21: n0 cut off at 103.7 s, the last of the four nodes of its zone; the controller
/// deletes its pod 1 (tolerating 0 s) at 131.4 s, while every node's link is down and every
/// agent holds, as it must in an outage of the API server, which no agent can tell this from.
/// n2 comes back at 136.0 s, its Ready still True (its grace period had not run out), and could
/// take the replacement at once; n0's agent hears of it from n2 and stops the pod 0.98 s later.
/// That is counted apart, within the agents' reaction (`Settings::cut_off_reaction`); a slower
/// stop is not.
#[test]
fn a_pod_deleted_while_every_node_was_cut_off_is_counted_apart_when_stopped_within_the_reaction() {
    let twice = |s: &Scenario, settings: &Settings| -> Vec<(Option<Duration>, &'static str)> {
        sim::run(s, settings, false)
            .violations
            .into_iter()
            .filter_map(|v| match v {
                Violation::RunningTwice {
                    every_node_cut_off, ..
                } => Some((every_node_cut_off, kind(&v))),
                _ => None,
            })
            .collect()
    };
    let ms = Duration::from_millis;
    let found = Scenario::generate(0x1f21);
    assert_eq!(
        twice(&found, &queued_on_write()),
        [(Some(ms(981)), "running-twice-every-node-cut-off")]
    );
    assert!(!nodewarden::sim::world::is_defect(
        "running-twice-every-node-cut-off"
    ));
    assert_eq!(queued_on_write().cut_off_reaction(), ms(5_000));
    // The same with n2 the only node back until 150 s, and an agent that hears of its own return
    // only when its renewal, hung since the cut, times out (no probe; 20 s): n0's agent stops the
    // pod 14 s after the return, and those seconds are a defect.
    let mut alone = found.clone();
    alone.events.retain(|(t, e)| {
        *t < ms(130_000) || !matches!(e, Event::HealApi(0) | Event::HealApi(1) | Event::HealApi(3))
    });
    for n in [0, 1, 3] {
        alone.events.push((ms(150_000), Event::HealApi(n)));
    }
    alone.events.sort_by_key(|(t, _)| *t);
    assert_eq!(
        twice(&alone, &queued_on_write()),
        [(Some(ms(981)), "running-twice-every-node-cut-off")]
    );
    let mut slow = Settings {
        probe: None,
        request_timeout: Duration::from_secs(20),
        ..queued_on_write()
    };
    // And no probe of the kubelet's path either, which would find the return too.
    slow.fixes.node_path = false;
    let late = twice(&alone, &slow);
    assert!(
        !late.is_empty()
            && late
                .iter()
                .all(|(r, k)| r.is_none() && *k == "running-twice"),
        "{late:?}"
    );
}

/// Seed 0xd6: a user deleted pod 18 at 67.5 s while its node n7 was cut off; the fence, which
/// could not see the deletion, stopped it 0.2 s later for the taint it expected. The stop is what
/// the user asked for (the kubelet would have made it, had it reached the API server), whatever
/// the controller does then. Until the twenty-second session the judge counted such stops
/// wrongful: 11 of scenarios 1–10,000 failed for them alone.
#[test]
fn the_stop_of_a_pod_a_user_deleted_before_is_not_wrongful() {
    assert_timeline_says(0xd6, "stop of pod 18: a user deleted it before");
    let o = sim::run(&Scenario::generate(0xd6), &queued_on_write(), false);
    assert!(o.violations.is_empty(), "{:?}", o.violations);
}

/// Seed 0xa34: n2, tainted at 211.4 s, stops pod 4 (tolerating 41 s) at 237.8 s; a user deletes
/// the pod 2 s later, so the controller's deletion, due at 252.4 s, never comes. The user's
/// deletion after the stop is a future no agent sees, as a link's return is: the judge weighs the
/// stop in worlds without it, where the controller deletes the pod by the judgement.
#[test]
fn the_stop_of_a_pod_a_user_deleted_after_is_judged_without_that_deletion() {
    let o = sim::run(&Scenario::generate(0xa34), &queued_on_write(), true);
    assert_eq!(o.user_delete_after_stop, 1, "{:?}", o.violations);
    assert_excused(
        &o,
        4,
        &["without the user's deletion of the pod after the stop"],
    );
}

/// Seed 0x9ea: n2 back for 7 s between two cuts, too short for its agent to count the contact;
/// its kubelet posted Ready=True over the Unknown the controller had written (at 150.2 s), but
/// its Lease renewal waited on the lease controller's backoff. Upstream counts a posted status as
/// a heartbeat (`tryUpdateNodeHealth`: a new `lastHeartbeatTime` refreshes the probe), so the
/// controller does not judge n2 again a grace period after the renewal it missed. Without the
/// kubelets' status updates (as the simulator had it until the twenty-second session) it tainted
/// n2 at 156.4 s, deleted pod 14 (tolerating 0 s) at once, and the pod ran 6.5 s twice: the agent
/// knew itself cut off only `unreachableAfter` after the uncounted contact. Since the
/// twenty-fifth session the return is watched (`Fixes::return_watched`): the agent knows itself
/// cut off again within seconds of the second cut, and stops the pod in time in either model.
#[test]
fn a_kubelet_status_posted_in_a_return_counts_as_a_heartbeat() {
    let mut lease_only = Settings {
        kubelet_status: false,
        ..queued_on_write()
    };
    assert!(running_twice(0x9ea, &lease_only).is_empty());
    lease_only.fixes.return_watched = false;
    assert_eq!(running_twice(0x9ea, &lease_only), [14]);
    assert!(running_twice(0x9ea, &queued_on_write()).is_empty());
    assert_timeline_says(0x9ea, "n2's kubelet posts Ready=True");
}

#[test]
fn running_twice_while_the_agent_was_not_running_is_counted_apart_and_no_longer() {
    let twice = |seed: u64| -> Vec<(Duration, Duration, &'static str)> {
        sim::run(&Scenario::generate(seed), &queued_on_write(), false)
            .violations
            .into_iter()
            .filter_map(|v| match v {
                Violation::RunningTwice {
                    ran_for,
                    agent_down,
                    ..
                } => Some((ran_for, agent_down, kind(&v))),
                _ => None,
            })
            .collect()
    };
    let ms = Duration::from_millis;
    assert_eq!(
        twice(0x25f1),
        [(ms(837), ms(837), "running-twice-agent-down")]
    );
    assert!(!nodewarden::sim::world::is_defect(
        "running-twice-agent-down"
    ));
    // Killed three times while its link hung, each time before it counted as cut off: 10 s after
    // the last restart until each run handed on its wait without an answer
    // (`Fixes::unanswered_handed_on`), 1 s since.
    let partly = twice(0x2420);
    assert_eq!(partly.len(), 1, "{partly:?}");
    let (ran_for, down, k) = partly[0];
    assert_eq!(k, "running-twice");
    assert_eq!(ran_for - down, ms(1_000), "{partly:?}");
}

/// Seed 0x11d4 (the default model): n3's agent was SIGKILLed at 126.5 s, its link was cut 2.7 s
/// later, and it restarted at 163.5 s, 1.1 s after the controller deleted pod 8 (tolerating
/// 1 s). Its first renewal went into the hanging link, and it knew itself cut off only at that
/// request's timeout: the pod ran 11.1 s past its deletion. A start with no answer yet now has
/// peers read its kubelet Lease, and a kubelet unheard for 42 s is a failed request
/// (`quorum::kubelet_unheard`): the pod is stopped as the agent starts, past its deletion only
/// for the 1.1 s no agent ran, counted apart. Also 0x23a5 (5.2 s until now) and 0x5f7 (0.5 s;
/// scenario 1,527 of the search with `--revert unheard-at-start`).
#[test]
fn a_restarted_agent_is_cut_off_at_once_when_peers_read_its_kubelet_unheard() {
    let twice = |seed: u64, settings: &Settings| -> Vec<(usize, Duration, &'static str)> {
        sim::run(&Scenario::generate(seed), settings, false)
            .violations
            .into_iter()
            .filter_map(|v| match v {
                Violation::RunningTwice { pod, ran_for, .. } => Some((pod, ran_for, kind(&v))),
                _ => None,
            })
            .collect()
    };
    let mut reverted = queued_on_write();
    reverted.fixes.unheard_at_start = false;
    // As the build they were found on: 0x5f7's agent, killed while waiting, now also hands its
    // wait on to the restart (`Fixes::unanswered_handed_on`), which is then cut off in time.
    reverted.fixes.unanswered_handed_on = false;
    let ms = Duration::from_millis;
    assert_eq!(
        twice(0x11d4, &queued_on_write()),
        [(8, ms(1_149), "running-twice-agent-down")]
    );
    assert_eq!(twice(0x11d4, &reverted), [(8, ms(11_149), "running-twice")]);
    for seed in [0x23a5, 0x5f7] {
        assert!(twice(seed, &queued_on_write()).is_empty(), "{seed:#x}");
        assert!(!twice(seed, &reverted).is_empty(), "{seed:#x}");
    }
    assert_timeline_says(
        0x11d4,
        "163.543s n3 starts cut off: peers read its kubelet unheard",
    );
}

/// Seed 0xd30 (the default model): n0's agent was SIGKILLed at 147.9 s, its link cut 14.8 s
/// later, and it restarted at 187.5 s into a partial disruption of its zone that enforces. Its
/// fence counted from the contact on its disk, older by the 9 s its kubelet went on renewing
/// while no agent ran, and stopped pods 0 and 1 before the heal at 219.6 s; the controller would
/// have deleted them only at 222.4 s and 226.4 s. The kubelet's renewal its peers read at the
/// restart now counts as a heartbeat seen (`quorum::kubelet_renewal`): the pods are stopped no
/// earlier than the controller's own count allows, and the heal comes first.
#[test]
fn a_restarted_fence_counts_from_its_kubelets_renewal_as_peers_read_it() {
    let scenario = Scenario::generate(0xd30);
    assert!(wrongful_stops(&scenario, &queued_on_write()).is_empty());
    let mut reverted = before_reads(queued_on_write());
    reverted.fixes.renewal_counted = false;
    assert_eq!(wrongful_stops(&scenario, &reverted), [0, 1]);
}

/// Seed 0x129d (the default model): one zone of 60, 52 of them cut off from the API server in
/// under a minute. The 50 peers each round asks (the first of the list) were all cut off, and
/// the 8 that reached the API server were among the 9 not asked: every node held on a zone read
/// as fully disrupted. The controller saw a large zone partly disrupted, still tainted at its
/// slower rate, and deleted pods 100 and 0 14–18 s before the fence stopped them. A hold because
/// every node known is cut off now asks the rest of this zone first, as it asks the rest of the
/// other zones (`quorum::unasked`). Also 0x1bfb (a zone of 56: pods 2 and 8, 21 s and 7 s).
#[test]
fn a_hold_on_a_large_zone_asks_the_peers_not_asked_first() {
    let twice = running_twice;
    let mut reverted = queued_on_write();
    reverted.fixes.own_zone_asked = false;
    for seed in [0x129d, 0x1bfb] {
        assert!(twice(seed, &queued_on_write()).is_empty(), "{seed:#x}");
    }
    let mut before = twice(0x129d, &reverted);
    before.sort_unstable();
    assert!(
        before.starts_with(&[0]) && before.contains(&100),
        "{before:?}"
    );
    assert!(!twice(0x1bfb, &reverted).is_empty());
}

/// Seeds 0x1f01 and 0xd6b (the default model): a node's wall clock was stepped (+255 s, −153 s)
/// while its agent ran; the agent was SIGKILLed much later, its link was cut while it was down,
/// and it restarted. Its contact file named the scale the run began on, so the restarted agent
/// took the step for one made since and could place no kubelet renewal its peers read
/// (`clock::steady`): it counted itself heard until its start, knew itself cut off at its first
/// timeout, and stopped pods 21 s (0x1f01) and 1.6 s (0xd6b) after their deletion. The contact
/// file now names the system clock's scale at each write (`clock::on_system_scale`). In 0xd6b
/// the three peers asked first to read the Lease were cut off too, and the one that reached the
/// API server was never asked: peers whose latest answer was not "reachable" are now asked last
/// (`quorum::lease_readers`).
#[test]
fn a_step_the_previous_run_lived_through_leaves_its_kubelets_renewal_readable() {
    let twice = running_twice;
    let fixed = queued_on_write();
    assert!(twice(0x1f01, &fixed).is_empty());
    assert!(twice(0xd6b, &fixed).is_empty());
    let mut unscaled = queued_on_write();
    unscaled.fixes.system_scale_written = false;
    assert_eq!(twice(0x1f01, &unscaled), [0, 1]);
    assert_eq!(twice(0xd6b, &unscaled), [3]);
    let mut first_three = queued_on_write();
    first_three.fixes.readers_able = false;
    assert_eq!(twice(0xd6b, &first_three), [3]);
    assert_timeline_says(0xd6b, "n2 starts cut off: peers read its kubelet unheard");
}

/// `--differential` compares a reverted run with the fixed one by what each violation is of: the
/// same pod stopped wrongfully a few seconds apart is the same violation, another pod's is not.
#[test]
fn a_violation_is_compared_by_its_kind_and_its_pod_or_node_not_its_instant() {
    use nodewarden::sim::world::subject;
    let stop = |pod, secs| Violation::WrongfulStop {
        pod,
        at: Duration::from_secs(secs),
        by_policy: false,
    };
    assert_eq!(subject(&stop(3, 100)), subject(&stop(3, 130)));
    assert_ne!(subject(&stop(3, 100)), subject(&stop(4, 100)));
    let verdict = Violation::EnforceInOutage {
        node: 3,
        at: Duration::from_secs(100),
        reason: String::new(),
    };
    assert_eq!(subject(&verdict), ("enforce-in-outage", 3));
    assert_ne!(subject(&verdict), subject(&stop(3, 100)));
}

/// Seed 0x1b73 (the default model): n5, in a zone of 14, was tainted while cut off, came back
/// for a moment, and was cut off again before the controller removed the taint. Its pod 11,
/// tolerating the taint for a while, was deleted for it 3.7 s before the verdict settled by the
/// rule for peers lost together with it. Its Node as last seen carried the taint, so the control
/// plane had judged it: a peer heard later than this node's own next renewal would have landed
/// shows the control plane live, and settles it (`Round::tainted`, `QuorumPolicy::renewed_within`).
#[test]
fn a_node_seen_tainted_settles_once_a_peer_is_heard_after_its_own_next_renewal() {
    let twice = running_twice;
    assert!(twice(0x1b73, &queued_on_write()).is_empty());
    let mut reverted = before_reads(queued_on_write());
    reverted.fixes.taint_settles = false;
    assert_eq!(twice(0x1b73, &reverted), [11]);
    assert_timeline_says(
        0x1b73,
        "n5 quorum enforce: 2 of 14 node(s) in zone zone-2 cut off",
    );
    assert_timeline_says(0x1b73, "this node was seen tainted");
}

/// Seed 0x33b (the default model; scenario 827 of the search with `--revert lease-heard`): n13's
/// agent was SIGKILLed 3 s before its link was cut and restarted 32 s later, in a 4.5 s outage
/// of the API server. Counting itself heard until that start, it took the peers that lost the
/// API server in the outage for peers lost together with it, and its verdict settled only two
/// rounds after it knew itself cut off: pod 25 (tolerating 5 s) ran 3.3 s past its deletion.
/// Three peers that reach the API server now read its kubelet Lease for it (`Question::lease`);
/// the kubelet's last renewal, before the cut, bounds when the node was heard, and the first
/// round settles.
#[test]
fn a_restarted_agent_counts_itself_heard_until_its_kubelets_renewal_as_its_peers_read_it() {
    let scenario = Scenario::generate(0x33b);
    let twice = |settings: &Settings| -> Vec<(usize, Duration)> {
        sim::run(&scenario, settings, false)
            .violations
            .into_iter()
            .filter(|v| kind(v) == "running-twice")
            .filter_map(|v| match v {
                Violation::RunningTwice { pod, ran_for, .. } => Some((pod, ran_for)),
                _ => None,
            })
            .collect()
    };
    assert_eq!(twice(&queued_on_write()), []);
    // Without the read there is no kubelet renewal to find unheard at the start either.
    let mut reverted = before_reads(queued_on_write());
    reverted.fixes.lease_heard = false;
    reverted.fixes.unheard_at_start = false;
    assert_eq!(twice(&reverted), [(25, Duration::from_millis(3_347))]);
}

/// Seed 0x55 (the default model; scenario 85 of the search with `--revert everyone-cut-off`): n0,
/// cut off alone at 194 s, was tainted at 226.5 s; the API server failed for everyone at
/// 241.7 s and answered again 86 s later, with a restarted controller-manager. n0's peers lost
/// the API server 48 s after n0, so they counted as ready, and n0 enforced as in a healthy zone
/// through the outage: it stopped pod 1 (tolerating 86 s) at 296.8 s. Its link came back before
/// the API server did; the new controller-manager found the node Ready, removed the taint, and
/// never deleted the pod. Now no node reaching the API server holds, whenever each lost it.
#[test]
fn no_node_reaching_the_api_server_holds_a_node_tainted_before_the_outage() {
    let scenario = Scenario::generate(0x55);
    assert!(wrongful_stops(&scenario, &queued_on_write()).is_empty());
    let mut reverted = queued_on_write();
    reverted.fixes.everyone_cut_off = false;
    assert_eq!(wrongful_stops(&scenario, &reverted), [1]);
}

/// The pods of seed `seed` that run twice under `settings` (the defect kind), in the order found.
fn running_twice(seed: u64, settings: &Settings) -> Vec<usize> {
    pods_of(seed, settings, "running-twice")
}

/// The pods of seed `seed`'s violations of kind `k` (`sim::world::kind`) under `settings`, in the
/// order found.
fn pods_of(seed: u64, settings: &Settings, k: &str) -> Vec<usize> {
    pods_in(&Scenario::generate(seed), settings, k)
}

/// [`pods_of`] for any scenario.
fn pods_in(scenario: &Scenario, settings: &Settings, k: &str) -> Vec<usize> {
    sim::run(scenario, settings, false)
        .violations
        .into_iter()
        .filter(|v| kind(v) == k)
        .filter_map(|v| match v {
            Violation::RunningTwice { pod, .. } | Violation::WrongfulStop { pod, .. } => Some(pod),
            Violation::EnforceInOutage { .. } => None,
        })
        .collect()
}

/// The running-twice violations of a run, of every kind.
fn any_running_twice(o: &sim::Outcome) -> Vec<&Violation> {
    o.violations
        .iter()
        .filter(|v| matches!(v, Violation::RunningTwice { .. }))
        .collect()
}

/// Seed `seed`'s timeline under the default settings has a line that says `needle`.
fn assert_timeline_says(seed: u64, needle: &str) {
    assert_timeline_under(seed, &queued_on_write(), needle);
}

/// The same under `settings`.
fn assert_timeline_under(seed: u64, settings: &Settings, needle: &str) {
    let o = sim::run(&Scenario::generate(seed), settings, true);
    assert!(
        o.timeline.iter().any(|l| l.contains(needle)),
        "{needle:?} not in {:#?}",
        o.timeline
    );
}

/// With one fix reverted (`revert`), seed `seed` stops exactly the pods `wrongful` wrongfully in
/// the default model; with every fix, none.
fn assert_spared(seed: u64, revert: fn(&mut nodewarden::core::quorum::Fixes), wrongful: &[usize]) {
    let scenario = Scenario::generate(seed);
    let mut reverted = queued_on_write();
    revert(&mut reverted.fixes);
    assert_eq!(wrongful_stops(&scenario, &reverted), wrongful);
    assert_eq!(
        wrongful_stops(&scenario, &queued_on_write()),
        Vec::<usize>::new()
    );
}

/// The pods of `scenario` stopped wrongfully under `settings`, in the order found.
fn wrongful_stops(scenario: &Scenario, settings: &Settings) -> Vec<usize> {
    sim::run(scenario, settings, false)
        .violations
        .into_iter()
        .filter_map(|v| match v {
            Violation::WrongfulStop { pod, .. } => Some(pod),
            _ => None,
        })
        .collect()
}

/// Found once the judge's partition worlds keep cut, until the outage ends, the links that came
/// back during it: seed 0x1cea, the API server back at 264.677 s after a two-minute outage. n59,
/// cut off throughout, is nudged by a peer back, reads its Lease (answered) and renews; its
/// regular round 4 ms later heard the other zone back and its own zone still cut off, enforced
/// on deadlines long past, and stopped two pods 36 ms before its renewal landed. (The judge used
/// to excuse them by a world in which 24 links that came back during the outage reached a live
/// control plane at once, which the agents would have seen.) A hold now does not turn into
/// enforce for a second after an answered read (`quorum::RENEWAL_IN_FLIGHT`).
#[test]
fn a_hold_waits_a_round_while_the_renewal_after_an_answered_read_is_in_flight() {
    let scenario = Scenario::generate(0x1cea);
    assert!(wrongful_stops(&scenario, &queued_on_write()).is_empty());
    let mut reverted = before_reads(queued_on_write());
    reverted.fixes.renewal_in_flight = false;
    // The probe of the kubelet's path, which finds the return, came later.
    reverted.fixes.node_path = false;
    // And the peers' reads of the leader Lease, which alone spare pod 120.
    reverted.fixes.peer_leader_read = false;
    assert_eq!(wrongful_stops(&scenario, &reverted), [120, 122]);
    assert_timeline_says(0x1cea, "n59 would enforce, its renewal in flight");
}

/// Seed 0x95e (the default model): n13, cut off, had its Node read by its peers: untainted at
/// 80.9 s, tainted at 83.9 s (the controller tainted it at 81.3 s). Its pod 26, tolerating 49 s,
/// was due 49 s after the last read without the taint, less `READ_SLACK`. Its link came back at
/// 116.0 s, too short for its kubelet to be heard, and went again at 118.0 s; the controller
/// deleted the pod at 130.3 s for the taint, while the agent, counting its 15 s from its last
/// contact, did not know itself cut off again until 131.0 s. Its Node carried the taint when it
/// looked in the return: the fence plans on that taint while not cut off and stops the pod in
/// time (`Fixes::fence_on_taint`). With the reads and without that rule, it ran 6.6 s twice;
/// without both the pod was stopped before the return, on the earliest count. (Since the
/// twenty-fifth session the return is watched as well, `Fixes::return_watched`: the agent knows
/// itself cut off again at once, which alone would stop the pod in time; it is reverted here.)
#[test]
fn a_node_tainted_when_its_link_returns_fences_on_the_taint_until_it_is_gone() {
    assert!(running_twice(0x95e, &queued_on_write()).is_empty());
    let mut reverted = queued_on_write();
    reverted.fixes.return_watched = false;
    assert!(running_twice(0x95e, &reverted).is_empty());
    reverted.fixes.fence_on_taint = false;
    assert_eq!(running_twice(0x95e, &reverted), [26]);
    assert!(running_twice(0x95e, &before_reads(queued_on_write())).is_empty());
    assert_timeline_says(0x95e, "n13 fences on its taint: true");
    assert_timeline_says(0x95e, "n13 peers read its Node: tainted Some(true)");
}

/// Seed 0x2cd (the default model; found at scenario 717 of `--differential --revert pods-read
/// --kind running-twice-late-watch`): pod 17 was bound to n2 seconds before n2's link was cut;
/// n2's kubelet heard of it within milliseconds and ran it, n2's agent's watch, 5.5 s late, had
/// not delivered it. Cut off at 156.5 s, n2 found the pod's cgroup its view lacked and asked its
/// peers; one that reached the API server listed it, and the fence stopped it at 159.5–169.1 s,
/// before the controller deleted it at 186.4 s. Without the list the agent never knew the pod,
/// and it ran 32.9 s past its deletion, until the link came back.
#[test]
fn a_pod_the_agents_watch_missed_before_the_cut_is_listed_by_a_peer_and_stopped() {
    let late = |settings: &Settings| {
        sim::run(&Scenario::generate(0x2cd), settings, false)
            .violations
            .iter()
            .any(|v| kind(v) == "running-twice-late-watch")
    };
    // Since the twenty-seventh session the agent lists its pods itself as the pod's cgroup
    // appears (`Fixes::cgroup_listed`), which fixes it too: the peers' list is checked without.
    let mut read = queued_on_write();
    read.fixes.cgroup_listed = false;
    assert!(!late(&read));
    let mut reverted = read;
    reverted.fixes.pods_read = false;
    assert!(late(&reverted));
    assert_timeline_under(
        0x2cd,
        &read,
        "n2 peers listed pods its view lacked: [\"pod-17\"]",
    );
    assert_timeline_under(0x2cd, &read, "n2 kills pod 17");
    assert!(!late(&queued_on_write()));
}

/// Seed 0x2041 (the default model; 9.6 s running twice in the 1–10,000 run of the twenty-sixth
/// session): pod 6 was bound to n0 1.9 s before n0 lost every link; n0's kubelet, its watch
/// 0.3 s late, started it, and n0's agent, its watch 5.5 s late, had not seen it. With no peer to
/// list it, the fence never knew the pod, and it ran until the link came back. The agent now
/// lists its node's pods as soon as a pod's cgroup appears that its view lacks
/// (`Fixes::cgroup_listed`, `agent::pod_cgroups`): it gains the pod 0.4 s after its creation,
/// and the fence kills it 18.6 s before its deletion.
#[test]
fn a_pod_whose_cgroup_appears_before_the_agents_watch_delivers_it_is_listed_at_once() {
    let late = |settings: &Settings| {
        sim::run(&Scenario::generate(0x2041), settings, false)
            .violations
            .iter()
            .any(|v| kind(v) == "running-twice-late-watch")
    };
    let mut reverted = queued_on_write();
    reverted.fixes.cgroup_listed = false;
    assert!(late(&reverted));
    assert!(!late(&queued_on_write()));
    assert_timeline_says(
        0x2041,
        "n0 lists its pods for a cgroup its view lacked: it gains [\"pod-6\"]",
    );
    assert_timeline_says(0x2041, "n0 kills pod 6");
}

/// Seed 0x1f40 (the default model; a wrongful stop in the 1–10,000 run of the twenty-eighth
/// session): in a zone of five, n1 and n0 lost the API server at 163.7 s and 166.0 s and were
/// tainted while the zone still counted as healthy; n2 lost it 30.6 s after n0, but its agent's
/// last contact was only 24.1 s after n0's, within the 25.4 s order tie. n2 could not tell that
/// it was judged after them, in the partial disruption they made, and enforced: it sent pod 4
/// (tolerating 9 s, 60 s of grace) its SIGTERM at 205.0 s and killed it, a pod the control plane
/// never deleted. Its peers had read its kubelet's last renewal, 26 s after n0's contact; ordered
/// against that, the two went silent certainly first (`Fixes::kubelet_ordered`,
/// `QuorumPolicy::order_tie_read`), and n2 holds.
#[test]
fn a_node_orders_its_silence_by_its_kubelets_renewal_as_its_peers_read_it() {
    // The zone record that shows n2 still Ready while n0 and n1 are Unknown spares it too
    // (`Fixes::judged_partial`, forty-second session), and so do the peers' own kubelets'
    // renewals (`Fixes::peer_kubelet_ordered`, forty-sixth): reverted with it.
    assert_spared(
        0x1f40,
        |f| {
            f.kubelet_ordered = false;
            f.judged_partial = false;
            f.peer_kubelet_ordered = false;
        },
        &[4],
    );
    // With every fix, n2 holds on that record first; without it, on the order.
    let mut order_only = queued_on_write();
    order_only.fixes.judged_partial = false;
    assert_timeline_under(
        0x1f40,
        &order_only,
        "n2 quorum hold: 3 of 5 node(s) in zone zone-0 are cut off (partial disruption), 3 of them before this node",
    );
    assert_timeline_says(
        0x1f40,
        "n2 quorum hold: a peer that reaches the API server reads 2 of the 5 node(s) of zone zone-0 recorded not Ready and this node's Node still Ready",
    );
}

/// Seed 0x147d (the default model; a wrongful stop in the 1–10,000 run of the twenty-ninth
/// session): n3, alone cut off in a zone of five, enforced on its four peers' word that they
/// reached the API server. The API server went down for everyone at 53.6 s; the peers still said
/// they reached it for `unreachableAfter` after their last contacts, and at 61.4 s n3 sent pod 7
/// (tolerating 46 s, 30 s of grace) its SIGTERM, 30 s before its planned kill. At 68.8 s its
/// verdict was hold, and the control plane never deleted the pod then. The peers' reads of n3's
/// Node had failed in every round since 53.8 s: the SIGTERM now waits while the peers that say
/// they reach the API server read nothing from it (`Fixes::sigterm_read`, `Steps::wait_sigterm`),
/// the hold came before the kill's time, and nothing is stopped.
#[test]
fn a_sigterm_waits_while_the_peers_read_nothing_from_the_api_server_they_say_they_reach() {
    assert_spared(0x147d, |f| f.sigterm_read = false, &[7]);
    assert_timeline_says(0x147d, "53.817s n3 SIGTERMs wait for a read: true");
    assert_timeline_says(0x147d, "68.817s n3 SIGTERMs wait for a read: false");
}

/// Seed 0xd97 (the default model; a wrongful stop in the 1–10,000 run of the twenty-ninth
/// session): in a zone of five, n0 was tainted at 156.4 s; n4, cut off from 125.7 s, held
/// through an outage of every link, and at 190.1 s enforced on the staggered expiry's guess
/// ("only 1 had certainly gone silent ... it may have been tainted while the zone still counted
/// as healthy"). It was judged in the partial disruption and never tainted: its peers read its
/// Node without the taint every round. Pod 8 tolerates 34 s with 30 s of grace, so its SIGTERM,
/// counted from the latest such read less 10 s, was due at once; its kill receded with every
/// read. The SIGTERM now waits under a guessed enforce until a peer reads the taint
/// (`Fixes::sigterm_doubt`, `core::quorum::sigterm_waits`), and the pod runs on. Since the
/// thirty-eighth session the zone recorded with every zone down holds n4 by itself
/// (`Fixes::master_recorded`), so the test reverts that rule too.
#[test]
fn a_sigterm_waits_for_the_taint_under_an_enforce_the_staggered_expiry_only_guesses() {
    assert_spared(
        0xd97,
        |f| {
            f.sigterm_doubt = false;
            f.master_recorded = false;
        },
        &[8],
    );
    let mut unrecorded = queued_on_write();
    unrecorded.fixes.master_recorded = false;
    assert_timeline_under(
        0xd97,
        &unrecorded,
        "190.081s n4 SIGTERMs wait for a read: true",
    );
    assert_timeline_says(
        0xd97,
        "190.081s n4 quorum hold: a peer that reaches the API server reads 5 of the 5 node(s) of zone zone-0 recorded not Ready (fully disrupted",
    );
}

/// Seed 0x12ec with the controller keeping its state through an outage (found in the
/// twenty-seventh session's keep-state run): n3's link came back as the API server returned
/// after an outage of 68 s and went again 4 s later; its agent, the return unproven, knew itself
/// cut off at once (a relapse), counting from before the outage, and was SIGKILLed 3.4 s later.
/// The restarted agent read only its last contact and that a partition was on record: it counted
/// from the unproven return, knew itself cut off only `unreachableAfter` after it, and two pods
/// ran 7.7 s past their deletion. The state now names the contact a relapse counts from, and a
/// restart resumes the relapse (`Fixes::relapse_kept`, `Link::with_unproven_return`).
///
/// Replayed with a node counted Ready again on its Lease's renewal, as the seed was found: counted
/// Ready only on its kubelet's status, as upstream's controller has it (thirty-third session),
/// the reverted run stops no pod late here. And without the times the peers read (thirty-fifth
/// session, `Fixes::node_times_read`), which stop both pods in time without the rule, nor a
/// read of the Node queued settling the verdict (thirty-seventh, `Fixes::queue_read_settles`),
/// which stops pod 4 in time without both.
#[test]
fn a_restart_during_a_relapse_resumes_it() {
    let mut keeps = queued_on_write();
    keeps.controller.leader = None;
    keeps.controller.ready_on_status = false;
    let twice = |s: &Settings| {
        sim::run(&Scenario::generate(0x12ec), s, false)
            .violations
            .iter()
            .filter(|v| kind(v) == "running-twice")
            .count()
    };
    let mut reverted = keeps;
    reverted.fixes.relapse_kept = false;
    assert_eq!(twice(&reverted), 0);
    reverted.fixes.node_times_read = false;
    assert_eq!(twice(&reverted), 1);
    reverted.fixes.queue_read_settles = false;
    assert_eq!(twice(&reverted), 2);
    assert_eq!(twice(&keeps), 0);
}

/// Seed 0x1d5b (the default model): n11, alone in its zone, came back for 4.4 s and was cut off
/// again before its kubelet was heard; the controller tainted it at 151.4 s and deleted its pod
/// 25 (tolerating 6 s) at 157.4 s. Cut off again at 158.2 s, its first round's peers read the
/// taint, but its verdict (its whole zone cut off) waited for the answers to settle until
/// 173.2 s, and the pod ran 15.8 s past its deletion. A taint a peer that reaches the API server
/// read settles the enforce at once (`Fixes::taint_read_settles`): 0.8 s, the time to know
/// itself cut off, which no round could shorten then. Since the twenty-fifth session the return
/// is watched (`Fixes::return_watched`): n11 knows itself cut off again 1.3 s after the second
/// cut, its round reads the taint at 154.2 s, and it kills the pod 3.1 s before its deletion.
#[test]
fn a_taint_the_peers_read_settles_the_verdict_at_once() {
    let ran = |settings: &Settings| ran_twice_for(0x1d5b, settings, 25);
    let mut reverted = queued_on_write();
    reverted.fixes.taint_read_settles = false;
    assert!(ran(&reverted).iter().all(|t| *t > Duration::from_secs(15)));
    assert!(!ran(&reverted).is_empty());
    let mut unwatched = queued_on_write();
    unwatched.fixes.return_watched = false;
    let then = ran(&unwatched);
    assert!(
        then.len() == 1 && then[0] < Duration::from_secs(1),
        "{then:?}"
    );
    assert_eq!(ran(&queued_on_write()), Vec::<Duration>::new());
}

/// Seed 0x63a4 (the default model): n2, cut off from the API server and its peers at 43.1 s, came
/// back at 74.8 s and lost both again at 77.7 s, before the renewal that would prove its kubelet
/// renewed. The controller, still counting from before the first cut, tainted n2 at 81.3 s and
/// deleted pod 4 (tolerating 8 s) at 89.3 s; the agent knew itself cut off again only at 90.6 s,
/// `unreachableAfter` after its return, and the pod ran 1.3 s past its deletion. Now the return
/// is watched until that renewal (`Fixes::return_watched`, `fencing::Link::unproven`): a read
/// unanswered cuts n2 off at 79.6 s, and it kills the pod 9.7 s before its deletion.
#[test]
fn a_link_cut_again_before_its_return_proved_the_kubelet_is_cut_off_at_once() {
    let ran = |settings: &Settings| ran_twice_for(0x63a4, settings, 4);
    let mut reverted = queued_on_write();
    reverted.fixes.return_watched = false;
    let before = ran(&reverted);
    assert!(
        before.len() == 1 && before[0] > Duration::from_secs(1),
        "{before:?}"
    );
    assert_eq!(ran(&queued_on_write()), Vec::<Duration>::new());
    assert_timeline_says(0x63a4, "79.624s n2 cut off");
    assert_timeline_says(0x63a4, "79.624s n2 kills pod 4");
}

/// Seed 0x1eb5 (the default model): n2's link to the API server and its peers was cut at 73.4 s;
/// its agent, killed at 78.5 s before it counted as cut off, restarted at 96.8 s into the link
/// that hung, and knew itself cut off only at its first request's bound 10 s later, 0.4 s after
/// the controller deleted pod 2 (tolerating 0 s). Now the killed run hands on its wait of 12 s
/// without an answer (`Fixes::unanswered_handed_on`): the restart counts on from it, is cut off
/// 3 s after its start and stops the pod 6.6 s before its deletion.
#[test]
fn a_run_killed_before_it_knew_itself_cut_off_hands_its_wait_on() {
    let late = |settings: &Settings| ran_twice_for(0x1eb5, settings, 2);
    let mut reverted = queued_on_write();
    reverted.fixes.unanswered_handed_on = false;
    assert!(!late(&reverted).is_empty());
    assert_eq!(late(&queued_on_write()), Vec::<Duration>::new());
    assert_timeline_says(
        0x1eb5,
        "n2 takes over its previous run's wait of 12.000s without an answer",
    );
    assert_timeline_says(0x1eb5, "99.780s n2 kills pod 2");
}

/// How long `pod` ran past its deletion in the scenario of `seed`, each time it did.
fn ran_twice_for(seed: u64, settings: &Settings, pod: usize) -> Vec<Duration> {
    sim::run(&Scenario::generate(seed), settings, false)
        .violations
        .into_iter()
        .filter_map(|v| match v {
            Violation::RunningTwice {
                pod: p, ran_for, ..
            } if p == pod => Some(ran_for),
            _ => None,
        })
        .collect()
}

/// Seed 0x1a62 (the default model): n0, n1 and n2 of a zone of four lost the API server within
/// 2.7 s, none certainly before the others, and enforced (the staggered expiry: each may have
/// been tainted while the zone still counted as healthy) on the word of n3, the one that reached
/// it. n3's agent was killed at 175.2 s; with its silence no evidence of a live control plane,
/// the three held, and the controller deleted n1's pod 4 (tolerating 5 s) at 186.4 s, 1.9 s
/// before a round read n1's taint. Now n3's answer to n1's round of 173.3 s still says, in the
/// round of 176.3 s, that it reaches the API server (`Fixes::silent_remembered`): n1 enforces
/// and kills the pod at 178.9 s, 7.5 s before its deletion.
#[test]
fn a_peer_that_reached_the_api_server_is_still_evidence_when_it_falls_silent() {
    let late = |settings: &Settings| ran_twice_for(0x1a62, settings, 4);
    let mut reverted = queued_on_write();
    reverted.fixes.silent_remembered = false;
    assert!(!late(&reverted).is_empty());
    assert_eq!(late(&queued_on_write()), Vec::<Duration>::new());
    assert_timeline_says(0x1a62, "but 1 silent now said so within the last 15s");
    assert_timeline_says(0x1a62, "178.886s n1 kills pod 4");
}

/// Seed 0x1720 (the default model): n5's link to the API server was cut at 57.9 s and came back
/// at 61.5 s. Its agent's request hung to its timeout and counted it cut off at 64.9 s, while
/// its kubelet renewed the Lease on the returned link. The agent stopped pod 9 at 70.9 s, 20 ms
/// before it reconnected, though the control plane never judged the node. Now every round has
/// peers read the kubelet Lease, and a renewal later than the agent's own last contact by more
/// than a renew interval and a second moves the deadlines (`Fixes::kubelet_heard_after`,
/// `fencing::counted_with_kubelet`).
#[test]
fn a_kubelet_renewal_read_after_the_agents_own_requests_failed_moves_the_deadlines() {
    let scenario = Scenario::generate(0x1720);
    let mut reverted = queued_on_write();
    reverted.fixes.kubelet_heard_after = false;
    // The probe of the kubelet's path finds the return as well: each rule alone spares pod 9.
    reverted.fixes.node_path = false;
    assert_eq!(wrongful_stops(&scenario, &reverted), vec![9]);
    reverted.fixes.node_path = true;
    assert_eq!(wrongful_stops(&scenario, &reverted), Vec::<usize>::new());
    assert_eq!(
        wrongful_stops(&scenario, &queued_on_write()),
        Vec::<usize>::new()
    );
}

/// Seed 0x52 with cuts of an agent's own path to the API server
/// (`Scenario::with_agent_path_cuts`): n1's agent lost its path at 111.5 s for two minutes
/// while its kubelet, on the node's own link, kept renewing. Cut off at 118.7 s, alone in its
/// zone while the other zone reached the API server, it enforced at 133.7 s and stopped pods 3
/// and 4 of a node the control plane never judged. Now its peers read the kubelet's renewals,
/// each later than the agent's last contact, and no deadline comes due. Seed 0x1 likewise (n6's
/// path cut at 269.9 s): pod 15 (30 s of SIGTERM grace, tolerating 4 s) is planned as on the
/// taint, its SIGTERM a second before the kill, so each renewal read moves it again before it
/// is sent (`FencePolicy::kubelet_heard`); with the whole grace it was sent before the next one
/// was read.
#[test]
fn an_agent_whose_own_path_failed_stops_nothing_while_its_kubelet_is_heard() {
    for (seed, node, stopped) in [(0x52, 1, vec![3, 4]), (0x1, 6, vec![15, 21])] {
        let scenario = Scenario::generate(seed).with_agent_path_cuts();
        assert!(
            scenario
                .events
                .iter()
                .any(|(_, e)| *e == Event::CutAgentPath(node))
        );
        let mut reverted = queued_on_write();
        reverted.fixes.kubelet_heard_after = false;
        // The probe of the kubelet's path holds these nodes as well: each rule alone spares
        // their pods.
        reverted.fixes.node_path = false;
        let mut before = wrongful_stops(&scenario, &reverted);
        before.sort_unstable();
        assert_eq!(before, stopped, "seed {seed:#x}");
        for node_path in [false, true] {
            let mut with = queued_on_write();
            with.fixes.node_path = node_path;
            assert_eq!(
                wrongful_stops(&scenario, &with),
                Vec::<usize>::new(),
                "seed {seed:#x}"
            );
        }
        reverted.fixes.node_path = true;
        assert_eq!(wrongful_stops(&scenario, &reverted), Vec::<usize>::new());
    }
}

/// Seed 0x420 with cuts of an agent's own path (`Scenario::with_agent_path_cuts`): the node
/// whose kubelet alone still reached the API server had its agent's own path cut, and answered
/// its peers "cut off"; every other node was cut off too, every agent held on "every node known
/// cut off", and the controller, which heard that one node, evicted the others' zone: pod 0 ran
/// 23 s past its deletion. Now each round of a cut-off agent probes the kubelet's path
/// (`fencing::NodePath`, `Fixes::node_path`): answered, the agent answers "reachable", and the
/// others enforce as the controller evicts.
#[test]
fn an_agent_whose_kubelets_path_answers_tells_its_peers_it_reaches_the_api_server() {
    let scenario = Scenario::generate(0x420).with_agent_path_cuts();
    let ran_twice = |settings: &Settings| -> Vec<(usize, Duration)> {
        sim::run(&scenario, settings, false)
            .violations
            .into_iter()
            .filter_map(|v| match v {
                Violation::RunningTwice { pod, ran_for, .. } => Some((pod, ran_for)),
                _ => None,
            })
            .collect()
    };
    let mut reverted = queued_on_write();
    reverted.fixes.node_path = false;
    let before = ran_twice(&reverted);
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0].0, 0);
    assert!(before[0].1 > Duration::from_secs(20), "{before:?}");
    assert_eq!(ran_twice(&queued_on_write()), vec![]);
}

/// Seeds 0xefd and 0x18ec (issue 22, the 1–10,000 run of the twenty-ninth session): an outage of
/// the API server (0xefd: 241.8–387.0 s) outlasted the controller-manager's renew deadline; its
/// successor takes over 15 s after the return and starts every toleration again. n9, back at
/// 387.093 s with its Node still carrying the taint of before the outage, planned on the taint's
/// `timeAdded` and stopped pod 15 (tolerating 134 s) at once; the controller-manager, once it
/// led, removed the taint. Now the read of the leader Lease at the return shows its holder last
/// renewed before the outage: no timer runs, and none that comes started before that read
/// (`core::leader`, `Fixes::leader_read`).
#[test]
fn a_taint_that_outlived_the_controller_managers_lead_counts_from_the_read_that_proves_it() {
    assert_spared(0xefd, |f| f.leader_read = false, &[15]);
    assert_timeline_says(
        0xefd,
        "387.093s n9 reads the leader Lease: Lapsed, timers from 387.093s",
    );
    assert_spared(0x18ec, |f| f.leader_read = false, &[39]);
}

/// Seeds 0x381, 0x16a2 and 0x1cad (issue 22, the 1–10,000 run of the thirtieth session). In
/// 0x381, 14 nodes of a zone of 19 lost the API server and their peer links 90 s before n14 lost
/// its own: to n14 they were silent, silence counts as ready, and "1 of 19 cut off" enforced as in
/// a healthy zone; the controller had recorded the zone partially disrupted and never tainted
/// n14, whose pod 33 (tolerating 8 s) it stopped. In 0x16a2 and 0x1cad nodes cut off together
/// enforced on the staggered expiry's guess after the controller had recorded the disruption. A
/// peer that reaches the API server now reads the zone as recorded for the asker, and a partial
/// disruption recorded with the asker untainted holds (`quorum::ZoneRecord`,
/// `Fixes::zone_recorded`).
#[test]
fn a_zone_the_controller_records_partly_disrupted_holds_what_the_peers_answers_would_enforce() {
    assert_spared(0x381, |f| f.zone_recorded = false, &[33]);
    assert_timeline_says(
        0x381,
        "238.663s n14 quorum hold: a peer that reaches the API server reads 14 of the 19 node(s) of zone zone-0 recorded not Ready",
    );
    // Since the controller counts a node Ready only on its kubelet's status (thirty-third session),
    // the reverted run also stops pod 79 there.
    assert_spared(0x16a2, |f| f.zone_recorded = false, &[77, 80, 79]);
    // The peers' own kubelets' renewals (forty-sixth session) order 0x1cad's nodes too.
    assert_spared(
        0x1cad,
        |f| {
            f.zone_recorded = false;
            f.peer_kubelet_ordered = false;
        },
        &[6],
    );
}

/// Seed 0xcdf7 (found by the soak of 50,001–100,000, thirty-second session). Six nodes of a zone
/// lose the API server and no peer answers that it reaches it, so n1 holds: "every node known is
/// cut off", then "5 of 6" once n2's agent crashes. But n2's kubelet was back: the controller saw
/// a healthy zone, tainted n1 at 146.4 s and deleted its pod 2 (tolerating 39 s) at 185.4 s. n1
/// learned of the taint at 174.2 s from a peer's read and counted from the hold's end (159.2 s):
/// the pod ran 12.9 s past its deletion. A taint read with no read without it since the hold
/// began may have come during the hold (`Fixes::taint_during_hold`). Since the thirty-fifth
/// session the peers' answers carry the taint's `timeAdded` (`Fixes::node_times_read`), which
/// counts from 146.4 s and stops the pod in time without that rule too: the defect is replayed
/// without both.
#[test]
fn a_taint_read_after_a_hold_counts_from_before_the_holds_end() {
    let mut reverted = queued_on_write();
    reverted.fixes.taint_during_hold = false;
    assert!(running_twice(0xcdf7, &reverted).is_empty());
    reverted.fixes.node_times_read = false;
    assert_eq!(running_twice(0xcdf7, &reverted), [2]);
    assert!(running_twice(0xcdf7, &queued_on_write()).is_empty());
}

/// Seed 0x11f (thirty-third session): a zone of six; n5's agent crashed at 61.3 s and its link was
/// cut at 67.7 s while it was down. Restarted into the cut, it was read its kubelet's renewal of
/// 62.8 s, 9 s after the contact on disk (53.1 s), but the partition on record made that read a
/// return not yet proven, and the fence counted from the contact on disk less the kubelet's lag.
/// It stopped pod 13 (tolerating 9 s) at 89.7 s, as "the zone may have been healthy when the
/// controller judged it"; the controller judged n5 no sooner than 102.8 s, by which time the zone
/// was partially disrupted, and kept the pod. Counted from the renewal read
/// (`Fixes::renewal_exact`), the fence plans it for 110.8 s, and the zone's partial disruption,
/// read at 108.1 s, holds it.
#[test]
fn a_renewal_read_after_a_restart_into_a_cut_counts_as_the_kubelets_own() {
    let scenario = Scenario::generate(0x11f);
    let mut reverted = queued_on_write();
    reverted.fixes.renewal_exact = false;
    assert_eq!(wrongful_stops(&scenario, &reverted), [13]);
    assert!(wrongful_stops(&scenario, &queued_on_write()).is_empty());
    assert!(running_twice(0x11f, &queued_on_write()).is_empty());
}

/// Seed 0x678 with the controller keeping its state through an outage (thirty-third session, once
/// the controller counted a node Ready only on its kubelet's status): after an outage of the API
/// server of 44 s, n8's agent and kubelet were back at 179.5 s; the controller wrote n8's Ready
/// Unknown at 181.4 s, and the kubelet, whose status had matched until then, was cut off again at
/// 192.8 s before its next status try. Its Lease renewals had refreshed the controller's probe
/// time, but the stored Unknown kept the node queued: tainted at 201.4 s, its pods 14 and 15
/// (tolerating 0 s) deleted then. The fence counted from its contact at 189.6 s and killed them at
/// 217.6 s, 16.1 s late. A Node seen recorded Unknown now counts from that write at the latest
/// (`Fixes::unknown_queued`, `fence_plan::queued_contact`): the kill comes as n8 knows itself cut
/// off, 3.5 s after the deletion (the time the cut took to show, which no plan shortens). Since
/// the thirty-fifth session the peers' answers carry the times they read on the Node
/// (`Fixes::node_times_read`), which give the same kill without the rule: the defect is replayed
/// without both.
#[test]
fn a_node_recorded_unknown_counts_from_that_write_whatever_its_lease_says() {
    let mut keeps = queued_on_write();
    keeps.controller.leader = None;
    let mut reverted = keeps;
    reverted.fixes.unknown_queued = false;
    for pod in [14, 15] {
        assert_eq!(
            ran_twice_for(0x678, &reverted, pod),
            ran_twice_for(0x678, &keeps, pod)
        );
    }
    reverted.fixes.node_times_read = false;
    for pod in [14, 15] {
        let late = ran_twice_for(0x678, &reverted, pod);
        assert!(
            late.len() == 1 && late[0] > Duration::from_secs(16),
            "{late:?}"
        );
        let fixed = ran_twice_for(0x678, &keeps, pod);
        assert!(
            fixed.len() == 1 && fixed[0] < Duration::from_secs(4),
            "{fixed:?}"
        );
    }
}

/// Seed 0xd4 in the default model (thirty-fourth session, once the simulated controller queued a
/// node for the taint on the pass after the one that wrote it Unknown, as upstream's does): n23,
/// in a zone of 44, was cut off at 203.5 s. Counting its pods' deletion from the end of the grace
/// period, its agent stopped pod 46 (tolerating 7 s) at 223.1 s, and the control plane kept the
/// pod: the zone was partially disrupted at 236.5 s, before n23 was tainted. No world the agent
/// could not tell from this one deletes it by then, since the taint comes a monitor period after
/// the write at the earliest. Counted so (`[fence] nodeMonitorPeriod`,
/// `FencePolicy::node_monitor_period`), the stop comes 5 s later, and a world the agent cannot
/// tell apart (its kubelet's last renewal earlier before the cut) deletes the pod by then.
#[test]
fn a_node_is_queued_for_the_taint_a_monitor_period_after_it_is_written_unknown() {
    let scenario = Scenario::generate(0xd4);
    let fixed = Settings::default();
    assert!(wrongful_stops(&scenario, &fixed).is_empty());
    let mut reverted = fixed;
    reverted.monitor_period = Duration::ZERO;
    assert_eq!(wrongful_stops(&scenario, &reverted), [46]);
}

/// Seed 0x889f in the default model (thirty-fifth session): zone-0's six nodes were cut off from
/// 123 s; at 166.4 s the zone counted as fully disrupted, so the controller took n0's taint off
/// as it added it, and n0's Ready=Unknown (written at 161.4 s) stayed. n0's agent was down from
/// 176.3 s to 203.5 s; meanwhile its link came back for a second and was cut again. Its new run,
/// cut off with no view of its Node, counted from its kubelet's renewal the peers read (at about
/// 197 s). But the node was still queued for the taint: the zone turned normal at 206.4 s and the
/// taint at 216.4 s deleted pods 0–2 (tolerating 0 s), which the agent killed 84 ms later. The
/// peers' answers now carry the Ready=Unknown's `lastTransitionTime` and the taint's `timeAdded`
/// they read (`core::quorum::NodeReads`), and the agent counts from them as from its own view of
/// the Node: it kills the three at 213.5 s, when the quorum says enforce.
#[test]
fn a_run_restarted_while_cut_off_counts_from_the_unknown_the_peers_read() {
    let fixed = Settings::default();
    assert!(running_twice(0x889f, &fixed).is_empty());
    let mut reverted = fixed;
    reverted.fixes.node_times_read = false;
    assert_eq!(running_twice(0x889f, &reverted), [0, 1, 2]);
}

/// Two seeds with cuts of an agent's own path (`Scenario::with_agent_path_cuts`; thirty-fifth
/// session). 0x24d7: n0's path was cut at 160.7 s and its agent crashed three times after; the
/// controller tainted n0 at 216.4 s. Run 4, restarted at 248.0 s, counted from its kubelet's
/// renewal as its peers read it, though they read the Node tainted too: pod 0 (tolerating 32 s)
/// ran 17.6 s past its deletion at 248.4 s. With the taint's `timeAdded` in the peers' answers
/// (`core::quorum::NodeReads`), the pod is stopped before. 0xfe5: n3's peers read its taint
/// (added at 106.3 s) as its first partition ended; the taint was removed after the return, and
/// in the next partition no peer reached the API server. A time kept through the return would
/// have stopped pod 8 (tolerating 139 s) at 245.3 s, a pod the control plane keeps: the times
/// read are of one partition. Pod 4's wrongful stop there is older, and the same either way.
#[test]
fn with_path_cuts_the_times_the_peers_read_count_within_their_partition() {
    let fixed = Settings::default();
    let mut reverted = fixed;
    reverted.fixes.node_times_read = false;
    let twice = |settings: &Settings| {
        let cuts = Scenario::generate(0x24d7).with_agent_path_cuts();
        sim::run(&cuts, settings, false)
            .violations
            .into_iter()
            .filter(|v| kind(v) == "running-twice")
            .count()
    };
    assert_eq!((twice(&fixed), twice(&reverted)), (0, 1));
    let fe5 = Scenario::generate(0xfe5).with_agent_path_cuts();
    assert_eq!(wrongful_stops(&fe5, &fixed), [4]);
    assert_eq!(wrongful_stops(&fe5, &reverted), [4]);
}

/// Seeds 0xe28 and 0xe75 in the default model (thirty-seventh session), each a pod tolerating
/// 0 s on a node the controller had written Ready=Unknown before its last cut and not yet
/// tainted. 0xe28: n4's kubelet had not posted its status in a return of 9 s, so n4 stayed
/// recorded Unknown, queued; cut off again at 144.3 s, its zone recorded normal again, it was
/// tainted as the zone's next token came, at 151.4 s. Its verdict (a healthy zone) waited for the
/// answers to settle, and pod 8 ran 88 ms past its deletion, until a peer read the taint. 0xe75:
/// an outage of the API server restarted the controller-manager; n0, recorded Unknown from
/// before it, was cut off again 1.8 s after the return, and the new leader's first pass took it
/// from the queue before it set the zone's rate, at 251.5 s: pod 1 ran 247 ms past its deletion.
/// A peer's read of the Node queued, in a zone recorded normal, now settles the verdict at
/// once (`Fixes::queue_read_settles`). And while the last read of the leader Lease found no
/// leader, a zone recorded partially disrupted holds no node its peers read with the Unknown its
/// own view showed (`Fixes::leaderless_first`): without that, n0's first round holds on the
/// record, and the rounds after wait to settle until the taint is read.
#[test]
fn a_node_read_queued_for_the_taint_stops_its_pods_before_the_taint_comes() {
    let fixed = Settings::default();
    assert!(running_twice(0xe28, &fixed).is_empty());
    assert!(running_twice(0xe75, &fixed).is_empty());
    let mut reverted = fixed;
    reverted.fixes.queue_read_settles = false;
    assert_eq!(running_twice(0xe28, &reverted), [8]);
    // The peers' reads of the lapse (forty-sixth session) cover 0xe75 too: reverted with it.
    let mut leader_lapse_ignored = fixed;
    leader_lapse_ignored.fixes.leaderless_first = false;
    leader_lapse_ignored.fixes.peer_leaderless = false;
    assert!(running_twice(0xe28, &leader_lapse_ignored).is_empty());
    assert_eq!(running_twice(0xe75, &leader_lapse_ignored), [1]);
    assert_timeline_under(0xe75, &fixed, "236.731s n0 SIGTERM pod 1");
    assert_timeline_under(
        0xe75,
        &leader_lapse_ignored,
        "236.731s n0 quorum hold: a peer that reaches the API server reads 4 of the 5 node(s)",
    );
}

/// Every zone recorded down since the controller judged the node (`Fixes::master_recorded`;
/// thirty-eighth session). 0x8aa: the only zone, of two nodes, both cut off, n0 judged last
/// (76.3 s), and every zone down from that pass; n1 came back at 78.4 s, and n0's round at
/// 79.5 s counted a healthy zone and stopped pod 0 (tolerating 0 s) at once, 32 s before the
/// taint, which came only after n1's kubelet posted Ready and the next token. 0x6e0: the same in
/// a zone of five (pods 6 and 7). A peer that reaches the API server now reads the zone with no
/// node Ready, no Node outside it and none gone from Ready after this one, and the node holds
/// until a kubelet posts Ready. 0x3ac: n1 went from Ready 15 s before n0, was tainted while n0
/// still counted Ready, and the taint was removed when both were down; pod 3, tolerating 8 s, was
/// deleted then. At n0's return n1 stops pod 3 before its replacement can start (without the last
/// fact, it held, and pod 3 ran 0.5 s past the start): since the forty-eighth session under a
/// hold that still stops what was due (`Fixes::zone_down_due`), before under an enforce.
#[test]
fn a_zone_recorded_down_since_the_node_was_judged_holds_it_until_a_kubelet_posts() {
    let fixed = Settings::default();
    assert_default_spares(&[(0x8aa, &[0]), (0x6e0, &[6, 7])], |f| {
        f.master_recorded = false
    });
    assert_timeline_under(
        0x8aa,
        &fixed,
        "79.465s n0 quorum hold: a peer that reaches the API server reads 2 of the 2 node(s) of zone zone-0 recorded not Ready (fully disrupted, and no Node outside it: every zone is down)",
    );
    let o = sim::run(&Scenario::generate(0x3ac), &fixed, false);
    assert!(any_running_twice(&o).is_empty(), "{:?}", o.violations);
    assert_timeline_under(
        0x3ac,
        &fixed,
        "207.025s n1 quorum hold: a peer that reaches the API server reads 2 of the 2 node(s) of zone zone-0 recorded not Ready (fully disrupted, and no Node outside it: every zone is down) and this node's Node without node.kubernetes.io/unreachable: the control plane taints nothing there while that stands, but this node left Ready before another did",
    );
    assert_timeline_under(0x3ac, &fixed, "207.025s n1 kills pod 3");
}

/// A peer back is asked first to read (`Fixes::nudger_reads`; thirty-eighth session). 0x25ee:
/// the only zone, of five, all cut off; n1 came back at 92.5 s and nudged the others. Every
/// peer's latest answer had been "cut off", so n4 asked another node still cut off for the
/// zone's record, read none, enforced on the staggered expiry's guess and stopped pod 11, which
/// the control plane kept: the record n1 read (four of five not Ready, a partial disruption)
/// held the next round. 0x2c2: the same in a zone of seven (pods 6 and 9). The
/// nudger now reads for them. Since the forty-third session the reverted world has one zone
/// reader (`Fixes::two_zone_readers` reverted too): with two, a round's second reader reads the
/// record in 0x25ee without the nudger's rule.
#[test]
fn a_peer_that_says_it_is_back_reads_the_zone_for_the_nodes_it_nudges() {
    // 0x25ee's pod 12 is stopped later, either way, by a node no peer answers: a stop under a
    // policy, not counted here.
    assert_default_spares(&[(0x25ee, &[11]), (0x2c2, &[9, 6])], |f| {
        f.nudger_reads = false;
        f.two_zone_readers = false;
    });
}

/// Seed 0x15a7 (issue 22, the default model's 1–10,000 run; the class the CI run after the
/// fortieth session met in tests/quorum_e2e.rs): an outage of the API server for everyone,
/// ended at 102.3 s, outlasted the controller-manager's renew deadline, and every agent back read
/// the leader Lease lapsed at 102.421 s. n8, restarted at 104.244 s and still cut off, heard its
/// peers reach the API server again, enforced, and stopped pod 17 (tolerating 32 s) at once,
/// counted from before the outage; the controller-manager that took over kept it. Its peers'
/// answers now carry what their reads prove (`quorum::LeaderReads`, `Fixes::peer_leader_read`).
#[test]
fn a_peers_read_of_the_controller_managers_lapsed_lead_bounds_a_cut_off_count() {
    assert_default_spares(&[(0x15a7, &[17])], |f| f.peer_leader_read = false);
    assert_timeline_under(
        0x15a7,
        &Settings::default(),
        "104.244s n8 peers' leader reads: timers from 102.421s",
    );
}

/// Seeds 0x47a and 0x85e (issue 22, the default model's 1–10,000 run; forty-second session).
/// In 0x47a, of a zone of four, n1 and n0 lost the API server at 75.9 s and 77.9 s and n2 at
/// 93.0 s: 15 s later, within the order's tie, so n2's count guessed it might have been judged
/// first and enforced. The API server had recorded n0 and n1 Unknown
/// by 111.7 s with n2 still Ready, and the pass that judged n2 recorded three of four not Ready
/// and never tainted it; n2 stopped pods 3 and 7 (tolerating 0 s) at 123.3 s. In 0x85e, the
/// three nodes of a zone of five cut off first had lost their peer links too, so n22's count
/// made a healthy zone of it, while the record read two of five Unknown and n22 still Ready;
/// n22 stopped pod 41 (tolerating 0 s). Both now hold on the record
/// (`ZoneRecord::disrupted_once_judged`, `Fixes::judged_partial`).
#[test]
fn a_node_whose_judgement_the_record_shows_makes_a_partial_disruption_stops_nothing() {
    // The peers' own kubelets' renewals (forty-sixth session) order 0x47a's nodes too.
    assert_default_spares(&[(0x47a, &[3, 7]), (0x85e, &[41])], |f| {
        f.judged_partial = false;
        f.peer_kubelet_ordered = false;
    });
}

/// Seed 0x1eed (issue 22, the default model's 1–10,000 run; forty-third session): n2, cut off at
/// 84.5 s in a zone of five, held on the record of two of five Unknown with itself still Ready
/// (`Fixes::judged_partial`). Its one zone reader crashed at 106.3 s, and the round at 108.5 s,
/// with no record, decided on the counts alone (a healthy zone, the silent peers counted Ready)
/// and stopped pod 5, which the control plane kept: the zone was recorded partially disrupted
/// at 116.3 s. Two peers read the record now (`Fixes::two_zone_readers`), and the round has the
/// other's.
#[test]
fn a_round_whose_zone_reader_went_down_has_the_other_readers_record() {
    assert_default_spares(&[(0x1eed, &[5])], |f| f.two_zone_readers = false);
}

/// Under the default settings, no seed of `seeds` stops a pod wrongfully outside a policy
/// (`sim::world::by_policy`); with `revert` applied to the fixes, each stops exactly its pods so.
fn assert_default_spares(
    seeds: &[(u64, &[usize])],
    revert: fn(&mut nodewarden::core::quorum::Fixes),
) {
    assert_pins(seeds, revert, |seed, settings| {
        pods_of(seed, settings, "wrongful-stop")
    });
}

/// Under the default settings `pods` finds none in any seed of `pins`; with `revert` applied to
/// the fixes, exactly the pods each names.
fn assert_pins(
    pins: &[(u64, &[usize])],
    revert: fn(&mut nodewarden::core::quorum::Fixes),
    pods: fn(u64, &Settings) -> Vec<usize>,
) {
    let fixed = Settings::default();
    let mut reverted = fixed;
    revert(&mut reverted.fixes);
    for &(seed, named) in pins {
        assert!(pods(seed, &fixed).is_empty(), "{seed:#x}");
        assert_eq!(pods(seed, &reverted), named, "{seed:#x}");
    }
}

/// A standby controller-manager (`Leader::standby`, `--controller-standby`; thirty-seventh
/// session) takes over an outage of the API server as soon as the API server answers and the old
/// lease has run out, where the default model's restarted process reads the Lease then and takes
/// over a lease duration later. Two seeds it finds open, pinned so the account can be checked
/// (README, *Simulation*): 0xe75, whose node was written Unknown before the outage and cut off
/// again 1.8 s after the return, before its kubelet posted: the standby's first pass tainted it
/// 1.1 s after the cut, and its pod tolerating 0 s ran 262 ms past its deletion, until the agent
/// knew itself cut off. And 0x56: a node back after the outage saw the standby's taint before its
/// kubelet posted, and its fence counted from its contact before the outage, earlier than the
/// taint, so it stopped a pod tolerating 22 s at once; the taint went 5 s later. Counting from
/// the taint's `timeAdded` would keep it, but a taint eviction timer started for a `not-ready`
/// taint goes on when it is swapped for `unreachable` (docs/semantics.md §4.3), so that time is
/// no bound. In the default model both pass.
#[test]
fn a_standby_controller_manager_takes_over_at_the_return() {
    let restarted = Settings::default();
    let mut standby = restarted;
    if let Some(leader) = standby.controller.leader.as_mut() {
        leader.standby = true;
    }
    assert!(running_twice(0xe75, &restarted).is_empty());
    assert_eq!(running_twice(0xe75, &standby), [1]);
    assert_timeline_under(
        0xe75,
        &standby,
        "236.469s a restarted controller-manager takes over",
    );
    // The wrongful stops not under a policy counted apart.
    let wrongful = |settings: &Settings| -> Vec<usize> {
        sim::run(&Scenario::generate(0x56), settings, false)
            .violations
            .into_iter()
            .filter_map(|v| match v {
                Violation::WrongfulStop {
                    pod,
                    by_policy: false,
                    ..
                } => Some(pod),
                _ => None,
            })
            .collect()
    };
    assert!(wrongful(&restarted).is_empty());
    // Counting a taint added after the peers' read without it from its own time
    // (`Fixes::taint_after_read`) spares it.
    assert!(wrongful(&standby).is_empty());
    standby.fixes.taint_after_read = false;
    assert_eq!(wrongful(&standby), [15]);
}

/// Kubelets that post Ready=False (`--not-ready`, `Scenario::with_not_ready`; thirty-ninth
/// session): the controller's not-ready taint starts each pod's timer for it, and its swap for the
/// unreachable taint as the node goes Unknown keeps that timer (docs/semantics.md §4.3). With
/// `Fixes::not_ready_kept` reverted the fence knew nothing of it and counted from its contact.
/// 0x1: n1 posted Ready=False at 216.7 s, was tainted not-ready at 221.5 s and cut off at
/// 243.9 s; its pods 3 and 4 (38 s and 39 s for either taint) were deleted at 259.5 s and 260.5 s
/// and ran 35–36 s on. 0x102: pods 3 and 2. The fence now counts that taint's timers, and plans
/// on it while the link holds.
#[test]
fn a_not_ready_taint_keeps_its_timers_through_the_swap() {
    // The peers' read of the taint's time spares 0x102's pods too (`Fixes::not_ready_time_read`).
    assert_not_ready_twice(&[(0x1, &[3, 4]), (0x102, &[3, 2])], |f| {
        f.not_ready_kept = false;
        f.not_ready_time_read = false;
    });
}

/// A Ready=False the kubelet posted counts as the not-ready taint added at the post while the
/// Node carries neither of the controller's taints (`Fixes::ready_false_queued`; fortieth
/// session, `--not-ready`). 0xc9: n8's kubelet posted Ready=False at 165.3 s, and its link was
/// cut before the controller's queue added the not-ready taint at 176.4 s; its agent never saw
/// that taint, and counted pod 19 (24 s) from its contact with the unreachable taint's rules.
/// The pod was deleted at 200.4 s and ran 31.8 s on. 0xed: pod 0, 31.3 s. Since the
/// forty-third session the reverted world reverts `Fixes::not_ready_watched` too: n8, not Ready
/// as last seen, now knows itself cut off within seconds of the cut, and the taint its peers
/// read then stops pod 19 in time by itself.
#[test]
fn a_ready_false_seen_before_the_cut_counts_as_the_not_ready_taint() {
    assert_not_ready_twice(&[(0xc9, &[19]), (0xed, &[0])], |f| {
        f.ready_false_queued = false;
        f.not_ready_watched = false;
        f.not_ready_time_read = false;
    });
}

/// A pod that tolerates unreachable forever is stopped by its not-ready timer when that ends
/// before the controller's swap for the unreachable taint can cancel it (`Fixes::not_ready_only`;
/// fortieth session, `--not-ready`). 0x4f3: n22's kubelet posted Ready=False at 147.8 s, the
/// controller added the not-ready taint at 151.4 s, and the link went at 153.9 s; pod 39
/// (unreachable forever, not-ready 8 s) was deleted at 159.4 s, 37 s before the swap, and ran
/// 148.2 s on: the fence planned it never.
#[test]
fn a_pod_tolerating_unreachable_forever_is_stopped_by_its_not_ready_timer() {
    assert_not_ready_twice(&[(0x4f3, &[39])], |f| f.not_ready_only = false);
}

/// A peer's read that finds the not-ready taint counts as tainted (`Fixes::not_ready_read`;
/// fortieth session, `--not-ready`). 0x1514: n0, back from a partition at 174.8 s, saw the
/// unreachable taint added at 91.3 s and was cut off again at 176.0 s; the controller swapped the
/// taint for not-ready at 176.4 s, keeping its timers. The peers' reads found no unreachable
/// taint, and each moved the deadlines later, as a read without a taint: pod 1 (156 s) was
/// deleted at 247.3 s and ran 54.3 s on.
#[test]
fn a_read_of_the_not_ready_taint_is_a_read_of_a_taint() {
    assert_not_ready_twice(&[(0x1514, &[1])], |f| f.not_ready_read = false);
}

/// A Node not Ready as last seen has its Lease read every second, and a failure cuts it off at
/// once (`Fixes::not_ready_watched`; forty-third session, `--not-ready`). 0x86a: n7's kubelet
/// posted Ready=False at 93.9 s, the controller added the not-ready taint at 101.3 s, and the link
/// hung at 101.6 s, before n7's watch delivered the taint. Pod 15 (not-ready 7 s) was deleted at
/// 108.3 s; n7 knew itself cut off only at 110.8 s, `unreachableAfter` after its last contact,
/// and the pod ran 2.5 s on. Now n7 is cut off at 103.3 s, a peer's read of the taint settles
/// its verdict, and the pod is stopped then.
#[test]
fn a_node_not_ready_is_cut_off_by_its_first_unanswered_read() {
    assert_not_ready_twice(&[(0x86a, &[15])], |f| f.not_ready_watched = false);
}

/// A peer's read of the Node with its kubelet's Ready=False and neither taint is a read of it
/// queued for the not-ready taint, which settles a pending enforce in a zone recorded normal
/// (`Fixes::ready_false_read`; forty-third session, `--not-ready`). 0x370: n13's kubelet posted
/// Ready=False at 221.9 s and its link went at 224.0 s; cut off at 226.0 s, its first round read
/// the Node without a taint and waited for its answers to settle. The taint came at 226.5 s, and
/// pod 35 (not-ready 0 s) was deleted then and ran 2.5 s on, until the next round read the
/// taint. Now the first round settles, and the pod is stopped 0.5 s before the taint.
#[test]
fn a_node_read_with_its_kubelets_ready_false_is_queued_for_the_not_ready_taint() {
    assert_not_ready_twice(&[(0x370, &[35])], |f| f.ready_false_read = false);
}

/// What the peers read of the Node in an earlier partition is forgotten once the node's own view
/// shows the controller's taint removed (`Fixes::reads_forgotten`; forty-third session,
/// `--not-ready`). 0x26d5: n1's peers read its Node without the taint at 99.4 s and with it at
/// 102.4 s, in a partition that ended at 164.5 s; the taint went at 171.4 s. Its kubelet posted
/// Ready=False at 295.1 s, the not-ready taint came at 296.5 s, and the link went at 388.6 s. Cut
/// off at once (`Fixes::not_ready_watched`), n1's first round read the taint, and the old reads
/// counted it from 89.4 s (99.4 s less `READ_SLACK`): pod 6 (255 s) was stopped at 390.1 s,
/// 161 s before its deletion, which a master disruption then cancelled. Now it counts from the
/// taint its own view saw.
#[test]
fn reads_of_an_earlier_partition_are_forgotten_once_the_taint_is_seen_removed() {
    assert_pins(
        &[(0x26d5, &[6])],
        |f| f.reads_forgotten = false,
        not_ready_wrongful,
    );
}

/// The peers read the not-ready taint's `timeAdded` too, and the fence counts from it as from the
/// same taint on its own view, through the controller's swap for the unreachable one
/// (`Fixes::not_ready_time_read`; forty-fourth session, `--not-ready`). 0xe8: n3's kubelet posted
/// Ready=False at 144.2 s, the not-ready taint came at 146.4 s and the link went at 146.7 s; its
/// agent's watch lagged 8.3 s, so its view had neither. Cut off at 158.4 s, its peers read the
/// taint but not its time, and pod 7 (not-ready 25 s) was counted from the last contact: deleted
/// at 171.4 s, it was stopped at 201.0 s. Now it is stopped at 169.0 s. 0x1b7: the same with
/// n1's pod 3 (34 s), deleted at 145.3 s and stopped at 177.3 s.
#[test]
fn the_not_ready_taints_time_the_peers_read_counts_as_the_own_views() {
    assert_not_ready_twice(&[(0xe8, &[7]), (0x1b7, &[3])], |f| {
        f.not_ready_time_read = false
    });
}

/// Each pod's timers count from no earlier than its creation (`Fixes::pod_created`; forty-fourth
/// session, `--not-ready`). 0x21: n5's kubelet posted Ready=False at 53.3 s and the not-ready
/// taint came at 56.3 s; pod 10, tolerating it 240 s, was created on n5 at 166.6 s, so the
/// controller would delete it at 406.6 s. The fence counted from the taint and stopped it at
/// 294.0 s; the kubelet posted Ready=True at 366.1 s, and the taint went. Now it runs on. 0x19e:
/// n6's unreachable taint (66.3 s) was swapped for not-ready at 71.3 s; pod 18 (unreachable 48 s,
/// not-ready 330 s), created at 136.1 s, was counted from the first taint of the run, whose
/// timer it never had, and stopped at once; pod 19 (173 s, 265 s), created at 183.9 s, at
/// 236 s. The controller kept both. Now a pod created after the taint on now was added is
/// counted without the run's first.
#[test]
fn a_pod_created_on_a_tainted_node_counts_from_its_creation() {
    assert_pins(
        &[(0x21, &[10]), (0x19e, &[18, 19])],
        |f| f.pod_created = false,
        not_ready_wrongful,
    );
}

/// A plan on the not-ready taint's timer of a pod tolerating the unreachable taint forever lasts
/// until the latest instant the controller can swap the taint back, counted from the latest
/// contact it may have heard (`Fixes::swap_latest`; forty-fifth session, `--not-ready`). 0xf61:
/// n0 came back at 277.7 s, saw its taint, and its kubelet posted Ready=False at 280.4 s, which
/// swapped it for not-ready at 281.5 s. Cut off again at 285.0 s, from the API server and its
/// peers, after a return too short to move the count (its contact stayed at 227.7 s), it expected
/// the swap back by 272.7 s, before the not-ready timer of pod 2 (21 s) ended, and planned
/// nothing: the controller deleted pod 2 at 302.5 s, and it ran until the link came back at
/// 396.0 s. Now it is stopped at 300.0 s.
#[test]
fn a_plan_on_the_not_ready_timer_lasts_until_the_latest_swap() {
    assert_not_ready_twice(&[(0xf61, &[2])], |f| f.swap_latest = false);
}

/// Silence alone holds nothing: a peer silent now that answered "cut off" within
/// `CUT_OFF_STANDS` counts as that answer where counting it as ready alone would hold a partial
/// disruption of a small zone (`Fixes::cut_off_remembered`; forty-fifth session, `--not-ready`).
/// 0xb23: zone-1 of six; five nodes lost the API server at 211.8–214.5 s, and n12, not Ready,
/// lost it with them, then its peers too at 238.1 s. From 240.2 s n9's rounds counted n12's
/// silence as ready: 5 of 6, a partial disruption of a small zone, hold. The controller, seeing
/// zone-1 fully disrupted and zone-0 up, tainted n9 at 251.5 s and deleted pod 13 (6 s) at
/// 257.5 s; it ran until 260.0 s. Now n12 counts as cut off and pod 13 is stopped at 245.8 s.
#[test]
fn a_peer_silent_after_it_said_cut_off_holds_nothing() {
    assert_not_ready_twice(&[(0xb23, &[13])], |f| f.cut_off_remembered = false);
}

/// With `--not-ready`: no pod runs twice (not excused) in each scenario of `pins`, and the pods
/// it names do with the fix `revert` switches off.
fn assert_not_ready_twice(
    pins: &[(u64, &[usize])],
    revert: fn(&mut nodewarden::core::quorum::Fixes),
) {
    assert_pins(pins, revert, not_ready_twice);
}

/// The pods that ran twice, not excused (`running-twice`), in scenario `seed` with `--not-ready`.
fn not_ready_twice(seed: u64, settings: &Settings) -> Vec<usize> {
    pods_in(
        &Scenario::generate(seed).with_not_ready(),
        settings,
        "running-twice",
    )
}

/// The pods stopped wrongfully, not by policy (`wrongful-stop`), in scenario `seed` with
/// `--not-ready`.
fn not_ready_wrongful(seed: u64, settings: &Settings) -> Vec<usize> {
    pods_in(
        &Scenario::generate(seed).with_not_ready(),
        settings,
        "wrongful-stop",
    )
}

/// Back from a partition, the fence counts the taint on its own view, not one its peers read
/// while it was cut off (`Fixes::own_view_at_return`; thirty-ninth session). 0x1cab: n11, back
/// at 91.5 s, saw the taint added at 86.3 s; the peers' last read without it (84.4 s) less 10 s
/// counted it from 74.4 s, and pod 26 (38 s) was stopped at 109.4 s, though its kubelet's post
/// had the taint removed at 111.3 s, before the deletion at 124.3 s. Counting a taint added after
/// the peers' read without it from its own time (`Fixes::taint_after_read`) spares it too.
#[test]
fn back_from_a_partition_the_own_view_counts_the_taint() {
    assert_default_spares(&[(0x1cab, &[26])], |f| {
        f.own_view_at_return = false;
        f.taint_after_read = false;
    });
}

/// A peer whose own kubelet last renewed more than a monitor period before this node's, as each
/// node's readers read it, counts as judged first (`Fixes::peer_kubelet_ordered`; forty-sixth
/// session). 0xe0e: of zone-0's six nodes, n1, n0 and n2 lost the API server at 225.0–227.0 s and
/// n4 at 237.3 s, their agents' contacts within the order's tie of n4's; n4 guessed that it was
/// judged first, enforced from 254.4 s, and stopped pod 27 (0 s) at 269.0 s, which the
/// controller, having judged it in the partial disruption, kept. By the kubelets' renewals the
/// three were judged first: n4 holds from 254.4 s. 0x252f: the same in a zone of 15.
#[test]
fn a_peer_whose_kubelet_renewed_first_counts_as_judged_first() {
    assert_pins(
        &[(0xe0e, &[27]), (0x252f, &[24])],
        |f| f.peer_kubelet_ordered = false,
        |seed, s| pods_of(seed, s, "wrongful-stop"),
    );
}

/// A peer's read of the leader Lease that found no process leading counts as this node's own
/// (`Fixes::peer_leaderless`; forty-sixth session). 0xbd5: zone-1's fifteen nodes lost the API
/// server at 175.6–177.8 s, n6 last; by its peers' kubelets nine went silent first, and it held.
/// The API server then went down for everyone (229.8–242.7 s), the controller-manager lost its
/// lead, and the peers read the lapse from 243.5 s. The new leader's first pass, at 261.5 s,
/// tainted n6 on zone-1's fresh token and deleted pod 16 (0 s), which ran until 262.9 s. Now n6
/// enforces on its peers' read at 244.2 s. 0x2f7d: the same in a zone of five, two pods.
#[test]
fn a_peer_that_reads_no_leader_leaves_a_node_queued_for_the_taint_no_hold() {
    assert_pins(
        &[(0xbd5, &[16]), (0x2f7d, &[0, 1])],
        |f| f.peer_leaderless = false,
        running_twice,
    );
}

/// A zone recorded with none of its Nodes Ready is no partial disruption, whatever the answers
/// count (`Fixes::full_recorded`; forty-sixth session, `--not-ready`). 0x1304: zone-1 of five;
/// n4, n6, n3 and n5 lost the API server at 237.9–240.0 s, and n7, which kept it, had its
/// kubelet post Ready=False at 300.6 s. n3 held on 4 of 5 cut off while the controller saw 5 of 5
/// not Ready from 301.5 s, tainted n3 at 311.5 s and deleted pod 7 (0 s), which ran 2.7 s on. n3
/// now enforces on its peer's read of the zone at 302.2 s.
#[test]
fn a_zone_recorded_with_no_node_ready_holds_nothing() {
    assert_not_ready_twice(&[(0x1304, &[7])], |f| f.full_recorded = false);
}

/// Whether the peers' reads for a node ever came back survives its agent's restart
/// (`Fixes::peers_read_kept`; forty-eighth session). 0x19ca: n4, first of zone-0's five, lost the
/// API server at 217.4 s; its agent, down from 229.4 s, started again at 241.3 s, after the four
/// others lost it too (230.6–231.4 s). n0 still said it reached the API server, though its read
/// failed. The new run had seen no read come back, so its SIGTERMs did not wait: pod 10 (25 s,
/// grace 30 s) was signalled at 241.3 s, 30 s ahead of its kill, and n4's link came back at
/// 244.7 s. Now the SIGTERM waits for a read from the run's first round.
#[test]
fn whether_the_peers_ever_read_survives_a_restart() {
    assert_pins(
        &[(0x19ca, &[10])],
        |f| f.peers_read_kept = false,
        |seed, s| pods_of(seed, s, "wrongful-stop"),
    );
}

/// A peer's read of the only zone recorded with no Node Ready, this node untainted though another
/// left Ready after it, turns an enforce into a hold that still stops each pod an enforce would
/// have had due by then (`Fixes::zone_down_due`; forty-eighth session). 0x1b9c: zone-0's five
/// nodes lost the API server (n0 at 77.7 s, the others at 141.9–149.5 s), the controller tainted
/// n3 and, as every node went down at 186.4 s, removed every taint. n0 came back at 187.1 s and
/// read the zone for the others, still recorded with none Ready. n1, judged at 181.4 s before
/// n2 and n4, enforced on the counts (its silent peers counted Ready) and SIGTERMed pod 4 (26 s,
/// grace 60 s) at 193.5 s, which the controller, its zone partially disrupted once n0 posted
/// Ready, never deleted. With `--not-ready`, 0x1531 no longer stops pods 7 and 2 outside the
/// policy.
#[test]
fn every_zone_down_recorded_holds_a_node_judged_before_another_but_what_was_due() {
    assert_default_spares(&[(0x1b9c, &[4])], |f| f.zone_down_due = false);
    assert_pins(
        &[(0x1531, &[7, 2])],
        |f| f.zone_down_due = false,
        not_ready_wrongful,
    );
}

/// Of the peers whose latest answer was not "reachable", the silent ones are asked to read before
/// those that said "cut off" (`Fixes::silent_readers_first`; forty-ninth session). 0x1def:
/// zone-0's four nodes lost the API server at 22.7–27.3 s, n3 its peers too; the controller
/// tainted n3, then, every node down at 71.3 s, removed the taint. n3's links came back at
/// 135.2 s; it had answered no peer's question while cut off, so it nudged no one. n0's round at 137.7 s
/// asked n1 and n2, which had said "cut off", for the zone record, and n3 only for its Node:
/// untainted, so it enforced on the staggered expiry's guess and stopped pod 0 (7 s, its
/// deletion counted 3 s past). The next round's record, read by n3, would have held it: n0 left
/// Ready last.
#[test]
fn a_silent_peer_is_asked_to_read_before_one_that_said_cut_off() {
    assert_default_spares(&[(0x1def, &[0])], |f| f.silent_readers_first = false);
}

/// Under a hold on every zone down that still stops what was due, a pod tolerating the taint for
/// as long as it could have stood is kept (`Fixes::zone_down_window`; forty-ninth session).
/// 0x2531: zone-0's five nodes lost the API server at 191.7–194.2 s. The controller wrote n2
/// Unknown at 226 s, tainted it on the next pass at 231.5 s, and in that same pass found every
/// node down and removed every taint. n1 and n0 came back at 238.1–238.4 s and read the zone
/// for n2: every Node Unknown, n2 not the last. The hold stopped pod 5 (7 s), due by then as counted, though
/// the last Node's Unknown write came 5 s after n2's: no taint could have stood for 7 s.
#[test]
fn every_zone_down_recorded_keeps_a_pod_tolerating_longer_than_a_taint_could_stand() {
    assert_default_spares(&[(0x2531, &[5])], |f| f.zone_down_window = false);
}

/// Fencing on the taint, not cut off, a taint added no earlier than the peers' latest read of the
/// Node without it counts from its own time (`Fixes::taint_after_read`; forty-seventh session).
/// 0x114: n3, cut off from 50.2 s, came back at 81.2 s; the controller, its zone still counted
/// healthy on that pass, tainted it at 81.3 s, 1.1 s after the peers' read at 80.2 s found the
/// Node without the taint. The fence counted from that read less 10 s and SIGTERMed pod 5 (19 s)
/// at 86.2 s; the kubelet's post had the taint removed at 86.3 s, 14 s before the deletion was
/// due. 0x892: the same for pod 2 (58 s), stopped at 187.2 s, the taint removed at 191.4 s.
#[test]
fn a_taint_added_after_a_read_without_it_counts_from_its_own_time() {
    assert_pins(
        &[(0x114, &[5]), (0x892, &[2])],
        |f| f.taint_after_read = false,
        |seed, s| pods_of(seed, s, "wrongful-stop"),
    );
}
