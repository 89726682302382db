//! The web view: memory for the people who run agents, under `/ui`.
//!
//! Pages are rendered on the server, every value escaped (`html.rs`), from the operation
//! layer's answers: the namespaces with their counts, a namespace in seed 003's sections and
//! one per other kind, search with the explanation of each score, a record's revisions,
//! supersession chain and the difference between two revisions, and what changed between two
//! transaction times. Every page takes `as_of` (valid time) and `known_at` (transaction time)
//! and renders memory as of that pair; the URL holds them. Changes go through the same
//! operations as the API's (forms posted with a per-session CSRF token). A small script
//! (`assets/app.js`) keeps open pages live through the change feed and drives the time slider;
//! the pages work without it.
//!
//! Two ways in ([`UiMode`]): `mnemon serve` signs a browser in with a token (its namespaces
//! and scope apply to everything shown and done; a read token gets no write controls and its
//! writes are refused), and `mnemon ui` with a one-time secret printed in a URL, exchanged for
//! a session cookie. Cookies are `HttpOnly` and `SameSite=Strict`; the Content-Security-Policy
//! allows no inline script; the server's Host and Origin checks apply.

mod assets;
mod auth;
mod forms;
mod html;
mod pages;
pub(crate) mod state;

use state::{Access, COOKIE};
pub use state::{UiMode, new_secret};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use mnemon::ops::Session;
use serde::Deserialize;

use crate::http::app::{App, blocking};
use crate::http::problem::Problem;
use crate::tokens::Scope;

/// The session cookie's value, if the request carries one.
fn cookie_of(headers: &HeaderMap) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|c| {
        c.split(';')
            .map(str::trim)
            .find_map(|kv| kv.strip_prefix(COOKIE).and_then(|v| v.strip_prefix('=')))
            .map(str::to_string)
    })
}

/// A signed-in browser, for one request.
#[derive(Clone, Debug)]
pub(crate) struct Viewer {
    access: Access,
    /// The session's CSRF token, which every form carries.
    pub(crate) csrf: String,
}

impl Viewer {
    /// The browser's session, from its cookie.
    fn of(app: &App, headers: &HeaderMap) -> Option<Viewer> {
        let s = app.ui().get(&cookie_of(headers)?)?;
        Some(Viewer { access: s.access, csrf: s.csrf })
    }

    /// A session in namespace `ns` for an operation needing `need`, and whether this viewer
    /// may write there. Blocking: checks the token.
    pub(crate) fn session(&self, app: &App, ns: &str, need: Scope) -> Result<(Session, bool), Problem> {
        match &self.access {
            Access::Owner => {
                let s = Session::new(app.db().clone(), ns)?.allow("*");
                Ok((s, !app.db().is_read_only()))
            }
            Access::Token(t) => {
                let (s, scope) = app.authorize(Some(t), Some(ns), need)?;
                Ok((s, scope.is_none_or(|s| s >= Scope::Write)))
            }
        }
    }

    /// Which namespaces this viewer reaches: `None` for all. Blocking: checks the token.
    pub(crate) fn reach(&self, app: &App) -> Result<Option<crate::tokens::TokenInfo>, Problem> {
        match &self.access {
            Access::Owner => Ok(None),
            Access::Token(t) => Ok(Some(app.token(t, Scope::Read)?)),
        }
    }

