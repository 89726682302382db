//! The pages: the namespaces, a namespace in sections, search, a record's story, what changed
//! between two moments, and the confirmation before a record is erased. Each reads through the
//! operation layer in the viewer's session, as of the page's pair of times.

use std::collections::BTreeMap;
use std::fmt::Write;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use mnemon::ops::{Chain, Changes, DbStats, Get, History, List, Recall, Session};
use mnemon::{Kind, Record, Timestamp};
use serde::Deserialize;
use serde_json::Value;

use super::html::{self, Chrome, esc, when};
use super::{At, Viewer, ns_path, render, signed_in, to_login};
use crate::http::app::App;
use crate::http::problem::Problem;
use crate::tokens::Scope;

/// How many entries a section shows unless asked for more.
const SECTION: usize = 50;
/// How many commits the namespaces page looks back through for each one's last change.
const LAST_CHANGE_COMMITS: usize = 20_000;

/// The sections of a namespace page: seed 003's scoped memory first (brief, learnings,
/// errors, patterns, preferences), then one per other kind.
const SECTIONS: [(Kind, &str); 16] = [
    (Kind::Brief, "Brief"),
    (Kind::Learning, "Learnings"),
    (Kind::ErrorFix, "Errors"),
    (Kind::Pattern, "Patterns"),
    (Kind::Preference, "Preferences"),
    (Kind::Gotcha, "Gotchas"),
    (Kind::Decision, "Decisions"),
    (Kind::Task, "Tasks"),
    (Kind::Entity, "Entities"),
    (Kind::Relation, "Relations"),
    (Kind::Observation, "Observations"),
    (Kind::Episode, "Episodes"),
    (Kind::Conversation, "Conversations"),
    (Kind::Message, "Messages"),
    (Kind::Knowledge, "Knowledge"),
    (Kind::Metrics, "Task metrics"),
];

fn chrome(viewer: &Viewer, title: String, ns: Option<&str>, at: Option<At>) -> Chrome {
    Chrome {
        title,
        ns: ns.map(str::to_string),
        at,
        signed_in: true,
        csrf: viewer.csrf.clone(),
        ..Default::default()
    }
}

/// A page about namespace `ns` for the signed-in viewer (else the way to sign in): `f` renders
/// it on the blocking pool with the viewer, a read session in `ns`, and whether the viewer may
/// write there.
async fn ns_page(
    app: App,
    headers: &HeaderMap,
    ns: String,
    f: impl FnOnce(&Viewer, Session, bool) -> Result<String, Problem> + Send + 'static,
) -> Response {
    let Some(viewer) = signed_in(&app, headers) else { return to_login() };
    render(move || {
        let (session, can_write) = viewer.session(&app, &ns, Scope::Read)?;
        f(&viewer, session, can_write)
    })
    .await
}

/// The valid time a page is rendered at.
fn valid_time(at: &At, now: Timestamp) -> Timestamp {
    at.as_of.as_deref().and_then(|s| Timestamp::parse(s).ok()).unwrap_or(now)
}

/// The slider's range for namespace `ns`: from the first valid time anything in it starts
/// (as known now) to now.
fn history_of(session: &Session, ns: &str) -> Result<Option<(Timestamp, Timestamp)>, Problem> {
    let db = session.db().db_for(ns)?;
    let name = mnemon::Namespace::new(ns).map_err(|e| Problem::invalid(e.to_string()))?;
    let first = db.snapshot()?.next_change(&name, Timestamp::MIN, &[]).map_err(mnemon::Error::from)?;
    let now = db.now();
    Ok(first.filter(|f| *f < now).map(|f| (f, now)))
}

