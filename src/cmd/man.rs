//! `reclaim man DIR`: writes the man pages (`cli::generate`) into an existing directory and
//! prints each file's path.

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
            ExitCode::from(1)
        }
    }
}

/// Writes the pages into `dir`, which must be an existing directory (nothing is created but
/// the pages); returns their paths.
fn write(dir: &Path, pages: &[(String, Vec<u8>)]) -> std::io::Result<Vec<PathBuf>> {
    if !std::fs::metadata(dir)?.is_dir() {
        return Err(std::io::Error::from_raw_os_error(libc::ENOTDIR));
    }
    let mut written = Vec::new();
    for (name, text) in pages {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        written.push(path);
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
}
