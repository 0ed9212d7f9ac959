//! Connected mode: start-up checks, then the sampling loop in this task and the reporter,
//! heartbeat and watch tasks beside it (docs/architecture.md §3). Any task ending is fatal.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Api;
use tokio::sync::{mpsc, watch};

use crate::agent::clock::Clock;
use crate::agent::sampling::{self, Publisher};
use crate::agent::shutdown::{self, Shutdown, Tasks};
use crate::agent::{Source, fence_task, heartbeat, node_name, quorum, reporter};
use crate::api;
use crate::api::lease::LeaseKeeper;
use crate::api::reachability::Reachability;
use crate::config::Config;
use crate::core::backoff::Backoff;
use crate::core::condition::NodeCondition;
use crate::core::event::PendingEvent;
use crate::observe::http::Health;
use crate::state::State;

/// Why connected mode could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration cannot work (exit 78).
    #[error("{0}")]
    Config(String),
    /// The cluster refused us (exit 1; a restart may help once the cause is fixed).
    #[error("{0}")]
    Refused(String),
    /// A task ended, which it never should.
    #[error("{0}")]
    TaskEnded(String),
}

/// Our Lease: configured, or `nodewarden-<node>`. The kubelet's own Lease
/// (`kube-node-lease/<node>`) only when this agent is the node's only status reporter.
pub fn lease_identity(config: &Config, node: &str) -> Result<(String, String), StartError> {
    let name = config
        .lease_name
        .clone()
        .unwrap_or_else(|| format!("nodewarden-{node}"));
    let namespace = config.lease_namespace.clone();
    if namespace == "kube-node-lease" && name == node && !config.only_status_reporter {
        return Err(StartError::Config(format!(
            "leaseName {name:?} in kube-node-lease is the kubelet's Lease for node {node}; \
             choose another leaseName, or set onlyStatusReporter = true if no kubelet runs here"
        )));
    }
    Ok((namespace, name))
}

/// What each task reads of the configuration, built once when the agent connects
/// ([`Settings::new`]): past that, `run` reads the configuration only to hand it to the sampling
/// loop (see [`run`]).
struct Settings {
    node: String,
    /// Our Lease's namespace and name ([`lease_identity`]).
    lease: (String, String),
    /// `nodeLeaseDurationSeconds`.
    lease_duration_seconds: u32,
    /// How often the Lease is renewed: the heartbeat's period, and the cap of the reporter's
    /// retries.
    renew: Duration,
    peers: PeerSettings,
    quorum: quorum::QuorumSettings,
    fence: fence_task::FenceSettings,
    reporter: reporter::ReporterSettings,
}

/// What the peer endpoint, the peer source and the asker read (`[peers]`).
struct PeerSettings {
    /// Where this agent answers its peers (`listen`), if it does.
    listen: Option<SocketAddr>,
    /// The shared key (`keyFile`), read once here: an unreadable key stops the start.
    key: Option<Arc<crate::peer::Key>>,
    /// How long one round of asking waits (`timeout`).
    timeout: Duration,
    /// The fence's `unreachableAfter`: what this agent tells a peer is judged by the fence's rule.
    unreachable_after: Duration,
    /// `static`, without this node.
    known: Vec<crate::core::quorum::Peer>,
    /// `service` (namespace, name) and `portName`: the EndpointSlices that list the agents.
    service: Option<((String, String), String)>,
}

