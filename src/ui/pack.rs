//! `reclaim pack` and `reclaim unpack`'s words: the progress line (TTY only, stderr), the
//! summary, and the `--json` objects (`PackReport`, `UnpackReport`: printed exactly). Says
//! what the engine did; decides nothing.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::engine::pack::unpack::Unpacked;
use crate::engine::pack::{Event, PackOutcome};
use crate::sys::format::{bytes, group, plural};
use crate::sys::quote::{quote, PathField};

/// A spinner with what pack or unpack is doing, on a terminal's stderr; nothing otherwise
/// (or with `--json`).
pub struct Progress {
    bar: Option<ProgressBar>,
    /// Entries listed (the total of "packing N/M").
    total: AtomicU64,
}

impl Progress {
    pub fn start(json: bool) -> Progress {
        let bar = (!json && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
            b.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("template"));
            b.enable_steady_tick(std::time::Duration::from_millis(100));
            b
        });
        Progress {
            bar,
            total: AtomicU64::new(0),
        }
    }

    /// What the pack engine reported.
    pub fn event(&self, e: Event) {
        let Some(b) = &self.bar else { return };
        let msg = match e {
            Event::Listed { entries } => {
                self.total.store(entries, Ordering::Relaxed);
                format!("listed {} entries", group(entries))
            }
            Event::Packing { entries, bytes: n } => format!(
                "packing {}/{} entries, {}",
                group(entries),
                group(self.total.load(Ordering::Relaxed)),
                bytes(n)
            ),
            Event::Verifying { entries, bytes: n } => {
                format!("verifying {} entries, {}", group(entries), bytes(n))
            }
            Event::Archived => "archive verified; removing the originals".into(),
            Event::Removing { files, dirs } => format!(
                "removing originals: {} and {}",
                plural(files, "file", "files"),
                plural(dirs, "directory", "directories")
            ),
            Event::Resuming => "found this directory's archive: verifying it again".into(),
        };
        b.set_message(msg);
    }

    /// Unpack's progress: entries and bytes restored so far.
    pub fn unpacked(&self, entries: u64, n: u64) {
        if let Some(b) = &self.bar {
            b.set_message(format!("unpacked {} entries, {}", group(entries), bytes(n)));
        }
    }

    pub fn clear(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// An entry left in place (pack) or not restored (unpack), and why.
#[derive(Debug, Serialize)]
pub struct Stayed {
    #[serde(flatten)]
    pub path: PathField,
    pub reason: String,
}

/// What `reclaim pack` did; `--json` prints exactly this.
#[derive(Debug, Serialize)]
pub struct PackReport {
    pub dir: PathField,
    pub archive: PathField,
    pub resumed: bool,
    pub already_done: bool,
    pub entries: u64,
    pub files: u64,
    pub bytes: u64,
    pub archive_bytes: u64,
    pub compressor: String,
    pub removed_files: u64,
    pub removed_dirs: u64,
    pub stayed: Vec<Stayed>,
    /// Entries a mount shows less exactly than `reclaim unpack` restores them.
    pub subsecond_times: u64,
    pub acls: u64,
    pub other_xattrs: u64,
    /// How the archive was mounted on the directory (`kernel`, `squashfuse`), with --mount.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mounted: Option<&'static str>,
    /// Where the packed directory is now, with the archive mounted on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mounted_on: Option<PathField>,
    /// Why the archive was not mounted, with --mount.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_mounted: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fstab: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<PathField>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<i32>,
    pub elapsed_s: f64,
}

impl PackReport {
    pub fn new(dir: &Path, out: &PackOutcome, elapsed_s: f64) -> PackReport {
        PackReport {
            dir: PathField::new(dir),
            archive: PathField::new(&out.archive),
            resumed: out.resumed,
            already_done: out.already_done,
            entries: out.entries,
            files: out.files,
            bytes: out.bytes,
            archive_bytes: out.archive_bytes,
            compressor: out.compressor.clone(),
            removed_files: out.removed_files,
            removed_dirs: out.removed_dirs,
            stayed: out
                .stayed
                .iter()
                .map(|f| Stayed {
                    path: PathField::new(&f.path),
                    reason: f.reason.to_string(),
                })
                .collect(),
            subsecond_times: out.subsecond,
            acls: out.acls,
            other_xattrs: out.other_xattrs,
            mounted: None,
            mounted_on: None,
            not_mounted: out.not_mounted.clone(),
            fstab: None,
            unit: None,
            interrupted: out.interrupted,
            elapsed_s,
        }
    }
}

/// One JSON object and a newline.
pub fn json(r: &impl Serialize) -> String {
    serde_json::to_string(r).expect("report serializes") + "\n"
}

/// The summary of a pack of `dir` (`keep`: the originals were kept on purpose).
pub fn summary(out: &PackOutcome, r: &PackReport, dir: &Path, keep: bool) -> String {
    if out.already_done {
        return format!(
            "{} is already packed into {} (nothing left to remove)\n",
            quote(dir),
            quote(&out.archive)
        );
    }
    let mut s = packed_line(out);
    if keep {
        s += "originals kept (--keep)\n";
    } else {
        s += &format!(
            "removed {} and {}{}\n",
            plural(out.removed_files, "file", "files"),
            plural(out.removed_dirs, "directory", "directories"),
            if out.stayed.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} stayed (listed above)",
                    plural(out.stayed.len() as u64, "entry", "entries")
                )
            }
        );
    }
    s += &only_unpack(out);
    s += &mounted(r, &out.archive, dir);
    s
}

