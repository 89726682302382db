//! `GET /v1/ns/{ns}/events`: the namespace's change feed as Server-Sent Events. Each event is
//! named `change`, carries the change as JSON and its cursor as its id, so a client that
//! reconnects with `Last-Event-ID` (browsers do it by themselves) resumes exactly after the
//! last change it got. `kind` and `tag` (repeated, or comma-separated) filter; `since` (a
//! cursor or a time) starts from an earlier place than now. The token is checked once, when
//! the stream opens, for read access to the namespace; a stream holds no operation slot.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use mnemon::feed::{Change, Cursor, Watch};
use mnemon::ops::Changes;

use super::app::{App, bearer, blocking, query_pairs};
use super::problem::Problem;
use crate::tokens::Scope;

/// How often an idle stream sends a comment, so that proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The feed's request from a query string: `kind`, `tag` and `since`, each repeatable (or
/// comma-separated).
pub(crate) fn request_of(query: Option<&str>) -> Changes {
    let mut req = Changes::default();
    for (k, v) in query_pairs(query) {
        let items = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
        match k.as_str() {
            "kind" | "kinds" => req.kinds.extend(items),
            "tag" | "tags" => req.tags.extend(items),
            "since" => req.since = Some(v),
            _ => {}
        }
    }
    req
}

/// The stream of changes `watch` delivers, as events. A read that fails (damage) is told as
/// an `error` event, which ends the stream.
pub(crate) fn stream_of(watch: Watch) -> Response {
    let events = futures_util::stream::unfold(Some(watch), |watch| async move {
        let mut watch = watch?;
        match watch.next_async().await {
            Ok(change) => Some((Ok::<_, Infallible>(change_event(&change)), Some(watch))),
            Err(e) => {
                let reason = e.to_string().replace(['\r', '\n'], " ");
                Some((Ok(Event::default().event("error").data(reason)), None))
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response()
}

/// One change as an event: named `change`, its id the change's cursor.
pub(crate) fn change_event(change: &Change) -> Event {
    let data = serde_json::to_string(change).unwrap_or_default();
    Event::default().event("change").id(change.cursor.to_string()).data(data)
}

/// `GET /v1/ns/{ns}/events`.
pub(super) async fn stream(
    State(app): State<App>,
    Path(ns): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let token = bearer(&headers, app.0.config.auth)?;
    let mut req = request_of(query.as_deref());
    if let Some(last) = headers.get("last-event-id") {
        req.since =
            Some(last.to_str().map_err(|_| Problem::invalid("Last-Event-ID is not text"))?.to_string());
    }
    let open = move || -> Result<Watch, Problem> {
        let session = app.session(token.as_deref(), Some(&ns), Scope::Read)?;
        let filter = req.filter(&session)?;
        let since = req.since.as_deref().map(str::parse::<Cursor>).transpose()?;
        Ok(session.db().watch(filter, since)?)
    };
    let watch = blocking(open).await.map_err(|_| Problem::invalid("the request stopped unexpectedly"))??;
    Ok(stream_of(watch))
}
