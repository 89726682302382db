//! Human-readable output: tables and record views.

use std::io::Write;

use mnemon::{Record, RecordId, Timestamp};
use serde_json::json;

/// Where command output goes: standard output, buffered, JSON or text.
pub struct Out {
    w: Box<dyn Write>,
    /// Whether `--json` was given.
    pub json: bool,
}

impl Out {
    /// Standard output.
    pub fn stdout(json: bool) -> Self {
        Out { w: Box::new(std::io::BufWriter::new(std::io::stdout())), json }
    }

    /// A line (or lines) of text, with every control character but line breaks and tabs
    /// escaped (see [`escape_text`]): what a record holds is shown, never acted on by the
    /// terminal.
    pub fn line(&mut self, s: impl AsRef<str>) -> std::io::Result<()> {
        writeln!(self.w, "{}", escape_text(s.as_ref()))
    }

    /// One JSON document on one line, every character a terminal would act on written as a
    /// JSON escape (serde_json escapes C0 controls; DEL, C1 controls and the bidirectional
    /// controls it leaves raw are escaped here: the same text once parsed).
    pub fn json_line(&mut self, v: &impl serde::Serialize) -> std::io::Result<()> {
        let s = serde_json::to_string(v).map_err(std::io::Error::other)?;
        writeln!(self.w, "{}", json_safe(s))
    }

    /// Flush.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// A time for tables: `2024-05-07 10:00:00`, or `open` for `None`.
pub fn when(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "open".to_string(), Timestamp::to_human)
}

/// Cut `s` to `max` characters (one line), marking the cut.
pub fn cut(s: &str, max: usize) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut t: String = one_line.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Format rows as a table with a header; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cols = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let fmt_row = |cells: Vec<&str>| -> String {
        let mut line = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                line.push_str(c);
            } else {
                let w = widths.get(i).copied().unwrap_or(0);
                line.push_str(c);
                line.push_str(&" ".repeat(w.saturating_sub(c.chars().count()) + 2));
            }
        }
        line.trim_end().to_string()
    };
    let mut out = vec![fmt_row(headers.to_vec())];
    for r in rows {
        out.push(fmt_row(r.iter().map(String::as_str).collect()));
    }
    out.join("\n")
}

/// The short id shown in tables.
pub fn short(id: RecordId) -> String {
    id.short()
}

/// A record's validity at `at` (active, superseded, retired, expired, not yet valid): where
/// it stands in time, whatever its kind says of itself.
fn validity(r: &Record, at: Timestamp) -> String {
    format!("{:?}", r.status_at(at)).to_lowercase()
}

/// The snake_case name serde gives an enum value.
fn name_of<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// What a record's kind says of its state: a decision's status; a task's status, priority and
/// due date; a gotcha's severity; a pattern's category; an entity's or episode's type; role
/// knowledge's category and confidence; a conversation open or ended; a message's role.
pub fn state(r: &Record) -> String {
    use mnemon::Body;
    match &r.body {
        Body::Decision(d) => name_of(&d.status),
        Body::Task(t) => {
            let due = t.due.map(|d| format!(", due {}", &d.to_rfc3339()[..10])).unwrap_or_default();
            format!("{}, {}{due}", name_of(&t.status), name_of(&t.priority))
        }
        Body::Gotcha(g) => name_of(&g.severity),
        Body::Pattern(p) => p.category.to_string(),
        Body::Entity(e) => e.entity_type.to_string(),
        Body::Episode(e) => e.episode_type.to_string(),
        Body::Knowledge(k) => {
            format!("{}, confidence {:.2}", k.category, r.envelope.confidence.unwrap_or(0.5))
        }
        Body::Preference(p) => p.key.to_string(),
        Body::Conversation(c) => if c.ended_at.is_some() { "ended" } else { "open" }.to_string(),
        Body::Message(m) => m.role.as_str().to_string(),
        _ => String::new(),
    }
}

/// A table of records at valid time `at`: VALIDITY says where each stands in time, STATE what
/// its kind says of itself.
pub fn records_table(records: &[Record], at: Timestamp) -> String {
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                short(r.id),
                r.kind().to_string(),
                validity(r, at),
                cut(&state(r), 34),
                when(Some(r.valid_from)),
                when(r.valid_until),
                cut(&r.body.title(), 70),
            ]
        })
        .collect();
    table(&["ID", "KIND", "VALIDITY", "STATE", "VALID FROM", "VALID UNTIL", "TITLE"], &rows)
}

/// A record in full, as `field  value` lines followed by its body.
pub fn record_detail(r: &Record, at: Timestamp) -> String {
    let mut lines: Vec<(String, String)> = vec![
        ("id".into(), r.id.to_string()),
        ("namespace".into(), r.namespace.to_string()),
        ("kind".into(), r.kind().to_string()),
        ("validity".into(), format!("{} at {}", validity(r, at), at.to_human())),
        ("state".into(), state(r)),
        (
            "revision".into(),
            format!("{} ({:?}, recorded {})", r.rev, r.op, r.recorded_at.to_human()).to_lowercase(),
        ),
        ("valid".into(), format!("{} -> {}", when(Some(r.valid_from)), when(r.valid_until))),
        ("expires".into(), r.expires_at.map_or_else(|| "never".into(), Timestamp::to_human)),
    ];
    if let Some(p) = r.supersedes {
        lines.push(("supersedes".into(), p.to_string()));
    }
    if let Some(n) = r.superseded_by {
        lines.push(("superseded by".into(), n.to_string()));
    }
    let e = &r.envelope;
    if !e.tags.is_empty() {
        lines.push(("tags".into(), e.tags.join(", ")));
    }
    if let Some(i) = e.importance {
        lines.push(("importance".into(), i.to_string()));
    }
    if let Some(c) = e.confidence {
        lines.push(("confidence".into(), c.to_string()));
    }
    if let Some(s) = &e.source {
        lines.push(("agent".into(), s.to_string()));
    }
    if let Some(t) = &e.task {
        lines.push(("task".into(), t.to_string()));
    }
    if let Some(k) = &e.key {
        lines.push(("key".into(), k.to_string()));
    }
    if !e.metadata.is_null() {
        lines.push(("metadata".into(), e.metadata.as_str().to_string()));
    }
    lines.retain(|(_, v)| !v.is_empty());
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut out: Vec<String> = lines.into_iter().map(|(k, v)| format!("{k:width$}  {v}")).collect();
    out.push(String::new());
    out.push(serde_json::to_string_pretty(&r.body.to_json()).unwrap_or_default());
    out.join("\n")
}

