//! End-to-end tests of the `mnemon` binary: every command, and the bad inputs.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod behaviour;
#[path = "../common/mod.rs"]
mod common;
mod domain;
mod imports;
mod inputs;
mod mcp_install;
#[cfg(feature = "local-minilm")]
mod model;
mod records;
mod search;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Run, run_at};
use serde_json::Value;

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Env { dir: tempfile::tempdir().unwrap() }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("m.redb")
    }

    fn run(&self, args: &[&str]) -> Run {
        run_at(self.dir.path(), &self.db(), args, None)
    }

    fn run_in(&self, args: &[&str], stdin: Option<&str>) -> Run {
        run_at(self.dir.path(), &self.db(), args, stdin)
    }

    fn init(&self) {
        self.run(&["init"]).ok();
    }

    /// Make the machine's local model (scripts/fetch-minilm.sh) this environment's.
    #[cfg(feature = "local-minilm")]
    fn install_model(&self) {
        let real = mnemon::embed::LocalMiniLm::default_dir();
        assert!(real.join("model.safetensors").is_file(), "run scripts/fetch-minilm.sh first");
        std::os::unix::fs::symlink(real, self.dir.path().join("model")).unwrap();
    }

    fn add(&self, kind: &str, data: &str, extra: &[&str]) -> String {
        let mut args = vec!["add", kind, "--data", data];
        args.extend_from_slice(extra);
        self.run(&args).ok().to_string()
    }

    fn export_all(&self) -> String {
        self.run(&["export", "--all"]).ok().to_string()
    }
}

/// A command line split as a shell would: words, and single-quoted words kept whole.
fn shell_words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            '"' if !quoted => {}
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}
