//! The command line: the clap definition (`args`), the config file (`config`), the human
//! quantities (`units`), man pages and completions (`generate`). Flags become the library's
//! plain option structs here, once; nothing below this layer sees clap.

pub mod args;
pub mod config;
pub mod generate;
pub mod units;
