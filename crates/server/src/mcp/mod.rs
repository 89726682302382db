//! The Model Context Protocol server: a drop-in for the reference knowledge-graph memory server
//! (`@modelcontextprotocol/server-memory`): the same nine tools with the same input and output
//! schemas and annotations (`reference-tools.json`, the tool list the reference serves, version
//! 2026.8.31, MIT), the same results (`structuredContent` and the pretty-printed JSON text),
//! and the `memory://knowledge-graph` resource; and mnemon's own tools (`tools.rs`). Served on
//! stdio by `mnemon mcp` ([`serve_stdio`]: logs go to stderr, stdout carries only JSON-RPC; the
//! database is opened shared, so several servers and CLI calls use one file), and over MCP's
//! Streamable HTTP transport at `/mcp` by `mnemon serve` ([`http_service`]), where each request
//! runs in the session its token and namespace give (see docs/mcp.md, docs/server.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mnemon::Db;
use mnemon::graph::{GraphEntity, GraphRelation};
use mnemon::ops::Session;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::tokens::Scope;

mod framing;
pub(crate) use framing::{Verdict, judge};
mod resources;
mod tools;

const REFERENCE_TOOLS: &str = include_str!("reference-tools.json");
use resources::GRAPH_URI;

/// The server: one database handle; the session its tools run in (a stdio server's own, or
/// over HTTP each request's, see [`Caller`]); its tools.
pub struct MemoryServer {
    db: Db,
    /// A stdio server's session (`None` over HTTP).
    session: Option<Session>,
    /// The largest reply a tool call may give, in bytes (`--max-reply-bytes`).
    max_reply: usize,
    /// The tools, shared by every session of the process (built once: a session costs
    /// little until it is used).
    toolbox: Arc<Toolbox>,
    idle: Arc<Idle>,
    /// The client's resource subscriptions.
    subscriptions: resources::Subscriptions,
}

/// The tools a server offers: the reference knowledge-graph ones and mnemon's own, with the
/// catalogue that runs the latter.
struct Toolbox {
    own: tools::OwnTools,
    tools: Vec<Tool>,
}

impl Toolbox {
    fn new() -> Result<Toolbox, String> {
        let mut tools: Vec<Tool> =
            serde_json::from_str(REFERENCE_TOOLS).map_err(|e| format!("the embedded tool list: {e}"))?;
        let own = tools::OwnTools::new();
        tools.extend(own.tools.iter().cloned());
        Ok(Toolbox { own, tools })
    }
}

/// Who makes an HTTP request, as the server's authentication found: the session it runs in
/// and its token's scope (`None` without authentication). Put in the request's extensions
/// before rmcp sees it; rmcp hands the request's parts to the tool calls.
#[derive(Clone)]
pub struct Caller {
    /// The session (the request's namespace, allowed what the token reaches).
    pub session: Session,
    /// The token's scope.
    pub scope: Option<Scope>,
    /// The server's operation slots (its `--queue`), shared with the REST API: a tool call
    /// takes one while it runs, and is refused as overloaded when none is free.
    pub slots: Option<Arc<tokio::sync::Semaphore>>,
}

/// Why the stdio server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] mnemon::Error),
    /// Standard input or output, or the runtime, failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The protocol could not start.
    #[error("the MCP session: {0}")]
    Protocol(String),
}

/// The largest reply a tool call gives by default: as large as a request may be.
pub const MAX_REPLY: u64 = framing::MAX_LINE as u64;

/// How long the server must go without a call before it merges fresh texts.
const IDLE: std::time::Duration = std::time::Duration::from_millis(200);
/// The fewest fresh texts worth a merge when idle.
const IDLE_MERGE_MIN: u64 = 32;

/// Calls seen, and whether a wait for a quiet moment is under way.
#[derive(Default)]
struct Idle {
    calls: AtomicU64,
    waiting: AtomicBool,
}

