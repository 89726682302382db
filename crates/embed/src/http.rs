//! An OpenAI-compatible HTTP embedder.

use std::time::Duration;

use serde::Deserialize;

use crate::{EmbedError, Embedder, unit};

/// Where and how to call the server.
#[derive(Clone, Debug)]
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
        }
    }
}

impl HttpConfig {
    /// From the environment: `MNEMON_EMBED_URL`, `MNEMON_EMBED_MODEL`, `MNEMON_EMBED_KEY`
    /// (falling back to `OPENAI_API_KEY`), `MNEMON_EMBED_DIM`; defaults otherwise.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let d = HttpConfig::default();
        HttpConfig {
            base_url: var("MNEMON_EMBED_URL").unwrap_or(d.base_url),
            model: var("MNEMON_EMBED_MODEL").unwrap_or(d.model),
            key: var("MNEMON_EMBED_KEY").or_else(|| var("OPENAI_API_KEY")),
            dimension: var("MNEMON_EMBED_DIM").and_then(|v| v.parse().ok()),
            ..d
        }
    }
}

/// Calls `POST {base}/embeddings` of an OpenAI-compatible server.
#[derive(Debug)]
pub struct HttpEmbedder {
    config: HttpConfig,
    url: String,
    id: String,
    dimension: usize,
    client: reqwest::blocking::Client,
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
                "the base URL must start with http:// or https://: {base:?}"
            )));
        }
        let url = format!("{base}/embeddings");
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            .build()
            .map_err(|e| EmbedError::Config(format!("cannot build the HTTP client: {e}")))?;
        let id = format!("openai-compatible:{}", config.model);
        let mut e = HttpEmbedder { url, id, dimension: config.dimension.unwrap_or(0), client, config };
        if e.dimension == 0 {
            let v = e.request(&["dimension probe"])?;
            e.dimension = v.first().map_or(0, Vec::len);
            if e.dimension == 0 {
                return Err(EmbedError::Malformed { url: e.url.clone(), reason: "empty embedding".into() });
            }
        }
        Ok(e)
    }

    /// The endpoint called.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A failure below HTTP: a timeout, or the server could not be reached or hung up.
    fn transport_error(&self, e: &reqwest::Error) -> EmbedError {
        if e.is_timeout() {
            EmbedError::Timeout { url: self.url.clone(), secs: self.config.timeout.as_secs_f64() }
        } else {
            EmbedError::Connect { url: self.url.clone(), reason: root_cause(e) }
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
                EmbedError::Status { status: status.as_u16(), url: url.clone(), body: truncate(&body, 200) },
                retry_after,
            ));
        }
        let malformed = |reason: String| (EmbedError::Malformed { url: url.clone(), reason }, None);
        let parsed: Response = serde_json::from_str(&body)
            .map_err(|e| malformed(format!("{e}; body starts {:?}", truncate(&body, 120))))?;
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
