//! The HTTP embedder against a real HTTP server on loopback, started by each test: real
//! sockets, real HTTP/1.1, scripted answers.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemon_embed::{EmbedError, Embedder, HttpConfig, HttpEmbedder};
use serde_json::{Value, json};

#[derive(Clone)]
enum Answer {
    /// 200 with one 3-d embedding per input: [length of the text, 1, index].
    Ok,
    /// An error status, with an optional Retry-After (seconds).
    Status(u16, String, Option<&'static str>),
    /// Wait, then answer Ok.
    Slow(Duration),
    /// 200 with a body that is not the API's.
    Garbage,
    /// 200 with this body (not the API's).
    Echo(String),
}

struct Seen {
    auth: Option<String>,
    body: Value,
}

struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn serve(script: Vec<Answer>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut script = script.into_iter();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let answer = script.next().unwrap_or(Answer::Ok);
            handle(stream, &answer, &log);
        }
    });
    Server { url, seen }
}

fn handle(stream: TcpStream, answer: &Answer, log: &Arc<Mutex<Vec<Seen>>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut len = 0usize;
    let mut auth = None;
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("POST /v1/embeddings "), "{line}");
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "content-length" => len = v.trim().parse().unwrap(),
            "authorization" => auth = Some(v.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    let inputs: Vec<String> =
        body["input"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().into()).collect();
    log.lock().unwrap().push(Seen { auth, body });
    let ok = || {
        // Answer out of order, with indexes, as the API allows.
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .rev()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": [t.len() as f32, 1.0, i as f32]}))
            .collect();
        (200, json!({"object": "list", "data": data, "model": "m"}).to_string(), None)
    };
    let (status, text, retry): (u16, String, Option<&str>) = match answer {
        Answer::Ok => ok(),
        Answer::Status(s, b, r) => (*s, b.clone(), *r),
        Answer::Slow(d) => {
            std::thread::sleep(*d);
            ok()
        }
        Answer::Garbage => (200, "{\"data\": \"not a list\"}".into(), None),
        Answer::Echo(b) => (200, b.clone(), None),
    };
    let mut out = stream;
    let extra = retry.map(|r| format!("Retry-After: {r}\r\n")).unwrap_or_default();
    let _ = write!(
        out,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n{text}",
        text.len()
    );
    let _ = out.flush();
}

fn config(url: &str) -> HttpConfig {
    HttpConfig {
        base_url: url.to_string(),
        model: "test-model".into(),
        key: Some("sekrit".into()),
        dimension: Some(3),
        batch_size: 2,
        timeout: Duration::from_secs(5),
        max_retries: 3,
        backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
        ..HttpConfig::default()
    }
}

