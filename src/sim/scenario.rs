//! A scenario: the cluster's layout, its pods, and what happens to the world when — everything
//! a run needs, drawn from one seed, and small enough to print and to shrink.

use std::fmt;
use std::time::Duration;

use super::Rng;

/// A pod bound to a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSpec {
    pub node: usize,
    /// `tolerationSeconds` for `node.kubernetes.io/unreachable:NoExecute`; `None`: forever.
    pub toleration: Option<u64>,
    /// The same for `node.kubernetes.io/not-ready:NoExecute`: as `toleration` (the admission
    /// plugin adds both alike) but where [`Scenario::with_not_ready`] draws another.
    pub not_ready: Option<u64>,
    /// `terminationGracePeriodSeconds`.
    pub grace: u64,
}

/// Something that happens to the world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The node's link to the API server goes down (requests hang) or comes back.
    CutApi(usize),
    HealApi(usize),
    /// The node's link to its peers goes down or comes back.
    CutPeers(usize),
    HealPeers(usize),
    /// The agent's own path to the API server goes down (its requests hang, or are refused
    /// where the node's dead links refuse) while the node's link, the kubelet's, stays up; or it
    /// comes back. The packaged DaemonSet reaches the API server through the `kubernetes`
    /// Service (kube-proxy, the pod network), the kubelet through its kubeconfig; and an API
    /// priority level can throttle one client's requests alone (429). Only
    /// [`Scenario::with_agent_path_cuts`] draws these.
    CutAgentPath(usize),
    HealAgentPath(usize),
    /// The node's kubelet finds the node not ready (its runtime down, say) and posts Ready=False
    /// while its link is up; or finds it ready again and posts Ready=True. Only
    /// [`Scenario::with_not_ready`] draws these.
    KubeletNotReady(usize),
    KubeletReady(usize),
    /// The API server stops answering anyone (the controllers with it), or answers again.
    ApiDown,
    ApiUp,
    /// The agent is SIGKILLed and starts again this much later, from what was on disk.
    Crash {
        node: usize,
        down: Duration,
    },
    /// A pod is created (bound to its node) or deleted by a user.
    Create(PodSpec),
    Delete(usize),
    /// The node's system clock is stepped by this many milliseconds (back when negative). An
    /// agent reads it when it starts and counts monotonic time from there, so only a run that
    /// starts after the step sees it: through the wall times on its disk.
    ClockStep {
        node: usize,
        by_ms: i64,
    },
}

/// One run's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub seed: u64,
    /// Nodes per zone.
    pub zones: Vec<usize>,
    /// Per node: when its agent's and its kubelet's renewals fall in the renew interval.
    pub agent_phase: Vec<Duration>,
    pub kubelet_phase: Vec<Duration>,
    /// Per node: an instant (from the run's start) at which its kubelet renews, its later
    /// renewals following from there. The judge's witness worlds set it: with the renewals'
    /// jitter, a phase alone does not say when the last renewal before a cut fell.
    pub kubelet_anchor: Vec<Option<Duration>>,
    /// When the controller's first monitor pass falls (then every monitor period): 1.234 s
    /// unless a witness world moves it, as no agent sees it.
    pub monitor_phase: Duration,
    /// A node its zone's tainting queue takes first from an instant on (from the run's start),
    /// while it waits there: upstream re-queues every untainted node found Unknown on each
    /// monitor pass, in parallel workers, so the order among the nodes waiting is any
    /// (`ControlPlane::taint_pass`). Node order otherwise. The judge's witness worlds set it; no
    /// agent sees the order before a node is tainted.
    pub queue_first: Option<(usize, Duration)>,
    /// Per node: how long after a change of its pods in the API the agent's pod watch delivers
    /// it, and how long the kubelet's takes to start a pod created for it. The two watches are
    /// separate streams of the same API server; most of the time both deliver within tens of
    /// milliseconds, but a loaded server or a congested link delays one of them by seconds.
    pub agent_watch_lag: Vec<Duration>,
    pub kubelet_watch_lag: Vec<Duration>,
    /// Per node: its link to the API server, when down, refuses at once (a proxy in front of an
    /// unreachable control plane answering 503, a reset) instead of hanging each request for its
    /// timeout. Both the agent and the kubelet then learn of each failure at once.
    pub refusing: Vec<bool>,
    /// The pods there at the start.
    pub pods: Vec<PodSpec>,
    /// What happens, in time order.
    pub events: Vec<(Duration, Event)>,
    pub length: Duration,
}

impl Scenario {
    pub fn nodes(&self) -> usize {
        self.zones.iter().sum()
    }

