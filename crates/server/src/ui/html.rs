//! HTML: escaping (every value a page shows passes through [`esc`]), the page's chrome (the
//! header with the two time controls and the slider), and the pieces pages share.

use std::fmt::Write;

use mnemon::{Record, Timestamp};

use super::At;

/// `s` as HTML text or a quoted attribute value: `& < > " '` escaped. Memory is data: markup
/// in a record shows as text.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` percent-encoded for a URL's path segment or query value.
pub(crate) fn url(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~:".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// What the chrome around a page shows.
#[derive(Default)]
pub(crate) struct Chrome {
    /// The page's title.
    pub(crate) title: String,
    /// The namespace the page is about, if any (for the breadcrumb and live updates).
    pub(crate) ns: Option<String>,
    /// The time axes the page is rendered at (none: no time controls).
    pub(crate) at: Option<At>,
    /// The slider's range: the namespace's history, first change to now.
    pub(crate) history: Option<(Timestamp, Timestamp)>,
    /// Query parameters the time form keeps (a search's query).
    pub(crate) keep: Vec<(String, String)>,
    /// Whether a viewer is signed in (a sign-out button).
    pub(crate) signed_in: bool,
    /// The session's CSRF token (for the sign-out form).
    pub(crate) csrf: String,
}

/// A whole page: the chrome around `main`.
pub(crate) fn page(chrome: &Chrome, main: &str) -> String {
    let mut h = String::with_capacity(main.len() + 4096);
    let live = chrome.at.as_ref().is_some_and(At::is_now);
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · mnemon</title><link rel=\"icon\" href=\"data:,\"><link rel=\"stylesheet\" href=\"/ui/assets/app.css\">\
         <script src=\"/ui/assets/app.js\" defer></script></head>\
         <body data-ns=\"{}\" data-live=\"{}\"><a class=\"skip\" href=\"#main\">Skip to content</a><header>",
        esc(&chrome.title),
        esc(chrome.ns.as_deref().unwrap_or("")),
        if live { "1" } else { "0" },
    );
    h.push_str("<nav aria-label=\"Breadcrumb\"><a class=\"brand\" href=\"/ui/\">mnemon</a>");
    if let Some(ns) = &chrome.ns {
        let q = chrome
            .at
            .as_ref()
            .map(At::query)
            .filter(|q| !q.is_empty())
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        let _ = write!(
            h,
            " <span aria-hidden=\"true\">/</span> <a href=\"{}{}\">{}</a>",
            esc(&super::ns_path(ns, "")),
            esc(&q),
            esc(ns)
        );
    }
    h.push_str("</nav>");
    if let Some(at) = &chrome.at {
        time_controls(&mut h, at, chrome);
    }
    let _ = write!(
        h,
        "<span id=\"live\" class=\"live\" role=\"status\" aria-live=\"polite\">{}</span>",
        if live { "live" } else { "as of the past: not live" }
    );
    if chrome.signed_in {
        let _ = write!(
            h,
            "<form method=\"post\" action=\"/ui/logout\" class=\"logout\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Sign out</button></form>",
            esc(&chrome.csrf)
        );
    }
    let _ = write!(h, "</header><main id=\"main\" tabindex=\"-1\">{main}</main></body></html>");
    h
}

/// The two time controls and the slider over the namespace's history.
fn time_controls(h: &mut String, at: &At, chrome: &Chrome) {
    h.push_str("<form class=\"time\" method=\"get\" role=\"search\" aria-label=\"Time travel\">");
    for (k, v) in &chrome.keep {
        let _ = write!(h, "<input type=\"hidden\" name=\"{}\" value=\"{}\">", esc(k), esc(v));
    }
    let _ = write!(
        h,
        "<label>Valid at <input name=\"as_of\" id=\"as_of\" value=\"{}\" placeholder=\"now\" size=\"22\" title=\"What was true at this time (RFC 3339 or a date)\"></label>\
         <label>Known at <input name=\"known_at\" id=\"known_at\" value=\"{}\" placeholder=\"now\" size=\"22\" title=\"As the database knew it at this time (transaction time)\"></label>\
         <button type=\"submit\">Show</button>",
        esc(at.as_of.as_deref().unwrap_or("")),
        esc(at.known_at.as_deref().unwrap_or("")),
    );
    if let Some((first, last)) = chrome.history {
        let (lo, hi) = (first.as_micros() / 1000, last.as_micros() / 1000);
        let pos = at
            .as_of
            .as_deref()
            .and_then(|t| Timestamp::parse(t).ok())
            .map_or(hi, |t| (t.as_micros() / 1000).clamp(lo, hi));
        let _ = write!(
            h,
            "<label class=\"slider\">Valid time <input type=\"range\" id=\"slider\" min=\"{lo}\" max=\"{hi}\" value=\"{pos}\" step=\"1\" aria-describedby=\"slider-at\"></label><output id=\"slider-at\" for=\"slider\"></output>"
        );
    }
    if !at.is_now() {
        let keep: Vec<String> = chrome.keep.iter().map(|(k, v)| format!("{}={}", url(k), url(v))).collect();
        let q = if keep.is_empty() { String::new() } else { format!("?{}", keep.join("&")) };
        let _ = write!(h, "<a class=\"now\" href=\"{}\">Now</a>", esc(&q));
    }
    h.push_str("</form>");
}

/// A time for people: `2024-05-07 10:00:00 UTC`, or `open`.
pub(crate) fn when(t: Option<Timestamp>) -> String {
    match t {
        None => "open".into(),
        Some(t) if t == Timestamp::MAX => "open".into(),
        Some(t) => format!("{} UTC", t.to_human()),
    }
}

/// A duration for people: `3 d 4 h`, `25 min`, `40 s`.
pub(crate) fn span(micros: i64) -> String {
    let s = micros / 1_000_000;
    match s {
        s if s >= 86_400 => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
        s if s >= 3600 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// A record's title line: its main text.
pub(crate) fn title_of(r: &Record) -> String {
    let t = r.body.title();
    if t.trim().is_empty() { r.body.text() } else { t.to_string() }
}

/// The last eight hex digits of an id, as tables show it.
pub(crate) fn short(id: mnemon::RecordId) -> String {
    let s = id.to_string().replace('-', "");
    s[s.len().saturating_sub(8)..].to_string()
}

/// A record's lifecycle state at valid time `at`: `active`, `superseded`, ...
pub(crate) fn status(r: &Record, at: Timestamp) -> String {
    format!("{:?}", r.status_at(at)).to_lowercase()
}

/// What a record's kind says of its state (a decision's status, a task's status and
/// priority, role knowledge's confidence...), from its body's JSON.
pub(crate) fn kind_state(r: &Record) -> String {
    let body = r.body.to_json();
    let get = |k: &str| body.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
    match r.kind() {
        mnemon::Kind::Decision => get("status"),
        mnemon::Kind::Task => [get("status"), get("priority")]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(", "),
        mnemon::Kind::Gotcha => get("severity"),
        mnemon::Kind::Pattern => get("category"),
        mnemon::Kind::Entity => get("entity_type"),
        mnemon::Kind::Episode => get("episode_type"),
        mnemon::Kind::Knowledge => get("category"),
        mnemon::Kind::Conversation => {
            if body.get("ended_at").is_some_and(|v| !v.is_null()) {
                "ended".into()
            } else {
                "open".into()
            }
        }
        mnemon::Kind::Message => get("role"),
        mnemon::Kind::Relation => get("relation_type"),
        _ => String::new(),
    }
}

/// `s` cut to at most `max` characters, with `…` when cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
