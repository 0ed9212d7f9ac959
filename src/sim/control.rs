//! The control plane as the simulator models it: the node lifecycle controller and the taint
//! eviction controller, written from the upstream rules (docs/semantics.md §4–5:
//! `monitorNodeHealth`, `tryUpdateNodeHealth`, `handleDisruption`, `processTaintBaseEviction`, the
//! per-zone `RateLimitedTimedQueue`, `processPodOnNode`). It shares no code with the agent's
//! decisions it judges: a bug in `core` cannot hide here.
//!
//! What is modelled: probe timestamps refreshed only by the *kubelet's* Lease renewals (never by
//! the agent's writes), the 5 s monitor pass, the Ready condition stored as Unknown once the grace
//! period has passed (only while the API server answers the controller), zone states from the
//! stored conditions, master disruption (enter: taints removed, limiters at 0; exit: probe
//! timestamps reset), the NoExecute tainter's per-zone token buckets (burst 1) at 0.1/s, 0.01/s
//! for a partially disrupted zone of more than 50 nodes and 0 for a smaller one (a bucket
//! swapped in when the old one has no token starts empty: [`Bucket::swap`]), each pod
//! deleted `tolerationSeconds` after its node's taint was added, and the controller-manager's
//! restart when an outage of the API server outlasts its leader lease's renew deadline
//! ([`Leader`]), whose first pass removes every unreachable taint and queues the nodes still
//! recorded Unknown again. Left out: the not-ready taint (nodes here are reachable or not, never NotReady),
//! the startup grace period, pods' own conditions.

use std::time::Duration;

/// The controller's settings (kube-controller-manager flags, docs/semantics.md §5.1).
#[derive(Clone, Copy, Debug)]
pub struct ControllerSettings {
    pub monitor_period: Duration,
    pub grace: Duration,
    pub eviction_rate: f64,
    pub secondary_rate: f64,
    pub large_zone: usize,
    pub unhealthy_threshold: f64,
    /// kube-controller-manager's leader election (`--leader-elect`, on by default); `None`: the
    /// controllers keep their state through any outage, as the simulator modelled them until the
    /// thirteenth session.
    pub leader: Option<Leader>,
    /// How long one `monitorNodeHealth` pass takes. The controller runs it with
    /// `wait.UntilWithContext`, which starts the period when the pass ends: the passes drift
    /// later by this much each. Zero: exactly periodic passes, as the simulator had them until
    /// the fourteenth session, which with a grace period a whole number of periods judged every
    /// node one pass late (the test is strictly "after" the grace period).
    pub pass_duration: Duration,
    /// A stored Ready=Unknown turns True only when the kubelet posts its node status, as
    /// upstream's: a renewal of the node's Lease refreshes the probe time alone
    /// (`tryUpdateNodeHealth`; docs/semantics.md §5.5). False: the renewal counts the node Ready
    /// too, the simplification the simulator kept until the thirty-third session (and the only
    /// model of kubelets that post no status, `Settings::kubelet_status` off).
    pub ready_on_status: bool,
    /// A pass queues a node for the NoExecute taint (or takes it out of the queue) by the Ready
    /// condition the pass began with, as upstream's `processTaintBaseEviction` reads
    /// `observedReadyCondition`: a node written Unknown in one pass is queued in the next, a
    /// monitor period later (docs/semantics.md §5.5). False: by the condition the pass wrote, the
    /// simplification the simulator kept until the thirty-fourth session, which taints up to a
    /// period earlier.
    pub queue_on_observed: bool,
}

/// kube-controller-manager's leader election (`--leader-elect-lease-duration` 15 s,
/// `--leader-elect-renew-deadline` 10 s). Unable to renew its lease for the renew deadline, the
/// process exits ("leaderelection lost"); the restarted one takes over once the API server
/// answers and the old lease, which it first reads then, has expired. It starts with no node
/// seen: every node's grace period counts from its first pass, and the taint eviction controller
/// starts each pod's timer again (docs/semantics.md §5.2, §4.3).
#[derive(Clone, Copy, Debug)]
pub struct Leader {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    /// `--leader-elect-retry-period` (2 s): the leader renews its Lease this often.
    pub retry_period: Duration,
    /// A standby takes over: a second kube-controller-manager (an HA control plane runs one on
    /// each of its three hosts) that watched the Lease before the outage, so it acquires it as
    /// soon as the API server answers and the old holder's last renewal is a lease duration old
    /// (client-go counts from when the candidate saw the record, by its own clock; here from the
    /// renewal itself, the earliest it can have seen it). False: the restarted process alone,
    /// which first reads the Lease at the return and acquires it a lease duration later.
    pub standby: bool,
}

impl Default for Leader {
    fn default() -> Self {
        Leader {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            standby: false,
        }
    }
}

