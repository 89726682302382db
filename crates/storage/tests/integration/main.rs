//! Integration tests of mnemon-storage: one binary (see the style guide).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod batches;
mod changes;
mod crash;
mod eio;
mod formats;
mod integrity;
mod ioerror;
mod lexical;
mod model;
mod powerloss;
mod scenarios;
mod vectors;