/// `GET /ui/`: the namespaces the viewer reaches, grouped (global, projects, agents, the
/// rest), each with its current records by kind and its last change.
pub(super) async fn index(State(app): State<App>, headers: HeaderMap, Query(at): Query<At>) -> Response {
    let Some(viewer) = signed_in(&app, &headers) else { return to_login() };
    render(move || {
        let at = at.checked()?;
        let reach = viewer.reach(&app)?;
        let mut session = Session::new(app.db().clone(), "default")?;
        match &reach {
            None => session = session.allow("*"),
            Some(info) => {
                for p in &info.namespaces {
                    session = session.allow(p.clone());
                }
            }
        }
        let reaches = |n: &str| reach.as_ref().is_none_or(|info| info.reaches(n));
        let stats = session.call(DbStats {})?;
        let last = app.db().last_changes(LAST_CHANGE_COMMITS)?;
        let mut groups: BTreeMap<u8, Vec<String>> = BTreeMap::new();
        let mut rows: BTreeMap<String, String> = BTreeMap::new();
        for n in stats.namespaces.iter().filter(|n| reaches(n.namespace.as_str())) {
            let name = n.namespace.as_str().to_string();
            let counts = if at.is_now() {
                n.current.iter().map(|(k, c)| (*k, *c)).collect::<Vec<_>>()
            } else {
                counts_at(&session, &name, &at)?
            };
            let total: u64 = counts.iter().map(|(_, c)| c).sum();
            let kinds = counts
                .iter()
                .filter(|(_, c)| *c > 0)
                .map(|(k, c)| format!("<span class=\"count\">{} {}</span>", c, esc(k.name())))
                .collect::<Vec<_>>()
                .join(" ");
            let q = at.query();
            let href = format!("{}{}", ns_path(&name, ""), if q.is_empty() { String::new() } else { format!("?{q}") });
            let row = format!(
                "<tr><th scope=\"row\"><a href=\"{}\">{}</a></th><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&href),
                esc(&name),
                total,
                if kinds.is_empty() { "<span class=\"muted\">nothing valid</span>".into() } else { kinds },
                esc(&last.get(&name).map_or_else(|| "earlier".to_string(), |t| when(Some(*t)))),
            );
            let group = match name.split(':').next() {
                _ if name == "global" => 0,
                Some("project") => 1,
                Some("agent") => 2,
                _ => 3,
            };
            groups.entry(group).or_default().push(name.clone());
            rows.insert(name, row);
        }
        let mut main = String::from("<h1>Memory</h1>");
        if groups.is_empty() {
            main.push_str("<p class=\"empty\">No namespace you can see holds anything yet.</p>");
        }
        for (g, names) in &groups {
            let title = ["Global", "Projects", "Agents", "Other namespaces"][usize::from(*g)];
            let _ = write!(
                main,
                "<section><h2>{title}</h2><table class=\"namespaces\"><thead><tr><th scope=\"col\">Namespace</th><th scope=\"col\">Records</th><th scope=\"col\">By kind</th><th scope=\"col\">Last change</th></tr></thead><tbody>"
            );
            for n in names {
                main.push_str(rows.get(n).map_or("", String::as_str));
            }
            main.push_str("</tbody></table></section>");
        }
        Ok(html::page(&chrome(&viewer, "Memory".into(), None, Some(at)), &main))
    })
    .await
}

/// Records of each kind valid in `ns` as of `at` (counted by listing, up to 10,000 a kind).
fn counts_at(session: &Session, ns: &str, at: &At) -> Result<Vec<(Kind, u64)>, Problem> {
    let mut out = Vec::new();
    for (kind, _) in SECTIONS {
        let got = list(session, ns, at, kind, 10_000)?;
        out.push((kind, got.len() as u64));
    }
    Ok(out)
}

/// The records of `kind` valid in `ns` as of `at`, newest first, at most `limit`.
fn list(session: &Session, ns: &str, at: &At, kind: Kind, limit: usize) -> Result<Vec<Record>, Problem> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = session.call(List {
            kinds: vec![kind.name().into()],
            as_of: at.as_of.clone(),
            known_at: at.known_at.clone(),
            limit: Some((limit - out.len()).min(1000)),
            cursor,
            namespace: Some(ns.into()),
            ..Default::default()
        })?;
        out.extend(page.records.into_iter().map(|r| r.record));
        match page.next_cursor {
            Some(c) if out.len() < limit => cursor = Some(c),
            _ => return Ok(out),
        }
    }
}

