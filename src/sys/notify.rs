//! systemd's service notification protocol (`sd_notify(3)`): newline-separated `KEY=VALUE`
//! lines in one datagram to the `AF_UNIX` socket named by `$NOTIFY_SOCKET` (a path, or an
//! abstract name written with a leading `@`), and the watchdog's interval from
//! `$WATCHDOG_USEC` (for this process only, when `$WATCHDOG_PID` names another). Written here
//! rather than taken from the `sd-notify` crate, which cannot reach an abstract socket. Sending
//! never blocks and never fails the caller: systemd not listening is no error of the service.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// The environment variables of the protocol.
pub const SOCKET_ENV: &str = "NOTIFY_SOCKET";
pub const WATCHDOG_USEC_ENV: &str = "WATCHDOG_USEC";
pub const WATCHDOG_PID_ENV: &str = "WATCHDOG_PID";

/// Where notifications go: the service manager's socket.
pub struct Notifier {
    sock: UnixDatagram,
    to: SocketAddr,
}

impl Notifier {
    /// The socket `$NOTIFY_SOCKET` names; `None` when it is unset or names no socket address
    /// (neither an absolute path nor `@name`).
    pub fn from_env() -> Option<Notifier> {
        let name = std::env::var_os(SOCKET_ENV)?;
        let to = address(name.as_encoded_bytes())?;
        let sock = UnixDatagram::unbound().ok()?;
        sock.set_nonblocking(true).ok()?;
        Some(Notifier { sock, to })
    }

    /// Sends `lines` (`READY=1`, `STATUS=...`) as one datagram. A line's newlines would start
    /// other assignments: they are sent as spaces.
    pub fn send(&self, lines: &[&str]) -> std::io::Result<()> {
        let msg: Vec<String> = lines.iter().map(|l| l.replace('\n', " ")).collect();
        self.sock
            .send_to_addr(msg.join("\n").as_bytes(), &self.to)
            .map(|_| ())
    }
}

/// `$NOTIFY_SOCKET`'s value as a socket address: `@name` is the abstract `name`, an absolute
/// path a path.
fn address(v: &[u8]) -> Option<SocketAddr> {
    match v.first()? {
        b'@' => SocketAddr::from_abstract_name(&v[1..]).ok(),
        b'/' => {
            let p = std::path::Path::new(std::ffi::OsStr::from_bytes(v));
            SocketAddr::from_pathname(p).ok()
        }
        _ => None,
    }
}

/// How often to send `WATCHDOG=1`: half the interval `$WATCHDOG_USEC` gives, if it is meant
/// for this process (`$WATCHDOG_PID` unset or this pid).
pub fn watchdog_every() -> Option<Duration> {
    let usec: u64 = std::env::var(WATCHDOG_USEC_ENV).ok()?.trim().parse().ok()?;
    if let Ok(pid) = std::env::var(WATCHDOG_PID_ENV) {
        if pid.trim().parse::<u32>().ok() != Some(std::process::id()) {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec) / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abstract_names_and_paths_are_addresses_and_nothing_else_is() {
        let a = address(b"@reclaim-test").unwrap();
        assert_eq!(a.as_abstract_name(), Some(&b"reclaim-test"[..]));
        let p = address(b"/run/systemd/notify").unwrap();
        assert_eq!(
            p.as_pathname(),
            Some(std::path::Path::new("/run/systemd/notify"))
        );
        assert!(address(b"relative/path").is_none());
        assert!(address(b"").is_none());
    }

    #[test]
    fn lines_reach_a_datagram_socket_in_one_message() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        let n = Notifier {
            sock: UnixDatagram::unbound().unwrap(),
            to: address(path.as_os_str().as_bytes()).unwrap(),
        };
        n.send(&["READY=1", "STATUS=two\nlines"]).unwrap();
        let mut buf = [0u8; 256];
        let len = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1\nSTATUS=two lines");
    }
}
