//! The OpenAPI 3.1 document of the API, generated from the operations' request and response
//! types (their JSON Schemas, 2020-12, which OpenAPI 3.1 takes as they are): served at
//! `/openapi.json`, with a copy in docs/openapi.json that a test keeps equal to it.

use serde_json::{Map, Value, json};

use super::routes::{self, ROUTES};
use mnemon::ops::{Catalog, Entry};

/// The document.
pub fn document(catalog: &Catalog) -> Value {
    let mut schemas = Map::new();
    schemas.insert("Problem".into(), problem_schema());
    let mut paths = Map::new();
    let ns_param = json!({"name": "ns", "in": "path", "required": true, "description": "The namespace the operation runs in (percent-encoded).", "schema": {"type": "string"}});
    let id_param = json!({"name": "id", "in": "path", "required": true, "description": "The record: its id, or a unique start or end of it (6 hex digits or more).", "schema": {"type": "string"}});
    let mut used_ids = std::collections::HashSet::new();
    for e in catalog.entries() {
        let (request, response) = add_schemas(&mut schemas, e);
        // Every operation by name.
        let op = json!({
            "operationId": e.name,
            "summary": e.title,
            "description": format!("{}\n\nScope: {}.", e.description, crate::tokens::Scope::needed_for(e).as_str()),
            "parameters": [ns_param],
            "requestBody": {"required": false, "content": {"application/json": {"schema": request}}},
            "responses": responses(&response),
        });
        used_ids.insert(e.name.to_string());
        paths.insert(format!("/v1/ns/{{ns}}/ops/{}", e.name), json!({ "post": op }));
    }
    for r in ROUTES {
        let Some(e) = catalog.get(r.op) else { continue };
        let method = r.method.as_str().to_ascii_lowercase();
        let mut id = format!("{}_{}", r.op, method);
        while !used_ids.insert(id.clone()) {
            id.push('_');
        }
        let mut params = vec![ns_param.clone()];
        if r.path.contains("{id}") {
            params.push(id_param.clone());
        }
        let mut op = json!({
            "operationId": id,
            "summary": e.title,
            "description": format!("{}\n\nScope: {}.", e.description, crate::tokens::Scope::needed_for(e).as_str()),
            "responses": responses(&json!({"$ref": format!("#/components/schemas/{}", response_name(e))})),
        });
        let request_ref = json!({"$ref": format!("#/components/schemas/{}", request_name(e))});
        if routes::takes_query(&r.method) {
            params.extend(query_params(&schemas, e, r.path));
        } else {
            op["requestBody"] =
                json!({"required": false, "content": {"application/json": {"schema": request_ref}}});
        }
        op["parameters"] = Value::Array(params);
        let entry = paths.entry(r.path.to_string()).or_insert_with(|| json!({}));
        entry[method.as_str()] = op;
    }
    transfer_paths(&mut paths, &ns_param);
    plain_paths(&mut paths);
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mnemon",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A bitemporal memory database for AI agents, served over HTTP (`mnemon serve`). Every request but the health checks and this document carries `Authorization: Bearer <token>`; a token reaches some namespaces with a scope (read, write, admin). Errors are problem documents (RFC 9457) with a stable `code`.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "A token from `mnemon token create`."}},
        },
    })
}

fn request_name(e: &Entry) -> String {
    format!("{}_request", e.name)
}

fn response_name(e: &Entry) -> String {
    format!("{}_response", e.name)
}

/// Put operation `e`'s request and response schemas (and the definitions they use) in
/// `schemas`; their references.
fn add_schemas(schemas: &mut Map<String, Value>, e: &Entry) -> (Value, Value) {
    let mut out = Vec::new();
    for (name, schema) in
        [(request_name(e), e.input_schema().to_value()), (response_name(e), e.output_schema().to_value())]
    {
        let mut schema = schema;
        if let Value::Object(o) = &mut schema {
            o.remove("$schema");
            if let Some(Value::Object(defs)) = o.remove("$defs") {
                for (k, mut v) in defs {
                    rewrite_refs(&mut v);
                    // The same type is the same schema wherever it is used; a name given to two
                    // different schemas keeps the first (the test of the document checks).
                    schemas.entry(k).or_insert(v);
                }
            }
        }
        rewrite_refs(&mut schema);
        schemas.insert(name.clone(), schema);
        out.push(json!({"$ref": format!("#/components/schemas/{name}")}));
    }
    let response = out.pop().unwrap_or(Value::Null);
    let request = out.pop().unwrap_or(Value::Null);
    (request, response)
}

