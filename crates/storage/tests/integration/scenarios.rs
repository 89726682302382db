//! Scenario tests of the storage engine.