    /// How late `node`'s agent hears of a change of its pods (none for a node it does not name).
    pub fn agent_lag(&self, node: usize) -> Duration {
        self.agent_watch_lag.get(node).copied().unwrap_or_default()
    }

    /// Whether `node`'s dead link refuses at once rather than hanging.
    pub fn refuses(&self, node: usize) -> bool {
        self.refusing.get(node).copied().unwrap_or(false)
    }

    /// How late `node`'s kubelet hears of a pod created for it.
    pub fn kubelet_lag(&self, node: usize) -> Duration {
        self.kubelet_watch_lag
            .get(node)
            .copied()
            .unwrap_or_default()
    }

    /// The zone of each node.
    pub fn zone_of(&self) -> Vec<usize> {
        self.zones
            .iter()
            .enumerate()
            .flat_map(|(z, &n)| std::iter::repeat_n(z, n))
            .collect()
    }

    /// A scenario drawn from `seed`: 1–3 zones (most of a few nodes, some up to 60), 1–3 pods a
    /// node, then one to four incidents — nodes cut off from the API alone or with their peers,
    /// part of a zone or all of it, the API server down for everyone, agents killed and
    /// restarted — and some pod churn, every link healed before the end.
    pub fn generate(seed: u64) -> Scenario {
        let mut r = Rng::new(seed);
        let zone_count = 1 + r.below(3) as usize;
        let zones: Vec<usize> = (0..zone_count)
            .map(|_| match r.below(100) {
                0..=74 => 1 + r.below(6) as usize,
                75..=94 => 7 + r.below(14) as usize,
                _ => 21 + r.below(40) as usize,
            })
            .collect();
        let n: usize = zones.iter().sum();
        let renew_ms = 10_000;
        let agent_phase = (0..n)
            .map(|_| Duration::from_millis(r.below(renew_ms)))
            .collect();
        let kubelet_phase = (0..n)
            .map(|_| Duration::from_millis(r.below(renew_ms)))
            .collect();
        let pod = |r: &mut Rng, node: usize| {
            let toleration = match r.below(10) {
                0 => None,
                1..=2 => Some(0),
                3..=4 => Some(r.below(10)),
                5..=7 => Some(10 + r.below(50)),
                _ => Some(60 + r.below(240)),
            };
            PodSpec {
                node,
                toleration,
                not_ready: toleration,
                grace: [0, 1, 5, 30, 60][r.below(5) as usize],
            }
        };
        let mut pods = Vec::new();
        for node in 0..n {
            for _ in 0..1 + r.below(3) {
                pods.push(pod(&mut r, node));
            }
        }
        let length = Duration::from_secs(400 + r.below(200));
        let mut events = Vec::new();
        let at = |r: &mut Rng, from: u64, to: u64| Duration::from_millis(from + r.below(to - from));
        let zone_nodes = |z: usize| -> Vec<usize> {
            let start: usize = zones[..z].iter().sum();
            (start..start + zones[z]).collect()
        };
        for _ in 0..1 + r.below(4) {
            let start = at(&mut r, 20_000, 250_000);
            let lasting = Duration::from_millis(3_000 + r.below(150_000));
            let end = start + lasting;
            match r.below(6) {
                // The API server down for everyone.
                0 => {
                    events.push((start, Event::ApiDown));
                    events.push((end, Event::ApiUp));
                }
                // One node, from the API (and perhaps its peers too).
                1 | 2 => {
                    let node = r.below(n as u64) as usize;
                    let peers_too = r.chance(30);
                    events.push((start, Event::CutApi(node)));
                    events.push((end, Event::HealApi(node)));
                    if peers_too {
                        events.push((start, Event::CutPeers(node)));
                        events.push((end, Event::HealPeers(node)));
                    }
                }
                // Part or all of a zone, cut at nearly the same time.
                3 | 4 => {
                    let z = r.below(zone_count as u64) as usize;
                    let members = zone_nodes(z);
                    let take = 1 + r.below(members.len() as u64) as usize;
                    let peers_too = r.chance(20);
                    for &node in members.iter().take(take) {
                        let skew = Duration::from_millis(r.below(3_000));
                        events.push((start + skew, Event::CutApi(node)));
                        events.push((end + skew, Event::HealApi(node)));
                        if peers_too {
                            events.push((start + skew, Event::CutPeers(node)));
                            events.push((end + skew, Event::HealPeers(node)));
                        }
                    }
                }
                // An agent killed and restarted, perhaps mid-partition.
                _ => {
                    let node = r.below(n as u64) as usize;
                    let down = Duration::from_millis(100 + r.below(40_000));
                    events.push((start, Event::Crash { node, down }));
                }
            }
            // Sometimes a restart inside the incident as well.
            if r.chance(25) {
                let node = r.below(n as u64) as usize;
                let when = start + Duration::from_millis(r.below(lasting.as_millis() as u64 + 1));
                let down = Duration::from_millis(100 + r.below(20_000));
                events.push((when, Event::Crash { node, down }));
            }
        }
        for _ in 0..r.below(4) {
            let when = at(&mut r, 5_000, 300_000);
            if r.chance(60) {
                let node = r.below(n as u64) as usize;
                events.push((when, Event::Create(pod(&mut r, node))));
            } else if !pods.is_empty() {
                events.push((when, Event::Delete(r.below(pods.len() as u64) as usize)));
            }
        }
        // Drawn last, so that every draw above (and every seed kept in the tests) is as before.
        if r.chance(15) {
            let node = r.below(n as u64) as usize;
            let when = at(&mut r, 5_000, 350_000);
            let by = 1_000 + r.below(300_000) as i64;
            let by_ms = if r.chance(50) { -by } else { by };
            events.push((when, Event::ClockStep { node, by_ms }));
        }
        // Watches whose events arrive late, drawn after everything above for the same reason: in
        // some scenarios each node's agent and kubelet hear of a change of its pods tens of
        // milliseconds late, a few of them seconds late; and sometimes a pod is created on a node
        // in the seconds before its link is cut, where a late watch matters.
        let mut agent_watch_lag = vec![Duration::ZERO; n];
        let mut kubelet_watch_lag = vec![Duration::ZERO; n];
        if r.chance(30) {
            let lag = |r: &mut Rng| {
                Duration::from_millis(if r.chance(10) {
                    1_000 + r.below(9_000)
                } else {
                    r.below(300)
                })
            };
            for node in 0..n {
                agent_watch_lag[node] = lag(&mut r);
                kubelet_watch_lag[node] = lag(&mut r);
            }
            let cuts: Vec<(Duration, usize)> = events
                .iter()
                .filter_map(|(t, e)| match e {
                    Event::CutApi(node) => Some((*t, *node)),
                    _ => None,
                })
                .collect();
            if !cuts.is_empty() && r.chance(50) {
                let (cut, node) = cuts[r.below(cuts.len() as u64) as usize];
                let when = cut.saturating_sub(Duration::from_millis(r.below(10_000)));
                events.push((when, Event::Create(pod(&mut r, node))));
            }
        }
        // Dead links that refuse rather than hang (the usual edge partition: a load balancer
        // answering for an absent control plane), drawn last for the same reason.
        let mut refusing = vec![false; n];
        if r.chance(30) {
            for slot in refusing.iter_mut() {
                *slot = r.chance(50);
            }
        }
        events.sort_by_key(|(t, _)| *t);
        Scenario {
            seed,
            zones,
            agent_phase,
            kubelet_anchor: vec![None; n],
            monitor_phase: Duration::from_millis(1_234),
            queue_first: None,
            kubelet_phase,
            agent_watch_lag,
            kubelet_watch_lag,
            refusing,
            pods,
            events,
            length,
        }
    }

