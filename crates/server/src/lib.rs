//! `mnemon serve`: one server owning a mnemon database for a farm of agents. Every operation
//! of [`mnemon::ops`] is reachable over a JSON REST API under `/v1` ([`http::routes`]), each
//! call checked against the caller's [token](tokens) (the namespaces it reaches, its scope)
//! and run in a session of the namespace the route names; writes from every connection share
//! the database's group commit. Errors are problem documents ([`http::Problem`]). See
//! docs/server.md.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let db = mnemon::Db::builder("memory.redb").create(true).shared(true).open()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7373").await?;
//! let mut options = mnemon_server::Options::default();
//! options.config.allowed_hosts = mnemon_server::local_hosts(listener.local_addr()?);
//! mnemon_server::serve(db, listener, options, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(())
//! # }
//! ```

/// A line on standard error, for `mnemon mcp` on stdio (the editor that started it shows them);
/// the HTTP server logs through `tracing` instead, each line of a request naming its id.
macro_rules! log {
    ($($t:tt)*) => { $crate::log(format_args!($($t)*)) };
}

mod connections;
pub mod http;
pub mod mcp;
mod serve;
pub mod tokens;
pub mod ui;

pub use serve::{Options, ServeError, TlsError, serve, tls_config};

/// The `Host` values a server listening on `addr` answers to by default: the address itself
/// and, for a loopback or unspecified address, `localhost`, `127.0.0.1` and `[::1]`, each
/// with the port (and without it for port 80).
pub fn local_hosts(addr: std::net::SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut names = vec![match addr.ip() {
        std::net::IpAddr::V4(ip) => ip.to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
    }];
    if addr.ip().is_loopback() || addr.ip().is_unspecified() {
        names.extend(["localhost".to_string(), "127.0.0.1".to_string(), "[::1]".to_string()]);
    }
    names.dedup();
    let mut out = Vec::new();
    for n in names {
        out.push(format!("{n}:{port}"));
        if port == 80 {
            out.push(n);
        }
    }
    out
}

/// Write a line to standard error, ignoring a failure: a server whose standard error was
/// closed (its parent stopped reading) keeps serving instead of panicking as `eprintln!`
/// would.
pub fn log(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
