//! One's own embedder from Python: a callable that maps a list of texts to vectors, or a
//! LangChain `Embeddings` object (its `embed_documents` for records, `embed_query` for
//! queries), run by the engine wherever it embeds, with the GIL taken only for the call. The
//! vectors are scaled to unit length and stored as the built-in embedders' are; the database
//! records the space as `python:NAME` with its dimension, found by embedding one probe text
//! when the file is opened.

use mnemon::embed::{EmbedError, Embedder};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// A Python embedding function as an [`Embedder`].
pub(crate) struct PyEmbedder {
    obj: Py<PyAny>,
    /// `embed_documents`/`embed_query` (LangChain) rather than a plain call.
    langchain: bool,
    id: String,
    dimension: usize,
}

impl PyEmbedder {
    /// Wrap `obj`, named `name` (default: its `model`/`model_name` attribute, else its type's
    /// or function's name), learning its dimension from one call.
    pub(crate) fn new(py: Python<'_>, obj: Bound<'_, PyAny>, name: Option<String>) -> Result<Self, String> {
        let langchain = obj.hasattr("embed_documents").unwrap_or(false);
        if !langchain && !obj.is_callable() {
            return Err(format!(
                "embedder must be a name (\"hash\", \"local\", \"http\"), a function from a list of texts to vectors, \
                 or an object with embed_documents (LangChain's Embeddings), not {}",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ));
        }
        let name = match name {
            Some(n) => n,
            None => default_name(&obj),
        };
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(format!("embedder_name {name:?} must be a non-empty line"));
        }
        let mut e = PyEmbedder { obj: obj.unbind(), langchain, id: format!("python:{name}"), dimension: 0 };
        let probe = e.call(py, &["mnemon: the dimension of this embedder"]).map_err(|err| err.to_string())?;
        e.dimension = probe.first().map_or(0, Vec::len);
        if e.dimension == 0 {
            return Err(format!("embedder {} returned an empty vector", e.id));
        }
        Ok(e)
    }

    fn call(&self, py: Python<'_>, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let failed = |reason: String| EmbedError::Model { path: self.id.clone().into(), reason };
        let obj = self.obj.bind(py);
        let list = PyList::new(py, texts).map_err(|e| failed(e.to_string()))?;
        let out =
            if self.langchain { obj.call_method1("embed_documents", (list,)) } else { obj.call1((list,)) }
                .map_err(|e| failed(format!("raised {e}")))?;
        // numpy arrays and the like: as plain lists first.
        let out = if out.hasattr("tolist").unwrap_or(false) {
            out.call_method0("tolist").unwrap_or(out)
        } else {
            out
        };
        let vectors: Vec<Vec<f32>> = out.extract().map_err(|_| {
            failed(format!("returned {}, not a list of vectors (lists of numbers)", type_name(&out)))
        })?;
        if vectors.len() != texts.len() {
            return Err(failed(format!("returned {} vectors for {} texts", vectors.len(), texts.len())));
        }
        Ok(vectors)
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an object".into())
}

fn default_name(obj: &Bound<'_, PyAny>) -> String {
    for attr in ["model", "model_name", "__name__"] {
        if let Ok(v) = obj.getattr(attr).and_then(|v| v.extract::<String>())
            && !v.is_empty()
            && v != "<lambda>"
        {
            return v;
        }
    }
    type_name(obj)
}

impl Embedder for PyEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = Python::attach(|py| self.call(py, texts))?;
        let mut out = Vec::with_capacity(vectors.len());
        for (i, v) in vectors.into_iter().enumerate() {
            if v.len() != self.dimension {
                return Err(EmbedError::Model {
                    path: self.id.clone().into(),
                    reason: format!("vector {i} has {} dimensions, not {}", v.len(), self.dimension),
                });
            }
            let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
            if norm == 0.0 || !norm.is_finite() {
                return Err(EmbedError::Model {
                    path: self.id.clone().into(),
                    reason: format!("vector {i} is zero or not finite"),
                });
            }
            #[allow(clippy::cast_possible_truncation)]
            let inv = (1.0 / norm) as f32;
            out.push(v.into_iter().map(|x| x * inv).collect());
        }
        Ok(out)
    }
}
