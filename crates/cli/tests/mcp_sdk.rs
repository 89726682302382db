//! `mnemon mcp` driven by the official MCP Python SDK (mcp 2.3.0, installed pinned and
//! hash-checked by scripts/fetch-mcp-sdk.sh): a coding agent's session, concurrent calls, two
//! servers on one file, a restart, and SIGKILL right after acknowledged writes
//! (`mcp_sdk/session.py`); and `mnemon serve`'s /mcp over Streamable HTTP
//! (`mcp_sdk/http_session.py`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;

use std::path::PathBuf;
use std::time::Duration;

fn python() -> PathBuf {
    let venv = std::env::var_os("MNEMON_MCP_SDK_VENV").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/mnemon/mcp-sdk")
    });
    let py = venv.join("bin/python");
    assert!(
        py.is_file(),
        "the MCP Python SDK is not installed in {}: run scripts/fetch-mcp-sdk.sh first",
        venv.display()
    );
    py
}

/// Run `script` (in tests/mcp_sdk/) with the SDK's Python: see [`common::python_steps`].
fn run_script(script: &str, steps: &[&str]) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_sdk").join(script);
    common::python_steps(&python(), &script, steps, Duration::from_secs(300));
}

#[test]
fn the_official_python_sdk_drives_a_session() {
    run_script(
        "session.py",
        &[
            "ok realistic session",
            "ok agent memory",
            "ok high-level client",
            "ok resource subscriptions",
            "ok concurrent calls",
            "ok two servers on one file",
            "ok restart",
            "ok SIGKILL after acknowledged writes",
        ],
    );
}

/// `mnemon serve`'s /mcp over Streamable HTTP (`mcp_sdk/http_session.py`): a session with a
/// token in the namespace `?ns=` names, scopes, refusals, and the REST API reading its writes.
#[test]
fn the_official_python_sdk_drives_a_session_over_http() {
    run_script(
        "http_session.py",
        &[
            "ok session over HTTP",
            "ok read-only token",
            "ok refusals",
            "ok REST sees MCP's writes",
            "ok graceful stop",
        ],
    );
}
