//! What the user sees, as text: the live progress line, `-v` lines, summaries and tables. Computes
//! nothing about removal itself; the commands (`cmd/`) decide where it goes.

pub mod browse;
pub mod pack;
pub mod prune;
pub mod reap;
pub mod report;
pub mod scan;
pub mod select;
pub mod status;
