//! The FUSE file system: a root directory holding one file, `disk.img`, whose
//! reads and writes go to the backing file at the same offset and are replied
//! to only when the disk model says the emulated head has finished them.
//!
//! Owns: the backing file, the model instance, the trace writer, and the
//! FUSE-visible attributes. Requests are handled on fuser's single event-loop
//! thread, so the emulated disk serves strictly one request at a time (like a
//! spindle) and the kernel queues the rest.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, KernelConfig,
    LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyStatfs, ReplyWrite, Request, WriteFlags,
};

use crate::model::{Disk, Op};

pub const FILE_NAME: &str = "disk.img";
const FILE_INO: INodeNo = INodeNo(2);
const TTL: Duration = Duration::from_secs(1);
/// Largest single read/write request we ask the kernel for.
pub const MAX_IO: u32 = 1 << 20;

struct State {
    disk: Disk,
    backing: File,
    size: u64,
    trace: Option<BufWriter<File>>,
    /// Model time of the last trace flush (flushed about once a second).
    trace_flushed_at: f64,
}

pub struct SlowFs {
    state: Mutex<State>,
    /// Time zero of the model's virtual clock and of the trace.
    epoch: Instant,
    mtime: SystemTime,
}

impl SlowFs {
    /// A trace starts with `# epoch UNIX_SECONDS`: the wall-clock time of its time zero, so
    /// its requests line up with other logs.
    pub fn new(disk: Disk, backing: File, size: u64, trace: Option<File>) -> SlowFs {
        let epoch = Instant::now();
        let mtime = SystemTime::now();
        let trace = trace.map(|f| {
            let mut w = BufWriter::with_capacity(1 << 20, f);
            let unix = mtime
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default();
            let _ = writeln!(w, "# epoch {:.6}", unix.as_secs_f64());
            w
        });
        SlowFs {
            state: Mutex::new(State {
                disk,
                backing,
                size,
                trace,
                trace_flushed_at: 0.0,
            }),
            epoch,
            mtime,
        }
    }

    fn attr(&self, ino: INodeNo, size: u64) -> FileAttr {
        let dir = ino == INodeNo::ROOT;
        FileAttr {
            ino,
            size: if dir { 0 } else { size },
            blocks: if dir { 0 } else { size.div_ceil(512) },
            atime: self.mtime,
            mtime: self.mtime,
            ctime: self.mtime,
            crtime: self.mtime,
            kind: if dir {
                FileType::Directory
            } else {
                FileType::RegularFile
            },
            perm: if dir { 0o755 } else { 0o644 },
            nlink: if dir { 2 } else { 1 },
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn size(&self) -> u64 {
        self.state.lock().unwrap().size
    }

    /// Run `io` (the real backing I/O), then hold the reply until the model's
    /// completion time. The real time spent in `io` counts toward the delay,
    /// because we sleep until an absolute deadline. The state lock is held
    /// through the sleep: the head is busy, so even if several threads ever
    /// served requests, the disk would still do one at a time.
    fn timed<T>(&self, op: Op, off: u64, len: u64, io: impl FnOnce(&mut State) -> T) -> T {
        let arrive = self.epoch.elapsed().as_secs_f64();
        let mut st = self.state.lock().unwrap();
        let result = io(&mut st);
        let slot = st.disk.submit(arrive, op, off, len);
        let st = &mut *st;
        if let Some(w) = st.trace.as_mut() {
            // Trace errors are not worth failing I/O over.
            let _ = writeln!(
                w,
                "{:.6} {} {} {} {:.3} {:.3}",
                arrive,
                op.name(),
                off,
                len,
                (slot.start - arrive) * 1e3,
                slot.service * 1e3
            );
            if arrive - st.trace_flushed_at >= 1.0 {
                let _ = w.flush();
                st.trace_flushed_at = arrive;
            }
        }
        let deadline = self.epoch + Duration::from_secs_f64(slot.done);
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        result
    }
}

fn errno(e: &std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Filesystem for SlowFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Default timer slack (50 us) would add to every modelled delay.
        // SAFETY: prctl with integer arguments only affects this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
        // Ask for 1 MiB requests; on refusal take the nearest allowed value.
        if let Err(nearest) = config.set_max_write(MAX_IO) {
            let _ = config.set_max_write(nearest);
        }
        if let Err(nearest) = config.set_max_readahead(MAX_IO) {
            let _ = config.set_max_readahead(nearest);
        }
        Ok(())
    }

    fn destroy(&mut self) {
        if let Some(w) = self.state.get_mut().unwrap().trace.as_mut() {
            let _ = w.flush();
        }
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == FILE_NAME {
            reply.entry(
                &TTL,
                &self.attr(FILE_INO, self.size()),
                fuser::Generation(0),
            );
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino == INodeNo::ROOT || ino == FILE_INO {
            reply.attr(&TTL, &self.attr(ino, self.size()));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    /// Only growing the file is honoured (a disk does not shrink); mode, owner
    /// and time changes are ignored.
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if ino != FILE_INO {
            return reply.attr(&TTL, &self.attr(ino, 0));
        }
        let mut st = self.state.lock().unwrap();
        if let Some(new) = size.filter(|&s| s > st.size) {
            if let Err(e) = st.backing.set_len(new) {
                return reply.error(errno(&e));
            }
            st.size = new;
            st.disk.set_capacity(new);
        }
        reply.attr(&TTL, &self.attr(ino, st.size));
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino != FILE_INO {
            return reply.error(Errno::EISDIR);
        }
        // Bypass the FUSE page cache: every read/write reaches the model.
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let res = self.timed(Op::Read, offset, size as u64, |st| {
            let len = st.size.saturating_sub(offset).min(size as u64) as usize;
            let mut buf = vec![0u8; len];
            let mut done = 0;
            while done < len {
                match st.backing.read_at(&mut buf[done..], offset + done as u64) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            buf.truncate(done);
            Ok(buf)
        });
        match res {
            Ok(buf) => reply.data(&buf),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let res = self.timed(Op::Write, offset, data.len() as u64, |st| {
            // The emulated disk has a fixed size.
            if offset + data.len() as u64 > st.size {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            st.backing.write_all_at(data, offset)
        });
        match res {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    /// close(2): not a disk operation.
    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    /// fsync/fdatasync (what the loop device sends for a block-layer FLUSH):
    /// waits for the head, then pays the cache-flush constant. The backing
    /// file is deliberately not fsynced: only the delay matters.
    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.timed(Op::Flush, 0, 0, |_| ());
        reply.ok();
    }

    /// Discards from the loop device arrive as fallocate(PUNCH_HOLE); pass the
    /// mode through to the backing file.
    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let res = self.timed(Op::Discard, offset, length, |st| {
            // SAFETY: plain syscall on a file descriptor we own.
            let rc = unsafe {
                libc::fallocate(
                    st.backing.as_raw_fd(),
                    mode,
                    offset as libc::off_t,
                    length as libc::off_t,
                )
            };
            if rc == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
        match res {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (FILE_INO, FileType::RegularFile, FILE_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = self.size().div_ceil(4096);
        reply.statfs(blocks, 0, 0, 2, 0, 4096, 255, 4096);
    }
}
