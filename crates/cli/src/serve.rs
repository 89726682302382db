//! `mnemon serve` (the HTTP server of `mnemon-server` on a runtime of its own) and `mnemon
//! token` (its tokens, made, listed and revoked in the file, also while it serves).

use anyhow::{Context, Result};
use mnemon::{Db, Timestamp};
use mnemon_server::tokens::{self, NewToken, Scope};

use crate::cli::{Cli, ServeArgs, TokenCmd};
use crate::open::{usage, with_embedder};
use crate::output::{Out, table};

/// Serve until SIGTERM or Ctrl-C.
pub(crate) fn serve(cli: &Cli, args: &ServeArgs) -> Result<()> {
    if args.no_auth && !args.listen.ip().is_loopback() {
        return Err(usage(format!(
            "--no-auth is allowed only on a loopback address, not {}: make a token (`mnemon token create`) instead",
            args.listen
        )));
    }
    // The certificate is read before anything is opened: a bad one is a usage error.
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            Some(mnemon_server::tls_config(cert, key).map_err(|e| usage(e.to_string()))?)
        }
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    logging(&args.log_format)?;
    let mut hosts = args.allow_host.iter().map(|h| h.to_ascii_lowercase()).collect::<Vec<_>>();
    // Shared by default, so that `mnemon` commands (`mnemon token` among them) work on the file
    // while it is served; `--exclusive` keeps it to the server alone, for faster writes.
    let db = with_embedder(cli, Db::builder(&cli.db).shared(!args.exclusive).create(true))?.open()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the server's runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr().context("cannot read the listening address")?;
        hosts.extend(mnemon_server::local_hosts(addr));
        let mut options = mnemon_server::Options::default();
        options.config.auth = !args.no_auth;
        options.config.allowed_hosts = hosts;
        options.config.body_limit = usize::try_from(args.max_body_bytes).unwrap_or(usize::MAX);
        options.config.queue = usize::try_from(args.queue).unwrap_or(usize::MAX);
        options.max_connections = usize::try_from(args.max_connections).unwrap_or(usize::MAX);
        options.shutdown_grace = std::time::Duration::from_secs(args.shutdown_grace);
        options.tls = tls;
        tracing::info!("listening on {scheme}://{addr} (database {})", cli.db.display());
        if args.no_auth {
            tracing::warn!("WITHOUT authentication (--no-auth): every namespace is open to anyone who can connect to {addr}");
        } else if tokens::list(&db).map(|t| t.iter().all(|t| t.revoked.is_some())).unwrap_or(false) {
            tracing::warn!("no token yet: make one with `mnemon token create --name NAME --allow-ns PATTERN --scope write`");
        }
        let finished = mnemon_server::serve(db, listener, options, signal()).await?;
        if finished {
            tracing::info!("stopped");
        } else {
            tracing::warn!("stopped; some requests did not finish within {} s", args.shutdown_grace);
        }
        Ok(())
    })
}

/// The server's log on standard error, in `format` (text or json), filtered by MNEMON_LOG.
/// A closed standard error loses the lines, nothing else.
fn logging(format: &str) -> Result<()> {
    let filter = match std::env::var("MNEMON_LOG") {
        Ok(spec) => tracing_subscriber::EnvFilter::try_new(&spec)
            .map_err(|e| usage(format!("MNEMON_LOG={spec:?} is not a log filter: {e}")))?,
        Err(_) => tracing_subscriber::EnvFilter::new("info"),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .log_internal_errors(false);
    let set = match format {
        "json" => builder.json().flatten_event(true).with_current_span(true).with_span_list(false).try_init(),
        _ => builder.with_ansi(false).try_init(),
    };
    // Already set (a test calling twice): keep the first.
    drop(set);
    Ok(())
}

/// SIGTERM or Ctrl-C (SIGINT).
async fn signal() {
    #[cfg(unix)]
    {
        let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("stopping");
}

/// `mnemon token ...`.
pub(crate) fn token(cli: &Cli, out: &mut Out, cmd: &TokenCmd) -> Result<()> {
    let db = Db::builder(&cli.db).shared(true).create(true).open()?;
    match cmd {
        TokenCmd::Create { name, namespaces, scope, expires } => {
            let scope: Scope = scope.parse().map_err(|e: tokens::TokenError| usage(e.to_string()))?;
            let expires = expires
                .as_deref()
                .map(Timestamp::parse)
                .transpose()
                .map_err(|e| usage(format!("--expires: {e}")))?;
            let new = NewToken { name: name.clone(), namespaces: namespaces.clone(), scope, expires };
            let (secret, info) = tokens::create(&db, new).map_err(token_error)?;
            if out.json {
                out.json_line(&serde_json::json!({"token": secret, "id": info.id, "name": info.name,
                    "namespaces": info.namespaces, "scope": info.scope, "expires": info.expires}))?;
            } else {
                out.line(&secret)?;
                eprintln!("token {} ({}): shown once; only its hash is kept", info.id, info.name);
            }
        }
        TokenCmd::List => {
            let all = tokens::list(&db).map_err(token_error)?;
            let now = db.now();
            if out.json {
                for t in &all {
                    out.json_line(
                        &serde_json::json!({"id": t.id, "name": t.name, "namespaces": t.namespaces,
                        "scope": t.scope, "created": t.created, "expires": t.expires, "revoked": t.revoked,
                        "in_force": t.in_force(now)}),
                    )?;
                }
            } else {
                let rows: Vec<Vec<String>> = all
                    .iter()
                    .map(|t| {
                        let state = if t.revoked.is_some() {
                            "revoked"
                        } else if t.in_force(now) {
                            "in force"
                        } else {
                            "expired"
                        };
                        vec![
                            t.id.clone(),
                            t.name.clone(),
                            t.scope.as_str().to_string(),
                            state.to_string(),
                            t.expires.clone().unwrap_or_else(|| "never".into()),
                            t.namespaces.join(" "),
                        ]
                    })
                    .collect();
                out.line(table(&["ID", "NAME", "SCOPE", "STATE", "EXPIRES", "NAMESPACES"], &rows))?;
            }
        }
        TokenCmd::Revoke { which } => {
            let t = tokens::revoke(&db, which, db.now()).map_err(token_error)?;
            if out.json {
                out.json_line(&serde_json::json!({"id": t.id, "name": t.name, "revoked": t.revoked}))?;
            } else {
                out.line(format!("revoked {} ({})", t.id, t.name))?;
            }
        }
    }
    Ok(())
}

/// A token error: a usage error when the request was malformed.
fn token_error(e: tokens::TokenError) -> anyhow::Error {
    match e {
        tokens::TokenError::Invalid(_) => usage(e.to_string()),
        tokens::TokenError::Db(e) => e.into(),
        e => anyhow::Error::new(e),
    }
}
