//! The format's own tools reclaim drives: `tar2sqfs` writes a squashfs image from a tar
//! stream, `sqfs2tar` reads one back as a tar stream (both squashfs-tools-ng, Debian package
//! `squashfs-tools-ng`). Owns finding them and starting them on an open file (an inherited
//! copy of its fd, named through `/proc/self/fd`, so that no path is looked up twice); never
//! decides anything.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::process::{Child, Command, Stdio};

/// Why a tool could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0} not found: reclaim pack writes and reads squashfs with squashfs-tools-ng (Debian: apt-get install squashfs-tools-ng)")]
    Missing(&'static str),
    #[error("{0}: {1}")]
    Start(&'static str, std::io::Error),
    #[error("{0} failed: {1}")]
    Failed(&'static str, String),
}

/// Compression of the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compressor {
    Zstd(u32),
    Lz4,
    Gzip,
    Xz,
}

impl Compressor {
    pub fn name(self) -> &'static str {
        match self {
            Compressor::Zstd(_) => "zstd",
            Compressor::Lz4 => "lz4",
            Compressor::Gzip => "gzip",
            Compressor::Xz => "xz",
        }
    }
}

impl Default for Compressor {
    /// zstd at level 3: as fast as lz4 on incompressible data here, and 3-4x smaller on text.
    fn default() -> Self {
        Compressor::Zstd(3)
    }
}

fn find(tool: &'static str) -> Result<std::path::PathBuf, ToolError> {
    crate::sys::safeopen::kernel::program(tool).ok_or(ToolError::Missing(tool))
}

/// A copy of `fd` the child inherits (a dup is not close-on-exec; ours is), and the path it
/// opens to reach it. Closed once the child started.
fn inherited(fd: BorrowedFd<'_>) -> Result<(OwnedFd, String), ToolError> {
    let copy = rustix::io::dup(fd).map_err(|e| ToolError::Start("dup", e.into()))?;
    let path = format!("/proc/self/fd/{}", copy.as_raw_fd());
    Ok((copy, path))
}

/// Starts `tar2sqfs` writing into the file `out`, reading tar from its stdin.
pub fn tar2sqfs(out: BorrowedFd<'_>, comp: Compressor, jobs: usize) -> Result<Child, ToolError> {
    let mut c = Command::new(find("tar2sqfs")?);
    c.args([
        "--quiet",
        "--force",
        "--no-skip",
        "--compressor",
        comp.name(),
    ]);
    if let Compressor::Zstd(level) = comp {
        c.args(["--comp-extra", &format!("level={level}")]);
    }
    let (_copy, path) = inherited(out)?;
    c.args(["--num-jobs", &jobs.max(1).to_string()])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(said()?);
    c.spawn().map_err(|e| ToolError::Start("tar2sqfs", e))
}

/// Starts `sqfs2tar` on the file `archive`: the tar stream on its stdout, the root directory
/// as "./".
pub fn sqfs2tar(archive: BorrowedFd<'_>) -> Result<Child, ToolError> {
    let mut c = Command::new(find("sqfs2tar")?);
    let (_copy, path) = inherited(archive)?;
    c.args(["--root-becomes", ".", "--no-skip"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(said()?);
    c.spawn().map_err(|e| ToolError::Start("sqfs2tar", e))
}

thread_local! {
    /// Where the last started tool writes its stderr (an unnamed file: a pipe nobody reads
    /// while it works could fill and stall it).
    static SAID: std::cell::RefCell<Option<std::fs::File>> = const { std::cell::RefCell::new(None) };
}

fn said() -> Result<Stdio, ToolError> {
    let f = crate::sys::safeopen::anonymous(c"reclaim-tool-stderr")
        .map_err(|e| ToolError::Start("stderr", e.into()))?;
    let child = f.try_clone().map_err(|e| ToolError::Start("stderr", e))?;
    SAID.with(|s| *s.borrow_mut() = Some(f));
    Ok(Stdio::from(child))
}

/// Waits for `child` (the last one started on this thread) and turns a failure into the
/// first lines it wrote on stderr.
pub fn wait(name: &'static str, mut child: Child) -> Result<(), ToolError> {
    use std::io::{Read, Seek};
    let status = child.wait().map_err(|e| ToolError::Start(name, e))?;
    let mut err = String::new();
    if let Some(mut f) = SAID.with(|s| s.borrow_mut().take()) {
        let _ = f.rewind();
        let _ = f.take(64 << 10).read_to_string(&mut err);
    }
    if status.success() {
        return Ok(());
    }
    let said: Vec<&str> = err
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .collect();
    Err(ToolError::Failed(
        name,
        if said.is_empty() {
            format!("{status}")
        } else {
            said.join("; ")
        },
    ))
}
