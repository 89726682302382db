//! `mnemon watch`: the change feed on the command line, on a file or through a server, by
//! long-polling the `changes` operation from where the last answer ended.

use std::time::{Duration, Instant};

use anyhow::Result;
use mnemon::feed::{Change, Cursor};
use mnemon::ops::Changes;

use crate::cli::Cli;
use crate::open::{connect, usage};
use crate::output::Out;

/// How long one call waits for a change (under a server's limit and any proxy's timeout).
const WAIT: Duration = Duration::from_secs(25);

/// Print the changes `req` selects as they come: until `count` were printed, or none came
/// for `idle` seconds, or the process is stopped.
pub(crate) fn watch(
    cli: &Cli,
    out: &mut Out,
    req: Changes,
    count: Option<usize>,
    idle: Option<f64>,
) -> Result<()> {
    if let Some(s) = &req.since {
        s.parse::<Cursor>().map_err(|e| usage(e.to_string()))?;
    }
    let idle = match idle {
        Some(s) if !(s.is_finite() && s >= 0.0) => return Err(usage("--idle takes a number of seconds")),
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    let conn = connect(cli, false)?;
    // "Now" is fixed once, so that nothing committed between two calls is missed.
    let mut since = match &req.since {
        Some(s) => s.clone(),
        None => conn.call(Changes { since: None, limit: Some(1), ..filter_of(&req) })?.next.to_string(),
    };
    let mut printed = 0usize;
    let mut quiet_since = Instant::now();
    loop {
        let wait = match idle {
            Some(idle) => {
                let left = idle.saturating_sub(quiet_since.elapsed());
                if left.is_zero() {
                    return Ok(());
                }
                left.min(WAIT)
            }
            None => WAIT,
        };
        let limit = count.map_or(mnemon::ops::MAX_CHANGES, |c| (c - printed).min(mnemon::ops::MAX_CHANGES));
        let page = conn.call(Changes {
            since: Some(since.clone()),
            limit: Some(limit),
            wait_ms: Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1)),
            ..filter_of(&req)
        })?;
        since = page.next.to_string();
        if !page.changes.is_empty() {
            quiet_since = Instant::now();
        }
        for c in &page.changes {
            print(out, c)?;
            printed += 1;
        }
        out.flush()?;
        if count.is_some_and(|c| printed >= c) {
            return Ok(());
        }
    }
}

/// The filter of `req`, without its place.
fn filter_of(req: &Changes) -> Changes {
    Changes {
        kinds: req.kinds.clone(),
        tags: req.tags.clone(),
        namespaces: req.namespaces.clone(),
        ..Default::default()
    }
}

fn print(out: &mut Out, c: &Change) -> std::io::Result<()> {
    if out.json {
        return out.json_line(c);
    }
    let kind = c.kind.map_or("-", |k| k.name());
    out.line(format!("{}  {:<10}  {:<12}  {}  {}  rev {}", c.tx, c.op.name(), kind, c.namespace, c.id, c.rev))
}
