//! The caller's own directories, as reclaim may use them: `$XDG_CONFIG_HOME` (else
//! `~/.config`) for the configuration, `$XDG_STATE_HOME` (else `~/.local/state`) for the
//! trash registry and `$XDG_CACHE_HOME` (else `~/.cache`; root: `/var/cache`) for `scan`'s
//! calibration scratch. Such a directory is used only if it (or, while it does not exist yet, the
//! nearest directory above it that does) belongs to the caller or to root and nobody else may
//! write in it; for root, only root's. So a careless root (`sudo -E`, `su` without `-`, a
//! script that kept a user's `HOME`) never reads a configuration or writes a registry that user
//! prepared. Owns that decision only; says nothing itself: `refused` gives the command the
//! lines to say, once.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What was decided for one kind of directory.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Decision {
    /// The directory to use.
    dir: Option<PathBuf>,
    /// Why a directory the environment named is not used.
    refused: Option<Refused>,
}

/// A directory that is not used, and why (`why_untrusted`): the one a variable names, or
/// root's `/var/cache`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// `$var` (`HOME`: the directory below it) is at `path`; `what` there could be someone
    /// else's.
    #[error(
        "not using {var} {}: {why} ({what} there could be someone else's)",
        crate::sys::quote::quote(.path)
    )]
    Named {
        var: &'static str,
        path: PathBuf,
        why: String,
        what: &'static str,
    },
    /// Root's cache directory, `/var/cache`.
    #[error(
        "not using {}: {why} (a cache there could be someone else's)",
        crate::sys::quote::quote(.path)
    )]
    VarCache { path: PathBuf, why: String },
}

impl Refused {
    /// A refusal of `HOME` (rather than of a variable of its own).
    fn of_home(&self) -> bool {
        matches!(self, Refused::Named { var: "HOME", .. })
    }
}

/// The directory for the configuration (`reclaim.toml`), if there is one reclaim may use.
pub fn config_home() -> Option<PathBuf> {
    static D: OnceLock<Decision> = OnceLock::new();
    D.get_or_init(|| decide("XDG_CONFIG_HOME", ".config"))
        .dir
        .clone()
}

/// The directory for state (the trash registry lives in `<it>/reclaim/`), if there is one
/// reclaim may use.
pub fn state_home() -> Option<PathBuf> {
    static D: OnceLock<Decision> = OnceLock::new();
    D.get_or_init(|| decide("XDG_STATE_HOME", ".local/state"))
        .dir
        .clone()
}

/// The base directory for caches (`scan` calibrates in `<it>/reclaim`): `$XDG_CACHE_HOME` if
/// set, else `~/.cache`, else nothing; for root `$XDG_CACHE_HOME` if set, else `/var/cache`
/// (never a `HOME` it may have been handed). `Err`: the one the environment named is not used,
/// and why (one line).
pub fn cache_home() -> Result<Option<PathBuf>, Refused> {
    let me = rustix::process::geteuid().as_raw();
    if me == 0 && !std::env::var_os("XDG_CACHE_HOME").is_some_and(|v| Path::new(&v).is_absolute()) {
        let var_cache = PathBuf::from("/var/cache");
        return match why_untrusted(&var_cache, me) {
            None => Ok(Some(var_cache)),
            Some(why) => Err(Refused::VarCache {
                path: var_cache,
                why,
            }),
        };
    }
    let d = decide_for("XDG_CACHE_HOME", ".cache", "a cache");
    match d.refused {
        // A HOME refused for the configuration too was said once already (`refused`).
        Some(r)
            if r.of_home()
                && config_and_state()
                    .iter()
                    .any(|d| d.refused.as_ref().is_some_and(Refused::of_home)) =>
        {
            Ok(None)
        }
        Some(r) => Err(r),
        None => Ok(d.dir),
    }
}

