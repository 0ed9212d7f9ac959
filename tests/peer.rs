//! The peer endpoint on loopback, both ends. The server is checked with raw HTTP bytes over a
//! TcpStream, signed here with ring directly from the protocol's text (so this test is an
//! independent client, not the crate's client agreeing with itself); the client is checked
//! against fake servers written here that answer wrongly on purpose. Every wait is bounded.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nodewarden::core::quorum::{Peer, PeerReport};
use nodewarden::peer::{self, AskError, Key, PeerCounters, Rejection};
use ring::{digest, hmac};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const SECRET: &[u8] = b"a shared secret of more than thirty-two bytes";
const OTHER_SECRET: &[u8] = b"another secret, also thirty-two bytes or more";
const WAIT: Duration = Duration::from_secs(5);

// ---- the protocol, written out independently of src/peer ----

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sign(secret: &[u8], message: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    hex(hmac::sign(&key, message.as_bytes()).as_ref())
}

fn sha256(body: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, body).as_ref())
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A nonce unique within this test process.
fn fresh_nonce() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let base = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{:032x}",
        base.wrapping_mul(1_000_003) ^ NEXT.fetch_add(1, Ordering::Relaxed) as u128
    )
}

const QUESTION: &str = r#"{"from":"asker","zone":"z1"}"#;

/// A question as raw bytes, signed over `signed_body` with `secret`, carrying `sent_body`.
fn question(
    secret: &[u8],
    timestamp: i64,
    nonce: &str,
    signed_body: &str,
    sent_body: &str,
) -> Vec<u8> {
    let signature = sign(
        secret,
        &format!(
            "nodewarden-v1\nPOST\n/v1/contact\n{timestamp}\n{nonce}\n{}",
            sha256(signed_body.as_bytes())
        ),
    );
    format!(
        "POST /v1/contact HTTP/1.1\r\nhost: peer\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nx-nodewarden-timestamp: {timestamp}\r\n\
         x-nodewarden-nonce: {nonce}\r\nx-nodewarden-signature: {signature}\r\n\r\n{sent_body}",
        sent_body.len()
    )
    .into_bytes()
}

fn valid_question(nonce: &str) -> Vec<u8> {
    question(SECRET, unix_now(), nonce, QUESTION, QUESTION)
}

