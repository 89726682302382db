//! JSON-RPC hygiene at the stdio boundary: a thin framing layer between the client's pipes
//! and rmcp's transport.
//!
//! rmcp skips a line that is not JSON without a word, and answers a message it cannot read as
//! a request (`{}`, `[1,2]`) with an error that has no `id` member, which JSON-RPC 2.0 requires
//! (`null` when the id cannot be read). So every line from the client is looked at here first:
//!
//! - not JSON: `-32700` (parse error), `id: null`;
//! - JSON but not one message object (a batch, a number...), `jsonrpc` other than `"2.0"`, an
//!   `id` that is not a string or a number, a `method` that is not a string, or an object that
//!   is neither a request, a notification nor a response: `-32600` (invalid request), with the
//!   message's `id` when it is readable, else `null`;
//! - a message nested deeper than [`MAX_DEPTH`] (rmcp's parser gives up near 127 levels
//!   and answers nothing): `-32600`, with its `id`;
//! - an `id` that is a number but not an integer rmcp can hold (`1.5`, beyond 64 bits):
//!   `-32600`, with the `id` as read;
//! - `params` that are not an object (`"x"`, `[1,2]`, `5`), or none for a method that needs
//!   them (`tools/call`, `initialize`...): `-32602` (invalid params), with the `id`; a
//!   notification of that shape is dropped (it gets no reply either way);
//! - a line longer than [`MAX_LINE`]: `-32600`, `id: null`, the line skipped;
//! - anything else goes to rmcp unchanged, which gives every request exactly one reply.
//!
//! `/mcp` (HTTP) judges each POSTed message the same way ([`judge`]).
//!
//! The replies written here and rmcp's share stdout one whole line at a time.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest message line taken (a record is at most 4 MiB, and JSON may escape every byte of
/// it as six).
pub(crate) const MAX_LINE: usize = 32 * 1024 * 1024;

/// The deepest nesting of arrays and objects a message may have (rmcp's parser, under
/// serde_json's limit of 128, fails silently somewhat above it).
pub(crate) const MAX_DEPTH: usize = 100;

/// The methods whose requests must carry `params`.
const NEEDS_PARAMS: &[&str] = &[
    "initialize",
    "tools/call",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// Bytes in flight between the framing layer and rmcp, each way.
const PIPE_BYTES: usize = 256 * 1024;

/// What the framing layer makes of a line.
#[derive(Debug, PartialEq)]
pub(crate) enum Verdict {
    /// A message for rmcp.
    Pass,
    /// Nothing (a blank line).
    Skip,
    /// Answer this instead.
    Reply(String),
}

/// The members of a message the framing layer checks; others are skipped unread.
#[derive(Deserialize)]
struct Probe {
    jsonrpc: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    method: Option<Value>,
    #[serde(default, deserialize_with = "shape")]
    params: Option<Shape>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

/// What sort of JSON value a member holds, read without holding it (its content is skipped,
/// however deep).
#[derive(Debug, PartialEq)]
enum Shape {
    Object,
    /// `null`: taken as no `params`.
    Null,
    Other,
}

fn shape<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Shape>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Shape;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Shape, A::Error> {
            while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Shape::Object)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Shape, A::Error> {
            while s.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Shape::Other)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
            Ok(Shape::Other)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
            Ok(Shape::Other)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
            Ok(Shape::Other)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
            Ok(Shape::Other)
        }
        fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
            Ok(Shape::Other)
        }
        fn visit_unit<E>(self) -> Result<Shape, E> {
            Ok(Shape::Null)
        }
    }
    d.deserialize_any(V).map(Some)
}

/// How deeply `text` nests arrays and objects (outside strings).
fn depth(text: &[u8]) -> usize {
    let (mut deepest, mut now, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                now += 1;
                deepest = deepest.max(now);
            }
            b']' | b'}' => now = now.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Whether rmcp can hold a numeric id: an integer within i64 (`1.0` and `1e2` count).
fn integral_id(n: &serde_json::Number) -> bool {
    n.as_i64().is_some()
        || n.as_f64().is_some_and(|f| {
            f.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f)
        })
}

/// A member that is present, `null` included (`Some(Value::Null)`), as opposed to missing.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn error_reply(id: Value, code: i64, message: String) -> Verdict {
    Verdict::Reply(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string(),
    )
}