    /// The same scenario with one or two cuts of an agent's own path to the API server
    /// ([`Event::CutAgentPath`]), each of 20 s to 2.5 min on a random node, drawn from a stream
    /// of the seed's own so that the scenario's other events stay as [`Scenario::generate`] drew
    /// them (`simulate --agent-path-cuts`).
    pub fn with_agent_path_cuts(mut self) -> Scenario {
        let mut r = Rng::new(self.seed ^ 0x6167_656e_7470_6174);
        let n = self.nodes() as u64;
        let span = self.length.as_millis() as u64;
        for _ in 0..1 + r.below(2) {
            let node = r.below(n) as usize;
            let start = Duration::from_millis(30_000 + r.below(span.saturating_sub(90_000).max(1)));
            let end = start + Duration::from_millis(20_000 + r.below(130_000));
            self.events.push((start, Event::CutAgentPath(node)));
            self.events.push((end, Event::HealAgentPath(node)));
        }
        self.events.sort_by_key(|(t, _)| *t);
        self
    }

    /// The same scenario with one or two nodes whose kubelet posts Ready=False for 20 s to 5 min
    /// ([`Event::KubeletNotReady`]), each cut from the API server (and half the time from its
    /// peers) from some instant of that span or of the 30 s after it, for 20 s to 3 min: the
    /// controller's not-ready taint, then its swap for the unreachable one as the node goes
    /// Unknown (docs/semantics.md §4.3). A third of the pods tolerate the not-ready taint otherwise
    /// than the unreachable one. Drawn from a stream of its own, so the scenario's other draws are
    /// as without it.
    pub fn with_not_ready(mut self) -> Scenario {
        let mut r = Rng::new(self.seed ^ 0x6e6f_7472_6561_6479);
        let n = self.nodes() as u64;
        let span = self.length.as_millis() as u64;
        for _ in 0..1 + r.below(2) {
            let node = r.below(n) as usize;
            let start =
                Duration::from_millis(20_000 + r.below(span.saturating_sub(120_000).max(1)));
            let lasting = 20_000 + r.below(280_000);
            self.events.push((start, Event::KubeletNotReady(node)));
            self.events.push((
                start + Duration::from_millis(lasting),
                Event::KubeletReady(node),
            ));
            if r.chance(70) {
                let cut = start + Duration::from_millis(r.below(lasting + 30_000));
                let heal = cut + Duration::from_millis(20_000 + r.below(160_000));
                self.events.push((cut, Event::CutApi(node)));
                self.events.push((heal, Event::HealApi(node)));
                if r.chance(50) {
                    self.events.push((cut, Event::CutPeers(node)));
                    self.events.push((heal, Event::HealPeers(node)));
                }
            }
        }
        let redraw = |r: &mut Rng, p: &mut PodSpec| {
            if r.chance(33) {
                p.not_ready = match r.below(4) {
                    0 => None,
                    1 => Some(0),
                    2 => Some(r.below(60)),
                    _ => Some(60 + r.below(300)),
                };
            }
        };
        for p in &mut self.pods {
            redraw(&mut r, p);
        }
        for (_, e) in &mut self.events {
            if let Event::Create(p) = e {
                redraw(&mut r, p);
            }
        }
        self.events.sort_by_key(|(t, _)| *t);
        self
    }