impl Settings {
    /// Every task's settings; `Err` for a configuration that cannot work (our Lease is the
    /// kubelet's; the peers' key cannot be read).
    fn new(config: &Config, clock: Clock) -> Result<Self, StartError> {
        let node = node_name(config);
        let lease = lease_identity(config, &node)?;
        let renew = heartbeat::renew_interval(config.node_lease_duration_seconds);
        let key = match &config.peers.key_file {
            Some(path) => Some(Arc::new(
                crate::peer::Key::load(path).map_err(|e| StartError::Config(e.to_string()))?,
            )),
            None => None,
        };
        let peers = PeerSettings {
            listen: config.peers.listen,
            key,
            timeout: config.peers.timeout,
            unreachable_after: config.fence.unreachable_after,
            known: api::peers::from_static(&config.peers.static_peers, &node),
            service: config
                .peers
                .service
                .clone()
                .map(|s| (s, config.peers.port_name.clone())),
        };
        let reporter = reporter::ReporterSettings {
            node: node.clone(),
            report_frequency: config.node_status_report_frequency,
            owned_taints: config
                .conditions
                .iter()
                .filter_map(|c| c.taint.clone())
                .collect(),
            // Capped at the renew interval: after the API returns, every pending write is retried
            // within one renew interval.
            backoff: Backoff {
                base: Duration::from_millis(200),
                cap: renew.max(Duration::from_secs(1)),
            },
            clock,
        };
        Ok(Settings {
            lease,
            lease_duration_seconds: config.node_lease_duration_seconds,
            renew,
            peers,
            quorum: quorum::QuorumSettings::new(config),
            fence: fence_task::FenceSettings::new(config),
            reporter,
            node,
        })
    }
}

