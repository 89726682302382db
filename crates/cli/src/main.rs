//! The `mnemon` command-line tool.

use std::process::ExitCode;

use clap::Parser;

mod bench;
mod cli;
mod commands;
mod domain;
mod evaluate;
mod mcp;
mod open;
mod output;
mod retrieval;
mod search;
mod tour;
mod vectors;

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
            return if m.is_input() { 2 } else { 1 };
        }
        if let Some(s) = cause.downcast_ref::<mnemon::StorageError>() {
            return if s.is_input() { 2 } else { 1 };
        }
        if cause.is::<mnemon::InputError>() || cause.is::<mnemon::TimeError>() {
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
                    let text = e.render().to_string();
                    let first =
                        text.lines().find(|l| !l.trim().is_empty()).unwrap_or("error: invalid arguments");
                    eprintln!("{first} (see `mnemon --help`)");
                    ExitCode::from(2)
                }
            };
        }
    };
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::from(exit_code(&e))
        }
    }
}
