//! What every answer of the server passes through on its way out, and what `/mcp` (rmcp's
//! Streamable HTTP service) needs around it:
//!
//! * a body larger than [`super::Config::body_limit`] is refused by its `Content-Length`
//!   before a byte of it is read;
//! * every error is a problem document (`application/problem+json`): one that a layer below
//!   wrote otherwise (axum's path and query rejections, rmcp's plain-text 4xx) is rewritten
//!   (the web view's HTML error pages, for people, are kept),
//!   its text kept as the detail; on `/mcp` errors are JSON-RPC error objects instead
//!   (`application/json`, `id` null: the request could not be read), which MCP's transport
//!   allows;
//! * a 401 says how to authenticate (`WWW-Authenticate: Bearer`);
//! * MCP sessions are capped per token and in all (a request that would open one beyond the
//!   caps answers 503 with `Retry-After`), and closing one answers 204 (rmcp answers 202,
//!   which the official SDK reports as a failed termination).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

use super::problem::Problem;

/// The path of MCP's transport.
pub(crate) const MCP_PATH: &str = "/mcp";

/// The header naming an MCP session.
const SESSION: &str = "mcp-session-id";

/// The most bytes of a plain-text error kept as a problem's detail.
const DETAIL_MAX: usize = 512;

/// Whether the request's `Content-Length` already says its body is over `limit`.
pub(crate) fn declared_too_large(req: &Request, limit: usize) -> bool {
    req.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u128>().ok())
        .is_some_and(|n| n > limit as u128)
}

/// The answer to a body over the limit, in the form of `path`'s errors.
pub(crate) fn too_large(path: &str, limit: usize) -> Response {
    let p = Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!("the body is larger than {limit} bytes (--max-body-bytes)"),
    );
    if path == MCP_PATH { rpc_error(p.status, &p.detail, None) } else { p.into_response() }
}

/// A JSON-RPC error answer (id null) with HTTP status `status`.
pub(crate) fn rpc_error(status: StatusCode, message: &str, retry_after: Option<u64>) -> Response {
    let code = match status {
        StatusCode::BAD_REQUEST | StatusCode::UNSUPPORTED_MEDIA_TYPE | StatusCode::PAYLOAD_TOO_LARGE => {
            -32600
        }
        s if s.is_server_error() => -32603,
        _ => -32000,
    };
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut r = (status, body.to_string()).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(s) = retry_after {
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    r
}

/// An answer on its way out: errors in the server's forms, a 401 saying how to authenticate.
pub(crate) async fn finish(path: &str, response: Response) -> Response {
    let status = response.status();
    let mut response = if status.is_client_error() || status.is_server_error() {
        let kind = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let json = kind.starts_with("application/problem+json") || kind.starts_with("application/json");
        // The web view's error pages are for people: kept as they are.
        let page = kind.starts_with("text/html");
        if page
            || json
                && (path != MCP_PATH
                    || !kind.starts_with("application/problem+json")
                    || status == StatusCode::UNAUTHORIZED)
        {
            response
        } else {
            let retry =
                response.headers().get(header::RETRY_AFTER).and_then(|v| v.to_str().ok()?.parse().ok());
            let detail = text_of(response).await;
            if path == MCP_PATH {
                rpc_error(status, &detail, retry)
            } else {
                Problem { retry_after: retry, ..Problem::new(status, code_of(status), detail) }
                    .into_response()
            }
        }
    } else {
        response
    };
    if response.status() == StatusCode::UNAUTHORIZED
        && !response.headers().contains_key(header::WWW_AUTHENTICATE)
    {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"mnemon\""));
    }
    response
}

/// The text of an error answer, cut to [`DETAIL_MAX`] bytes on a character boundary (a
/// problem document's `detail`, or a JSON-RPC error's `message`).
async fn text_of(response: Response) -> String {
    let status = response.status();
    let bytes = http_body_util::Limited::new(response.into_body(), 64 << 10)
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    // A problem document (rewritten for /mcp): its detail.
    let text = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("detail").and_then(|d| d.as_str()).map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&bytes).trim().to_string());
    let text = if text.is_empty() { status.canonical_reason().unwrap_or("error").to_string() } else { text };
    let mut end = text.len().min(DETAIL_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The stable code of a status the server's own problems do not name.
fn code_of(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "invalid_input",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::NOT_ACCEPTABLE => "not_acceptable",
        StatusCode::REQUEST_TIMEOUT => "timeout",
        StatusCode::CONFLICT => "conflict",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UNPROCESSABLE_ENTITY => "invalid_input",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        s if s.is_server_error() => "internal",
        _ => "error",
    }
}

/// The MCP sessions of a server, capped per token and in all.
pub(crate) struct Sessions {
    manager: Arc<LocalSessionManager>,
    by_token: Mutex<HashMap<String, Vec<Arc<str>>>>,
    max_total: usize,
    max_per_token: usize,
}

impl Sessions {
    pub(crate) fn new(manager: Arc<LocalSessionManager>, max_total: usize, max_per_token: usize) -> Sessions {
        Sessions { manager, by_token: Mutex::default(), max_total, max_per_token }
    }

    /// Whether `req` would open a session: a POST naming none (rmcp opens one for an
    /// `initialize` of a protocol that has sessions).
    pub(crate) fn opens(req: &Request) -> bool {
        req.method() == Method::POST && !req.headers().contains_key(SESSION)
    }

    /// Room for one more session of `token`, or the 503 answer.
    pub(crate) async fn admit(&self, token: &str) -> Result<(), Response> {
        let live = self.manager.sessions.read().await;
        let total = live.len();
        let mine = {
            let mut by = self.by_token.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Forget the sessions that ended (closed, idle, never initialized).
            by.retain(|_, ids| {
                ids.retain(|id| live.contains_key(id));
                !ids.is_empty()
            });
            by.get(token).map_or(0, Vec::len)
        };
        drop(live);
        if mine >= self.max_per_token {
            return Err(rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "this token has {mine} MCP sessions open, the most it may (--max-mcp-sessions-per-token); close one (DELETE /mcp) or wait for an idle one to end"
                ),
                Some(5),
            ));
        }
        if total >= self.max_total {
            return Err(rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("the server has {total} MCP sessions open, the most it keeps (--max-mcp-sessions)"),
                Some(5),
            ));
        }
        Ok(())
    }

    /// After a request of `token`: remember the session its answer opened.
    pub(crate) fn opened(&self, token: &str, response: &Response) {
        if let Some(id) = response.headers().get(SESSION).and_then(|v| v.to_str().ok()) {
            let mut by = self.by_token.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            by.entry(token.to_string()).or_default().push(Arc::from(id));
        }
    }
}

/// rmcp's answer to closing a session (202) as 204: the official SDK counts 200 and 204 as
/// a session terminated.
pub(crate) fn closed(method: &Method, mut response: Response) -> Response {
    if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = Body::empty();
        response.headers_mut().remove(header::CONTENT_TYPE);
        response.headers_mut().remove(header::CONTENT_LENGTH);
    }
    response
}
