//! Does a flood of the peer endpoint move the sampler's schedule? The agent runs one
//! single-threaded runtime: the peer endpoint (default limits) and the sampling loop share its one
//! thread. Here a task ticking every 100 ms stands in for the sampling loop on such a runtime
//! beside a real peer endpoint, and records how late each tick is: 5 s quiet, then 5 s while four
//! client threads (four source addresses) send signed questions as fast as the server answers, then
//! 5 s of garbage requests. Printed: ticks, worst and 99th-percentile lateness per phase, and how
//! many questions the server answered and refused.
//!
//! Run with `cargo bench --bench peer_flood`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nodewarden::core::quorum::PeerReport;
use nodewarden::peer::{self, Key, PeerCounters, Rejection, auth};

const SECRET: &[u8] = b"a shared secret of more than thirty-two bytes";
const PHASE: Duration = Duration::from_secs(5);
const TICK: Duration = Duration::from_millis(100);

fn main() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    let counters = Arc::new(PeerCounters::default());
    let lateness: Arc<std::sync::Mutex<Vec<(Instant, Duration)>>> = Arc::default();
    {
        let (counters, lateness) = (counters.clone(), lateness.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let answer: peer::AnswerFn = Arc::new(|_| PeerReport {
                    node: "peer-a".into(),
                    zone: "z1".into(),
                    excluded: false,
                    reachable: true,
                    last_contact_age: Some(Duration::from_millis(800)),
                    kubelet_renewed: None,
                    node_read: None,
                    zone_recorded: None,
                    pods: None,
                    leader: Default::default(),
                    kubelet_age: None,
                });
                tokio::spawn(peer::serve(
                    listener,
                    Arc::new(Key::new(SECRET).expect("key")),
                    answer,
                    counters,
                ));
                let mut ticker = tokio::time::interval(TICK);
                let mut expected = tokio::time::Instant::now();
                loop {
                    ticker.tick().await;
                    let now = tokio::time::Instant::now();
                    let late = now.saturating_duration_since(expected);
                    lateness
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((Instant::now(), late));
                    expected += TICK;
                }
            });
        });
    }
    let start = Instant::now();
    std::thread::sleep(PHASE);
    let flood_from = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let flooders: Vec<_> = (0..4)
        .map(|i| {
            let (stop, sent) = (stop.clone(), sent.clone());
            std::thread::spawn(move || flood(addr, i, &stop, &sent, true))
        })
        .collect();
    std::thread::sleep(PHASE);
    stop.store(true, Ordering::SeqCst);
    for f in flooders {
        let _ = f.join();
    }
    let garbage_from = Instant::now();
    let garbage_stop = Arc::new(AtomicBool::new(false));
    let garbage: Vec<_> = (0..4)
        .map(|i| {
            let (stop, sent) = (garbage_stop.clone(), sent.clone());
            std::thread::spawn(move || flood(addr, i + 4, &stop, &sent, false))
        })
        .collect();
    std::thread::sleep(PHASE);
    garbage_stop.store(true, Ordering::SeqCst);
    for g in garbage {
        let _ = g.join();
    }
    let end = Instant::now();
    let ticks = lateness.lock().unwrap_or_else(|p| p.into_inner()).clone();
    println!(
        "tick every {TICK:?}; lateness of the ticks (how long after their schedule they ran):"
    );
    for (name, from, to) in [
        ("quiet", start, flood_from),
        ("flood of signed questions", flood_from, garbage_from),
        ("flood of garbage", garbage_from, end),
    ] {
        let mut l: Vec<Duration> = ticks
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, d)| *d)
            .collect();
        l.sort();
        let p99 = l.get(l.len() * 99 / 100).copied().unwrap_or_default();
        let worst = l.last().copied().unwrap_or_default();
        println!(
            "  {name:<28} {:>3} ticks  p99 {:>9.3?}  worst {:>9.3?}",
            l.len(),
            p99,
            worst
        );
    }
    println!(
        "requests sent {}; answered {}; refused: rate_limited {}, bad_request {}, unsigned {}",
        sent.load(Ordering::SeqCst),
        counters.accepted(),
        counters.rejected(Rejection::RateLimited),
        counters.rejected(Rejection::BadRequest),
        counters.rejected(Rejection::Unsigned),
    );
}

/// Sends questions (or garbage) from 127.0.0.<10 + i> as fast as they are answered.
fn flood(addr: SocketAddr, i: u8, stop: &AtomicBool, sent: &AtomicU64, signed: bool) {
    let key = Key::new(SECRET).expect("key");
    let source: SocketAddr = format!("127.0.0.{}:0", 10 + i).parse().expect("address");
    let socket = socket2_free_connect(source, addr);
    let Some(mut stream) = socket else {
        return;
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        let request = if signed {
            let ts = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let nonce = format!("{:016x}{:016x}", u64::from(i), n);
            let body = br#"{"from":"flooder","zone":"z1"}"#;
            let signature = key.sign(auth::question_message(ts, &nonce, body).as_bytes());
            let mut r = format!(
                "POST /v1/contact HTTP/1.1\r\nhost: p\r\ncontent-length: {}\r\n\
                 x-nodewarden-timestamp: {ts}\r\nx-nodewarden-nonce: {nonce}\r\n\
                 x-nodewarden-signature: {signature}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            r.extend_from_slice(body);
            r
        } else {
            b"GET /whatever HTTP/1.1\r\nhost: p\r\ncontent-length: 0\r\n\r\n".to_vec()
        };
        if stream.write_all(&request).is_err() {
            return;
        }
        sent.fetch_add(1, Ordering::SeqCst);
        // One response (small, one read almost always holds it whole).
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// A blocking connection bound to `source` (std has no bind-before-connect; a tokio socket on a
/// throwaway runtime does it and hands back the std stream).
fn socket2_free_connect(source: SocketAddr, addr: SocketAddr) -> Option<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().ok()?;
        socket.bind(source).ok()?;
        let stream = socket.connect(addr).await.ok()?;
        let std = stream.into_std().ok()?;
        std.set_nonblocking(false).ok()?;
        std.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        Some(std)
    })
}
