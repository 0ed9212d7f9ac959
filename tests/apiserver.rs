//! Tests of the in-memory API test server itself (tests/support/apiserver).

mod support;

use support::apiserver::ApiServer;

#[tokio::test]
async fn smoke() {
    let s = ApiServer::new();
    s.create_node(ApiServer::node_json("n1"));
    assert!(s.node("n1").is_some());
}
