//! What every request shares ([`App`]: the database, the operations, the configuration, the
//! operation slots, the web view's and MCP's sessions) and the helpers every handler uses:
//! the token check, a request's body and query, the blocking pool. Kept apart from the routes
//! (`mod.rs`) so that the handlers of the web view and of the event stream depend on it
//! without depending on the router that mounts them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use mnemon::Db;
use mnemon::ops::{Catalog, Session};
use serde_json::{Map, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::args::QueryShapes;
use super::problem::Problem;
use super::{guard, metrics, openapi};
use crate::tokens::{self, Scope, TokenInfo};
use crate::ui::state::{UiMode, UiState};

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
    pub ui: UiMode,
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
            ui: UiMode::default(),
        }
    }
}

/// What every request shares: the database, the operations, the configuration.
#[derive(Clone)]
pub struct App(pub(crate) Arc<Inner>);

pub(crate) struct Inner {
    pub(crate) db: Db,
    pub(crate) catalog: Catalog,
    pub(crate) shapes: HashMap<&'static str, QueryShapes>,
    pub(crate) config: Config,
    pub(crate) queue: Arc<Semaphore>,
    /// The OpenAPI document, written once.
    pub(crate) openapi: bytes::Bytes,
    pub(crate) metrics: metrics::Metrics,
    /// The web view's sign-ins and sessions.
    pub(crate) ui: UiState,
    /// MCP's sessions (rmcp's manager) and their caps.
    pub(crate) mcp_manager: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
    pub(crate) mcp_sessions: guard::Sessions,
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
        let ui = UiState::new(config.ui.clone());
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
    pub(crate) fn ui(&self) -> &UiState {
        &self.0.ui
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.0.db
    }

    /// A slot for one operation, or 503 when all are taken.
    pub(crate) fn slot(&self) -> Result<OwnedSemaphorePermit, Problem> {
        Arc::clone(&self.0.queue).try_acquire_owned().map_err(|_| Problem::overloaded())
    }

    /// Whether a `Host` or `Origin` authority may be served.
    pub(crate) fn host_allowed(&self, authority: &str) -> bool {
        let authority = authority.to_ascii_lowercase();
        self.0.config.allowed_hosts.contains(&authority)
    }
}

/// Run `f` on the blocking pool inside the current span (the request's): what it logs names
/// the request.
pub(crate) fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> tokio::task::JoinHandle<R> {
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(f))
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
    pub(crate) fn session_everywhere(&self, token: Option<&str>, need: Scope) -> Result<Session, Problem> {
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
pub(crate) fn bearer(headers: &HeaderMap, auth: bool) -> Result<Option<String>, Problem> {
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
pub(crate) fn header_ns(headers: &HeaderMap) -> Option<String> {
    headers.get("mnemon-namespace").and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// A query string's parameters, decoded.
pub(crate) fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
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
pub(crate) async fn read_body(app: &App, body: Body) -> Result<bytes::Bytes, Problem> {
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
pub(crate) async fn read_json(app: &App, body: Body) -> Result<Map<String, Value>, Problem> {
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
