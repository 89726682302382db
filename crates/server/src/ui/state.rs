//! The view's state in the server (how browsers sign in, and their sessions): held by the
//! server's shared state ([`crate::http::App`]), apart from the pages that use it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How browsers sign in to the view.
#[derive(Clone, Debug, Default)]
pub enum UiMode {
    /// With a token of the server's (`mnemon serve`): its namespaces and scope apply.
    #[default]
    Tokens,
    /// With a one-time secret (`mnemon ui`): the person who started it, every namespace,
    /// writes allowed.
    Owner {
        /// The secret of the sign-in URL; it works once.
        secret: String,
    },
}

/// A new one-time sign-in secret for [`UiMode::Owner`]: 32 random hex digits.
pub fn new_secret() -> String {
    random_hex(32)
}

/// The cookie holding a browser's session.
pub(super) const COOKIE: &str = "mnemon_ui";
/// How long a session lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// The most sessions kept at once (the oldest go first).
const MAX_SESSIONS: usize = 1024;

/// The view's state in the server: how browsers sign in, and their sessions.
#[derive(Debug)]
pub(crate) struct UiState {
    pub(super) mode: UiMode,
    /// The owner's secret until it is used.
    pub(super) secret: Mutex<Option<String>>,
    sessions: Mutex<HashMap<String, UiSession>>,
}

#[derive(Clone, Debug)]
pub(super) struct UiSession {
    pub(super) access: Access,
    pub(super) csrf: String,
    expires: Instant,
}

/// Who a browser is signed in as.
#[derive(Clone, Debug)]
pub(super) enum Access {
    /// `mnemon ui`'s owner.
    Owner,
    /// A token's holder (the token is checked again on every request: a revoked one stops).
    Token(String),
}

impl UiState {
    pub(crate) fn new(mode: UiMode) -> UiState {
        let secret = match &mode {
            UiMode::Owner { secret } => Some(secret.clone()),
            UiMode::Tokens => None,
        };
        UiState { mode, secret: Mutex::new(secret), sessions: Mutex::new(HashMap::new()) }
    }

    /// A new session for `access`: its cookie's value.
    pub(super) fn open(&self, access: Access) -> String {
        let id = random_hex(32);
        let mut sessions = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        sessions.retain(|_, s| s.expires > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.iter().min_by_key(|(_, s)| s.expires).map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(id.clone(), UiSession { access, csrf: random_hex(32), expires: now + SESSION_TTL });
        id
    }

    pub(super) fn get(&self, id: &str) -> Option<UiSession> {
        let sessions = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        sessions.get(id).filter(|s| s.expires > Instant::now()).cloned()
    }

    pub(super) fn close(&self, id: &str) {
        self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id);
    }
}

/// `n` random hex digits.
pub(super) fn random_hex(n: usize) -> String {
    (0..n.div_ceil(16)).map(|_| format!("{:016x}", rand::random::<u64>())).collect::<String>()[..n]
        .to_string()
}
