//! mnemon's own MCP tools, beside the reference knowledge-graph ones: one per operation of
//! [`mnemon::ops`] (remember, recall, context, get, list, supersede, history, chain, task,
//! forget), registered from the operation list. A tool's name, title, description and
//! annotations are the operation's; its input and output schemas are derived from the
//! request and response types (rmcp's schema generation: JSON Schema 2020-12), so the tool
//! and the operation cannot drift apart.

use std::collections::HashMap;
use std::sync::Arc;

use mnemon::Code;
use mnemon::ops::{Operation, Session, Visitor};
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

/// Why a call failed: the arguments (a protocol error) or the database (an error result).
pub enum ToolError {
    /// Missing, unknown or wrongly typed arguments, or a namespace out of reach.
    Args(String),
    /// The call was understood but refused or failed.
    Failed(String),
}

type Call = fn(&Session, Value) -> Result<Value, ToolError>;

/// The tools, and how to run each.
#[derive(Default)]
pub struct OwnTools {
    /// As `tools/list` lists them.
    pub tools: Vec<Tool>,
    calls: HashMap<&'static str, Call>,
}

impl Visitor for OwnTools {
    fn visit<O: Operation>(&mut self) {
        if !O::MCP {
            return;
        }
        let annotations =
            ToolAnnotations::new().read_only(O::READ_ONLY).destructive(O::DESTRUCTIVE).open_world(false);
        let mut tool = Tool::new(O::NAME, O::DESCRIPTION, unwrapped(&schema_for_type::<O>()))
            .with_title(O::TITLE)
            .with_output_schema::<O::Output>()
            .annotate(annotations);
        tool.output_schema = tool.output_schema.as_ref().map(|s| unwrapped(s));
        self.tools.push(tool);
        self.calls.insert(O::NAME, call::<O>);
    }
}

impl OwnTools {
    /// Every operation as a tool.
    pub fn new() -> OwnTools {
        let mut t = OwnTools::default();
        mnemon::ops::each(&mut t);
        t
    }

    /// Whether `name` is one of them.
    pub fn has(&self, name: &str) -> bool {
        self.calls.contains_key(name)
    }

    /// Run tool `name` with arguments `a` in `session`: the structured result.
    pub fn call(&self, session: &Session, name: &str, a: Value) -> Result<Value, ToolError> {
        match self.calls.get(name) {
            Some(run) => run(session, a),
            None => Err(ToolError::Args(format!("Tool {name} not found"))),
        }
    }
}

/// A schema whose descriptions read as one paragraph each: the line breaks of the doc
/// comments they come from become spaces (a blank line stays a paragraph break).
fn unwrapped(schema: &JsonObject) -> Arc<JsonObject> {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(o) => {
                for (k, v) in o.iter_mut() {
                    match v {
                        Value::String(s) if k == "description" => {
                            *s = s
                                .split("\n\n")
                                .map(|p| p.replace('\n', " "))
                                .collect::<Vec<_>>()
                                .join("\n\n");
                        }
                        _ => walk(v),
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut v = Value::Object(schema.clone());
    walk(&mut v);
    match v {
        Value::Object(o) => Arc::new(o),
        _ => Arc::new(schema.clone()),
    }
}

/// Parse the arguments as operation `O`'s request, run it, and give its response as JSON.
fn call<O: Operation>(session: &Session, a: Value) -> Result<Value, ToolError> {
    let request: O = serde_json::from_value(a)
        .map_err(|e| ToolError::Args(format!("invalid arguments for tool {}: {e}", O::NAME)))?;
    let out = session.call(request).map_err(|e| match e.code() {
        Code::InvalidInput | Code::Forbidden => ToolError::Args(e.to_string()),
        _ => ToolError::Failed(e.to_string()),
    })?;
    serde_json::to_value(out).map_err(|e| ToolError::Failed(format!("cannot write the result: {e}")))
}
