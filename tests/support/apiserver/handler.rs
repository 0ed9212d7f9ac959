//! Request handling shared by the in-process service and the HTTP server: routing, content
//! negotiation, authorization denials, and the create/update/patch/delete/get/list write path
//! with the real server's precondition, subresource, validation and no-op rules.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::errors::ApiError;
use super::faults::Fault;
use super::meta;
use super::patch::{self, JsonPatchError};
use super::resources::Resource;
use super::select::{Query, Selector};
use super::store::{Change, Key, Store};
use super::validate;
use super::watch::{self, WatchStream};
use super::{ApiServer, State};

/// What the handler answers.
pub enum Reply {
    /// A complete JSON answer.
    Json {
        /// HTTP status.
        status: u16,
        /// Body.
        body: Value,
        /// Extra headers.
        headers: Vec<(&'static str, String)>,
    },
    /// A watch: newline-delimited JSON events.
    Stream(WatchStream),
    /// Not from the API server at all: what a proxy in front of it answers (HTML).
    Proxy { status: u16, body: &'static str },
    /// Plain text, as the health endpoints answer (`text/plain; charset=utf-8`).
    Text { status: u16, body: String },
    /// Never answer (black hole).
    Never,
}

impl Reply {
    fn ok(status: u16, body: Value) -> Reply {
        Reply::Json {
            status,
            body,
            headers: Vec::new(),
        }
    }
}

impl From<ApiError> for Reply {
    fn from(e: ApiError) -> Reply {
        let mut headers = Vec::new();
        if let Some(r) = e.retry_after {
            headers.push(("Retry-After", r.to_string()));
        }
        Reply::Json {
            status: e.code,
            body: e.to_status(),
            headers,
        }
    }
}

/// The parsed request line and headers the handler needs.
#[derive(Debug, Clone)]
pub struct Req {
    /// HTTP method.
    pub method: String,
    /// Path without query.
    pub path: String,
    /// Query parameters.
    pub query: Query,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Accept`.
    pub accept: Option<String>,
    /// `User-Agent`.
    pub user_agent: Option<String>,
    /// Body.
    pub body: Bytes,
}

/// Where a resource request goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The resource.
    pub res: &'static Resource,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Object name from the path.
    pub name: Option<String>,
    /// Subresource (`status`).
    pub sub: Option<String>,
}

enum Route {
    Version,
    Readyz,
    Doc(Value),
    Resource(Target),
}

fn route(path: &str) -> Result<Route, ApiError> {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["version"] => return Ok(Route::Version),
        // The aggregate readiness check only (`/readyz/<check>` is not served).
        ["readyz"] => return Ok(Route::Readyz),
        ["api"] => return Ok(Route::Doc(super::discovery::api_versions())),
        ["apis"] => return Ok(Route::Doc(super::discovery::api_group_list())),
        ["apis", g] => {
            return super::discovery::api_group(g)
                .map(Route::Doc)
                .ok_or_else(ApiError::no_route);
        }
        ["api", v] | ["apis", _, v] => {
            let g = if segs[0] == "api" { "" } else { segs[1] };
            return super::discovery::api_resource_list(g, v)
                .map(Route::Doc)
                .ok_or_else(ApiError::no_route);
        }
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(ApiError::no_route()),
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        _ => (None, rest),
    };
    let (plural, name, sub) = match rest {
        [p] => (*p, None, None),
        [p, n] => (*p, Some(n.to_string()), None),
        [p, n, s] => (*p, Some(n.to_string()), Some(s.to_string())),
        _ => return Err(ApiError::no_route()),
    };
    let res = Resource::find(group, version, plural).ok_or_else(ApiError::no_route)?;
    // A namespaced object needs its namespace in the path; a cluster-scoped one must not have one.
    if (namespace.is_some() && !res.namespaced)
        || (name.is_some() && res.namespaced && namespace.is_none())
    {
        return Err(ApiError::no_route());
    }
    if let Some(s) = &sub
        && !(s == "status" && res.status_subresource)
    {
        return Err(ApiError::no_route());
    }
    Ok(Route::Resource(Target {
        res,
        namespace,
        name,
        sub,
    }))
}

/// The Kubernetes verb of a request (for authorization and errors).
fn verb(method: &str, t: &Target, query: &Query) -> Option<&'static str> {
    Some(match (method, t.name.is_some()) {
        ("GET", true) if query.flag("watch") => "watch",
        ("GET", true) => "get",
        ("GET", false) if query.flag("watch") => "watch",
        ("GET", false) => "list",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        _ => return None,
    })
}

/// Whether the client accepts plain JSON (the only representation served). A client asking only
/// for Table or protobuf gets 406, as a real server answers for an unsupported media type.
fn accepts_json(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return true };
    if accept.trim().is_empty() {
        return true;
    }
    accept.split(',').any(|alt| {
        let mut parts = alt.split(';').map(str::trim);
        let mt = parts.next().unwrap_or("");
        let has_as = parts.any(|p| p.starts_with("as="));
        matches!(mt, "application/json" | "application/*" | "*/*") && !has_as
    })
}

fn manager_of(req: &Req) -> String {
    if let Some(m) = req.query.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    // Upstream defaults the manager to the User-Agent up to the first '/'.
    let ua = req.user_agent.as_deref().unwrap_or("");
    let m = ua.split('/').next().unwrap_or("");
    if m.is_empty() {
        "unknown".to_string()
    } else {
        m.to_string()
    }
}

/// Handle one request. Faults have already been applied by the caller.
pub async fn handle(server: &ApiServer, req: &Req) -> Reply {
    match handle_inner(server, req) {
        Ok(r) => r,
        Err(e) => e.into(),
    }
}

/// The answer an injected fault produces.
pub fn fault_reply(fault: Fault, path: &str) -> Reply {
    match fault {
        Fault::Status500 => ApiError::internal("Internal error occurred: injected fault").into(),
        Fault::Status503 => ApiError::plain(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        )
        .into(),
        Fault::Status429 { retry_after_secs } => {
            let mut e = ApiError::plain(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            );
            e.retry_after = Some(retry_after_secs);
            e.into()
        }
        Fault::Garbage200 { bytes } => {
            // JSON quotes add two bytes.
            let pattern = "garbage ";
            let text: String = pattern
                .chars()
                .cycle()
                .take(bytes.saturating_sub(2))
                .collect();
            Reply::ok(200, Value::String(text))
        }
        Fault::Proxy502 => Reply::Proxy {
            status: 502,
            body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n",
        },
        Fault::Status409 => match route(path) {
            Ok(Route::Resource(Target {
                res, name: Some(n), ..
            })) => ApiError::conflict(res, &n).into(),
            _ => ApiError::plain(
                409,
                "Conflict",
                "Operation cannot be fulfilled: injected conflict",
            )
            .into(),
        },
    }
}

fn handle_inner(server: &ApiServer, req: &Req) -> Result<Reply, ApiError> {
    let route = route(&req.path)?;
    if let Route::Readyz = route {
        // Served as text whatever the client accepts, to anyone authenticated (the
        // `system:public-info-viewer` role).
        if req.method != "GET" {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        return Ok(if server.with_state(|s| s.not_ready) {
            Reply::Text {
                status: 500,
                body: "[-]etcd failed: reason withheld\nreadyz check failed\n".into(),
            }
        } else {
            Reply::Text {
                status: 200,
                body: "ok".into(),
            }
        });
    }
    if req.method == "GET" && !accepts_json(req.accept.as_deref()) {
        return Err(ApiError::plain(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: application/json (test server), not {}",
                req.accept.as_deref().unwrap_or("")
            ),
        ));
    }
    let t = match route {
        Route::Version => return Ok(Reply::ok(200, super::discovery::version())),
        Route::Readyz => return Err(ApiError::no_route()),
        Route::Doc(doc) => {
            if req.method != "GET" {
                return Err(ApiError::method_not_allowed(
                    "the server does not allow this method on the requested resource",
                ));
            }
            return Ok(Reply::ok(200, doc));
        }
        Route::Resource(t) => t,
    };
    let Some(verb) = verb(&req.method, &t, &req.query) else {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    };
    server.with_state(|s| check_allowed(s, verb, &t))?;
    let manager = manager_of(req);
    let dry_run = req.query.get("dryRun") == Some("All");
    if let Some(d) = req
        .query
        .get("dryRun")
        .filter(|d| !d.is_empty() && *d != "All")
    {
        return Err(ApiError::bad_request(format!(
            "dryRun: Unsupported value: {d:?}: supported values: \"All\""
        )));
    }
    match verb {
        "get" => server
            .with_state(|s| get(&s.store, &t))
            .map(|o| Reply::ok(200, o)),
        "list" => server
            .with_state(|s| list(&s.store, &t, &req.query))
            .map(|o| Reply::ok(200, o)),
        "watch" => {
            // A watch on an object's own path is a watch on the collection narrowed to that
            // name (the deprecated form the real server still serves).
            let mut q = req.query.clone();
            let mut t = t.clone();
            if let Some(name) = t.name.take() {
                let by_name = format!("metadata.name={name}");
                let fs = match q.get("fieldSelector").filter(|f| !f.is_empty()) {
                    Some(f) => format!("{f},{by_name}"),
                    None => by_name,
                };
                q.0.retain(|(k, _)| k != "fieldSelector");
                q.0.push(("fieldSelector".into(), fs));
            }
            watch::start(server, &t, &q).map(Reply::Stream)
        }
        "create" => {
            let obj = decode_body(t.res, req, &["application/json"])?;
            let ns = t.namespace.clone().unwrap_or_default();
            let created =
                server.with_state(|s| create(&mut s.store, t.res, &ns, obj, &manager, dry_run))?;
            Ok(Reply::ok(201, created))
        }
        "update" => {
            let obj = decode_body(t.res, req, &["application/json"])?;
            let name = t.name.clone().unwrap_or_default();
            let ns = t.namespace.clone().unwrap_or_default();
            let (obj, created) = server.with_state(|s| {
                update(
                    &mut s.store,
                    t.res,
                    &ns,
                    &name,
                    t.sub.as_deref(),
                    obj,
                    &manager,
                    dry_run,
                )
            })?;
            Ok(Reply::ok(if created { 201 } else { 200 }, obj))
        }
        "patch" => {
            let name = t.name.clone().unwrap_or_default();
            let ns = t.namespace.clone().unwrap_or_default();
            let ct = req.content_type.as_deref().unwrap_or("");
            let kind = PatchKind::from_content_type(ct)?;
            let body: Value = serde_json::from_slice(&req.body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            let obj = server.with_state(|s| {
                patch_object(
                    &mut s.store,
                    t.res,
                    &ns,
                    &name,
                    t.sub.as_deref(),
                    kind,
                    &body,
                    &manager,
                    dry_run,
                )
            })?;
            Ok(Reply::ok(200, obj))
        }
        "delete" => {
            let name = t.name.clone().unwrap_or_default();
            let ns = t.namespace.clone().unwrap_or_default();
            let opts = DeleteOptions::parse(req)?;
            let out =
                server.with_state(|s| delete(&mut s.store, t.res, &ns, &name, &opts, dry_run))?;
            Ok(Reply::ok(200, out))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

fn check_allowed(s: &State, verb: &str, t: &Target) -> Result<(), ApiError> {
    let sub = t.sub.as_deref().unwrap_or("");
    let denied = s
        .denied
        .iter()
        .any(|(v, r, sr)| (v == verb || v == "*") && r == t.res.plural && sr == sub);
    if !denied {
        return Ok(());
    }
    let resource = if sub.is_empty() {
        t.res.plural.to_string()
    } else {
        format!("{}/{sub}", t.res.plural)
    };
    let subject = match &t.name {
        Some(n) => format!("{} \"{n}\"", t.res.qualified()),
        None => t.res.qualified(),
    };
    let scope = match &t.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_string(),
    };
    let mut e = ApiError::plain(
        403,
        "Forbidden",
        format!(
            "{subject} is forbidden: User \"{}\" cannot {verb} resource \"{resource}\" in API group \"{}\" {scope}",
            s.user, t.res.group
        ),
    );
    e.name = t.name.clone();
    e.group = (!t.res.group.is_empty()).then(|| t.res.group.to_string());
    e.kind = Some(t.res.plural.to_string());
    Err(e)
}

/// Decode a create/update body; decode errors are 400 as the real server's codec answers.
fn decode_body(res: &Resource, req: &Req, accepted: &[&str]) -> Result<Value, ApiError> {
    let ct = req.content_type.as_deref().unwrap_or("application/json");
    let mt = ct.split(';').next().unwrap_or("").trim();
    if !accepted.contains(&mt) {
        return Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: {} (the test server does not decode YAML or protobuf)",
            accepted.join(", ")
        )));
    }
    let v: Value = serde_json::from_slice(&req.body).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            res.kind, res.version, res.kind
        ))
    })?;
    validate::check_shapes(res, &v).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            res.kind, res.version, res.kind
        ))
    })?;
    Ok(v)
}

fn key(res: &'static Resource, ns: &str, name: &str) -> Key {
    (
        res.plural,
        if res.namespaced {
            ns.to_string()
        } else {
            String::new()
        },
        name.to_string(),
    )
}

fn get(store: &Store, t: &Target) -> Result<Value, ApiError> {
    let name = t.name.as_deref().unwrap_or("");
    let ns = t.namespace.as_deref().unwrap_or("");
    store
        .objects
        .get(&key(t.res, ns, name))
        .cloned()
        .ok_or_else(|| ApiError::not_found(t.res, name))
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "resourceVersion: Invalid value: {s:?}: must be a non-negative integer"
        ))
    })
}

/// List, honouring `resourceVersion`/`resourceVersionMatch`, `limit`/`continue` (pages are
/// consistent snapshots at the first page's revision, as etcd serves them) and selectors.
fn list(store: &Store, t: &Target, q: &Query) -> Result<Value, ApiError> {
    let sel = Selector::parse(t.res, q.get("fieldSelector"), q.get("labelSelector"))?;
    let ns = t.namespace.as_deref();
    let (at, after) = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let decoded = unhex(token).and_then(|d| serde_json::from_str::<Value>(&d).ok());
            let (Some(rv), Some(after)) = (
                decoded
                    .as_ref()
                    .and_then(|d| d.get("rv"))
                    .and_then(Value::as_u64),
                decoded
                    .as_ref()
                    .and_then(|d| d.get("start"))
                    .and_then(Value::as_str)
                    .map(String::from),
            ) else {
                return Err(ApiError::bad_request(
                    "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
                ));
            };
            if !store.covers(rv) {
                return Err(ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                ));
            }
            (rv, Some(after))
        }
        None => {
            let rv = q.get("resourceVersion").unwrap_or("");
            let exact = q.get("resourceVersionMatch") == Some("Exact");
            if rv.is_empty() || rv == "0" {
                (store.rv, None)
            } else {
                let n = parse_rv(rv)?;
                if n > store.rv {
                    return Err(ApiError::too_large_resource_version(n, store.rv));
                }
                (if exact { n } else { store.rv }, None)
            }
        }
    };
    let matching: Vec<&Value> = store
        .snapshot(t.res, ns, at)?
        .into_iter()
        .filter(|o| sel.matches(o))
        .filter(|o| {
            let k = format!(
                "{}/{}",
                o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            );
            after.as_ref().is_none_or(|a| k > *a)
        })
        .collect();
    let mut meta = json!({ "resourceVersion": at.to_string() });
    let limit = match q.get("limit") {
        Some(l) if !l.is_empty() => l
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request(format!("limit: Invalid value: {l:?}")))?,
        _ => 0,
    };
    // Only the page is cloned: a paged list of many large objects stays linear.
    let page = if limit > 0 { limit } else { usize::MAX };
    let mut items: Vec<Value> = matching.iter().take(page).map(|o| (*o).clone()).collect();
    if limit > 0 && matching.len() > limit {
        let rest = matching.len() - limit;
        let last = items.last().map(|o| {
            format!(
                "{}/{}",
                o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            )
        });
        meta["continue"] = json!(hex(&json!({ "rv": at, "start": last }).to_string()));
        meta["remainingItemCount"] = json!(rest);
    }
    // Items of typed lists carry no kind/apiVersion on the wire.
    for o in &mut items {
        if let Some(m) = o.as_object_mut() {
            m.remove("kind");
            m.remove("apiVersion");
        }
    }
    Ok(json!({
        "kind": format!("{}List", t.res.kind),
        "apiVersion": t.res.api_version(),
        "metadata": meta,
        "items": items,
    }))
}

fn check_type_meta(res: &Resource, obj: &Value) -> Result<(), ApiError> {
    let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if !av.is_empty() && av != res.api_version() {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            res.api_version()
        )));
    }
    if !kind.is_empty() && kind != res.kind {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            res.kind
        )));
    }
    Ok(())
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Create `obj` in namespace `ns` (ignored for cluster-scoped resources).
pub fn create(
    store: &mut Store,
    res: &'static Resource,
    ns: &str,
    mut obj: Value,
    manager: &str,
    dry_run: bool,
) -> Result<Value, ApiError> {
    validate::check_shapes(res, &obj).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            res.kind, res.version, res.kind
        ))
    })?;
    check_type_meta(res, &obj)?;
    obj["kind"] = json!(res.kind);
    obj["apiVersion"] = json!(res.api_version());
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    if res.namespaced {
        let body_ns = meta_str(&obj, "namespace");
        if !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        obj["metadata"]["namespace"] = json!(ns);
    } else if let Some(m) = obj["metadata"].as_object_mut() {
        m.remove("namespace");
    }
    if meta_str(&obj, "name").is_empty() && !meta_str(&obj, "generateName").is_empty() {
        let suffix: String = hex(&store.new_uid()).chars().rev().take(5).collect();
        let name = format!("{}{suffix}", meta_str(&obj, "generateName"));
        obj["metadata"]["name"] = json!(name);
    }
    if !meta_str(&obj, "resourceVersion").is_empty() {
        return Err(ApiError::internal(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let name = meta_str(&obj, "name").to_string();
    // Server-owned metadata is never taken from the client.
    if let Some(m) = obj["metadata"].as_object_mut() {
        for f in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            m.remove(f);
        }
    }
    if res.kind == "Pod" {
        // Pod PrepareForCreate resets status to Pending.
        obj["status"] = json!({ "phase": "Pending" });
    }
    validate::apply_defaults(res, &mut obj);
    let errs = validate::validate(res, &obj, None);
    if !errs.is_empty() {
        return Err(ApiError::invalid(res, &name, errs));
    }
    if res.namespaced && !store.namespaces.contains(ns) {
        return Err(ApiError::namespace_not_found(ns));
    }
    let k = key(res, ns, &name);
    if store.objects.contains_key(&k) {
        return Err(ApiError::already_exists(res, &name));
    }
    obj["metadata"]["uid"] = json!(store.new_uid());
    let created = store.created_at.clone().unwrap_or_else(meta::now_rfc3339);
    obj["metadata"]["creationTimestamp"] = json!(created);
    if res.generation {
        obj["metadata"]["generation"] = json!(1);
    }
    let mut fields = meta::changed_fields(res, None, &obj, false);
    meta::union(&mut fields, &meta::changed_fields(res, None, &obj, true));
    meta::record_managed_fields(&mut obj, manager, &res.api_version(), "", fields);
    if dry_run {
        return Ok(obj);
    }
    Ok(store.commit(k, Change::Added, obj, None))
}

/// Whether an update bumps `metadata.generation`: a change of `spec` (pods), or of anything
/// but metadata for types without a spec (the EndpointSlice strategy compares whole objects).
fn generation_changes(res: &Resource, cur: &Value, new: &Value) -> bool {
    if res.kind == "EndpointSlice" {
        let body = |o: &Value| {
            let mut o = o.clone();
            if let Some(m) = o.as_object_mut() {
                m.remove("metadata");
            }
            o
        };
        body(cur) != body(new)
    } else {
        new.get("spec") != cur.get("spec")
    }
}

fn without_volatile(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
        m.remove("resourceVersion");
    }
    o
}

/// Update (PUT semantics) `name` with `new`, on the main resource or the `status` subresource.
/// Returns the stored object and whether it was created (create-on-update resources).
#[allow(clippy::too_many_arguments)]
pub fn update(
    store: &mut Store,
    res: &'static Resource,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    mut new: Value,
    manager: &str,
    dry_run: bool,
) -> Result<(Value, bool), ApiError> {
    check_type_meta(res, &new)?;
    if !new.get("metadata").is_some_and(Value::is_object) {
        new["metadata"] = json!({});
    }
    let body_name = meta_str(&new, "name");
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if res.namespaced {
        let body_ns = meta_str(&new, "namespace");
        if !body_ns.is_empty() && body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    let k = key(res, ns, name);
    let Some(cur) = store.objects.get(&k).cloned() else {
        if res.create_on_update && sub.is_none() {
            if let Some(m) = new["metadata"].as_object_mut() {
                m.remove("resourceVersion");
            }
            return create(store, res, ns, new, manager, dry_run).map(|o| (o, true));
        }
        return Err(ApiError::not_found(res, name));
    };
    // Optimistic concurrency: a resourceVersion in the body is a precondition; an empty one means
    // an unconditional update (AllowUnconditionalUpdate is true for these types).
    let body_rv = meta_str(&new, "resourceVersion");
    if !body_rv.is_empty() && body_rv != meta_str(&cur, "resourceVersion") {
        return Err(ApiError::conflict(res, name));
    }
    let body_uid = meta_str(&new, "uid");
    if !body_uid.is_empty() && body_uid != meta_str(&cur, "uid") {
        return Err(ApiError::conflict_with(
            res,
            name,
            &format!(
                "Precondition failed: UID in precondition: {body_uid}, UID in object meta: {}",
                meta_str(&cur, "uid")
            ),
        ));
    }
    let status_write = sub == Some("status");
    let mut result = if status_write {
        // Status strategies take only .status from the request (ResetObjectMetaForStatus and
        // `newNode.Spec = oldNode.Spec`).
        let mut r = cur.clone();
        r["status"] = match new.get("status") {
            Some(s) if !s.is_null() => s.clone(),
            _ => json!({}),
        };
        r
    } else {
        let mut r = new;
        r["kind"] = json!(res.kind);
        r["apiVersion"] = json!(res.api_version());
        let m = r["metadata"]
            .as_object_mut()
            .expect("metadata is an object");
        for f in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            match cur.get("metadata").and_then(|cm| cm.get(f)) {
                Some(v) => {
                    m.insert(f.to_string(), v.clone());
                }
                None => {
                    m.remove(f);
                }
            }
        }
        if res.namespaced {
            m.insert("namespace".into(), json!(ns));
        } else {
            m.remove("namespace");
        }
        if res.status_subresource {
            // The main resource ignores .status (PrepareForUpdate keeps the old status).
            match cur.get("status") {
                Some(s) => r["status"] = s.clone(),
                None => {
                    if let Some(o) = r.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
        }
        r
    };
    if !status_write {
        validate::apply_defaults(res, &mut result);
    }
    let errs = validate::validate(res, &result, Some(&cur));
    if !errs.is_empty() {
        return Err(ApiError::invalid(res, name, errs));
    }
    // A write that changes nothing is not written: no new resourceVersion, no watch event.
    if without_volatile(&result) == without_volatile(&cur) {
        return Ok((cur, false));
    }
    if res.generation && generation_changes(res, &cur, &result) {
        let g = cur
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        result["metadata"]["generation"] = json!(g + 1);
    }
    let fields = meta::changed_fields(
        res,
        Some(&cur),
        &result,
        status_write && res.status_subresource,
    );
    meta::record_managed_fields(
        &mut result,
        manager,
        &res.api_version(),
        sub.unwrap_or(""),
        fields,
    );
    if dry_run {
        return Ok((result, false));
    }
    // The last finalizer removed from an object being deleted without grace completes deletion.
    let terminating = result
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    let no_finalizers = result
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_none_or(|f| f.is_empty());
    let grace = result
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if terminating && no_finalizers && grace == 0 {
        return Ok((store.commit(k, Change::Deleted, result, Some(cur)), false));
    }
    Ok((store.commit(k, Change::Modified, result, Some(cur)), false))
}

/// A patch format.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PatchKind {
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
}

impl PatchKind {
    fn from_content_type(ct: &str) -> Result<PatchKind, ApiError> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/json-patch+json" => Ok(PatchKind::Json),
            other => Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {other:?}; server-side apply, application/apply-patch+yaml, is not implemented by the test server)"
            ))),
        }
    }
}

/// Patch `name`: apply the patch to the current object, then update with the result, so a
/// resourceVersion in the patch body is a precondition exactly as in an update.
#[allow(clippy::too_many_arguments)]
pub fn patch_object(
    store: &mut Store,
    res: &'static Resource,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    kind: PatchKind,
    body: &Value,
    manager: &str,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let cur = store
        .objects
        .get(&key(res, ns, name))
        .cloned()
        .ok_or_else(|| ApiError::not_found(res, name))?;
    let patched = match kind {
        PatchKind::Strategic => {
            patch::strategic_merge(res, &cur, body).map_err(ApiError::bad_request)?
        }
        PatchKind::Merge => {
            if !body.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: json: cannot unmarshal into Go value of type map[string]interface {}",
                ));
            }
            patch::merge_patch(&cur, body)
        }
        PatchKind::Json => match patch::json_patch(&cur, body) {
            Ok(v) => v,
            Err(JsonPatchError::Decode(e)) => return Err(ApiError::bad_request(e)),
            Err(JsonPatchError::Apply(e)) => return Err(ApiError::json_patch_failed(&e)),
        },
    };
    // A patch result that does not decode into the type is answered 422 on field "patch".
    validate::check_shapes(res, &patched)
        .map_err(|e| ApiError::invalid_patch(&body.to_string(), &e))?;
    update(store, res, ns, name, sub, patched, manager, dry_run).map(|(o, _)| o)
}

/// `DeleteOptions` from the query and body.
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`.
    pub grace: Option<i64>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
}

impl DeleteOptions {
    fn parse(req: &Req) -> Result<DeleteOptions, ApiError> {
        let mut o = DeleteOptions::default();
        if let Some(g) = req.query.get("gracePeriodSeconds") {
            o.grace = Some(g.parse().map_err(|_| {
                ApiError::bad_request(format!("gracePeriodSeconds: invalid value {g:?}"))
            })?);
        }
        if !req.body.is_empty() {
            let b: Value = serde_json::from_slice(&req.body).map_err(|e| {
                ApiError::bad_request(format!(
                    "DeleteOptions in version \"v1\" cannot be handled as a DeleteOptions: {e}"
                ))
            })?;
            if let Some(g) = b.get("gracePeriodSeconds").filter(|g| !g.is_null()) {
                o.grace = Some(g.as_i64().ok_or_else(|| {
                    ApiError::bad_request("DeleteOptions: gracePeriodSeconds must be an integer")
                })?);
            }
            o.uid = b
                .pointer("/preconditions/uid")
                .and_then(Value::as_str)
                .map(String::from);
            o.resource_version = b
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str)
                .map(String::from);
        }
        Ok(o)
    }
}

/// Delete `name`. Pods delete gracefully (deletionTimestamp + deletionGracePeriodSeconds, object
/// kept until [`finish_deletion`]) unless the grace period is 0; objects with finalizers are
/// marked and kept.
pub fn delete(
    store: &mut Store,
    res: &'static Resource,
    ns: &str,
    name: &str,
    opts: &DeleteOptions,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let k = key(res, ns, name);
    let cur = store
        .objects
        .get(&k)
        .cloned()
        .ok_or_else(|| ApiError::not_found(res, name))?;
    if let Some(uid) = &opts.uid
        && uid != meta_str(&cur, "uid")
    {
        return Err(ApiError::conflict_with(
            res,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(&cur, "uid")
            ),
        ));
    }
    if let Some(rv) = &opts.resource_version
        && rv != meta_str(&cur, "resourceVersion")
    {
        return Err(ApiError::conflict_with(
            res,
            name,
            &format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                meta_str(&cur, "resourceVersion")
            ),
        ));
    }
    let mut grace = 0;
    if res.kind == "Pod" {
        let default = cur
            .pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(30);
        grace = opts.grace.unwrap_or(default).max(0);
        let phase = cur
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        let unscheduled = cur
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty();
        // Pod CheckGracefulDelete: unscheduled or finished pods go at once.
        if unscheduled || phase == "Succeeded" || phase == "Failed" {
            grace = 0;
        }
    }
    let has_finalizers = cur
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    let terminating = cur
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    if grace > 0 || has_finalizers {
        let old_grace = cur
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64);
        if terminating && old_grace.is_some_and(|g| g <= grace) {
            // A second delete with the same or a longer grace changes nothing.
            return Ok(cur);
        }
        if grace > 0 || !terminating {
            let mut next = cur.clone();
            let now = std::time::SystemTime::now();
            let when = now
                .checked_add(std::time::Duration::from_secs(grace as u64))
                .unwrap_or(now);
            next["metadata"]["deletionTimestamp"] = json!(meta::rfc3339(when));
            next["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
            if dry_run {
                return Ok(next);
            }
            return Ok(store.commit(k, Change::Modified, next, Some(cur)));
        }
        if has_finalizers {
            return Ok(cur);
        }
    }
    if dry_run {
        return Ok(cur);
    }
    let uid = meta_str(&cur, "uid").to_string();
    let gone = store.commit(k, Change::Deleted, cur.clone(), Some(cur));
    if res.return_deleted_object {
        return Ok(gone);
    }
    let mut details = Map::new();
    details.insert("name".into(), json!(name));
    if !res.group.is_empty() {
        details.insert("group".into(), json!(res.group));
    }
    details.insert("kind".into(), json!(res.plural));
    details.insert("uid".into(), json!(uid));
    Ok(
        json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details }),
    )
}