/// Wait until no call has come for [`IDLE`], then merge the namespace's fresh texts into
/// its posting lists (when there are enough), so that the call that would have reached the
/// limit does not pay for the merge. The runtime has one thread: a call that arrives during
/// the merge waits for it, which is what it would have cost that call anyway.
async fn merge_when_idle(db: Db, ns: String, idle: Arc<Idle>) {
    loop {
        let seen = idle.calls.load(Ordering::Relaxed);
        tokio::time::sleep(IDLE).await;
        if idle.calls.load(Ordering::Relaxed) == seen {
            break;
        }
    }
    idle.waiting.store(false, Ordering::Relaxed);
    let merged = mnemon::Namespace::new(&ns)
        .map_err(mnemon::Error::from)
        .and_then(|n| db.merge_texts(&n, IDLE_MERGE_MIN));
    if let Err(e) = merged {
        log!("mnemon mcp: merging fresh texts while idle: {e}");
    }
}

#[derive(Deserialize)]
struct Entities {
    entities: Vec<GraphEntity>,
}
#[derive(Deserialize)]
struct Relations {
    relations: Vec<GraphRelation>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObservationAdd {
    entity_name: String,
    contents: Vec<String>,
}
#[derive(Deserialize)]
struct Observations {
    observations: Vec<ObservationAdd>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntityNames {
    entity_names: Vec<String>,
}
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObservationDel {
    entity_name: String,
    observations: Vec<String>,
}
#[derive(Deserialize)]
struct Deletions {
    deletions: Vec<ObservationDel>,
}
#[derive(Deserialize)]
struct Query {
    query: String,
}
#[derive(Deserialize)]
struct Names {
    names: Vec<String>,
}

fn args<T: serde::de::DeserializeOwned>(tool: &str, v: Value) -> Result<T, McpError> {
    serde_json::from_value(v).map_err(|e| {
        McpError::invalid_params(
            format!("Input validation error: Invalid arguments for tool {tool}: {e}"),
            None,
        )
    })
}

/// The reference's result: the value as pretty JSON text (fields in the reference's order),
/// and as structured content.
fn result<T: serde::Serialize>(text_of: &T, structured: Value) -> CallToolResult {
    let text = serde_json::to_string_pretty(text_of).unwrap_or_default();
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(structured);
    r
}

fn done(message: &str) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(message.to_string())]);
    r.structured_content = Some(json!({ "success": true, "message": message }));
    r
}

impl MemoryServer {
    /// A stdio server over `db`'s namespace `ns`, whose tools may also reach the namespaces
    /// matching `allow` (globs, see [`mnemon::ops::Session::allow`]).
    pub fn new(db: Db, ns: &str, allow: &[String], max_reply: usize) -> Result<MemoryServer, ServeError> {
        let session = allow.iter().fold(Session::new(db.clone(), ns)?, |s, p| s.allow(p.clone()));
        let mut server = MemoryServer::over_http(db, max_reply)?;
        server.session = Some(session);
        Ok(server)
    }

    /// A server whose tools run in each request's [`Caller`] (over HTTP).
    pub fn over_http(db: Db, max_reply: usize) -> Result<MemoryServer, ServeError> {
        static TOOLBOX: std::sync::OnceLock<Result<Arc<Toolbox>, String>> = std::sync::OnceLock::new();
        let toolbox =
            TOOLBOX.get_or_init(|| Toolbox::new().map(Arc::new)).clone().map_err(ServeError::Protocol)?;
        Ok(MemoryServer {
            db,
            session: None,
            max_reply,
            toolbox,
            idle: Arc::default(),
            subscriptions: resources::Subscriptions::default(),
        })
    }

