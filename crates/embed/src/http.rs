//! An OpenAI-compatible HTTP embedder.

use std::time::Duration;

use serde::Deserialize;

use crate::{EmbedError, Embedder, unit};

/// Where and how to call the server. Its `Debug` leaves the key out and the URL's secrets.
#[derive(Clone)]
pub struct HttpConfig {
    /// The API base, e.g. `https://api.openai.com/v1` (requests go to `{base}/embeddings`).
    pub base_url: String,
    /// The model name sent in each request.
    pub model: String,
    /// The bearer token, if the server wants one.
    pub key: Option<String>,
    /// The dimension, if known (else learnt from a first request).
    pub dimension: Option<usize>,
    /// Texts per request.
    pub batch_size: usize,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Time allowed for a whole request.
    pub timeout: Duration,
    /// Retries after the first attempt, for transient failures.
    pub max_retries: u32,
    /// The first backoff; doubled each retry (with jitter), capped at `max_backoff`.
    pub backoff: Duration,
    /// The longest wait between attempts (also caps `Retry-After`).
    pub max_backoff: Duration,
    /// Send the key over plain `http://` to a host other than this machine (default off:
    /// refused, the key would cross the network in the clear).
    pub insecure: bool,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            base_url: "https://api.openai.com/v1".into(),
            model: "text-embedding-3-small".into(),
            key: None,
            dimension: None,
            batch_size: 64,
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(30),
            max_retries: 4,
            backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(20),
            insecure: false,
        }
    }
}

impl HttpConfig {
    /// From the environment: `MNEMON_EMBED_URL`, `MNEMON_EMBED_MODEL`, `MNEMON_EMBED_KEY`
    /// (falling back to `OPENAI_API_KEY`), `MNEMON_EMBED_DIM`, `MNEMON_EMBED_INSECURE=1`;
    /// defaults otherwise.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let d = HttpConfig::default();
        HttpConfig {
            base_url: var("MNEMON_EMBED_URL").unwrap_or(d.base_url),
            model: var("MNEMON_EMBED_MODEL").unwrap_or(d.model),
            key: var("MNEMON_EMBED_KEY").or_else(|| var("OPENAI_API_KEY")),
            dimension: var("MNEMON_EMBED_DIM").and_then(|v| v.parse().ok()),
            insecure: var("MNEMON_EMBED_INSECURE").is_some_and(|v| v == "1"),
            ..d
        }
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "[redacted]"))
            .field("dimension", &self.dimension)
            .field("batch_size", &self.batch_size)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Calls `POST {base}/embeddings` of an OpenAI-compatible server.
pub struct HttpEmbedder {
    config: HttpConfig,
    url: String,
    /// `url` as errors show it (no user, password or query: see [`redact_url`]).
    shown: String,
    /// What no message may quote: see [`Secrets`].
    secrets: Secrets,
    id: String,
    dimension: usize,
    client: reqwest::blocking::Client,
}

impl std::fmt::Debug for HttpEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEmbedder")
            .field("url", &self.shown)
            .field("id", &self.id)
            .field("dimension", &self.dimension)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The secrets an embedder holds (its key; the user and password of its URL, and the Basic
/// credential they make) and the patterns of others a server may echo: every message that
/// quotes a remote body or a transport error passes through [`Secrets::redact`].
#[derive(Clone, Default)]
struct Secrets(Vec<String>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} redacted)", self.0.len())
    }
}

impl Secrets {
    fn of(key: Option<&str>, url: &str) -> Secrets {
        let mut known: Vec<String> = key.map(str::to_string).into_iter().collect();
        if let Ok(u) = reqwest::Url::parse(url) {
            let user = percent_decoded(u.username());
            if let Some(password) = u.password().map(percent_decoded) {
                known.push(base64(format!("{user}:{password}").as_bytes()));
                known.push(password);
            }
            if !user.is_empty() {
                known.push(user);
            }
        }
        // Longest first, so that a secret holding another is replaced whole.
        known.retain(|s| s.len() >= 4);
        known.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Secrets(known)
    }