/// What went into the archive, and how big it is.
fn packed_line(out: &PackOutcome) -> String {
    let ratio = if out.bytes == 0 {
        String::new()
    } else if out.archive_bytes <= out.bytes {
        format!(
            ", {:.0}% of the data",
            100.0 * out.archive_bytes as f64 / out.bytes as f64
        )
    } else {
        // An archive's own tables and blocks outweigh a few bytes of data: a percentage
        // ("225250% of the data") says nothing a reader can use.
        ", more than the data itself (its own tables and blocks)".to_string()
    };
    format!(
        "{} {} ({}, {} of data) into {}: {}{ratio}, {}; every entry read back and compared\n",
        if out.resumed {
            "resumed: the archive holds"
        } else {
            "packed"
        },
        plural(out.entries, "entry", "entries"),
        plural(out.files, "file", "files"),
        bytes(out.bytes),
        quote(&out.archive),
        bytes(out.archive_bytes),
        out.compressor,
    )
}

/// What only `reclaim unpack` gives back exactly (a mount shows less).
fn only_unpack(out: &PackOutcome) -> String {
    let mut only = Vec::new();
    if out.subsecond > 0 {
        only.push(format!(
            "{} with sub-second times (a mount shows whole seconds)",
            group(out.subsecond)
        ));
    }
    if out.acls > 0 {
        only.push(format!(
            "{} with ACLs (a mount shows no ACL and never more access than it gave)",
            group(out.acls)
        ));
    }
    if out.other_xattrs > 0 {
        only.push(format!(
            "{} with xattrs outside user./trusted./security.",
            group(out.other_xattrs)
        ));
    }
    if only.is_empty() {
        return String::new();
    }
    format!(
        "exact only through `reclaim unpack` (the manifest keeps it): {}\n",
        only.join("; ")
    )
}

/// With --mount: where it is mounted, and how to mount it at boot.
fn mounted(r: &PackReport, archive: &Path, dir: &Path) -> String {
    let mut s = String::new();
    if let Some(how) = r.mounted {
        let on = r
            .mounted_on
            .as_ref()
            .map_or_else(|| dir.to_path_buf(), |p| p.exact());
        s += &format!(
            "mounted {} on {} ({how}, read-only; checked against the manifest before anything was removed)\n",
            quote(archive),
            quote(&on)
        );
    }
    if let Some(line) = &r.fstab {
        s += &format!("to mount it at boot, add to /etc/fstab:\n{line}\n");
    }
    if let Some(u) = &r.unit {
        let name = Path::new(&u.exact())
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        s += &format!("wrote {u} (enable it: systemctl enable --now {name})\n");
    }
    s
}

/// What `reclaim unpack` did; `--json` prints exactly this.
#[derive(Debug, Serialize)]
pub struct UnpackReport {
    pub archive: PathField,
    pub dest: PathField,
    pub entries: u64,
    pub files: u64,
    pub bytes: u64,
    pub manifest: bool,
    pub owners_not_restored: u64,
    /// Root unpacked another user's archive as that user would (the archive's owner).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_user: Option<u32>,
    pub failed: Vec<Stayed>,
    pub elapsed_s: f64,
}

impl UnpackReport {
    pub fn new(archive: &Path, dest: &Path, u: &Unpacked, elapsed_s: f64) -> UnpackReport {
        UnpackReport {
            archive: PathField::new(archive),
            dest: PathField::new(dest),
            entries: u.entries,
            files: u.files,
            bytes: u.bytes,
            manifest: u.manifest,
            owners_not_restored: u.owners_kept,
            as_user: u.as_user,
            failed: u
                .failed
                .iter()
                .map(|(p, why)| Stayed {
                    path: PathField::new(p),
                    reason: why.to_string(),
                })
                .collect(),
            elapsed_s,
        }
    }
}

/// The summary of an unpack into `dest`.
pub fn unpacked(u: &Unpacked, dest: &Path) -> String {
    let mut s = format!(
        "unpacked {} ({}, {}) into {}{}\n",
        plural(u.entries, "entry", "entries"),
        plural(u.files, "file", "files"),
        bytes(u.bytes),
        quote(dest),
        match (u.manifest, u.failed.len()) {
            (true, 0) => "; contents checked against the manifest, times and ACLs exact".into(),
            (true, n) => format!(
                "; checked against the manifest: {} did not match (listed above)",
                plural(n as u64, "entry", "entries")
            ),
            (false, _) =>
                "; no reclaim manifest: times to the second, no ACLs, contents not checked".into(),
        }
    );
    if let Some(uid) = u.as_user {
        s += &format!(
            "the archive is uid {uid}'s: unpacked as that user would get it (owners yours, no \
             setuid, setgid or sticky bits, your umask, no device nodes, only user. xattrs); \
             --same-owner restores it as it says\n"
        );
    }
    if u.owners_kept > 0 {
        s += &format!(
            "{} keep your own owner (only root gives files to others)\n",
            plural(u.owners_kept, "entry", "entries")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(bytes: u64, archive_bytes: u64) -> String {
        packed_line(&PackOutcome {
            archive: "d.sqfs".into(),
            entries: 3,
            files: 2,
            bytes,
            archive_bytes,
            compressor: "zstd".into(),
            ..PackOutcome::default()
        })
    }

    #[test]
    fn the_archive_is_said_as_a_share_of_the_data_only_when_smaller() {
        assert!(packed(1 << 20, 1 << 18).contains(": 256.0 KiB, 25% of the data, zstd;"));
        let tiny = packed(18, 40_960);
        assert!(tiny.contains("more than the data itself"), "{tiny}");
        assert!(!tiny.contains('%'), "{tiny}");
        assert!(!packed(0, 4096).contains("data itself"));
    }
}
