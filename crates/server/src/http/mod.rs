//! The HTTP API: the [`routes`], the guard every request passes (Host and Origin), the
//! check of its token, and the run of its operation on the blocking pool, at most
//! [`Config::queue`] at once (a request beyond that is answered 503 with `Retry-After` rather
//! than queued without bound).

pub mod args;
pub(crate) mod events;
mod guard;
pub mod metrics;
pub mod openapi;
mod problem;
pub mod routes;
mod transfer;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, on, post};
use http_body_util::BodyExt;
use mnemon::Db;
use mnemon::ops::{Catalog, Session};
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use problem::Problem;

use crate::tokens::{self, Scope, TokenInfo};
use args::QueryShapes;

/// How the API behaves.
#[derive(Clone, Debug)]
pub struct Config {
    /// Whether requests need a token (`false`: `--no-auth`, every namespace open).
    pub auth: bool,
    /// The `host[:port]` values a request's `Host` (and `Origin`, when it has one) may name.
    pub allowed_hosts: Vec<String>,
    /// The largest request body, in bytes (an import's JSON lines included).
    pub body_limit: usize,
    /// How long a request's body may take to arrive.
    pub body_timeout: Duration,
    /// The most operations running at once; a request beyond them is answered 503.
    pub queue: usize,
    /// The largest reply an MCP tool call may give, in bytes.
    pub mcp_max_reply: usize,
    /// The most MCP sessions open at once (a request opening one more answers 503).
    pub mcp_sessions: usize,
    /// The most MCP sessions one token may have open at once.
    pub mcp_sessions_per_token: usize,
    /// How long an MCP session may stay unused before it is closed.
    pub mcp_idle: Duration,
    /// The node of a cluster this server is (see [`Cluster`]); none for a single file.
    pub cluster: Option<Arc<dyn Cluster>>,
    /// How browsers sign in to the web view at `/ui` (see [`crate::ui`]).
    pub ui: crate::ui::UiMode,
}

/// The header a write's answer carries its consistency token in, and a read sends it back
/// in to see that write on any node (see [`Cluster`]).
pub const CONSISTENCY_HEADER: &str = "mnemon-consistency";

/// A server that is a node of a cluster (`mnemon serve --cluster`). Read-your-writes across
/// nodes: a write's answer carries a token (the header [`CONSISTENCY_HEADER`]) naming where it
/// is in the log, and a request carrying one waits, a bounded time, until this node has
/// applied that far. And a request for a namespace this node does not host is redirected
/// (307) to a node that does.
pub trait Cluster: Send + Sync + std::fmt::Debug {
    /// Wait until this node has applied `token`; `Err(reason)` if it is malformed (400) or
    /// not applied in time (503). Called on a blocking thread.
    fn wait(&self, token: &str) -> Result<(), (bool, String)>;
    /// The token of the writes the current thread made since the last call, if any. Called
    /// on the blocking thread that ran the operation (and before, to forget what an earlier
    /// request on that thread left).
    fn take(&self) -> Option<String>;
    /// Where namespace `ns` is served if not here: the base URL (`http://host:port`) of a live
    /// node hosting its partition (`None`: here, or no node known).
    fn elsewhere(&self, ns: &str) -> Option<String>;
}

impl Default for Config {
    fn default() -> Self {
        Config {
            auth: true,
            allowed_hosts: Vec::new(),
            body_limit: 32 << 20,
            body_timeout: Duration::from_secs(30),
            queue: 256,
            mcp_max_reply: crate::mcp::MAX_REPLY as usize,
            mcp_sessions: 1024,
            mcp_sessions_per_token: 32,
            mcp_idle: Duration::from_secs(120),
            cluster: None,
            ui: crate::ui::UiMode::default(),
        }
    }
}

/// What every request shares: the database, the operations, the configuration.
#[derive(Clone)]
pub struct App(Arc<Inner>);

struct Inner {
    db: Db,
    catalog: Catalog,
    shapes: HashMap<&'static str, QueryShapes>,
    config: Config,
    queue: Arc<Semaphore>,
    /// The OpenAPI document, written once.
    openapi: bytes::Bytes,
    metrics: metrics::Metrics,
    /// The web view's sign-ins and sessions.
    ui: crate::ui::UiState,
    /// MCP's sessions (rmcp's manager) and their caps.
    mcp_manager: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
    mcp_sessions: guard::Sessions,
}

impl App {
    /// The API over `db`.
    pub fn new(db: Db, config: Config) -> App {
        let catalog = Catalog::new();
        let shapes = catalog
            .entries()
            .iter()
            .map(|e| (e.name, QueryShapes::of(&e.input_schema().to_value())))
            .collect();
        let queue = Arc::new(Semaphore::new(config.queue.max(1)));
        let openapi = serde_json::to_vec_pretty(&openapi::document(&catalog)).unwrap_or_default().into();
        let metrics = metrics::Metrics::new(db.clone());
        let ui = crate::ui::UiState::new(config.ui.clone());
        let mcp_manager = Arc::new(crate::mcp::session_manager(config.mcp_idle));
        let mcp_sessions = guard::Sessions::new(
            Arc::clone(&mcp_manager),
            config.mcp_sessions.max(1),
            config.mcp_sessions_per_token.max(1),
        );
        App(Arc::new(Inner {
            db,
            catalog,
            shapes,
            config,
            queue,
            openapi,
            metrics,
            ui,
            mcp_manager,
            mcp_sessions,
        }))
    }

    /// The web view's state.
    pub(crate) fn ui(&self) -> &crate::ui::UiState {
        &self.0.ui
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.0.db
    }

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

