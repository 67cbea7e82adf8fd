//! `reclaim man DIR`: writes the man pages (`cli::generate`) into an existing directory, each
//! a fresh file that never follows or waits on a name someone else prepared there, and prints
//! each file's path.

use crate::cmd::exit::Exit;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `reclaim man DIR`: `pages` (file name, text) into `dir`.
pub fn run(dir: &Path, pages: &[(String, Vec<u8>)]) -> ExitCode {
    match write(dir, pages) {
        Ok(written) => {
            for p in written {
                println!("{}", p.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(n) => crate::sys::error::errno_text(rustix::io::Errno::from_raw_os_error(n)),
                None => e.to_string(),
            };
            eprintln!(
                "reclaim man: cannot write into {}: {why} (give an existing directory)",
                crate::sys::quote::quote(dir)
            );
            Exit::Failed.into()
        }
    }
}

/// Writes the pages into `dir`, which must be an existing directory (nothing is created but
/// the pages); returns their paths. Each page is a fresh file, made relative to the
/// directory's fd under a temporary `O_CREAT|O_EXCL|O_NOFOLLOW` name and renamed over its
/// name (`safefile::replace_mode`): a name someone else prepared there (a symlink, a FIFO, a
/// hard link) is replaced, never written through or waited on.
fn write(dir: &Path, pages: &[(String, Vec<u8>)]) -> std::io::Result<Vec<PathBuf>> {
    let os = |e: rustix::io::Errno| std::io::Error::from_raw_os_error(e.raw_os_error());
    let dir_fd = crate::sys::dirfd::open_dir_path(dir).map_err(os)?;
    let mut written = Vec::new();
    for (name, text) in pages {
        let file = std::ffi::CString::new(name.as_str())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        crate::trash::safefile::replace_mode(&dir_fd, &file, text, 0o644).map_err(os)?;
        written.push(dir.join(name));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    #[test]
    fn man_refuses_a_missing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nonexistent/x");
        let pages = vec![("reclaim.1".to_string(), b"x".to_vec())];
        assert!(super::write(&missing, &pages).is_err());
        assert!(!dir.path().join("nonexistent").exists());
    }

    #[test]
    fn man_replaces_planted_names_without_writing_through_them() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept");
        std::fs::write(&kept, "keep\n").unwrap();
        std::os::unix::fs::symlink(&kept, dir.path().join("reclaim-rm.1")).unwrap();
        std::fs::hard_link(&kept, dir.path().join("reclaim-status.1")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("reclaim-scan.1"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let pages: Vec<(String, Vec<u8>)> = ["reclaim-rm.1", "reclaim-status.1", "reclaim-scan.1"]
            .iter()
            .map(|n| (n.to_string(), b".TH page\n".to_vec()))
            .collect();
        super::write(dir.path(), &pages).unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), b"keep\n");
        for page in ["reclaim-rm.1", "reclaim-status.1", "reclaim-scan.1"] {
            let m = std::fs::symlink_metadata(dir.path().join(page)).unwrap();
            assert!(m.is_file(), "{page}: {m:?}");
        }
    }
}
