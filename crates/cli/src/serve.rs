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
    let hosted = match &args.cluster {
        Some(_) => Some(parse_partitions(&args.partitions, args.partition_count)?),
        None => None,
    };
    // Shared by default, so that `mnemon` commands (`mnemon token` among them) work on the file
    // while it is served; `--exclusive` keeps it to the server alone, for faster writes.
    let single = match &args.cluster {
        Some(_) => None,
        None => Some(with_embedder(cli, Db::builder(&cli.db).shared(!args.exclusive).create(true))?.open()?),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the server's runtime")?;
    runtime.block_on(async {
        // A cluster node: its partitions' files in --db, replicas of their streams.
        let (db, node) = match (single, &args.cluster, hosted) {
            (Some(db), _, _) => (db, None),
            (None, Some(servers), Some(hosted)) => {
                let node = start_node(cli, args, servers, hosted).await?;
                (node.handle()?, Some(node))
            }
            _ => return Err(anyhow::anyhow!("no database to serve")),
        };
        let stop = signal();
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
        options.config.mcp_sessions = usize::try_from(args.max_mcp_sessions).unwrap_or(usize::MAX);
        options.config.mcp_sessions_per_token = usize::try_from(args.max_mcp_sessions_per_token).unwrap_or(usize::MAX);
        options.config.mcp_idle = std::time::Duration::from_secs(args.mcp_idle);
        options.max_connections = usize::try_from(args.max_connections).unwrap_or(usize::MAX);
        options.shutdown_grace = std::time::Duration::from_secs(args.shutdown_grace);
        options.tls = tls;
        tracing::info!("listening on {scheme}://{addr} (database {})", cli.db.display());
        if let Some(node) = &node {
            let advertised = args.advertise.clone().unwrap_or_else(|| format!("{scheme}://{addr}"));
            node.advertise(&advertised);
            options.config.cluster = Some(std::sync::Arc::new(NodeConsistency {
                node: std::sync::Arc::clone(node),
                runtime: tokio::runtime::Handle::current(),
                timeout: std::time::Duration::from_secs(args.cluster_timeout),
            }));
            let hosted: Vec<u32> = node.hosted().collect();
            tracing::info!(
                "node {} of the cluster on {}: partitions {hosted:?} of {}",
                node.config().name,
                node.config().servers,
                node.config().partitions
            );
        }
        if args.no_auth {
            tracing::warn!("WITHOUT authentication (--no-auth): every namespace is open to anyone who can connect to {addr}");
        } else if tokens::list(&db).map(|t| t.iter().all(|t| t.revoked.is_some())).unwrap_or(false) {
            tracing::warn!("no token yet: make one with `mnemon token create --name NAME --allow-ns PATTERN --scope write`");
        }
        let finished = mnemon_server::serve(db, listener, options, stop).await?;
        if let Some(node) = node {
            match std::sync::Arc::try_unwrap(node) {
                Ok(node) => node.shutdown().await?,
                // (A request still holds it: its files are synced as they close.)
                Err(_) => tracing::warn!("the node was still in use at shutdown"),
            }
        }
        if finished {
            tracing::info!("stopped");
        } else {
            tracing::warn!("stopped; some requests did not finish within {} s", args.shutdown_grace);
        }
        Ok(())
    })
}

/// `mnemon ui`: the web view of the file on loopback, signed in by a one-time URL printed
/// on standard output; until SIGTERM or Ctrl-C.
pub(crate) fn ui(cli: &Cli, listen: std::net::SocketAddr) -> Result<()> {
    if !listen.ip().is_loopback() {
        return Err(usage(format!(
            "mnemon ui listens on loopback only, not {listen}: to serve others, use `mnemon serve` with tokens (its view is at /ui)"
        )));
    }
    logging("text")?;
    // Shared: agents keep writing to the file while it is viewed. Not created: a mistyped
    // path is an error, not an empty view.
    let db = with_embedder(cli, Db::builder(&cli.db).shared(true))?.open()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the view's runtime")?;
    runtime.block_on(async {
        let stop = signal();
        let listener =
            tokio::net::TcpListener::bind(listen).await.with_context(|| format!("cannot listen on {listen}"))?;
        let addr = listener.local_addr().context("cannot read the listening address")?;
        let secret = mnemon_server::ui::new_secret();
        let mut options = mnemon_server::Options::default();
        options.config.allowed_hosts = mnemon_server::local_hosts(addr);
        options.config.ui = mnemon_server::ui::UiMode::Owner { secret: secret.clone() };
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            writeln!(out, "http://{addr}/ui/login?secret={secret}")?;
            out.flush()?;
        }
        tracing::info!(
            "the view of {} is served on http://{addr}/ui/ (open the printed link once to sign in; Ctrl-C stops)",
            cli.db.display()
        );
        mnemon_server::serve(db, listener, options, stop).await?;
        Ok(())
    })
}

/// Start this process's cluster node: the partitions `hosted`, their files in --db.
async fn start_node(
    cli: &Cli,
    args: &ServeArgs,
    servers: &str,
    hosted: Vec<u32>,
) -> Result<std::sync::Arc<mnemon_cluster::Node>> {
    let name = match &args.node {
        Some(n) => n.clone(),
        None => std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "mnemon".into()),
    };
    let embedder = crate::open::asked_embedder(cli)?;
    let shared = !args.exclusive;
    let mut config = mnemon_cluster::NodeConfig::new(servers, &name, &cli.db);
    config.partitions = args.partition_count;
    config.hosted = hosted;
    config.replicas = usize::try_from(args.replicas).unwrap_or(1);
    config.timeout = std::time::Duration::from_secs(args.cluster_timeout);
    config.snapshot_every =
        (args.snapshot_every > 0).then(|| std::time::Duration::from_secs(args.snapshot_every));
    config.open = std::sync::Arc::new(move |p: &std::path::Path| {
        let b = Db::builder(p).shared(shared);
        match &embedder {
            Some(e) => b.embedder(e.clone()),
            None => b,
        }
    });
    let node = mnemon_cluster::Node::start(config)
        .await
        .with_context(|| format!("cannot start the cluster node on {servers}"))?;
    Ok(std::sync::Arc::new(node))
}