/// Runs the connected agent until `shutdown` resolves: then the sampling loop stops, the fence
/// task writes what it has not written yet (within [`shutdown::DRAIN_BOUND`]) and the other
/// tasks are aborted.
///
/// Read as a table: each task's settings are built once ([`Settings`]), then the channels, then
/// the tasks, each handed its settings and its ends of the channels. The sampling loop alone
/// keeps the whole configuration: a reload (SIGHUP) validates the whole file anew and replaces
/// its thresholds and conditions, so it owns a copy of what it was started with.
pub async fn run<S: Source>(
    config: &Config,
    clients: impl Into<api::Clients>,
    source: S,
    health: Arc<Health>,
    shutdown: impl Future<Output = &'static str>,
) -> Result<(), StartError> {
    // The one clock every decision reads.
    let clock = Clock::start();
    let api::Clients {
        agent: client,
        node_path,
    } = clients.into();
    // Every request's timeout and counters, built once and handed to each task that asks.
    let requests = api::Requests::new(config.request_timeout());
    let Settings {
        node,
        lease: (lease_ns, lease_name),
        lease_duration_seconds,
        renew,
        peers,
        quorum: quorum_settings,
        fence: fence_settings,
        reporter: reporter_settings,
    } = Settings::new(config, clock)?;

    health.require_api();
    health.metrics.set_request_counts(requests.counts());
    let metrics_health = health.clone();
    let reach = Arc::new(Reachability::with_observer(
        &node,
        Box::new(move |state| {
            metrics_health
                .metrics
                .record_reachable(state == crate::api::reachability::State::Reachable)
        }),
    ));

    // The state a previous run left, read once: the fence task resumes from it, the reporter
    // first sends the Events it holds, the sampling loop resumes from the conditions decided.
    let kubelet_lag = fence_settings.policy.kubelet_lag;
    let persisted = fence_task::load_state(&fence_settings.state_directory, &node, clock.scale());
    let Resumed {
        held,
        decided,
        resume_from,
    } = resumed(persisted.as_ref());
    let counters = Arc::new(crate::peer::PeerCounters::default());
    health.metrics.set_peer_counters(counters.clone());

    // The channels, each with who sends and who reads.
    // Node UID: the start-up check and the UID follower → heartbeat, reporter.
    let (uid_tx, uid_rx) = watch::channel::<Option<String>>(None);
    // Start-up check → `run`: a refusal ends the agent.
    let (check_tx, mut check_rx) = tokio::sync::oneshot::channel::<StartError>();
    // Sampling → reporter: the latest decisions, and each condition transition's Event.
    let (snap_tx, snap_rx) = watch::channel(None);
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    // Node watch → UID follower, quorum, fence, reporter.
    let (node_tx, node_rx) = watch::channel::<Option<Arc<Node>>>(None);
    // Reporter → fence: the Events and decisions to keep on disk; fence → reporter: what is.
    let (journal_tx, journal_rx) = watch::channel(reporter::Journal {
        generation: 0,
        events: held.clone(),
        decided,
    });
    let (durable_tx, durable_rx) = watch::channel(0u64);
    // Quorum → fence, peer endpoint: zone and peers as a previous run left them until the Node
    // and the peer source say otherwise, and the verdict of a partition that outlived that run.
    let (quorum_tx, quorum_rx) = watch::channel(quorum::resume(persisted.as_ref(), &clock));
    // Fence → quorum: the fence's judgement of contact.
    let (cut_off_tx, cut_off_rx) = watch::channel(None);
    // Fence → quorum: whether the Node carried the unreachable taint when last seen.
    let (tainted_tx, tainted_rx) = watch::channel(false);
    // Fence → heartbeat: whether the Node was not Ready when last seen.
    let (not_ready_tx, not_ready_rx) = watch::channel(false);
    let (unlisted_tx, unlisted_rx) = watch::channel(Vec::new());
    // Leader Lease reader → fence and quorum: what the controller-manager's leader Lease proves.
    let (leader_tx, leader_rx) = watch::channel(crate::agent::leader::LeaderView::default());
    // Peer source → quorum. A static list is known at once; a discovered one replaces the
    // persisted list only once listed.
    let (peers_tx, mut peers_rx) = watch::channel(peers.known);
    if peers.service.is_none() {
        peers_rx.mark_changed();
    }
    let contact_before = quorum::contact_before(persisted.as_ref(), &clock);
    let previous_scale = crate::state::contact_scale(&fence_settings.state_directory);
    let stopped_cut_off = persisted
        .as_ref()
        .is_some_and(|s| s.cut_off_since.is_some());
    let heard_bound = crate::core::quorum::resumed_heard_bound(
        tokio::time::Instant::now(),
        contact_before,
        stopped_cut_off,
    );

    // The tasks that write state (the fence: pods, contact, held Events) finish their step and
    // write it on shutdown; the others hold nothing that is not on disk or in the API server
    // already and are aborted once those are done.
    let mut stateful = Tasks::new();
    let mut tasks = Tasks::new();
    let stop = Shutdown::new();

    // Start-up check: the Node must exist and we must be allowed to read it. It runs beside
    // everything else: an unreachable API server is not fatal (the agent must also start in the
    // middle of a partition), and sampling, the watchdog and the fence never wait for it.
    tasks.spawn(
        "start-up check",
        check_node(
            Api::all(client.clone()),
            node.clone(),
            requests.clone(),
            reach.clone(),
            health.clone(),
            uid_tx.clone(),
            check_tx,
        ),
    );

    let (views, watches) = api::watch::start(
        client.clone(),
        requests.timeout(),
        node.clone(),
        node_tx,
        reach.subscribe(),
    );
    tasks.spawn("watches", watches);
    health.watch_pod_view(crate::observe::http::PodViewHealth {
        view: views.pod_view.clone(),
        reach: reach.clone(),
        bound: crate::core::pod_view::bound(requests.timeout()),
    });

    tasks.spawn("node UID follower", follow_uid(node_rx.clone(), uid_tx));

    let nudges = Arc::new(quorum::Nudges::default());
    let renew_now = Arc::new(tokio::sync::Notify::new());
    let keeper = LeaseKeeper::new(
        client.clone(),
        &requests,
        &lease_ns,
        &lease_name,
        &node,
        lease_duration_seconds,
        &node,
    )
    .with_timeout(requests.timeout().min(renew));
    if let (Some(addr), Some(key)) = (peers.listen, peers.key.clone()) {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            StartError::Config(format!("peers.listen: cannot listen on {addr}: {e}"))
        })?;
        let answer = peer_answer(
            &node,
            peers.unreachable_after,
            reach.clone(),
            (quorum_rx.clone(), leader_rx.clone(), clock),
            contact_before,
            nudges.clone(),
        );
        log::info!(address = addr.to_string().as_str(); "peer endpoint listening on {addr}");
        let leases = Arc::new(crate::api::lease::KubeletLeases::new(
            client.clone(),
            &requests,
        ));
        let limits = crate::peer::Limits::default();
        let bound = limits.lease_read;
        let lease: crate::peer::LeaseFn = Arc::new(move |asker: String| {
            let leases = leases.clone();
            Box::pin(async move { leases.renew_time(&asker, bound).await })
        });
        let nodes = Arc::new(crate::api::node::NodeTaints::new(client.clone(), &requests));
        let node_bound = limits.node_read;
        let zone_nodes = nodes.clone();
        let taint: crate::peer::TaintFn = Arc::new(move |asker: String| {
            let nodes = nodes.clone();
            Box::pin(async move { nodes.read(&asker, node_bound).await })
        });
        let zone_bound = limits.zone_read;
        let zone: crate::peer::ZoneFn = Arc::new(move |asker: String, key: String| {
            let nodes = zone_nodes.clone();
            Box::pin(async move { nodes.zone_record(&asker, &key, zone_bound).await })
        });
        let lister = Arc::new(crate::api::pods::NodePods::new(client.clone(), &requests));
        let pods_bound = limits.pods_read;
        let pods: crate::peer::PodsFn = Arc::new(move |asker: String, uids: Vec<String>| {
            let lister = lister.clone();
            Box::pin(async move {
                let listed = lister.listed(&asker, &uids, pods_bound).await?;
                // A pod the planner cannot read (`fence_pod`) is left out, as the fence's own
                // view leaves it out.
                Some(listed.iter().filter_map(fence_task::fence_pod).collect())
            })
        });
        tasks.spawn(
            "peer endpoint",
            crate::peer::serve_reading(
                listener,
                key,
                answer,
                crate::peer::Reads {
                    lease: Some(lease),
                    taint: Some(taint),
                    pods: Some(pods),
                    zone: Some(zone),
                },
                counters.clone(),
                limits,
            ),
        );
    }
    match peers.service {
        Some(((namespace, service), port)) => {
            let (client, me) = (client.clone(), node.clone());
            tasks.spawn("peer discovery", async move {
                api::peers::discover(client, &namespace, &service, &port, &me, peers_tx).await;
            });
        }
        None => {
            tasks.spawn("static peers", async move {
                // Kept open as long as the agent runs: a closed channel reads as no change.
                let _static = peers_tx;
                std::future::pending::<()>().await;
            });
        }
    }
    {
        let inputs = quorum::QuorumInputs {
            peers: peers_rx,
            node: node_rx.clone(),
            reach: reach.clone(),
            ask: peers
                .key
                .clone()
                .map(|key| asker(&node, key, peers.timeout, counters.clone())),
            contact_before,
            heard_bound,
            previous_scale,
            cut_off: cut_off_rx,
            tainted: tainted_rx,
            leader: leader_rx.clone(),
            unlisted: unlisted_rx,
            nudges,
            tell: peers
                .key
                .map(|key| teller(&node, key, peers.timeout, counters)),
            probe: Some(prober(keeper.probe())),
            node_path: node_path.map(|client| node_path_prober(client, &requests)),
            renew_now: renew_now.clone(),
        };
        let (node, health) = (node.clone(), health.clone());
        tasks.spawn("quorum", async move {
            quorum::run(quorum_settings, node, inputs, quorum_tx, health, clock).await;
        });
    }
    // Read only for the fence: with fencing off, nothing is planned on a taint.
    if let Some(lease) = config
        .fence
        .controller_manager_lease
        .clone()
        .filter(|_| config.fence.mode != crate::core::fence_plan::Mode::Off)
    {
        let (client, requests, reach) = (client.clone(), requests.clone(), reach.subscribe());
        tasks.spawn("leader Lease", async move {
            crate::agent::leader::run(client, requests, lease, reach, clock, leader_tx).await;
        });
    }
    // Also with fencing off: the task keeps the state `nodewarden status` reads.
    {
        let inputs = fence_task::FenceInputs {
            persisted,
            journal: journal_rx,
            durable: durable_tx,
            pods: views.pods.clone(),
            pods_changed: views.pods_changed.clone(),
            pod_view: views.pod_view.clone(),
            node: node_rx.clone(),
            reach: reach.clone(),
            quorum: quorum_rx,
            leader: leader_rx,
            cut_off: cut_off_tx,
            tainted: tainted_tx,
            not_ready: not_ready_tx,
            unlisted: unlisted_tx,
        };
        let api = api::ApiClient {
            kube: client.clone(),
            requests: requests.clone(),
        };
        let (node, health) = (node.clone(), health.clone());
        let stop = stop.clone();
        stateful.spawn("fence", async move {
            fence_task::run(api, fence_settings, node, inputs, health, clock, stop).await;
        });
    }
    {
        let (uid, reach, health) = (uid_rx.clone(), reach.clone(), health.clone());
        tasks.spawn("heartbeat", async move {
            heartbeat::run(
                keeper,
                renew,
                kubelet_lag,
                uid,
                reach,
                health,
                clock,
                renew_now,
                not_ready_rx,
            )
            .await;
        });
    }
    {
        let inputs = reporter::ReporterInputs {
            snapshots: snap_rx,
            node: node_rx,
            events: event_rx,
            held,
            journal: journal_tx,
            durable: durable_rx,
        };
        let (reach, health) = (reach.clone(), health.clone());
        tasks.spawn("reporter", async move {
            reporter::run(
                client,
                requests,
                reporter_settings,
                inputs,
                reach,
                health,
                uid_rx,
            )
            .await;
        });
    }

    // The sampling loop, in this task.
    let publisher = Publisher {
        snapshots: snap_tx,
        events: event_tx,
        resume_from,
    };
    let sampling = sampling::run(config, source, health, Some(publisher), clock, shutdown);
    tokio::pin!(sampling);
    let outcome = tokio::select! {
        // A refusal at start-up is reported as itself, not as its task ending.
        biased;
        Ok(refused) = &mut check_rx => Err(refused),
        () = &mut sampling => Ok(()),
        Some(ended) = tasks.join_next() => Err(task_ended(ended)),
        Some(ended) = stateful.join_next() => Err(task_ended(ended)),
    };
    // Also after a failure: what the fence knows is written before the supervisor restarts us.
    stop.trigger("the agent stopping");
    shutdown::drain(stateful, shutdown::DRAIN_BOUND).await;
    tasks.abort_all().await;
    outcome
}

