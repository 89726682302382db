//! What the end-to-end tests of the binary share: running `mnemon` as a child process and
//! reading its answer.
#![allow(dead_code, reason = "each test binary uses part of it")]

use std::io::{BufRead, BufReader, Write};
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
    run_env(dir, db, args, stdin, &[])
}

/// [`run_at`] with environment variables set (MNEMON_URL and MNEMON_TOKEN are unset unless
/// given here: a developer's own settings never reach a test).
pub fn run_env(dir: &Path, db: &Path, args: &[&str], stdin: Option<&str>, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemon"));
    cmd.env_remove("MNEMON_URL")
        .env_remove("MNEMON_TOKEN")
        .env_remove("MNEMON_MODEL_URL")
        .envs(env.iter().copied());
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

/// `mnemon serve ARGS --listen 127.0.0.1:0` on `db`: the child, its address, and its standard
/// error after the line naming the address.
pub fn spawn_serve(
    dir: &std::path::Path,
    db: &std::path::Path,
    args: &[&str],
) -> (std::process::Child, String, BufReader<std::process::ChildStderr>) {
    spawn_serve_env(dir, db, args, &[])
}

/// [`spawn_serve`] with environment variables set.
pub fn spawn_serve_env(
    dir: &std::path::Path,
    db: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (std::process::Child, String, BufReader<std::process::ChildStderr>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mnemon"))
        .current_dir(dir)
        .env_remove("MNEMON_LOG")
        .envs(env.iter().copied())
        .env("MNEMON_MINILM_DIR", dir.join("model"))
        .env_remove("MNEMON_URL")
        .env_remove("MNEMON_TOKEN")
        .args(["--db", db.to_str().unwrap(), "serve"])
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    // The first line saying where it listens (a cluster node may log its connections first).
    let mut line = String::new();
    let mut before = String::new();
    while !line.contains("listening on") {
        before.push_str(&line);
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server stopped: {before}");
    }
    let addr = line
        .split("://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    (child, addr, stderr)
}

/// A new token on `db` named `name`, reaching `pattern` with `scope` (`mnemon token create`).
pub fn make_token(dir: &Path, db: &Path, name: &str, pattern: &str, scope: &str) -> String {
    let made = run_at(
        dir,
        db,
        &["--json", "token", "create", "--name", name, "--allow-ns", pattern, "--scope", scope],
        None,
    )
    .json();
    made["token"].as_str().expect("a token").to_string()
}

/// Run `script` with `python`, the `mnemon` binary and a fresh work directory as its
/// arguments (and `MNEMON_MINILM_DIR` in the work directory, so that no model is found), with a
/// deadline: its standard output, after checking it exited 0 and printed each of `steps`.
pub fn python_steps(python: &Path, script: &Path, steps: &[&str], deadline: std::time::Duration) -> String {
    let work = tempfile::tempdir().unwrap();
    let mut child = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_mnemon"))
        .arg(work.path())
        .env("MNEMON_MINILM_DIR", work.path().join("model"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(work.path().join("stdout.txt")).unwrap())
        .stderr(std::fs::File::create(work.path().join("stderr.txt")).unwrap())
        .spawn()
        .unwrap();
    // A hung session fails the test instead of hanging CI.
    let end = std::time::Instant::now() + deadline;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > end {
            child.kill().unwrap();
            panic!("{} did not finish in {deadline:?}", script.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    let stdout = std::fs::read_to_string(work.path().join("stdout.txt")).unwrap();
    let stderr = std::fs::read_to_string(work.path().join("stderr.txt")).unwrap();
    assert!(status.success(), "{} failed:\n{stdout}\n{stderr}", script.display());
    for step in steps {
        assert!(stdout.contains(step), "missing {step:?}:\n{stdout}\n{stderr}");
    }
    stdout
}