/// `#/$defs/X` references as `#/components/schemas/X`.
fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                match v {
                    Value::String(s) if k == "$ref" => {
                        if let Some(name) = s.strip_prefix("#/$defs/") {
                            *s = format!("#/components/schemas/{name}");
                        }
                    }
                    _ => rewrite_refs(v),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// The query parameters of a `GET` or `DELETE` route: the request's fields the path does not
/// give.
fn query_params(schemas: &Map<String, Value>, e: &Entry, path: &str) -> Vec<Value> {
    let Some(request) = schemas.get(&request_name(e)) else { return Vec::new() };
    let required: Vec<&str> = request
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (name, schema) in request.get("properties").and_then(Value::as_object).into_iter().flatten() {
        if (name == "id" && path.contains("{id}")) || name == "namespace" {
            continue;
        }
        let mut p = json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": schema});
        if let Some(d) = schema.get("description") {
            p["description"] = d.clone();
        }
        if schema.get("type").is_some_and(|t| t == "array") {
            p["explode"] = json!(true);
            p["style"] = json!("form");
        }
        out.push(p);
    }
    out
}

fn responses(ok: &Value) -> Value {
    json!({
        "200": {"description": "The operation's answer.", "content": {"application/json": {"schema": ok}}},
        "default": {"description": "A problem: 400 invalid_input, 401 unauthorized, 403 forbidden, 404 not_found, 409 conflict, 413 too_large, 503 overloaded or unavailable, 500 damaged.",
                    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
    })
}

fn problem_schema() -> Value {
    json!({
        "type": "object",
        "description": "An error (RFC 9457).",
        "required": ["type", "title", "status", "code", "detail"],
        "properties": {
            "type": {"type": "string", "description": "urn:mnemon:problem:<code>"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "code": {"type": "string", "description": "Stable: invalid_input, not_found, forbidden, conflict, damaged, unavailable (the operation layer's); unauthorized, too_large, timeout, overloaded, no_route, method_not_allowed, host_not_allowed, origin_not_allowed (the server's)."},
            "detail": {"type": "string"},
        },
    })
}

fn transfer_paths(paths: &mut Map<String, Value>, ns_param: &Value) {
    paths.insert("/v1/ns/{ns}/export".into(), json!({"get": {
        "operationId": "export",
        "summary": "Export a namespace",
        "description": "Every revision of the namespace's records as JSON lines, streamed. Scope: read.",
        "parameters": [ns_param],
        "responses": {"200": {"description": "JSON lines.", "content": {"application/jsonl": {"schema": {"type": "string"}}}},
                      "default": {"description": "A problem.", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}},
    }}));
    paths.insert("/v1/ns/{ns}/events".into(), json!({"get": {
        "operationId": "events",
        "summary": "The namespace's change feed",
        "description": "Committed changes as Server-Sent Events, from now on (or after `since`, or the `Last-Event-ID` header: a change's cursor or a time), oldest first. Each event is named `change`; its data is the change as JSON (namespace, id, kind, op, rev, tx, cursor) and its id the cursor to resume after it. `kind` and `tag` filter (repeated or comma-separated). Scope: read.",
        "parameters": [ns_param,
            {"name": "kind", "in": "query", "required": false, "schema": {"type": "string"}, "description": "Only these kinds (comma-separated)."},
            {"name": "tag", "in": "query", "required": false, "schema": {"type": "string"}, "description": "Only revisions carrying one of these tags (comma-separated)."},
            {"name": "since", "in": "query", "required": false, "schema": {"type": "string"}, "description": "Start after this cursor or time."},
            {"name": "Last-Event-ID", "in": "header", "required": false, "schema": {"type": "string"}, "description": "Resume after this change (overrides `since`)."}],
        "responses": {"200": {"description": "An event stream.", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                      "default": {"description": "A problem.", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}},
    }}));
    paths.insert("/v1/export".into(), json!({"get": {
        "operationId": "export_all",
        "summary": "Export every namespace",
        "description": "Every revision of every namespace's records as JSON lines, streamed. Needs a token for every namespace (`*`); scope: read.",
        "responses": {"200": {"description": "JSON lines.", "content": {"application/jsonl": {"schema": {"type": "string"}}}},
                      "default": {"description": "A problem.", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}},
    }}));
    paths.insert("/v1/ns/{ns}/import".into(), json!({"post": {
        "operationId": "import",
        "summary": "Import JSON lines",
        "description": "Import mnemon's export lines or loose records (`{\"kind\": ..., \"text\": ...}`) into the namespace: every line or, if one fails, none (unless `partial`). Scope: write.",
        "parameters": [ns_param, {"name": "partial", "in": "query", "required": false, "schema": {"type": "boolean"}, "description": "Import the lines that can be, reporting the others."}],
        "requestBody": {"required": true, "content": {"application/jsonl": {"schema": {"type": "string"}}}},
        "responses": {"200": {"description": "What was imported.", "content": {"application/json": {"schema": {"type": "object"}}}},
                      "default": {"description": "A problem.", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}},
    }}));
}

fn plain_paths(paths: &mut Map<String, Value>) {
    let text = |id: &str, summary: &str| {
        json!({"get": {"operationId": id, "summary": summary, "security": [],
        "responses": {"200": {"description": "Yes.", "content": {"text/plain": {"schema": {"type": "string"}}}},
                      "503": {"description": "No.", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}}}})
    };
    paths.insert("/healthz".into(), text("healthz", "Whether the server runs"));
    paths.insert("/readyz".into(), text("readyz", "Whether the database can be used"));
    paths.insert("/v1/operations".into(), json!({"get": {"operationId": "operations", "summary": "The operations, with the scope each needs", "security": [],
        "responses": {"200": {"description": "The operations.", "content": {"application/json": {"schema": {"type": "object"}}}}}}}));
    paths.insert("/metrics".into(), json!({"get": {"operationId": "metrics", "summary": "Requests by route and status, latency histograms, the operation queue (Prometheus text format)", "security": [],
        "responses": {"200": {"description": "Prometheus text exposition 0.0.4.", "content": {"text/plain": {"schema": {"type": "string"}}}}}}}));
    paths.insert("/openapi.json".into(), json!({"get": {"operationId": "openapi", "summary": "This document", "security": [],
        "responses": {"200": {"description": "OpenAPI 3.1.", "content": {"application/json": {"schema": {"type": "object"}}}}}}}));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reference names a schema of the document, and a name the operations share is
    /// one schema (a type name two types use would make the second point at the first).
    #[test]
    fn references_resolve_and_shared_names_agree() {
        let catalog = Catalog::new();
        let doc = document(&catalog);
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
            match v {
                Value::Object(o) => {
                    for (k, v) in o {
                        match v {
                            Value::String(s) if k == "$ref" => out.push(s),
                            _ => refs(v, out),
                        }
                    }
                }
                Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
                _ => {}
            }
        }
        let mut all = Vec::new();
        refs(&doc, &mut all);
        assert!(all.len() > 100);
        for r in all {
            let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("{r}"));
            assert!(schemas.contains_key(name), "{r} names no schema");
        }
        let mut seen: std::collections::HashMap<String, Value> = Default::default();
        for e in catalog.entries() {
            for s in [e.input_schema().to_value(), e.output_schema().to_value()] {
                for (k, mut v) in s.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default() {
                    rewrite_refs(&mut v);
                    if let Some(before) = seen.insert(k.clone(), v.clone()) {
                        assert_eq!(before, v, "two types named {k}");
                    }
                }
            }
        }
    }

    /// docs/openapi.json is the document this build serves (`MNEMON_UPDATE_OPENAPI=1 cargo
    /// test -p mnemon-server openapi` writes it again).
    #[test]
    fn the_checked_in_openapi_document_is_current() {
        let doc = serde_json::to_string_pretty(&document(&Catalog::new())).unwrap() + "\n";
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
        if std::env::var_os("MNEMON_UPDATE_OPENAPI").is_some() {
            std::fs::write(&path, &doc).unwrap();
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == doc,
            "docs/openapi.json differs from the API; write it again with MNEMON_UPDATE_OPENAPI=1 cargo test -p mnemon-server openapi"
        );
    }
}