/// What the reporter and the sampling loop take from the state a previous run left.
struct Resumed {
    /// Condition Events not yet delivered.
    held: Vec<PendingEvent>,
    /// Our conditions as last decided.
    decided: Vec<NodeCondition>,
    /// Where the sampling loop's decisions resume (`core::condition::resume_point`).
    resume_from: Vec<NodeCondition>,
}

fn resumed(persisted: Option<&State>) -> Resumed {
    let held = persisted
        .map(|s| s.condition_events.clone())
        .unwrap_or_default();
    let conditions = |stored: &mut dyn Iterator<Item = &crate::state::StoredCondition>| {
        stored
            .filter_map(crate::state::StoredCondition::to_condition)
            .collect::<Vec<NodeCondition>>()
    };
    let seen = conditions(
        &mut persisted
            .iter()
            .flat_map(|s| s.node_status.iter())
            .flat_map(|n| &n.conditions),
    );
    let decided = conditions(&mut persisted.iter().flat_map(|s| &s.decided));
    let resume_from = crate::core::condition::resume_point(&seen, &decided);
    Resumed {
        held,
        decided,
        resume_from,
    }
}

/// The start-up check: reads our Node once. A missing Node or denied access is sent on `refuse`
/// (fatal); any other failure is logged and left to the tasks that write, which retry. Then it
/// waits: it has nothing more to do, and a task that ends is fatal.
async fn check_node(
    nodes: Api<Node>,
    node: String,
    requests: api::Requests,
    reach: Arc<Reachability>,
    health: Arc<Health>,
    uid_tx: watch::Sender<Option<String>>,
    refuse: tokio::sync::oneshot::Sender<StartError>,
) {
    let sent = tokio::time::Instant::now();
    let first = requests
        .call("get", format!("nodes/{node}"), nodes.get(&node))
        .await;
    reach.record(&first, crate::core::contact::Request::Other, sent);
    let refused = match first {
        Ok(n) => {
            health.set_api_ok();
            uid_tx.send_replace(n.metadata.uid.clone());
            None
        }
        Err(e) if e.is_not_found() => Some(format!(
            "node {node} does not exist ({e}); register it first or set nodeName"
        )),
        Err(e) if matches!(e.code(), Some(401) | Some(403)) => Some(format!(
            "access denied: {e}; grant this identity get/watch/patch on nodes and nodes/status"
        )),
        Err(e) => {
            log::warn!(
                error = e.to_string().as_str();
                "cannot reach the API server at start ({e}); sampling goes on and writes follow when it answers"
            );
            None
        }
    };
    if let Some(why) = refused {
        let _ = refuse.send(StartError::Refused(why));
        return;
    }
    std::future::pending::<()>().await;
}

