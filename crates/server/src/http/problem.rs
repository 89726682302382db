//! Errors as problem documents (RFC 9457): `application/problem+json` with the HTTP status,
//! a stable `code` (the operation layer's [`mnemon::Code`], or one of the server's own:
//! `unauthorized`, `too_large`, `timeout`, `overloaded`, `no_route`, `method_not_allowed`),
//! a `type` naming that code, a title and a detail. A server-side failure (5xx) says what
//! kind of failure it was, never its internals: those go to the server's log.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answer.
#[derive(Debug)]
pub struct Problem {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code.
    pub code: &'static str,
    /// What went wrong, for the caller.
    pub detail: String,
    /// Seconds after which a retry may succeed (`Retry-After`).
    pub retry_after: Option<u64>,
}

impl Problem {
    /// A problem of `status` and `code`, saying `detail`.
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Problem {
        Problem { status, code, detail: detail.into(), retry_after: None }
    }

    /// No token, or one not in force.
    pub fn unauthorized() -> Problem {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid token is required: `Authorization: Bearer mnemon_...`",
        )
    }

    /// A token that does not reach this namespace or operation.
    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::FORBIDDEN, "forbidden", detail)
    }

    /// A malformed request.
    pub fn invalid(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "invalid_input", detail)
    }

    /// The server has no room for the request now.
    pub fn overloaded() -> Problem {
        Problem {
            retry_after: Some(1),
            ..Problem::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", "the server is busy; retry shortly")
        }
    }
}

impl From<mnemon::Error> for Problem {
    fn from(e: mnemon::Error) -> Problem {
        let code = e.code();
        let status = StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let detail = if status.is_server_error() {
            tracing::warn!(code = code.as_str(), "{e}");
            match code {
                mnemon::Code::Damaged => {
                    "the database file is damaged; the server refuses writes (see `mnemon check`)"
                }
                _ => "the database could not be used just now",
            }
            .to_string()
        } else {
            e.to_string()
        };
        Problem::new(status, code.as_str(), detail)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let title = self.status.canonical_reason().unwrap_or("Error");
        let body = json!({
            "type": format!("urn:mnemon:problem:{}", self.code),
            "title": title,
            "status": self.status.as_u16(),
            "code": self.code,
            "detail": self.detail,
        });
        let mut response = (self.status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let Some(s) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        response
    }
}
