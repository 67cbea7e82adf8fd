//! Keeping the old paths readable: the archive mounted read-only on the emptied directory
//! (root: the kernel's squashfs through a loop device, `mount(8)`; others: `squashfuse`),
//! the fstab line that mounts it at boot, and a systemd `.mount` unit. Owns those texts;
//! mounts only on the directory it is given, only when that directory is empty.

use std::path::Path;
use std::process::Command;

/// How the archive was mounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Kernel,
    Fuse,
}

/// Why it was not mounted.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("{} is not empty (what stayed would be hidden under the mount); not mounting", crate::sys::quote::quote(.0))]
    NotEmpty(std::path::PathBuf),
    #[error("{0} not found (Debian: apt-get install {1})")]
    Missing(&'static str, &'static str),
    #[error("{0} failed: {1}")]
    Failed(&'static str, String),
}

/// Mounts `archive` read-only on the empty directory `dir`.
pub fn mount(archive: &Path, dir: &Path) -> Result<How, MountError> {
    let empty = std::fs::read_dir(dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false);
    if !empty {
        return Err(MountError::NotEmpty(dir.to_path_buf()));
    }
    let root = rustix::process::geteuid().is_root();
    let (tool, pkg, how) = if root {
        ("mount", "mount", How::Kernel)
    } else {
        ("squashfuse", "squashfuse", How::Fuse)
    };
    let mut c = Command::new(tool);
    if root {
        c.args(["-t", "squashfs", "-o", "ro,loop,nodev,nosuid"]);
    }
    c.arg(archive).arg(dir);
    let out = c.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => MountError::Missing(tool, pkg),
        _ => MountError::Failed(tool, e.to_string()),
    })?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(MountError::Failed(
            tool,
            if said.is_empty() {
                out.status.to_string()
            } else {
                said
            },
        ));
    }
    Ok(how)
}

/// fstab escapes blanks and backslashes in its fields as octal.
fn fstab_field(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::new();
    for &b in p.as_os_str().as_bytes() {
        match b {
            b' ' | b'\t' | b'\n' | b'\\' | b'#' => s.push_str(&format!("\\{b:03o}")),
            _ => s.push(b as char),
        }
    }
    s
}

/// The /etc/fstab line that mounts `archive` on `dir` at boot (`nofail`: a missing archive
/// does not stop the boot).
pub fn fstab_line(archive: &Path, dir: &Path) -> String {
    format!(
        "{} {} squashfs ro,loop,nodev,nosuid,nofail 0 0",
        fstab_field(archive),
        fstab_field(dir)
    )
}

/// systemd's escaping of a path into a unit name (`systemd-escape --path`).
pub fn unit_name(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let bytes = dir.as_os_str().as_bytes();
    let trimmed: Vec<&[u8]> = bytes
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty())
        .collect();
    if trimmed.is_empty() {
        return "-.mount".into();
    }
    let mut s = String::new();
    for (i, comp) in trimmed.iter().enumerate() {
        if i > 0 {
            s.push('-');
        }
        for (j, &b) in comp.iter().enumerate() {
            let plain = b.is_ascii_alphanumeric()
                || b == b'_'
                || b == b':'
                || (b == b'.' && !(i == 0 && j == 0));
            if plain {
                s.push(b as char);
            } else {
                s.push_str(&format!("\\x{b:02x}"));
            }
        }
    }
    s.push_str(".mount");
    s
}

/// The text of a systemd `.mount` unit for `archive` on `dir`.
pub fn unit_text(archive: &Path, dir: &Path) -> String {
    format!(
        "# Written by reclaim pack: {dir} packed into {archive}.\n\
         [Unit]\n\
         Description=reclaim pack of {dir} (read-only)\n\
         \n\
         [Mount]\n\
         What={archive}\n\
         Where={dir}\n\
         Type=squashfs\n\
         Options=ro,loop,nodev,nosuid\n\
         \n\
         [Install]\n\
         WantedBy=local-fs.target\n",
        dir = dir.display(),
        archive = archive.display()
    )
}

/// Writes the unit into `units` (a directory, e.g. /etc/systemd/system), never over an
/// existing file; returns its path.
pub fn write_unit(units: &Path, archive: &Path, dir: &Path) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = units.join(unit_name(dir));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)?;
    f.write_all(unit_text(archive, dir).as_bytes())?;
    f.sync_all()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_names_are_systemd_escape_path() {
        // As `systemd-escape --path --suffix=mount` prints them.
        assert_eq!(
            unit_name(Path::new("/srv/old data")),
            "srv-old\\x20data.mount"
        );
        assert_eq!(unit_name(Path::new("/srv/a-b/.c")), "srv-a\\x2db-.c.mount");
        assert_eq!(unit_name(Path::new("/.x")), "\\x2ex.mount");
    }

    #[test]
    fn fstab_fields_escape_blanks() {
        assert_eq!(
            fstab_line(Path::new("/a b.sqfs"), Path::new("/a b")),
            "/a\\040b.sqfs /a\\040b squashfs ro,loop,nodev,nosuid,nofail 0 0"
        );
    }
}
