//! The web view in a real browser: Debian's chromium driven by Playwright for Python (both
//! installed by scripts/fetch-browser.sh), through `mnemon ui` and `mnemon serve` as child
//! processes (`ui/view.py`): signing in, the namespaces, sections, markup kept as text, add,
//! edit, supersede, retire and forget, both time controls and the slider, search, an agent's
//! write appearing live, what changed, a narrow window, a read-only token, CSRF, Origin and
//! the Content-Security-Policy. Screenshots go to $MNEMON_UI_SHOTS (docs/ui/ for the docs).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let work = tempfile::tempdir().unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/ui/view.py");
    let mut child = Command::new(python())
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_mnemon"))
        .arg(work.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(work.path().join("stdout.txt")).unwrap())
        .stderr(std::fs::File::create(work.path().join("stderr.txt")).unwrap())
        .spawn()
        .unwrap();
    // A hung browser fails the test instead of hanging CI.
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the browser session did not finish in 300 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    let stdout = std::fs::read_to_string(work.path().join("stdout.txt")).unwrap();
    let stderr = std::fs::read_to_string(work.path().join("stderr.txt")).unwrap();
    assert!(status.success(), "the browser session failed:\n{stdout}\n{stderr}");
    for step in [
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
    ] {
        assert!(stdout.contains(step), "missing {step:?}:\n{stdout}\n{stderr}");
    }
}