#[derive(Deserialize, Default)]
pub(super) struct NsQuery {
    #[serde(flatten)]
    at: At,
    /// Show only this kind's section, with more entries.
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// `GET /ui/ns/{ns}`: the namespace in sections, as of the page's times.
pub(super) async fn namespace(
    State(app): State<App>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    Query(q): Query<NsQuery>,
) -> Response {
    ns_page(app, &headers, ns.clone(), move |viewer, session, can_write| {
        let at = q.at.checked()?;
        let now = session.db().now();
        let v = valid_time(&at, now);
        let only: Option<Kind> = q.kind.as_deref().map(|k| k.parse::<Kind>()).transpose().map_err(|e| Problem::invalid(e.to_string()))?;
        let limit = q.limit.unwrap_or(if only.is_some() { 500 } else { SECTION }).clamp(1, 10_000);
        let qs = at.query();
        let mut main = String::new();
        let _ = write!(main, "<h1>{}</h1>", esc(&ns));
        let _ = write!(
            main,
            "<p class=\"actions\"><a href=\"{}\">What changed</a>{}</p>",
            esc(&format!("{}{}", ns_path(&ns, "/changes"), if qs.is_empty() { String::new() } else { format!("?{qs}") })),
            if can_write && at.is_now() { " · <a href=\"#add\">Add an entry</a>" } else { "" }
        );
        search_form(&mut main, &ns, "", &at);
        let mut relations: Vec<Record> = Vec::new();
        let mut any = false;
        let mut sections = String::new();
        for (kind, title) in SECTIONS {
            if only.is_some_and(|o| o != kind) {
                continue;
            }
            let records = list(&session, &ns, &at, kind, limit + 1)?;
            if kind == Kind::Relation {
                relations = records.clone();
            }
            if records.is_empty() {
                continue;
            }
            any = true;
            let more = records.len() > limit;
            let _ = write!(
                sections,
                "<section class=\"kind kind-{}\" aria-labelledby=\"s-{}\"><h2 id=\"s-{}\">{} <span class=\"muted\">{}{}</span></h2><ul class=\"entries\">",
                kind.name(),
                kind.name(),
                kind.name(),
                esc(title),
                records.len().min(limit),
                if more { "+" } else { "" }
            );
            for r in records.iter().take(limit) {
                entry(&mut sections, r, v, now, &ns, &qs, &relations);
            }
            sections.push_str("</ul>");
            if more {
                let href = format!("{}?kind={}&limit=1000{}", ns_path(&ns, ""), kind.name(), if qs.is_empty() { String::new() } else { format!("&{qs}") });
                let _ = write!(sections, "<p><a href=\"{}\">Show more {}</a></p>", esc(&href), esc(&title.to_lowercase()));
            }
            sections.push_str("</section>");
        }
        if !any {
            main.push_str("<p class=\"empty\">Nothing is valid here at this time.</p>");
        }
        main.push_str(&sections);
        if can_write && at.is_now() {
            super::forms::add_form(&mut main, &ns, &viewer.csrf);
        } else if !can_write {
            main.push_str("<p class=\"muted\" id=\"add\">Your token reads only: no changes can be made here.</p>");
        } else {
            main.push_str("<p class=\"muted\" id=\"add\">Changes are made to memory as it is now: go back to now to add an entry.</p>");
        }
        let mut c = chrome(viewer, ns.clone(), Some(&ns), Some(at));
        c.history = history_of(&session, &ns)?;
        if let Some(k) = only {
            c.keep.push(("kind".into(), k.name().into()));
        }
        Ok(html::page(&c, &main))
    })
    .await
}

/// One entry of a section: what it says, its kind's state, and every envelope field.
fn entry(h: &mut String, r: &Record, v: Timestamp, now: Timestamp, ns: &str, qs: &str, relations: &[Record]) {
    let status = html::status(r, v);
    let href = format!(
        "{}{}",
        ns_path(ns, &format!("/r/{}", r.id)),
        if qs.is_empty() { String::new() } else { format!("?{qs}") }
    );
    let _ = write!(
        h,
        "<li class=\"entry status-{}\"><div class=\"head\"><a class=\"title\" href=\"{}\">{}</a>",
        esc(&status),
        esc(&href),
        esc(&html::cut(&html::title_of(r), 300))
    );
    let state = html::kind_state(r);
    if !state.is_empty() {
        let _ = write!(h, " <span class=\"badge\">{}</span>", esc(&state));
    }
    let _ = write!(
        h,
        " <span class=\"badge state-{}\">{}</span></div><dl class=\"meta\">",
        esc(&status),
        esc(&status)
    );
    let e = &r.envelope;
    let mut field = |name: &str, value: String| {
        let _ = write!(h, "<div><dt>{}</dt><dd>{}</dd></div>", esc(name), esc(&value));
    };
    field("importance", e.importance.map_or("-".into(), |i| i.to_string()));
    if let Some(c) = e.confidence {
        field("confidence", format!("{c:.2}"));
    }
    if !e.tags.is_empty() {
        field("tags", e.tags.iter().map(|t| t.as_str().to_string()).collect::<Vec<_>>().join(", "));
    }
    field("valid", format!("{} → {}", when(Some(r.valid_from)), when(r.valid_until)));
    field("recorded", when(Some(r.recorded_at)));
    match r.expires_at {
        Some(x) if x > now => field(
            "expires",
            format!("{} ({} left)", when(Some(x)), html::span(x.as_micros() - now.as_micros())),
        ),
        Some(x) => field("expired", when(Some(x))),
        None => field("expires", "never".into()),
    }
    if let Some(s) = e.source.as_ref() {
        field("agent", s.as_str().to_string());
    }
    let body = r.body.to_json();
    match r.kind() {
        Kind::Decision => {
            if let Some(s) = r.supersedes {
                field("supersedes", html::short(s));
            }
            if let Some(s) = r.superseded_by {
                field("replaced by", format!("{} from {}", html::short(s), when(r.valid_until)));
            }
        }
        Kind::Task => {
            let deps = body.get("dependencies").and_then(Value::as_array).map_or(0, Vec::len);
            if deps > 0 {
                field("depends on", format!("{deps} task(s)"));
            }
        }
        Kind::Episode => field(
            "accessed",
            format!("{} time(s)", body.get("access_count").and_then(Value::as_u64).unwrap_or(0)),
        ),
        Kind::Entity => {
            let name = html::title_of(r);
            let rels: Vec<String> = relations
                .iter()
                .filter_map(|rel| {
                    let b = rel.body.to_json();
                    let (from, to, t) =
                        (b.get("from")?.as_str()?, b.get("to")?.as_str()?, b.get("relation_type")?.as_str()?);
                    (from == name || to == name).then(|| format!("{from} {t} {to}"))
                })
                .collect();
            if !rels.is_empty() {
                field("relations", rels.join("; "));
            }
        }
        _ => {}
    }
    h.push_str("</dl></li>");
}

fn search_form(h: &mut String, ns: &str, q: &str, at: &At) {
    let _ = write!(
        h,
        "<form class=\"search\" method=\"get\" action=\"{}\" role=\"search\"><label for=\"q\">Search</label> <input id=\"q\" name=\"q\" type=\"search\" value=\"{}\" placeholder=\"words or meaning\">",
        esc(&ns_path(ns, "/search")),
        esc(q)
    );
    if let Some(a) = &at.as_of {
        let _ = write!(h, "<input type=\"hidden\" name=\"as_of\" value=\"{}\">", esc(a));
    }
    if let Some(k) = &at.known_at {
        let _ = write!(h, "<input type=\"hidden\" name=\"known_at\" value=\"{}\">", esc(k));
    }
    h.push_str(" <button type=\"submit\">Search</button></form>");
}

#[derive(Deserialize, Default)]
pub(super) struct SearchQuery {
    #[serde(flatten)]
    at: At,
    #[serde(default)]
    q: String,
}

/// `GET /ui/ns/{ns}/search?q=...`: hybrid search with each hit's score and its explanation.
pub(super) async fn search(
    State(app): State<App>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    Query(q): Query<SearchQuery>,
) -> Response {
    ns_page(app, &headers, ns.clone(), move |viewer, session, _| {
        let at = q.at.checked()?;
        let now = session.db().now();
        let v = valid_time(&at, now);
        let qs = at.query();
        let mut main = format!("<h1>Search {}</h1>", esc(&ns));
        search_form(&mut main, &ns, &q.q, &at);
        if !q.q.trim().is_empty() {
            let hits = session.call(Recall {
                query: q.q.clone(),
                limit: Some(25),
                as_of: at.as_of.clone(),
                known_at: at.known_at.clone(),
                namespace: Some(ns.clone()),
                explain: true,
                ..Default::default()
            })?;
            if hits.hits.is_empty() {
                main.push_str("<p class=\"empty\">Nothing matches.</p>");
            }
            main.push_str("<ol class=\"hits\">");
            for hit in &hits.hits {
                let r = &hit.record.record;
                let href = format!("{}{}", ns_path(&ns, &format!("/r/{}", r.id)), if qs.is_empty() { String::new() } else { format!("?{qs}") });
                let explain = hit.explain.as_ref().map_or(String::new(), |e| {
                    let mut parts = Vec::new();
                    if let (Some(rank), Some(s)) = (e.lexical_rank, e.lexical_score) {
                        parts.push(format!("words: rank {rank}, BM25 {s:.2}"));
                    }
                    if let (Some(rank), Some(s)) = (e.vector_rank, e.similarity) {
                        parts.push(format!("meaning: rank {rank}, similarity {s:.3}"));
                    }
                    parts.join("; ")
                });
                let _ = write!(
                    main,
                    "<li><a href=\"{}\">{}</a> <span class=\"badge\">{}</span> <span class=\"badge state-{}\">{}</span><div class=\"score\">score {:.3}{}{}</div></li>",
                    esc(&href),
                    esc(&html::cut(&html::title_of(r), 300)),
                    esc(r.kind().name()),
                    esc(&html::status(r, v)),
                    esc(&html::status(r, v)),
                    hit.score,
                    if explain.is_empty() { "" } else { " · " },
                    esc(&explain)
                );
            }
            main.push_str("</ol>");
        }
        let mut c = chrome(viewer, format!("Search {ns}"), Some(&ns), Some(at));
        c.keep.push(("q".into(), q.q.clone()));
        Ok(html::page(&c, &main))
    })
    .await
}

#[derive(Deserialize, Default)]
pub(super) struct ChangesQuery {
    /// From this transaction time (default: a day before `to`).
    #[serde(default)]
    from: Option<String>,
    /// Up to this transaction time (default: now).
    #[serde(default)]
    to: Option<String>,
}

/// `GET /ui/ns/{ns}/changes?from=T1&to=T2`: what was added, revised, superseded, retired,
/// expired or forgotten between two transaction times.
pub(super) async fn changes(
    State(app): State<App>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    Query(q): Query<ChangesQuery>,
) -> Response {
    ns_page(app, &headers, ns.clone(), move |viewer, session, _| {
        let parse = |name: &str, v: &Option<String>| -> Result<Option<Timestamp>, Problem> {
            v.as_deref()
                .filter(|s| !s.trim().is_empty())
                .map(|s| Timestamp::parse(s).map_err(|e| Problem::invalid(format!("`{name}`: {e}"))))
                .transpose()
        };
        let now = session.db().now();
        let to = parse("to", &q.to)?.unwrap_or(now);
        let from = parse("from", &q.from)?.unwrap_or_else(|| Timestamp::from_micros(to.as_micros() - 86_400_000_000));
        let mut found = Vec::new();
        let mut since = mnemon::feed::Cursor::after(from).to_string();
        let mut truncated = false;
        'pages: loop {
            let page = session.call(Changes { since: Some(since.clone()), limit: Some(1000), namespaces: vec![ns.clone()], ..Default::default() })?;
            if page.changes.is_empty() {
                break;
            }
            for c in page.changes {
                if c.tx > to {
                    break 'pages;
                }
                if found.len() >= 5000 {
                    truncated = true;
                    break 'pages;
                }
                found.push(c);
            }
            since = page.next.to_string();
        }
        let mut main = format!("<h1>What changed in {}</h1>", esc(&ns));
        let _ = write!(
            main,
            "<form class=\"range\" method=\"get\"><label>From <input name=\"from\" value=\"{}\" size=\"28\"></label> <label>to <input name=\"to\" value=\"{}\" size=\"28\"></label> <button type=\"submit\">Show</button></form>",
            esc(&from.to_rfc3339()),
            esc(&to.to_rfc3339())
        );
        let mut by_op: BTreeMap<&'static str, usize> = BTreeMap::new();
        for c in &found {
            *by_op.entry(c.op.name()).or_default() += 1;
        }
        let summary: Vec<String> = by_op.iter().map(|(op, n)| format!("{n} {op}")).collect();
        let _ = write!(
            main,
            "<p class=\"summary\">{} change(s){}{}</p>",
            found.len(),
            if summary.is_empty() { String::new() } else { format!(": {}", esc(&summary.join(", "))) },
            if truncated { " (the first 5,000 shown)" } else { "" }
        );
        main.push_str("<table class=\"changes\"><thead><tr><th scope=\"col\">When (transaction time)</th><th scope=\"col\">What</th><th scope=\"col\">Kind</th><th scope=\"col\">Record</th><th scope=\"col\">Revision</th></tr></thead><tbody>");
        let snap = session.db().db_for(&ns)?.snapshot()?;
        let name = mnemon::Namespace::new(&ns).map_err(|e| Problem::invalid(e.to_string()))?;
        for c in &found {
            let title = match c.op {
                mnemon::feed::ChangeOp::Forget => "<span class=\"muted\">(erased)</span>".to_string(),
                _ => match snap.revision_at(&name, c.id, c.tx).map_err(mnemon::Error::from)? {
                    Some(r) => format!(
                        "<a href=\"{}\">{}</a>",
                        esc(&format!("{}?known_at={}", ns_path(&ns, &format!("/r/{}", c.id)), html::url(&c.tx.to_rfc3339()))),
                        esc(&html::cut(&html::title_of(&r), 200))
                    ),
                    None => "<span class=\"muted\">(erased since)</span>".to_string(),
                },
            };
            let _ = write!(
                main,
                "<tr class=\"op-{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
                esc(c.op.name()),
                esc(&when(Some(c.tx))),
                esc(c.op.name()),
                esc(c.kind.map_or("-", |k| k.name())),
                title,
                c.rev
            );
        }
        main.push_str("</tbody></table>");
        Ok(html::page(&chrome(viewer, format!("What changed in {ns}"), Some(&ns), None), &main))
    })
    .await
}

