//! The real binary's API client as a user meets it, against the API test server on loopback:
//! kubeconfig tokens written as YAML block scalars or in token files, tokens that cannot be sent,
//! secrets (token, URL password) never printed even at trace level or when the kubeconfig is
//! malformed on the token line, a wrong server answering megabytes of garbage without
//! flooding the log, and the API server behind TLS, as every real one is: the agent trusts the
//! kubeconfig's certificate authority (as a file or inline) and no other.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::apiserver::{ApiServer, Fault, TOKEN};
use support::{agent_bin, free_port, write_config};

const NODE: &str = "n1";
const LEASE_NS: &str = "kube-node-lease";
const LEASE: &str = "nodewarden-n1";
const EXIT_CONFIG: i32 = 78;

/// A kubeconfig for `server` whose user entry `user` has the YAML lines `auth` (indented under
/// `user:`).
fn kubeconfig(dir: &Path, server: &str, user: &str, auth: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
         contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: {user}\n\
         current-context: ctx\nusers:\n- name: {user}\n  user:\n{auth}"
    );
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

/// An agent configuration using `kubeconfig`, logging to stderr at `level`, renewing its Lease
/// every second.
fn agent_config(dir: &Path, kubeconfig: &Path, level: &str) -> PathBuf {
    write_config(
        dir,
        &format!(
            "nodeName = \"{NODE}\"\nkubeconfig = \"{kc}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
             stateDirectory = \"{state}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             nodeStatusUpdateFrequency = \"1s\"\nnodeLeaseDurationSeconds = 4\n\
             [logging]\ntarget = \"stderr\"\nlevel = \"{level}\"\n",
            kc = kubeconfig.display(),
            port = free_port(),
            state = dir.join("state").display(),
        ),
    )
}