/// `--partitions`: `all`, or numbers and ranges (`0-7,12`), each below `count`.
fn parse_partitions(spec: &str, count: u32) -> Result<Vec<u32>> {
    if spec.trim() == "all" {
        return Ok((0..count).collect());
    }
    let mut out = std::collections::BTreeSet::new();
    for part in spec.split(',').map(str::trim) {
        let bad = || {
            usage(format!(
                "--partitions {spec:?}: expected `all` or numbers and ranges below {count} (`0-7,12`)"
            ))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => {
                (a.trim().parse::<u32>().map_err(|_| bad())?, b.trim().parse::<u32>().map_err(|_| bad())?)
            }
            None => {
                let p = part.parse::<u32>().map_err(|_| bad())?;
                (p, p)
            }
        };
        if lo > hi || hi >= count {
            return Err(bad());
        }
        out.extend(lo..=hi);
    }
    Ok(out.into_iter().collect())
}

/// A node's read-your-writes and redirects (see `mnemon_server::http::Cluster`).
#[derive(Debug)]
struct NodeConsistency {
    node: std::sync::Arc<mnemon_cluster::Node>,
    runtime: tokio::runtime::Handle,
    timeout: std::time::Duration,
}

impl mnemon_server::http::Cluster for NodeConsistency {
    fn wait(&self, token: &str) -> std::result::Result<(), (bool, String)> {
        let tokens = mnemon_cluster::parse_tokens(token).ok_or_else(|| {
            (true, format!("malformed consistency token {token:?} (expected `partition:sequence,...`)"))
        })?;
        for (p, seq) in tokens {
            // A partition hosted elsewhere: nothing to wait for here.
            if self.node.applied(p).is_none() {
                continue;
            }
            if !self.runtime.block_on(self.node.wait_applied(p, seq, self.timeout)) {
                return Err((
                    false,
                    format!(
                        "this node has not applied entry {seq} of partition {p} within {:?}",
                        self.timeout
                    ),
                ));
            }
        }
        Ok(())
    }

    fn take(&self) -> Option<String> {
        let t = mnemon_cluster::take_tokens();
        (!t.is_empty()).then(|| mnemon_cluster::format_tokens(&t))
    }

    fn elsewhere(&self, ns: &str) -> Option<String> {
        self.node.elsewhere(ns)
    }
}

/// `mnemon cluster ...`.
pub(crate) fn cluster(out: &mut Out, cmd: &crate::cli::ClusterCmd) -> Result<()> {
    let crate::cli::ClusterCmd::Status { cluster, partition_count } = cmd;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")?;
    let lines = runtime
        .block_on(mnemon_cluster::cluster_status(cluster, "MNEMON", *partition_count))
        .with_context(|| format!("cannot read the cluster's status from {cluster}"))?;
    if out.json {
        for l in &lines {
            out.json_line(&serde_json::to_value(l)?)?;
        }
        return Ok(());
    }
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|l| {
            vec![
                l.partition.to_string(),
                l.node.clone().unwrap_or_else(|| "(none)".into()),
                l.applied.to_string(),
                l.last.to_string(),
                l.lag.to_string(),
            ]
        })
        .collect();
    out.line(table(&["PARTITION", "NODE", "APPLIED", "LAST", "LAG"], &rows))?;
    Ok(())
}

/// The server's log on standard error, in `format` (text or json), filtered by MNEMON_LOG.
/// A closed standard error loses the lines, nothing else.
fn logging(format: &str) -> Result<()> {
    let filter = match std::env::var("MNEMON_LOG") {
        Ok(spec) => tracing_subscriber::EnvFilter::try_new(&spec)
            .map_err(|e| usage(format!("MNEMON_LOG={spec:?} is not a log filter: {e}")))?,
        // (The NATS client's own lines, its connections, only when they go wrong.)
        Err(_) => tracing_subscriber::EnvFilter::new("info,async_nats=warn"),
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

/// SIGTERM or Ctrl-C (SIGINT). The handlers are installed when this is called (not when the
/// future is first polled), so a signal that comes once the address is printed is never lost
/// to the default action: call it before saying where the server listens.
fn signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let interrupt = tokio::signal::ctrl_c();
    async move {
        #[cfg(unix)]
        match term {
            Some(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = interrupt => {}
                }
            }
            None => {
                let _ = interrupt.await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = interrupt.await;
        }
        tracing::info!("stopping");
    }
}

/// The file a server's tokens are in: --db, or for a cluster node's folder of partition files
/// the first of them (the one its partitioned handle keeps what belongs to no namespace in).
fn token_file(db: &std::path::Path) -> std::path::PathBuf {
    if !db.is_dir() {
        return db.to_path_buf();
    }
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(db)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "mnemon")
                && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('p'))
        })
        .collect();
    files.sort();
    files.into_iter().next().unwrap_or_else(|| db.join("p000.mnemon"))
}

/// `mnemon token ...`.
pub(crate) fn token(cli: &Cli, out: &mut Out, cmd: &TokenCmd) -> Result<()> {
    let db = Db::builder(token_file(&cli.db)).shared(true).create(true).open()?;
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
