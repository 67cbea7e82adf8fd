//! Library part of the slowdisk crate. It holds `netfs`, the network file system
//! emulator (binary `src/bin/netfs.rs`), so that its accounting can be unit-tested
//! without a mount. The `slowdisk` binary (`src/main.rs`) does not use it.

pub mod netfs;
