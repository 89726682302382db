//! The HTTP API: the [`routes`], the guard every request passes (Host and Origin), the
//! check of its token, and the run of its operation on the blocking pool, at most
//! [`Config::queue`] at once (a request beyond that is answered 503 with `Retry-After` rather
//! than queued without bound).

pub(crate) mod app;
pub mod args;
pub(crate) mod events;
mod guard;
pub mod metrics;
pub mod openapi;
pub(crate) mod problem;
pub mod routes;
mod transfer;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, on, post};
use serde_json::{Map, Value, json};

pub use app::{App, CONSISTENCY_HEADER, Cluster, Config};
pub use problem::Problem;

use crate::tokens::Scope;
use app::{bearer, blocking, header_ns, query_pairs, read_body, read_json};

impl App {
    /// The router of every route.
    pub fn router(&self) -> Router {
        let mut by_path: Vec<(&'static str, MethodRouter<App>)> = Vec::new();
        for r in routes::ROUTES {
            let op = r.op;
            let handler = move |state: State<App>,
                                path: Path<HashMap<String, String>>,
                                query: RawQuery,
                                req: Request| { call(state, op, path, query, req) };
            let filter = axum::routing::MethodFilter::try_from(r.method.clone())
                .unwrap_or(axum::routing::MethodFilter::POST);
            match by_path.iter_mut().find(|(p, _)| *p == r.path) {
                Some((_, m)) => *m = std::mem::take(m).on(filter, handler),
                None => by_path.push((r.path, on(filter, handler))),
            }
        }
        let mut router = Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(readyz))
            .route("/v1/operations", get(operations))
            .route(
                "/metrics",
                get(|State(app): State<App>| async move {
                    let capacity = app.0.config.queue.max(1);
                    let running = capacity.saturating_sub(app.0.queue.available_permits());
                    (
                        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                        app.0.metrics.render(running, capacity),
                    )
                }),
            )
            .route(
                "/openapi.json",
                get(|State(app): State<App>| async move {
                    ([(header::CONTENT_TYPE, "application/json")], app.0.openapi.clone())
                }),
            )
            .route("/v1/ns/{ns}/ops/{op}", post(call_named))
            .route("/v1/ops/{op}", post(call_named))
            .route("/v1/ns/{ns}/events", get(events::stream))
            .route("/v1/ns/{ns}/export", get(transfer::export))
            .route("/v1/export", get(transfer::export_all))
            .route("/v1/ns/{ns}/import", post(transfer::import));
        for (path, m) in by_path {
            router = router.route(path, m);
        }
        // MCP's Streamable HTTP transport: the caller is authenticated here, the tools run in
        // its session (see `crate::mcp::Caller`).
        let mcp = crate::mcp::http_service(
            self.db().clone(),
            self.0.config.mcp_max_reply,
            self.0.config.allowed_hosts.clone(),
            self.0.config.body_limit,
            Arc::clone(&self.0.mcp_manager),
        );
        let mcp = Router::new()
            .route_service("/mcp", mcp)
            .route_layer(middleware::from_fn_with_state(self.clone(), mcp_caller));
        router
            .merge(mcp)
            .merge(crate::ui::router())
            .fallback(|| async {
                Problem::new(StatusCode::NOT_FOUND, "no_route", "no such route; see /v1/operations")
            })
            .method_not_allowed_fallback(|| async {
                Problem::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "method_not_allowed",
                    "this route does not take that method",
                )
            })
            .layer(middleware::from_fn_with_state(self.clone(), guard))
            .layer(middleware::from_fn_with_state(self.clone(), track))
            .with_state(self.clone())
    }
}

/// The header that carries a request's id, in and out.
const REQUEST_ID: &str = "x-request-id";

/// Give a request its id (the caller's `X-Request-Id` when it is a sensible one, else a new
/// one), answer it in `X-Request-Id`, run the request in a span carrying it (so every log
/// event of the request names it), log it (`debug`; a 5xx at `warn`), and count it for
/// `/metrics`: its method, its route's template and its status.
async fn track(State(app): State<App>, req: Request, next: Next) -> Response {
    use tracing::Instrument;
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = req.method().to_string();
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            (1..=64).contains(&v.len())
                && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        })
        .map_or_else(new_request_id, str::to_string);
    let span = tracing::info_span!("request", request_id = %id, method = %method, route = %route);
    let started = std::time::Instant::now();
    let mut response = next.run(req).instrument(span.clone()).await;
    let took = started.elapsed();
    let status = response.status().as_u16();
    app.0.metrics.observe(&method, &route, status, took);
    let ms = took.as_secs_f64() * 1e3;
    span.in_scope(|| {
        if status >= 500 {
            tracing::warn!(status, ms, "answered");
        } else {
            tracing::debug!(status, ms, "answered");
        }
    });
    if let Ok(v) = axum::http::HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, v);
    }
    response
}

