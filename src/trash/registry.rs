//! The trash registry, `<state directory>/reclaim/trashes`: this user's trashes that are not at
//! a mount top (`locate` makes one below the top when the top is not writable), so that
//! `status`, `reap` and `restore` find them again (discovery finds the others by listing the
//! tops). Kept only in a state directory of the caller's own (`userdirs`), and read and written
//! as hostile ground (`safefile`): the file must be a regular file of the caller's, and is
//! replaced whole (a fresh name, then a rename), never written in place.

use std::ffi::{CStr, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::safefile::{self, Bad, Expect};

const DIR: &CStr = c"reclaim";
const FILE: &CStr = c"trashes";
/// The most the registry may hold.
const MAX_BYTES: u64 = 1 << 20;

fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The registry's directory (made if `create`), or why there is none.
fn dir(create: bool) -> Result<OwnedFd, String> {
    let home = crate::userdirs::state_home()
        .ok_or("no state directory of this user's own (HOME or XDG_STATE_HOME)")?;
    let shown = || crate::quote::quote(home.join("reclaim"));
    if create {
        // Below a directory of the caller's own (`userdirs`): nobody else made these names.
        std::fs::create_dir_all(&home).map_err(|e| format!("cannot make {}: {e}", shown()))?;
    }
    let home_fd = crate::dirfd::open_dir_path(&home).map_err(|e| {
        format!(
            "cannot open {}: {}",
            crate::quote::quote(&home),
            crate::error::errno_text(e)
        )
    })?;
    let r = if create {
        safefile::open_or_make_dir(&home_fd, DIR, 0o700, me())
    } else {
        crate::dirfd::open_dir_at(&home_fd, DIR).map_err(Bad::Os)
    };
    r.map_err(|b| format!("{} {b}", shown()))
}

/// Whether a trash could be registered now (the state directory is usable).
pub fn available() -> Result<(), String> {
    dir(true).map(drop)
}

/// The trashes registered (in the order they were).
pub fn registered() -> Vec<PathBuf> {
    let Ok(dir) = dir(false) else {
        return Vec::new();
    };
    let want = Expect {
        owners: &[me()],
        max: MAX_BYTES,
        one_link: true,
    };
    safefile::read_checked(&dir, FILE, &want)
        .map(|t| {
            t.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| PathBuf::from(OsStr::from_bytes(l)))
                .collect()
        })
        .unwrap_or_default()
}

/// Remembers `trash` (a trash not at a mount top); those registered that are gone are
/// forgotten.
pub fn register(trash: &Path) -> Result<(), String> {
    if trash.as_os_str().as_bytes().contains(&b'\n') {
        return Err("its path holds a newline".into());
    }
    let dir = dir(true)?;
    let mut known = registered();
    if known.iter().any(|p| p == trash) {
        return Ok(());
    }
    known.retain(|p| p.exists());
    known.push(trash.to_path_buf());
    let mut text = Vec::new();
    for p in known {
        text.extend_from_slice(p.as_os_str().as_bytes());
        text.push(b'\n');
    }
    safefile::replace(&dir, FILE, &text).map_err(|e| {
        format!(
            "cannot write the trash registry: {}",
            crate::error::errno_text(e)
        )
    })
}
