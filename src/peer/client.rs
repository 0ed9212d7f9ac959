//! Asking peers: one signed question per peer over a fresh TCP connection (no pool: a cut-off
//! node asks rarely, and a pooled connection could be a dead one), the whole exchange bounded by
//! one timeout, the answer bounded in size and checked — signature, binding to our nonce,
//! freshness, and that the right node answered — before it becomes a [`PeerReport`].

use std::io;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::core::quorum::{Peer, PeerReport};
use crate::peer::auth::{self, Key};
use crate::peer::{Answer, MAX_ANSWER_BODY, Question};

/// Why a peer's answer could not be used. Each has a metric label ([`AskError::reason`]).
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("connection failed: {0}")]
    Connect(#[source] io::Error),
    #[error("answered HTTP {0}")]
    Http(StatusCode),
    #[error("answer not signed (signature or timestamp header missing or malformed)")]
    Unsigned,
    #[error(
        "answer signature does not match (another key, an altered answer, or one recorded from another question)"
    )]
    BadSignature,
    #[error("answer timestamp {timestamp} is more than 30 s from our clock ({now}, unix seconds)")]
    Stale { timestamp: u64, now: u64 },
    #[error("answered as node {got:?}, expected {expected:?}")]
    WrongPeer { expected: String, got: String },
    #[error("malformed answer: {0}")]
    Malformed(String),
}

impl AskError {
    /// The metric label of the outcome (`nodewarden_peer_answers_total{result=…}`).
    pub fn reason(&self) -> &'static str {
        match self {
            AskError::Timeout(_) => "timeout",
            AskError::Connect(_) => "connect",
            AskError::Http(_) => "http",
            AskError::Unsigned => "unsigned",
            AskError::BadSignature => "bad_signature",
            AskError::Stale { .. } => "stale",
            AskError::WrongPeer { .. } => "wrong_peer",
            AskError::Malformed(_) => "malformed",
        }
    }
}

/// Asks `peer` whether it reaches the API server, as node `from` of zone `zone`. The whole
/// exchange — connect, question, answer — ends within `timeout`.
pub async fn ask(
    peer: &Peer,
    key: &Key,
    from: &str,
    zone: &str,
    timeout: Duration,
) -> Result<PeerReport, AskError> {
    within(timeout, exchange(peer, key, &question(from, zone, false))).await
}

/// The question node `from` of zone `zone` asks, saying it is back or not.
fn question(from: &str, zone: &str, back: bool) -> Question {
    Question {
        from: from.to_string(),
        zone: zone.to_string(),
        back,
        lease: false,
        taint: false,
        pods: Vec::new(),
        zone_record: false,
    }
}

/// `exchange`, or a timeout once `timeout` has passed.
async fn within(
    timeout: Duration,
    exchange: impl Future<Output = Result<PeerReport, AskError>>,
) -> Result<PeerReport, AskError> {
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(AskError::Timeout(timeout)),
    }
}

/// Asks every peer at once; returns when the last one answered or timed out, so after about
/// one `timeout` whatever the number of peers. No peer is asked to read a Lease
/// ([`ask_all_reading`] with no flag set).
pub async fn ask_all(
    peers: &[Peer],
    key: &Key,
    from: &str,
    zone: &str,
    timeout: Duration,
) -> Vec<(Peer, Result<PeerReport, AskError>)> {
    ask_all_reading(peers, (&[], &[]), (&[], &[]), key, from, zone, timeout).await
}

/// [`ask_all`], asking each peer whose flag in `lease` is set to read this node's kubelet Lease
/// for it (`Question::lease`, `core::quorum::lease_readers`); a peer without a flag is not asked
/// to. Every peer is asked to read this node's Node (`Question::taint`), and each whose flag in
/// `listers` is set to list the pods of `pods` bound to this node (`Question::pods`, none when
/// empty), and each whose flag in `zoned` is set to read this node's zone as recorded
/// (`Question::zone_record`): only one that reaches the API server does.
pub async fn ask_all_reading(
    peers: &[Peer],
    (lease, zoned): (&[bool], &[bool]),
    (pods, listers): (&[String], &[bool]),
    key: &Key,
    from: &str,
    zone: &str,
    timeout: Duration,
) -> Vec<(Peer, Result<PeerReport, AskError>)> {
    let flag = |flags: &[bool], i: usize| flags.get(i).copied().unwrap_or(false);
    let questions: Vec<Question> = (0..peers.len())
        .map(|i| Question {
            lease: flag(lease, i),
            zone_record: flag(zoned, i),
            taint: true,
            pods: if flag(listers, i) {
                pods.to_vec()
            } else {
                Vec::new()
            },
            ..question(from, zone, false)
        })
        .collect();
    exchange_all(peers, key, |i| &questions[i], timeout).await
}