/// The agent as a child with stdout and stderr going to files (read once it has ended).
struct Running {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Running {
    fn start(config: &Path, dir: &Path) -> Running {
        let (stdout, stderr) = (dir.join("stdout"), dir.join("stderr"));
        let child = Command::new(agent_bin())
            .arg("run")
            .arg("--config")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).expect("stdout file"))
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .env_remove("JOURNAL_STREAM")
            .env_remove("NOTIFY_SOCKET")
            .spawn()
            .expect("spawn nodewarden");
        Running {
            child,
            stdout,
            stderr,
        }
    }

    fn output(&self) -> (String, String) {
        (
            std::fs::read_to_string(&self.stdout).unwrap_or_default(),
            std::fs::read_to_string(&self.stderr).unwrap_or_default(),
        )
    }

    fn stderr_len(&self) -> u64 {
        std::fs::metadata(&self.stderr).map_or(0, |m| m.len())
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits (bounded) for the agent to exit by itself.
    async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(s) = self.exited() {
                return Some(s);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    /// SIGTERM to our child, by PID, then (bounded) wait; SIGKILL if it does not stop.
    async fn stop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        if self.wait_exit(Duration::from_secs(10)).await.is_none() {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits (bounded) until the server holds our Lease; the agent must still be running.
async fn wait_for_lease(server: &ApiServer, agent: &mut Running, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if server.lease(LEASE_NS, LEASE).is_some() {
            return true;
        }
        if agent.exited().is_some() {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn seeded() -> ApiServer {
    let server = ApiServer::new();
    server.create_node(ApiServer::node_json(NODE));
    server
}

/// Every recorded request carried exactly our token, and none was refused for it.
fn all_authenticated(server: &ApiServer) {
    let requests = server.requests();
    assert!(!requests.is_empty(), "no request reached the server");
    for r in &requests {
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {TOKEN}").as_str()),
            "{} {}",
            r.method,
            r.path
        );
        assert_ne!(r.status, Some(401), "{} {}", r.method, r.path);
    }
}

#[tokio::test]
async fn a_token_with_a_trailing_newline_inline_or_in_a_token_file_authenticates() {
    for case in ["block scalar", "token file"] {
        let server = seeded();
        server.require_bearer(Some(TOKEN));
        let lb = server.serve_loopback();
        let dir = tempfile::tempdir().expect("tempdir");
        let auth = if case == "block scalar" {
            // `token: |` keeps the final newline: the way many kubeconfigs are written by hand.
            format!("    token: |\n      {TOKEN}\n")
        } else {
            let file = dir.path().join("token");
            std::fs::write(&file, format!("{TOKEN}\n")).expect("write token file");
            format!("    tokenFile: {}\n", file.display())
        };
        let kc = kubeconfig(dir.path(), &lb.url(), "agent", &auth);
        connects_with(&server, dir.path(), &kc, case).await;
    }
}

/// An agent with `kubeconfig` writes its Lease to `server`, every request with the test token.
async fn connects_with(server: &ApiServer, dir: &Path, kubeconfig: &Path, case: &str) {
    let config = agent_config(dir, kubeconfig, "info");
    let mut agent = Running::start(&config, dir);
    let created = wait_for_lease(server, &mut agent, Duration::from_secs(20)).await;
    let status = agent.exited();
    agent.stop().await;
    let (_, stderr) = agent.output();
    assert!(
        created,
        "{case}: the agent never wrote its Lease (exit {status:?}):\n{stderr}"
    );
    all_authenticated(server);
}

#[tokio::test]
async fn a_token_with_a_control_character_is_refused_naming_file_and_user_but_not_the_token() {
    const SECRET: &str = "tok-SECRET-c0ntr0l";
    for case in ["inline", "token file"] {
        let server = seeded();
        let lb = server.serve_loopback();
        let dir = tempfile::tempdir().expect("tempdir");
        let auth = if case == "inline" {
            format!("    token: \"{SECRET}\\x01tail\"\n")
        } else {
            let file = dir.path().join("token");
            std::fs::write(&file, format!("{SECRET}\u{1}tail\n")).expect("write token file");
            format!("    tokenFile: {}\n", file.display())
        };
        let kc = kubeconfig(dir.path(), &lb.url(), "ops-admin", &auth);
        let config = agent_config(dir.path(), &kc, "trace");
        let mut agent = Running::start(&config, dir.path());
        let status = agent.wait_exit(Duration::from_secs(20)).await;
        let (stdout, stderr) = agent.output();
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(EXIT_CONFIG),
            "{case}: {stderr}"
        );
        assert!(
            stderr.contains(&kc.display().to_string()) && stderr.contains("ops-admin"),
            "{case}: names the file and the user: {stderr}"
        );
        for out in [&stdout, &stderr] {
            assert!(
                !out.contains(SECRET),
                "{case}: the token was printed: {out}"
            );
        }
        assert!(
            server.requests().is_empty(),
            "{case}: nothing is sent with it"
        );
    }
}

#[tokio::test]
async fn neither_the_token_nor_a_url_password_is_emitted_in_logs_metrics_status_or_state() {
    const TOKEN_SECRET: &str = "tok-SECRET-3f9a1c";
    const URL_SECRET: &str = "pw-SECRET-77e2b0";
    let server = seeded();
    let lb = server.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://admin:{URL_SECRET}@{}", lb.addr());
    let kc = kubeconfig(
        dir.path(),
        &url,
        "agent",
        &format!("    token: {TOKEN_SECRET}\n"),
    );
    let config = agent_config(dir.path(), &kc, "trace");
    let mut agent = Running::start(&config, dir.path());
    let created = wait_for_lease(&server, &mut agent, Duration::from_secs(20)).await;
    // A few renewals, status writes and watch events at trace level.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Errors too: a refused write and a server error.
    server.faults().fail_next(
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/*/leases/*"),
        2,
        Fault::Status500,
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Everything else the agent emits: its metrics, ...
    let text = std::fs::read_to_string(&config).expect("config");
    let port: u16 = text
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|p| p.parse().ok())
        .expect("health port in the config");
    let metrics = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).expect("health port");
        conn.set_read_timeout(Some(Duration::from_secs(5))).ok();
        conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
            .expect("request");
        let mut body = String::new();
        let _ = conn.read_to_string(&mut body);
        body
    })
    .await
    .expect("metrics");
    assert!(metrics.contains("nodewarden_api_reachable"), "{metrics}");
    agent.stop().await;
    let (stdout, stderr) = agent.output();
    assert!(created, "the agent never wrote its Lease:\n{stderr}");
    // ... what `status` prints from the state it left, and the state files themselves.
    let mut emitted = vec![("metrics".to_string(), metrics)];
    for args in [
        &["status", "--config"][..],
        &["status", "-o", "json", "--config"][..],
    ] {
        let out = std::process::Command::new(support::agent_bin())
            .args(args)
            .arg(&config)
            .output()
            .expect("status");
        assert!(out.status.success(), "status: {out:?}");
        emitted.push((
            format!("{args:?}"),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        ));
    }
    let state_files: Vec<_> = std::fs::read_dir(dir.path().join("state"))
        .expect("state directory")
        .flatten()
        .collect();
    assert!(!state_files.is_empty());
    for f in state_files {
        let bytes = std::fs::read(f.path()).expect("state file");
        emitted.push((
            f.path().display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    for (what, out) in &emitted {
        for secret in [TOKEN_SECRET, URL_SECRET] {
            assert!(!out.contains(secret), "{secret} in {what}:\n{out}");
        }
    }
    assert!(
        stderr.lines().count() > 20,
        "trace level logs a lot: {stderr}"
    );
    for (what, out) in [("stdout", &stdout), ("stderr", &stderr)] {
        for secret in [TOKEN_SECRET, URL_SECRET] {
            assert!(!out.contains(secret), "{secret} in {what}:\n{out}");
        }
    }
    // The token was sent: it is kept out of the output, not out of the requests.
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.authorization.as_deref() == Some(format!("Bearer {TOKEN_SECRET}").as_str()))
    );
}

#[tokio::test]
async fn a_kubeconfig_malformed_on_its_token_line_is_reported_without_its_text() {
    const SECRET: &str = "tok-SECRET-b4d11e";
    let cases = [
        // Not a string where one is expected.
        format!("    token: [{SECRET}, x]\n"),
        // An unterminated quote.
        format!("    token: \"{SECRET}\n"),
        // A mapping where a scalar is expected, on the token line.
        format!("    token: {SECRET}: x\n"),
    ];
    for auth in &cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let kc = kubeconfig(dir.path(), "http://127.0.0.1:9", "agent", auth);
        let config = agent_config(dir.path(), &kc, "trace");
        let mut agent = Running::start(&config, dir.path());
        let status = agent.wait_exit(Duration::from_secs(20)).await;
        let (stdout, stderr) = agent.output();
        eprintln!("{stderr}");
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(EXIT_CONFIG),
            "{auth}: {stderr}"
        );
        assert!(
            stderr.contains(&kc.display().to_string()),
            "{auth}: names the file: {stderr}"
        );
        assert!(stderr.contains("line "), "{auth}: gives the line: {stderr}");
        for out in [&stdout, &stderr] {
            assert!(
                !out.contains(SECRET),
                "{auth}: the token was printed: {out}"
            );
        }
    }
}

#[tokio::test]
async fn a_server_answering_megabytes_of_garbage_does_not_flood_the_log() {
    const BODY: usize = 10 << 20;
    const BUDGET: u64 = 64 * 1024;
    let server = seeded();
    let lb = server.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = lb.write_kubeconfig(dir.path());
    let config = agent_config(dir.path(), &kc, "info");
    let mut agent = Running::start(&config, dir.path());
    let created = wait_for_lease(&server, &mut agent, Duration::from_secs(20)).await;
    assert!(
        created,
        "the agent never wrote its Lease:\n{}",
        agent.output().1
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = agent.stderr_len();

    // Every route the agent uses answers 200 with a 10 MB JSON string, for about 5 s.
    let faults = server.faults();
    for route in [
        ("GET", "/api/v1/nodes"),
        ("GET", "/api/v1/nodes/*"),
        ("PATCH", "/api/v1/nodes/*"),
        ("PATCH", "/api/v1/nodes/*/status"),
        ("GET", "/api/v1/pods"),
        ("POST", "/api/v1/namespaces/*/events"),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/*/leases/*"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/*/leases/*"),
        ("POST", "/apis/coordination.k8s.io/v1/namespaces/*/leases"),
    ] {
        faults.fail_next(route, u32::MAX, Fault::Garbage200 { bytes: BODY });
    }
    server.drop_watches();
    let garbage_from = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    faults.clear();
    let answered = server
        .requests()
        .iter()
        .filter(|r| r.response_size.is_some_and(|n| n >= BODY - 2))
        .count();
    let logged = agent.stderr_len().saturating_sub(before);
    let alive = agent.exited().is_none();

    // It recovers: the Lease is renewed again once the server answers properly.
    server.clear_requests();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut renewed = false;
    while Instant::now() < deadline && !renewed {
        tokio::time::sleep(Duration::from_millis(100)).await;
        renewed = server
            .requests()
            .iter()
            .any(|r| r.method == "PUT" && r.path.contains("/leases/") && r.status == Some(200));
    }
    agent.stop().await;
    let (_, stderr) = agent.output();
    eprintln!("{logged} bytes logged in 5 s of garbage ({answered} answers of {BODY} bytes)");
    assert!(
        answered >= 3,
        "the garbage was served {answered} times in {:?}",
        garbage_from.elapsed()
    );
    assert!(alive, "the agent died:\n{}", excerpt(&stderr));
    assert!(
        logged < BUDGET,
        "{logged} bytes logged in 5 s of garbage ({answered} answers):\n{}",
        excerpt(&stderr)
    );
    assert!(renewed, "no renewal after the garbage stopped");
}

/// The start and end of a log too long to print whole.
fn excerpt(text: &str) -> String {
    if text.len() <= 8192 {
        return text.to_string();
    }
    let mut head = 4096;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - 4096;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n… ({} bytes) …\n{}",
        &text[..head],
        text.len(),
        &text[tail..]
    )
}

/// A certificate authority and a server certificate for 127.0.0.1 it signed, made by the
/// `openssl` command (PEM files in `dir`: `ca.crt`, `server.crt`, `server.key`).
fn certificates(dir: &Path, ca_name: &str) -> PathBuf {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let subject = format!("/CN={ca_name}");
    let mut ca = vec!["req", "-x509"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "1",
        "-subj",
        &subject,
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
    ]);
    run(&ca);
    let mut csr = vec!["req"];
    csr.extend(ec);
    csr.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=apiserver",
    ]);
    run(&csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write extensions");
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "1",
        "-extfile",
        "server.ext",
    ]);
    dir.join("ca.crt")
}

