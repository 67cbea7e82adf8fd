//! `reclaim completions SHELL`: prints the completion script (`cli::generate`) on stdout.

use std::io::Write;
use std::process::ExitCode;

/// Prints `script`.
pub fn run(script: &[u8]) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(script).and_then(|()| out.flush());
    ExitCode::SUCCESS
}
