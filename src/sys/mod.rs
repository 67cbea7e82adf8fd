//! System plumbing under everything else: the one module that opens, creates, mounts or removes
//! by name (`safeopen`), directory fds and stats, the mount table, locks, renames, limits,
//! signals, free space, errors, logging, acting as another user, systemd's notification
//! protocol, and the quoting and number formatting that error messages and logs need.

pub mod asuser;
pub mod btrfs;
pub mod dirfd;
pub mod error;
pub mod float;
pub mod format;
pub mod freed;
pub mod interrupt;
pub mod lease;
pub mod limits;
pub mod locks;
pub mod logging;
pub mod mounts;
pub mod notify;
pub mod process;
pub mod quote;
pub use safeopen::rename;
pub mod safeopen;
pub mod space;
pub mod startup;
pub mod userdirs;

#[cfg(test)]
pub mod testing;