#[derive(Deserialize, Default)]
pub(super) struct RecordQuery {
    #[serde(flatten)]
    at: At,
    /// Two revisions to compare.
    #[serde(default)]
    a: Option<u32>,
    #[serde(default)]
    b: Option<u32>,
}

/// `GET /ui/ns/{ns}/r/{id}`: the record as of the page's times, every revision on a
/// timeline, its supersession chain, and the difference between two revisions.
pub(super) async fn record(
    State(app): State<App>,
    headers: HeaderMap,
    Path((ns, id)): Path<(String, String)>,
    Query(q): Query<RecordQuery>,
) -> Response {
    ns_page(app, &headers, ns.clone(), move |viewer, session, can_write| {
        let at = q.at.checked()?;
        let now = session.db().now();
        let v = valid_time(&at, now);
        let revisions: Vec<Record> = session
            .call(History { id: id.clone(), namespace: Some(ns.clone()) })?
            .revisions
            .into_iter()
            .map(|r| r.record)
            .collect();
        let got = session
            .call(Get { id: id.clone(), as_of: at.as_of.clone(), known_at: at.known_at.clone(), namespace: Some(ns.clone()) })
            .ok()
            .map(|g| g.record.record);
        let latest = revisions.last().ok_or_else(|| Problem::new(axum::http::StatusCode::NOT_FOUND, "not_found", "no such record"))?;
        let mut main = String::new();
        let _ = write!(
            main,
            "<h1>{}</h1><p class=\"muted\">{} · {} · {}</p>",
            esc(&html::cut(&html::title_of(got.as_ref().unwrap_or(latest)), 300)),
            esc(latest.kind().name()),
            esc(&latest.id.to_string()),
            esc(&ns)
        );
        match &got {
            Some(r) => {
                let _ = write!(main, "<section><h2>As of the chosen time: {}</h2>", esc(&html::status(r, v)));
                fields(&mut main, r);
                main.push_str("</section>");
            }
            None => {
                let known = at.known_at.as_deref().and_then(|k| Timestamp::parse(k).ok()).unwrap_or(now);
                let state = match revisions.iter().rev().find(|r| r.recorded_at <= known) {
                    Some(r) => format!("{} at the chosen time", html::status(r, v)),
                    None => "not yet known at the chosen time".into(),
                };
                let _ = write!(main, "<p class=\"empty\">Not valid then: {}. Its revisions:</p>", esc(&state));
            }
        }
        // The timeline of revisions.
        main.push_str("<section><h2>Revisions</h2><form method=\"get\" class=\"compare\">");
        if let Some(a) = &at.as_of {
            let _ = write!(main, "<input type=\"hidden\" name=\"as_of\" value=\"{}\">", esc(a));
        }
        if let Some(k) = &at.known_at {
            let _ = write!(main, "<input type=\"hidden\" name=\"known_at\" value=\"{}\">", esc(k));
        }
        main.push_str("<ol class=\"timeline\">");
        let (a, b) = match (q.a, q.b) {
            (Some(a), Some(b)) => (Some(a), Some(b)),
            _ => (revisions.len().checked_sub(2).map(|i| revisions[i].rev), Some(latest.rev)),
        };
        for r in &revisions {
            let _ = write!(
                main,
                "<li class=\"rev op-{op}\"><span class=\"pick\"><label><input type=\"radio\" name=\"a\" value=\"{rev}\"{ca}> a</label> <label><input type=\"radio\" name=\"b\" value=\"{rev}\"{cb}> b</label></span> <strong>rev {rev}</strong> <span class=\"badge\">{op}</span> recorded {rec}{rep} · valid {vf} → {vu}{st}</li>",
                op = esc(&format!("{:?}", r.op).to_lowercase()),
                rev = r.rev,
                ca = if a == Some(r.rev) { " checked" } else { "" },
                cb = if b == Some(r.rev) { " checked" } else { "" },
                rec = esc(&when(Some(r.recorded_at))),
                rep = r.replaced_at.map_or(String::new(), |t| format!(", replaced {}", esc(&when(Some(t))))),
                vf = esc(&when(Some(r.valid_from))),
                vu = esc(&when(r.valid_until)),
                st = match html::kind_state(r) {
                    s if s.is_empty() => String::new(),
                    s => format!(" · {}", esc(&s)),
                },
            );
        }
        main.push_str("</ol>");
        if revisions.len() > 1 {
            main.push_str("<button type=\"submit\">Compare a and b</button>");
        }
        main.push_str("</form>");
        if let (Some(a), Some(b)) = (a, b)
            && let (Some(ra), Some(rb)) = (revisions.iter().find(|r| r.rev == a), revisions.iter().find(|r| r.rev == b))
        {
            diff(&mut main, ra, rb);
        }
        main.push_str("</section>");
        // The supersession chain.
        let chain = session.call(Chain { id: id.clone(), namespace: Some(ns.clone()) })?;
        if chain.chain.len() > 1 {
            main.push_str("<section><h2>Supersession chain</h2><ol class=\"chain\">");
            for link in &chain.chain {
                let r = &link.record;
                let here = r.id == latest.id;
                let _ = write!(
                    main,
                    "<li{}><a href=\"{}\">{}</a> · valid {} → {} · {}</li>",
                    if here { " aria-current=\"true\" class=\"here\"" } else { "" },
                    esc(&ns_path(&ns, &format!("/r/{}", r.id))),
                    esc(&html::cut(&html::title_of(r), 200)),
                    esc(&when(Some(r.valid_from))),
                    esc(&when(r.valid_until)),
                    esc(&html::status(r, v))
                );
            }
            main.push_str("</ol></section>");
        }
        if can_write && at.is_now() {
            super::forms::record_forms(&mut main, &ns, latest, &viewer.csrf);
        }
        let mut c = chrome(viewer, html::cut(&html::title_of(latest), 80), Some(&ns), Some(at));
        let first = revisions.iter().map(|r| r.valid_from.min(r.recorded_at)).min().unwrap_or(now);
        c.history = (first < now).then_some((first, now));
        Ok(html::page(&c, &main))
    })
    .await
}

