//! The web view in a real browser: Debian's chromium driven by Playwright for Python (both
//! installed by scripts/fetch-browser.sh), through `mnemon ui` and `mnemon serve` as child
//! processes (`ui/view.py`): signing in, the namespaces, sections, markup kept as text, add,
//! edit, supersede, retire and forget, both time controls and the slider, search, an agent's
//! write appearing live, what changed, a narrow window, a read-only token, CSRF, Origin and
//! the Content-Security-Policy. Screenshots go to $MNEMON_UI_SHOTS (docs/ui/ for the docs).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;

use std::path::PathBuf;
use std::time::Duration;

fn python() -> PathBuf {
    let venv = std::env::var_os("MNEMON_BROWSER_VENV").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/mnemon/browser")
    });
    let py = venv.join("bin/python");
    assert!(
        py.is_file() && std::path::Path::new("/usr/bin/chromium").is_file(),
        "chromium or Playwright is not installed (in {}): run scripts/fetch-browser.sh first",
        venv.display()
    );
    py
}

#[test]
fn a_person_uses_the_web_view_in_a_real_browser() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ui/view.py");
    common::python_steps(
        &python(),
        &script,
        &[
            "signed in once",
            "a <script> entry stays text",
            "ok: add",
            "ok: edit",
            "ok: supersede",
            "ok: retire",
            "time controls on both axes",
            "the slider",
            "ok: search",
            "an agent's write appears live",
            "what changed",
            "forget, after a confirmation",
            "narrow window",
            "a read-only token finds no way to write",
            "CSRF is checked",
            "Origin and Content-Security-Policy",
        ],
        Duration::from_secs(300),
    );
}
