//! An operation's request from a URL's query string: each parameter typed by the request's
//! JSON Schema (a number, a boolean, a list from repeated parameters, else a string), so
//! `GET /v1/ns/a/records?kinds=decision&kinds=task&limit=20` reads as the `list` request
//! `{"kinds": ["decision", "task"], "limit": 20}`. Parameters the request does not have are
//! passed on as strings, for the operation to refuse by name.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// How a request's field is written in a query string.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Text,
    Integer,
    Number,
    Boolean,
    List(Item),
}

/// The items of a list field.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Item {
    Text,
    Integer,
}

/// The query shapes of one operation's request fields.
#[derive(Clone, Debug, Default)]
pub struct QueryShapes(HashMap<String, Shape>);

impl QueryShapes {
    /// The shapes of the fields of request schema `schema`.
    pub fn of(schema: &Value) -> QueryShapes {
        let mut out = HashMap::new();
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, prop) in props {
                out.insert(name.clone(), shape(prop));
            }
        }
        QueryShapes(out)
    }

    /// The request of query parameters `pairs` (in order; a list field's repeat), or what is
    /// wrong with one.
    pub fn read(&self, pairs: &[(String, String)]) -> Result<Map<String, Value>, String> {
        let mut out = Map::new();
        for (k, v) in pairs {
            let shape = self.0.get(k).copied().unwrap_or(Shape::Text);
            let value = match shape {
                Shape::Text => Value::String(v.clone()),
                Shape::Integer => integer(k, v)?,
                Shape::Number => {
                    let n: f64 = v.parse().map_err(|_| format!("`{k}` must be a number, not {v:?}"))?;
                    serde_json::Number::from_f64(n)
                        .map(Value::Number)
                        .ok_or_else(|| format!("`{k}` must be finite"))?
                }
                Shape::Boolean => match v.as_str() {
                    "" | "true" | "1" => Value::Bool(true),
                    "false" | "0" => Value::Bool(false),
                    _ => return Err(format!("`{k}` must be true or false, not {v:?}")),
                },
                Shape::List(item) => {
                    let item = match item {
                        Item::Text => Value::String(v.clone()),
                        Item::Integer => integer(k, v)?,
                    };
                    match out.entry(k.clone()).or_insert_with(|| Value::Array(Vec::new())) {
                        Value::Array(a) => a.push(item),
                        _ => return Err(format!("`{k}` given twice")),
                    }
                    continue;
                }
            };
            if out.insert(k.clone(), value).is_some() {
                return Err(format!("`{k}` given twice"));
            }
        }
        Ok(out)
    }
}

fn integer(k: &str, v: &str) -> Result<Value, String> {
    v.parse::<i64>().map(Value::from).map_err(|_| format!("`{k}` must be a whole number, not {v:?}"))
}

/// The types a property schema allows (`type`, or the types of its `anyOf`/`oneOf` arms).
fn types(prop: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    match prop.get("type") {
        Some(Value::String(t)) => out.push(t.as_str()),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for arms in ["anyOf", "oneOf"] {
        for arm in prop.get(arms).and_then(Value::as_array).into_iter().flatten() {
            out.extend(types(arm));
        }
    }
    out
}

fn shape(prop: &Value) -> Shape {
    let t = types(prop);
    if t.contains(&"array") {
        let items = prop.get("items").map(types).unwrap_or_default();
        return Shape::List(if items.contains(&"integer") { Item::Integer } else { Item::Text });
    }
    if t.contains(&"integer") {
        Shape::Integer
    } else if t.contains(&"number") {
        Shape::Number
    } else if t.contains(&"boolean") {
        Shape::Boolean
    } else {
        Shape::Text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn query_parameters_take_their_fields_types() {
        let schema = json!({"type": "object", "properties": {
            "kinds": {"type": "array", "items": {"type": "string"}},
            "limit": {"type": ["integer", "null"], "minimum": 0},
            "min_score": {"type": ["number", "null"]},
            "explain": {"type": "boolean"},
            "mode": {"anyOf": [{"$ref": "#/$defs/TextMode"}, {"type": "null"}]},
            "as_of": {"type": ["string", "null"]}
        }});
        let shapes = QueryShapes::of(&schema);
        let got = shapes
            .read(&pairs(&[
                ("kinds", "task"),
                ("limit", "20"),
                ("kinds", "decision"),
                ("min_score", "0.5"),
                ("explain", ""),
                ("mode", "lexical"),
                ("as_of", "2025-01-01"),
                ("other", "7"),
            ]))
            .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"kinds": ["task", "decision"], "limit": 20, "min_score": 0.5, "explain": true,
                   "mode": "lexical", "as_of": "2025-01-01", "other": "7"})
        );
        for bad in [
            &[("limit", "x")][..],
            &[("explain", "maybe")],
            &[("limit", "1"), ("limit", "2")],
            &[("min_score", "nan")],
        ] {
            assert!(shapes.read(&pairs(bad)).is_err(), "{bad:?}");
        }
    }
}
