//! Mounting a squashfs image on a directory that was checked, never on a path: as root the
//! kernel's squashfs through a loop device set up from the image's own fd (`LOOP_CONFIGURE`),
//! mounted with the kernel's mount API (`fsopen`/`fsconfig`/`fsmount`, read-only, `nosuid`,
//! `nodev`) as a detached mount that is attached to the directory's fd later
//! (`move_mount(MOVE_MOUNT_F_EMPTY_PATH|MOVE_MOUNT_T_EMPTY_PATH)`); for other users
//! `squashfuse`, handed both as `/proc/self/fd/N`, and checked afterwards to have landed on
//! that very directory (else unmounted again). Never mounts by a path someone could swap.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{
    fsconfig_create, fsconfig_set_flag, fsconfig_set_string, fsmount, fsopen, move_mount,
    FsMountFlags, FsOpenFlags, MountAttrFlags, MoveMountFlags,
};

/// Why an image was not mounted.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("{0} not found (Debian: apt-get install {1})")]
    Missing(&'static str, &'static str),
    #[error("no free loop device: {}", crate::sys::error::errno_text(*.0))]
    Loop(Errno),
    #[error("the kernel refused to mount it ({what}): {}", crate::sys::error::errno_text(*.errno))]
    Kernel { what: &'static str, errno: Errno },
    #[error("{0} failed: {1}")]
    Failed(&'static str, String),
}

/// A squashfs image mounted by the kernel and attached nowhere yet: read through `root`,
/// attached with `attach`, gone when dropped unattached (nothing to unmount).
#[derive(Debug)]
pub struct Detached {
    mnt: OwnedFd,
}

impl Detached {
    /// The mount's root directory, open for reading.
    pub fn root(&self) -> Result<OwnedFd, Errno> {
        super::reopen_dir(&self.mnt)
    }

    /// Attaches the mount on the directory `dir` (an fd the caller checked): it covers that
    /// very directory, wherever it is now.
    pub fn attach(self, dir: impl AsFd) -> Result<(), Errno> {
        move_mount(
            &self.mnt,
            c"",
            dir,
            c"",
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
        )
    }
}

/// Mounts the squashfs `image` (an open regular file) read-only with the kernel's squashfs
/// through a loop device made from that fd; root only.
pub fn squashfs_detached(image: impl AsFd) -> Result<Detached, MountError> {
    let (dev, source) = loop_device(image.as_fd())?;
    let kernel = |what: &'static str| move |errno| MountError::Kernel { what, errno };
    let fs = fsopen("squashfs", FsOpenFlags::FSOPEN_CLOEXEC).map_err(kernel("fsopen"))?;
    // The kernel looks the block device up by name (never in /proc: it is mounted nodev), in
    // root's /dev, where `loop_device` checked the name is the device it set up.
    fsconfig_set_string(&fs, "source", source.as_str()).map_err(kernel("source"))?;
    // A read-only super block: the loop device is read-only.
    fsconfig_set_flag(&fs, "ro").map_err(kernel("ro"))?;
    fsconfig_create(&fs).map_err(kernel("create"))?;
    let mnt = fsmount(
        &fs,
        FsMountFlags::FSMOUNT_CLOEXEC,
        MountAttrFlags::MOUNT_ATTR_RDONLY
            | MountAttrFlags::MOUNT_ATTR_NOSUID
            | MountAttrFlags::MOUNT_ATTR_NODEV,
    )
    .map_err(kernel("fsmount"))?;
    // The loop device detaches itself once the last mount of it is gone (autoclear).
    drop(dev);
    Ok(Detached { mnt })
}

const LOOP_MAJOR: u32 = 7;
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LO_FLAGS_READ_ONLY: u32 = 1;
const LO_FLAGS_AUTOCLEAR: u32 = 4;

#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// Opens a device node of `/dev` (root's directory) without following a symlink, checked to
/// be of `kind` with major number `major`.
fn open_dev(path: &str, kind: FileType, major: u32) -> Result<OwnedFd, Errno> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != kind || rustix::fs::major(st.st_rdev) != major {
        return Err(Errno::NODEV);
    }
    Ok(fd)
}