    /// Smaller scenarios that may still fail: each event (with its pair, for a cut and its heal)
    /// or pod left out in turn, for a caller that keeps the first that still fails.
    pub fn shrunk(&self) -> Vec<Scenario> {
        let mut out = Vec::new();
        for i in 0..self.events.len() {
            let mut s = self.clone();
            let (_, e) = s.events.remove(i);
            // A cut goes with its heal.
            let pair = match e {
                Event::CutApi(n) => Some(Event::HealApi(n)),
                Event::CutPeers(n) => Some(Event::HealPeers(n)),
                Event::CutAgentPath(n) => Some(Event::HealAgentPath(n)),
                Event::KubeletNotReady(n) => Some(Event::KubeletReady(n)),
                Event::ApiDown => Some(Event::ApiUp),
                _ => None,
            };
            if let Some(p) = pair
                && let Some(j) = s.events.iter().position(|(_, x)| *x == p)
            {
                s.events.remove(j);
            }
            if matches!(
                e,
                Event::HealApi(_)
                    | Event::HealPeers(_)
                    | Event::HealAgentPath(_)
                    | Event::KubeletReady(_)
                    | Event::ApiUp
            ) {
                continue;
            }
            out.push(s);
        }
        for i in 0..self.pods.len() {
            let mut s = self.clone();
            s.pods.remove(i);
            // Deletions name pods by index.
            s.events.retain(|(_, e)| !matches!(e, Event::Delete(_)));
            out.push(s);
        }
        out
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {:#x}: zones {:?}, {} s",
            self.seed,
            self.zones,
            self.length.as_secs()
        )?;
        let lags = self.agent_watch_lag.iter().zip(&self.kubelet_watch_lag);
        for (node, (agent, kubelet)) in lags.enumerate() {
            if !agent.is_zero() || !kubelet.is_zero() {
                writeln!(
                    f,
                    "  n{node}'s pod watches late by {} ms (agent), {} ms (kubelet)",
                    agent.as_millis(),
                    kubelet.as_millis()
                )?;
            }
        }
        let refusing: Vec<String> = (0..self.nodes())
            .filter(|&n| self.refuses(n))
            .map(|n| format!("n{n}"))
            .collect();
        if !refusing.is_empty() {
            writeln!(
                f,
                "  dead links to the API server refuse at once (not hang): {}",
                refusing.join(", ")
            )?;
        }
        for (i, p) in self.pods.iter().enumerate() {
            let seconds = |t: Option<u64>| t.map_or("forever".to_string(), |t| t.to_string());
            // The not-ready toleration only where it differs (`--not-ready`).
            let not_ready = if p.not_ready == p.toleration {
                String::new()
            } else {
                format!(" (not-ready {})", seconds(p.not_ready))
            };
            writeln!(
                f,
                "  pod {i} on n{}: tolerationSeconds {}{not_ready}, grace {}s",
                p.node,
                seconds(p.toleration),
                p.grace
            )?;
        }
        for (t, e) in &self.events {
            writeln!(f, "  {:>8.3}s {e:?}", t.as_secs_f64())?;
        }
        Ok(())
    }
}
