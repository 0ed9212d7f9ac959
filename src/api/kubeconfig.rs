//! Loading a kubeconfig without leaking what it holds: parse errors are reported with file, line
//! and column but never with the file's text (serde's messages quote the offending value, which
//! can be the token line); a bearer token (inline or from `tokenFile`) is trimmed of surrounding
//! whitespace as client-go does, and one that still cannot be an HTTP header value is refused
//! naming the file and the user entry, never the token; user info in the server URL is dropped.

use std::io::Read;
use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use secrecy::{ExposeSecret, SecretString};

/// A token file larger than this is not a token (a wrong path, a device): refused unread.
const MAX_TOKEN_FILE: u64 = 64 * 1024;

/// Why a kubeconfig could not be turned into a client configuration. The messages name the file
/// and the entry, never a credential.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigLoadError {
    #[error("kubeconfig {path}: {detail}")]
    Invalid { path: String, detail: String },
    /// No `--kubeconfig`, `KUBECONFIG` or `~/.kube/config`, and not in a pod.
    #[error(
        "no kubeconfig: give --kubeconfig, set KUBECONFIG or write ~/.kube/config (in-cluster: {detail})"
    )]
    NotFound { detail: String },
    #[error(
        "kubeconfig {path}: user {user:?}: the token contains a control character after trimming \
         surrounding whitespace; an HTTP header cannot carry it (the token is not shown)"
    )]
    BadToken { path: String, user: String },
    #[error(
        "kubeconfig {path}: user {user:?}: tokenFile {file}: {detail} (the token is not shown)"
    )]
    BadTokenFile {
        path: String,
        user: String,
        file: String,
        detail: String,
    },
}

/// Reads `path` into a client configuration for its current context, with the hygiene described
/// in the module documentation.
pub async fn load(path: &Path) -> Result<kube::Config, KubeconfigLoadError> {
    let shown = path.display().to_string();
    let invalid = |detail: String| KubeconfigLoadError::Invalid {
        path: shown.clone(),
        detail,
    };
    let kc = Kubeconfig::read_from(path).map_err(|e| invalid(describe(&e)))?;
    configure(kc, &shown, &KubeConfigOptions::default()).await
}

/// A client configuration found the way `kubectl` finds one, for the commands a person runs:
/// the file given with `--kubeconfig`; else the files listed in `KUBECONFIG`, merged; else
/// `~/.kube/config`; else, in a pod, its ServiceAccount. `context` is `--context` (the file's
/// current context without it). The same hygiene as [`load`].
pub async fn load_as_kubectl(
    explicit: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Config, KubeconfigLoadError> {
    let options = KubeConfigOptions {
        context: context.map(String::from),
        ..KubeConfigOptions::default()
    };
    let invalid = |shown: &str, e: KubeconfigError| KubeconfigLoadError::Invalid {
        path: shown.to_string(),
        detail: describe(&e),
    };
    if let Some(path) = explicit {
        let shown = path.display().to_string();
        let kc = Kubeconfig::read_from(path).map_err(|e| invalid(&shown, e))?;
        return configure(kc, &shown, &options).await;
    }
    // Set but empty counts as unset (client-go's loading rules skip empty entries).
    match Kubeconfig::from_env() {
        Ok(Some(kc)) => return configure(kc, "$KUBECONFIG", &options).await,
        Ok(None) => {}
        Err(e) => return Err(invalid("$KUBECONFIG", e)),
    }
    let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".kube").join("config"));
    if let Some(path) = home.filter(|p| p.exists()) {
        let shown = path.display().to_string();
        let kc = Kubeconfig::read_from(&path).map_err(|e| invalid(&shown, e))?;
        return configure(kc, &shown, &options).await;
    }
    kube::Config::incluster().map_err(|e| KubeconfigLoadError::NotFound {
        detail: e.to_string(),
    })
}

/// A parsed kubeconfig into a client configuration for the context `options` selects.
async fn configure(
    kc: Kubeconfig,
    shown: &str,
    options: &KubeConfigOptions,
) -> Result<kube::Config, KubeconfigLoadError> {
    let user = selected_user(&kc, options.context.as_deref());
    let mut config = kube::Config::from_custom_kubeconfig(kc, options)
        .await
        .map_err(|e| KubeconfigLoadError::Invalid {
            path: shown.to_string(),
            detail: describe(&e),
        })?;
    sanitize_token(&mut config.auth_info, shown, &user)?;
    config.cluster_url = without_userinfo(&config.cluster_url);
    Ok(config)
}

/// The user entry the context selects, the current one when `None` (for messages only).
fn selected_user(kc: &Kubeconfig, context: Option<&str>) -> String {
    context
        .or(kc.current_context.as_deref())
        .and_then(|name| kc.contexts.iter().find(|c| c.name == name))
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.clone())
        .unwrap_or_default()
}