    /// The caller of a request: the stdio server's own session, or the one the HTTP layer put
    /// in the request's parts.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, McpError> {
        if let Some(session) = &self.session {
            return Ok(Caller { session: session.clone(), scope: None, slots: None });
        }
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .cloned()
            .ok_or_else(|| McpError::invalid_request("no session for this request", None))
    }

    fn call(&self, caller: &Caller, name: &str, a: Value) -> Result<CallToolResult, McpError> {
        if let Some(scope) = caller.scope {
            let need = self.toolbox.own.needed(name).unwrap_or(if GRAPH_READS.contains(&name) {
                Scope::Read
            } else {
                Scope::Write
            });
            if scope < need {
                return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "the token's scope is {}; tool {name} needs {}",
                    scope.as_str(),
                    need.as_str()
                ))]));
            }
        }
        let session = &caller.session;
        if self.toolbox.own.has(name) {
            return match self.toolbox.own.call(session, name, a) {
                Ok(v) => Ok(result(&v, v.clone())),
                Err(tools::ToolError::Args(m)) => Err(McpError::invalid_params(m, None)),
                Err(tools::ToolError::Failed(m)) => Ok(CallToolResult::error(vec![ContentBlock::text(m)])),
            };
        }
        let ns = session.ns(None).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let g = ns.graph();
        // Domain refusals (an unknown entity, ...) are tool errors the model can read, as in
        // the reference; bad arguments are protocol errors.
        let r: mnemon::Result<CallToolResult> = match name {
            "create_entities" => {
                let p: Entities = args(name, a)?;
                g.create_entities(&p.entities).map(|c| result(&c, json!({ "entities": c })))
            }
            "create_relations" => {
                let p: Relations = args(name, a)?;
                g.create_relations(&p.relations).map(|c| result(&c, json!({ "relations": c })))
            }
            "add_observations" => {
                let p: Observations = args(name, a)?;
                let items: Vec<(String, Vec<String>)> =
                    p.observations.into_iter().map(|o| (o.entity_name, o.contents)).collect();
                g.add_observations(&items).map(|c| result(&c, json!({ "results": c })))
            }
            "delete_entities" => {
                let p: EntityNames = args(name, a)?;
                g.delete_entities(&p.entity_names).map(|()| done("Entities deleted successfully"))
            }
            "delete_observations" => {
                let p: Deletions = args(name, a)?;
                let items: Vec<(String, Vec<String>)> =
                    p.deletions.into_iter().map(|d| (d.entity_name, d.observations)).collect();
                g.delete_observations(&items).map(|()| done("Observations deleted successfully"))
            }
            "delete_relations" => {
                let p: Relations = args(name, a)?;
                g.delete_relations(&p.relations).map(|()| done("Relations deleted successfully"))
            }
            "read_graph" => g.read_graph().map(|k| result(&k, json!(k))),
            "search_nodes" => {
                let p: Query = args(name, a)?;
                g.search_nodes(&p.query).map(|k| result(&k, json!(k)))
            }
            "open_nodes" => {
                let p: Names = args(name, a)?;
                g.open_nodes(&p.names).map(|k| result(&k, json!(k)))
            }
            _ => return Err(McpError::invalid_params(format!("Tool {name} not found"), None)),
        };
        Ok(r.unwrap_or_else(|e| CallToolResult::error(vec![ContentBlock::text(e.to_string())])))
    }
}

