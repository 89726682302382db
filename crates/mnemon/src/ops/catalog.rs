//! Every operation by name, callable with JSON: what the adapters that take a request as text
//! dispatch through (MCP's tools, the HTTP server's routes, the fuzz target), so that the
//! name, the flags, the schemas and the call of an operation are read from one list.
//!
//! ```
//! use mnemon::Db;
//! use mnemon::ops::{Catalog, Session};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let session = Session::new(Db::create(dir.path().join("m.redb"))?, "project:demo")?;
//! let catalog = Catalog::new();
//! let remember = catalog.get("remember").ok_or("no such operation")?;
//! assert!(!remember.read_only);
//! let made = remember.call(&session, serde_json::json!({"kind": "learning", "text": "redb is embedded"}))?;
//! assert!(made["id"].is_string());
//! // What a server sends: the response as JSON text, written once from the output.
//! let text = remember.call_json(&session, serde_json::json!({"kind": "learning", "text": "one copy"}))?;
//! assert!(serde_json::from_slice::<serde_json::Value>(&text)?["id"].is_string());
//! // Arguments that are not the request's are an input error.
//! let bad = remember.call(&session, serde_json::json!({"kind": 3})).unwrap_err();
//! assert_eq!(bad.code(), mnemon::Code::InvalidInput);
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;

use schemars::Schema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use super::{Operation, Session, Visitor, each};
use crate::error::{Error, Result, invalid};

type Call = fn(&Session, Value) -> Result<Value>;
type CallBytes = fn(&Session, Value) -> Result<Vec<u8>>;

/// One operation as the catalog holds it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its name ([`Operation::NAME`]).
    pub name: &'static str,
    /// Its title ([`Operation::TITLE`]).
    pub title: &'static str,
    /// What it is for ([`Operation::DESCRIPTION`]).
    pub description: &'static str,
    /// Whether it only reads ([`Operation::READ_ONLY`]).
    pub read_only: bool,
    /// Whether it may erase what cannot be recovered ([`Operation::DESTRUCTIVE`]).
    pub destructive: bool,
    /// Whether it is maintenance of the whole database ([`Operation::ADMIN`]).
    pub admin: bool,
    /// Whether MCP offers it as a tool ([`Operation::MCP`]).
    pub mcp: bool,
    input: fn() -> Schema,
    output: fn() -> Schema,
    call: Call,
    call_bytes: CallBytes,
}

impl Entry {
    /// Run it in `session` with `args`, its request as JSON: the response as JSON. Arguments
    /// that do not read as the request are an input error naming the operation.
    pub fn call(&self, session: &Session, args: Value) -> Result<Value> {
        (self.call)(session, args)
    }

    /// [`Self::call`], the response written straight to JSON text: what a server sends,
    /// without building the response's JSON tree first.
    pub fn call_json(&self, session: &Session, args: Value) -> Result<Vec<u8>> {
        (self.call_bytes)(session, args)
    }

    /// The JSON Schema (2020-12) of its request: what it accepts.
    pub fn input_schema(&self) -> Schema {
        (self.input)()
    }

    /// The JSON Schema (2020-12) of its response: what it writes.
    pub fn output_schema(&self) -> Schema {
        (self.output)()
    }
}

/// Every operation of [`each`], by name.
#[derive(Clone, Debug)]
pub struct Catalog {
    entries: Vec<Entry>,
    by_name: HashMap<&'static str, usize>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::new()
    }
}

impl Visitor for Catalog {
    fn visit<O: Operation>(&mut self) {
        self.by_name.insert(O::NAME, self.entries.len());
        self.entries.push(Entry {
            name: O::NAME,
            title: O::TITLE,
            description: O::DESCRIPTION,
            read_only: O::READ_ONLY,
            destructive: O::DESTRUCTIVE,
            admin: O::ADMIN,
            mcp: O::MCP,
            input: || SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<O>(),
            output: || {
                SchemaSettings::draft2020_12()
                    .for_serialize()
                    .into_generator()
                    .into_root_schema_for::<O::Output>()
            },
            call: call::<O>,
            call_bytes: call_bytes::<O>,
        });
    }
}

impl Catalog {
    /// Every operation, in the order of [`each`].
    pub fn new() -> Catalog {
        let mut c = Catalog { entries: Vec::new(), by_name: HashMap::new() };
        each(&mut c);
        c
    }

    /// The operation named `name`.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).and_then(|&i| self.entries.get(i))
    }

    /// Every operation, in the order of [`each`].
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

/// Read `args` as operation `O`'s request and run it.
fn run<O: Operation>(session: &Session, args: Value) -> Result<O::Output> {
    let request: O = serde_json::from_value(args)
        .map_err(|e| invalid(format!("invalid arguments for {}: {e}", O::NAME)))?;
    session.call(request)
}

/// The error of a response that does not encode as JSON.
fn encode_error<O: Operation>(e: serde_json::Error) -> Error {
    Error::Encode { what: O::NAME.to_string(), message: e.to_string() }
}

/// Run `O` with `args` and give its response as JSON.
fn call<O: Operation>(session: &Session, args: Value) -> Result<Value> {
    serde_json::to_value(run::<O>(session, args)?).map_err(encode_error::<O>)
}

/// Run `O` with `args` and give its response as JSON text.
fn call_bytes<O: Operation>(session: &Session, args: Value) -> Result<Vec<u8>> {
    serde_json::to_vec(&run::<O>(session, args)?).map_err(encode_error::<O>)
}
