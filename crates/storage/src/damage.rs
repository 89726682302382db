//! The damage a handle met: the first damage its reads (or its caller) reported, shared by
//! the handle, its clones and its snapshots, after which its writes are refused.

use std::sync::{Arc, Mutex, PoisonError};

/// The first damage a handle's reads met (shared with its snapshots).
pub(crate) type Damage = Arc<Mutex<Option<String>>>;

/// Keep `reason` as a handle's damage unless it already holds one (the first is the cause).
pub(crate) fn note_damage(damage: &Damage, reason: &str) {
    let mut d = damage.lock().unwrap_or_else(PoisonError::into_inner);
    if d.is_none() {
        *d = Some(reason.to_string());
    }
}
