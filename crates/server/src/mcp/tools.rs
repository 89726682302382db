//! mnemon's own MCP tools, beside the reference knowledge-graph ones: one per operation of
//! [`mnemon::ops`] (remember, recall, context, get, list, supersede, history, chain, task,
//! forget), registered from the operation list. A tool's name, title, description and
//! annotations are the operation's; its input and output schemas are derived from the
//! request and response types (rmcp's schema generation: JSON Schema 2020-12), so the tool
//! and the operation cannot drift apart.

use std::sync::Arc;

use mnemon::Code;
use mnemon::ops::{Catalog, Session};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

/// Why a call failed: the arguments (a protocol error) or the database (an error result).
pub enum ToolError {
    /// Missing, unknown or wrongly typed arguments, or a namespace out of reach.
    Args(String),
    /// The call was understood but refused or failed.
    Failed(String),
}

/// The tools, and how to run each.
pub struct OwnTools {
    /// As `tools/list` lists them.
    pub tools: Vec<Tool>,
    catalog: Catalog,
}

impl OwnTools {
    /// Every operation MCP offers, as a tool.
    pub fn new() -> OwnTools {
        let catalog = Catalog::new();
        let tools = catalog
            .entries()
            .iter()
            .filter(|e| e.mcp)
            .map(|e| {
                let annotations = ToolAnnotations::new()
                    .read_only(e.read_only)
                    .destructive(e.destructive)
                    .open_world(false);
                let mut tool = Tool::new(e.name, e.description, unwrapped(&object(e.input_schema())))
                    .with_title(e.title)
                    .annotate(annotations);
                // As rmcp gives an output schema: without the wrapper type's title and doc.
                let mut output = object(e.output_schema());
                output.remove("title");
                output.remove("description");
                tool.output_schema = Some(unwrapped(&output));
                tool
            })
            .collect();
        OwnTools { tools, catalog }
    }

    /// The scope a token needs for tool `name` (`None` if it is not one of them).
    pub fn needed(&self, name: &str) -> Option<crate::tokens::Scope> {
        self.catalog.get(name).filter(|e| e.mcp).map(crate::tokens::Scope::needed_for)
    }

    /// Whether `name` is one of them.
    pub fn has(&self, name: &str) -> bool {
        self.catalog.get(name).is_some_and(|e| e.mcp)
    }

    /// Run tool `name` with arguments `a` in `session`: the structured result.
    pub fn call(&self, session: &Session, name: &str, a: Value) -> Result<Value, ToolError> {
        let Some(entry) = self.catalog.get(name).filter(|e| e.mcp) else {
            return Err(ToolError::Args(format!("Tool {name} not found")));
        };
        entry.call(session, a).map_err(|e| match e.code() {
            Code::InvalidInput | Code::Forbidden => ToolError::Args(e.to_string()),
            _ => ToolError::Failed(e.to_string()),
        })
    }
}

/// A schema as a JSON object (a schema of `true` or `false` as an empty object).
fn object(schema: rmcp::schemars::Schema) -> JsonObject {
    match schema.to_value() {
        Value::Object(o) => o,
        _ => JsonObject::new(),
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

#[cfg(test)]
mod tests {
    use mnemon::ops::{Operation, Visitor};
    use rmcp::handler::server::common::{schema_for_output, schema_for_type};

    /// The catalog's schemas, as the tools give them, are those rmcp derives from the types.
    struct Same(super::OwnTools, usize);

    impl Visitor for Same {
        fn visit<O: Operation>(&mut self) {
            if !O::MCP {
                return;
            }
            let Some(tool) = self.0.tools.iter().find(|t| t.name == O::NAME) else {
                return;
            };
            assert_eq!(tool.input_schema, super::unwrapped(&schema_for_type::<O>()), "{}", O::NAME);
            assert_eq!(
                tool.output_schema,
                Some(super::unwrapped(&schema_for_output::<O::Output>())),
                "{}",
                O::NAME
            );
            self.1 += 1;
        }
    }

    #[test]
    fn tool_schemas_are_those_of_the_operation_types() {
        let mut same = Same(super::OwnTools::new(), 0);
        mnemon::ops::each(&mut same);
        assert_eq!(same.1, same.0.tools.len());
    }
}
