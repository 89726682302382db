//! A client of `mnemon serve`: every operation of mnemon's operation layer
//! ([`mnemon::ops`]), sent to the server's REST API as the same request types and read back
//! as the same response types, so that a program (the `mnemon` CLI with `--server`, the
//! Python package's `connect`) works against a server exactly as against a file.
//!
//! Errors are [`mnemon::Error::Remote`] with the operation layer's stable [`mnemon::Code`]
//! (the server's own codes map onto it: `unauthorized` is `forbidden`, `overloaded` and
//! `timeout` are `unavailable`, `too_large` is `invalid_input`), and the server's message.
//! The token is sent in the `Authorization` header only: no error or debug output shows it.
//!
//! ```no_run
//! use mnemon::ops::{Recall, Remember};
//! use mnemon_client::Client;
//!
//! # fn main() -> Result<(), mnemon::Error> {
//! let client = Client::new("http://127.0.0.1:7373", Some("mnemon_...".into()))?;
//! let ns = client.session("project:demo");
//! ns.call(Remember { kind: "gotcha".into(), text: Some("redb wants the file to itself".into()), ..Default::default() })?;
//! let found = ns.call(Recall { query: "redb file".into(), ..Default::default() })?;
//! println!("{} hit(s)", found.hits.len());
//! # Ok(())
//! # }
//! ```

use std::io::Write;
use std::time::Duration;

use mnemon::ops::Operation;
use mnemon::transfer::ImportReport;
use mnemon::{Code, Error};
use reqwest::Url;
use reqwest::blocking::{RequestBuilder, Response};
use serde_json::Value;

/// A connection to a server: its base URL (a path prefix, as behind a reverse proxy, is
/// kept) and the token it is called with.
#[derive(Clone)]
pub struct Client {
    http: reqwest::blocking::Client,
    base: Url,
    token: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base.as_str())
            .field("token", &self.token.as_ref().map(|_| "<hidden>"))
            .finish()
    }
}

impl Client {
    /// A client of the server at `url` (`http://host:port` or `https://...`, with a path
    /// prefix if the server is behind one), calling with `token` if given. Nothing is sent
    /// until the first call.
    pub fn new(url: &str, token: Option<String>) -> Result<Client, Error> {
        Client::with_options(url, token, None)
    }

    /// [`Client::new`], also trusting the certificate authority in `ca_pem` (PEM) for an
    /// `https://` server, besides the public ones: a server with a certificate of its own.
    pub fn with_options(url: &str, token: Option<String>, ca_pem: Option<&[u8]>) -> Result<Client, Error> {
        let mut base = Url::parse(url).map_err(|e| invalid(format!("{url:?} is not a server URL: {e}")))?;
        if !matches!(base.scheme(), "http" | "https") || base.cannot_be_a_base() || base.host().is_none() {
            return Err(invalid(format!("{url:?} is not a server URL: use http://HOST:PORT or https://...")));
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(invalid("the server URL must not carry a user or password: give the token instead"));
        }
        base.set_query(None);
        base.set_fragment(None);
        let mut http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // Operations such as a reindex run for minutes: no limit on the whole exchange.
            .timeout(None);
        if let Some(pem) = ca_pem {
            let ca = reqwest::Certificate::from_pem(pem)
                .map_err(|e| invalid(format!("the certificate authority is not a PEM certificate: {e}")))?;
            http = http.add_root_certificate(ca);
        }
        let http = http.build().map_err(|e| unavailable(format!("cannot start an HTTP client: {e}")))?;
        Ok(Client { http, base, token })
    }

    /// The server's base URL.
    pub fn url(&self) -> &str {
        self.base.as_str()
    }

    /// A session in namespace `ns`: operations that name no namespace run there.
    pub fn session(&self, ns: &str) -> RemoteSession {
        RemoteSession { client: self.clone(), ns: ns.to_string() }
    }

