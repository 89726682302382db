//! A namespace's records as JSON lines: `GET /v1/ns/{ns}/export` (`GET /v1/export` for every
//! namespace, with a token for all of them) streams them as they are
//! read (the answer starts before the export ends; an error after the start cuts the stream
//! short, which a client sees as a body that ends early), `POST /v1/ns/{ns}/import` imports
//! the lines of its body (as `mnemon import` does: every line or, if one fails, none, unless
//! `?partial=true`).

use std::collections::HashMap;
use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::Frame;
use tokio::sync::mpsc;

use super::app::{App, bearer, query_pairs, read_body};
use super::problem::Problem;
use crate::tokens::Scope;

/// Bytes an export sends at a time.
const CHUNK: usize = 64 * 1024;

/// `GET /v1/ns/{ns}/export`.
pub async fn export(
    State(app): State<App>,
    Path(params): Path<HashMap<String, String>>,
    req: Request,
) -> Result<Response, Problem> {
    let token = bearer(req.headers(), app.0.config.auth)?;
    let ns = params.get("ns").cloned();
    stream_export(app, token, ns).await
}

/// `GET /v1/export`: every namespace (a token for every namespace, `*`, only).
pub async fn export_all(State(app): State<App>, req: Request) -> Result<Response, Problem> {
    let token = bearer(req.headers(), app.0.config.auth)?;
    stream_export(app, token, None).await
}

/// Stream the export of namespace `ns` (every namespace when `None`).
async fn stream_export(app: App, token: Option<String>, ns: Option<String>) -> Result<Response, Problem> {
    let slot = app.slot()?;
    let session = {
        let app = app.clone();
        let named = ns.clone();
        super::blocking(move || match named {
            Some(ns) => app.session(token.as_deref(), Some(&ns), Scope::Read),
            None => app.session_everywhere(token.as_deref(), Scope::Read),
        })
        .await
        .map_err(|_| stopped())??
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    super::blocking(move || {
        let _slot = slot;
        let mut out = std::io::BufWriter::with_capacity(CHUNK, Sender(tx.clone()));
        let done = session
            .export(ns.as_deref(), &mut out)
            .map_err(|e| e.to_string())
            .and_then(|_| out.flush().map_err(|e| e.to_string()));
        if let Err(e) = done {
            let ns = ns.as_deref().unwrap_or("every namespace");
            tracing::warn!(namespace = ns, "the export stopped: {e}");
            let _ = tx.blocking_send(Err(std::io::Error::other("the export stopped")));
        }
    });
    let mut response = Body::new(Lines(rx)).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/jsonl"));
    Ok(response)
}

/// `POST /v1/ns/{ns}/import[?partial=true]`.
pub async fn import(
    State(app): State<App>,
    Path(params): Path<HashMap<String, String>>,
    RawQuery(query): RawQuery,
    req: Request,
) -> Result<Response, Problem> {
    let token = bearer(req.headers(), app.0.config.auth)?;
    let ns = params.get("ns").cloned();
    let partial = query_pairs(query.as_deref())
        .iter()
        .any(|(k, v)| k == "partial" && (v == "true" || v == "1" || v.is_empty()));
    let body = read_body(&app, req.into_body()).await?;
    let slot = app.slot()?;
    let run = {
        let app = app.clone();
        move || -> Result<mnemon::transfer::ImportReport, Problem> {
            let _slot = slot;
            let session = app.session(token.as_deref(), ns.as_deref(), Scope::Write)?;
            let report = session.import(
                &mut std::io::Cursor::new(body),
                "the request body",
                partial,
                &mut |_, _| {},
            )?;
            Ok(report)
        }
    };
    let out = super::blocking(run).await.map_err(|_| stopped())??;
    Ok(axum::Json(out).into_response())
}

fn stopped() -> Problem {
    Problem::new(StatusCode::INTERNAL_SERVER_ERROR, "unavailable", "the operation stopped unexpectedly")
}

/// What an export writes, sent on to the response in chunks.
struct Sender(mpsc::Sender<Result<Bytes, std::io::Error>>);

impl Write for Sender {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .blocking_send(Ok(Bytes::copy_from_slice(buf)))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The response body of an export: the chunks as they come.
struct Lines(mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl http_body::Body for Lines {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|c| c.map(|r| r.map(Frame::data)))
    }
}
