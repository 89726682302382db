//! `mnemon mcp install CLIENT`: each client's file written where it looks, merged with what it
//! held (a backup first), printed with --print, a remote server's entry, and the command the
//! entry names starting a server that answers MCP's `initialize`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::Env;
use crate::common::run_env;

/// Where each client's file lands under a home of `home` and a project in `cwd`, and the key
/// of its servers.
fn files(
    home: &std::path::Path,
    cwd: &std::path::Path,
) -> Vec<(&'static str, std::path::PathBuf, &'static str)> {
    vec![
        ("claude-desktop", home.join(".config/Claude/claude_desktop_config.json"), "mcpServers"),
        ("claude-code", cwd.join(".mcp.json"), "mcpServers"),
        ("cursor", home.join(".cursor/mcp.json"), "mcpServers"),
        ("vscode", cwd.join(".vscode/mcp.json"), "servers"),
        ("windsurf", home.join(".codeium/windsurf/mcp_config.json"), "mcpServers"),
        ("zed", home.join(".config/zed/settings.json"), "context_servers"),
    ]
}

fn read(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Start the entry's command and ask it `initialize`: the server's name.
fn answers_initialize(entry: &Value) -> String {
    let args: Vec<String> =
        entry["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    let mut child = Command::new(entry["command"].as_str().unwrap())
        .args(&args)
        .env_remove("MNEMON_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    drop(stdin);
    let _ = child.wait();
    let v: Value = serde_json::from_str(&line).unwrap();
    v["result"]["serverInfo"]["name"].as_str().unwrap_or_default().to_string()
}

#[test]
fn each_client_gets_an_entry_merged_into_its_file_that_starts_a_server() {
    let e = Env::new();
    e.run(&["init"]).ok();
    let home = e.dir.path().join("home");
    let cwd = e.dir.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let env = [("HOME", home.to_str().unwrap()), ("XDG_CONFIG_HOME", "")];
    for (client, path, key) in files(&home, &cwd) {
        // A file with another server and a setting of its own, which must survive.
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let before =
            json!({ key: { "other": { "command": "other-server", "args": ["--flag"] } }, "theme": "dark" });
        std::fs::write(&path, serde_json::to_string_pretty(&before).unwrap()).unwrap();
        // --print writes nothing.
        let printed =
            run_env(&cwd, &e.db(), &["--ns", "kg", "mcp", "install", client, "--print"], None, &env);
        let snippet: Value = serde_json::from_str(printed.ok()).unwrap();
        assert_eq!(read(&path), before, "{client}: --print changed the file");
        // Installed: merged, backed up, the same entry as printed.
        run_env(&cwd, &e.db(), &["--ns", "kg", "mcp", "install", client], None, &env).ok();
        let after = read(&path);
        assert_eq!(after["theme"], "dark", "{client}");
        assert_eq!(after[key]["other"], before[key]["other"], "{client}: another server lost");
        let entry = &after[key]["mnemon"];
        assert_eq!(entry, &snippet[key]["mnemon"], "{client}");
        assert_eq!(entry["args"][1], std::fs::canonicalize(e.db()).unwrap().to_str().unwrap(), "{client}");
        assert_eq!(entry["args"][3], "kg");
        if matches!(client, "vscode" | "claude-code") {
            assert_eq!(entry["type"], "stdio", "{client}");
        }
        let backup =
            path.with_file_name(format!("{}.mnemon-backup", path.file_name().unwrap().to_string_lossy()));
        assert_eq!(read(&backup), before, "{client}: the backup holds the file as it was");
        assert_eq!(answers_initialize(entry), "mnemon", "{client}: the command starts a server");
        // Again: the entry is replaced, not doubled, and another backup is kept.
        let again = run_env(&cwd, &e.db(), &["--ns", "kg", "mcp", "install", client], None, &env);
        assert!(again.ok().contains("replaced"), "{client}");
        assert_eq!(read(&path)[key].as_object().unwrap().len(), 2, "{client}");
    }
    // A client without a file yet: created with its folder.
    let fresh = tempfile::tempdir().unwrap();
    let env2 = [("HOME", fresh.path().to_str().unwrap()), ("XDG_CONFIG_HOME", "")];
    run_env(&cwd, &e.db(), &["mcp", "install", "cursor"], None, &env2).ok();
    assert!(read(&fresh.path().join(".cursor/mcp.json"))["mcpServers"]["mnemon"].is_object());
}

#[test]
fn a_remote_entry_names_the_servers_mcp_and_refusals_are_one_line() {
    let e = Env::new();
    let home = e.dir.path().join("home");
    let env = [("HOME", home.to_str().unwrap()), ("XDG_CONFIG_HOME", "")];
    let remote = ["--server", "http://127.0.0.1:7373", "--token", "mnemon_t_secret", "--ns", "project:a"];
    let args: Vec<&str> = remote.iter().copied().chain(["mcp", "install", "vscode", "--print"]).collect();
    let v: Value = serde_json::from_str(run_env(e.dir.path(), &e.db(), &args, None, &env).ok()).unwrap();
    assert_eq!(
        v["servers"]["mnemon"],
        json!({"type": "http", "url": "http://127.0.0.1:7373/mcp?ns=project:a", "headers": {"Authorization": "Bearer mnemon_t_secret"}})
    );
    let args: Vec<&str> = remote.iter().copied().chain(["mcp", "install", "windsurf"]).collect();
    run_env(e.dir.path(), &e.db(), &args, None, &env).ok();
    let path = home.join(".codeium/windsurf/mcp_config.json");
    assert_eq!(read(&path)["mcpServers"]["mnemon"]["serverUrl"], "http://127.0.0.1:7373/mcp?ns=project:a");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "it holds a token");
    }
    let args: Vec<&str> = remote.iter().copied().chain(["mcp", "install", "claude-desktop"]).collect();
    run_env(e.dir.path(), &e.db(), &args, None, &env).fails(2, "takes no remote server");
    run_env(e.dir.path(), &e.db(), &["mcp", "install", "emacs"], None, &env).fails(2, "possible values");
    // A file that is not plain JSON (Zed's settings with comments) is left as it is.
    let zed = home.join(".config/zed/settings.json");
    std::fs::create_dir_all(zed.parent().unwrap()).unwrap();
    std::fs::write(&zed, "// my settings\n{\"theme\": \"x\"}\n").unwrap();
    run_env(e.dir.path(), &e.db(), &["mcp", "install", "zed"], None, &env).fails(1, "not plain JSON");
    assert_eq!(std::fs::read_to_string(&zed).unwrap(), "// my settings\n{\"theme\": \"x\"}\n");
}