/// Judge one line (without its newline).
pub(crate) fn judge(line: &[u8]) -> Verdict {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return Verdict::Skip;
    }
    if trimmed.first() != Some(&b'{') {
        return match serde_json::from_slice::<IgnoredAny>(trimmed) {
            Err(e) => error_reply(Value::Null, -32700, format!("Parse error: {e}")),
            Ok(_) if trimmed.first() == Some(&b'[') => {
                error_reply(Value::Null, -32600, "Invalid Request: batches are not supported".into())
            }
            Ok(_) => {
                error_reply(Value::Null, -32600, "Invalid Request: not a JSON-RPC message object".into())
            }
        };
    }
    let probe: Probe = match serde_json::from_slice(trimmed) {
        Ok(p) => p,
        Err(e) if e.is_data() => {
            return error_reply(Value::Null, -32600, format!("Invalid Request: {e}"));
        }
        Err(e) => return error_reply(Value::Null, -32700, format!("Parse error: {e}")),
    };
    let id = match &probe.id {
        None => None,
        Some(v @ Value::String(_)) => Some(v.clone()),
        Some(v @ Value::Number(n)) if integral_id(n) => Some(v.clone()),
        Some(v @ Value::Number(_)) => {
            return error_reply(
                v.clone(),
                -32600,
                "Invalid Request: a numeric `id` must be an integer within 64 signed bits".into(),
            );
        }
        Some(_) => {
            return error_reply(
                Value::Null,
                -32600,
                "Invalid Request: `id` must be a string or a number".into(),
            );
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if probe.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return error_reply(reply_id, -32600, "Invalid Request: `jsonrpc` must be \"2.0\"".into());
    }
    if depth(trimmed) > MAX_DEPTH {
        return error_reply(
            reply_id,
            -32600,
            format!("Invalid Request: nested deeper than {MAX_DEPTH} levels"),
        );
    }
    match (&probe.method, id.is_some(), probe.result.is_some() || probe.error.is_some()) {
        // A request or a notification.
        (Some(Value::String(m)), is_request, _) => {
            let bad = match &probe.params {
                Some(Shape::Other) => Some("Invalid params: `params` must be an object".to_string()),
                None | Some(Shape::Null) if NEEDS_PARAMS.contains(&m.as_str()) => {
                    Some(format!("Invalid params: {m} needs `params`"))
                }
                _ => None,
            };
            match bad {
                Some(why) if is_request => error_reply(reply_id, -32602, why),
                Some(_) => Verdict::Skip,
                None => Verdict::Pass,
            }
        }
        (Some(_), _, _) => error_reply(reply_id, -32600, "Invalid Request: `method` must be a string".into()),
        // A response to a request of the server's.
        (None, true, true) => Verdict::Pass,
        (None, _, _) => error_reply(reply_id, -32600, "Invalid Request: no `method`".into()),
    }
}

/// Read the next line of `input` into `line` (without its newline): `Ok(false)` at the end;
/// a line longer than [`MAX_LINE`] is read to its end but kept empty, with `too_long` set.
async fn next_line(
    input: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    too_long: &mut bool,
) -> std::io::Result<bool> {
    line.clear();
    *too_long = false;
    let mut any = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !*too_long && line.len() + chunk.len() > MAX_LINE {
            *too_long = true;
            line.clear();
        }
        if !*too_long {
            line.extend_from_slice(chunk);
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            return Ok(true);
        }
    }
}

