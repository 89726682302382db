//! `where`: one filter language over records' metadata and envelope, as Chroma's `where` and
//! mem0's `filters` write it, evaluated by the engine for listing and search on every
//! interface.
//!
//! A filter is a JSON object. Each key names a field and holds a value (equality) or an object
//! of operators; several keys must all hold. `$and`, `$or` (lists of filters) and `$not` (a
//! filter) combine filters.
//!
//! * Fields: `kind`, `tags`, `importance`, `confidence`, `agent` (or `source`), `task`, `key`,
//!   `valid_from`, `valid_until`, `expires_at`, `recorded_at`; `metadata.a.b` is a path into a
//!   record's metadata, and any other name is a metadata key (`{"user_id": "42"}`, as Chroma
//!   and mem0 write it).
//! * Operators: `$eq`, `$ne`, `$in`, `$nin` (lists), `$gt`, `$gte`, `$lt`, `$lte` (numbers, or
//!   times: RFC 3339 or a date), `$exists` (true or false).
//! * A field holding a list (tags, a metadata array) equals a value when it contains it.
//!
//! ```
//! use mnemon::filter::Where;
//! use serde_json::json;
//!
//! let w = Where::parse(&json!({"user_id": "42", "importance": {"$gte": 3},
//!                               "$or": [{"tags": "pii"}, {"metadata.score": {"$gt": 0.5}}]}))?;
//! assert_ne!(w, Where::parse(&json!({"user_id": "42"}))?);
//! let bad = Where::parse(&json!({"importance": {"$gt": "high"}})).unwrap_err();
//! assert!(bad.to_string().contains("where.importance.$gt"));
//! # Ok::<(), mnemon::Error>(())
//! ```

use serde_json::Value;

use crate::error::{Result, invalid};
use crate::{Record, Timestamp};

/// A parsed filter.
#[derive(Clone, Debug, PartialEq)]
pub struct Where(Node);

#[derive(Clone, Debug, PartialEq)]
enum Node {
    All(Vec<Node>),
    Any(Vec<Node>),
    Not(Box<Node>),
    Test { field: Field, test: Test },
}