/// The Node's UID from the watch, for owner references and events.
async fn follow_uid(
    mut node: watch::Receiver<Option<Arc<Node>>>,
    uid_tx: watch::Sender<Option<String>>,
) {
    while node.changed().await.is_ok() {
        let uid = node
            .borrow_and_update()
            .as_ref()
            .and_then(|n| n.metadata.uid.clone());
        if uid.is_some() {
            uid_tx.send_if_modified(|cur| {
                let changed = *cur != uid;
                *cur = uid.clone();
                changed
            });
        }
    }
}

/// A task that ended, which none should while the agent runs; logged.
fn task_ended((name, how): (&str, Result<(), tokio::task::JoinError>)) -> StartError {
    let what = match how {
        Ok(()) => format!("the {name} task ended"),
        Err(e) => format!("the {name} task failed: {e}"),
    };
    log::error!("{what}; exiting so that the supervisor restarts the agent");
    StartError::TaskEnded(what)
}

/// What this agent tells a peer: whether it reaches the API server by the fence's own rule (a
/// contact within `unreachableAfter`) and how long ago its last contact was — its own, or the
/// latest ready answer of the kubelet's path while its own requests fail (`QuorumView::node_path`)
/// — what its reads of the controller-manager's leader Lease prove (`agent::leader`), which
/// a peer cut off cannot read itself, and its own kubelet's last renewal as its readers read it
/// for it since its last contact (`quorum::kubelet_answered`).
fn peer_answer(
    node: &str,
    after: Duration,
    reach: Arc<Reachability>,
    (view, leader, clock): (
        watch::Receiver<quorum::QuorumView>,
        watch::Receiver<crate::agent::leader::LeaderView>,
        crate::agent::clock::Clock,
    ),
    contact_before: Option<tokio::time::Instant>,
    nudges: Arc<quorum::Nudges>,
) -> crate::peer::AnswerFn {
    let node = node.to_string();
    let started = tokio::time::Instant::now();
    Arc::new(move |question| {
        let now = tokio::time::Instant::now();
        let contact = reach.last_contact().max(contact_before);
        let own = contact.map(|t| now.saturating_duration_since(t));
        let (zone, excluded, probed, kubelet_age) = {
            let v = view.borrow();
            let probed = v.node_path.heard_age(now);
            let kubelet = quorum::kubelet_answered(&v, &clock, started, contact, now);
            (
                v.zone.clone().unwrap_or_default(),
                v.excluded,
                probed,
                kubelet,
            )
        };
        let age = crate::core::quorum::answer_age(own, probed);
        let answer = crate::core::quorum::answer(&node, &zone, age, after);
        let proven = *leader.borrow();
        let report = crate::core::quorum::PeerReport {
            excluded,
            // Pending while it says it reaches the API server: by its own requests answered
            // again, or by a contact not yet `unreachableAfter` old.
            leader: crate::core::quorum::PeerLeader::answered(
                proven.timers_from,
                (proven.pending, proven.leaderless),
                clock.mono_of(now),
                answer.reachable,
            ),
            kubelet_age,
            ..answer
        };
        nudges.answered(question, &report);
        report
    })
}

