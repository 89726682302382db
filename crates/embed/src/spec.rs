//! Naming an embedder: how the command line (`--embedder`), the server and the bindings take
//! one, and the one place a name becomes an embedder.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use crate::{EmbedError, Embedder, HashEmbedder, HttpConfig, HttpEmbedder};

/// An embedder by name: `hash` (offline, words only), `http` (an OpenAI-compatible server
/// configured from `MNEMON_EMBED_URL`, `MNEMON_EMBED_MODEL`, `MNEMON_EMBED_KEY`), `minilm` or
/// `minilm:DIR` (all-MiniLM-L6-v2 run locally, from its default directory or DIR); `local`
/// and `local:DIR` are stable aliases of the recommended local model, MiniLM today.
///
/// ```
/// use mnemon_embed::EmbedderSpec;
///
/// let spec: EmbedderSpec = "local".parse()?;
/// assert_eq!(spec.to_string(), "minilm");
/// assert_eq!("hash".parse::<EmbedderSpec>()?.build()?.model_id(), "mnemon-hash-v1-384");
/// assert!("bert".parse::<EmbedderSpec>().is_err());
/// # Ok::<(), mnemon_embed::EmbedError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmbedderSpec {
    /// [`HashEmbedder`].
    Hash,
    /// [`HttpEmbedder`] configured from the environment ([`HttpConfig::from_env`]).
    Http,
    /// The local MiniLM model, from this directory or its default one.
    MiniLm(Option<PathBuf>),
}

impl FromStr for EmbedderSpec {
    type Err = EmbedError;

    fn from_str(s: &str) -> Result<Self, EmbedError> {
        let model = s.strip_prefix("local").or_else(|| s.strip_prefix("minilm"));
        match (s, model) {
            ("hash", _) => Ok(EmbedderSpec::Hash),
            ("http", _) => Ok(EmbedderSpec::Http),
            (_, Some("")) => Ok(EmbedderSpec::MiniLm(None)),
            (_, Some(rest)) if rest.len() > 1 && rest.starts_with(':') => {
                Ok(EmbedderSpec::MiniLm(Some(PathBuf::from(&rest[1..]))))
            }
            _ => Err(EmbedError::Config(format!(
                "unknown embedder {s:?} (local[:DIR], hash, http or minilm[:DIR])"
            ))),
        }
    }
}

impl fmt::Display for EmbedderSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedderSpec::Hash => f.write_str("hash"),
            EmbedderSpec::Http => f.write_str("http"),
            EmbedderSpec::MiniLm(None) => f.write_str("minilm"),
            EmbedderSpec::MiniLm(Some(dir)) => write!(f, "minilm:{}", dir.display()),
        }
    }
}

impl EmbedderSpec {
    /// The embedder a new database gets when none is asked for: the local model when this
    /// build has it and its files are installed (in `LocalMiniLm::default_dir`, feature `local-minilm`,
    /// by `mnemon model fetch`), else `None`: the hashing embedder. `mnemon init` and the
    /// Python package's `open` of a new file both follow it.
    pub fn default_for_new_database() -> Option<EmbedderSpec> {
        #[cfg(feature = "local-minilm")]
        if crate::LocalMiniLm::default_dir().join("model.safetensors").is_file() {
            return Some(EmbedderSpec::MiniLm(None));
        }
        None
    }

    /// The embedder it names.
    pub fn build(&self) -> Result<Arc<dyn Embedder>, EmbedError> {
        Ok(match self {
            EmbedderSpec::Hash => Arc::new(HashEmbedder::default()),
            EmbedderSpec::Http => Arc::new(HttpEmbedder::new(HttpConfig::from_env())?),
            EmbedderSpec::MiniLm(dir) => local_minilm(dir.clone())?,
        })
    }
}

#[cfg(feature = "local-minilm")]
fn local_minilm(dir: Option<PathBuf>) -> Result<Arc<dyn Embedder>, EmbedError> {
    let dir = dir.unwrap_or_else(crate::LocalMiniLm::default_dir);
    Ok(Arc::new(crate::LocalMiniLm::open(dir)?))
}

#[cfg(not(feature = "local-minilm"))]
fn local_minilm(_dir: Option<PathBuf>) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::Config(
        "this build leaves out the local MiniLM embedder: build mnemon with the `local-minilm` \
         feature (the default of the command line) and install the model with `mnemon model fetch`"
            .into(),
    ))
}
