//! A program in a pseudo-terminal, its screen read back through a VT100 emulator (`vt100`):
//! what `reclaim browse`'s tests drive. Keys are written to the terminal's master side; every
//! byte the program writes is kept (to prove what never reached the terminal) and fed to the
//! emulator. Waits are for screen content with generous timeouts, never for a time.

use std::ffi::{CStr, OsStr};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a wait for the screen may take before the test fails (the machine may be loaded).
pub const PATIENCE: Duration = Duration::from_secs(90);

/// A running program on a terminal of its own.
pub struct Tty {
    pub child: Child,
    master: std::fs::File,
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

fn check(rc: libc::c_int, what: &str) {
    assert!(rc >= 0, "{what}: {}", std::io::Error::last_os_error());
}

/// A new pseudo-terminal of `cols` x `rows`: (master, the slave's path).
fn open_pty(cols: u16, rows: u16) -> (OwnedFd, std::path::PathBuf) {
    // SAFETY: plain libc calls on a descriptor this function owns; the name buffer is ours.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        check(fd, "posix_openpt");
        let master = OwnedFd::from_raw_fd(fd);
        check(libc::grantpt(fd), "grantpt");
        check(libc::unlockpt(fd), "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(
            libc::ptsname_r(fd, name.as_mut_ptr(), name.len()),
            0,
            "ptsname_r"
        );
        let path =
            std::path::PathBuf::from(OsStr::new(CStr::from_ptr(name.as_ptr()).to_str().unwrap()));
        set_size(&master, cols, rows);
        (master, path)
    }
}

fn set_size(master: &impl AsRawFd, cols: u16, rows: u16) {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads a winsize we own.
    check(
        unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) },
        "TIOCSWINSZ",
    );
}

impl Tty {
    /// Starts `cmd` with the terminal as its controlling terminal, stdin, stdout and stderr.
    pub fn spawn(mut cmd: Command, cols: u16, rows: u16) -> Tty {
        let (master, slave_path) = open_pty(cols, rows);
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&slave_path)
            .unwrap();
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: between fork and exec only async-signal-safe calls: a new session, and the
        // terminal on fd 0 made its controlling terminal.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start the program on its terminal");
        // Our copies of the slave are gone with `cmd`: the master reads EIO once it exits.
        drop(cmd);
        let master = std::fs::File::from(master);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (p, r) = (parser.clone(), raw.clone());
        let mut rd = master.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            let mut frames = Frames::default();
            loop {
                match rd.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        r.lock().unwrap().extend_from_slice(&buf[..n]);
                        let whole = frames.push(&buf[..n]);
                        p.lock().unwrap().process(&whole);
                    }
                }
            }
            p.lock().unwrap().process(&frames.rest());
        });
        Tty {
            child,
            master,
            parser,
            raw,
            reader: Some(reader),
        }
    }

    /// Types `keys`.
    pub fn send(&mut self, keys: &[u8]) {
        self.master.write_all(keys).unwrap();
        self.master.flush().unwrap();
    }

    /// The screen's text now, line by line (trailing blanks trimmed).
    pub fn screen(&self) -> String {
        let p = self.parser.lock().unwrap();
        p.screen()
            .rows(0, p.screen().size().1)
            .map(|l| l.trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every byte the program wrote so far.
    pub fn raw(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// Whether the program shows the alternate screen now, and hides the cursor.
    pub fn modes(&self) -> (bool, bool) {
        let p = self.parser.lock().unwrap();
        (p.screen().alternate_screen(), p.screen().hide_cursor())
    }

    /// The text of the row drawn in reverse video (the cursor's row of a list), if one is.
    pub fn reversed_row(&self, from: u16) -> Option<String> {
        let p = self.parser.lock().unwrap();
        let s = p.screen();
        let (rows, cols) = s.size();
        (from..rows.saturating_sub(2)).find_map(|r| {
            let inverse =
                (4..cols.min(12)).any(|c| s.cell(r, c).is_some_and(|cell| cell.inverse()));
            inverse.then(|| s.rows(0, cols).nth(r as usize).unwrap_or_default())
        })
    }

    /// Waits until the screen satisfies `ok`; returns it (the test fails with the screen after
    /// `PATIENCE`).
    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let t0 = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if t0.elapsed() > PATIENCE {
                panic!("waited {PATIENCE:?} for {what}; the screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the screen shows `text`.
    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?} on the screen"), |s| s.contains(text))
    }

    /// The terminal's size changes (the program gets SIGWINCH).
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.parser.lock().unwrap().set_size(rows, cols);
        set_size(&self.master, cols, rows);
    }

    /// The terminal's line discipline: whether it echoes and reads lines (cooked mode).
    pub fn cooked(&self) -> bool {
        // SAFETY: tcgetattr fills a termios we own.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        check(
            unsafe { libc::tcgetattr(self.master.as_raw_fd(), &mut t) },
            "tcgetattr",
        );
        t.c_lflag & (libc::ICANON | libc::ECHO) == (libc::ICANON | libc::ECHO)
    }

    /// Waits for the program to end (killing it after `PATIENCE`); its status.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
                return st;
            }
            if t0.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("the program did not end; the screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Tty {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The bytes a program writes, handed on a whole frame at a time: what it writes between the
/// start and the end of a synchronized update (DEC mode 2026, `ESC [ ? 2026 h` ... `l`) is held
/// until the end arrives, as a terminal that knows the mode shows it; so a screen read between
/// two reads of the pty never shows half a frame.
#[derive(Default)]
struct Frames {
    pending: Vec<u8>,
    in_frame: bool,
}

impl Frames {
    const BEGIN: &'static [u8] = b"\x1b[?2026h";
    const END: &'static [u8] = b"\x1b[?2026l";

    /// Takes `bytes`; returns what may be shown now.
    fn push(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            let mark = if self.in_frame {
                Self::END
            } else {
                Self::BEGIN
            };
            match find(&self.pending, mark) {
                Some(at) => {
                    out.extend(self.pending.drain(..at + mark.len()));
                    self.in_frame = !self.in_frame;
                }
                None if self.in_frame => return out,
                None => {
                    // All but a tail that may be the start of a mark cut by the read.
                    let keep = (1..mark.len())
                        .rev()
                        .find(|&k| self.pending.ends_with(&mark[..k]))
                        .unwrap_or(0);
                    let upto = self.pending.len() - keep;
                    out.extend(self.pending.drain(..upto));
                    return out;
                }
            }
        }
    }

    /// What is left when the program is gone.
    fn rest(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn frames_are_shown_whole() {
    let mut f = Frames::default();
    assert_eq!(f.push(b"a\x1b[?20"), b"a");
    assert_eq!(f.push(b"26hxy"), b"\x1b[?2026h");
    assert_eq!(f.push(b"z\x1b[?2026"), b"");
    assert_eq!(f.push(b"lb"), b"xyz\x1b[?2026lb");
    assert_eq!(f.push(b"\x1b[?2026hc"), b"\x1b[?2026h");
    assert_eq!(f.rest(), b"c");
}