/// Tells peers that this node reaches the API server again, for the quorum task: each answer is
/// counted as an asked one is, and one that fails is logged.
fn teller(
    node: &str,
    key: Arc<crate::peer::Key>,
    timeout: std::time::Duration,
    counters: Arc<crate::peer::PeerCounters>,
) -> quorum::Teller {
    let node = node.to_string();
    Arc::new(move |peers, zone| {
        let (node, key, counters) = (node.clone(), key.clone(), counters.clone());
        Box::pin(async move {
            for (peer, result) in crate::peer::tell_back(&peers, &key, &node, &zone, timeout).await
            {
                counters.record_asked(&result);
                if let Err(e) = result {
                    log::warn!(
                        peer = peer.node.as_str(), reason = e.reason();
                        "peer {} ({}) was not told that this node reaches the API server again: {e}",
                        peer.node, peer.address
                    );
                }
            }
        })
    })
}

/// One read of this node's Lease, for the quorum task when a peer says it reaches the API server
/// again.
fn prober(probe: crate::api::lease::LeaseProbe) -> quorum::Prober {
    let probe = Arc::new(probe);
    Arc::new(move |bound| {
        let probe = probe.clone();
        Box::pin(async move { probe.once(bound).await })
    })
}

/// Probes the kubelet's path for the quorum task (`api::node_path_ready`).
fn node_path_prober(client: kube::Client, requests: &api::Requests) -> quorum::Prober {
    let requests = requests.clone();
    Arc::new(move |bound| {
        let (client, requests) = (client.clone(), requests.clone());
        Box::pin(async move { api::node_path_ready(&client, &requests, bound).await })
    })
}

