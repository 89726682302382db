//! Access tokens: each names the namespaces it reaches (names or `*` globs) and a scope
//! (read, write, admin). A token is shown once, when made; the database keeps only a BLAKE3
//! hash of its secret, in a table of its own (`mnemon.auth`, rows under `auth/token/`), so a
//! copy of the file gives no working token. A presented token is checked by its id, then by
//! comparing hashes in constant time (a token whose id is unknown is compared against a dummy
//! hash, so an unknown id and a wrong secret take the same time).
//!
//! A token reads `mnemon_<id>_<secret>`: the id (16 hex digits) names the row, the secret (64
//! hex digits, 256 bits from the operating system) proves the holder.
//!
//! ```
//! use mnemon::Db;
//! use mnemon_server::tokens::{self, NewToken, Scope};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = Db::create(dir.path().join("m.redb"))?;
//! let (secret, made) = tokens::create(&db, NewToken {
//!     name: "dev-1".into(),
//!     namespaces: vec!["project:*".into()],
//!     scope: Scope::Write,
//!     expires: None,
//! })?;
//! let checked = tokens::verify(&db, &secret, db.now())?;
//! assert_eq!(checked.id, made.id);
//! assert!(checked.reaches("project:a") && !checked.reaches("agent:b"));
//! tokens::revoke(&db, "dev-1", db.now())?;
//! assert!(tokens::verify(&db, &secret, db.now()).is_err());
//! # Ok(())
//! # }
//! ```

use mnemon::{Db, Timestamp};
use rand::TryRngCore;
use serde::{Deserialize, Serialize};

/// Where token rows live (the storage keeps `auth/` rows in `mnemon.auth`).
const PREFIX: &str = "auth/token/";
/// What every token starts with.
const TOKEN_PREFIX: &str = "mnemon_";

/// What a token may do, each including the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Operations that only read.
    Read,
    /// Also operations that write (including forgetting records) in its namespaces.
    Write,
    /// Also maintenance of the whole database (reindexing, pruning, whole-database imports).
    Admin,
}

impl Scope {
    /// The scope's name: `read`, `write` or `admin`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }
}

impl Scope {
    /// The scope a token needs for operation `e`: admin for whole-database maintenance,
    /// read for what only reads, write for the rest.
    pub fn needed_for(e: &mnemon::ops::Entry) -> Scope {
        if e.admin {
            Scope::Admin
        } else if e.read_only {
            Scope::Read
        } else {
            Scope::Write
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = TokenError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read" => Ok(Scope::Read),
            "write" => Ok(Scope::Write),
            "admin" => Ok(Scope::Admin),
            _ => Err(TokenError::Invalid(format!("scope {s:?} is not read, write or admin"))),
        }
    }
}

/// A token to make.
#[derive(Clone, Debug)]
pub struct NewToken {
    /// A name to know it by (unique among live tokens).
    pub name: String,
    /// The namespaces it reaches: names or globs (`project:*`, `*` for all).
    pub namespaces: Vec<String>,
    /// What it may do there.
    pub scope: Scope,
    /// When it stops working (never if `None`).
    pub expires: Option<Timestamp>,
}

/// A token as stored: everything but its secret, of which only a hash is kept.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TokenInfo {
    /// Its id (16 hex digits, part of the token).
    pub id: String,
    /// Its name.
    pub name: String,
    /// The namespaces it reaches.
    pub namespaces: Vec<String>,
    /// What it may do.
    pub scope: Scope,
    /// When it was made (RFC 3339).
    pub created: String,
    /// When it stops working (RFC 3339), if ever.
    pub expires: Option<String>,
    /// When it was revoked (RFC 3339), if it was.
    pub revoked: Option<String>,
    /// The BLAKE3 hash of its secret (hex).
    #[serde(default)]
    hash: String,
}

impl TokenInfo {
    /// Whether it reaches namespace `name`.
    pub fn reaches(&self, name: &str) -> bool {
        self.namespaces.iter().any(|p| mnemon::ops::glob_matches(p, name))
    }

    /// Whether it is in force at `now`: not revoked, not expired.
    pub fn in_force(&self, now: Timestamp) -> bool {
        // An expiry that does not read as a time counts as past: a token fails closed.
        let expired = self.expires.as_deref().is_some_and(|e| Timestamp::parse(e).map_or(true, |e| e <= now));
        self.revoked.is_none() && !expired
    }

    /// The one namespace it names, if it names exactly one and not as a glob.
    pub fn sole_namespace(&self) -> Option<&str> {
        match self.namespaces.as_slice() {
            [one] if !one.contains('*') => Some(one),
            _ => None,
        }
    }
}