/// A new request id: 16 hex digits, random.
fn new_request_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// Refuse a request naming a host the server does not answer for (DNS rebinding), coming from
/// a web page of a foreign origin, or declaring a body over the limit; and put every answer
/// in the server's forms on its way out ([`guard::finish`]).
async fn guard(State(app): State<App>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let refused = refusal(&app, &req);
    let response = match refused {
        Some(r) => r,
        None => next.run(req).await,
    };
    guard::finish(&path, response).await
}

/// Why `req` is refused before it runs, if it is.
fn refusal(app: &App, req: &Request) -> Option<Response> {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    if !app.host_allowed(host) {
        return Some(
            Problem::new(
                StatusCode::FORBIDDEN,
                "host_not_allowed",
                "the Host header names a host this server does not answer for (--allow-host)",
            )
            .into_response(),
        );
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let authority = origin.to_str().ok().and_then(|o| o.split_once("://")).map(|(_, a)| a);
        if !authority.is_some_and(|a| app.host_allowed(a)) {
            return Some(
                Problem::new(
                    StatusCode::FORBIDDEN,
                    "origin_not_allowed",
                    "requests from this web origin are refused",
                )
                .into_response(),
            );
        }
    }
    if guard::declared_too_large(req, app.0.config.body_limit) {
        return Some(guard::too_large(req.uri().path(), app.0.config.body_limit));
    }
    None
}

/// Authenticate an MCP request and put its [`crate::mcp::Caller`] in its extensions: the
/// namespace named by the `ns` query parameter, the `Mnemon-Namespace` header, or the token
/// when it names one. Each tool call checks the scope it needs.
async fn mcp_caller(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let token = match bearer(req.headers(), app.0.config.auth) {
        Ok(t) => t,
        Err(p) => return p.into_response(),
    };
    let named = query_pairs(req.uri().query())
        .into_iter()
        .find(|(k, _)| k == "ns")
        .map(|(_, v)| v)
        .or_else(|| header_ns(req.headers()));
    let resolve = {
        let app = app.clone();
        let token = token.clone();
        move || -> Result<crate::mcp::Caller, Problem> {
            let (session, scope) = app.authorize(token.as_deref(), named.as_deref(), Scope::Read)?;
            Ok(crate::mcp::Caller { session, scope, slots: Some(Arc::clone(&app.0.queue)) })
        }
    };
    match blocking(resolve).await {
        Ok(Ok(caller)) => {
            req.extensions_mut().insert(caller);
            let key = token.unwrap_or_default();
            let opens = guard::Sessions::opens(&req);
            if opens && let Err(full) = app.0.mcp_sessions.admit(&key).await {
                return full;
            }
            let method = req.method().clone();
            // Each message is judged as stdio's framing layer judges a line: what rmcp would
            // answer with no id, or not at all, gets its JSON-RPC error here.
            let json = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim_start().starts_with("application/json"));
            let req = if method == axum::http::Method::POST && json {
                let (parts, body) = req.into_parts();
                let bytes = match read_body(&app, body).await {
                    Ok(b) => b,
                    Err(p) => return guard::rpc_error(p.status, &p.detail, None),
                };
                match crate::mcp::judge(&bytes) {
                    crate::mcp::Verdict::Pass => Request::from_parts(parts, Body::from(bytes)),
                    crate::mcp::Verdict::Skip => return StatusCode::ACCEPTED.into_response(),
                    crate::mcp::Verdict::Reply(r) => {
                        let mut answer = (StatusCode::BAD_REQUEST, r).into_response();
                        answer.headers_mut().insert(
                            header::CONTENT_TYPE,
                            axum::http::HeaderValue::from_static("application/json"),
                        );
                        return answer;
                    }
                }
            } else {
                req
            };
            let response = next.run(req).await;
            if opens {
                app.0.mcp_sessions.opened(&key, &response);
            }
            guard::closed(&method, response)
        }
        Ok(Err(p)) => p.into_response(),
        Err(_) => {
            Problem::new(StatusCode::INTERNAL_SERVER_ERROR, "unavailable", "the request stopped unexpectedly")
                .into_response()
        }
    }
}

async fn readyz(State(app): State<App>) -> Response {
    let db = app.db().clone();
    let ready = blocking(move || db.snapshot().is_ok() && db.store().damage().is_none()).await;
    if ready.unwrap_or(false) {
        "ready\n".into_response()
    } else {
        Problem::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "the database is not ready")
            .into_response()
    }
}

