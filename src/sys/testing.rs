//! For unit tests only: a test that cannot run here (not root, a tool or the time zone database
//! missing) says so on stderr, as the integration tests' `skip!` does. Library code never
//! prints; this is the one place a test of it may.

use std::io::Write;

/// Says that `test` skipped itself (in full or in part), and why.
pub fn skipped(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}