/// A supersession chain as a table, oldest first; `mark` gets a `*` before its title.
pub fn chain_table(links: &[Record], now: Timestamp, mark: Option<RecordId>) -> String {
    let rows: Vec<Vec<String>> = links
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                short(r.id),
                validity(r, now),
                cut(&state(r), 20),
                when(Some(r.valid_from)),
                when(r.valid_until),
                format!("{}{}", if Some(r.id) == mark { "* " } else { "" }, cut(&r.body.title(), 60)),
            ]
        })
        .collect();
    table(&["#", "ID", "VALIDITY", "STATE", "VALID FROM", "VALID UNTIL", "TITLE"], &rows)
}

/// Every revision of a record as a table, with both time intervals.
pub fn history_table(revs: &[Record]) -> String {
    let rows: Vec<Vec<String>> = revs
        .iter()
        .map(|r| {
            vec![
                r.rev.to_string(),
                format!("{:?}", r.op).to_lowercase(),
                when(Some(r.recorded_at)),
                r.replaced_at.map_or_else(|| "current".to_string(), Timestamp::to_human),
                when(Some(r.valid_from)),
                when(r.valid_until),
                cut(&r.body.title(), 50),
            ]
        })
        .collect();
    table(&["REV", "OP", "RECORDED", "REPLACED", "VALID FROM", "VALID UNTIL", "TITLE"], &rows)
}

/// Search results: score, id, kind, state, lexical and vector ranks, title.
pub fn hits_table(hits: &[mnemon::ops::Hit]) -> String {
    let rank = |r: Option<usize>| r.map_or_else(|| "-".into(), |r| r.to_string());
    let rows: Vec<Vec<String>> = hits
        .iter()
        .map(|h| {
            let r = &h.record.record;
            vec![
                format!("{:.4}", h.score),
                short(r.id),
                r.kind().to_string(),
                cut(&state(r), 24),
                rank(h.explain.and_then(|x| x.lexical_rank)),
                rank(h.explain.and_then(|x| x.vector_rank)),
                cut(&r.body.title(), 60),
            ]
        })
        .collect();
    table(&["SCORE", "ID", "KIND", "STATE", "LEX", "VEC", "RECORD"], &rows)
}

/// Print what an operation's write did: the id (and, for corrections, the new revision
/// number), as [`print_outcome`] does for the facade's outcomes.
pub(crate) fn print_written(
    out: &mut Out,
    w: &mnemon::ops::WriteResult,
    show_rev: bool,
) -> anyhow::Result<()> {
    let (doc, text) = match (w.existing, w.rev) {
        (true, _) => (json!({"id": w.id, "existing": true}), w.id.to_string()),
        (false, Some(rev)) if show_rev => {
            (json!({"id": w.id, "rev": rev}), format!("{} is now at revision {rev}", w.id))
        }
        _ => (json!({"id": w.id}), w.id.to_string()),
    };
    if out.json {
        out.json_line(&doc)?;
    } else {
        out.line(text)?;
    }
    Ok(())
}

/// Whether a terminal would act on `c` rather than show it: control characters (C0, DEL, C1:
/// escape sequences, carriage returns, line breaks) and the bidirectional embeddings,
/// overrides and isolates (U+202A-202E, U+2066-2069), which reorder what is shown around them
/// ("Trojan Source", CVE-2021-42574).
fn acts_on(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// JSON text with every character [`acts_on`] written as a `\uXXXX` escape. Valid for JSON a
/// serializer wrote: such characters can only be inside its strings, where the escape means
/// the same character.
pub(crate) fn json_safe(s: String) -> String {
    if !s.chars().any(acts_on) {
        return s;
    }
    s.chars().map(|c| if acts_on(c) { format!("\\u{:04x}", u32::from(c)) } else { c.to_string() }).collect()
}

/// `s` with every character a terminal would act on ([`acts_on`]: escape sequences, carriage
/// returns, line breaks, bidirectional controls) written as `\u{..}`, for one line of
/// terminal output.
pub(crate) fn escape(s: &str) -> String {
    escape_where(s, |_| true)
}

/// [`escape`], keeping line breaks and tabs: for text of several lines.
pub(crate) fn escape_text(s: &str) -> String {
    escape_where(s, |c| c != '\n' && c != '\t')
}

fn escape_where(s: &str, escaped: impl Fn(char) -> bool) -> String {
    if !s.chars().any(|c| acts_on(c) && escaped(c)) {
        return s.to_string();
    }
    s.chars()
        .map(|c| if acts_on(c) && escaped(c) { format!("\\u{{{:x}}}", u32::from(c)) } else { c.to_string() })
        .collect()
}
