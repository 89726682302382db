//! End-to-end tests across mnemon crates live in `tests/`.
