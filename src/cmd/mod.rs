//! The subcommands, one file each, and GNU `rm` mode (`gnu/`): the only code that prints to the
//! user or chooses an exit code. Each runs the library and reports what it returned.

pub mod bench;
pub mod gnu;
pub mod rm;
pub mod status;
