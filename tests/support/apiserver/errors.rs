//! API errors rendered as `meta/v1 Status` bodies with the reasons, codes and message texts the
//! real API server uses (`k8s.io/apimachinery/pkg/api/errors`).

use serde_json::{Value, json};

use super::resources::Resource;

/// One `details.causes[]` entry (a field error of an Invalid status, or a server message).
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// `FieldValueRequired`, `FieldValueInvalid`, `FieldValueNotSupported`, `FieldValueDuplicate`,
    /// `FieldValueForbidden`, `FieldValueTypeInvalid` or `UnexpectedServerResponse`.
    pub reason: String,
    /// The error body without the field path (`Required value`, `Invalid value: "x": why`).
    pub message: String,
    /// The field path (`spec.taints[1].effect`), empty when not about a field.
    pub field: String,
}

impl Cause {
    /// `path: body`, as `field.Error.Error()` renders it.
    pub fn to_line(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// The causes of an Invalid status as its message ends (`ErrorList.ToAggregate`): the one cause,
/// or `[a, b]`.
fn aggregate(causes: &[Cause]) -> String {
    let lines: Vec<String> = causes.iter().map(Cause::to_line).collect();
    if lines.len() == 1 {
        lines[0].clone()
    } else {
        format!("[{}]", lines.join(", "))
    }
}

/// An error answer: HTTP code, `reason`, `message`, `details`.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status code (also `Status.code`).
    pub code: u16,
    /// `Status.reason` (`NotFound`, `Conflict`, ...); empty for reasonless errors.
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind` (the resource plural for most errors, the Kind for Invalid).
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds` (and a `Retry-After` header).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// 401 `Unauthorized`, as the authentication filter answers a bad or missing credential
    /// (`responsewriters.UnauthorizedNegotiated`).
    pub fn unauthorized() -> ApiError {
        ApiError::plain(401, "Unauthorized", "Unauthorized")
    }

    /// An error without details.
    pub fn plain(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
            retry_after: None,
        }
    }

    fn about(mut self, res: &Resource, name: &str) -> ApiError {
        self.name = (!name.is_empty()).then(|| name.to_string());
        self.group = (!res.group.is_empty()).then(|| res.group.to_string());
        self.kind = Some(res.plural.to_string());
        self
    }

    /// 404 `nodes "x" not found` (`errors.NewNotFound`).
    pub fn not_found(res: &Resource, name: &str) -> ApiError {
        ApiError::plain(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", res.qualified()),
        )
        .about(res, name)
    }

    /// 404 for a namespace that does not exist (the NamespaceLifecycle admission plugin).
    pub fn namespace_not_found(ns: &str) -> ApiError {
        let mut e = ApiError::plain(404, "NotFound", format!("namespaces \"{ns}\" not found"));
        e.name = Some(ns.to_string());
        e.kind = Some("namespaces".into());
        e
    }

    /// 409 AlreadyExists on create.
    pub fn already_exists(res: &Resource, name: &str) -> ApiError {
        ApiError::plain(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", res.qualified()),
        )
        .about(res, name)
    }

    /// 409 Conflict for a stale `metadata.resourceVersion` (`errors.NewConflict` with
    /// `registry.OptimisticLockErrorMsg`).
    pub fn conflict(res: &Resource, name: &str) -> ApiError {
        ApiError::conflict_with(
            res,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with a custom reason text (`Operation cannot be fulfilled on ...: <why>`).
    pub fn conflict_with(res: &Resource, name: &str, why: &str) -> ApiError {
        ApiError::plain(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                res.qualified()
            ),
        )
        .about(res, name)
    }

    /// 422 Invalid (`errors.NewInvalid`): `Node "n1" is invalid: <one>` or `... [a, b]`.
    pub fn invalid(res: &Resource, name: &str, causes: Vec<Cause>) -> ApiError {
        let agg = aggregate(&causes);
        let mut e = ApiError::plain(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {agg}", res.qualified_kind()),
        );
        e.name = Some(name.to_string());
        e.group = (!res.group.is_empty()).then(|| res.group.to_string());
        e.kind = Some(res.kind.to_string());
        e.causes = causes;
        e
    }

    /// 422 Invalid for a request's query (`ValidateListOptions`): `ListOptions.meta.k8s.io ""
    /// is invalid: <one>` or `... [a, b]`, with the causes.
    pub fn invalid_list_options(causes: Vec<Cause>) -> ApiError {
        let agg = aggregate(&causes);
        let mut e = ApiError::plain(
            422,
            "Invalid",
            format!("ListOptions.meta.k8s.io \"\" is invalid: {agg}"),
        );
        e.group = Some("meta.k8s.io".into());
        e.kind = Some("ListOptions".into());
        e.causes = causes;
        e
    }

    /// 504 Timeout for a read at a revision the store has not reached (the real server waits a
    /// few seconds for it first), with `Retry-After: 1`.
    pub fn too_large_resource_version(asked: u64, current: u64) -> ApiError {
        let mut e = ApiError::plain(
            504,
            "Timeout",
            format!("Too large resource version: {asked}, current: {current}"),
        );
        e.retry_after = Some(1);
        e
    }

    /// 422 for a patch whose result does not decode into the type: upstream wraps the decode error
    /// as a field error on `patch` with an empty kind and name.
    pub fn invalid_patch(patch: &str, why: &str) -> ApiError {
        let cause = Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {}: {why}", quote(patch)),
            field: "patch".into(),
        };
        let mut e = ApiError::plain(
            422,
            "Invalid",
            format!(" \"\" is invalid: {}", cause.to_line()),
        );
        e.causes = vec![cause];
        e
    }

    /// 422 from a JSON patch that failed to apply (`errors.NewGenericServerResponse(422, ...)`):
    /// a generic message and the patch library's text as an `UnexpectedServerResponse` cause.
    pub fn json_patch_failed(why: &str) -> ApiError {
        let mut e = ApiError::plain(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        );
        e.causes = vec![Cause {
            reason: "UnexpectedServerResponse".into(),
            message: why.to_string(),
            field: String::new(),
        }];
        e
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::plain(400, "BadRequest", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError::plain(405, "MethodNotAllowed", message)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> ApiError {
        ApiError::plain(415, "UnsupportedMediaType", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::plain(500, "InternalError", message)
    }

    /// 404 for a path the server does not serve (the real server's reasonless "page not found"
    /// Status for unknown resources).
    pub fn no_route() -> ApiError {
        ApiError::plain(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 410 Expired (`too old resource version: 5 (10)`), as a watch ERROR event or a list answer.
    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::plain(410, "Expired", message)
    }

    /// The `Status` object for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        let mut details = serde_json::Map::new();
        if let Some(n) = &self.name {
            details.insert("name".into(), json!(n));
        }
        if let Some(g) = &self.group {
            details.insert("group".into(), json!(g));
        }
        if let Some(k) = &self.kind {
            details.insert("kind".into(), json!(k));
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    let mut m = serde_json::Map::new();
                    m.insert("reason".into(), json!(c.reason));
                    m.insert("message".into(), json!(c.message));
                    if !c.field.is_empty() {
                        m.insert("field".into(), json!(c.field));
                    }
                    Value::Object(m)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(r) = self.retry_after {
            details.insert("retryAfterSeconds".into(), json!(r));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        if self.reason.is_empty()
            && let Some(m) = status.as_object_mut()
        {
            m.remove("reason");
        }
        status
    }
}

/// Go's `%q`-style quoting, close enough for messages (JSON string escaping).
pub fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}
