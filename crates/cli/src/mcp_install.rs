//! `mnemon mcp install CLIENT`: register mnemon with an MCP client by writing its entry into
//! the client's configuration file (merged: the file's other servers and settings kept, a
//! backup of the file made first), or printing it with `--print`. The entry starts this very
//! binary on the absolute path of `--db`, in `--ns`; with `--server` (or `MNEMON_URL`), it points
//! the client at that server's `/mcp` over Streamable HTTP with the token as a bearer header.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use crate::cli::Cli;
use crate::cli::MCP_CLIENTS as CLIENTS;
use crate::open::usage;
use crate::output::Out;

/// How a client's file holds its servers.
struct Shape {
    /// The key of the servers' object.
    servers: &'static str,
    /// Whether a stdio entry names its type (`"type": "stdio"`).
    typed: bool,
    /// The key of a remote server's URL, or `None` if the file takes no remote server.
    url_key: Option<&'static str>,
}

fn shape(client: &str) -> Shape {
    match client {
        "vscode" => Shape { servers: "servers", typed: true, url_key: Some("url") },
        "claude-code" => Shape { servers: "mcpServers", typed: true, url_key: Some("url") },
        "zed" => Shape { servers: "context_servers", typed: false, url_key: Some("url") },
        "windsurf" => Shape { servers: "mcpServers", typed: false, url_key: Some("serverUrl") },
        "cursor" => Shape { servers: "mcpServers", typed: false, url_key: Some("url") },
        _ => Shape { servers: "mcpServers", typed: false, url_key: None },
    }
}

/// The configuration file of `client`: in the user's configuration folders, or (Claude Code,
/// VS Code) in the current project.
fn file_of(client: &str) -> Result<PathBuf> {
    let home = || -> Result<PathBuf> {
        std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map(PathBuf::from)
            .context("neither HOME nor USERPROFILE is set: give the file with --file")
    };
    let config = || -> Result<PathBuf> {
        if cfg!(target_os = "macos") {
            return Ok(home()?.join("Library/Application Support"));
        }
        if cfg!(windows) {
            return std::env::var_os("APPDATA").map(PathBuf::from).context("APPDATA is not set");
        }
        match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
            Some(x) => Ok(PathBuf::from(x)),
            None => Ok(home()?.join(".config")),
        }
    };
    let cwd = || std::env::current_dir().context("cannot read the current directory");
    Ok(match client {
        "claude-desktop" => config()?.join("Claude").join("claude_desktop_config.json"),
        "claude-code" => cwd()?.join(".mcp.json"),
        "cursor" => home()?.join(".cursor").join("mcp.json"),
        "vscode" => cwd()?.join(".vscode").join("mcp.json"),
        "windsurf" => home()?.join(".codeium").join("windsurf").join("mcp_config.json"),
        "zed" => {
            let base = if cfg!(windows) { config()? } else { home()?.join(".config") };
            base.join("zed").join("settings.json")
        }
        other => return Err(usage(format!("unknown MCP client {other:?}: one of {}", CLIENTS.join(", ")))),
    })
}

/// The entry for `client`: this binary on the file, or the server of `--server`.
fn entry(cli: &Cli, client: &str) -> Result<Value> {
    let s = shape(client);
    let mut e = Map::new();
    match &cli.server {
        Some(url) => {
            let Some(key) = s.url_key else {
                bail!(usage(format!(
                    "{client} takes no remote server in its file: add {url} as a connector in its settings, or install the local server (without --server)"
                )));
            };
            if s.typed {
                e.insert("type".into(), json!("http"));
            }
            let ns = query_value(&cli.ns);
            e.insert(key.into(), json!(format!("{}/mcp?ns={ns}", url.trim_end_matches('/'))));
            if let Some(t) = &cli.token {
                e.insert("headers".into(), json!({"Authorization": format!("Bearer {}", t.0)}));
            }
        }
        None => {
            if s.typed {
                e.insert("type".into(), json!("stdio"));
            }
            let exe = std::env::current_exe().context("cannot tell where this mnemon binary is")?;
            let db = std::fs::canonicalize(&cli.db)
                .or_else(|_| std::path::absolute(&cli.db))
                .with_context(|| format!("cannot make {} an absolute path", cli.db.display()))?;
            e.insert("command".into(), json!(exe.to_string_lossy()));
            e.insert("args".into(), json!(["--db", db.to_string_lossy(), "--ns", cli.ns, "mcp"]));
            e.insert("env".into(), json!({}));
        }
    }
    Ok(Value::Object(e))
}

