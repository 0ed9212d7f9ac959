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
//! for a partially disrupted zone of more than 50 nodes and 0 for a smaller one, and each pod
//! deleted `tolerationSeconds` after its node's taint was added. Left out: the not-ready taint
//! (nodes here are reachable or not, never NotReady), the startup grace period, pods' own
//! conditions.

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
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ZoneState {
    Normal,
    Partial,
    Full,
}

/// One node as the controller keeps it.
#[derive(Clone, Debug)]
struct NodeHealth {
    zone: usize,
    /// The kubelet Lease's renewTime last seen, and the controller's time it was seen.
    lease_seen: Option<Duration>,
    probe: Duration,
    /// The Ready condition as stored (true: True; false: Unknown).
    ready: bool,
    /// When the unreachable NoExecute taint was added (its `timeAdded`), while it is on.
    tainted_at: Option<Duration>,
    /// Queued for the taint.
    queued: bool,
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
    fn swap(&mut self, rate: f64, now: Duration) {
        self.refill(now);
        if rate != self.rate {
            self.rate = rate;
            // SwapLimiter starts a new limiter: a full burst when the rate is positive.
            self.tokens = if rate > 0.0 { 1.0 } else { 0.0 };
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
    /// Whether the controller's informers and writes reach the API server.
    pub api_up: bool,
}

/// What one monitor pass or tainting pass changed.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    /// `(node, timeAdded)` of each taint added.
    pub tainted: Vec<(usize, Duration)>,
    /// `(node, timeAdded)` of each taint removed, and whether entering master disruption
    /// removed it (rather than the node being heard again).
    pub untainted: Vec<(usize, Duration, bool)>,
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
                    probe: now,
                    ready: true,
                    tainted_at: None,
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
            api_up: true,
        }
    }

    /// The kubelet of `node` renewed its Lease (the write was stored).
    pub fn kubelet_renewed(&mut self, node: usize, renew_time: Duration) {
        let r = &mut self.stored_renewal[node];
        *r = Some(r.map_or(renew_time, |t| t.max(renew_time)));
    }

    /// The taint's `timeAdded` while `node` carries the unreachable NoExecute taint.
    pub fn taint(&self, node: usize) -> Option<Duration> {
        self.nodes[node].tainted_at
    }

    /// Whether the controller, as things stand, would add no NoExecute taint in `node`'s zone:
    /// master disruption, or a zone whose limiter is at 0.
    pub fn holds(&self, node: usize) -> bool {
        self.master_disruption || self.buckets[self.nodes[node].zone].rate == 0.0
    }

    /// One pass of `monitorNodeHealth` at `now`.
    pub fn monitor(&mut self, now: Duration) -> Changes {
        let mut changes = Changes::default();
        if !self.api_up {
            // Informers stale and every status write failing: "Skipping - no pods will be
            // evicted" for every node, and no zone is counted.
            return changes;
        }
        for (i, n) in self.nodes.iter_mut().enumerate() {
            if let Some(r) = self.stored_renewal[i]
                && n.lease_seen.is_none_or(|s| s < r)
            {
                n.lease_seen = Some(r);
                n.probe = now;
                // A kubelet that reaches the API server again posts Ready=True with it.
                n.ready = true;
            }
            if now > n.probe + self.settings.grace {
                n.ready = false;
            }
            // processTaintBaseEviction on the stored condition.
            if n.ready {
                n.queued = false;
                if let Some(t) = n.tainted_at.take() {
                    changes.untainted.push((i, t, false));
                }
            } else if n.tainted_at.is_none() {
                n.queued = true;
            }
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
                if let Some(t) = n.tainted_at.take() {
                    changes.untainted.push((i, t, true));
                }
            }
            for b in &mut self.buckets {
                b.swap(0.0, now);
            }
            self.zone_states = vec![ZoneState::Full; self.zones];
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
            }
            self.zone_states = states;
            return;
        }
        for z in 0..self.zones {
            if self.zone_states[z] != states[z] {
                let rate = self.rate_for(states[z], total[z]);
                self.buckets[z].swap(rate, now);
                self.zone_states[z] = states[z];
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
    /// node order, as far as its limiter allows.
    pub fn taint_pass(&mut self, now: Duration) -> Changes {
        let mut changes = Changes::default();
        if !self.api_up {
            return changes;
        }
        for i in 0..self.nodes.len() {
            let z = self.nodes[i].zone;
            if self.nodes[i].queued && !self.nodes[i].ready && self.buckets[z].take(now) {
                self.nodes[i].queued = false;
                self.nodes[i].tainted_at = Some(now);
                changes.tainted.push((i, now));
            }
        }
        changes
    }

    /// Whether any node waits in a queue (the tainting pass has work).
    pub fn queued(&self) -> bool {
        self.nodes.iter().any(|n| n.queued)
    }
}