    /// `text` without any known secret, then without what looks like one
    /// ([`redact_secrets`]).
    fn redact(&self, text: &str) -> String {
        let mut t = text.to_string();
        for s in &self.0 {
            if t.contains(s.as_str()) {
                t = t.replace(s.as_str(), "[redacted]");
            }
        }
        redact_secrets(&t)
    }
}

/// `s` with its `%XX` escapes decoded (as a URL's user and password are written).
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            #[allow(clippy::cast_possible_truncation)]
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard base64 (RFC 4648, padded): how a Basic credential is sent, and may be echoed.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

/// A small generator for jitter (no need for a crate).
fn jitter() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0x2545_F491_4F6C_DD1D);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    #[allow(clippy::cast_possible_truncation)]
    let mut x = STATE.fetch_add(nanos as u64 | 1, Ordering::Relaxed) ^ (nanos as u64);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    #[allow(clippy::cast_precision_loss)]
    let u = (x >> 11) as f64 / (1u64 << 53) as f64;
    0.5 + u
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.trim().to_string();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{}...", cut.trim())
}

impl HttpEmbedder {
    /// A client for `config`. Without a configured dimension, embeds one probe text to learn it.
    pub fn new(config: HttpConfig) -> Result<Self, EmbedError> {
        if config.batch_size == 0 {
            return Err(EmbedError::Config("batch size must be positive".into()));
        }
        let base = config.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(EmbedError::Config(format!(
                "the base URL must start with http:// or https://: {:?}",
                redact_url(base)
            )));
        }
        if config.key.is_some() && !config.insecure && !key_may_go_to(base) {
            return Err(EmbedError::Config(format!(
                "refusing to send the API key over plain http to {}: use https, or set MNEMON_EMBED_INSECURE=1",
                redact_url(base)
            )));
        }
        // `{base}/embeddings`, before the base's query if it has one (`...?api-version=...`).
        let url = match base.split_once('?') {
            Some((path, query)) => format!("{}/embeddings?{query}", path.trim_end_matches('/')),
            None => format!("{base}/embeddings"),
        };
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            .build()
            .map_err(|e| EmbedError::Config(format!("cannot build the HTTP client: {e}")))?;
        let id = format!("openai-compatible:{}", config.model);
        let shown = redact_url(&url);
        let secrets = Secrets::of(config.key.as_deref(), &url);
        // One credential a request: with a key, the URL's user and password are not sent too
        // (reqwest would add them as Basic beside the Bearer).
        let url = match (&config.key, reqwest::Url::parse(&url)) {
            (Some(_), Ok(mut u)) if !u.username().is_empty() || u.password().is_some() => {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.to_string()
            }
            _ => url,
        };
        let mut e = HttpEmbedder {
            url,
            shown,
            secrets,
            id,
            dimension: config.dimension.unwrap_or(0),
            client,
            config,
        };
        if e.dimension == 0 {
            let v = e.request(&["dimension probe"])?;
            e.dimension = v.first().map_or(0, Vec::len);
            if e.dimension == 0 {
                return Err(EmbedError::Malformed { url: e.shown.clone(), reason: "empty embedding".into() });
            }
        }
        Ok(e)
    }

    /// The endpoint called, as errors show it (without a user, password or query).
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    /// A failure below HTTP: a timeout, or the server could not be reached or hung up.
    fn transport_error(&self, e: &reqwest::Error) -> EmbedError {
        if e.is_timeout() {
            EmbedError::Timeout { url: self.shown.clone(), secs: self.config.timeout.as_secs_f64() }
        } else {
            EmbedError::Connect {
                url: self.shown.clone(),
                reason: self.secrets.redact(&without_url(&root_cause(e))),
            }
        }
    }

    /// One request, retried on transient failures.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut attempt = 0u32;
        loop {
            match self.attempt(texts) {
                Ok(v) => return Ok(v),
                Err((e, retry_after)) if e.is_transient() && attempt < self.config.max_retries => {
                    let backoff =
                        self.config.backoff.as_secs_f64() * 2f64.powi(i32::try_from(attempt).unwrap_or(30));
                    let wait = retry_after.map_or(backoff * jitter(), |d| d.as_secs_f64());
                    let wait = wait.min(self.config.max_backoff.as_secs_f64()).max(0.0);
                    std::thread::sleep(Duration::from_secs_f64(wait));
                    attempt += 1;
                }
                Err((e, _)) => return Err(e),
            }
        }
    }

    fn attempt(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, (EmbedError, Option<Duration>)> {
        let url = &self.url;
        let mut req =
            self.client.post(url).json(&serde_json::json!({ "model": self.config.model, "input": texts }));
        if let Some(k) = &self.config.key {
            req = req.bearer_auth(k);
        }
        let resp = req.send().map_err(|e| (self.transport_error(&e), None))?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let body = resp.text().map_err(|e| (self.transport_error(&e), None))?;
        if !status.is_success() {
            return Err((
                EmbedError::Status {
                    status: status.as_u16(),
                    url: self.shown.clone(),
                    body: self.secrets.redact(&truncate(&body, 200)),
                },
                retry_after,
            ));
        }
        let malformed = |reason: String| (EmbedError::Malformed { url: self.shown.clone(), reason }, None);
        let parsed: Response = serde_json::from_str(&body).map_err(|e| {
            malformed(format!("{e}; body starts {:?}", self.secrets.redact(&truncate(&body, 120))))
        })?;
        if parsed.data.len() != texts.len() {
            return Err(malformed(format!("{} embeddings for {} texts", parsed.data.len(), texts.len())));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, item) in parsed.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(pos);
            let slot = out.get_mut(i).ok_or_else(|| malformed(format!("index {i} out of range")))?;
            if self.dimension != 0 && item.embedding.len() != self.dimension {
                return Err(malformed(format!(
                    "an embedding of dimension {}, expected {}",
                    item.embedding.len(),
                    self.dimension
                )));
            }
            *slot = Some(
                unit(item.embedding)
                    .ok_or_else(|| malformed(format!("embedding {i} is zero or not finite")))?,
            );
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| malformed(format!("no embedding for text {i}"))))
            .collect()
    }
}