/// Why a token could not be made, found or accepted.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The request to make or revoke one was malformed.
    #[error("{0}")]
    Invalid(String),
    /// No token by that id or name.
    #[error("no token named {0:?}")]
    NotFound(String),
    /// The presented token is not one in force (malformed, unknown, wrong, revoked or
    /// expired): deliberately one error, saying nothing of which.
    #[error("the token is not valid")]
    Rejected,
    /// The operating system gave no randomness.
    #[error("cannot draw a random token: {0}")]
    Random(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] mnemon::Error),
}

/// Make a token: its secret (shown once; only its hash is stored) and what is stored.
pub fn create(db: &Db, new: NewToken) -> Result<(String, TokenInfo), TokenError> {
    let name = new.name.trim();
    if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
        return Err(TokenError::Invalid("a token's name is 1 to 200 printable characters".into()));
    }
    if new.namespaces.is_empty() {
        return Err(TokenError::Invalid("a token names at least one namespace (--ns)".into()));
    }
    for ns in &new.namespaces {
        let plain = ns.replace('*', "x");
        mnemon::Namespace::new(plain)
            .map_err(|e| TokenError::Invalid(format!("namespace pattern {ns:?}: {e}")))?;
    }
    if list(db)?.iter().any(|t| t.name == name && t.revoked.is_none()) {
        return Err(TokenError::Invalid(format!(
            "a token named {name:?} exists; revoke it first or pick another name"
        )));
    }
    let mut bytes = [0u8; 40];
    rand::rngs::OsRng.try_fill_bytes(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
    let (id, secret) = bytes.split_at(8);
    let (id, secret) = (hex(id), hex(secret));
    let info = TokenInfo {
        id: id.clone(),
        name: name.to_string(),
        namespaces: new.namespaces,
        scope: new.scope,
        created: db.now().to_rfc3339(),
        expires: new.expires.map(Timestamp::to_rfc3339),
        revoked: None,
        hash: hash(&secret),
    };
    put(db, &info)?;
    Ok((format!("{TOKEN_PREFIX}{id}_{secret}"), info))
}

/// Every token, live or not, by id.
pub fn list(db: &Db) -> Result<Vec<TokenInfo>, TokenError> {
    let rows = db.snapshot()?.aux_prefix(PREFIX).map_err(mnemon::Error::from)?;
    Ok(rows.iter().filter_map(|(_, v)| serde_json::from_slice(v).ok()).collect())
}

/// Revoke the token with id or name `which` (a live one by name): it stops working at once.
pub fn revoke(db: &Db, which: &str, now: Timestamp) -> Result<TokenInfo, TokenError> {
    let all = list(db)?;
    let found = all
        .iter()
        .find(|t| t.id == which)
        .or_else(|| all.iter().find(|t| t.name == which && t.revoked.is_none()))
        .ok_or_else(|| TokenError::NotFound(which.to_string()))?;
    let mut info = found.clone();
    if info.revoked.is_none() {
        info.revoked = Some(now.to_rfc3339());
        put(db, &info)?;
    }
    Ok(info)
}

/// The token `presented` stands for, if it is one in force at `now`; otherwise
/// [`TokenError::Rejected`], in the same time whatever was wrong with it.
pub fn verify(db: &Db, presented: &str, now: Timestamp) -> Result<TokenInfo, TokenError> {
    let (id, secret) = split(presented).unwrap_or(("", presented));
    let row = if id.is_empty() {
        None
    } else {
        db.snapshot()?.aux(&format!("{PREFIX}{id}")).map_err(mnemon::Error::from)?
    };
    let info: Option<TokenInfo> = row.and_then(|v| serde_json::from_slice(&v).ok());
    // Compare against the stored hash, or a dummy one: the same work either way.
    let stored =
        info.as_ref().and_then(|i| parse_hash(&i.hash)).unwrap_or(blake3::Hash::from_bytes([0xA5; 32]));
    let matches = blake3::hash(secret.as_bytes()) == stored; // blake3::Hash compares in constant time
    match info {
        Some(info) if matches && info.in_force(now) => Ok(info),
        _ => Err(TokenError::Rejected),
    }
}

