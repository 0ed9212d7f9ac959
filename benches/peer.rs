//! Peer endpoint throughput: valid signed questions answered per second by a server running on
//! one core (a single-threaded tokio runtime on its own thread), over loopback. A client thread
//! sends batches of 100 pipelined questions on one kept-alive connection and reads the 100
//! answers; divan's items/s is the answer rate. The rate limit and replay cache are raised out of
//! the way (their checks still run) so the figure is the cost of the work — parse, SHA-256, two
//! HMACs, the replay cache, JSON — not the configured limit of 50/s.
//!
//! Also the cost of the signature work alone (verify a question, sign an answer), for scale.
//!
//! Run with `cargo bench --bench peer`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use divan::counter::ItemsCount;
use nodewarden::core::quorum::PeerReport;
use nodewarden::peer::{self, Key, PeerCounters, auth};

fn main() {
    divan::main();
}

const SECRET: &[u8] = b"a shared secret of more than thirty-two bytes";
const BATCH: usize = 100;
const QUESTION: &[u8] = br#"{"from":"asker","zone":"z1"}"#;

/// Starts the server on its own thread with a single-threaded runtime; returns its address.
fn start_server() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let answer: peer::server::AnswerFn = Arc::new(|_| PeerReport {
                node: "peer-a".into(),
                zone: "z1".into(),
                excluded: false,
                reachable: true,
                last_contact_age: Some(Duration::from_millis(1234)),
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
            peer::serve_with_limits(
                listener,
                Arc::new(Key::new(SECRET).expect("key")),
                answer,
                Arc::new(PeerCounters::default()),
                limits,
            )
            .await;
        });
    });
    addr
}

fn unique_nonce() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{:032x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// `BATCH` signed questions, back to back.
fn batch(key: &Key) -> Vec<u8> {
    let ts = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = Vec::with_capacity(BATCH * 400);
    for _ in 0..BATCH {
        let nonce = unique_nonce();
        let signature = key.sign(auth::question_message(ts, &nonce, QUESTION).as_bytes());
        let _ = write!(
            out,
            "POST /v1/contact HTTP/1.1\r\nhost: peer\r\ncontent-length: {}\r\n\
             x-nodewarden-timestamp: {ts}\r\nx-nodewarden-nonce: {nonce}\r\n\
             x-nodewarden-signature: {signature}\r\n\r\n",
            QUESTION.len()
        );
        out.extend_from_slice(QUESTION);
    }
    out
}

/// Reads `n` responses, each with a Content-Length body; returns how many were 200.
fn read_responses(stream: &mut TcpStream, buf: &mut Vec<u8>, n: usize) -> usize {
    let mut ok = 0;
    let mut chunk = [0u8; 64 * 1024];
    for _ in 0..n {
        let (head_end, length) = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if head.starts_with("http/1.1 200") {
                    ok += 1;
                }
                break (i + 4, length);
            }
            let read = stream.read(&mut chunk).expect("read");
            assert!(read > 0, "the server closed the connection");
            buf.extend_from_slice(&chunk[..read]);
        };
        while buf.len() < head_end + length {
            let read = stream.read(&mut chunk).expect("read");
            assert!(read > 0, "the server closed the connection");
            buf.extend_from_slice(&chunk[..read]);
        }
        buf.drain(..head_end + length);
    }
    ok
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn answers_one_core(bencher: divan::Bencher) {
    let addr = start_server();
    let key = Key::new(SECRET).expect("key");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = Vec::new();
    bencher
        .counter(ItemsCount::new(BATCH))
        .with_inputs(|| batch(&key))
        .bench_local_values(|questions| {
            stream.write_all(&questions).expect("write");
            let ok = read_responses(&mut stream, &mut buf, BATCH);
            assert_eq!(ok, BATCH, "every question answered 200");
        });
}

#[divan::bench]
fn verify_question_and_sign_answer(bencher: divan::Bencher) {
    let key = Key::new(SECRET).expect("key");
    let nonce = unique_nonce();
    let signature = key.sign(auth::question_message(1_700_000_000, &nonce, QUESTION).as_bytes());
    let answer = br#"{"node":"peer-a","zone":"z1","reachable":true,"lastContactAgeMillis":1234}"#;
    bencher.bench_local(|| {
        let message = auth::question_message(1_700_000_000, &nonce, divan::black_box(QUESTION));
        assert!(key.verify(message.as_bytes(), &signature));
        key.sign(auth::answer_message(&nonce, 1_700_000_001, divan::black_box(answer)).as_bytes())
    });
}