impl Default for ControllerSettings {
    fn default() -> Self {
        ControllerSettings {
            monitor_period: Duration::from_secs(5),
            grace: Duration::from_secs(40),
            eviction_rate: 0.1,
            secondary_rate: 0.01,
            large_zone: 50,
            unhealthy_threshold: 0.55,
            leader: Some(Leader::default()),
            pass_duration: Duration::from_millis(5),
            ready_on_status: true,
            queue_on_observed: true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ZoneState {
    Normal,
    Partial,
    Full,
}

impl ZoneState {
    fn word(self) -> &'static str {
        match self {
            ZoneState::Normal => "normal",
            ZoneState::Partial => "partially disrupted",
            ZoneState::Full => "fully disrupted",
        }
    }
}

/// One node as the controller keeps it.
#[derive(Clone, Debug)]
struct NodeHealth {
    zone: usize,
    /// The kubelet Lease's renewTime last seen, and the controller's time it was seen.
    lease_seen: Option<Duration>,
    /// The kubelet's node status last seen (when it was posted).
    status_seen: Option<Duration>,
    probe: Duration,
    /// The Ready condition as the controller counts it in its zones and taints (true: True;
    /// false: Unknown). It turns True again when the controller sees the kubelet's node status
    /// posted, as upstream's (`tryUpdateNodeHealth`: a renewal of the Lease refreshes the probe
    /// time alone), or also on a renewal of the Lease without
    /// [`ControllerSettings::ready_on_status`].
    ready: bool,
    /// The controller wrote Ready=Unknown and the kubelet has not posted its status since: the
    /// node carries `unreachable:NoSchedule`, which `doNoScheduleTaintingPass` follows at once,
    /// so the scheduler binds no replacement to it (docs/semantics.md §3, §5.3). Set when
    /// [`NodeHealth::ready`] turns Unknown, cleared only by [`ControlPlane::status_posted`]
    /// (`ready` may turn True on the kubelet's Lease before without
    /// [`ControllerSettings::ready_on_status`]), which the kubelet sends
    /// every `nodeStatusUpdateFrequency` once its status differs from the stored one.
    unknown_written: bool,
    /// When the node controller's NoExecute taint was added (its `timeAdded`), while it is on:
    /// the unreachable one, or the not-ready one with [`NodeHealth::not_ready_taint`].
    tainted_at: Option<Duration>,
    /// The taint on is `node.kubernetes.io/not-ready` (the kubelet posted Ready=False).
    not_ready_taint: bool,
    /// The kubelet's latest status seen said Ready=False (and no Unknown was written since): the
    /// condition False, which `ready` alone does not tell from Unknown.
    posted_not_ready: bool,
    /// The `timeAdded` of the first NoExecute taint of the node's unbroken run of them: a swap of
    /// one for the other keeps the run, and the taint eviction timers it started
    /// (docs/semantics.md §4.3); only the removal of the last one ends it.
    chain_from: Option<Duration>,
    /// Queued for the taint.
    queued: bool,
}

impl NodeHealth {
    /// Removes its NoExecute taint (`markNodeAsReachable` removes either), ending the run of
    /// them: the first one's `timeAdded`, the one its taint eviction timers count for.
    fn untaint(&mut self) -> Option<Duration> {
        self.tainted_at.take()?;
        self.not_ready_taint = false;
        self.chain_from.take()
    }
}

/// A token bucket with burst 1 (`flowcontrol.NewTokenBucketRateLimiter(qps, 1)`).
#[derive(Clone, Copy, Debug)]
struct Bucket {
    rate: f64,
    tokens: f64,
    at: Duration,
}

impl Bucket {
    fn refill(&mut self, now: Duration) {
        let dt = now.saturating_sub(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * self.rate).min(1.0);
        self.at = now;
    }
    fn take(&mut self, now: Duration) -> bool {
        self.refill(now);
        if self.rate > 0.0 && self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
    /// `RateLimitedTimedQueue::SwapLimiter`: nothing when the rate is the same; otherwise a new
    /// limiter, which never hands out more than the old one held. A positive rate starts a new
    /// token bucket, full, but first the old limiter is asked for a token (`TryAccept`): when it
    /// has none (a rate of 0 never has one) the new bucket is drained at once, so its first token
    /// comes a whole period (1 / rate) after the swap.
    fn swap(&mut self, rate: f64, now: Duration) {
        self.refill(now);
        if rate != self.rate {
            let old_had_one = self.take(now);
            self.rate = rate;
            self.tokens = if rate > 0.0 && old_had_one { 1.0 } else { 0.0 };
        }
    }
}

/// The control plane: what the API server stores that the simulation needs, and both controllers.
#[derive(Clone, Debug)]
pub struct ControlPlane {
    settings: ControllerSettings,
    nodes: Vec<NodeHealth>,
    zones: usize,
    zone_states: Vec<ZoneState>,
    buckets: Vec<Bucket>,
    master_disruption: bool,
    /// The kubelet's latest stored Lease renewal per node (renewTime).
    stored_renewal: Vec<Option<Duration>>,
    /// Per node: when its kubelet last posted its node status (a new `lastHeartbeatTime` on
    /// the Ready condition).
    stored_status: Vec<Option<Duration>>,
    /// Per node: whether that status said Ready=True (else False: `--not-ready`).
    stored_ready: Vec<bool>,
    /// Per node: while that status says Ready=False, when the kubelet posted the change (the
    /// condition's `lastTransitionTime`: a False posted again keeps it).
    false_since: Vec<Option<Duration>>,
    /// Whether the API server answers (the controller's informers and writes reach it, and so
    /// do agents whose links are up): set only by [`ControlPlane::api_down`] and
    /// [`ControlPlane::api_back`], which the world calls as the API server goes down and comes
    /// back; the world reads it from here.
    api_up: bool,
    /// When the API server went down, while it is down.
    down_since: Option<Duration>,
    /// A restarted controller-manager takes over at this instant ([`Leader`]); until then no
    /// controller runs.
    leading_from: Option<Duration>,
    /// How many times the controller-manager restarted: a taint eviction timer of an earlier
    /// process is gone.
    pub generation: u32,
    /// The leader Lease as stored ([`ControlPlane::leader_lease`]): the generation that holds it,
    /// when that one acquired it, and, once it exited, its last renewal.
    lease: (u32, Duration, Option<Duration>),
    /// A node its zone's queue takes first from an instant on ([`ControlPlane::taint_pass`]).
    queue_first: Option<(usize, Duration)>,
    /// Per node: each change of its Ready condition as recorded ([`NodeHealth::ready`]), in
    /// order: when, and whether it turned Ready.
    recorded: Vec<Vec<(Duration, bool)>>,
}

/// What one monitor pass or tainting pass changed.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    /// `(node, timeAdded)` of each unreachable taint added.
    pub tainted: Vec<(usize, Duration)>,
    /// The same of each not-ready taint (a Ready=False posted, `--not-ready`).
    pub not_ready_tainted: Vec<(usize, Duration)>,
    /// `(node, timeAdded, to not-ready)` of each swap of one NoExecute taint for the other.
    pub swapped: Vec<(usize, Duration, bool)>,
    /// `(node, timeAdded)` of each taint removed (of the first of its run, [`ControlPlane::chain`]),
    /// and whether entering master disruption removed it (rather than the node being heard
    /// again).
    pub untainted: Vec<(usize, Duration, bool)>,
    /// A restarted controller-manager made its first pass ([`ControlPlane::take_over`]): it
    /// removed every taint (in `untainted`), and taints again only through its queues.
    pub took_over: bool,
    /// `(zone, state, not ready, nodes)` of each zone whose state changed, for the timeline.
    pub zones: Vec<(usize, &'static str, usize, usize)>,
}

impl ControlPlane {
    pub fn new(settings: ControllerSettings, zone_of: &[usize], now: Duration) -> ControlPlane {
        let zones = zone_of.iter().copied().max().map_or(0, |z| z + 1);
        let rate = settings.eviction_rate;
        ControlPlane {
            settings,
            nodes: zone_of
                .iter()
                .map(|&zone| NodeHealth {
                    zone,
                    lease_seen: None,
                    status_seen: None,
                    probe: now,
                    ready: true,
                    unknown_written: false,
                    tainted_at: None,
                    not_ready_taint: false,
                    posted_not_ready: false,
                    chain_from: None,
                    queued: false,
                })
                .collect(),
            zones,
            zone_states: vec![ZoneState::Normal; zones],
            buckets: vec![
                Bucket {
                    rate,
                    tokens: 1.0,
                    at: now,
                };
                zones
            ],
            master_disruption: false,
            stored_renewal: vec![None; zone_of.len()],
            stored_status: vec![None; zone_of.len()],
            stored_ready: vec![true; zone_of.len()],
            false_since: vec![None; zone_of.len()],
            api_up: true,
            down_since: None,
            leading_from: None,
            generation: 0,
            lease: (0, now, None),
            queue_first: None,
            recorded: vec![Vec::new(); zone_of.len()],
        }
    }

    /// While the Ready=Unknown the controller wrote on `node` stands (its kubelet has not posted
    /// Ready=True since), when it was written: the condition's `lastTransitionTime`.
    pub fn unknown_since(&self, node: usize) -> Option<Duration> {
        if !self.nodes[node].unknown_written {
            return None;
        }
        self.recorded[node]
            .iter()
            .rev()
            .find(|(_, ready)| !ready)
            .map(|&(t, _)| t)
    }

    /// Whether `node`'s Ready condition was recorded True all through `from..=to` (it starts so).
    pub fn recorded_ready_through(&self, node: usize, from: Duration, to: Duration) -> bool {
        let changes = &self.recorded[node];
        let before = changes.iter().take_while(|(t, _)| *t <= from).last();
        before.is_none_or(|&(_, ready)| ready)
            && changes
                .iter()
                .all(|&(t, ready)| ready || t <= from || t > to)
    }

    /// From `from` on, `node`'s zone's queue takes it first while it waits there: one of the
    /// orders upstream's queue may take (see [`ControlPlane::taint_pass`]).
    pub fn take_first(&mut self, node: usize, from: Duration) {
        self.queue_first = Some((node, from));
    }

    /// The API server stopped answering everyone, the controller-manager too.
    pub fn api_down(&mut self, now: Duration) {
        self.api_up = false;
        self.down_since.get_or_insert(now);
    }

    /// The API server answers again. After an outage of at least the renew deadline the
    /// controller-manager has exited, and its successor leads one lease duration from now (a
    /// standby, [`Leader::standby`]: from now, or a lease duration after the old holder's last
    /// renewal if that is later); true when that happened (its timers are gone:
    /// [`ControlPlane::generation`]).
    pub fn api_back(&mut self, now: Duration) -> bool {
        self.api_up = true;
        let since = self.down_since.take();
        let Some(leader) = self.settings.leader else {
            return false;
        };
        if let Some(s) = since.filter(|s| now.saturating_sub(*s) >= leader.renew_deadline) {
            // The holder's last renewal before the outage stays in the Lease until its successor
            // acquires it (a holder that already exited keeps its own).
            let (_, acquired, lapsed) = &mut self.lease;
            let last = *lapsed.get_or_insert_with(|| renewal(*acquired, s, leader.retry_period));
            self.leading_from = Some(if leader.standby {
                now.max(last + leader.lease_duration)
            } else {
                now + leader.lease_duration
            });
            self.generation += 1;
            return true;
        }
        false
    }

    /// The leader Lease as a read at `now` finds it, while the API server answers: its holder (a
    /// generation), its `renewTime` (on the controller's clock, true time here) and its
    /// `leaseDurationSeconds`. The leader renews every retry period from its acquisition; a
    /// successor acquires it when it takes over ([`ControlPlane::running`]), and until then the
    /// Lease keeps the exited holder's last renewal. `None` without leader election.
    pub fn leader_lease(&self, now: Duration) -> Option<(u32, Duration, Duration)> {
        let leader = self.settings.leader?;
        let (holder, acquired, lapsed) = match self.leading_from {
            // Acquired, its first pass not made yet.
            Some(from) if now >= from => (self.generation, from, None),
            _ => self.lease,
        };
        let renewed = lapsed.unwrap_or_else(|| renewal(acquired, now, leader.retry_period));
        Some((holder, renewed, leader.lease_duration))
    }

    /// Whether the API server answers.
    pub fn api_up(&self) -> bool {
        self.api_up
    }

    /// Whether the controllers run at `now`: the API server answers and a controller-manager
    /// leads.
    pub fn running(&self, now: Duration) -> bool {
        self.api_up && self.leading_from.is_none_or(|t| now >= t)
    }

    /// The restarted controller-manager's first pass: no node seen before, every grace period
    /// from now; zone states and limiters fresh; stored conditions as the API server keeps them,
    /// every unreachable taint removed (until the thirty-first session the taints stayed, and
    /// the taint eviction controller started their pods' timers again at this pass: the first
    /// taint of each zone comes back within the tainting worker's 100 ms, the others at the
    /// zone's rate, 10 s apart, or never in a partial disruption of a small zone).
    fn take_over(&mut self, now: Duration, changes: &mut Changes) {
        if let Some(acquired) = self.leading_from.take() {
            self.lease = (self.generation, acquired, None);
        }
        for (i, n) in self.nodes.iter_mut().enumerate() {
            // Every node is one it observes for the first time, and `monitorNodeHealth` marks
            // each such node reachable: its NoExecute taints go (`markNodeAsReachable`). A node
            // still recorded Unknown is queued again in the same pass and tainted afresh, at its
            // zone's rate (docs/semantics.md §5.2).
            if let Some(t) = n.untaint() {
                changes.untainted.push((i, t, false));
            }
            let renewed = self.stored_renewal[i];
            let posted = self.stored_status[i];
            // A kubelet that posted its status since the old process last saw it says what it
            // posted, Ready=True unless `--not-ready` (and, in the simplification, one that renewed
            // its Lease says True, as [`ControlPlane::monitor`] has it).
            if posted > n.status_seen {
                n.ready = self.stored_ready[i];
                n.posted_not_ready = !self.stored_ready[i];
            } else if !self.settings.ready_on_status && renewed > n.lease_seen {
                n.ready = true;
                n.posted_not_ready = false;
            }
            n.lease_seen = renewed;
            n.status_seen = posted;
            n.probe = now;
            n.queued = false;
        }
        self.zone_states = vec![ZoneState::Normal; self.zones];
        let rate = self.settings.eviction_rate;
        self.buckets = vec![
            Bucket {
                rate,
                tokens: 1.0,
                at: now,
            };
            self.zones
        ];
        self.master_disruption = false;
    }

    /// The kubelet of `node` renewed its Lease (the write was stored).
    pub fn kubelet_renewed(&mut self, node: usize, renew_time: Duration) {
        let r = &mut self.stored_renewal[node];
        *r = Some(r.map_or(renew_time, |t| t.max(renew_time)));
    }

    /// The kubelet of `node` posted its node status at `at`, Ready=True (or False, `ready`): the
    /// NoSchedule taint of an Unknown condition goes with it, and the next pass counts the node
    /// heard.
    pub fn status_posted(&mut self, node: usize, at: Duration, ready: bool) {
        // The kubelet sets the transition time when its status differs from the one stored,
        // Unknown included.
        let was_false = !self.nodes[node].unknown_written && !self.stored_ready[node];
        self.false_since[node] = match (ready, was_false) {
            (true, _) => None,
            (false, true) => self.false_since[node],
            (false, false) => Some(at),
        };
        self.nodes[node].unknown_written = false;
        self.stored_status[node] = Some(at);
        self.stored_ready[node] = ready;
    }

    /// Whether the Ready=Unknown the controller wrote on `node` stands (its kubelet has not
    /// posted its status since).
    pub fn unknown_written(&self, node: usize) -> bool {
        self.nodes[node].unknown_written
    }

    /// While the Ready=False `node`'s kubelet posted stands (no Unknown written since), when it
    /// posted the change: the condition's `lastTransitionTime`, on the node's own clock.
    pub fn false_since(&self, node: usize) -> Option<Duration> {
        self.false_since[node].filter(|_| !self.nodes[node].unknown_written)
    }

    /// Whether the kubelet's status as stored says Ready=True (or False): what its next post must
    /// change, if anything.
    pub fn posted_ready(&self, node: usize) -> bool {
        self.stored_ready[node]
    }

    /// Whether `node`'s Ready condition as stored is True: no Ready=Unknown the controller wrote,
    /// nor a Ready=False its kubelet posted.
    fn stored_ready_true(&self, node: usize) -> bool {
        !self.nodes[node].unknown_written && self.stored_ready[node]
    }

    /// Whether the scheduler may bind a pod to `node`: its Ready condition as stored is True (an
    /// Unknown or a False brings a NoSchedule taint at once).
    pub fn schedulable(&self, node: usize) -> bool {
        self.stored_ready_true(node)
    }

    /// `node`'s zone as the API server stores it (`quorum::ZoneRecord`): the Ready conditions
    /// as stored, with `node`'s taint. A node counts not Ready while the Unknown the controller
    /// wrote stands, until its kubelet posts its status: the count the controller's last pass
    /// made, but for the nodes posted Ready since; and, after an outage that restarted the
    /// controller-manager, the Unknowns the old process wrote, which the new one has not
    /// counted yet.
    ///
    /// Counted by the peers' reader's own code (`core::zone::tally`), on every Node of the
    /// cluster, each Unknown's `lastTransitionTime` as `stored` makes it.
    pub fn zone_record(
        &self,
        node: usize,
        stored: impl Fn(Duration) -> std::time::SystemTime,
        not_ready_read: bool,
    ) -> crate::core::quorum::ZoneRecord {
        let zone = self.nodes[node].zone;
        let counted = self.nodes.iter().enumerate().map(|(i, n)| {
            let in_zone = n.zone == zone;
            crate::core::zone::Counted {
                asker: i == node,
                in_zone,
                excluded: false,
                ready: self.stored_ready_true(i),
                // Read only for the zone's Nodes, the only ones `tally` times.
                down_since: in_zone
                    .then(|| self.unknown_since(i))
                    .flatten()
                    .map(&stored),
                // Either taint, as `api::node` reads it (`Fixes::not_ready_read`).
                unreachable_tainted: n.tainted_at.is_some()
                    && (not_ready_read || !n.not_ready_taint),
                // Its down time is read only while Unknown, as the controller wrote it.
                unknown: in_zone && self.unknown_since(i).is_some(),
            }
        });
        // Every node is listed, this one too: the asker is always found.
        crate::core::zone::tally(counted, true).expect("the asker is in its own zone")
    }

    /// The taint's `timeAdded` while `node` carries the unreachable NoExecute taint.
    pub fn taint(&self, node: usize) -> Option<Duration> {
        let n = &self.nodes[node];
        n.tainted_at.filter(|_| !n.not_ready_taint)
    }

    /// The taint's `timeAdded` while `node` carries the not-ready NoExecute taint.
    pub fn not_ready_taint(&self, node: usize) -> Option<Duration> {
        let n = &self.nodes[node];
        n.tainted_at.filter(|_| n.not_ready_taint)
    }

    /// While `node` carries a NoExecute taint of the node controller's: the `timeAdded` of the
    /// first of its unbroken run ([`NodeHealth::chain_from`]), which its taint eviction timers
    /// count for, and whether the taint on now is the not-ready one.
    pub fn chain(&self, node: usize) -> Option<(Duration, bool)> {
        let n = &self.nodes[node];
        n.tainted_at
            .and(n.chain_from)
            .map(|c| (c, n.not_ready_taint))
    }

    /// Whether the controller, as things stand, would add no NoExecute taint in `node`'s zone:
    /// master disruption, or a zone whose limiter is at 0.
    pub fn holds(&self, node: usize) -> bool {
        self.master_disruption || self.buckets[self.nodes[node].zone].rate == 0.0
    }

    /// One pass of `monitorNodeHealth` at `now`.
    pub fn monitor(&mut self, now: Duration) -> Changes {
        let mut changes = Changes::default();
        if !self.running(now) {
            // Informers stale and every status write failing: "Skipping - no pods will be
            // evicted" for every node, and no zone is counted. Or no controller-manager leads.
            return changes;
        }
        if self.leading_from.is_some() {
            self.take_over(now, &mut changes);
            changes.took_over = true;
        }
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if let Some(r) = self.stored_renewal[i]
                && n.lease_seen.is_none_or(|s| s < r)
            {
                n.lease_seen = Some(r);
                n.probe = now;
                if !self.settings.ready_on_status {
                    // The simplification: the kubelet posts its status with its renewal.
                    n.ready = self.stored_ready[i];
                    n.posted_not_ready = !self.stored_ready[i];
                }
            }
            // A status the kubelet posted (a new `lastHeartbeatTime` on its Ready condition)
            // refreshes the probe as a renewal does, and says Ready=True, or False as posted
            // (`tryUpdateNodeHealth`).
            if let Some(p) = self.stored_status[i]
                && n.status_seen.is_none_or(|s| s < p)
            {
                n.status_seen = Some(p);
                n.probe = now;
                n.ready = self.stored_ready[i];
                n.posted_not_ready = !self.stored_ready[i];
            }
            // The condition as the node object holds it when the pass reads it: the kubelet's
            // status posted since counts, this pass's own write does not.
            let observed = (n.ready, n.posted_not_ready);
            if now > n.probe + self.settings.grace {
                // Every condition is written Unknown, a False as a True.
                n.unknown_written |= n.ready || n.posted_not_ready;
                n.ready = false;
                n.posted_not_ready = false;
            }
            // processTaintBaseEviction on the condition observed (or, in the simplification, on
            // the one this pass wrote). An observed True takes the node out of the queue even
            // when this pass writes Unknown (`markNodeAsReachable`). A False or an Unknown on a
            // node that carries the other's NoExecute taint swaps the two at once, outside the
            // zone's limiter (`SwapNodeControllerTaint`); otherwise it queues the node.
            let (ready, not_ready) = if self.settings.queue_on_observed {
                observed
            } else {
                (n.ready, n.posted_not_ready)
            };
            if ready {
                n.queued = false;
                if let Some(t) = n.untaint() {
                    changes.untainted.push((i, t, false));
                }
            } else if n.tainted_at.is_none() {
                n.queued = true;
            } else if n.not_ready_taint != not_ready {
                n.not_ready_taint = not_ready;
                n.tainted_at = Some(now);
                changes.swapped.push((i, now, not_ready));
            }
        }
        // The condition as last recorded is the one before this pass: only a pass changes it.
        for (n, changes) in self.nodes.iter().zip(&mut self.recorded) {
            if changes.last().is_none_or(|&(_, ready)| ready) != n.ready {
                changes.push((now, n.ready));
            }
        }
        if self.settings.queue_on_observed {
            // The tainting worker runs every 100 ms beside the passes, and a pass that writes
            // nodes Unknown also writes each of their pods NotReady (`MarkPodsNotReady`) before
            // `handleDisruption` sets the limiters for the zones it found: the nodes this pass
            // queued may be tainted at the limiters the previous pass left. The simulator takes
            // that order, the one that taints more (docs/semantics.md §5.5).
            let early = self.taint_pass(now);
            changes.tainted.extend(early.tainted);
            changes.not_ready_tainted.extend(early.not_ready_tainted);
        }
        self.handle_disruption(now, &mut changes);
        changes
    }

    fn handle_disruption(&mut self, now: Duration, changes: &mut Changes) {
        let mut total = vec![0usize; self.zones];
        let mut unhealthy = vec![0usize; self.zones];
        for n in &self.nodes {
            total[n.zone] += 1;
            if !n.ready {
                unhealthy[n.zone] += 1;
            }
        }
        let states: Vec<ZoneState> = (0..self.zones)
            .map(|z| {
                let (t, u) = (total[z], unhealthy[z]);
                if t > 0 && u == t {
                    ZoneState::Full
                } else if u > 2 && u as f64 / t.max(1) as f64 >= self.settings.unhealthy_threshold {
                    ZoneState::Partial
                } else {
                    ZoneState::Normal
                }
            })
            .collect();
        let all_full = (0..self.zones).all(|z| total[z] == 0 || states[z] == ZoneState::Full);
        let was_all_full = self.master_disruption;
        if all_full && !was_all_full {
            // Entering master disruption: every taint removed, every limiter at 0.
            self.master_disruption = true;
            for (i, n) in self.nodes.iter_mut().enumerate() {
                n.queued = false;
                if let Some(t) = n.untaint() {
                    changes.untainted.push((i, t, true));
                }
            }
            for b in &mut self.buckets {
                b.swap(0.0, now);
            }
            self.zone_states = vec![ZoneState::Full; self.zones];
            changes.zones = (0..self.zones)
                .map(|z| {
                    (
                        z,
                        "fully disrupted (master disruption)",
                        unhealthy[z],
                        total[z],
                    )
                })
                .collect();
            return;
        }
        if all_full {
            return;
        }
        if was_all_full {
            // Leaving it: probe timestamps reset, limiters set for each zone's state.
            self.master_disruption = false;
            for n in &mut self.nodes {
                n.probe = now;
            }
            for z in 0..self.zones {
                let rate = self.rate_for(states[z], total[z]);
                self.buckets[z].swap(rate, now);
                changes
                    .zones
                    .push((z, states[z].word(), unhealthy[z], total[z]));
            }
            self.zone_states = states;
            return;
        }
        for z in 0..self.zones {
            if self.zone_states[z] != states[z] {
                let rate = self.rate_for(states[z], total[z]);
                self.buckets[z].swap(rate, now);
                self.zone_states[z] = states[z];
                changes
                    .zones
                    .push((z, states[z].word(), unhealthy[z], total[z]));
            }
        }
    }

    fn rate_for(&self, state: ZoneState, size: usize) -> f64 {
        match state {
            ZoneState::Normal | ZoneState::Full => self.settings.eviction_rate,
            ZoneState::Partial if size > self.settings.large_zone => self.settings.secondary_rate,
            ZoneState::Partial => 0.0,
        }
    }

    /// One pass of the NoExecute tainting worker (every 100 ms upstream): each zone's queue, in
    /// node order, as far as its limiter allows. Upstream every untainted node found Unknown is
    /// queued afresh on each monitor pass, whose workers run in parallel (docs/semantics.md
    /// §5.5), so the order among the nodes waiting is any; node order is one of them, and
    /// [`ControlPlane::take_first`] puts one node ahead of it.
    pub fn taint_pass(&mut self, now: Duration) -> Changes {
        let mut changes = Changes::default();
        if !self.running(now) || self.leading_from.is_some() {
            return changes;
        }
        let first = self
            .queue_first
            .and_then(|(node, from)| (now >= from).then_some(node));
        for i in first.into_iter().chain(0..self.nodes.len()) {
            let z = self.nodes[i].zone;
            if self.nodes[i].queued && !self.nodes[i].ready && self.buckets[z].take(now) {
                // The taint of the condition as it is now (`doNoExecuteTaintingPass`): not-ready
                // for a False, unreachable for an Unknown.
                let n = &mut self.nodes[i];
                n.queued = false;
                n.tainted_at = Some(now);
                n.chain_from = Some(now);
                n.not_ready_taint = n.posted_not_ready;
                if n.not_ready_taint {
                    changes.not_ready_tainted.push((i, now));
                } else {
                    changes.tainted.push((i, now));
                }
            }
        }
        changes
    }

    /// Whether any node waits in a queue (the tainting pass has work).
    pub fn queued(&self) -> bool {
        self.nodes.iter().any(|n| n.queued)
    }
}

/// The latest renewal at or before `now` of a leader that acquired its Lease at `acquired` and
/// renews every `period`.
fn renewal(acquired: Duration, now: Duration, period: Duration) -> Duration {
    let renewals = now.saturating_sub(acquired).as_nanos() / period.as_nanos().max(1);
    acquired + period.saturating_mul(u32::try_from(renewals).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    /// Three nodes in one zone whose kubelets renew every 10 s: node 0 until 30 s, the others
    /// until `others_last`; the API server down from 60 s for `outage`; the passes every 5 s from
    /// 0.5 s. Returns when node 0 was tainted (a pass queues the nodes its previous pass wrote
    /// Unknown).
    fn taint_of_node0(leader: Option<Leader>, outage: u64, others_last: u64) -> Option<Duration> {
        let settings = ControllerSettings {
            leader,
            ..ControllerSettings::default()
        };
        let mut cp = ControlPlane::new(settings, &[0, 0, 0], Duration::ZERO);
        let last = [s(30), s(others_last), s(others_last)];
        let mut t = Duration::from_millis(500);
        let mut tainted = None;
        while t < s(400) && tainted.is_none() {
            if t >= s(60) && t < s(60 + outage) {
                cp.api_down(s(60));
            } else if !cp.api_up {
                cp.api_back(s(60 + outage));
            }
            for (i, l) in last.iter().enumerate() {
                // Each kubelet's renewal stored as long as the API server answers.
                let renewal = (t.as_secs() / 10 * 10).min(l.as_secs());
                if cp.api_up || renewal < 60 {
                    cp.kubelet_renewed(i, s(renewal).min(*l));
                }
            }
            let mut c = cp.monitor(t);
            c.tainted.extend(cp.taint_pass(t).tainted);
            tainted = c.tainted.first().map(|&(_, at)| at);
            t += s(5);
        }
        tainted
    }

    #[test]
    fn a_limiter_swapped_from_a_rate_of_zero_gives_its_first_token_a_period_later() {
        // A zone of four: nodes 0 and 1 silent from 0 s, node 2 silent from 0 s until it renews
        // at 100 s, node 3 renewing every 10 s. Monitor passes every 5 s from 0.5 s, tainting
        // passes every 100 ms (upstream's `nodeEvictionPeriod`).
        let mut cp = ControlPlane::new(ControllerSettings::default(), &[0, 0, 0, 0], s(0));
        let mut first = None;
        for tick in 0..1_500u64 {
            let t = Duration::from_millis(tick * 100);
            let renewal = s(t.as_secs() / 10 * 10);
            cp.kubelet_renewed(3, renewal);
            if t >= s(100) {
                cp.kubelet_renewed(2, renewal);
            }
            if t == s(100) {
                // Its kubelet posts Ready=True with its first renewal.
                cp.status_posted(2, t, true);
            }
            let mut c = Changes::default();
            if tick % 50 == 5 {
                c = cp.monitor(t);
            }
            c.tainted.extend(cp.taint_pass(t).tainted);
            if let Some(&(node, at)) = c.tainted.first() {
                first = Some((node, at));
                break;
            }
        }
        // Nodes 0, 1 and 2 judged together on the pass at 40.5 s (their grace period counted
        // from the controller's start): three of four, a partial disruption of a small zone,
        // rate 0, nothing tainted.
        // Node 2 heard again on the pass at 100.5 s: two of four, a normal zone, rate 0.1/s. The
        // old limiter (rate 0) had no token, so the new one is drained: the first taint comes
        // 10 s later, not on that pass.
        let (node, at) = first.expect("a node is tainted once the zone is normal again");
        assert_eq!(node, 0);
        assert!(
            at >= Duration::from_millis(110_500) && at < Duration::from_millis(110_700),
            "first taint at {at:?}"
        );
    }

    /// A zone of eight whose nodes 0, 1 and 2 fall silent at the start (three of eight: a normal
    /// zone, 0.1 taints a second), passes as in the test above: the taints in order, with node 2
    /// taken first from `first_from` on.
    fn taint_order(first_from: Option<Duration>) -> Vec<(usize, Duration)> {
        let mut cp = ControlPlane::new(ControllerSettings::default(), &[0; 8], s(0));
        if let Some(from) = first_from {
            cp.take_first(2, from);
        }
        let mut taints = Vec::new();
        for tick in 0..800u64 {
            let t = Duration::from_millis(tick * 100);
            for node in 3..8 {
                cp.kubelet_renewed(node, s(t.as_secs() / 10 * 10));
            }
            if tick % 50 == 5 {
                taints.extend(cp.monitor(t).tainted);
            }
            taints.extend(cp.taint_pass(t).tainted);
        }
        taints
    }

    #[test]
    fn a_queue_taking_a_node_first_changes_only_the_taints_from_then_on() {
        let ms = Duration::from_millis;
        // Written Unknown together on the pass at 40.5 s, queued on the next; the limiter starts
        // full, then one a period.
        assert_eq!(
            taint_order(None),
            [(0, ms(45_500)), (1, ms(55_500)), (2, ms(65_500))]
        );
        // Node 2 first from 50 s: node 0's taint, before then, stays where it was.
        assert_eq!(
            taint_order(Some(s(50))),
            [(0, ms(45_500)), (2, ms(55_500)), (1, ms(65_500))]
        );
        // From the start: node 2 takes the first token.
        assert_eq!(
            taint_order(Some(s(0))),
            [(2, ms(45_500)), (0, ms(55_500)), (1, ms(65_500))]
        );
    }

    #[test]
    fn a_node_queued_in_the_pass_that_disrupts_its_zone_is_tainted_at_the_limiter_before() {
        // A zone of five; passes every 5 s from 0.5 s. Node 0's kubelet renews last at 0 s,
        // nodes 1 and 2 at 5 s, nodes 3 and 4 all along.
        let mut cp = ControlPlane::new(ControllerSettings::default(), &[0; 5], Duration::ZERO);
        let mut taints = Vec::new();
        let mut t = Duration::from_millis(500);
        while t < s(100) {
            let now = t.as_secs() / 5 * 5;
            for (i, last) in [0, 5, 5, 100, 100].into_iter().enumerate() {
                cp.kubelet_renewed(i, s(now.min(last)));
            }
            let mut c = cp.monitor(t);
            c.tainted.extend(cp.taint_pass(t).tainted);
            taints.extend(c.tainted);
            t += s(5);
        }
        // Node 0 written Unknown at 45.5 s (one of five: a normal zone). At 50.5 s the pass
        // queues it and writes nodes 1 and 2 Unknown: three of five, a partial disruption of a
        // small zone, rate 0. The tainting worker took node 0 before the pass set that rate.
        assert_eq!(taints, [(0, Duration::from_millis(50_500))]);
        assert!(cp.holds(1));
    }

    #[test]
    fn a_long_outage_restarts_the_controller_manager_and_every_grace_period_counts_again() {
        let leader = Some(Leader::default());
        // The other two renew all along (but in the outage).
        // Kept state: node 0's last renewal (30 s) was seen before the outage; its grace period
        // ran out during it, it is written Unknown on the first pass after (90.5 s) and tainted
        // on the next.
        assert_eq!(
            taint_of_node0(None, 30, 400),
            Some(Duration::from_millis(95_500))
        );
        // Restarted: the new process leads from 105 s (the old lease read at 90 s, 15 s to run
        // out) and sees every node first on its pass at 105.5 s; node 0's grace period counts
        // from there, and the first pass after it has run out is at 150.5 s.
        assert_eq!(
            taint_of_node0(leader, 30, 400),
            Some(Duration::from_millis(155_500))
        );
        // The other two silent from 58 s. Kept state: their renewals at 50 s were seen before the
        // outage and those at 58 s only after it, so they count as fresh, the zone as healthy,
        // and node 0 is tainted as soon as it can be (docs/semantics.md §5.2).
        assert_eq!(
            taint_of_node0(None, 30, 58),
            Some(Duration::from_millis(95_500))
        );
        // Restarted: all three are judged together at 150.5 s; the zone, the only one, is fully
        // disrupted, and nothing is tainted.
        assert_eq!(taint_of_node0(leader, 30, 58), None);
    }

    /// After the restart below: whether node 0 carries the taint after the new process's first
    /// pass, and how many taints that pass removed. Its kubelet renews at 95 s, and posts its
    /// status then when `posted`.
    fn first_pass_after_a_restart(posted: bool) -> (bool, usize) {
        // Three nodes in one zone; node 0's kubelet is silent from 10 s, the others renew every
        // 10 s; passes every 5 s from 0.5 s.
        let mut cp = ControlPlane::new(ControllerSettings::default(), &[0, 0, 0], Duration::ZERO);
        let mut t = Duration::from_millis(500);
        let pass = |cp: &mut ControlPlane, t: Duration| {
            let mut c = cp.monitor(t);
            let tainted = cp.taint_pass(t);
            c.tainted.extend(tainted.tainted);
            c
        };
        while t < s(60) {
            for i in 0..3 {
                let last = if i == 0 { 10 } else { t.as_secs() / 10 * 10 };
                cp.kubelet_renewed(i, s(last));
            }
            pass(&mut cp, t);
            t += s(5);
        }
        // Judged at 50.5 s and tainted while the zone is healthy.
        assert!(cp.taint(0).is_some());
        // The API server down from 60 s to 90 s: the controller-manager restarts and leads from
        // 105 s. Node 0's kubelet renews at 95 s, the others at 100 s.
        cp.api_down(s(60));
        assert!(cp.api_back(s(90)));
        cp.kubelet_renewed(0, s(95));
        if posted {
            cp.status_posted(0, s(95), true);
        }
        cp.kubelet_renewed(1, s(100));
        cp.kubelet_renewed(2, s(100));
        let c = pass(&mut cp, Duration::from_millis(100_500));
        assert!(!c.took_over, "no pass before the old lease runs out");
        let c = pass(&mut cp, Duration::from_millis(105_500));
        assert!(c.took_over);
        (cp.taint(0).is_some(), c.untainted.len())
    }

    #[test]
    fn a_kubelet_back_before_the_new_controller_manager_leads_is_ready_on_its_first_pass() {
        // Its status posted Ready=True: the taint goes on the first pass, for good.
        assert_eq!(first_pass_after_a_restart(true), (false, 1));
        // Its Lease renewed alone: the taint goes as the new process marks every node it sees
        // for the first time reachable, but the stored Ready=Unknown queues the node again in
        // the same pass, and its zone's full limiter taints it afresh (`tryUpdateNodeHealth`
        // refreshes the probe time alone; docs/semantics.md §5.5).
        assert_eq!(first_pass_after_a_restart(false), (true, 1));
    }

    #[test]
    fn a_node_written_unknown_takes_no_replacement_until_its_kubelet_posts_its_status() {
        // Two nodes; node 1's kubelet renews until 10 s and again from 70 s; passes every 5 s.
        let mut cp = ControlPlane::new(ControllerSettings::default(), &[0, 0], Duration::ZERO);
        let mut t = Duration::from_millis(500);
        let mut unschedulable_from = None;
        while t < s(90) {
            cp.kubelet_renewed(0, s(t.as_secs() / 10 * 10));
            let last = t.as_secs() / 10 * 10;
            cp.kubelet_renewed(1, s(if (10..70).contains(&last) { 10 } else { last }));
            cp.monitor(t);
            if !cp.schedulable(1) {
                unschedulable_from.get_or_insert(t);
            }
            t += s(5);
        }
        // Written Unknown on the first pass after its grace period (40 s from 10.5 s).
        assert_eq!(unschedulable_from, Some(Duration::from_millis(55_500)));
        // The Lease renewed from 70 s counts for the zone, not for the scheduler.
        assert!(!cp.schedulable(1));
        assert!(cp.schedulable(0));
        cp.status_posted(1, s(90), true);
        assert!(cp.schedulable(1));
    }

    #[test]
    fn a_status_posted_counts_as_a_heartbeat() {
        // Two nodes; node 1's kubelet renews its Lease until 10 s and never again, and posts its
        // status at 80 s; passes every 5 s from 0.5 s.
        let mut cp = ControlPlane::new(ControllerSettings::default(), &[0, 0], Duration::ZERO);
        let mut t = Duration::from_millis(500);
        let (mut tainted, mut untainted, mut unknown_again) = (None, None, None);
        while t < s(150) {
            cp.kubelet_renewed(0, s(t.as_secs() / 10 * 10));
            cp.kubelet_renewed(1, s(t.as_secs().min(10) / 10 * 10));
            if t == Duration::from_millis(80_500) {
                cp.status_posted(1, s(80), true);
            }
            let c = cp.monitor(t);
            if !c.untainted.is_empty() {
                untainted.get_or_insert(t);
            }
            if !c.tainted.is_empty() || !cp.taint_pass(t).tainted.is_empty() {
                tainted.get_or_insert(t);
            }
            if untainted.is_some() && !cp.schedulable(1) {
                unknown_again.get_or_insert(t);
            }
            t += s(5);
        }
        // Written Unknown on the first pass after its grace period and tainted on the next,
        // untainted on the pass that saw the status, and judged again only a grace period after
        // that pass.
        assert_eq!(tainted, Some(Duration::from_millis(60_500)));
        assert_eq!(untainted, Some(Duration::from_millis(80_500)));
        assert_eq!(unknown_again, Some(Duration::from_millis(125_500)));
    }

    #[test]
    fn a_short_outage_keeps_the_controller_manager() {
        // 5 s: shorter than the renew deadline; the same process goes on.
        let settings = ControllerSettings::default();
        let mut cp = ControlPlane::new(settings, &[0], Duration::ZERO);
        cp.api_down(s(60));
        assert!(!cp.api_back(s(65)));
        assert!(cp.running(s(65)));
        cp.api_down(s(70));
        assert!(cp.api_back(s(80)), "10 s is the renew deadline");
        assert!(!cp.running(s(94)));
        assert!(cp.running(s(95)));
        assert_eq!(cp.generation, 1);
    }

    #[test]
    fn the_leader_lease_keeps_the_exited_holders_last_renewal_until_its_successor_acquires_it() {
        let mut cp = ControlPlane::new(ControllerSettings::default(), &[0], Duration::ZERO);
        let d = s(15);
        // Renewed every 2 s from its acquisition at 0.
        assert_eq!(
            cp.leader_lease(Duration::from_millis(61_500)),
            Some((0, s(60), d))
        );
        cp.api_down(Duration::from_millis(63_900));
        // A short outage: the same holder renews again.
        assert!(!cp.api_back(s(66)));
        assert_eq!(cp.leader_lease(s(67)), Some((0, s(66), d)));
        cp.api_down(Duration::from_millis(70_500));
        assert!(cp.api_back(s(130)));
        // The holder exited in the outage; its last renewal stays until 145 s.
        assert_eq!(cp.leader_lease(s(130)), Some((0, s(70), d)));
        assert_eq!(
            cp.leader_lease(Duration::from_millis(144_900)),
            Some((0, s(70), d))
        );
        // Gone again before the successor took over: the record stays the first holder's.
        cp.api_down(s(140));
        assert!(cp.api_back(s(200)));
        assert_eq!(cp.leader_lease(s(214)), Some((0, s(70), d)));
        // The successor acquires at 215 s and renews from there.
        assert_eq!(cp.leader_lease(s(215)), Some((2, s(215), d)));
        cp.monitor(s(216));
        assert_eq!(cp.leader_lease(s(219)), Some((2, s(219), d)));
    }
    #[test]
    fn a_standby_takes_over_as_soon_as_the_old_lease_has_run_out() {
        let standby = ControllerSettings {
            leader: Some(Leader {
                standby: true,
                ..Leader::default()
            }),
            ..ControllerSettings::default()
        };
        // Renewed every 2 s from 0; the last renewal before an outage from 61 s is at 60 s.
        // Back at 90 s, the old lease ran out at 75 s: the standby leads at once, where a
        // restarted process reads the Lease then and leads 15 s later.
        let mut cp = ControlPlane::new(standby, &[0], Duration::ZERO);
        cp.api_down(s(61));
        assert!(cp.api_back(s(90)));
        assert!(cp.running(s(90)));
        let mut restarted = ControlPlane::new(ControllerSettings::default(), &[0], Duration::ZERO);
        restarted.api_down(s(61));
        assert!(restarted.api_back(s(90)));
        assert!(!restarted.running(Duration::from_millis(104_999)));
        assert!(restarted.running(s(105)));
        // Back at 72 s, after the renew deadline but before the lease ran out: at 75 s.
        let mut cp = ControlPlane::new(standby, &[0], Duration::ZERO);
        cp.api_down(s(61));
        assert!(cp.api_back(s(72)));
        assert!(!cp.running(Duration::from_millis(74_999)));
        assert!(cp.running(s(75)));
        assert_eq!(cp.leader_lease(s(75)), Some((1, s(75), s(15))));
    }
}
