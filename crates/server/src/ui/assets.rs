//! The view's script and style sheet, embedded in the binary (nothing is fetched at run time,
//! no build step): served with their content type and a long cache lifetime, named by path.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The script: the time slider and live updates (no library).
const APP_JS: &str = include_str!("assets/app.js");
/// The style sheet.
const APP_CSS: &str = include_str!("assets/app.css");

/// `GET /ui/assets/{name}`.
pub(super) async fn serve(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        "app.css" => (APP_CSS, "text/css; charset=utf-8"),
        _ => return super::secure((StatusCode::NOT_FOUND, "no such asset").into_response()),
    };
    let mut r = ([(header::CONTENT_TYPE, kind)], body).into_response();
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    super::secure(r)
}