/// One HTTP/1 message read off a stream.
#[derive(Debug)]
struct Message {
    /// Status code (responses) or 0 (requests).
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Message {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one message with a Content-Length body (or none), keeping what follows in `buf`.
/// `None` on end of stream, a malformed head or after [`WAIT`].
async fn read_message(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Message> {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let first = lines.next()?;
    let status = if first.starts_with("HTTP/") {
        first.split(' ').nth(1)?.parse().ok()?
    } else {
        0
    };
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(Some(0), |(_, v)| v.parse().ok())?;
    while buf.len() < head_end + length {
        let n = tokio::time::timeout_at(deadline, stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = buf[head_end..head_end + length].to_vec();
    buf.drain(..head_end + length);
    Some(Message {
        status,
        headers,
        body,
    })
}

/// Sends `bytes` on a fresh connection and reads the reply.
async fn send_raw(addr: SocketAddr, bytes: &[u8]) -> Message {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("write");
    read_message(&mut stream, &mut Vec::new())
        .await
        .expect("a reply")
}

// ---- a real server under test ----

struct Server {
    addr: SocketAddr,
    counters: Arc<PeerCounters>,
    /// How many times the answer closure ran.
    answered: Arc<AtomicUsize>,
    /// Each question the answer closure saw: who asked, and whether it said it is back.
    questions: Arc<Mutex<Vec<(String, bool)>>>,
    task: JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn report(node: &str) -> PeerReport {
    PeerReport {
        node: node.into(),
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
    }
}

async fn start(node: &'static str) -> Server {
    start_with(node, peer::Limits::default()).await
}

async fn start_with(node: &'static str, limits: peer::Limits) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let counters = Arc::new(PeerCounters::default());
    let answered = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&answered);
    let questions = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&questions);
    let answer: peer::server::AnswerFn = Arc::new(move |q: &peer::Question| {
        calls.fetch_add(1, Ordering::SeqCst);
        seen.lock()
            .expect("questions")
            .push((q.from.clone(), q.back));
        report(node)
    });
    let key = Arc::new(Key::new(SECRET).expect("key"));
    let task = tokio::spawn(peer::serve_with_limits(
        listener,
        key,
        answer,
        Arc::clone(&counters),
        limits,
    ));
    Server {
        addr,
        counters,
        answered,
        questions,
        task,
    }
}

fn the_peer(node: &str, addr: SocketAddr) -> Peer {
    Peer {
        node: node.into(),
        address: addr,
        zone: "z1".into(),
    }
}

fn key() -> Key {
    Key::new(SECRET).expect("key")
}

// ---- round trip ----

#[tokio::test]
async fn a_signed_question_gets_the_peers_report_and_both_sides_count_it() {
    let server = start("peer-a").await;
    let client_counters = PeerCounters::default();
    let result = peer::ask(
        &the_peer("peer-a", server.addr),
        &key(),
        "asker",
        "z1",
        WAIT,
    )
    .await;
    client_counters.record_asked(&result);
    assert_eq!(result.expect("answer"), report("peer-a"));
    assert_eq!(server.counters.accepted(), 1);
    assert_eq!(server.counters.rejected_total(), 0);
    assert_eq!(server.answered.load(Ordering::SeqCst), 1);
    assert_eq!(client_counters.asked("ok"), 1);
    let mut text = String::new();
    server.counters.render(&mut text);
    assert!(text.contains("nodewarden_peer_requests_total{result=\"accepted\"} 1\n"));
}

#[tokio::test]
async fn telling_peers_back_is_a_signed_question_that_says_so_and_asking_is_not() {
    let (a, b) = (start("peer-a").await, start("peer-b").await);
    let peers = [the_peer("peer-a", a.addr), the_peer("peer-b", b.addr)];
    let told = peer::tell_back(&peers, &key(), "asker", "z1", WAIT).await;
    assert_eq!(told.len(), 2);
    for (p, result) in told {
        assert_eq!(result.expect("answer"), report(&p.node));
    }
    peer::ask(&peers[0], &key(), "asker", "z1", WAIT)
        .await
        .expect("answer");
    let seen = |s: &Server| s.questions.lock().expect("questions").clone();
    assert_eq!(
        seen(&a),
        [("asker".to_string(), true), ("asker".to_string(), false)]
    );
    assert_eq!(seen(&b), [("asker".to_string(), true)]);
    assert_eq!(a.counters.accepted(), 2);
}

#[tokio::test]
async fn the_answer_is_signed_over_our_nonce_as_the_protocol_says() {
    let server = start("peer-a").await;
    let nonce = fresh_nonce();
    let reply = send_raw(server.addr, &valid_question(&nonce)).await;
    assert_eq!(reply.status, 200);
    let ts = reply.header("x-nodewarden-timestamp").expect("timestamp");
    let expected = sign(
        SECRET,
        &format!(
            "nodewarden-v1\nanswer\n{nonce}\n{ts}\n{}",
            sha256(&reply.body)
        ),
    );
    assert_eq!(
        reply.header("x-nodewarden-signature"),
        Some(expected.as_str())
    );
    let body: serde_json::Value = serde_json::from_slice(&reply.body).expect("json");
    assert_eq!(
        body,
        serde_json::json!({"node":"peer-a","zone":"z1","reachable":true,"lastContactAgeMillis":1234})
    );
}

// ---- each refusal: status, counter, and the answer closure never ran ----

async fn assert_refused(server: &Server, bytes: &[u8], status: u16, reason: Rejection) {
    let before = server.counters.rejected(reason);
    let reply = send_raw(server.addr, bytes).await;
    assert_eq!(reply.status, status, "{reason:?}: {reply:?}");
    assert_eq!(
        server.counters.rejected(reason),
        before + 1,
        "{reason:?} counted"
    );
    assert_eq!(
        String::from_utf8_lossy(&reply.body),
        reason.label(),
        "the reason is answered"
    );
    assert!(reply.header("x-nodewarden-signature").is_none());
    assert_eq!(
        server.answered.load(Ordering::SeqCst),
        0,
        "{reason:?}: the answer was never computed"
    );
}

#[tokio::test]
async fn an_unsigned_question_is_refused() {
    let server = start("peer-a").await;
    let bytes = format!(
        "POST /v1/contact HTTP/1.1\r\nhost: peer\r\ncontent-length: {}\r\n\r\n{QUESTION}",
        QUESTION.len()
    );
    assert_refused(&server, bytes.as_bytes(), 401, Rejection::Unsigned).await;
    assert_eq!(server.counters.accepted(), 0);
}

#[tokio::test]
async fn a_question_signed_with_another_key_is_refused() {
    let server = start("peer-a").await;
    let bytes = question(OTHER_SECRET, unix_now(), &fresh_nonce(), QUESTION, QUESTION);
    assert_refused(&server, &bytes, 401, Rejection::BadSignature).await;
}

#[tokio::test]
async fn a_body_altered_after_signing_is_refused() {
    let server = start("peer-a").await;
    let altered = r#"{"from":"attacker","zone":"z1"}"#;
    let bytes = question(SECRET, unix_now(), &fresh_nonce(), QUESTION, altered);
    assert_refused(&server, &bytes, 401, Rejection::BadSignature).await;
}

#[tokio::test]
async fn a_timestamp_31_seconds_off_either_way_is_stale() {
    let server = start("peer-a").await;
    for offset in [-31, 31] {
        let bytes = question(
            SECRET,
            unix_now() + offset,
            &fresh_nonce(),
            QUESTION,
            QUESTION,
        );
        assert_refused(&server, &bytes, 401, Rejection::Stale).await;
    }
    assert_eq!(server.counters.rejected(Rejection::Stale), 2);
    // 25 s off (the boundary less a margin for the seconds this test takes) is still fresh.
    let bytes = question(SECRET, unix_now() - 25, &fresh_nonce(), QUESTION, QUESTION);
    assert_eq!(send_raw(server.addr, &bytes).await.status, 200);
}

#[tokio::test]
async fn the_same_question_twice_is_a_replay() {
    let server = start("peer-a").await;
    let bytes = valid_question(&fresh_nonce());
    assert_eq!(send_raw(server.addr, &bytes).await.status, 200);
    assert_eq!(server.answered.load(Ordering::SeqCst), 1);
    let reply = send_raw(server.addr, &bytes).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.body, b"replayed");
    assert_eq!(server.counters.rejected(Rejection::Replayed), 1);
    assert_eq!(
        server.answered.load(Ordering::SeqCst),
        1,
        "the replay was not answered"
    );
}

#[tokio::test]
async fn a_5_kib_body_is_refused_before_it_is_sent() {
    let server = start("peer-a").await;
    let body = "x".repeat(5 << 10);
    let bytes = question(SECRET, unix_now(), &fresh_nonce(), &body, &body);
    let head_end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head")
        + 4;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    // Only the head: the refusal must come without the server waiting for (reading) the body.
    stream.write_all(&bytes[..head_end]).await.expect("write");
    let reply = read_message(&mut stream, &mut Vec::new())
        .await
        .expect("a reply before the body was sent");
    assert_eq!(reply.status, 413);
    assert_eq!(reply.body, b"too_large");
    assert_eq!(server.counters.rejected(Rejection::TooLarge), 1);
    assert_eq!(server.answered.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_chunked_body_over_4_kib_is_cut_at_the_limit() {
    let server = start("peer-a").await;
    let nonce = fresh_nonce();
    let ts = unix_now();
    let signature = sign(
        SECRET,
        &format!(
            "nodewarden-v1\nPOST\n/v1/contact\n{ts}\n{nonce}\n{}",
            sha256(b"")
        ),
    );
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let head = format!(
        "POST /v1/contact HTTP/1.1\r\nhost: peer\r\ntransfer-encoding: chunked\r\n\
         x-nodewarden-timestamp: {ts}\r\nx-nodewarden-nonce: {nonce}\r\n\
         x-nodewarden-signature: {signature}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    // 5 chunks of 1 KiB, and the stream left open: the server stops at 4 KiB and answers.
    let chunk = format!("400\r\n{}\r\n", "y".repeat(1024));
    for _ in 0..5 {
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let reply = read_message(&mut stream, &mut Vec::new())
        .await
        .expect("a reply");
    assert_eq!(reply.status, 413);
    assert_eq!(server.counters.rejected(Rejection::TooLarge), 1);
    assert_eq!(server.answered.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_wrong_path_or_method_is_a_bad_request() {
    let server = start("peer-a").await;
    let signed = valid_question(&fresh_nonce());
    let wrong_path =
        String::from_utf8(signed.clone())
            .expect("utf8")
            .replacen("/v1/contact", "/v1/other", 1);
    assert_refused(&server, wrong_path.as_bytes(), 404, Rejection::BadRequest).await;
    let wrong_method = String::from_utf8(signed)
        .expect("utf8")
        .replacen("POST", "PUT", 1);
    assert_refused(&server, wrong_method.as_bytes(), 405, Rejection::BadRequest).await;
}

#[tokio::test]
async fn a_signed_body_that_is_not_a_question_is_a_bad_request() {
    let server = start("peer-a").await;
    let bytes = question(SECRET, unix_now(), &fresh_nonce(), "[1,2]", "[1,2]");
    assert_refused(&server, &bytes, 400, Rejection::BadRequest).await;
}

#[tokio::test]
async fn a_connection_idle_for_5_seconds_is_closed() {
    let server = start("peer-a").await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(8), stream.read(&mut buf)).await;
    let elapsed = started.elapsed();
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "closed, not left open: {read:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(4500) && elapsed < Duration::from_millis(6500),
        "{elapsed:?}"
    );
}

/// A connection from `source` (any 127/8 address is this host's loopback).
async fn connect_from(source: &str, addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("address"))
        .expect("bind");
    socket.connect(addr).await.expect("connect")
}

#[tokio::test]
async fn past_8_connections_from_one_address_a_new_one_is_closed_while_others_are_served() {
    let server = start("peer-a").await;
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(connect_from("127.0.0.3", server.addr).await);
    }
    let mut ninth = connect_from("127.0.0.3", server.addr).await;
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(2), ninth.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    assert_eq!(server.counters.rejected(Rejection::RateLimited), 1);
    // Another address (a real peer) is answered meanwhile.
    let reply = send_raw(server.addr, &valid_question(&fresh_nonce())).await;
    assert_eq!(reply.status, 200);
    drop(idle);
}

#[tokio::test]
async fn past_64_connections_a_new_one_is_closed_at_once() {
    let server = start("peer-a").await;
    let mut idle = Vec::new();
    // 8 addresses × 8 connections (the most one address may hold).
    for i in 0..64 {
        idle.push(connect_from(&format!("127.0.1.{}", 1 + i / 8), server.addr).await);
    }
    // The 65th: closed without a word, long before the idle timeout.
    let mut extra = TcpStream::connect(server.addr).await.expect("connect");
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(2), extra.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    assert_eq!(server.counters.rejected(Rejection::RateLimited), 1);
    // Once they go, questions are answered again (bounded retries: the server notices the
    // closed connections as it accepts the next one).
    drop(idle);
    let deadline = Instant::now() + WAIT;
    loop {
        let ok = match TcpStream::connect(server.addr).await {
            Ok(mut s) => {
                let _ = s.write_all(&valid_question(&fresh_nonce())).await;
                read_message(&mut s, &mut Vec::new())
                    .await
                    .is_some_and(|m| m.status == 200)
            }
            Err(_) => false,
        };
        if ok {
            break;
        }
        assert!(Instant::now() < deadline, "never answered again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn aborting_the_server_closes_its_open_connections() {
    let server = start("peer-a").await;
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    // Answered once, so the connection is certainly being served (kept alive, idle).
    stream
        .write_all(&valid_question(&fresh_nonce()))
        .await
        .expect("write");
    let mut buf = Vec::new();
    let reply = read_message(&mut stream, &mut buf).await.expect("a reply");
    assert_eq!(reply.status, 200);
    server.task.abort();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(2), stream.read(&mut byte)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "closed well before the 5 s idle timeout: {read:?}"
    );
}

// ---- a flood ----

/// Keeps the peer server's log records as (level, reason, peer). The logger is global to the
/// test process, so the flood comes from its own source address and only records naming it are
/// counted, whatever other tests run alongside.
#[derive(Default)]
struct CountingLogger {
    records: Mutex<Vec<(log::Level, String, String)>>,
}

impl log::Log for CountingLogger {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if record.target().starts_with("nodewarden::peer") && record.level() <= log::Level::Info {
            let field = |name: &str| {
                record
                    .key_values()
                    .get(log::kv::Key::from_str(name))
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            };
            if let Ok(mut r) = self.records.lock() {
                r.push((record.level(), field("reason"), field("peer")));
            }
        }
    }
    fn flush(&self) {}
}

fn logger() -> &'static CountingLogger {
    static LOGGER: OnceLock<&'static CountingLogger> = OnceLock::new();
    LOGGER.get_or_init(|| {
        let logger: &'static CountingLogger = Box::leak(Box::default());
        let _ = log::set_logger(logger);
        log::set_max_level(log::LevelFilter::Trace);
        logger
    })
}

#[tokio::test]
async fn a_flood_is_mostly_refused_logs_little_and_leaves_the_server_answering() {
    let logger = logger();
    let server = start("peer-a").await;
    const FLOODER: &str = "127.0.0.2";
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{FLOODER}:0").parse().expect("address"))
        .expect("bind");
    let mut stream = socket.connect(server.addr).await.expect("connect");
    let mut buf = Vec::new();
    let (mut ok, mut limited) = (0u32, 0u32);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(60);
    for _ in 0..2000 {
        assert!(Instant::now() < deadline, "the flood took over a minute");
        stream
            .write_all(&valid_question(&fresh_nonce()))
            .await
            .expect("write");
        let reply = read_message(&mut stream, &mut buf)
            .await
            .expect("every question answered");
        match reply.status {
            200 => ok += 1,
            429 => limited += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    // The burst of 100 plus 50/s for the time the flood took (and one for rounding).
    let allowed = 100.0 + 50.0 * elapsed + 1.0;
    assert!(f64::from(ok) <= allowed, "{ok} accepted in {elapsed:.2} s");
    assert!(ok >= 100, "the burst is honoured: {ok}");
    assert!(
        limited > 1000,
        "most refused: {limited} of 2000 in {elapsed:.2} s"
    );
    assert_eq!(
        server.counters.rejected(Rejection::RateLimited),
        u64::from(limited)
    );
    assert_eq!(server.counters.accepted(), u64::from(ok));
    assert_eq!(server.answered.load(Ordering::SeqCst), ok as usize);

    // The bucket is the flooder's alone: a real peer (another address) is answered at once, so
    // a flood cannot make the peers look silent.
    let reply = send_raw(server.addr, &valid_question(&fresh_nonce())).await;
    assert_eq!(reply.status, 200);
    // And a token comes back to the flooder within 1/50 s.
    tokio::time::sleep(Duration::from_millis(100)).await;
    stream
        .write_all(&valid_question(&fresh_nonce()))
        .await
        .expect("write");
    let reply = read_message(&mut stream, &mut buf).await.expect("answered");
    assert_eq!(reply.status, 200);

    let records = logger.records.lock().expect("records").clone();
    let refusals: Vec<_> = records.iter().filter(|(_, _, p)| p == FLOODER).collect();
    assert_eq!(
        refusals.len(),
        1,
        "one record for {limited} refusals: {refusals:?}"
    );
    assert_eq!(refusals[0].1, "rate_limited");
    assert_eq!(refusals[0].0, log::Level::Warn);
}

// ---- the client against fake servers ----

#[derive(Clone, Copy, Debug)]
enum Fake {
    /// Answers signed with `secret`, as `node`, `skew` seconds off our clock.
    Answer {
        secret: &'static [u8],
        node: &'static str,
        skew: i64,
    },
    /// Answers the first question properly, and every later one with that first answer.
    Replay,
    /// An answer without signature headers.
    Unsigned,
    /// 500.
    Status500,
    /// A 10 MB answer: with its length declared, or without (read until the end of stream).
    Huge { declared: bool },
    /// Reads the question and never answers.
    Hang,
}

fn answer_bytes(secret: &[u8], nonce: &str, timestamp: i64, node: &str) -> Vec<u8> {
    let body =
        format!(r#"{{"node":"{node}","zone":"z1","reachable":false,"lastContactAgeMillis":250}}"#);
    let signature = sign(
        secret,
        &format!(
            "nodewarden-v1\nanswer\n{nonce}\n{timestamp}\n{}",
            sha256(body.as_bytes())
        ),
    );
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         x-nodewarden-timestamp: {timestamp}\r\nx-nodewarden-signature: {signature}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A fake peer; returns its address. Its task ends with the test's runtime.
async fn fake(behaviour: Fake) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut recorded: Option<Vec<u8>> = None;
        // Bounded: no test asks a fake more than a few times.
        for _ in 0..16 {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let Some(request) = read_message(&mut stream, &mut Vec::new()).await else {
                continue;
            };
            let nonce = request
                .header("x-nodewarden-nonce")
                .unwrap_or("")
                .to_string();
            let reply = match behaviour {
                Fake::Answer { secret, node, skew } => {
                    answer_bytes(secret, &nonce, unix_now() + skew, node)
                }
                Fake::Replay => recorded
                    .get_or_insert_with(|| answer_bytes(SECRET, &nonce, unix_now(), "peer-a"))
                    .clone(),
                Fake::Unsigned => {
                    let body = r#"{"node":"peer-a","zone":"z1","reachable":true,"lastContactAgeMillis":1}"#;
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .into_bytes()
                }
                Fake::Status500 => {
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n".to_vec()
                }
                Fake::Huge { declared } => {
                    let ts = unix_now();
                    let head = if declared {
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: 10000000\r\nx-nodewarden-timestamp: {ts}\r\nx-nodewarden-signature: {}\r\n\r\n",
                            "0".repeat(64)
                        )
                    } else {
                        format!(
                            "HTTP/1.1 200 OK\r\nconnection: close\r\nx-nodewarden-timestamp: {ts}\r\nx-nodewarden-signature: {}\r\n\r\n",
                            "0".repeat(64)
                        )
                    };
                    let mut bytes = head.into_bytes();
                    bytes.extend(std::iter::repeat_n(b'{', 10_000_000));
                    bytes
                }
                Fake::Hang => {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    continue;
                }
            };
            // The client may hang up first (a huge answer): not an error here.
            let _ = stream.write_all(&reply).await;
        }
    });
    addr
}

async fn ask_fake(behaviour: Fake, node: &str) -> Result<PeerReport, AskError> {
    let addr = fake(behaviour).await;
    peer::ask(&the_peer(node, addr), &key(), "asker", "z1", WAIT).await
}

#[tokio::test]
async fn the_client_accepts_a_good_fake_and_refuses_every_bad_one() {
    let good = Fake::Answer {
        secret: SECRET,
        node: "peer-a",
        skew: 0,
    };
    let report = ask_fake(good, "peer-a").await.expect("a good answer");
    assert_eq!(
        report,
        PeerReport {
            node: "peer-a".into(),
            zone: "z1".into(),
            excluded: false,
            reachable: false,
            last_contact_age: Some(Duration::from_millis(250)),
            kubelet_renewed: None,
            node_read: None,
            zone_recorded: None,
            pods: None,
            leader: Default::default(),
            kubelet_age: None,
        }
    );
    let cases: [(Fake, &str); 7] = [
        (
            Fake::Answer {
                secret: OTHER_SECRET,
                node: "peer-a",
                skew: 0,
            },
            "bad_signature",
        ),
        (
            Fake::Answer {
                secret: SECRET,
                node: "someone-else",
                skew: 0,
            },
            "wrong_peer",
        ),
        (
            Fake::Answer {
                secret: SECRET,
                node: "peer-a",
                skew: -31,
            },
            "stale",
        ),
        (
            Fake::Answer {
                secret: SECRET,
                node: "peer-a",
                skew: 31,
            },
            "stale",
        ),
        (Fake::Unsigned, "unsigned"),
        (Fake::Status500, "http"),
        (Fake::Huge { declared: true }, "malformed"),
    ];
    let counters = PeerCounters::default();
    for (behaviour, reason) in cases {
        let result = ask_fake(behaviour, "peer-a").await;
        counters.record_asked(&result);
        let e = result.expect_err(&format!("{behaviour:?} refused"));
        assert_eq!(e.reason(), reason, "{behaviour:?}: {e}");
    }
    assert_eq!(counters.asked("stale"), 2);
    assert_eq!(counters.asked("ok"), 0);
}

#[tokio::test]
async fn an_answer_recorded_from_an_earlier_question_is_refused() {
    let addr = fake(Fake::Replay).await;
    let peer = the_peer("peer-a", addr);
    peer::ask(&peer, &key(), "asker", "z1", WAIT)
        .await
        .expect("the first answer is genuine");
    let e = peer::ask(&peer, &key(), "asker", "z1", WAIT)
        .await
        .expect_err("the same answer again");
    assert!(matches!(e, AskError::BadSignature), "{e}");
}

#[tokio::test]
async fn a_10_mb_answer_is_not_read_whole() {
    for declared in [true, false] {
        let started = Instant::now();
        let e = ask_fake(Fake::Huge { declared }, "peer-a")
            .await
            .expect_err("too large");
        assert!(
            matches!(e, AskError::Malformed(_)),
            "declared {declared}: {e}"
        );
        assert!(e.to_string().contains("4 KiB"), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_peer_that_never_answers_times_out_on_time() {
    let addr = fake(Fake::Hang).await;
    let timeout = Duration::from_millis(500);
    let started = Instant::now();
    let e = peer::ask(&the_peer("peer-a", addr), &key(), "asker", "z1", timeout)
        .await
        .expect_err("no answer");
    let elapsed = started.elapsed();
    assert!(matches!(e, AskError::Timeout(_)), "{e}");
    assert!(
        elapsed >= timeout && elapsed < timeout + Duration::from_millis(200),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let e = peer::ask(&the_peer("peer-a", addr), &key(), "asker", "z1", WAIT)
        .await
        .expect_err("nobody listening");
    assert_eq!(e.reason(), "connect", "{e}");
}

#[tokio::test]
async fn asking_five_peers_of_which_two_hang_takes_one_timeout() {
    let mut servers = Vec::new();
    let mut peers = Vec::new();
    for node in ["n1", "n2", "n3"] {
        let server = start(node).await;
        peers.push(the_peer(node, server.addr));
        servers.push(server);
    }
    for node in ["h1", "h2"] {
        peers.push(the_peer(node, fake(Fake::Hang).await));
    }
    let timeout = Duration::from_millis(500);
    let started = Instant::now();
    let results = peer::ask_all(&peers, &key(), "asker", "z1", timeout).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed < timeout + Duration::from_millis(300),
        "{elapsed:?}"
    );
    assert_eq!(results.len(), 5);
    for (peer, result) in &results {
        match peer.node.as_str() {
            "h1" | "h2" => assert!(matches!(result, Err(AskError::Timeout(_))), "{result:?}"),
            node => assert_eq!(result.as_ref().expect("answer"), &report(node)),
        }
    }
}

// ---- reading the asker's kubelet Lease ----

/// A peer endpoint on loopback that answers as `peer-a`, "reachable" or not, and reads for the
/// askers with `reads`, each read bounded by `bound`.
async fn serve_reads(
    reachable: bool,
    reads: peer::Reads,
    bound: Duration,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let answer: peer::server::AnswerFn = Arc::new(move |_| PeerReport {
        reachable,
        ..report("peer-a")
    });
    let limits = peer::Limits {
        lease_read: bound,
        node_read: bound,
        pods_read: bound,
        zone_read: bound,
        ..peer::Limits::default()
    };
    let task = tokio::spawn(peer::serve_reading(
        listener,
        Arc::new(key()),
        answer,
        reads,
        Arc::new(PeerCounters::default()),
        limits,
    ));
    (addr, task)
}

/// A question with `lease` has a node that reaches the API server read the asker's kubelet Lease
/// before it answers (`peer::serve_reading`), within `Limits::lease_read`; a question without it,
/// or a node that does not reach the API server, reads nothing.
#[tokio::test]
async fn a_peer_reads_the_askers_kubelet_lease_only_when_asked_and_reaching() {
    let renewed = UNIX_EPOCH + Duration::from_micros(1_764_806_400_654_321);
    for reachable in [true, false] {
        let reads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reads);
        let lease: peer::LeaseFn = Arc::new(move |node: String| {
            seen.lock().expect("reads").push(node.clone());
            Box::pin(async move {
                if node == "slow" {
                    // A read the API server never answers: the bound ends it.
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Some(renewed)
            })
        });
        let with = peer::Reads {
            lease: Some(lease),
            taint: None,
            pods: None,
            zone: None,
        };
        let (addr, task) = serve_reads(reachable, with, Duration::from_millis(200)).await;
        let asked = &[the_peer("peer-a", addr)];
        let ask = |from: &'static str, read: bool| async move {
            let answers =
                peer::ask_all_reading(asked, (&[read], &[]), (&[], &[]), &key(), from, "z1", WAIT)
                    .await;
            let (_, result) = answers.into_iter().next().expect("one answer");
            result.expect("answered").kubelet_renewed
        };
        let expected = reachable.then_some(renewed);
        assert_eq!(ask("asker", true).await, expected, "reachable: {reachable}");
        assert_eq!(ask("asker", false).await, None);
        let started = Instant::now();
        assert_eq!(ask("slow", true).await, None);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "{took:?}");
        let expected_reads: &[&str] = if reachable { &["asker", "slow"] } else { &[] };
        assert_eq!(*reads.lock().expect("reads"), expected_reads);
        if reachable {
            assert!(took >= Duration::from_millis(200), "{took:?}");
        }
        task.abort();
    }
}

// ---- reading the asker's Node ----

/// What the asker's Node reads as in the tests below: Ready written Unknown at a time with
/// microseconds, and, when `tainted`, the unreachable taint added 5 s later.
fn node_read(tainted: bool) -> nodewarden::core::quorum::NodeRead {
    let unknown = UNIX_EPOCH + Duration::from_micros(1_800_000_000_123_456);
    nodewarden::core::quorum::NodeRead {
        tainted,
        taint_added: tainted.then(|| unknown + Duration::from_secs(5)),
        unknown_since: Some(unknown),
        ..Default::default()
    }
}

/// Every question of a round asks the node to read the asker's Node (`Question::taint`): a node
/// that reaches the API server reads it before answering and says whether it carries the
/// unreachable taint, when the taint was added and when Ready was written Unknown (to the
/// microsecond); one that does not, or a read that fails, adds nothing. The Lease and the
/// Node are read side by side: both slow reads end within one `Limits::lease_read`, not two. A
/// plain `ask` (the nudge's) asks for no read.
#[tokio::test]
async fn a_peer_reads_the_askers_node_when_reaching_and_both_reads_share_one_bound() {
    for reachable in [true, false] {
        let reads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reads);
        let slow = |node: &str| node == "slow";
        let taint: peer::TaintFn = Arc::new(move |node: String| {
            seen.lock().expect("reads").push(node.clone());
            Box::pin(async move {
                if slow(&node) {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                match node.as_str() {
                    "tainted" => Some(node_read(true)),
                    "gone" => None,
                    _ => Some(node_read(false)),
                }
            })
        });
        let lease: peer::LeaseFn = Arc::new(move |node: String| {
            Box::pin(async move {
                if slow(&node) {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Some(UNIX_EPOCH)
            })
        });
        let with = peer::Reads {
            lease: Some(lease),
            taint: Some(taint),
            pods: None,
            zone: None,
        };
        let (addr, task) = serve_reads(reachable, with, Duration::from_millis(300)).await;
        // (`serve_reads` bounds the Node read by the same 300 ms: the two still share it.)
        let asked = &[the_peer("peer-a", addr)];
        let ask = |from: &'static str| async move {
            let answers =
                peer::ask_all_reading(asked, (&[true], &[]), (&[], &[]), &key(), from, "z1", WAIT)
                    .await;
            let (_, result) = answers.into_iter().next().expect("one answer");
            result.expect("answered")
        };
        let read = |t: bool| reachable.then(|| node_read(t));
        assert_eq!(ask("untainted").await.node_read, read(false), "{reachable}");
        assert_eq!(ask("tainted").await.node_read, read(true), "{reachable}");
        assert_eq!(ask("gone").await.node_read, None);
        let started = Instant::now();
        let both = ask("slow").await;
        let took = started.elapsed();
        assert_eq!((both.node_read, both.kubelet_renewed), (None, None));
        assert!(
            took < Duration::from_millis(550),
            "two bounds, one after the other: {took:?}"
        );
        let plain = peer::ask(&asked[0], &key(), "untainted", "z1", WAIT)
            .await
            .expect("answered");
        assert_eq!(plain.node_read, None);
        let expected: &[&str] = if reachable {
            &["untainted", "tainted", "gone", "slow"]
        } else {
            &[]
        };
        assert_eq!(*reads.lock().expect("reads"), expected);
        if reachable {
            assert!(took >= Duration::from_millis(300), "{took:?}");
        }
        task.abort();
    }
}

// ---- listing the asker's pods ----

/// A pod as the fence plans it, named by its UID.
fn fence_pod(uid: &str, name_len: usize) -> nodewarden::core::fence_plan::FencePod {
    nodewarden::core::fence_plan::FencePod {
        uid: uid.into(),
        namespace: "default".into(),
        name: "p".repeat(name_len),
        tolerations: Vec::new(),
        termination_grace_seconds: 30,
        owner_kind: Some("ReplicaSet".into()),
        static_or_mirror: false,
        qos: nodewarden::core::qos::QosClass::BestEffort,
        opted_out: false,
        terminal: false,
        created: None,
    }
}

/// A question that asks about pods (`Question::pods`) has a node that reaches the API server
/// list the asker's pods and answer with those asked about; one that does not reach it, a
/// question that asks about none, and a list that fails or outlasts its bound add nothing
/// (`None`: not listed), and an empty list is an answer of its own (listed, none of them). Pods
/// that would take the answer past its limit are all left out, never a part of them.
#[tokio::test]
async fn a_peer_lists_the_askers_pods_asked_about_only_when_reaching() {
    for reachable in [true, false] {
        let reads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reads);
        let pods: peer::PodsFn = Arc::new(move |node: String, uids: Vec<String>| {
            seen.lock()
                .expect("reads")
                .push((node.clone(), uids.clone()));
            Box::pin(async move {
                match node.as_str() {
                    "slow" => {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        None
                    }
                    "failing" => None,
                    // Names long enough that 32 pods take the answer past 64 KiB.
                    "huge" => Some(uids.iter().map(|u| fence_pod(u, 2_500)).collect()),
                    // The API holds the first pod asked about, not the others.
                    _ => Some(uids.iter().take(1).map(|u| fence_pod(u, 5)).collect()),
                }
            })
        });
        let with = peer::Reads {
            lease: None,
            taint: None,
            pods: Some(pods),
            zone: None,
        };
        let (addr, task) = serve_reads(reachable, with, Duration::from_millis(200)).await;
        let asked = &[the_peer("peer-a", addr)];
        let ask = |from: &'static str, uids: Vec<String>| async move {
            let answers = peer::ask_all_reading(
                asked,
                (&[false], &[]),
                (&uids, &[true]),
                &key(),
                from,
                "z1",
                WAIT,
            )
            .await;
            let (_, result) = answers.into_iter().next().expect("one answer");
            result.expect("answered").pods
        };
        let uids: Vec<String> = (0..32)
            .map(|i| format!("{i:08}-0000-4000-8000-000000000000"))
            .collect();
        let listed = ask("asker", uids[..2].to_vec()).await;
        let first = vec![fence_pod(&uids[0], 5)];
        assert_eq!(listed, reachable.then_some(first), "reachable: {reachable}");
        assert_eq!(ask("asker", Vec::new()).await, None, "asked about none");
        // A peer not flagged as a lister is not asked about the pods.
        let unflagged = peer::ask_all_reading(
            asked,
            (&[false], &[]),
            (&uids[..1], &[false]),
            &key(),
            "asker",
            "z1",
            WAIT,
        )
        .await;
        let (_, result) = unflagged.into_iter().next().expect("one answer");
        assert_eq!(result.expect("answered").pods, None);
        assert_eq!(ask("failing", uids[..1].to_vec()).await, None);
        assert_eq!(
            ask("huge", uids.clone()).await,
            None,
            "over the answer's limit"
        );
        let started = Instant::now();
        assert_eq!(ask("slow", uids[..1].to_vec()).await, None);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "{took:?}");
        let made = reads.lock().expect("reads").clone();
        if reachable {
            assert!(took >= Duration::from_millis(200), "{took:?}");
            let nodes: Vec<&str> = made.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(nodes, ["asker", "failing", "huge", "slow"]);
            assert_eq!(made[0].1, uids[..2]);
        } else {
            assert!(made.is_empty(), "{made:?}");
        }
        task.abort();
    }
}

/// At most `Limits::pod_lists_at_once` (2) lists of an asker's pods run at once: three questions
/// at once that ask about pods make two lists, and the third is answered without one (not
/// listed, so the asker settles nothing and asks again next round).
#[tokio::test]
async fn a_peer_makes_at_most_two_lists_of_pods_at_once() {
    let lists = Arc::new(Mutex::new(0usize));
    let made = Arc::clone(&lists);
    let pods: peer::PodsFn = Arc::new(move |_node: String, uids: Vec<String>| {
        *made.lock().expect("lists") += 1;
        Box::pin(async move {
            // Long enough that the three questions overlap, within the bound.
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some(uids.iter().map(|u| fence_pod(u, 5)).collect())
        })
    });
    let with = peer::Reads {
        lease: None,
        taint: None,
        pods: Some(pods),
        zone: None,
    };
    let (addr, task) = serve_reads(true, with, Duration::from_millis(400)).await;
    let asked: Vec<_> = (0..3).map(|_| the_peer("peer-a", addr)).collect();
    let uids = ["00000000-0000-4000-8000-000000000000".to_string()];
    let answers = peer::ask_all_reading(
        &asked,
        (&[false; 3], &[]),
        (&uids, &[true; 3]),
        &key(),
        "asker",
        "z1",
        WAIT,
    )
    .await;
    let listed = answers
        .into_iter()
        .filter(|(_, r)| r.as_ref().expect("answered").pods.is_some())
        .count();
    assert_eq!((listed, *lists.lock().expect("lists")), (2, 2));
    task.abort();
}

/// A question with `zoneRecord` has a node that reaches the API server read the asker's zone as
/// recorded (`peer::ZoneFn`, given the asker's name and zone key) before it answers, within
/// `Limits::zone_read`; a question without it, or a node that does not reach the API server,
/// reads nothing.
#[tokio::test]
async fn a_peer_reads_the_askers_zone_only_when_asked_and_reaching() {
    use nodewarden::core::quorum::ZoneRecord;
    let recorded = ZoneRecord {
        not_ready: 3,
        size: 5,
        ..ZoneRecord::default()
    };
    for reachable in [true, false] {
        let reads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reads);
        let zone: peer::ZoneFn = Arc::new(move |node: String, key: String| {
            seen.lock().expect("reads").push((node.clone(), key));
            Box::pin(async move {
                if node == "slow" {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Some(recorded)
            })
        });
        let with = peer::Reads {
            lease: None,
            taint: None,
            pods: None,
            zone: Some(zone),
        };
        let (addr, task) = serve_reads(reachable, with, Duration::from_millis(200)).await;
        let asked = &[the_peer("peer-a", addr)];
        let ask = |from: &'static str, read: bool| async move {
            let answers =
                peer::ask_all_reading(asked, (&[], &[read]), (&[], &[]), &key(), from, "z1", WAIT)
                    .await;
            let (_, result) = answers.into_iter().next().expect("one answer");
            result.expect("answered").zone_recorded
        };
        assert_eq!(
            ask("asker", true).await,
            reachable.then_some(recorded),
            "reachable: {reachable}"
        );
        assert_eq!(ask("asker", false).await, None);
        let started = Instant::now();
        assert_eq!(ask("slow", true).await, None);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "{took:?}");
        let made = reads.lock().expect("reads").clone();
        if reachable {
            assert!(took >= Duration::from_millis(200), "{took:?}");
            let expected =
                [("asker", "z1"), ("slow", "z1")].map(|(n, z)| (n.to_string(), z.to_string()));
            assert_eq!(made, expected);
        } else {
            assert!(made.is_empty(), "{made:?}");
        }
        task.abort();
    }
}