impl MemoryServer {
    /// `res`, or an error result in its place when it is larger than the server's cap: a
    /// client asking for too much gets a reply it can read, saying how to ask for less.
    fn capped(&self, name: &str, res: CallToolResult) -> CallToolResult {
        // A reply is its text (the result as pretty JSON) and, at most as large, the same
        // result structured: far under the cap by its text's length (escaping a character
        // takes at most six bytes), it is not serialised a second time to be measured.
        let text: usize = res.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.len()).sum();
        if text.saturating_mul(7).saturating_add(64 << 10) <= self.max_reply {
            return res;
        }
        let size = serde_json::to_vec(&res).map_or(0, |b| b.len());
        if size <= self.max_reply {
            return res;
        }
        CallToolResult::error(vec![ContentBlock::text(format!(
            "the reply of {name} would be {size} bytes, over this server's cap of {} (--max-reply-bytes): \
             ask for fewer records (a smaller limit, then the next page with the cursor) or a smaller budget",
            self.max_reply
        ))])
    }
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(resources::capabilities())
            .with_server_info(Implementation::new("mnemon", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        // Built by rmcp's constructor, which marks the result complete (`resultType`, which
        // protocol 2026-07-28 requires; rmcp leaves it out for peers of older versions).
        Ok(ListToolsResult::with_all_items(self.toolbox.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let a = Value::Object(request.arguments.clone().unwrap_or_default());
        let name = request.name.to_string();
        let caller = self.caller(&context)?;
        // A panic inside the call (a dependency's, on a damaged page) is the call's error, and
        // the server keeps serving. On stdio the runtime has one thread (see `serve_stdio`):
        // the call runs right here; over HTTP it leaves the worker thread to the others.
        let run = || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.call(&caller, &name, a)))
                .unwrap_or_else(|payload| {
                    let message = mnemon::panic_message(payload.as_ref());
                    let e = mnemon::Error::Panicked { what: format!("tool {name}"), message };
                    Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]))
                })
        };
        let slot = match &caller.slots {
            Some(slots) => match Arc::clone(slots).try_acquire_owned() {
                Ok(slot) => Some(slot),
                Err(_) => {
                    return Ok(CallToolResponse::from(CallToolResult::error(vec![ContentBlock::text(
                        "overloaded: the server is busy; retry shortly",
                    )])));
                }
            },
            None => None,
        };
        let r = if self.session.is_some() { run() } else { tokio::task::block_in_place(run) };
        drop(slot);
        if self.session.is_some() {
            self.idle.calls.fetch_add(1, Ordering::Relaxed);
            if !self.idle.waiting.swap(true, Ordering::Relaxed) {
                let ns = caller.session.namespace().to_string();
                tokio::spawn(merge_when_idle(self.db.clone(), ns, Arc::clone(&self.idle)));
            }
        }
        match r {
            Ok(res) => Ok(self.capped(&name, res).into()),
            // As the reference does, a bad call is an error result the client can show.
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "MCP error {}: {}",
                e.code.0, e.message
            ))])
            .into()),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let caller = self.caller(&context)?;
        serde_json::from_value(resources::list(&caller.session))
            .map_err(|e| McpError::internal_error(e.to_string(), None))
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|u| resources::known(u))
            .cloned()
            .collect();
        Some(SubscriptionFilter::builder().resource_subscriptions(uris).build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let caller = self.caller(context.request_context())?;
        resources::listen(context, &caller.session).await
    }

    #[allow(deprecated, reason = "resources/subscribe, for clients of protocols before 2026-07-28")]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let caller = self.caller(&context)?;
        self.subscriptions.subscribe(&request.uri, &caller.session, &context)
    }

    #[allow(deprecated, reason = "resources/unsubscribe, for clients of protocols before 2026-07-28")]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let caller = self.caller(&context)?;
        if let Some(text) = resources::read_memory(&request.uri, &caller.session)? {
            let r: ReadResourceResult =
                serde_json::from_value(json!({ "resultType": "complete", "contents": [{
                    "uri": request.uri, "mimeType": "application/json", "text": text
                }]}))
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            return Ok(r.into());
        }
        if request.uri != GRAPH_URI {
            return Err(McpError::resource_not_found(format!("unknown resource {}", request.uri), None));
        }
        let g = caller
            .session
            .ns(None)
            .and_then(|ns| ns.graph().read_graph())
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let text =
            serde_json::to_string_pretty(&g).map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let r: ReadResourceResult = serde_json::from_value(json!({ "resultType": "complete", "contents": [{
            "uri": GRAPH_URI, "mimeType": "application/json", "text": text
        }]}))
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(r.into())
    }
}

