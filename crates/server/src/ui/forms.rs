//! Changing memory from the view: add, edit (a revision), supersede, retire, expire and
//! forget. Each form carries the session's CSRF token and is run as the operation the API
//! runs (`remember`, `revise`, `supersede`, `retire`, `forget`), in the viewer's session with
//! the write scope: a read token is refused whatever it posts.

use std::collections::HashMap;
use std::fmt::Write;

use axum::Form;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use mnemon::Record;
use mnemon::ops::{Forget, Remember, Retire, Revise, Supersede};
use serde_json::{Map, Value};

use super::html::{self, esc};
use super::{ns_path, problem_page, secure, signed_in, to_login};
use crate::http::app::App;
use crate::http::problem::Problem;
use crate::tokens::Scope;

/// The kinds the add form offers, scoped memory's first.
const KINDS: [&str; 14] = [
    "learning",
    "error_fix",
    "pattern",
    "preference",
    "brief",
    "gotcha",
    "decision",
    "task",
    "entity",
    "observation",
    "episode",
    "knowledge",
    "conversation",
    "message",
];

/// The form that adds an entry to namespace `ns`.
pub(super) fn add_form(h: &mut String, ns: &str, csrf: &str) {
    let _ = write!(
        h,
        "<section id=\"add\" class=\"form\"><h2>Add an entry</h2><form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(&ns_path(ns, "/add")),
        esc(csrf)
    );
    h.push_str("<label>Kind <select name=\"kind\">");
    for k in KINDS {
        let _ = write!(h, "<option value=\"{k}\">{k}</option>");
    }
    h.push_str("</select></label>");
    h.push_str(
        "<label class=\"wide\">Text <textarea name=\"text\" rows=\"3\" required></textarea></label>\
         <label>Importance <select name=\"importance\"><option value=\"\">ordinary, permanent</option>\
         <option value=\"1\">1: a day</option><option value=\"2\">2: a week</option><option value=\"3\">3: a month</option>\
         <option value=\"4\">4: 90 days</option><option value=\"5\">5: critical, permanent</option></select></label>\
         <label>Tags <input name=\"tags\" placeholder=\"comma, separated\"></label>\
         <label>Valid from <input name=\"valid_from\" placeholder=\"now\"></label>\
         <button type=\"submit\">Add</button></form></section>",
    );
}

/// The forms acting on record `r`: edit, supersede, retire, expire, forget.
pub(super) fn record_forms(h: &mut String, ns: &str, r: &Record, csrf: &str) {
    let base = ns_path(ns, &format!("/r/{}", r.id));
    let hidden = format!("<input type=\"hidden\" name=\"csrf\" value=\"{}\">", esc(csrf));
    let body = serde_json::to_string_pretty(&r.body.to_json()).unwrap_or_default();
    let tags: Vec<String> = r.envelope.tags.iter().map(|t| t.as_str().to_string()).collect();
    let importance = r.envelope.importance.map_or(String::new(), |i| i.to_string());
    h.push_str("<section class=\"form\"><h2>Change it</h2>");
    let _ = write!(
        h,
        "<details><summary>Edit (a new revision)</summary><form method=\"post\" action=\"{}/revise\">{hidden}\
         <label class=\"wide\">Fields (JSON) <textarea name=\"fields\" rows=\"8\" spellcheck=\"false\">{}</textarea></label>\
         <label>Importance <input name=\"importance\" value=\"{}\" size=\"3\" inputmode=\"numeric\"></label>\
         <label>Tags <input name=\"tags\" value=\"{}\"></label><button type=\"submit\">Save a revision</button></form></details>",
        esc(&base),
        esc(&body),
        esc(&importance),
        esc(&tags.join(", "))
    );
    let _ = write!(
        h,
        "<details><summary>Supersede (a new record replaces it)</summary><form method=\"post\" action=\"{}/supersede\">{hidden}\
         <label class=\"wide\">New text <textarea name=\"text\" rows=\"3\" required>{}</textarea></label>\
         <label>Takes effect <input name=\"at\" placeholder=\"now\"></label><button type=\"submit\">Supersede</button></form></details>",
        esc(&base),
        esc(&html::title_of(r))
    );
    let _ = write!(
        h,
        "<div class=\"buttons\"><form method=\"post\" action=\"{b}/retire\">{hidden}<button type=\"submit\">Retire (end its validity now)</button></form>\
         <form method=\"post\" action=\"{b}/expire\">{hidden}<button type=\"submit\">Expire now</button></form>\
         <a class=\"danger button\" href=\"{b}/forget\">Forget (erase)…</a></div></section>",
        b = esc(&base)
    );
}

/// The fields of a posted form.
type Fields = HashMap<String, String>;

fn field<'a>(f: &'a Fields, name: &str) -> Option<&'a str> {
    f.get(name).map(|s| s.trim()).filter(|s| !s.is_empty())
}

fn tags_of(f: &Fields) -> Vec<String> {
    field(f, "tags").map_or_else(Vec::new, |t| {
        t.split(',').map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect()
    })
}