/// Write one whole line to the shared output.
async fn write_line(output: &Mutex<impl AsyncWrite + Unpin>, line: &[u8]) -> std::io::Result<()> {
    let mut out = output.lock().await;
    out.write_all(line).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

/// The transport rmcp is served over: `(reader, writer)` ends of pipes whose other ends
/// [`pump`] works, between `input` and `output`.
pub(crate) fn pipes() -> ((tokio::io::DuplexStream, tokio::io::DuplexStream), Pipes) {
    let (server_in, feed) = tokio::io::duplex(PIPE_BYTES);
    let (server_out, drain) = tokio::io::duplex(PIPE_BYTES);
    ((server_in, server_out), Pipes { feed, drain })
}

/// The framing layer's ends of the pipes to rmcp.
pub(crate) struct Pipes {
    feed: tokio::io::DuplexStream,
    drain: tokio::io::DuplexStream,
}

/// Carry lines from `input` to rmcp (judged) and rmcp's lines to `output`, until `input` ends
/// and rmcp has written its last reply, or rmcp stops (then `input` is left unread).
pub(crate) async fn pump(
    pipes: Pipes,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin,
) -> std::io::Result<()> {
    let Pipes { mut feed, drain } = pipes;
    let output = Mutex::new(output);
    let (stopped, mut on_stop) = tokio::sync::oneshot::channel::<()>();
    let inbound = async {
        let mut input = BufReader::with_capacity(64 * 1024, input);
        let mut line = Vec::new();
        let mut too_long = false;
        loop {
            let more = tokio::select! {
                more = next_line(&mut input, &mut line, &mut too_long) => more?,
                _ = &mut on_stop => false,
            };
            if !more {
                break;
            }
            let verdict = if too_long {
                error_reply(Value::Null, -32600, format!("Invalid Request: a message over {MAX_LINE} bytes"))
            } else {
                judge(&line)
            };
            match verdict {
                Verdict::Pass => {
                    line.push(b'\n');
                    if feed.write_all(&line).await.is_err() {
                        // rmcp has stopped reading: nothing more to serve.
                        break;
                    }
                }
                Verdict::Skip => {}
                Verdict::Reply(r) => write_line(&output, r.as_bytes()).await?,
            }
        }
        // The client is done: rmcp sees the end of its input and finishes.
        feed.shutdown().await.ok();
        drop(feed);
        Ok::<(), std::io::Error>(())
    };
    let outbound = async {
        let mut drain = BufReader::with_capacity(64 * 1024, drain);
        let mut line = Vec::new();
        loop {
            line.clear();
            if drain.read_until(b'\n', &mut line).await? == 0 {
                // rmcp is done (its input ended, or it stopped): so is the client's side.
                stopped.send(()).ok();
                return Ok::<(), std::io::Error>(());
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            write_line(&output, &line).await?;
        }
    };
    let (a, b) = tokio::join!(inbound, outbound);
    a.and(b)
}

#[cfg(test)]
mod tests {
    use super::{Verdict, judge};

    fn reply(line: &str) -> Option<serde_json::Value> {
        match judge(line.as_bytes()) {
            Verdict::Reply(r) => serde_json::from_str(&r).ok(),
            _ => None,
        }
    }

    #[test]
    fn messages_pass_and_the_rest_is_answered_with_an_id() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"  {"jsonrpc":"2.0","id":3,"result":{}}  "#,
            r#"{"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"no"}}"#,
        ] {
            assert_eq!(judge(ok.as_bytes()), Verdict::Pass, "{ok}");
        }
        assert_eq!(judge(b"   "), Verdict::Skip);
        for (bad, code, id) in [
            ("{not json", -32700, serde_json::Value::Null),
            ("\u{1b}[2J", -32700, serde_json::Value::Null),
            (r#"{"jsonrpc":"2.0","id":1,"method":"x""#, -32700, serde_json::Value::Null),
            ("{}", -32600, serde_json::Value::Null),
            ("[1,2]", -32600, serde_json::Value::Null),
            ("[]", -32600, serde_json::Value::Null),
            ("42", -32600, serde_json::Value::Null),
            (r#"{"jsonrpc":"2.0","id":7}"#, -32600, serde_json::json!(7)),
            (r#"{"jsonrpc":"1.0","id":"q","method":"x"}"#, -32600, serde_json::json!("q")),
            (r#"{"id":8,"method":"x"}"#, -32600, serde_json::json!(8)),
            (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#, -32600, serde_json::Value::Null),
            (r#"{"jsonrpc":"2.0","id":9,"method":5}"#, -32600, serde_json::json!(9)),
            (r#"{"jsonrpc":"2.0","id":[1],"result":{}}"#, -32600, serde_json::Value::Null),
        ] {
            let r = reply(bad).unwrap_or_else(|| panic!("no reply to {bad}"));
            assert_eq!(
                (r["error"]["code"].as_i64(), &r["id"], &r["jsonrpc"]),
                (Some(code), &id, &"2.0".into()),
                "{bad}"
            );
            assert!(r.as_object().is_some_and(|o| o.contains_key("id")), "{bad}: {r}");
        }
    }
}