    /// Run operation `op` in namespace `ns` on the server (`POST /v1/ns/{ns}/ops/{name}`).
    pub fn call<O: Operation>(&self, ns: &str, op: &O) -> Result<O::Output, Error> {
        let url = self.url_of(&["v1", "ns", ns, "ops", O::NAME])?;
        let response = self.send(self.http.post(url).json(op))?;
        let body = response.bytes().map_err(|e| unreachable(&self.base, &e))?;
        serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("the server's answer to {} could not be read: {e}", O::NAME)))
    }

    /// Write namespace `ns`'s records (every namespace's when `None`: the token must reach
    /// them all) as JSON lines to `out`, as the server streams them; the bytes written.
    pub fn export(&self, ns: Option<&str>, out: &mut dyn Write) -> Result<u64, Error> {
        let url = match ns {
            Some(ns) => self.url_of(&["v1", "ns", ns, "export"])?,
            None => self.url_of(&["v1", "export"])?,
        };
        let mut response = self.send(self.http.get(url))?;
        response.copy_to(out).map_err(|e| unavailable(format!("the export from {} stopped: {e}", self.base)))
    }

    /// Import `lines` (the export format, JSON lines) into the server, into namespace `ns`
    /// and those the lines name (the token must reach them); with `partial`, lines that
    /// fail are reported and the others imported.
    pub fn import(&self, ns: &str, lines: Vec<u8>, partial: bool) -> Result<ImportReport, Error> {
        let mut url = self.url_of(&["v1", "ns", ns, "import"])?;
        if partial {
            url.set_query(Some("partial=true"));
        }
        let request =
            self.http.post(url).header(reqwest::header::CONTENT_TYPE, "application/jsonl").body(lines);
        let body = self.send(request)?.bytes().map_err(|e| unreachable(&self.base, &e))?;
        serde_json::from_slice(&body)
            .map_err(|e| unavailable(format!("the server's answer to an import could not be read: {e}")))
    }

    /// The URL of `segments` under the base (each segment percent-encoded as needed).
    fn url_of(&self, segments: &[&str]) -> Result<Url, Error> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| invalid(format!("{} cannot take a path", self.base)))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    /// Send `request` with the token; a non-2xx answer becomes the error it describes.
    fn send(&self, request: RequestBuilder) -> Result<Response, Error> {
        let request = match &self.token {
            Some(t) => request.bearer_auth(t),
            None => request,
        };
        let response = request.send().map_err(|e| unreachable(&self.base, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body: Value = response.json().unwrap_or(Value::Null);
        let code = body.get("code").and_then(Value::as_str).unwrap_or("");
        let detail = body
            .get("detail")
            .and_then(Value::as_str)
            .map_or_else(|| format!("the server answered {status}"), |d| d.to_string());
        Err(Error::Remote { code: code_of(code, status.as_u16()), message: detail })
    }
}

/// A [`Client`] working in one namespace: the same `call` as [`mnemon::ops::Session`].
#[derive(Clone, Debug)]
pub struct RemoteSession {
    client: Client,
    ns: String,
}

impl RemoteSession {
    /// Run operation `op` (in the session's namespace unless it names another).
    pub fn call<O: Operation>(&self, op: O) -> Result<O::Output, Error> {
        self.client.call(&self.ns, &op)
    }

    /// The session's namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// Where a program's calls run: a session over a database file open in this process, or a
/// server's (`--db` or `--server` in the CLI, `mnemon.open` or `mnemon.connect` in Python).
/// The same [`Conn::call`] either way.
///
/// ```
/// use mnemon::ops::Remember;
/// use mnemon_client::Conn;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// let db = mnemon::Db::create(dir.path().join("memory.redb"))?;
/// let conn = Conn::local(db, "project:demo")?;
/// conn.call(Remember { kind: "gotcha".into(), text: Some("redb wants the file to itself".into()), ..Default::default() })?;
/// assert!(conn.db().is_some());
/// # Ok(())
/// # }
/// ```
pub enum Conn {
    /// The file, through a session in this process.
    Local(mnemon::ops::Session),
    /// A server, through its REST API.
    Remote(RemoteSession),
}

impl Conn {
    /// A session over `db` in namespace `ns`, reaching every namespace: whoever holds the
    /// file has all of it (a server's session reaches what its token allows).
    pub fn local(db: mnemon::Db, ns: &str) -> Result<Conn, Error> {
        Ok(Conn::Local(mnemon::ops::Session::new(db, ns)?.allow("*")))
    }

    /// Run operation `op`.
    pub fn call<O: Operation>(&self, op: O) -> Result<O::Output, Error> {
        match self {
            Conn::Local(s) => s.call(op),
            Conn::Remote(s) => s.call(op),
        }
    }

    /// Now, on the database's clock (a server's: this machine's clock).
    pub fn now(&self) -> mnemon::Timestamp {
        match self {
            Conn::Local(s) => s.db().now(),
            Conn::Remote(_) => mnemon::Timestamp::now(),
        }
    }

    /// The file's database, when the calls run on one.
    pub fn db(&self) -> Option<&mnemon::Db> {
        match self {
            Conn::Local(s) => Some(s.db()),
            Conn::Remote(_) => None,
        }
    }

    /// Write namespace `ns`'s records (every namespace's if `None`) as JSON lines to `out`;
    /// the records written.
    pub fn export(&self, ns: Option<&str>, out: &mut dyn Write) -> Result<u64, Error> {
        match self {
            Conn::Local(s) => s.export(ns, out),
            Conn::Remote(s) => {
                let mut counted = Lines { inner: out, lines: 0 };
                s.client().export(ns, &mut counted)?;
                Ok(counted.lines)
            }
        }
    }
}

/// A writer counting the lines written through it.
struct Lines<'a> {
    inner: &'a mut dyn Write,
    lines: u64,
}

impl Write for Lines<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.lines += buf.get(..n).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count() as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The operation layer's code for a server's error code (or, for an answer without one,
/// its HTTP status).
pub fn code_of(code: &str, status: u16) -> Code {
    match code {
        "invalid_input" | "too_large" | "no_route" | "method_not_allowed" => Code::InvalidInput,
        "not_found" => Code::NotFound,
        "forbidden" | "unauthorized" => Code::Forbidden,
        "conflict" => Code::Conflict,
        "damaged" => Code::Damaged,
        "unavailable" | "overloaded" | "timeout" => Code::Unavailable,
        _ => match status {
            401 | 403 => Code::Forbidden,
            404 => Code::NotFound,
            409 => Code::Conflict,
            400..=499 => Code::InvalidInput,
            _ => Code::Unavailable,
        },
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::Remote { code: Code::InvalidInput, message: message.into() }
}

fn unavailable(message: impl Into<String>) -> Error {
    Error::Remote { code: Code::Unavailable, message: message.into() }
}

/// The server could not be reached or stopped answering: say where, not the token.
fn unreachable(base: &Url, e: &reqwest::Error) -> Error {
    let why = if e.is_connect() {
        "nothing answers there (is `mnemon serve` running?)".to_string()
    } else if e.is_timeout() {
        "it did not answer in time".to_string()
    } else {
        // The deepest cause says what went wrong (an untrusted certificate, a reset).
        let mut cause: &dyn std::error::Error = e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        cause.to_string()
    };
    unavailable(format!("cannot reach the server at {base}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_codes_map_onto_the_operation_layers() {
        assert_eq!(code_of("unauthorized", 401), Code::Forbidden);
        assert_eq!(code_of("overloaded", 503), Code::Unavailable);
        assert_eq!(code_of("too_large", 413), Code::InvalidInput);
        assert_eq!(code_of("not_found", 404), Code::NotFound);
        assert_eq!(code_of("", 409), Code::Conflict);
        assert_eq!(code_of("", 502), Code::Unavailable);
    }

    #[test]
    fn urls_are_checked_and_keep_their_prefix() -> Result<(), Error> {
        for bad in ["", "127.0.0.1:7373", "ftp://host/", "http://user:pw@host/", "mailto:a@b"] {
            assert_eq!(Client::new(bad, None).map(|_| ()).unwrap_err().code(), Code::InvalidInput, "{bad}");
        }
        let c = Client::new("https://example.org/mnemon/", Some("secret".into()))?;
        let url = c.url_of(&["v1", "ns", "project:a b/c", "ops", "recall"])?;
        assert_eq!(url.as_str(), "https://example.org/mnemon/v1/ns/project:a%20b%2Fc/ops/recall");
        assert!(!format!("{c:?}").contains("secret"));
        Ok(())
    }
}
