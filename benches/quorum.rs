//! Time from cut-off detection to a quorum verdict: one round as the quorum task runs it — ask
//! every peer at once over loopback through the signed client (a fresh connection each, as in a
//! partition), check every answer, decide — with 5 and 20 peers of this zone, half of them cut
//! off with this node. The peers are real peer endpoints on a runtime of their own thread; the
//! round runs on the calling thread's runtime, as in the agent.
//!
//! The whole delay from losing the API server to a verdict is `[fence] unreachableAfter` (15s by
//! default: cut-off detection, not measured here) plus this round.
//!
//! Run with `cargo bench --bench quorum`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nodewarden::core::quorum::{Heard, Peer, PeerReport, QuorumPolicy, Round, Undecided, decide};
use nodewarden::peer::{self, Key, PeerCounters};

fn main() {
    divan::main();
}

const SECRET: &[u8] = b"a shared secret of more than thirty-two bytes";

/// `n` peer endpoints of zone z1, every other one cut off; their addresses.
fn start_peers(n: usize) -> Vec<Peer> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind"))
        .collect();
    let peers: Vec<Peer> = listeners
        .iter()
        .enumerate()
        .map(|(i, l)| Peer {
            node: format!("peer-{i}"),
            address: l.local_addr().expect("addr"),
            zone: "z1".into(),
        })
        .collect();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let mut tasks = tokio::task::JoinSet::new();
            for (i, l) in listeners.into_iter().enumerate() {
                l.set_nonblocking(true).expect("nonblocking");
                let listener = tokio::net::TcpListener::from_std(l).expect("listener");
                let answer: peer::server::AnswerFn = Arc::new(move |_| PeerReport {
                    node: format!("peer-{i}"),
                    zone: "z1".into(),
                    excluded: false,
                    reachable: i % 2 == 0,
                    last_contact_age: Some(Duration::from_secs(if i % 2 == 0 { 1 } else { 20 })),
                    kubelet_renewed: None,
                    node_read: None,
                    zone_recorded: None,
                    pods: None,
                    leader: Default::default(),
                    kubelet_age: None,
                });
                let limits = peer::Limits {
                    rate_per_second: 1e9,
                    burst: u32::MAX,
                    replay_capacity: usize::MAX,
                    ..peer::Limits::default()
                };
                tasks.spawn(peer::serve_with_limits(
                    listener,
                    Arc::new(Key::new(SECRET).expect("key")),
                    answer,
                    Arc::new(PeerCounters::default()),
                    limits,
                ));
            }
            while tasks.join_next().await.is_some() {}
        });
    });
    peers
}

fn round(runtime: &tokio::runtime::Runtime, peers: &[Peer], key: &Key) -> bool {
    runtime.block_on(async {
        let answers = peer::ask_all(peers, key, "asker", "z1", Duration::from_secs(1)).await;
        let heard: Vec<(String, Heard)> = answers
            .into_iter()
            .map(|(p, r)| (p.zone, r.map_or(Heard::Silent, Heard::Report)))
            .collect();
        assert!(heard.iter().all(|(_, h)| matches!(h, Heard::Report(_))));
        let r = Round {
            zone: "z1".into(),
            zone_size: peers.len() + 1,
            this_node_counted: true,
            other_zones: 0,
            own_contact_age: Duration::from_secs(20),
            own_silence_age: Duration::from_secs(20),
            heard,
            tainted: false,
            silent_reaching: 0,
            own_kubelet_age: None,
            leaderless_unknown: None,
            cut_off_remembered: Vec::new(),
        };
        let policy = QuorumPolicy {
            fixes: nodewarden::core::quorum::Fixes::ALL,
            without_peers: Undecided::Hold,
            whole_zone_cut_off: Undecided::Enforce,
            lost_together: Duration::from_secs(15),
            settled_after: Duration::from_secs(20),
            unreachable_after: Duration::from_secs(15),
            order_tie: Duration::from_secs(5),
            order_tie_read: Duration::from_secs(5),
            unheard_after: Duration::from_secs(15),
            renewed_within: Duration::from_millis(11_400),
            record_in_time: true,
        };
        decide(&r, &policy, true).is_hold()
    })
}

#[divan::bench(args = [5, 20], sample_count = 30)]
fn verdict_after_cut_off(bencher: divan::Bencher, n: usize) {
    let peers = start_peers(n);
    let key = Key::new(SECRET).expect("key");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Wait for the endpoints to accept.
    let first: SocketAddr = peers[0].address;
    for _ in 0..100 {
        if std::net::TcpStream::connect(first).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    bencher.bench_local(|| round(&runtime, &peers, &key));
}