/// `(id, secret)` of a well-formed token.
fn split(token: &str) -> Option<(&str, &str)> {
    let rest = token.strip_prefix(TOKEN_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    let hexy = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (hexy(id, 16) && hexy(secret, 64)).then_some((id, secret))
}

fn put(db: &Db, info: &TokenInfo) -> Result<(), TokenError> {
    let value = serde_json::to_vec(info).map_err(|e| TokenError::Invalid(e.to_string()))?;
    db.put_aux(&format!("{PREFIX}{}", info.id), Some(value))?;
    Ok(())
}

fn hash(secret: &str) -> String {
    blake3::hash(secret.as_bytes()).to_hex().to_string()
}

fn parse_hash(hex: &str) -> Option<blake3::Hash> {
    blake3::Hash::from_hex(hex).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| unreachable!("{e}"));
        let db = Db::create(dir.path().join("t.redb")).unwrap_or_else(|e| unreachable!("{e}"));
        (dir, db)
    }

    fn new(name: &str, ns: &[&str], scope: Scope) -> NewToken {
        NewToken {
            name: name.into(),
            namespaces: ns.iter().map(|s| s.to_string()).collect(),
            scope,
            expires: None,
        }
    }

    #[test]
    fn only_the_hash_is_stored_and_every_wrong_token_is_rejected_alike() -> Result<(), TokenError> {
        let (_dir, db) = db();
        let (secret, info) = create(&db, new("a", &["project:*"], Scope::Read))?;
        assert!(secret.starts_with("mnemon_"));
        let stored = list(&db)?;
        assert_eq!(stored.len(), 1);
        let raw = serde_json::to_string(&stored[0]).unwrap_or_default();
        let secret_part = secret.rsplit('_').next().unwrap_or_default();
        assert!(!raw.contains(secret_part), "the secret is stored: {raw}");
        assert_eq!(verify(&db, &secret, db.now())?.id, info.id);
        // Wrong in every way: one rejection, the same message.
        let mut flipped = secret.clone();
        let last = if flipped.ends_with('0') { '1' } else { '0' };
        flipped.pop();
        flipped.push(last);
        let unknown_id = format!("mnemon_{}_{}", "0".repeat(16), secret_part);
        for bad in ["", "x", "mnemon_", &flipped, &unknown_id, &secret[..secret.len() - 1]] {
            let e = verify(&db, bad, db.now()).unwrap_err();
            assert!(matches!(e, TokenError::Rejected), "{bad:?}: {e}");
            assert_eq!(e.to_string(), "the token is not valid");
        }
        Ok(())
    }

    #[test]
    fn revoked_and_expired_tokens_stop_working() -> Result<(), TokenError> {
        let (_dir, db) = db();
        let (secret, _) = create(&db, new("a", &["x"], Scope::Write))?;
        let mut soon = new("b", &["x"], Scope::Write);
        soon.expires =
            Some(Timestamp::parse("2000-01-01T00:00:00Z").map_err(|e| TokenError::Invalid(e.to_string()))?);
        let (expired, _) = create(&db, soon)?;
        assert!(matches!(verify(&db, &expired, db.now()), Err(TokenError::Rejected)));
        // A name is unique among live tokens.
        assert!(matches!(create(&db, new("a", &["x"], Scope::Read)), Err(TokenError::Invalid(_))));
        let revoked = revoke(&db, "a", db.now())?;
        assert!(revoked.revoked.is_some());
        assert!(matches!(verify(&db, &secret, db.now()), Err(TokenError::Rejected)));
        assert!(matches!(revoke(&db, "nope", db.now()), Err(TokenError::NotFound(_))));
        // Revoked, the name is free again.
        create(&db, new("a", &["x"], Scope::Read))?;
        Ok(())
    }

    #[test]
    fn patterns_and_sole_namespaces() -> Result<(), TokenError> {
        let (_dir, db) = db();
        let (_, t) = create(&db, new("a", &["project:*", "agent:dev-1"], Scope::Read))?;
        assert!(t.reaches("project:a") && t.reaches("project:") && t.reaches("agent:dev-1"));
        assert!(!t.reaches("agent:dev-10") && !t.reaches("xproject:a") && !t.reaches("agent:dev"));
        assert_eq!(t.sole_namespace(), None);
        let (_, one) = create(&db, new("b", &["agent:dev-1"], Scope::Read))?;
        assert_eq!(one.sole_namespace(), Some("agent:dev-1"));
        assert!(matches!(create(&db, new("c", &[], Scope::Read)), Err(TokenError::Invalid(_))));
        assert!(matches!(create(&db, new("d", &["bad\u{7}"], Scope::Read)), Err(TokenError::Invalid(_))));
        assert!(Scope::Read < Scope::Write && Scope::Write < Scope::Admin);
        Ok(())
    }

    #[test]
    fn tokens_are_not_exported() -> Result<(), Box<dyn std::error::Error>> {
        let (dir, db) = db();
        create(&db, new("a", &["*"], Scope::Admin))?;
        let session = mnemon::ops::Session::new(db.clone(), "x")?.allow("*");
        let out = dir.path().join("export.jsonl");
        session.export(None, &mut std::fs::File::create(&out)?)?;
        let text = std::fs::read_to_string(&out)?;
        assert!(!text.contains("auth/"), "{text}");
        // Kept in their own table: none among the other auxiliary rows.
        let others = db.snapshot()?.aux_prefix("")?;
        assert!(others.iter().all(|(k, _)| !k.starts_with("auth/")), "{others:?}");
        assert_eq!(list(&db)?.len(), 1);
        Ok(())
    }
}
