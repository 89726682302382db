//! The resources and their subscriptions: `memory://knowledge-graph` (the reference's: the
//! namespace's entities and relations) and `mnemon://memory/{ns}` (the namespace's current
//! records). A client that subscribes to one (`resources/subscribe`) gets
//! `notifications/resources/updated` whenever a commit changes it, from any writer: a task
//! follows the change feed ([`mnemon::feed`]) of the caller's namespace and notifies once per
//! burst of changes (those within [`COALESCE`] of each other, for at most [`COALESCE_MAX`]),
//! until the client unsubscribes or goes away.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use mnemon::Kind;
use mnemon::feed::ChangeFilter;
use mnemon::ops::{List, Session};
use rmcp::model::{ResourceUpdatedNotificationParam, ServerCapabilities};
use rmcp::service::{Peer, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

/// The reference's resource: the knowledge graph of the server's namespace.
pub(super) const GRAPH_URI: &str = "memory://knowledge-graph";
/// The prefix of a namespace's memory resource.
const MEMORY_PREFIX: &str = "mnemon://memory/";
/// Changes this close together make one notification...
const COALESCE: Duration = Duration::from_millis(20);
/// ...sent at most this long after the first of them, however many follow.
const COALESCE_MAX: Duration = Duration::from_millis(100);
/// The most records `mnemon://memory/{ns}` reads back (the newest).
const MEMORY_LIMIT: usize = 200;

/// The capabilities: tools, and resources that can be subscribed to.
pub(super) fn capabilities() -> ServerCapabilities {
    ServerCapabilities::builder().enable_tools().enable_resources().enable_resources_subscribe().build()
}

/// What a resource is about: the namespace, and the kinds whose changes change it (none: all).
fn scope_of(uri: &str, session: &Session) -> Result<(String, Vec<Kind>), McpError> {
    if uri == GRAPH_URI {
        return Ok((session.namespace().to_string(), vec![Kind::Entity, Kind::Relation, Kind::Observation]));
    }
    let Some(ns) = uri.strip_prefix(MEMORY_PREFIX) else {
        return Err(McpError::resource_not_found(format!("unknown resource {uri}"), None));
    };
    session.ns(Some(ns)).map_err(|e| McpError::invalid_params(e.to_string(), None))?;
    Ok((ns.to_string(), Vec::new()))
}

/// The resources a session offers.
pub(super) fn list(session: &Session) -> Value {
    let ns = session.namespace();
    json!({ "resultType": "complete", "resources": [
        { "uri": GRAPH_URI, "name": "knowledge-graph", "title": "Knowledge Graph",
          "description": "The full knowledge graph with all entities and relations",
          "mimeType": "application/json" },
        { "uri": format!("{MEMORY_PREFIX}{ns}"), "name": format!("memory of {ns}"), "title": format!("Memory of {ns}"),
          "description": format!("The records valid now in namespace {ns}, newest first (at most {MEMORY_LIMIT}); subscribe to be told when it changes"),
          "mimeType": "application/json" },
    ]})
}

/// The text of `mnemon://memory/{ns}`: its current records as JSON.
pub(super) fn read_memory(uri: &str, session: &Session) -> Result<Option<String>, McpError> {
    let Some(ns) = uri.strip_prefix(MEMORY_PREFIX) else { return Ok(None) };
    let records = session
        .call(List { limit: Some(MEMORY_LIMIT), namespace: Some(ns.to_string()), ..Default::default() })
        .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
    serde_json::to_string_pretty(&records)
        .map(Some)
        .map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// Whether `uri` names a resource of this server (its namespace is checked when watched).
pub(super) fn known(uri: &str) -> bool {
    uri == GRAPH_URI || uri.starts_with(MEMORY_PREFIX)
}

/// Where notifications go: the client of a legacy `resources/subscribe`, or an established
/// `subscriptions/listen` stream (protocol 2026-07-28).
#[derive(Clone)]
enum Target {
    Peer(Peer<RoleServer>),
    Listen(SubscriptionSink),
}

impl Target {
    /// Tell the client `uri` changed: whether it could be told.
    async fn updated(&self, uri: &str) -> bool {
        let param = ResourceUpdatedNotificationParam::new(uri.to_string());
        match self {
            Target::Peer(p) => p.notify_resource_updated(param).await.is_ok(),
            Target::Listen(s) => s.notify_resource_updated(uri.to_string()).await.is_ok(),
        }
    }
}

/// The watchers of one client, by URI.
#[derive(Default)]
pub(super) struct Subscriptions(Mutex<HashMap<String, tokio::task::AbortHandle>>);

impl Drop for Subscriptions {
    fn drop(&mut self) {
        for (_, task) in self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain() {
            task.abort();
        }
    }
}

/// A task telling `target` whenever `uri` changes.
fn watcher(uri: &str, session: &Session, target: Target) -> Result<tokio::task::AbortHandle, McpError> {
    let (ns, kinds) = scope_of(uri, session)?;
    let filter = ChangeFilter { namespaces: vec![ns], kinds, tags: Vec::new() };
    let watch =
        session.db().watch(filter, None).map_err(|e| McpError::internal_error(e.to_string(), None))?;
    Ok(tokio::spawn(notify(watch, target, uri.to_string())).abort_handle())
}

impl Subscriptions {
    /// `resources/subscribe`: the client of `context` is told of `uri`'s changes (once;
    /// subscribing again changes nothing).
    pub(super) fn subscribe(
        &self,
        uri: &str,
        session: &Session,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let mut subs = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if subs.get(uri).is_some_and(|t| !t.is_finished()) {
            return Ok(());
        }
        let task = watcher(uri, session, Target::Peer(context.peer.clone()))?;
        subs.insert(uri.to_string(), task);
        Ok(())
    }

    /// `resources/unsubscribe`: stop telling the client about `uri`.
    pub(super) fn unsubscribe(&self, uri: &str) {
        if let Some(task) = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(uri) {
            task.abort();
        }
    }
}

/// `subscriptions/listen` (protocol 2026-07-28): tell the stream of `context` about every
/// accepted resource's changes until the client cancels it.
pub(super) async fn listen(context: SubscriptionContext, session: &Session) -> Result<(), McpError> {
    let uris = context.accepted().resource_subscriptions.clone().unwrap_or_default();
    let mut tasks = Vec::new();
    for uri in &uris {
        match watcher(uri, session, Target::Listen(context.sink().clone())) {
            Ok(t) => tasks.push(t),
            Err(e) => {
                for t in &tasks {
                    t.abort();
                }
                return Err(e);
            }
        }
    }
    context.cancelled().await;
    for t in tasks {
        t.abort();
    }
    Ok(())
}

/// Tell `target` that `uri` changed after each burst of changes `watch` delivers; stop when
/// the client is gone or the feed fails.
async fn notify(mut watch: mnemon::feed::Watch, target: Target, uri: String) {
    loop {
        if watch.next_async().await.is_err() {
            return;
        }
        // The rest of the burst: one notification for a commit of many changes, or many
        // commits in a row, but never later than `COALESCE_MAX` after the first.
        let deadline = tokio::time::Instant::now() + COALESCE_MAX;
        loop {
            let quiet = COALESCE.min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            if quiet.is_zero() {
                break;
            }
            match tokio::time::timeout(quiet, watch.next_async()).await {
                Ok(Ok(_)) => continue,
                Ok(Err(_)) => return,
                Err(_) => break,
            }
        }
        if !target.updated(&uri).await {
            return;
        }
    }
}