/// The operations: name, title, description, flags, and the scope a token needs.
async fn operations(State(app): State<App>) -> Response {
    let list: Vec<Value> = app
        .0
        .catalog
        .entries()
        .iter()
        .map(|e| {
            json!({"name": e.name, "title": e.title, "description": e.description, "read_only": e.read_only,
                   "destructive": e.destructive, "scope": Scope::needed_for(e).as_str()})
        })
        .collect();
    axum::Json(json!({ "operations": list })).into_response()
}

/// `POST /v1/ns/{ns}/ops/{op}` and `POST /v1/ops/{op}`.
async fn call_named(
    state: State<App>,
    Path(params): Path<HashMap<String, String>>,
    query: RawQuery,
    req: Request,
) -> Result<Response, Problem> {
    let Some(entry) = params.get("op").and_then(|op| state.0.0.catalog.get(op)) else {
        return Err(Problem::new(StatusCode::NOT_FOUND, "no_route", "no such operation; see /v1/operations"));
    };
    let op = entry.name;
    let mut params = params;
    params.remove("op");
    call(state, op, Path(params), query, req).await
}

/// Run operation `op` for a request: its token checked, its arguments read from the path,
/// the query string or the body.
async fn call(
    State(app): State<App>,
    op: &'static str,
    Path(params): Path<HashMap<String, String>>,
    RawQuery(query): RawQuery,
    req: Request,
) -> Result<Response, Problem> {
    let entry = app
        .0
        .catalog
        .get(op)
        .cloned()
        .ok_or_else(|| Problem::new(StatusCode::NOT_FOUND, "no_route", "no such operation"))?;
    let (parts, body) = req.into_parts();
    let token = bearer(&parts.headers, app.0.config.auth)?;
    let pairs = query_pairs(query.as_deref());
    let mut args = if routes::takes_query(&parts.method) {
        app.0.shapes.get(op).map(|s| s.read(&pairs)).unwrap_or(Ok(Map::new())).map_err(Problem::invalid)?
    } else {
        read_json(&app, body).await?
    };
    if let Some(id) = params.get("id") {
        match args.get("id") {
            Some(Value::String(given)) if given != id => {
                return Err(Problem::invalid("the body's `id` differs from the path's"));
            }
            _ => {
                args.insert("id".into(), Value::String(id.clone()));
            }
        }
    }
    let named = params
        .get("ns")
        .cloned()
        .or_else(|| header_ns(&parts.headers))
        .or_else(|| pairs.iter().find(|(k, _)| k == "ns").map(|(_, v)| v.clone()));
    // A namespace of a partition hosted elsewhere: there (307 keeps the method and body).
    if let (Some(cluster), Some(ns)) = (app.0.config.cluster.as_deref(), named.as_deref())
        && let Some(base) = cluster.elsewhere(ns)
    {
        let target = format!(
            "{}{}",
            base.trim_end_matches('/'),
            parts.uri.path_and_query().map_or("", |p| p.as_str())
        );
        return Ok((StatusCode::TEMPORARY_REDIRECT, [(axum::http::header::LOCATION, target)]).into_response());
    }
    let wait_for = match parts.headers.get(CONSISTENCY_HEADER) {
        Some(v) => {
            Some(v.to_str().map_err(|_| Problem::invalid("the consistency token is not text"))?.to_string())
        }
        None => None,
    };
    let slot = app.slot()?;
    let run = {
        let app = app.clone();
        move || -> Result<(Vec<u8>, Option<String>), Problem> {
            let _slot = slot;
            let consistency = app.0.config.cluster.as_deref();
            if let Some(c) = consistency {
                // What an earlier request on this thread left.
                c.take();
                if let Some(t) = &wait_for {
                    c.wait(t).map_err(|(malformed, reason)| {
                        if malformed {
                            Problem::invalid(reason)
                        } else {
                            Problem::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", &reason)
                        }
                    })?;
                }
            }
            let session = app.session(token.as_deref(), named.as_deref(), Scope::needed_for(&entry))?;
            let out = entry.call_json(&session, Value::Object(args));
            let written = consistency.and_then(|c| c.take());
            Ok((out?, written))
        }
    };
    let (out, written) = blocking(run).await.map_err(|_| {
        Problem::new(StatusCode::INTERNAL_SERVER_ERROR, "unavailable", "the operation stopped unexpectedly")
    })??;
    // The response written once, straight from the operation's output.
    let mut response =
        ([(header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"))], out)
            .into_response();
    if let Some(t) = written.and_then(|t| axum::http::HeaderValue::from_str(&t).ok()) {
        response.headers_mut().insert(CONSISTENCY_HEADER, t);
    }
    Ok(response)
}