/// A TLS front on loopback for the plain-HTTP server at `backend`, with the certificate in
/// `dir`: each connection's TLS ends here and its bytes go on to `backend`. Runs until the test's
/// runtime ends.
async fn tls_front(dir: &Path, backend: std::net::SocketAddr) -> String {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |name: &str| std::fs::read(dir.join(name)).expect("read PEM");
    let chain = vec![CertificateDer::from_pem_slice(&read("server.crt")).expect("certificate")];
    let key = PrivateKeyDer::from_pem_slice(&read("server.key")).expect("key");
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that refuses our certificate ends here, as it should.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                }
            });
        }
    });
    format!("https://{addr}")
}

/// A kubeconfig for an HTTPS `server` whose cluster entry has the YAML line `ca` (the
/// certificate authority, as a file or inline), authenticating with the test token.
fn tls_kubeconfig(dir: &Path, server: &str, ca: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    {ca}\n\
         contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: agent\n\
         current-context: ctx\nusers:\n- name: agent\n  user:\n    token: {TOKEN}\n"
    );
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

#[tokio::test]
async fn behind_tls_the_agent_trusts_the_kubeconfigs_authority_as_a_file_or_inline_and_no_other() {
    if !support::require(
        Command::new("openssl").arg("version").output().is_ok(),
        "the openssl command (Debian package openssl)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = certificates(dir.path(), "nodewarden-test-ca");
    let ca_data = {
        let out = Command::new("openssl")
            .args(["base64", "-A", "-in"])
            .arg(&ca)
            .output()
            .expect("openssl base64");
        String::from_utf8(out.stdout).expect("base64 is ASCII")
    };
    for (case, line) in [
        ("file", format!("certificate-authority: {}", ca.display())),
        ("inline", format!("certificate-authority-data: {ca_data}")),
    ] {
        let server = seeded();
        server.require_bearer(Some(TOKEN));
        let lb = server.serve_loopback();
        let url = tls_front(dir.path(), lb.addr()).await;
        let run = tempfile::tempdir().expect("tempdir");
        let kc = tls_kubeconfig(run.path(), &url, &line);
        connects_with(&server, run.path(), &kc, &format!("TLS, authority {case}")).await;
    }

    // Another authority in the kubeconfig: not one request reaches the server, and the log says
    // why. Its own directory: a certificate the front does not present.
    let other = tempfile::tempdir().expect("tempdir");
    let wrong = certificates(other.path(), "some-other-ca");
    let server = seeded();
    let lb = server.serve_loopback();
    let url = tls_front(dir.path(), lb.addr()).await;
    let run = tempfile::tempdir().expect("tempdir");
    let kc = tls_kubeconfig(
        run.path(),
        &url,
        &format!("certificate-authority: {}", wrong.display()),
    );
    let config = agent_config(run.path(), &kc, "info");
    let mut agent = Running::start(&config, run.path());
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline
        && agent.exited().is_none()
        && !agent.output().1.contains("API server unreachable")
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Some seconds of an outage like this one (every connection refused at once) tell one
    // story: the pod watch's list is retried with a growing backoff, not every second, and
    // never said to recover.
    tokio::time::sleep(Duration::from_secs(6)).await;
    agent.stop().await;
    let said = agent.output().1;
    assert!(
        server.requests().is_empty(),
        "a request passed a certificate the kubeconfig's authority did not sign: {:?}",
        server.requests()
    );
    let lower = said.to_lowercase();
    assert!(
        lower.contains("certificate") && lower.contains("unknownissuer"),
        "the log does not say the certificate is the problem:\n{said}"
    );
    let count = |needle: &str| said.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(count("pod watch failed"), 1, "{said}");
    assert_eq!(count("pod watch recovered"), 0, "{said}");
}