#[test]
fn success_in_batches_in_order_with_the_key() {
    let s = serve(vec![]);
    let e = HttpEmbedder::new(config(&s.url)).unwrap();
    assert_eq!(e.model_id(), "openai-compatible:test-model");
    let v = e.embed(&["a", "bb", "ccc", "dddd", "eeeee"]).unwrap();
    assert_eq!(v.len(), 5);
    // [len, 1, index in batch], normalised: the order survives the server's reordering.
    for (i, x) in v.iter().enumerate() {
        let raw = [(i + 1) as f32, 1.0, (i % 2) as f32];
        let n = raw.iter().map(|a| a * a).sum::<f32>().sqrt();
        for (a, b) in x.iter().zip(raw) {
            assert!((a - b / n).abs() < 1e-6);
        }
    }
    let seen = s.seen.lock().unwrap();
    let sizes: Vec<usize> = seen.iter().map(|r| r.body["input"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, vec![2, 2, 1]);
    assert!(
        seen.iter().all(|r| r.auth.as_deref() == Some("Bearer sekrit") && r.body["model"] == "test-model")
    );
}

#[test]
fn the_dimension_is_probed_when_not_configured() {
    let s = serve(vec![]);
    let e = HttpEmbedder::new(HttpConfig { dimension: None, ..config(&s.url) }).unwrap();
    assert_eq!(e.dimension(), 3);
    assert_eq!(s.seen.lock().unwrap().len(), 1);
}

#[test]
fn too_many_requests_then_success_honours_retry_after() {
    let s = serve(vec![Answer::Status(429, "{\"error\":\"slow down\"}".into(), Some("0.2")), Answer::Ok]);
    let e = HttpEmbedder::new(config(&s.url)).unwrap();
    let t = Instant::now();
    assert_eq!(e.embed(&["x"]).unwrap().len(), 1);
    assert!(
        t.elapsed() >= Duration::from_millis(100),
        "Retry-After was not honoured (capped at max_backoff)"
    );
    assert_eq!(s.seen.lock().unwrap().len(), 2);
}

#[test]
fn repeated_server_errors_give_up_after_the_retries() {
    let s = serve(vec![Answer::Status(500, "boom".into(), None); 10]);
    let e = HttpEmbedder::new(config(&s.url)).unwrap();
    let err = e.embed(&["x"]).unwrap_err();
    assert!(matches!(err, EmbedError::Status { status: 500, .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("HTTP 500") && msg.contains(&s.url) && msg.contains("boom"), "{msg}");
    assert_eq!(s.seen.lock().unwrap().len(), 4, "one attempt and three retries");
}

#[test]
fn unauthorized_fails_at_once() {
    let s = serve(vec![Answer::Status(401, "x".repeat(1000), None)]);
    let e = HttpEmbedder::new(config(&s.url)).unwrap();
    let err = e.embed(&["x"]).unwrap_err();
    assert!(matches!(err, EmbedError::Status { status: 401, .. }));
    assert!(err.to_string().len() < 400, "the body is truncated: {err}");
    assert_eq!(s.seen.lock().unwrap().len(), 1);
}

#[test]
fn a_slow_server_hits_the_timeout() {
    let s = serve(vec![Answer::Slow(Duration::from_secs(3))]);
    let cfg = HttpConfig { timeout: Duration::from_millis(300), max_retries: 0, ..config(&s.url) };
    let e = HttpEmbedder::new(cfg).unwrap();
    let t = Instant::now();
    let err = e.embed(&["x"]).unwrap_err();
    assert!(matches!(err, EmbedError::Timeout { .. }), "{err}");
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(err.to_string().contains("timed out"));
}

#[test]
fn a_malformed_response_is_an_error_without_retry() {
    let s = serve(vec![Answer::Garbage]);
    let e = HttpEmbedder::new(config(&s.url)).unwrap();
    let err = e.embed(&["x"]).unwrap_err();
    assert!(matches!(err, EmbedError::Malformed { .. }), "{err}");
    assert_eq!(s.seen.lock().unwrap().len(), 1);
}

#[test]
fn an_unreachable_server_is_a_connection_error() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = HttpConfig { max_retries: 1, ..config(&format!("http://127.0.0.1:{port}/v1")) };
    let err = HttpEmbedder::new(cfg).unwrap().embed(&["x"]).unwrap_err();
    assert!(matches!(err, EmbedError::Connect { .. }), "{err}");
    assert!(HttpEmbedder::new(HttpConfig { base_url: "ftp://x".into(), ..config("") }).is_err());
}

/// What the server was sent never comes back in an error: not on a 200 with a body that is
/// not the API's, not on an error status, however it is echoed (the key, a `key=` query, the
/// Basic credential of the URL's user and password, in base64 or not); and a request carries
/// one credential, not the URL's Basic beside the key's Bearer.
#[test]
fn echoed_credentials_never_reach_an_error() {
    let key = "sk-proj-0123456789abcdefSECRET";
    let basic = "dXNlcjpwYXNzd29yZDE="; // base64 of user:password1
    let echo = format!(
        r#"{{"got": "Authorization: Bearer {key}", "also": "Basic {basic}", "query": "?key=qsecret42&x=1", "raw": "{key} password1"}}"#
    );
    let paths = [
        Answer::Echo(echo.clone()),
        Answer::Status(400, echo.clone(), None),
        Answer::Status(500, echo, None),
    ];
    for answer in paths {
        let s = serve(vec![answer.clone(), answer]);
        let with_user = s.url.replace("http://", "http://user:password1@");
        let cfg = HttpConfig { key: Some(key.into()), max_retries: 0, ..config(&with_user) };
        let err = HttpEmbedder::new(cfg).unwrap().embed(&["x"]).unwrap_err().to_string();
        for secret in [key, "0123456789abcdef", basic, "qsecret42", "password1"] {
            assert!(!err.contains(secret), "{secret} in {err}");
        }
        assert!(err.contains("[redacted]"), "{err}");
        // One credential: the key's.
        let seen = s.seen.lock().unwrap();
        assert_eq!(seen[0].auth.as_deref(), Some(format!("Bearer {key}").as_str()));
    }
    // Without a key, the URL's user and password go as Basic, and are not quoted either.
    let s =
        serve(vec![Answer::Status(401, "bad Basic dXNlcjpwYXNzd29yZDE= for user:password1".into(), None)]);
    let cfg = HttpConfig {
        key: None,
        max_retries: 0,
        ..config(&s.url.replace("http://", "http://user:password1@"))
    };
    let err = HttpEmbedder::new(cfg).unwrap().embed(&["x"]).unwrap_err().to_string();
    assert!(!err.contains("password1") && !err.contains(basic), "{err}");
    assert_eq!(s.seen.lock().unwrap()[0].auth.as_deref(), Some(format!("Basic {basic}").as_str()));
}