/// `mnemon mcp install CLIENT [--name NAME] [--file FILE] [--print]`.
pub fn install(
    cli: &Cli,
    out: &mut Out,
    client: &str,
    name: &str,
    file: Option<&Path>,
    print: bool,
) -> Result<()> {
    if !CLIENTS.contains(&client) {
        return Err(usage(format!("unknown MCP client {client:?}: one of {}", CLIENTS.join(", "))));
    }
    if name.trim().is_empty() {
        return Err(usage("--name must not be empty"));
    }
    let entry = entry(cli, client)?;
    let key = shape(client).servers;
    if print {
        let snippet = json!({ key: { name: entry } });
        out.line(serde_json::to_string_pretty(&snippet)?)?;
        return Ok(());
    }
    let path = match file {
        Some(f) => f.to_path_buf(),
        None => file_of(client)?,
    };
    let (mut doc, existed) = match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().is_empty() => (Map::new(), true),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => (m, true),
            Ok(_) => bail!("{} is not a JSON object: not changed", path.display()),
            Err(e) => bail!(
                "{} is not plain JSON ({e}; comments?): not changed; add the entry by hand (`mnemon mcp install {client} --print`)",
                path.display()
            ),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Map::new(), false),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let servers = doc.entry(key.to_string()).or_insert_with(|| json!({}));
    let Value::Object(servers) = servers else {
        bail!("{}: `{key}` is not an object: not changed", path.display());
    };
    let replaced = servers.insert(name.to_string(), entry).is_some();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let backup = if existed {
        let b = backup_path(&path);
        std::fs::copy(&path, &b)
            .with_context(|| format!("cannot back {} up to {}", path.display(), b.display()))?;
        Some(b)
    } else {
        None
    };
    write_atomically(
        &path,
        &serde_json::to_vec_pretty(&Value::Object(doc))?,
        cli.token.is_some() && cli.server.is_some(),
    )?;
    let what = if replaced { "replaced" } else { "added" };
    let target = match &cli.server {
        Some(url) => format!("the server {url}"),
        None => format!("{} in {}", cli.db.display(), cli.ns),
    };
    if out.json {
        out.json_line(
            &json!({"client": client, "file": path, "name": name, "action": what, "backup": backup}),
        )?;
    } else {
        out.line(format!("{what} the MCP server {name:?} ({target}) in {}", path.display()))?;
        if let Some(b) = backup {
            out.line(format!("the file as it was: {}", b.display()))?;
        }
        out.line(format!("restart {client} (or reload its MCP servers) to use it"))?;
    }
    Ok(())
}

/// `s` percent-encoded for a query string's value.
fn query_value(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~:*".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `FILE.mnemon-backup`, or with a number when that is taken.
fn backup_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let first = path.with_file_name(format!("{name}.mnemon-backup"));
    if !first.exists() {
        return first;
    }
    (1..)
        .map(|i| path.with_file_name(format!("{name}.mnemon-backup.{i}")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// Write `bytes` to `path` through a file beside it, renamed over it: a reader never sees half
/// a file. A file holding a token is readable by its owner only.
fn write_atomically(path: &Path, bytes: &[u8], secret: bool) -> Result<()> {
    let tmp = path.with_file_name(format!(
        ".{}.mnemon-tmp",
        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot restrict {}", tmp.display()))?;
    }
    #[cfg(not(unix))]
    let _ = secret;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
}
