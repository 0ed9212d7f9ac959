//! The health/metrics server in-process: readiness starts false and follows the agent, liveness
//! follows the sampling loop's ticks, unknown paths and methods are refused.

use std::sync::Arc;
use std::time::Duration;

use nodewarden::observe::http::{Health, bind, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn get(port: u16, request: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    s.write_all(request.as_bytes()).await.expect("send");
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out))
        .await
        .expect("response within 5 s")
        .expect("read");
    out
}

fn status(resp: &str) -> &str {
    resp.split_whitespace().nth(1).unwrap_or("")
}

#[tokio::test]
async fn readiness_starts_false_and_liveness_needs_ticks() {
    let listener = bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let health = Arc::new(Health::new(Duration::from_millis(300)));
    let server = tokio::spawn(serve(listener, health.clone()));

    let r = get(port, "GET /readyz HTTP/1.1\r\n\r\n").await;
    assert_eq!(status(&r), "503", "{r}");
    health.require_api();
    health.set_sampled();
    let r = get(port, "GET /readyz HTTP/1.1\r\n\r\n").await;
    assert_eq!(status(&r), "503", "connected: a sample is not enough: {r}");
    assert!(r.contains("no successful API round trip"), "{r}");
    health.set_api_ok();
    assert_eq!(
        status(&get(port, "GET /readyz HTTP/1.1\r\n\r\n").await),
        "200"
    );

    health.tick();
    assert_eq!(
        status(&get(port, "GET /healthz HTTP/1.1\r\n\r\n").await),
        "200"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let r = get(port, "GET /healthz HTTP/1.1\r\n\r\n").await;
    assert_eq!(
        status(&r),
        "503",
        "a loop silent past its window is not live: {r}"
    );
    health.tick();
    assert_eq!(
        status(&get(port, "GET /healthz HTTP/1.1\r\n\r\n").await),
        "200"
    );

    assert_eq!(
        status(&get(port, "POST /readyz HTTP/1.1\r\n\r\n").await),
        "405"
    );
    assert_eq!(status(&get(port, "GET /x HTTP/1.1\r\n\r\n").await), "404");
    let head = get(port, "HEAD /metrics HTTP/1.1\r\n\r\n").await;
    assert_eq!(status(&head), "200");
    assert!(head.ends_with("\r\n\r\n"), "HEAD has no body: {head:?}");
    server.abort();
}
