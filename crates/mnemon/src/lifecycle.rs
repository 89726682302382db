//! Lifecycle: `prune` (TTL expiry, episode age with importance, episode count caps) over the
//! whole database or some namespaces, dry or for real, retiring (kept for time travel) or, when
//! asked, forgetting (erased).

use mnemon_storage::RecordId;

use crate::db::Db;
use crate::error::Result;

/// What [`Db::prune`] does.
#[derive(Clone, Debug)]
pub struct PruneOptions {
    /// Only count; change nothing.
    pub dry_run: bool,
    /// Erase what is pruned (every revision) instead of retiring it.
    pub forget: bool,
    /// Retire episodes older than this many days (None: no age rule).
    pub episode_max_age_days: Option<u32>,
    /// Episodes of importance 4-5 live this many times longer.
    pub important_factor: u32,
    /// Keep at most this many episodes per namespace (None: no cap).
    pub episode_cap: Option<usize>,
    /// Only these namespaces (empty: all).
    pub namespaces: Vec<String>,
}

impl Default for PruneOptions {
    fn default() -> Self {
        PruneOptions {
            dry_run: false,
            forget: false,
            episode_max_age_days: None,
            important_factor: 3,
            episode_cap: None,
            namespaces: Vec::new(),
        }
    }
}

/// What [`Db::prune`] found (and, unless dry, did).
#[derive(
    Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct PruneReport {
    /// Records whose TTL ran out (retired at their expiry, or forgotten).
    pub expired: usize,
    /// Episodes past their age.
    pub episodes_aged: usize,
    /// Episodes over the cap.
    pub episodes_capped: usize,
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Whether pruned records were erased rather than retired.
    pub forgotten: bool,
}

impl Db {
    /// Prune; see [`PruneOptions`].
    pub fn prune(&self, o: &PruneOptions) -> Result<PruneReport> {
        let mut report =
            PruneReport { dry_run: o.dry_run, forgotten: o.forget && !o.dry_run, ..Default::default() };
        let wanted = |ns: &str| o.namespaces.is_empty() || o.namespaces.iter().any(|n| n == ns);
        for (ns, found) in self.memory().expired()? {
            if !wanted(&ns) {
                continue;
            }
            report.expired += found.len();
            if o.dry_run {
                continue;
            }
            let h = self.ns(&ns)?;
            for (id, at) in found {
                if o.forget {
                    h.forget(id)?;
                } else {
                    h.retire(id, Some(at))?;
                }
            }
        }
        if o.episode_max_age_days.is_none() && o.episode_cap.is_none() {
            return Ok(report);
        }
        for n in self.namespaces()? {
            if !wanted(n.as_str()) {
                continue;
            }
            let h = self.ns(n.as_str())?;
            let eps = h.episodes();
            let aged = match o.episode_max_age_days {
                Some(d) => eps.aged(d, o.important_factor)?,
                None => Vec::new(),
            };
            report.episodes_aged += aged.len();
            let mut capped: Vec<RecordId> = match o.episode_cap {
                Some(c) => eps.over_cap(c)?,
                None => Vec::new(),
            };
            capped.retain(|id| !aged.contains(id));
            // The cap counts what stays after the age rule; the least important and oldest go.
            if let Some(c) = o.episode_cap {
                let current = h.list_of::<mnemon_storage::body::Episode>(mnemon_storage::AsOf::now())?.len();
                let need = current.saturating_sub(aged.len()).saturating_sub(c);
                let start = capped.len().saturating_sub(need);
                capped = capped.split_off(start);
            }
            report.episodes_capped += capped.len();
            if o.dry_run {
                continue;
            }
            for id in aged.iter().chain(&capped) {
                if o.forget {
                    h.forget(*id)?;
                } else {
                    h.retire(*id, None)?;
                }
            }
        }
        Ok(report)
    }
}
