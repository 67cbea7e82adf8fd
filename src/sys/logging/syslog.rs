//! syslog, through `/dev/log`: one datagram per line in the form the C library's `syslog(3)`
//! sends (RFC 3164: `<PRI>Mmm dd hh:mm:ss reclaim[PID]: MESSAGE`, local time), facility
//! daemon. A `/dev/log` that is a stream socket (some syslog-ng setups) gets the line with a
//! NUL after it, as glibc sends it. Not `libc::syslog`: its `openlog` is process-wide state,
//! and a test could not point it at a socket of its own.

use std::io::Write;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::path::Path;
use std::time::Duration;

use super::{Priority, Record};

/// The system's syslog socket.
pub const SOCKET: &str = "/dev/log";
/// Set to another socket to have lines sent there (tests).
pub const SOCKET_ENV: &str = "RECLAIM_SYSLOG_SOCKET";
/// LOG_DAEMON.
const FACILITY: u8 = 3;
/// The longest message sent (syslog daemons cut at 1 to 8 KiB anyway).
const MAX_MESSAGE: usize = 8 << 10;
const SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// The line for `message` at `t` (seconds since the epoch) from process `pid`.
pub fn format(priority: Priority, message: &str, t: f64, pid: u32) -> String {
    // The daemon stamps a line without a time when it receives it.
    let stamp = crate::sys::format::syslog_stamp(t).map_or_else(String::new, |s| s + " ");
    let mut text = message;
    if text.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text = &text[..end];
    }
    format!(
        "<{}>{stamp}reclaim[{pid}]: {text}",
        FACILITY * 8 + priority.level()
    )
}

/// Sends `rec`'s line to the syslog socket at `socket`.
pub fn send(socket: &Path, rec: &Record) -> std::io::Result<()> {
    let line = format(
        rec.priority,
        &rec.message,
        crate::sys::format::now_unix(),
        std::process::id(),
    );
    let sock = UnixDatagram::unbound()?;
    sock.set_write_timeout(Some(SEND_TIMEOUT))?;
    match sock.send_to(line.as_bytes(), socket) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EPROTOTYPE) => {
            let mut s = UnixStream::connect(socket)?;
            s.set_write_timeout(Some(SEND_TIMEOUT))?;
            s.write_all(&[line.as_bytes(), b"\0"].concat())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_what_syslog_3_sends_for_the_daemon_facility() {
        let l = format(
            Priority::Err,
            "cannot free '/v/x': Permission denied",
            0.0,
            42,
        );
        // <27> = daemon (3) * 8 + err (3).
        assert!(l.starts_with("<27>"), "{l}");
        assert!(
            l.ends_with(" reclaim[42]: cannot free '/v/x': Permission denied"),
            "{l}"
        );
        // `Mmm dd hh:mm:ss ` in local time, 16 bytes.
        let stamp = &l[4..20];
        assert_eq!(stamp.as_bytes()[3], b' ', "{l}");
        assert_eq!(&stamp[9..10], ":", "{l}");
        assert!(format(Priority::Info, "freed", 0.0, 1).starts_with("<30>"));
        let long = format(Priority::Info, &"é".repeat(MAX_MESSAGE), 0.0, 1);
        assert!(long.len() < MAX_MESSAGE + 64);
    }

    #[test]
    fn sends_one_datagram_per_line() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("log");
        let server = UnixDatagram::bind(&path).unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        send(&path, &Record::new(Priority::Notice, "left for later")).unwrap();
        let mut buf = [0u8; 1024];
        let n = server.recv(&mut buf).unwrap();
        let line = std::str::from_utf8(&buf[..n]).unwrap();
        assert!(line.starts_with("<29>"), "{line}");
        assert!(
            line.ends_with(&format!("reclaim[{}]: left for later", std::process::id())),
            "{line}"
        );
    }

    #[test]
    fn a_stream_socket_gets_the_line_and_a_nul() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("log");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let reader = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut c, &mut v).unwrap();
            v
        });
        send(&path, &Record::new(Priority::Info, "freed")).unwrap();
        let got = reader.join().unwrap();
        assert!(
            got.starts_with(b"<30>") && got.ends_with(b": freed\0"),
            "{got:?}"
        );
    }
}