/// Whether a key may be sent to `base`: over https, or over http to this machine.
fn key_may_go_to(base: &str) -> bool {
    let Some(rest) = base.strip_prefix("http://") else { return true };
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.rsplit_once(':').map_or(host_port, |(h, _)| h)
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `url` without what may be a secret: the user and password before the host, and the query
/// (`http://user:pw@host/v1?key=k` is shown as `http://host/v1?[redacted]`).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (rest, query) = match rest.split_once('?') {
        Some((r, _)) => (r, "?[redacted]"),
        None => (rest, ""),
    };
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}{path}{query}")
}

/// `text` with what looks like a credential replaced by `[redacted]`: API keys (`sk-...`), the
/// word after `Bearer` or `Basic`, and the value of `key=`, `api_key=`, `token=`,
/// `password=`... (a query or form echoed). A server's error body may echo what it was sent.
pub fn redact_secrets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut after_scheme = false;
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let bare = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && !"-_+/=".contains(c));
        if after_scheme && !bare.is_empty() {
            out.push_str(&word.replace(bare, "[redacted]"));
        } else if let Some(at) = word.find("sk-").filter(|at| word.len() - at > 8) {
            let end = word[at..]
                .find(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_')
                .map_or(word.len(), |e| at + e);
            out.push_str(&word[..at]);
            out.push_str("sk-[redacted]");
            out.push_str(&word[end..]);
        } else {
            out.push_str(&redact_assignments(word));
        }
        let scheme = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        after_scheme = scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("basic");
    }
    out
}