/// Every field of a record: its envelope and its body.
fn fields(h: &mut String, r: &Record) {
    h.push_str("<dl class=\"fields\">");
    for (k, v) in flat(r) {
        let _ = write!(h, "<div><dt>{}</dt><dd>{}</dd></div>", esc(&k), esc(&v));
    }
    h.push_str("</dl>");
}

/// A record's fields as `name -> text`, the body's under `body.`.
fn flat(r: &Record) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let view = serde_json::to_value(mnemon::json::RecordJson::from_record(r)).unwrap_or(Value::Null);
    if let Value::Object(m) = view {
        for (k, v) in m {
            match (k.as_str(), v) {
                ("body", Value::Object(b)) => {
                    for (bk, bv) in b {
                        out.insert(format!("body.{bk}"), text(&bv));
                    }
                }
                (_, Value::Null) => {}
                (_, v) => {
                    out.insert(k, text(&v));
                }
            }
        }
    }
    out
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The fields that differ between two revisions.
fn diff(h: &mut String, a: &Record, b: &Record) {
    let (fa, fb) = (flat(a), flat(b));
    let mut keys: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    keys.sort();
    keys.dedup();
    let _ = write!(
        h,
        "<h3>Rev {} → rev {}</h3><table class=\"diff\"><thead><tr><th scope=\"col\">Field</th><th scope=\"col\">Rev {}</th><th scope=\"col\">Rev {}</th></tr></thead><tbody>",
        a.rev, b.rev, a.rev, b.rev
    );
    let mut any = false;
    for k in keys {
        if matches!(k.as_str(), "rev" | "recorded_at" | "replaced_at") {
            continue;
        }
        let (va, vb) = (fa.get(k).cloned().unwrap_or_default(), fb.get(k).cloned().unwrap_or_default());
        if va != vb {
            any = true;
            let _ = write!(
                h,
                "<tr><th scope=\"row\">{}</th><td class=\"old\">{}</td><td class=\"new\">{}</td></tr>",
                esc(k),
                esc(&va),
                esc(&vb)
            );
        }
    }
    if !any {
        h.push_str("<tr><td colspan=\"3\" class=\"muted\">No field differs.</td></tr>");
    }
    h.push_str("</tbody></table>");
}