/// The reference's tools that only read.
const GRAPH_READS: &[&str] = &["read_graph", "search_nodes", "open_nodes"];

/// Serve on stdin/stdout until the client closes stdin (`mnemon mcp`). When the database is
/// new and `MEMORY_FILE_PATH` names an existing memory.jsonl, it is imported first.
pub fn serve_stdio(db: Db, ns: &str, allow: &[String], max_reply: usize) -> Result<(), ServeError> {
    if let Some(path) = std::env::var_os("MEMORY_FILE_PATH").map(std::path::PathBuf::from)
        && path.is_file()
        && db.snapshot()?.meta().commit_seq <= 1
    {
        let text = std::fs::read_to_string(&path)
            .map_err(|source| ServeError::Io { what: "reading MEMORY_FILE_PATH", source })?;
        let sum = mnemon::importers::import_mcp_jsonl(&db.ns(ns)?, &text, &path.display().to_string())?;
        log!("mnemon mcp: imported {} records from {}", sum.imported, path.display());
        for e in &sum.errors {
            log!("mnemon mcp: {e}");
        }
    }
    let server = MemoryServer::new(db.clone(), ns, allow, max_reply)?;
    // One thread runs the protocol and the calls, one after the other: a call is a few hundred
    // microseconds of blocking database work, and handing it to another thread and back would
    // cost a good part of that. Calls on one namespace were serialised anyway (`Ns::graph`);
    // concurrency comes from several processes sharing the file. For the same reason stdin and
    // stdout, pipes when a client starts the server, are polled by the reactor
    // (`stdio_pipes`) rather than read and written on tokio's blocking pool. The framing layer
    // (`framing.rs`) stands between them and rmcp, answering lines that are not messages.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| ServeError::Io { what: "starting the runtime", source })?;
    rt.block_on(async move {
        let (transport, pipes) = framing::pipes();
        let (input, output) = rmcp::transport::io::stdio_pipes();
        let serving = async {
            let running = server.serve(transport).await.map_err(|e| ServeError::Protocol(e.to_string()))?;
            running.waiting().await.map_err(|e| ServeError::Protocol(e.to_string()))?;
            Ok::<(), ServeError>(())
        };
        let (served, pumped) = tokio::join!(serving, framing::pump(pipes, input, output));
        served?;
        pumped.map_err(|source| ServeError::Io { what: "stdio", source })?;
        Ok::<(), ServeError>(())
    })?;
    db.flush_access()?;
    db.sync()?;
    Ok(())
}

/// The sessions of MCP's Streamable HTTP transport: closed after `idle` unused, or 15
/// seconds after opening if the client never initializes.
pub fn session_manager(
    idle: std::time::Duration,
) -> rmcp::transport::streamable_http_server::session::local::LocalSessionManager {
    let mut manager = rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default();
    manager.session_config.keep_alive = Some(idle);
    manager.session_config.init_timeout = Some(std::time::Duration::from_secs(15));
    manager
}

/// The MCP tools over the Streamable HTTP transport (rmcp's), for `mnemon serve`'s `/mcp`:
/// every request must carry a [`Caller`] in its extensions (the server's authentication puts
/// it there). `allowed_hosts` are the `Host` values it answers (as the rest of the server);
/// a body may hold `max_body` bytes; `sessions` keeps the sessions ([`session_manager`]).
pub fn http_service(
    db: Db,
    max_reply: usize,
    allowed_hosts: Vec<String>,
    max_body: usize,
    sessions: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    MemoryServer,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    let mut config = rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts);
    config.max_request_body_bytes = max_body;
    rmcp::transport::streamable_http_server::StreamableHttpService::new(
        move || {
            MemoryServer::over_http(db.clone(), max_reply).map_err(|e| std::io::Error::other(e.to_string()))
        },
        sessions,
        config,
    )
}
