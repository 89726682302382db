//! The table of open connections, for the listening loop: when it is full, a new connection
//! takes the place of the oldest one that is between requests (sending its headers slowly, or
//! idle on keep-alive), so that clients trickling headers cannot keep a health probe or a real
//! client out; only when every connection is busy with a request is a new one answered 503.
//!
//! A connection counts as busy from the moment its request reaches the router until its
//! answer's body is sent or dropped (a streamed export, an event stream), through
//! [`Tracked`], the service each connection runs.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use http_body::Frame;
use tokio::sync::Notify;

/// The open connections, oldest first.
#[derive(Default)]
pub(crate) struct Table {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    open: BTreeMap<u64, Entry>,
}

struct Entry {
    busy: Arc<AtomicUsize>,
    evict: Arc<Notify>,
    evicted: bool,
}

/// One connection's place in the table: its busy count (for [`Tracked`]), the signal that
/// evicts it, and its removal when dropped.
pub(crate) struct Place {
    table: Arc<Table>,
    id: u64,
    pub(crate) busy: Arc<AtomicUsize>,
    pub(crate) evict: Arc<Notify>,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.table.lock().open.remove(&self.id);
    }
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a new connection.
    pub(crate) fn enter(self: &Arc<Self>) -> Place {
        let mut t = self.lock();
        let id = t.next;
        t.next += 1;
        let (busy, evict) = (Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
        t.open.insert(id, Entry { busy: Arc::clone(&busy), evict: Arc::clone(&evict), evicted: false });
        Place { table: Arc::clone(self), id, busy, evict }
    }

    /// Tell the oldest connection between requests to close: whether there was one.
    pub(crate) fn evict_oldest_idle(&self) -> bool {
        let mut t = self.lock();
        let Some(e) = t.open.values_mut().find(|e| !e.evicted && e.busy.load(Ordering::Acquire) == 0) else {
            return false;
        };
        e.evicted = true;
        // A stored permit: the connection's task sees it even if it is not waiting yet.
        e.evict.notify_one();
        true
    }
}

/// The router as one connection runs it, counting the requests in progress on it.
#[derive(Clone)]
pub(crate) struct Tracked {
    pub(crate) router: axum::Router,
    pub(crate) busy: Arc<AtomicUsize>,
}

/// One request in progress on a connection (its answer's body holds it until sent).
struct Busy(Arc<AtomicUsize>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl tower::Service<axum::extract::Request<hyper::body::Incoming>> for Tracked {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: axum::extract::Request<hyper::body::Incoming>) -> Self::Future {
        use tower::ServiceExt;
        self.busy.fetch_add(1, Ordering::AcqRel);
        let busy = Busy(Arc::clone(&self.busy));
        let answer = self.router.clone().oneshot(req.map(Body::new));
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|body| Body::new(Held { body, _busy: busy })))
        })
    }
}

/// An answer's body, holding its request's [`Busy`] until it is sent or dropped.
struct Held {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Held {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// What a connection gets when every place is busy with a request: 503 with `Retry-After`, a
/// problem document, and the connection closed.
pub(crate) fn full_answer() -> Vec<u8> {
    let body = serde_json::json!({
        "type": "urn:mnemon:problem:overloaded",
        "title": "Service Unavailable",
        "status": 503,
        "code": "overloaded",
        "detail": "every connection the server keeps (--max-connections) is busy with a request; retry shortly",
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\nretry-after: 1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