/// A kube error about a kubeconfig, without any of the file's text.
fn describe(e: &KubeconfigError) -> String {
    match e {
        // The YAML parser's message carries a snippet of the file and may quote the offending
        // value: keep its wording and position (line and column are in the message), drop both.
        KubeconfigError::Parse(parse) => {
            let plain = parse.without_snippet().to_string();
            let first = plain.lines().next().unwrap_or("");
            format!("not a valid kubeconfig: {}", redact_quoted(first))
        }
        // The others name files, entries or a cause, never the file's values.
        other => other.to_string(),
    }
}

/// `text` with everything between quotes (", ', `) replaced by `…`: serde messages quote the
/// values they reject (`invalid type: string "…"`), and a value in a kubeconfig can be a secret.
pub fn redact_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut open: Option<char> = None;
    for c in text.chars() {
        match open {
            Some(q) if c == q => {
                out.push('…');
                out.push(c);
                open = None;
            }
            Some(_) => {}
            None => {
                out.push(c);
                if matches!(c, '"' | '\'' | '`') {
                    open = Some(c);
                }
            }
        }
    }
    if open.is_some() {
        out.push('…');
    }
    out
}

/// Whether `token` can follow `Bearer ` in a header: no control characters (the HTTP client
/// would abort the process on one). Tabs are refused too: no real token has one.
fn header_safe(token: &str) -> bool {
    !token.bytes().any(|b| b.is_ascii_control())
}

/// Trims the inline token (or the token file's content) as client-go does and refuses one that
/// still has a control character. A token file that needed trimming is read once here: kube
/// would send its text untrimmed and fail every request.
fn sanitize_token(
    auth: &mut kube::config::AuthInfo,
    path: &str,
    user: &str,
) -> Result<(), KubeconfigLoadError> {
    if let Some(token) = &auth.token {
        let raw = token.expose_secret();
        let trimmed = raw.trim();
        if !header_safe(trimmed) {
            return Err(KubeconfigLoadError::BadToken {
                path: path.to_string(),
                user: user.to_string(),
            });
        }
        if trimmed.len() != raw.len() {
            auth.token = Some(SecretString::from(trimmed.to_string()));
        }
        return Ok(());
    }
    let Some(file) = auth.token_file.clone() else {
        return Ok(());
    };
    let bad = |detail: String| KubeconfigLoadError::BadTokenFile {
        path: path.to_string(),
        user: user.to_string(),
        file: file.clone(),
        detail,
    };
    let mut raw = String::new();
    let read = std::fs::File::open(&file)
        .and_then(|f| f.take(MAX_TOKEN_FILE + 1).read_to_string(&mut raw));
    match read {
        Err(e) => return Err(bad(format!("cannot read it: {e}"))),
        Ok(n) if n as u64 > MAX_TOKEN_FILE => {
            return Err(bad(format!("larger than {MAX_TOKEN_FILE} bytes")));
        }
        Ok(_) => {}
    }
    let trimmed = raw.trim();
    if !header_safe(trimmed) {
        return Err(bad(
            "the token contains a control character after trimming surrounding whitespace".into(),
        ));
    }
    if trimmed.len() != raw.len() {
        // Sent as read now; kube re-reads a clean file itself when it rotates.
        auth.token = Some(SecretString::from(trimmed.to_string()));
        auth.token_file = None;
    }
    Ok(())
}

/// `uri` without `user:password@`: kube never sends it, and the URL shows up in logs and
/// errors.
pub fn without_userinfo(uri: &http::Uri) -> http::Uri {
    let Some(authority) = uri.authority() else {
        return uri.clone();
    };
    let Some((_, host)) = authority.as_str().rsplit_once('@') else {
        return uri.clone();
    };
    let mut parts = uri.clone().into_parts();
    match host.parse() {
        Ok(a) => parts.authority = Some(a),
        Err(_) => return uri.clone(),
    }
    http::Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_are_redacted_and_the_rest_kept() {
        assert_eq!(
            redact_quoted(r#"invalid type: string "s3cr3t", expected a map at line 3, column 9"#),
            r#"invalid type: string "…", expected a map at line 3, column 9"#
        );
        assert_eq!(redact_quoted("unterminated \"abc"), "unterminated \"…");
        assert_eq!(redact_quoted("`a` and 'b'"), "`…` and '…'");
    }

    #[test]
    fn userinfo_is_dropped_from_a_server_url() {
        let u: http::Uri = "https://user:pa55@example.com:6443/base"
            .parse()
            .expect("uri");
        assert_eq!(
            without_userinfo(&u).to_string(),
            "https://example.com:6443/base"
        );
        let plain: http::Uri = "https://example.com:6443".parse().expect("uri");
        assert_eq!(without_userinfo(&plain), plain);
    }

    #[test]
    fn a_token_is_header_safe_only_without_control_characters() {
        assert!(header_safe("abc.DEF-123_~+/="));
        assert!(!header_safe("abc\u{1}def"));
        assert!(!header_safe("abc\ndef"));
        assert!(!header_safe("abc\u{7f}"));
    }
}
