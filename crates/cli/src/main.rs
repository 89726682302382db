//! The `mnemon` command-line tool.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
mod groups;
mod mcp_install;
mod model;
mod open;
mod output;
mod search;
mod serve;
mod tour;
mod vectors;
mod watch;

/// The last panic's message and place, kept by the panic hook (see `main`).
static LAST_PANIC: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// A source path from its crate's folder on (`redb-4.5.0/src/tree_store/btree.rs`), not the
/// machine's registry path.
fn short_path(file: &str) -> &str {
    file.rfind("/src/").and_then(|i| file[..i].rfind('/').map(|j| &file[j + 1..])).unwrap_or(file)
}

/// A mistake in how the command was called (exit code 2).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Exit code 2 for usage errors (bad input), 1 for everything else.
fn exit_code(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if cause.is::<UsageError>() {
            return 2;
        }
        if let Some(m) = cause.downcast_ref::<mnemon::Error>() {
            return m.code().exit_code();
        }
        if let Some(s) = cause.downcast_ref::<mnemon::StorageError>() {
            return if s.is_input() { 2 } else { 1 };
        }
        if cause.is::<mnemon::InputError>()
            || cause.is::<mnemon::TimeError>()
            || cause.is::<mnemon::IdError>()
            || cause.is::<mnemon::UnknownKind>()
        {
            return 2;
        }
    }
    1
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// The error and its causes on one line, leaving out a cause whose text its parent already
/// shows (typed errors print their source: "cannot access P: No such file").
fn one_line(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !msg.contains(&text) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&text);
        }
    }
    msg.replace('\n', " ")
}

/// clap's message in one line: its first line with the indented lines under it (the
/// arguments it names, e.g. the missing ones), and the command's usage.
fn clap_one_line(text: &str) -> String {
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let mut out = lines.next().unwrap_or("error: invalid arguments").trim_end().to_string();
    let named: Vec<&str> = lines
        .by_ref()
        .take_while(|l| l.starts_with(char::is_whitespace) && !l.trim().is_empty())
        .map(str::trim)
        .collect();
    if !named.is_empty() {
        out = format!("{} {}", out.trim_end_matches(':').to_string() + ":", named.join(", "));
    }
    match text.lines().find_map(|l| l.strip_prefix("Usage: ")) {
        Some(usage) => format!("{out} (usage: {})", usage.trim()),
        None => format!("{out} (see `mnemon --help`)"),
    }
}

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    ExitCode::SUCCESS
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand => {
                    let _ = e.print();
                    ExitCode::from(2)
                }
                _ => {
                    eprintln!("{}", clap_one_line(&e.render().to_string()));
                    ExitCode::from(2)
                }
            };
        }
    };
    // A panic (a dependency's, on a damaged page) becomes one line and exit code 1, like any
    // other error; its message is kept by the hook instead of printed.
    std::panic::set_hook(Box::new(|info| {
        let at =
            info.location().map(|l| format!(" at {}:{}", short_path(l.file()), l.line())).unwrap_or_default();
        let msg = mnemon::panic_message(info.payload());
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(format!("{msg}{at}"));
        }
    }));
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| commands::run(cli)));
    let ran = ran.unwrap_or_else(|_| {
        let message = LAST_PANIC.lock().ok().and_then(|mut l| l.take()).unwrap_or_else(|| "a panic".into());
        Err(mnemon::Error::Panicked { what: "the command".into(), message }.into())
    });
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", output::escape(&one_line(&e)));
            ExitCode::from(exit_code(&e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::clap_one_line;

    #[test]
    fn clap_errors_keep_the_arguments_they_name() {
        let missing = "error: the following required arguments were not provided:\n  <ID>\n\nUsage: mnemon get <ID>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            clap_one_line(missing),
            "error: the following required arguments were not provided: <ID> (usage: mnemon get <ID>)"
        );
        let plain = "error: unexpected argument '--bogus' found\n\nUsage: mnemon list [OPTIONS]\n";
        assert_eq!(
            clap_one_line(plain),
            "error: unexpected argument '--bogus' found (usage: mnemon list [OPTIONS])"
        );
        assert_eq!(clap_one_line(""), "error: invalid arguments (see `mnemon --help`)");
    }
}