#[derive(Clone, Debug, PartialEq)]
enum Field {
    Kind,
    Tags,
    Importance,
    Confidence,
    Source,
    Task,
    Key,
    Time(TimeField),
    Meta(Vec<String>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum TimeField {
    ValidFrom,
    ValidUntil,
    ExpiresAt,
    RecordedAt,
}

#[derive(Clone, Debug, PartialEq)]
enum Test {
    Eq(Value),
    Ne(Value),
    In(Vec<Value>),
    Nin(Vec<Value>),
    Cmp(Order, Bound),
    Exists(bool),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Order {
    Gt,
    Gte,
    Lt,
    Lte,
}

/// The other side of a comparison.
#[derive(Clone, Debug, PartialEq)]
enum Bound {
    Number(f64),
    Time(Timestamp),
}

/// Most conditions one filter may hold.
const MAX_NODES: usize = 1_000;

impl Where {
    /// Read a filter; a bad one is an input error naming the part (`where.$and[1].importance.$gt`).
    pub fn parse(value: &Value) -> Result<Where> {
        let mut count = 0;
        Ok(Where(object(value, "where", &mut count)?))
    }

    /// Read `value` if there is one, as the engine's test for a [`crate::ListQuery`]: every
    /// access path then applies it where it reads records (listings, the lexical search, the
    /// filtered vector search), so that a filtered search finds as many as pass.
    pub fn test(value: Option<&Value>) -> Result<Option<std::sync::Arc<dyn mnemon_storage::RecordTest>>> {
        Ok(match value {
            Some(v) => Some(std::sync::Arc::new(Where::parse(v)?)),
            None => None,
        })
    }

    /// Whether `record` passes.
    pub fn matches(&self, record: &Record) -> bool {
        let meta = record.envelope.metadata.value();
        eval(&self.0, record, &meta)
    }
}

impl mnemon_storage::RecordTest for Where {
    fn keeps(&self, record: &Record) -> bool {
        self.matches(record)
    }
}

fn object(value: &Value, at: &str, count: &mut usize) -> Result<Node> {
    let Some(map) = value.as_object() else {
        return Err(invalid(format!("`{at}` must be an object of fields and operators")));
    };
    let mut all = Vec::with_capacity(map.len());
    for (key, v) in map {
        *count += 1;
        if *count > MAX_NODES {
            return Err(invalid(format!("`where` holds more than {MAX_NODES} conditions")));
        }
        let here = format!("{at}.{key}");
        all.push(match key.as_str() {
            "$and" | "$or" => {
                let Some(list) = v.as_array().filter(|l| !l.is_empty()) else {
                    return Err(invalid(format!("`{here}` must be a non-empty list of filters")));
                };
                let nodes = list
                    .iter()
                    .enumerate()
                    .map(|(i, f)| object(f, &format!("{here}[{i}]"), count))
                    .collect::<Result<Vec<_>>>()?;
                if key == "$and" { Node::All(nodes) } else { Node::Any(nodes) }
            }
            "$not" => Node::Not(Box::new(object(v, &here, count)?)),
            k if k.starts_with('$') => {
                return Err(invalid(format!("`{here}`: unknown operator (use $and, $or, $not or a field)")));
            }
            k => field_tests(field(k, &here)?, v, &here)?,
        });
    }
    Ok(if all.len() == 1 { all.remove(0) } else { Node::All(all) })
}

fn field(name: &str, at: &str) -> Result<Field> {
    Ok(match name {
        "kind" => Field::Kind,
        "tags" | "tag" => Field::Tags,
        "importance" => Field::Importance,
        "confidence" => Field::Confidence,
        "agent" | "source" => Field::Source,
        "task" => Field::Task,
        "key" => Field::Key,
        "valid_from" => Field::Time(TimeField::ValidFrom),
        "valid_until" => Field::Time(TimeField::ValidUntil),
        "expires_at" => Field::Time(TimeField::ExpiresAt),
        "recorded_at" => Field::Time(TimeField::RecordedAt),
        "metadata" => return Err(invalid(format!("`{at}`: name a metadata field (metadata.NAME)"))),
        other => {
            let path = other.strip_prefix("metadata.").unwrap_or(other);
            if path.split('.').any(str::is_empty) {
                return Err(invalid(format!("`{at}`: an empty part in the field's path")));
            }
            Field::Meta(path.split('.').map(str::to_string).collect())
        }
    })
}

fn field_tests(field: Field, v: &Value, at: &str) -> Result<Node> {
    let ops = match v.as_object() {
        Some(map) if map.keys().any(|k| k.starts_with('$')) => map,
        // A plain value (or an object without operators: equal to it).
        _ => return Ok(Node::Test { field, test: Test::Eq(v.clone()) }),
    };
    let mut tests = Vec::with_capacity(ops.len());
    for (op, arg) in ops {
        let here = format!("{at}.{op}");
        let list = |arg: &Value| -> Result<Vec<Value>> {
            arg.as_array().cloned().ok_or_else(|| invalid(format!("`{here}` takes a list of values")))
        };
        let test = match op.as_str() {
            "$eq" => Test::Eq(arg.clone()),
            "$ne" => Test::Ne(arg.clone()),
            "$in" => Test::In(list(arg)?),
            "$nin" => Test::Nin(list(arg)?),
            "$gt" | "$gte" | "$lt" | "$lte" => {
                let ord = match op.as_str() {
                    "$gt" => Order::Gt,
                    "$gte" => Order::Gte,
                    "$lt" => Order::Lt,
                    _ => Order::Lte,
                };
                Test::Cmp(ord, bound(arg, &here)?)
            }
            "$exists" => {
                Test::Exists(arg.as_bool().ok_or_else(|| invalid(format!("`{here}` takes true or false")))?)
            }
            _ => {
                return Err(invalid(format!(
                    "`{here}`: unknown operator (use $eq, $ne, $in, $nin, $gt, $gte, $lt, $lte or $exists)"
                )));
            }
        };
        tests.push(Node::Test { field: field.clone(), test });
    }
    Ok(if tests.len() == 1 { tests.remove(0) } else { Node::All(tests) })
}

fn bound(arg: &Value, at: &str) -> Result<Bound> {
    if let Some(n) = arg.as_f64() {
        return Ok(Bound::Number(n));
    }
    if let Some(t) = arg.as_str().and_then(|s| Timestamp::parse(s).ok()) {
        return Ok(Bound::Time(t));
    }
    Err(invalid(format!("`{at}` compares with a number or a time (RFC 3339 or a date), not {arg}")))
}

fn eval(node: &Node, r: &Record, meta: &Value) -> bool {
    match node {
        Node::All(n) => n.iter().all(|n| eval(n, r, meta)),
        Node::Any(n) => n.iter().any(|n| eval(n, r, meta)),
        Node::Not(n) => !eval(n, r, meta),
        Node::Test { field, test } => {
            let value = value_of(field, r, meta);
            check(test, value.as_ref())
        }
    }
}

/// The field's value in the record as JSON (`None`: absent).
fn value_of(field: &Field, r: &Record, meta: &Value) -> Option<Value> {
    let e = &r.envelope;
    let text = |t: &Option<crate::Text>| t.as_ref().map(|t| Value::from(t.as_str()));
    match field {
        Field::Kind => Some(Value::from(r.kind().name())),
        Field::Tags => Some(Value::Array(e.tags.iter().map(|t| Value::from(t.as_str())).collect())),
        Field::Importance => e.importance.map(Value::from),
        Field::Confidence => e.confidence.map(|c| Value::from(f64::from(c))),
        Field::Source => text(&e.source),
        Field::Task => text(&e.task),
        Field::Key => text(&e.key),
        Field::Time(t) => {
            let at = match t {
                TimeField::ValidFrom => Some(r.valid_from),
                TimeField::ValidUntil => r.valid_until,
                TimeField::ExpiresAt => r.expires_at,
                TimeField::RecordedAt => Some(r.recorded_at),
            };
            at.map(|t| Value::from(t.to_rfc3339()))
        }
        Field::Meta(path) => {
            let mut v = meta;
            for part in path {
                v = v.get(part)?;
            }
            (!v.is_null()).then(|| v.clone())
        }
    }
}

fn check(test: &Test, value: Option<&Value>) -> bool {
    match test {
        Test::Exists(want) => value.is_some() == *want,
        Test::Eq(x) => value.is_some_and(|v| equals(v, x)),
        Test::Ne(x) => !value.is_some_and(|v| equals(v, x)),
        Test::In(xs) => value.is_some_and(|v| xs.iter().any(|x| equals(v, x))),
        Test::Nin(xs) => !value.is_some_and(|v| xs.iter().any(|x| equals(v, x))),
        Test::Cmp(ord, bound) => value.is_some_and(|v| compare(v, *ord, bound)),
    }
}

/// Equality: numbers by value, a list by containing the value (or being equal to a list).
fn equals(v: &Value, x: &Value) -> bool {
    match (v, x) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(items), x) if !x.is_array() => items.iter().any(|i| equals(i, x)),
        _ => v == x,
    }
}

fn compare(v: &Value, ord: Order, bound: &Bound) -> bool {
    let c = match (v, bound) {
        (Value::Number(n), Bound::Number(b)) => n.as_f64().and_then(|n| n.partial_cmp(b)),
        (Value::String(s), Bound::Time(b)) => Timestamp::parse(s).ok().map(|t| t.cmp(b)),
        (Value::Array(items), _) => return items.iter().any(|i| compare(i, ord, bound)),
        _ => None,
    };
    let Some(c) = c else { return false };
    match ord {
        Order::Gt => c.is_gt(),
        Order::Gte => c.is_ge(),
        Order::Lt => c.is_lt(),
        Order::Lte => c.is_le(),
    }
}
