//! The REST routes: each a method and a path over one operation of the catalog. Path
//! parameters fill the request's fields (`{id}` its `id`); `{ns}` names the namespace the
//! operation runs in. A `GET` or `DELETE` takes the rest of the request from the query
//! string, typed by the request's schema ([`super::args`]); a `POST` or `PATCH` from its JSON
//! body. Every operation, these included, is also `POST /v1/ns/{ns}/ops/{name}` with the
//! request as the body, and `POST /v1/ops/{name}` with the namespace named by the
//! `Mnemon-Namespace` header, the `ns` query parameter, or the token when it names one.

use axum::http::Method;

/// A route: its method, its path, and the operation it runs.
#[derive(Clone, Debug)]
pub struct Route {
    /// The HTTP method.
    pub method: Method,
    /// The path (axum's `{name}` parameters).
    pub path: &'static str,
    /// The operation's name.
    pub op: &'static str,
}

const fn route(method: Method, path: &'static str, op: &'static str) -> Route {
    Route { method, path, op }
}

/// The resource routes, in the order the API documents them.
pub const ROUTES: &[Route] = &[
    route(Method::POST, "/v1/ns/{ns}/records", "add"),
    route(Method::GET, "/v1/ns/{ns}/records", "list"),
    route(Method::GET, "/v1/ns/{ns}/records/{id}", "get"),
    route(Method::PATCH, "/v1/ns/{ns}/records/{id}", "revise"),
    route(Method::DELETE, "/v1/ns/{ns}/records/{id}", "forget"),
    route(Method::POST, "/v1/ns/{ns}/records/{id}/supersede", "supersede"),
    route(Method::POST, "/v1/ns/{ns}/records/{id}/retire", "retire"),
    route(Method::GET, "/v1/ns/{ns}/records/{id}/history", "history"),
    route(Method::GET, "/v1/ns/{ns}/records/{id}/chain", "chain"),
    route(Method::POST, "/v1/ns/{ns}/memories", "remember"),
    route(Method::GET, "/v1/ns/{ns}/search", "recall"),
    route(Method::POST, "/v1/ns/{ns}/search", "recall"),
    route(Method::GET, "/v1/ns/{ns}/context", "context"),
    route(Method::POST, "/v1/ns/{ns}/context", "context"),
    route(Method::GET, "/v1/ns/{ns}/stats", "stats"),
    route(Method::POST, "/v1/ns/{ns}/batch", "batch"),
];

/// Whether a route of `method` reads its request from the query string.
pub fn takes_query(method: &Method) -> bool {
    method == Method::GET || method == Method::DELETE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_runs_an_operation_and_no_two_share_a_method_and_path() {
        let catalog = mnemon::ops::Catalog::new();
        let mut seen = std::collections::HashSet::new();
        for r in ROUTES {
            let entry = catalog.get(r.op).unwrap_or_else(|| panic!("{} runs no operation", r.op));
            assert!(seen.insert((r.method.clone(), r.path)), "{} {} twice", r.method, r.path);
            // A route that only reads is a GET (or a POST twin of one); a GET never writes.
            if r.method == Method::GET {
                assert!(entry.read_only, "GET {} runs {}, which writes", r.path, r.op);
            }
        }
    }
}