    /// Whether a form's CSRF token is this session's (compared in constant time).
    fn checks(&self, given: &str) -> bool {
        let (a, b) = (self.csrf.as_bytes(), given.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// The two time axes a page is rendered at, from its query string.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct At {
    /// Valid time.
    #[serde(default)]
    pub(crate) as_of: Option<String>,
    /// Transaction time.
    #[serde(default)]
    pub(crate) known_at: Option<String>,
}

impl At {
    /// The pair, checked: empty values are "now".
    fn checked(mut self) -> Result<At, Problem> {
        for (name, v) in [("as_of", &mut self.as_of), ("known_at", &mut self.known_at)] {
            if v.as_deref().is_some_and(|s| s.trim().is_empty()) {
                *v = None;
            }
            if let Some(s) = v.as_deref() {
                mnemon::Timestamp::parse(s).map_err(|e| Problem::invalid(format!("`{name}`: {e}")))?;
            }
        }
        Ok(self)
    }

    /// Whether the page shows memory as it is now (and so follows changes live).
    pub(crate) fn is_now(&self) -> bool {
        self.as_of.is_none() && self.known_at.is_none()
    }

    /// The query string that keeps this pair (`as_of=...&known_at=...`, empty for now).
    pub(crate) fn query(&self) -> String {
        let mut parts = Vec::new();
        if let Some(v) = &self.as_of {
            parts.push(format!("as_of={}", html::url(v)));
        }
        if let Some(k) = &self.known_at {
            parts.push(format!("known_at={}", html::url(k)));
        }
        parts.join("&")
    }
}

/// The view's routes, under `/ui`.
pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/ui", get(|| async { Redirect::to("/ui/") }))
        .route("/ui/", get(pages::index))
        .route("/ui/login", get(auth::login_page).post(auth::login))
        .route("/ui/logout", post(auth::logout))
        .route("/ui/assets/{name}", get(assets::serve))
        .route("/ui/events", get(live))
        .route("/ui/ns/{ns}", get(pages::namespace))
        .route("/ui/ns/{ns}/search", get(pages::search))
        .route("/ui/ns/{ns}/changes", get(pages::changes))
        .route("/ui/ns/{ns}/add", post(forms::add))
        .route("/ui/ns/{ns}/r/{id}", get(pages::record))
        .route("/ui/ns/{ns}/r/{id}/forget", get(pages::forget_confirm).post(forms::forget))
        .route("/ui/ns/{ns}/r/{id}/{action}", post(forms::act))
}

/// What every page's response carries: no caching, the Content-Security-Policy (no inline
/// script, nothing from elsewhere), no framing, no sniffing, no referrer to other sites (`same-origin`: with `no-referrer` browsers send `Origin: null` on form posts, which the Origin check refuses).
pub(crate) fn secure(mut response: Response) -> Response {
    let h = response.headers_mut();
    let set = |h: &mut HeaderMap, k: &'static str, v: &'static str| {
        h.insert(k, HeaderValue::from_static(v));
    };
    set(
        h,
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    set(h, "x-content-type-options", "nosniff");
    set(h, "x-frame-options", "DENY");
    set(h, "referrer-policy", "same-origin");
    if !h.contains_key(header::CACHE_CONTROL) {
        set(h, "cache-control", "no-store");
    }
    response
}

/// The signed-in viewer of a request, if it is signed in (else see [`to_login`]).
pub(crate) fn signed_in(app: &App, headers: &HeaderMap) -> Option<Viewer> {
    Viewer::of(app, headers)
}

/// The answer that sends the browser to sign in.
pub(crate) fn to_login() -> Response {
    secure(Redirect::to("/ui/login").into_response())
}

/// A problem as a page (its status, its detail escaped).
pub(crate) fn problem_page(p: Problem) -> Response {
    let status = p.status;
    let body = html::page(
        &html::Chrome { title: "Error".into(), ..Default::default() },
        &format!(
            "<section class=\"problem\"><h1>{}</h1><p>{}</p><p><a href=\"/ui/\">Back to the namespaces</a></p></section>",
            html::esc(status.canonical_reason().unwrap_or("Error")),
            html::esc(&p.detail)
        ),
    );
    secure((status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response())
}

/// A rendered page.
pub(crate) fn page_response(body: String) -> Response {
    secure(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response())
}

/// Run `f` on the blocking pool: its page, or its problem as a page.
pub(crate) async fn render(f: impl FnOnce() -> Result<String, Problem> + Send + 'static) -> Response {
    match blocking(f).await {
        Ok(Ok(body)) => page_response(body),
        Ok(Err(p)) => problem_page(p),
        Err(_) => problem_page(Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unavailable",
            "the page stopped unexpectedly",
        )),
    }
}

#[derive(Deserialize)]
struct LiveQuery {
    #[serde(default)]
    ns: Option<String>,
}

/// `GET /ui/events?ns=NS`: the change feed of a namespace (or of every namespace the viewer
/// reaches, without `ns`) as Server-Sent Events, for open pages to follow.
async fn live(State(app): State<App>, headers: HeaderMap, Query(q): Query<LiveQuery>) -> Response {
    let Some(viewer) = signed_in(&app, &headers) else { return to_login() };
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let open = move || -> Result<mnemon::feed::Watch, Problem> {
        let since = last.as_deref().map(str::parse::<mnemon::feed::Cursor>).transpose()?;
        let filter = match (&q.ns, viewer.reach(&app)?) {
            (Some(ns), _) => {
                viewer.session(&app, ns, Scope::Read)?;
                mnemon::feed::ChangeFilter::namespace(ns.clone())
            }
            (None, None) => mnemon::feed::ChangeFilter::default(),
            (None, Some(info)) => {
                mnemon::feed::ChangeFilter { namespaces: info.namespaces, ..Default::default() }
            }
        };
        Ok(app.db().watch(filter, since)?)
    };
    match blocking(open).await {
        Ok(Ok(watch)) => crate::http::events::stream_of(watch),
        Ok(Err(p)) => p.into_response(),
        Err(_) => Problem::invalid("the request stopped unexpectedly").into_response(),
    }
}

/// The path of namespace `ns`'s page (`/ui/ns/NS`), with `rest` after it.
pub(crate) fn ns_path(ns: &str, rest: &str) -> String {
    format!("/ui/ns/{}{rest}", html::url(ns))
}
