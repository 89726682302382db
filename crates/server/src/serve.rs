//! The listening loop: connections accepted up to a cap (beyond it they wait in the kernel's
//! backlog), HTTP/1.1 with keep-alive, a deadline for a request's headers and for every
//! write (a client that stops reading cannot hold a connection), and a graceful shutdown:
//! on the signal, stop accepting, let in-flight requests finish within a deadline, sync the
//! database.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Sleep;

use crate::http::{App, Config};

/// How the server listens.
#[derive(Clone, Debug)]
pub struct Options {
    /// The API's behaviour.
    pub config: Config,
    /// The most connections open at once.
    pub max_connections: usize,
    /// How long a request's headers may take to arrive (and an idle connection may stay).
    pub header_timeout: Duration,
    /// How long one write to a client may wait for it to read.
    pub write_timeout: Duration,
    /// How long in-flight requests may take to finish after the shutdown signal.
    pub shutdown_grace: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            config: Config::default(),
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Why serving stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The database could not be synced at shutdown.
    #[error("syncing the database at shutdown: {0}")]
    Sync(#[from] mnemon::Error),
}

/// Serve `db` on `listener` until `shutdown` completes, then shut down gracefully: what
/// `mnemon serve` runs. Returns whether every in-flight request finished within the grace.
pub async fn serve(
    db: mnemon::Db,
    listener: TcpListener,
    options: Options,
    shutdown: impl Future<Output = ()>,
) -> Result<bool, ServeError> {
    let app = App::new(db.clone(), options.config.clone());
    let router = app.router();
    let connections = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(options.header_timeout).keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&connections).acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, a connection reset before it was accepted: wait a
                    // moment rather than spin.
                    log!("mnemon serve: accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(Deadline::new(stream, options.write_timeout));
        let conn = http.serve_connection(io, TowerToHyperService::new(router.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    let finished = tokio::select! {
        () = graceful.shutdown() => true,
        () = tokio::time::sleep(options.shutdown_grace) => false,
    };
    tokio::task::spawn_blocking(move || db.sync()).await.map_err(|_| {
        ServeError::Sync(mnemon::Error::Io {
            path: "the database".into(),
            source: std::io::Error::other("the sync task stopped"),
        })
    })??;
    Ok(finished)
}

/// A connection whose every write must make progress within a deadline.
struct Deadline {
    stream: TcpStream,
    limit: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    fn new(stream: TcpStream, limit: Duration) -> Deadline {
        Deadline { stream, limit, sleep: None }
    }

    /// After an operation that did not finish: whether its deadline has passed (an error).
    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        let limit = self.limit;
        let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client stopped reading",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn done<T>(&mut self, r: std::io::Result<T>) -> Poll<std::io::Result<T>> {
        self.sleep = None;
        Poll::Ready(r)
    }
}

impl AsyncRead for Deadline {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Deadline {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.stream).poll_write(cx, buf) {
            Poll::Ready(r) => self.done(r),
            Poll::Pending => self.pending(cx),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match Pin::new(&mut self.stream).poll_flush(cx) {
            Poll::Ready(r) => self.done(r),
            Poll::Pending => self.pending(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