/// `word` with the values of credential-like `name=value` pairs redacted.
fn redact_assignments(word: &str) -> String {
    const NAMES: [&str; 10] = [
        "key",
        "api_key",
        "api-key",
        "apikey",
        "token",
        "access_token",
        "password",
        "passwd",
        "secret",
        "auth",
    ];
    let lower = word.to_ascii_lowercase();
    let mut out = String::with_capacity(word.len());
    let mut i = 0;
    while let Some(eq) = lower[i..].find('=').map(|e| i + e) {
        let name_start = lower[..eq]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .map_or(0, |p| p + 1);
        let name = &lower[name_start..eq];
        let value_end = word[eq + 1..]
            .find(|c: char| "&\"',;<>)(]}".contains(c) || c.is_whitespace())
            .map_or(word.len(), |e| eq + 1 + e);
        out.push_str(&word[i..=eq]);
        if NAMES.contains(&name) && value_end > eq + 1 {
            out.push_str("[redacted]");
        } else {
            out.push_str(&word[eq + 1..value_end]);
        }
        i = value_end;
    }
    out.push_str(&word[i..]);
    out
}

/// `message` without the ` for url (...)` reqwest puts in it: the URL is named (redacted) by
/// the error around it.
fn without_url(message: &str) -> String {
    let Some(start) = message.find(" for url (") else { return message.to_string() };
    let rest = &message[start + " for url (".len()..];
    match rest.find(')') {
        Some(end) => format!("{}{}", &message[..start], &rest[end + 1..]),
        None => message[..start].to_string(),
    }
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s = format!("{s}: {inner}");
        src = inner.source();
    }
    s
}

impl Embedder for HttpEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.config.batch_size) {
            out.extend(self.request(chunk)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod redaction_tests {
    use super::{redact_secrets, redact_url};

    #[test]
    fn urls_and_bodies_lose_their_secrets() {
        assert_eq!(
            redact_url("http://user:secret@127.0.0.1:9/v1/embeddings"),
            "http://127.0.0.1:9/v1/embeddings"
        );
        assert_eq!(redact_url("https://h.example/v1?api-key=abc"), "https://h.example/v1?[redacted]");
        assert_eq!(redact_url("https://h.example"), "https://h.example");
        assert_eq!(redact_url("not a url"), "not a url");
        assert_eq!(
            redact_secrets(r#"{"error":"bad key sk-proj-abcdefghijkl, header Bearer xyz123."}"#),
            r#"{"error":"bad key sk-[redacted], header Bearer [redacted]."}"#
        );
        assert_eq!(redact_secrets("sk- is short"), "sk- is short");
        assert_eq!(
            redact_secrets("Authorization: Basic dXNlcjpwYXNz== and /v1?api_key=abc&model=m, token=t1"),
            "Authorization: Basic [redacted] and /v1?api_key=[redacted]&model=m, token=[redacted]"
        );
        assert_eq!(super::base64(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(super::base64(b"a"), "YQ==");
        assert_eq!(super::percent_decoded("p%40ss%2"), "p@ss%2");
        for (base, ok) in [
            ("https://api.example/v1", true),
            ("http://127.0.0.1:8080/v1", true),
            ("http://localhost/v1", true),
            ("http://[::1]:9/v1", true),
            ("http://user:pw@127.0.0.1/v1", true),
            ("http://10.0.0.5:8080/v1", false),
            ("http://api.example/v1", false),
            ("http://127.0.0.1.evil.example/v1", false),
        ] {
            assert_eq!(super::key_may_go_to(base), ok, "{base}");
        }
        let plain = super::HttpConfig {
            base_url: "http://api.example/v1".into(),
            key: Some("k".into()),
            ..Default::default()
        };
        let refused =
            super::HttpEmbedder::new(plain.clone()).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("refusing to send the API key over plain http"), "{refused}");
        assert_eq!(
            super::without_url("error sending request for url (http://h/v1?k=s): refused"),
            "error sending request: refused"
        );
        let config = super::HttpConfig {
            base_url: "http://u:pw@h/v1".into(),
            key: Some("sk-topsecret-123456".into()),
            ..Default::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("topsecret") && !shown.contains("pw@"), "{shown}");
    }
}
