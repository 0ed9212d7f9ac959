//! Where `explain` reads its objects from, as the person names them: a file, standard input
//! (`-`), or the cluster (`NAMESPACE/NAME` for a pod, `NAME` for a node), read through the
//! kubeconfig rules `kubectl` follows (`api::connect_as_kubectl`). The text read goes through the
//! same decoding and validation whatever its source.

use std::path::PathBuf;
use std::time::Duration;

use crate::core::names;

/// Any one read from the API server: a person is waiting.
const GET_TIMEOUT: Duration = Duration::from_secs(30);

/// One object argument of `explain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectArg {
    /// `-`: YAML or JSON on standard input.
    Stdin,
    /// A file that exists.
    File(PathBuf),
    /// A pod in the cluster.
    Pod { namespace: String, name: String },
    /// A node in the cluster.
    Node { name: String },
}

impl ObjectArg {
    /// `--pod`: `-`, a file that exists, or `NAMESPACE/NAME`.
    pub fn pod(arg: &str) -> Result<ObjectArg, String> {
        if let Some(a) = Self::local(arg) {
            return Ok(a);
        }
        match arg.split_once('/') {
            // A namespace is a DNS label; a pod name a DNS subdomain (docs/semantics.md §8).
            Some((ns, name)) if names::is_dns_label(ns) && names::is_dns_subdomain(name) => {
                Ok(ObjectArg::Pod {
                    namespace: ns.to_string(),
                    name: name.to_string(),
                })
            }
            _ => Err(format!(
                "--pod {arg:?}: no such file, and not NAMESPACE/NAME of a pod (or - for standard input)"
            )),
        }
    }

    /// `--node`: `-`, a file that exists, or the name of a Node.
    pub fn node(arg: &str) -> Result<ObjectArg, String> {
        if let Some(a) = Self::local(arg) {
            return Ok(a);
        }
        if names::is_dns_subdomain(arg) {
            return Ok(ObjectArg::Node {
                name: arg.to_string(),
            });
        }
        Err(format!(
            "--node {arg:?}: no such file, and not the name of a node (or - for standard input)"
        ))
    }

    fn local(arg: &str) -> Option<ObjectArg> {
        if arg == "-" {
            return Some(ObjectArg::Stdin);
        }
        let path = PathBuf::from(arg);
        path.exists().then_some(ObjectArg::File(path))
    }

    /// Whether the object is read from the cluster.
    pub fn is_live(&self) -> bool {
        matches!(self, ObjectArg::Pod { .. } | ObjectArg::Node { .. })
    }

    /// How error messages name the object when it has no `metadata.name`.
    pub fn shown(&self) -> String {
        match self {
            ObjectArg::Stdin => "(standard input)".into(),
            ObjectArg::File(p) => p.display().to_string(),
            ObjectArg::Pod { namespace, name } => format!("{namespace}/{name}"),
            ObjectArg::Node { name } => name.clone(),
        }
    }

    /// The object's URL path on the API server, for a live object.
    fn api_path(&self) -> Option<String> {
        match self {
            ObjectArg::Pod { namespace, name } => {
                Some(format!("/api/v1/namespaces/{namespace}/pods/{name}"))
            }
            ObjectArg::Node { name } => Some(format!("/api/v1/nodes/{name}")),
            _ => None,
        }
    }
}

/// Why a live object could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("{kind} {shown}: {message}")]
    Api {
        kind: &'static str,
        shown: String,
        message: String,
    },
    #[error("{kind} {shown}: no answer from the API server within {}s", GET_TIMEOUT.as_secs())]
    Timeout { kind: &'static str, shown: String },
}

/// The object's JSON as the API server returns it.
pub async fn get_text(
    client: &kube::Client,
    kind: &'static str,
    arg: &ObjectArg,
) -> Result<String, LiveError> {
    let shown = arg.shown();
    let api = |message: String| LiveError::Api {
        kind,
        shown: shown.clone(),
        message,
    };
    let path = arg
        .api_path()
        .ok_or_else(|| api("not an object in the cluster".into()))?;
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| api(e.to_string()))?;
    match tokio::time::timeout(GET_TIMEOUT, client.request_text(request)).await {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(kube::Error::Api(status))) if status.code == 404 => {
            Err(api("not found (and no file of that name)".into()))
        }
        Ok(Err(kube::Error::Api(status))) => Err(api(format!(
            "the API server answered {} {}: {}",
            status.code, status.reason, status.message
        ))),
        Ok(Err(e)) => Err(api(crate::api::kubeconfig::redact_quoted(&e.to_string()))),
        Err(_) => Err(LiveError::Timeout {
            kind,
            shown: shown.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_is_stdin_a_file_or_a_name_in_that_order() {
        assert_eq!(ObjectArg::pod("-"), Ok(ObjectArg::Stdin));
        assert_eq!(
            ObjectArg::pod("Cargo.toml"),
            Ok(ObjectArg::File("Cargo.toml".into()))
        );
        assert_eq!(
            ObjectArg::pod("shop/web-1"),
            Ok(ObjectArg::Pod {
                namespace: "shop".into(),
                name: "web-1".into()
            })
        );
        assert_eq!(
            ObjectArg::node("n1.example"),
            Ok(ObjectArg::Node {
                name: "n1.example".into()
            })
        );
        // Neither a file nor a name: the message says what was expected.
        let e = ObjectArg::pod("missing/dir/pod.yaml").expect_err("not a pod name");
        assert!(e.contains("NAMESPACE/NAME"), "{e}");
        assert!(
            ObjectArg::pod("web-1").is_err(),
            "a pod needs its namespace"
        );
        assert!(ObjectArg::node("Bad_Name").is_err());
    }
}