/// `GET /ui/ns/{ns}/r/{id}/forget`: what erasing the record would take away, and the button.
pub(super) async fn forget_confirm(
    State(app): State<App>,
    headers: HeaderMap,
    Path((ns, id)): Path<(String, String)>,
) -> Response {
    ns_page(app, &headers, ns.clone(), move |viewer, session, can_write| {
        if !can_write {
            return Err(Problem::forbidden("your token reads only"));
        }
        let revisions = session.call(History { id: id.clone(), namespace: Some(ns.clone()) })?.revisions;
        let latest = revisions.last().map(|r| &r.record).ok_or_else(|| Problem::new(axum::http::StatusCode::NOT_FOUND, "not_found", "no such record"))?;
        let mut main = String::new();
        let _ = write!(
            main,
            "<h1>Forget this {}?</h1><p>This erases <strong>every revision ({})</strong> of the {} <q>{}</q> ({}) in {}: its text, its history and its vectors. Time travel will not find it, and it cannot be undone. To keep its history and only end it, retire it instead.</p>",
            esc(latest.kind().name()),
            revisions.len(),
            esc(latest.kind().name()),
            esc(&html::cut(&html::title_of(latest), 300)),
            esc(&latest.id.to_string()),
            esc(&ns)
        );
        let _ = write!(
            main,
            "<form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\" class=\"danger\">Erase {} revision(s)</button> <a href=\"{}\">Cancel</a></form>",
            esc(&ns_path(&ns, &format!("/r/{id}/forget"))),
            esc(&viewer.csrf),
            revisions.len(),
            esc(&ns_path(&ns, &format!("/r/{id}")))
        );
        Ok(html::page(&chrome(viewer, "Forget".into(), Some(&ns), None), &main))
    })
    .await
}
