//! What the end-to-end tests of the binary share: running `mnemon` as a child process and
//! reading its answer.
#![allow(dead_code, reason = "each test binary uses part of it")]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "expected success, got {}: {}", self.code, self.stderr);
        self.stdout.trim()
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(self.ok()).expect("one JSON document")
    }

    pub fn json_lines(&self) -> Vec<Value> {
        self.ok().lines().map(|l| serde_json::from_str(l).expect("JSON line")).collect()
    }

    /// A failure with the given exit code and a one-line message containing `needle`.
    pub fn fails(&self, code: i32, needle: &str) {
        assert_eq!(self.code, code, "exit code; stderr: {}", self.stderr);
        let lines: Vec<&str> = self.stderr.trim().lines().collect();
        assert_eq!(lines.len(), 1, "one-line error expected, got: {:?}", self.stderr);
        assert!(self.stderr.contains(needle), "{:?} should mention {needle:?}", self.stderr);
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
    }
}

pub fn run_at(dir: &Path, db: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemon"));
    // The local model is looked for in `dir/model` (absent unless a test links it there), so
    // that `init` picks the hashing embedder whatever this machine has installed.
    cmd.current_dir(dir)
        .env_remove("MNEMON_DB")
        .env_remove("MNEMON_NS")
        .env_remove("MNEMON_EMBEDDER")
        .env("MNEMON_MINILM_DIR", dir.join("model"))
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