/// Asks peers for the quorum task: every answer that fails its checks (forged, stale, the wrong
/// peer, garbage) counts as silence, is counted, and is logged once per peer and reason.
fn asker(
    node: &str,
    key: Arc<crate::peer::Key>,
    timeout: std::time::Duration,
    counters: Arc<crate::peer::PeerCounters>,
) -> quorum::Asker {
    let node = node.to_string();
    let seen = Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::<
        String,
        &'static str,
    >::new()));
    Arc::new(move |peers, readers: quorum::Readers, zone, pods| {
        let (node, key, counters, seen) =
            (node.clone(), key.clone(), counters.clone(), seen.clone());
        Box::pin(async move {
            let answers = crate::peer::ask_all_reading(
                &peers,
                (&readers.0, &readers.1),
                (&pods.0, &pods.1),
                &key,
                &node,
                &zone,
                timeout,
            )
            .await;
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            answers
                .into_iter()
                .map(|(peer, result)| {
                    counters.record_asked(&result);
                    let heard = match result {
                        Ok(report) => {
                            seen.remove(&peer.node);
                            crate::core::quorum::Heard::Report(report)
                        }
                        Err(e) => {
                            let reason = e.reason();
                            if seen.insert(peer.node.clone(), reason) != Some(reason) {
                                log::warn!(
                                    peer = peer.node.as_str(), reason = reason;
                                    "peer {} ({}) did not answer usably: {e}; counted as silent",
                                    peer.node, peer.address
                                );
                            }
                            crate::core::quorum::Heard::Silent
                        }
                    };
                    (peer, heard)
                })
                .collect()
        })
    })
}
