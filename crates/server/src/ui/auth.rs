//! Signing in and out: a token (`mnemon serve`) or the one-time secret of `mnemon ui`'s URL,
//! exchanged for a session cookie (`HttpOnly`, `SameSite=Strict`, path `/ui`).

use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::html::{self, Chrome};
use super::{Access, COOKIE, UiMode, Viewer, page_response, problem_page, secure};
use crate::http::app::App;
use crate::http::problem::Problem;
use crate::tokens::Scope;

#[derive(Deserialize, Default)]
pub(super) struct LoginQuery {
    #[serde(default)]
    secret: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct LoginForm {
    #[serde(default)]
    token: String,
}

/// The answer that signs the browser in as `access`: its cookie, and on to the namespaces.
fn signed_in_as(app: &App, access: Access) -> Response {
    let id = app.ui().open(access);
    let mut r = Redirect::to("/ui/").into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("{COOKIE}={id}; Path=/ui; HttpOnly; SameSite=Strict")) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    secure(r)
}

fn login_form(note: &str) -> Response {
    let main = format!(
        "<section class=\"login\"><h1>Sign in</h1>{}<form method=\"post\" action=\"/ui/login\">\
         <label>Token <input type=\"password\" name=\"token\" autocomplete=\"off\" required autofocus></label> \
         <button type=\"submit\">Sign in</button></form>\
         <p class=\"muted\">A token from <code>mnemon token create</code>: the view shows and changes only what it reaches, as its scope allows.</p></section>",
        note
    );
    page_response(html::page(&Chrome { title: "Sign in".into(), ..Default::default() }, &main))
}

/// `GET /ui/login`: with `mnemon ui`, the one-time link's secret signs the browser in; with
/// `mnemon serve`, a form asks for a token.
pub(super) async fn login_page(State(app): State<App>, Query(q): Query<LoginQuery>) -> Response {
    match (&app.ui().mode, q.secret) {
        (UiMode::Owner { .. }, Some(given)) => {
            let mut secret = app.ui().secret.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let matches = secret.as_deref().is_some_and(|s| {
                s.len() == given.len() && s.bytes().zip(given.bytes()).fold(0u8, |a, (x, y)| a | (x ^ y)) == 0
            });
            if matches {
                *secret = None;
                drop(secret);
                return signed_in_as(&app, Access::Owner);
            }
            problem_page(Problem::forbidden(
                "this sign-in link was used already or is not the one `mnemon ui` printed: start `mnemon ui` again for a new one",
            ))
        }
        (UiMode::Owner { .. }, None) => {
            problem_page(Problem::forbidden("open the sign-in link that `mnemon ui` printed when it started"))
        }
        (UiMode::Tokens, _) => login_form(""),
    }
}

/// `POST /ui/login`: a token, checked, signs the browser in.
pub(super) async fn login(State(app): State<App>, Form(form): Form<LoginForm>) -> Response {
    if !matches!(app.ui().mode, UiMode::Tokens) {
        return problem_page(Problem::forbidden("open the sign-in link that `mnemon ui` printed"));
    }
    let token = form.token.trim().to_string();
    let check = {
        let app = app.clone();
        let token = token.clone();
        move || app.token(&token, Scope::Read).map(|_| ())
    };
    match crate::http::app::blocking(check).await {
        Ok(Ok(())) => signed_in_as(&app, Access::Token(token)),
        Ok(Err(p)) if p.status.as_u16() == 401 => login_form(
            "<p class=\"problem\" role=\"alert\">That token is not valid (or was revoked, or expired).</p>",
        ),
        Ok(Err(p)) => problem_page(p),
        Err(_) => problem_page(Problem::invalid("the sign-in stopped unexpectedly")),
    }
}

/// `POST /ui/logout`: the session ends.
pub(super) async fn logout(
    State(app): State<App>,
    headers: HeaderMap,
    Form(form): Form<std::collections::HashMap<String, String>>,
) -> Response {
    if let Some(viewer) = Viewer::of(&app, &headers)
        && form.get("csrf").is_some_and(|c| viewer.checks(c))
        && let Some(id) = super::cookie_of(&headers)
    {
        app.ui().close(&id);
    }
    let mut r = Redirect::to("/ui/login").into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("mnemon_ui=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    secure(r)
}
