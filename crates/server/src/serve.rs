//! The listening loop: connections accepted up to a cap (beyond it, a new connection takes the
//! place of the oldest one between requests, or is answered 503 when every one is busy with a
//! request: [`crate::connections`]), HTTP/1.1 with keep-alive, a deadline for a request's headers and for every
//! write (a client that stops reading cannot hold a connection), and a graceful shutdown:
//! on the signal, stop accepting, let in-flight requests finish within a deadline, sync the
//! database. With a certificate ([`tls_config`]) every connection is TLS (rustls), its
//! handshake held to the header deadline.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
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
    /// TLS: every connection is TLS with this configuration (see [`tls_config`]).
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            config: Config::default(),
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
            tls: None,
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

/// Why a certificate and key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file holds no usable PEM certificate or key.
    #[error("{path} holds no {what} in PEM form")]
    Pem {
        /// The file.
        path: std::path::PathBuf,
        /// What was looked for.
        what: &'static str,
    },
    /// rustls refused the pair (a key that does not match the certificate, an unsupported
    /// algorithm).
    #[error("the certificate and key cannot be used: {0}")]
    Rustls(#[from] tokio_rustls::rustls::Error),
}

/// The TLS configuration of a server with the certificate chain in PEM file `cert` (the
/// server's certificate first) and its private key in PEM file `key`: TLS 1.2 and 1.3 with
/// rustls' safe defaults, HTTP/1.1 by ALPN, no client certificates.
pub fn tls_config(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<Arc<tokio_rustls::rustls::ServerConfig>, TlsError> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source })
    };
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(&read(cert)?).filter_map(Result::ok).collect();
    if certs.is_empty() {
        return Err(TlsError::Pem { path: cert.to_path_buf(), what: "certificate" });
    }
    let key = PrivateKeyDer::from_pem_slice(&read(key)?)
        .map_err(|_| TlsError::Pem { path: key.to_path_buf(), what: "private key" })?;
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let mut config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
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
    let table = Arc::new(crate::connections::Table::default());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(options.header_timeout).keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, a connection reset before it was accepted: wait a
                    // moment rather than spin.
                    tracing::warn!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let permit = match Arc::clone(&connections).try_acquire_owned() {
            Ok(p) => p,
            // Full: the oldest connection between requests gives its place up; if every one
            // is busy with a request, this one is answered 503.
            Err(_) => {
                let room = if table.evict_oldest_idle() {
                    tokio::time::timeout(Duration::from_secs(2), Arc::clone(&connections).acquire_owned())
                        .await
                        .ok()
                        .and_then(Result::ok)
                } else {
                    None
                };
                match room {
                    Some(p) => p,
                    None => {
                        tokio::spawn(refuse(stream, options.write_timeout));
                        continue;
                    }
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let place = table.enter();
        let service = TowerToHyperService::new(crate::connections::Tracked {
            router: router.clone(),
            busy: Arc::clone(&place.busy),
        });
        let evict = Arc::clone(&place.evict);
        let Some(tls) = &options.tls else {
            let io = TokioIo::new(Deadline::new(stream, options.write_timeout));
            let conn = graceful.watch(http.serve_connection(io, service));
            tokio::spawn(async move {
                tokio::select! {
                    _ = conn => {}
                    () = evict.notified() => {}
                }
                drop(place);
                drop(permit);
            });
            continue;
        };
        // TLS: the handshake in the connection's own task, within the header deadline.
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(tls));
        let (http, watcher) = (http.clone(), graceful.watcher());
        let (handshake, write) = (options.header_timeout, options.write_timeout);
        tokio::spawn(async move {
            let served = async {
                if let Ok(Ok(stream)) = tokio::time::timeout(handshake, acceptor.accept(stream)).await {
                    let io = TokioIo::new(Deadline::new(stream, write));
                    let _ = watcher.watch(http.serve_connection(io, service)).await;
                }
            };
            tokio::select! {
                () = served => {}
                () = evict.notified() => {}
            }
            drop(place);
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

/// Answer a connection there is no room for: 503 (see [`crate::connections::full_answer`]),
/// within `deadline`, then close it.
async fn refuse(mut stream: tokio::net::TcpStream, deadline: Duration) {
    use tokio::io::AsyncWriteExt;
    let answer = crate::connections::full_answer();
    let _ = tokio::time::timeout(deadline.min(Duration::from_secs(5)), async {
        let _ = stream.write_all(&answer).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// A connection whose every write must make progress within a deadline.
struct Deadline<S> {
    stream: S,
    limit: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<S> Deadline<S> {
    fn new(stream: S, limit: Duration) -> Deadline<S> {
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

impl<S: AsyncRead + Unpin> AsyncRead for Deadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deadline<S> {
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