/// Finish a graceful pod deletion (what the kubelet's final grace-0 delete does).
pub fn finish_deletion(
    store: &mut Store,
    res: &'static Resource,
    ns: &str,
    name: &str,
) -> Result<Value, ApiError> {
    let k = key(res, ns, name);
    let cur = store
        .objects
        .get(&k)
        .cloned()
        .ok_or_else(|| ApiError::not_found(res, name))?;
    if cur
        .pointer("/metadata/deletionTimestamp")
        .is_none_or(Value::is_null)
    {
        return Err(ApiError::bad_request(format!(
            "{} \"{name}\" is not being deleted",
            res.qualified()
        )));
    }
    Ok(store.commit(k, Change::Deleted, cur.clone(), Some(cur)))
}

/// Resolve a resource by plural for the seeding helpers.
pub fn resource(plural: &str) -> &'static Resource {
    super::resources::ALL
        .iter()
        .copied()
        .find(|r| r.plural == plural)
        .expect("a served resource")
}

/// Build a target (for watch and list helpers).
pub fn target(res: &'static Resource, namespace: Option<&str>) -> Target {
    Target {
        res,
        namespace: namespace.map(String::from),
        name: None,
        sub: None,
    }
}

/// Parse a raw request into a [`Req`].
pub fn parse_request(
    method: &http::Method,
    uri: &http::Uri,
    headers: &http::HeaderMap,
    body: Bytes,
) -> Req {
    let h = |n: http::header::HeaderName| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    Req {
        method: method.as_str().to_string(),
        path: uri.path().to_string(),
        query: Query::parse(uri.query()),
        content_type: h(http::header::CONTENT_TYPE),
        accept: h(http::header::ACCEPT),
        user_agent: h(http::header::USER_AGENT),
        body,
    }
}
