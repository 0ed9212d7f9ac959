//! Transports: an in-process `tower::Service` for `kube::Client` (no sockets, so paused tokio
//! clocks work) and an HTTP/1 server (hyper) on loopback or any address, both calling the same
//! handler. Every request is recorded with its answer.

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::ApiServer;
use super::handler::{self, Reply};

/// Response body type of both transports.
pub type ResBody = UnsyncBoxBody<Bytes, Infallible>;

fn full(status: u16, headers: &[(&'static str, String)], body: Vec<u8>) -> http::Response<ResBody> {
    let mut b = http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header("Audit-Id", "00000000-0000-0000-0000-000000000000");
    for (k, v) in headers {
        b = b.header(*k, v.as_str());
    }
    b.body(Full::new(Bytes::from(body)).boxed_unsync())
        .expect("a valid response")
}

impl ApiServer {
    /// Serve one request: record it, apply faults, handle, record the answer.
    pub(crate) async fn serve_request(
        &self,
        parts: http::request::Parts,
        body: Bytes,
    ) -> http::Response<ResBody> {
        let req = handler::parse_request(&parts.method, &parts.uri, &parts.headers, body);
        let authorization = parts
            .headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let authenticated = self.with_state(|s| match &s.bearer {
            None => true,
            Some(t) => authorization.as_deref() == Some(format!("Bearer {t}").as_str()),
        });
        let seq = self.record_arrival(&req, authorization);
        if !authenticated {
            // Authentication runs before everything else, faults included.
            let e = super::errors::ApiError::unauthorized();
            let bytes = serde_json::to_vec(&e.to_status()).unwrap_or_default();
            self.record_answer(seq, 401, Some(bytes.len()));
            return full(401, &[], bytes);
        }
        let plan = self.with_state(|s| {
            s.faults
                .plan(&req.method, &req.path, req.query.flag("watch"))
        });
        if plan.black_hole {
            // Accept and never answer: the future never completes (HTTP never writes).
            std::future::pending::<()>().await;
        }
        if let Some(d) = plan.delay {
            tokio::time::sleep(d).await;
        }
        let reply = match plan.fail {
            Some(f) => handler::fault_reply(f, &req.path),
            None => handler::handle(self, &req).await,
        };
        match reply {
            Reply::Json {
                status,
                body,
                headers,
            } => {
                let bytes = serde_json::to_vec(&body).unwrap_or_default();
                self.record_answer(seq, status, Some(bytes.len()));
                full(status, &headers, bytes)
            }
            Reply::Stream(stream) => {
                self.record_answer(seq, 200, None);
                let body = StreamBody::new(stream.map(|b| Ok::<_, Infallible>(Frame::data(b))));
                http::Response::builder()
                    .status(200)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(body.boxed_unsync())
                    .expect("a valid response")
            }
            Reply::Proxy { status, body } => {
                self.record_answer(seq, status, Some(body.len()));
                http::Response::builder()
                    .status(status)
                    .header(http::header::CONTENT_TYPE, "text/html")
                    .body(Full::new(Bytes::from_static(body.as_bytes())).boxed_unsync())
                    .expect("a valid response")
            }
            Reply::Text { status, body } => {
                self.record_answer(seq, status, Some(body.len()));
                http::Response::builder()
                    .status(status)
                    .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")
                    .body(Full::new(Bytes::from(body)).boxed_unsync())
                    .expect("a valid response")
            }
            Reply::Never => std::future::pending().await,
        }
    }

    /// A `kube::Client` talking to this server in-process.
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.service(), "default")
    }

    /// The in-process `tower::Service` (for raw HTTP-level tests).
    pub fn service(&self) -> InProcess {
        InProcess {
            server: self.clone(),
        }
    }

    /// Serve HTTP on `127.0.0.1:0` on the current tokio runtime until the handle is dropped.
    pub fn serve_loopback(&self) -> Loopback {
        self.serve_on(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("bind 127.0.0.1:0")
    }

    /// Serve HTTP on `addr` on the current tokio runtime until the handle is dropped.
    pub fn serve_on(&self, addr: SocketAddr) -> std::io::Result<Loopback> {
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(std_listener)?;
        let addr = listener.local_addr()?;
        let server = self.clone();
        let task = tokio::spawn(async move {
            // Connection tasks live in this set, so aborting the accept task ends them too.
            let mut conns = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let server = server.clone();
                        conns.spawn(async move {
                            let svc = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                                let server = server.clone();
                                async move {
                                    let (parts, body) = req.into_parts();
                                    let bytes = match body.collect().await {
                                        Ok(c) => c.to_bytes(),
                                        Err(_) => Bytes::new(),
                                    };
                                    Ok::<_, Infallible>(server.serve_request(parts, bytes).await)
                                }
                            });
                            let io = hyper_util::rt::TokioIo::new(stream);
                            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, svc).await;
                        });
                    }
                    Some(_) = conns.join_next(), if !conns.is_empty() => {}
                }
            }
        });
        Ok(Loopback { addr, task })
    }

    /// Serve HTTP on `addr` forever on a new runtime (for a helper process, which may seed this
    /// server first); returns only if the runtime cannot start or binding fails.
    pub fn run_forever(&self, addr: SocketAddr) -> std::io::Error {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => return e,
        };
        let server = self.clone();
        rt.block_on(async move {
            match server.serve_on(addr) {
                Ok(_serving) => std::future::pending().await,
                Err(e) => e,
            }
        })
    }
}

/// A running HTTP server; stops (listener and connections) when dropped.
pub struct Loopback {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Loopback {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Write a kubeconfig for this server (a bearer-token user) to `dir/kubeconfig`, usable by
    /// `kubectl --kubeconfig` and `kube::Config::from_custom_kubeconfig`.
    pub fn write_kubeconfig(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: nodewarden-test\n  cluster:\n    server: {}\ncontexts:\n- name: nodewarden-test\n  context:\n    cluster: nodewarden-test\n    user: nodewarden-test\n    namespace: default\ncurrent-context: nodewarden-test\nusers:\n- name: nodewarden-test\n  user:\n    token: {}\n",
            self.url(),
            super::TOKEN
        );
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }
}

/// The in-process transport.
#[derive(Clone)]
pub struct InProcess {
    server: ApiServer,
}

impl tower::Service<http::Request<kube::client::Body>> for InProcess {
    type Response = http::Response<ResBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        let server = self.server.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let bytes = match body.collect().await {
                Ok(c) => c.to_bytes(),
                Err(_) => Bytes::new(),
            };
            Ok(server.serve_request(parts, bytes).await)
        })
    }
}
