//! How the benchmarks report: text tables or JSON on standard output, progress on standard
//! error, a one-line error and an exit code (2 usage, 1 runtime) when they cannot run.

use std::io::Write;

/// Where a report goes.
pub struct Out {
    w: Box<dyn Write>,
    /// Whether `--json` was given.
    pub json: bool,
}

impl Out {
    /// Standard output.
    pub fn stdout(json: bool) -> Self {
        Out { w: Box::new(std::io::BufWriter::new(std::io::stdout())), json }
    }

    /// A line (or lines) of text.
    pub fn line(&mut self, s: impl AsRef<str>) -> std::io::Result<()> {
        writeln!(self.w, "{}", s.as_ref())
    }

    /// One JSON document on one line.
    pub fn json_line(&mut self, v: &impl serde::Serialize) -> std::io::Result<()> {
        let s = serde_json::to_string(v).map_err(std::io::Error::other)?;
        writeln!(self.w, "{s}")
    }

    /// Flush.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// A report's table in markdown, ready for docs/benchmarks.md: a header row, its rule, one
/// row per line.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let line = |cells: &[&str]| format!("| {} |", cells.join(" | "));
    let mut out = vec![line(headers), line(&vec!["---"; headers.len()])];
    for r in rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        out.push(line(&cells));
    }
    out.join("\n")
}

/// A usage error (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A usage error, as an `anyhow` error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    Usage(msg.into()).into()
}

/// The exit code of an error: 2 for usage, 1 otherwise.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if e.downcast_ref::<Usage>().is_some() { 2 } else { 1 }
}

/// An error and its causes on one line.
pub fn one_line(e: &anyhow::Error) -> String {
    let s: Vec<String> = e.chain().map(ToString::to_string).collect();
    s.join(": ").replace('\n', " ")
}

/// A progress bar on stderr for `len` steps (hidden for `--json` runs).
pub fn progress_bar(len: u64, what: &str, hidden: bool) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{what} [{{bar:40}}] {{pos}}/{{len}} ({{per_sec}}, eta {{eta}})"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}
