//! Integration tests of mnemon-index: one binary.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

mod common;
mod crash;
mod persist;
mod search;