    /// A slot for one operation, or 503 when all are taken.
    fn slot(&self) -> Result<OwnedSemaphorePermit, Problem> {
        Arc::clone(&self.0.queue).try_acquire_owned().map_err(|_| Problem::overloaded())
    }

    /// Whether a `Host` or `Origin` authority may be served.
    fn host_allowed(&self, authority: &str) -> bool {
        let authority = authority.to_ascii_lowercase();
        self.0.config.allowed_hosts.contains(&authority)
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

/// Run `f` on the blocking pool inside the current span (the request's): what it logs names
/// the request.
pub(crate) fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> tokio::task::JoinHandle<R> {
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(f))
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

impl App {
    /// The session a request runs in: its token checked (in force, reaching namespace `named`
    /// or naming one itself, of scope `need` at least), allowed what the token reaches.
    /// Blocking: reads the token's row.
    pub(crate) fn session(
        &self,
        token: Option<&str>,
        named: Option<&str>,
        need: Scope,
    ) -> Result<Session, Problem> {
        self.authorize(token, named, need).map(|(session, _)| session)
    }

    /// [`Self::session`], and the token's scope (`None` without authentication).
    pub(crate) fn authorize(
        &self,
        token: Option<&str>,
        named: Option<&str>,
        need: Scope,
    ) -> Result<(Session, Option<Scope>), Problem> {
        let db = self.db().clone();
        let Some(presented) = token else {
            // No authentication (`--no-auth`): every namespace.
            let ns = named.ok_or_else(|| Problem::invalid(NO_NAMESPACE))?;
            return Ok((Session::new(db, ns)?.allow("*"), None));
        };
        let info = self.token(presented, need)?;
        let ns = named.or(info.sole_namespace()).ok_or_else(|| Problem::invalid(NO_NAMESPACE))?;
        if !info.reaches(ns) {
            return Err(Problem::forbidden(format!("the token does not reach namespace {ns:?}")));
        }
        let mut session = Session::new(db, ns)?;
        for pattern in &info.namespaces {
            session = session.allow(pattern.clone());
        }
        Ok((session, Some(info.scope)))
    }
}

impl App {
    /// A session reaching every namespace, for a request about them all: only without
    /// authentication or with a token for every namespace (`*`) and scope `need`.
    fn session_everywhere(&self, token: Option<&str>, need: Scope) -> Result<Session, Problem> {
        let db = self.db().clone();
        if let Some(presented) = token
            && !self.token(presented, need)?.namespaces.iter().any(|p| p == "*")
        {
            return Err(Problem::forbidden(
                "this needs a token for every namespace (created with --allow-ns '*')",
            ));
        }
        Ok(Session::new(db, "default")?.allow("*"))
    }

    /// The token `presented`, if it is in force (401 if not) and its scope reaches `need`
    /// (403 if not).
    pub(crate) fn token(&self, presented: &str, need: Scope) -> Result<TokenInfo, Problem> {
        let db = self.db();
        let info = match tokens::verify(db, presented, db.now()) {
            Ok(info) => info,
            Err(tokens::TokenError::Db(e)) => return Err(e.into()),
            Err(_) => return Err(Problem::unauthorized()),
        };
        if info.scope < need {
            return Err(Problem::forbidden(format!(
                "the token's scope is {}; this operation needs {}",
                info.scope.as_str(),
                need.as_str()
            )));
        }
        Ok(info)
    }
}

const NO_NAMESPACE: &str =
    "name a namespace: /v1/ns/{ns}/..., the Mnemon-Namespace header or the ns query parameter";

/// The bearer token of a request: required when `auth` is on (401 without one).
fn bearer(headers: &HeaderMap, auth: bool) -> Result<Option<String>, Problem> {
    if !auth {
        return Ok(None);
    }
    let value =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).ok_or_else(Problem::unauthorized)?;
    let (scheme, token) = value.split_once(' ').ok_or_else(Problem::unauthorized)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Problem::unauthorized());
    }
    Ok(Some(token.trim().to_string()))
}

/// The namespace named by the `Mnemon-Namespace` header.
fn header_ns(headers: &HeaderMap) -> Option<String> {
    headers.get("mnemon-namespace").and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// A query string's parameters, decoded.
fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .map(|q| {
            axum::extract::Query::<Vec<(String, String)>>::try_from_uri(
                &format!("/?{q}").parse().unwrap_or_default(),
            )
            .map(|axum::extract::Query(p)| p)
            .unwrap_or_default()
        })
        .unwrap_or_default()
}

/// A request's body, whole: at most [`Config::body_limit`] bytes (413), arriving within
/// [`Config::body_timeout`] (408).
async fn read_body(app: &App, body: Body) -> Result<bytes::Bytes, Problem> {
    let limited = http_body_util::Limited::new(body, app.0.config.body_limit);
    match tokio::time::timeout(app.0.config.body_timeout, limited.collect()).await {
        Err(_) => Err(Problem::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            "the request's body took too long to arrive",
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the body is larger than {} bytes (--max-body-bytes)", app.0.config.body_limit),
        )),
        Ok(Err(_)) => Err(Problem::invalid("the request's body could not be read")),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// A request's body as a JSON object (an empty body is `{}`).
async fn read_json(app: &App, body: Body) -> Result<Map<String, Value>, Problem> {
    let bytes = read_body(app, body).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Problem::invalid("the body must be a JSON object")),
        Err(e) => Err(Problem::invalid(format!("the body is not JSON: {e}"))),
    }
}