fn importance_of(f: &Fields) -> Result<Option<u8>, Problem> {
    field(f, "importance")
        .map(|i| {
            i.parse::<u8>()
                .ok()
                .filter(|i| (1..=5).contains(i))
                .ok_or_else(|| Problem::invalid("importance is 1 to 5"))
        })
        .transpose()
}

/// Check the viewer and the form's CSRF token, then run `act` (blocking) with a session in
/// `ns` of write scope; redirect (303) to where it says.
async fn posted(
    app: App,
    headers: &HeaderMap,
    ns: String,
    form: Fields,
    act: impl FnOnce(&mnemon::ops::Session, &Fields) -> Result<String, Problem> + Send + 'static,
) -> Response {
    let Some(viewer) = signed_in(&app, headers) else { return to_login() };
    if !form.get("csrf").is_some_and(|c| viewer.checks(c)) {
        return problem_page(Problem::forbidden(
            "the form is stale or came from elsewhere (CSRF check): reload the page",
        ));
    }
    let run = move || -> Result<String, Problem> {
        let (session, can_write) = viewer.session(&app, &ns, Scope::Write)?;
        if !can_write {
            return Err(Problem::forbidden("this view reads only"));
        }
        act(&session, &form)
    };
    match crate::http::app::blocking(run).await {
        Ok(Ok(to)) => secure(Redirect::to(&to).into_response()),
        Ok(Err(p)) => problem_page(p),
        Err(_) => problem_page(Problem::invalid("the change stopped unexpectedly")),
    }
}

/// `POST /ui/ns/{ns}/add`: remember an entry; then its page.
pub(super) async fn add(
    State(app): State<App>,
    headers: HeaderMap,
    Path(ns): Path<String>,
    Form(form): Form<Fields>,
) -> Response {
    let target = ns.clone();
    posted(app, &headers, ns, form, move |session, f| {
        let made = session.call(Remember {
            kind: field(f, "kind").unwrap_or("learning").to_string(),
            text: Some(
                field(f, "text").ok_or_else(|| Problem::invalid("the entry needs a text"))?.to_string(),
            ),
            tags: tags_of(f),
            importance: importance_of(f)?,
            valid_from: field(f, "valid_from").map(str::to_string),
            namespace: Some(target.clone()),
            ..Default::default()
        })?;
        Ok(ns_path(&target, &format!("/r/{}", made.id)))
    })
    .await
}

/// `POST /ui/ns/{ns}/r/{id}/forget` (from the confirmation page): erase the record.
pub(super) async fn forget(
    state: State<App>,
    headers: HeaderMap,
    Path((ns, id)): Path<(String, String)>,
    form: Form<Fields>,
) -> Response {
    act(state, headers, Path((ns, id, "forget".into())), form).await
}

/// `POST /ui/ns/{ns}/r/{id}/{action}`: revise, supersede, retire, expire or forget.
pub(super) async fn act(
    State(app): State<App>,
    headers: HeaderMap,
    Path((ns, id, action)): Path<(String, String, String)>,
    Form(form): Form<Fields>,
) -> Response {
    let target = ns.clone();
    posted(app, &headers, ns, form, move |session, f| {
        let page = |id: &str| ns_path(&target, &format!("/r/{id}"));
        let namespace = Some(target.clone());
        match action.as_str() {
            "revise" => {
                let mut patch = match field(f, "fields") {
                    Some(text) => match serde_json::from_str::<Value>(text) {
                        Ok(Value::Object(m)) => m,
                        Ok(_) => return Err(Problem::invalid("the fields must be a JSON object")),
                        Err(e) => return Err(Problem::invalid(format!("the fields are not JSON: {e}"))),
                    },
                    None => Map::new(),
                };
                patch.insert("tags".into(), Value::from(tags_of(f)));
                if let Some(i) = importance_of(f)? {
                    patch.insert("importance".into(), Value::from(i));
                }
                let written = session.call(Revise { id: id.clone(), patch, namespace })?;
                Ok(page(&written.id.to_string()))
            }
            "supersede" => {
                let done = session.call(Supersede {
                    id: id.clone(),
                    text: Some(
                        field(f, "text")
                            .ok_or_else(|| Problem::invalid("the new record needs a text"))?
                            .to_string(),
                    ),
                    at: field(f, "at").map(str::to_string),
                    namespace,
                    ..Default::default()
                })?;
                Ok(page(&done.new.to_string()))
            }
            "retire" | "expire" => {
                let written = session.call(Retire {
                    id: id.clone(),
                    at: None,
                    expire: action == "expire",
                    namespace,
                })?;
                Ok(page(&written.id.to_string()))
            }
            "forget" => {
                session.call(Forget { id: id.clone(), erase: true, namespace })?;
                Ok(ns_path(&target, ""))
            }
            other => Err(Problem::invalid(format!("no such change: {other:?}"))),
        }
    })
    .await
}