/// The decisions `refused` says the refusals of: the configuration's and the state's.
fn config_and_state() -> [Decision; 2] {
    [
        decide("XDG_CONFIG_HOME", ".config"),
        decide("XDG_STATE_HOME", ".local/state"),
    ]
}

/// The directories the environment names that are not used, one line each (a `HOME` refused
/// for both uses is one line), for the command to say once.
pub fn refused() -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for d in config_and_state() {
        if let Some(r) = d.refused {
            let r = r.to_string();
            if !lines.contains(&r) {
                lines.push(r);
            }
        }
    }
    lines
}

/// `$var` if set (an absolute path), else `$HOME/<below_home>`; checked (see the module).
fn decide(var: &'static str, below_home: &str) -> Decision {
    decide_for(var, below_home, "a configuration or trash registry")
}

/// `decide`, saying `what` could be someone else's in a refusal.
fn decide_for(var: &'static str, below_home: &str, what: &'static str) -> Decision {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let (named, base, dir) = match (env(var), env("HOME")) {
        (Some(x), _) => (var, x.clone(), x),
        (None, Some(h)) => ("HOME", h.clone(), h.join(below_home)),
        (None, None) => {
            return Decision {
                dir: None,
                refused: None,
            }
        }
    };
    match why_untrusted(&base, rustix::process::geteuid().as_raw()) {
        None => Decision {
            dir: Some(dir),
            refused: None,
        },
        Some(why) => Decision {
            dir: None,
            refused: Some(Refused::Named {
                var: named,
                path: base,
                why,
                what,
            }),
        },
    }
}

/// Why `dir` (or its nearest existing ancestor) is not a directory of `me`'s own: owned by
/// another user than `me` or root (root: than root), or writable by others than its owner
/// (root: also by its group; a sticky one too, as anybody may make a name in it first).
pub fn why_untrusted(dir: &Path, me: u32) -> Option<String> {
    let mut at = Some(dir);
    while let Some(p) = at {
        match rustix::fs::stat(p) {
            Ok(st) => {
                let shown = if p == dir {
                    "it".to_string()
                } else {
                    format!(
                        "it does not exist and {} above it",
                        crate::sys::quote::quote(p)
                    )
                };
                let ft = rustix::fs::FileType::from_raw_mode(st.st_mode);
                if ft != rustix::fs::FileType::Directory {
                    return Some(format!("{shown} is not a directory"));
                }
                let owner_ok = st.st_uid == 0 || (me != 0 && st.st_uid == me);
                if !owner_ok {
                    return Some(format!(
                        "{shown} is owned by uid {}, not by {}",
                        st.st_uid,
                        if me == 0 {
                            "root".to_string()
                        } else {
                            format!("uid {me} or root")
                        }
                    ));
                }
                let open = if me == 0 { 0o022 } else { 0o002 };
                if st.st_mode & open != 0 {
                    return Some(format!(
                        "{shown} may be written by others (mode {:04o})",
                        st.st_mode & 0o7777
                    ));
                }
                return None;
            }
            Err(rustix::io::Errno::NOENT) => at = p.parent(),
            Err(e) => {
                return Some(format!(
                    "it cannot be examined ({})",
                    crate::sys::error::errno_text(e)
                ))
            }
        }
    }
    Some("no directory above it exists".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_ones_own_directories_are_trusted() {
        let me = rustix::process::geteuid().as_raw();
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(why_untrusted(d.path(), me), None);
        assert_eq!(why_untrusted(&d.path().join("not/yet"), me), None);
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(why_untrusted(d.path(), me).is_some_and(|w| w.contains("written by others")));
        assert!(why_untrusted(&d.path().join("x"), me).is_some_and(|w| w.contains("above it")));
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::write(d.path().join("f"), "").unwrap();
        assert!(why_untrusted(&d.path().join("f"), me).is_some());
        if me == 0 {
            let theirs = d.path().join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(4_000_000), None).unwrap();
            assert!(why_untrusted(&theirs, 0).is_some_and(|w| w.contains("uid 4000000")));
        }
    }
}