/// Tells every peer at once that node `from` reaches the API server again (a question with
/// `back`, `agent::quorum::Nudges`); returns when the last one answered or timed out. The answers
/// are checked as [`ask`]'s are.
pub async fn tell_back(
    peers: &[Peer],
    key: &Key,
    from: &str,
    zone: &str,
    timeout: Duration,
) -> Vec<(Peer, Result<PeerReport, AskError>)> {
    let q = question(from, zone, true);
    exchange_all(peers, key, |_| &q, timeout).await
}

/// `question` to every peer at once, each exchange bounded by `timeout`.
async fn exchange_all<'q>(
    peers: &[Peer],
    key: &Key,
    question: impl Fn(usize) -> &'q Question,
    timeout: Duration,
) -> Vec<(Peer, Result<PeerReport, AskError>)> {
    futures_util::future::join_all(peers.iter().enumerate().map(|(i, peer)| {
        let question = question(i);
        async move {
            (
                peer.clone(),
                within(timeout, exchange(peer, key, question)).await,
            )
        }
    }))
    .await
}

/// Aborts the connection task when the exchange ends, early (timeout) or not.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn exchange(peer: &Peer, key: &Key, question: &Question) -> Result<PeerReport, AskError> {
    let body =
        serde_json::to_vec(question).map_err(|e| AskError::Malformed(format!("question: {e}")))?;
    let nonce = auth::nonce().map_err(|e| AskError::Connect(io::Error::other(e)))?;
    let timestamp = auth::unix_now(SystemTime::now());
    let signature = key.sign(auth::question_message(timestamp, &nonce, &body).as_bytes());
    let request = Request::builder()
        .method(Method::POST)
        .uri(auth::PATH)
        .header(HOST, peer.address.to_string())
        .header(CONTENT_TYPE, "application/json")
        .header(auth::TIMESTAMP_HEADER, timestamp)
        .header(auth::NONCE_HEADER, nonce.as_str())
        .header(auth::SIGNATURE_HEADER, signature)
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| AskError::Malformed(format!("question: {e}")))?;

    let stream = TcpStream::connect(peer.address)
        .await
        .map_err(AskError::Connect)?;
    let _ = stream.set_nodelay(true);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| AskError::Connect(io::Error::other(e)))?;
    let _connection = AbortOnDrop(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| AskError::Connect(io::Error::other(e)))?;
    if response.status() != StatusCode::OK {
        return Err(AskError::Http(response.status()));
    }
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok());
    let (Some(answered_at), Some(answer_signature)) = (
        header(auth::TIMESTAMP_HEADER).and_then(auth::parse_timestamp),
        header(auth::SIGNATURE_HEADER).map(str::to_string),
    ) else {
        return Err(AskError::Unsigned);
    };
    // A declared length over the limit is refused before reading; an undeclared one is cut at
    // the limit.
    if let Some(Ok(n)) = header(CONTENT_LENGTH.as_str()).map(str::parse::<u64>)
        && n > MAX_ANSWER_BODY as u64
    {
        return Err(AskError::Malformed(format!(
            "answer of {n} bytes, over 4 KiB"
        )));
    }
    let body = match Limited::new(response.into_body(), MAX_ANSWER_BODY)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return Err(AskError::Malformed("answer over 4 KiB".into()));
        }
        Err(e) => return Err(AskError::Connect(io::Error::other(e))),
    };
    if !key.verify(
        auth::answer_message(&nonce, answered_at, &body).as_bytes(),
        &answer_signature,
    ) {
        return Err(AskError::BadSignature);
    }
    let now = auth::unix_now(SystemTime::now());
    if !auth::is_fresh(answered_at, now) {
        return Err(AskError::Stale {
            timestamp: answered_at,
            now,
        });
    }
    let answer: Answer =
        serde_json::from_slice(&body).map_err(|e| AskError::Malformed(e.to_string()))?;
    if answer.node != peer.node {
        return Err(AskError::WrongPeer {
            expected: peer.node.clone(),
            got: answer.node,
        });
    }
    PeerReport::try_from(answer).map_err(AskError::Malformed)
}