/// A free loop device, set up read-only (and to detach itself when unused) on `image`'s fd,
/// and its name in `/dev`.
fn loop_device(image: std::os::fd::BorrowedFd<'_>) -> Result<(OwnedFd, String), MountError> {
    const MISC_MAJOR: u32 = 10;
    let ctl = open_dev("/dev/loop-control", FileType::CharacterDevice, MISC_MAJOR)
        .map_err(MountError::Loop)?;
    for _ in 0..16 {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number.
        let n = unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_GET_FREE) };
        if n < 0 {
            return Err(MountError::Loop(Errno::from_raw_os_error(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            )));
        }
        let name = format!("/dev/loop{n}");
        let dev = open_dev(&name, FileType::BlockDevice, LOOP_MAJOR).map_err(MountError::Loop)?;
        // SAFETY: an all-zero loop_config is a valid value of this plain C struct.
        let mut cfg: LoopConfig = unsafe { std::mem::zeroed() };
        cfg.fd = image.as_raw_fd() as u32;
        cfg.info.lo_flags = LO_FLAGS_READ_ONLY | LO_FLAGS_AUTOCLEAR;
        // SAFETY: LOOP_CONFIGURE reads one loop_config, which lives for the call.
        let rc = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CONFIGURE, &cfg) };
        if rc == 0 {
            return Ok((dev, name));
        }
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        // Taken by someone else between GET_FREE and CONFIGURE: try the next one.
        if e != libc::EBUSY {
            return Err(MountError::Loop(Errno::from_raw_os_error(e)));
        }
    }
    Err(MountError::Loop(Errno::BUSY))
}

/// Mounts `image` with `squashfuse` on the directory `dir` (both checked by the caller),
/// handed to it as `/proc/self/fd/N`. The tool resolves that to a path before it mounts, so
/// the caller checks where the mount landed (`sys::mounts::landed`) and unmounts it
/// (`fuse_unmount`) if that is not `dir` itself.
pub fn squashfuse(image: impl AsFd, dir: impl AsFd) -> Result<(), MountError> {
    let tool = super::kernel::program("squashfuse")
        .ok_or(MountError::Missing("squashfuse", "squashfuse"))?;
    // Inherited copies (a dup is not close-on-exec), gone when this returns.
    let dup = |fd: std::os::fd::BorrowedFd<'_>| {
        rustix::io::dup(fd).map_err(|e| MountError::Failed("dup", e.to_string()))
    };
    let (img, at) = (dup(image.as_fd())?, dup(dir.as_fd())?);
    let out = Command::new(tool)
        .arg(format!("/proc/self/fd/{}", img.as_raw_fd()))
        .arg(format!("/proc/self/fd/{}", at.as_raw_fd()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| MountError::Failed("squashfuse", e.to_string()))?;
    drop((img, at));
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = said
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .collect();
    Err(MountError::Failed(
        "squashfuse",
        if said.is_empty() {
            out.status.to_string()
        } else {
            said.join("; ")
        },
    ))
}

/// Unmounts (lazily: a reader keeps what it has open) the FUSE mount at `point`, as the mount
/// table names it, with `fusermount3` (which unmounts only the caller's own FUSE mounts).
pub fn fuse_unmount(point: &Path) -> Result<(), MountError> {
    let tool = ["fusermount3", "fusermount"]
        .into_iter()
        .find_map(super::kernel::program)
        .ok_or(MountError::Missing("fusermount3", "fuse3"))?;
    let out = Command::new(tool)
        .args(["-u", "-z", "--"])
        .arg(point)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| MountError::Failed("fusermount3", e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(MountError::Failed(
            "fusermount3",
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}
