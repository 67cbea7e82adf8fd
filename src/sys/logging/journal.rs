//! systemd's journal, through its native protocol: one datagram per record to
//! `/run/systemd/journal/socket`, each field `NAME=value\n`, or `NAME\n` + the value's length
//! (64-bit little-endian) + the value + `\n` when the value holds a newline; a record too large
//! for a datagram goes in a sealed memfd passed with `SCM_RIGHTS` (systemd's
//! JOURNAL_NATIVE_PROTOCOL). Chosen over `<N>` prefixes on stderr because the journal then keeps
//! the path, entry, sizes and reason as fields of their own (exact bytes, `journalctl
//! RECLAIM_ENTRY=...`), not only inside a line; the prefixes are the fallback when the socket
//! cannot take a record. Hand-written (a few lines over std and rustix) rather than a crate:
//! `systemd-journal-logger` wants the `log` facade, `libsystemd` brings nix and more, and
//! neither lets a test point the writer at its own socket.

use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::Duration;

use super::Record;

/// The journal's native socket.
pub const SOCKET: &str = "/run/systemd/journal/socket";
/// Set to another socket to have records sent there (tests).
pub const SOCKET_ENV: &str = "RECLAIM_JOURNAL_SOCKET";
/// How long a send may wait for a journal that does not read: then the line goes to stderr.
const SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether stderr is the journal's stream: systemd sets `JOURNAL_STREAM=DEV:INO` to it, and a
/// service's child that redirected stderr elsewhere keeps the variable, so the device and
/// inode must match (systemd.exec(5)).
pub fn stderr_is_journal() -> bool {
    let Some(v) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = v.to_str().and_then(parse_stream) else {
        return false;
    };
    rustix::fs::fstat(std::io::stderr().as_fd())
        .is_ok_and(|st| st.st_dev == dev && st.st_ino == ino)
}

/// `DEV:INO` of `JOURNAL_STREAM` (both decimal).
fn parse_stream(v: &str) -> Option<(u64, u64)> {
    let (dev, ino) = v.split_once(':')?;
    Some((dev.parse().ok()?, ino.parse().ok()?))
}

/// Whether `name` may name a field a client sends: capital letters, digits and `_`, not
/// starting with `_` (those are the journal's own, trusted ones) or a digit, at most 64 bytes.
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && !b[0].is_ascii_digit()
        && b[0] != b'_'
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
}

/// The datagram of `rec`: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER=reclaim, SYSLOG_FACILITY
/// (daemon), then its own fields.
pub fn serialize(rec: &Record) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let priority = rec.priority.level().to_string();
    let head: [(&str, &[u8]); 4] = [
        ("MESSAGE", rec.message.as_bytes()),
        ("PRIORITY", priority.as_bytes()),
        ("SYSLOG_IDENTIFIER", b"reclaim"),
        ("SYSLOG_FACILITY", b"3"),
    ];
    let own = rec.fields.iter().map(|(k, v)| (*k, v.as_slice()));
    for (name, value) in head.into_iter().chain(own) {
        out.extend_from_slice(name.as_bytes());
        if value.contains(&b'\n') {
            out.push(b'\n');
            out.extend_from_slice(&(value.len() as u64).to_le_bytes());
        } else {
            out.push(b'=');
        }
        out.extend_from_slice(value);
        out.push(b'\n');
    }
    out
}

/// Sends `rec` to the journal socket at `socket`.
pub fn send(socket: &Path, rec: &Record) -> std::io::Result<()> {
    let payload = serialize(rec);
    let sock = UnixDatagram::unbound()?;
    sock.set_write_timeout(Some(SEND_TIMEOUT))?;
    match sock.send_to(&payload, socket) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EMSGSIZE | libc::ENOBUFS)) => {
            send_memfd(&sock, socket, &payload)
        }
        Err(e) => Err(e),
    }
}

/// A record too large for one datagram: written to a memfd, sealed, and its descriptor sent
/// alone (the journal reads the record from it).
fn send_memfd(sock: &UnixDatagram, socket: &Path, payload: &[u8]) -> std::io::Result<()> {
    use rustix::fs::{memfd_create, MemfdFlags, SealFlags};
    use rustix::net::{sendmsg_addr, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    let fd = memfd_create(
        c"reclaim-journal",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    std::fs::File::from(fd.try_clone()?).write_all(payload)?;
    rustix::fs::fcntl_add_seals(
        &fd,
        SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
    )?;
    let addr = rustix::net::SocketAddrUnix::new(socket)?;
    let fds = [fd.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    sendmsg_addr(sock, &addr, &[], &mut control, SendFlags::empty())?;
    Ok(())
}

/// Reads one record as the journal would (for tests): fields by name, in order.
#[cfg(test)]
pub fn parse(mut b: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let end = b.iter().position(|c| *c == b'\n' || *c == b'=').unwrap();
        let name = String::from_utf8(b[..end].to_vec()).unwrap();
        if b[end] == b'=' {
            let rest = &b[end + 1..];
            let nl = rest.iter().position(|c| *c == b'\n').unwrap();
            out.push((name, rest[..nl].to_vec()));
            b = &rest[nl + 1..];
        } else {
            let len = u64::from_le_bytes(b[end + 1..end + 9].try_into().unwrap()) as usize;
            let value = &b[end + 9..end + 9 + len];
            assert_eq!(b[end + 9 + len], b'\n');
            out.push((name, value.to_vec()));
            b = &b[end + 10 + len..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::logging::Priority;
    use std::os::fd::OwnedFd;

    fn field<'a>(fields: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
        &fields
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name} in {fields:?}"))
            .1
    }

    #[test]
    fn a_value_with_a_newline_is_sent_with_its_length() {
        let rec = Record::new(Priority::Err, "cannot free 'a\\nb': Permission denied")
            .field("RECLAIM_PATH", b"/v/a\nb\xff")
            .field("RECLAIM_ENTRY", "20260101T000000.000000Z-1-0");
        let b = serialize(&rec);
        assert!(b.starts_with(b"MESSAGE=cannot free 'a\\nb': Permission denied\nPRIORITY=3\n"));
        let mut want = b"RECLAIM_PATH\n".to_vec();
        want.extend_from_slice(&7u64.to_le_bytes());
        want.extend_from_slice(b"/v/a\nb\xff\n");
        assert!(b.windows(want.len()).any(|w| w == want), "{b:?}");
        let f = parse(&b);
        assert_eq!(field(&f, "RECLAIM_PATH"), b"/v/a\nb\xff");
        assert_eq!(field(&f, "SYSLOG_IDENTIFIER"), b"reclaim");
        assert_eq!(field(&f, "RECLAIM_ENTRY"), b"20260101T000000.000000Z-1-0");
    }

    #[test]
    fn field_names_are_checked_as_the_journal_does() {
        assert!(valid_name("RECLAIM_BYTES"));
        for bad in ["", "_PID", "1X", "reclaim", "A-B", &"A".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn stream_values_parse() {
        assert_eq!(parse_stream("8:12345"), Some((8, 12345)));
        assert_eq!(parse_stream("8"), None);
        assert_eq!(parse_stream("x:1"), None);
    }

    #[test]
    fn sends_to_a_socket_and_falls_back_to_a_memfd_when_too_large() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("journal.sock");
        let server = UnixDatagram::bind(&path).unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let rec = Record::new(Priority::Info, "freed '/v/x'").field("RECLAIM_BYTES", "4096");
        send(&path, &rec).unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let n = server.recv(&mut buf).unwrap();
        let f = parse(&buf[..n]);
        assert_eq!(field(&f, "MESSAGE"), b"freed '/v/x'");
        assert_eq!(field(&f, "PRIORITY"), b"6");
        assert_eq!(field(&f, "RECLAIM_BYTES"), b"4096");

        // Larger than any datagram the socket takes: a memfd with the record.
        let huge = "x".repeat(8 << 20);
        let rec = Record::new(Priority::Err, "cannot free").field("RECLAIM_PATH", &huge);
        send(&path, &rec).unwrap();
        use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut data = [0u8; 16];
        let got = recvmsg(
            &server,
            &mut [std::io::IoSliceMut::new(&mut data)],
            &mut control,
            RecvFlags::empty(),
        )
        .unwrap();
        assert_eq!(got.bytes, 0);
        let fd: OwnedFd = control
            .drain()
            .find_map(|m| match m {
                RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
                _ => None,
            })
            .expect("a descriptor");
        // (The sender's writes moved the shared offset; the journal maps the file.)
        let mut file = std::fs::File::from(fd);
        std::io::Seek::rewind(&mut file).unwrap();
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut file, &mut text).unwrap();
        let f = parse(&text);
        assert_eq!(field(&f, "RECLAIM_PATH").len(), huge.len());
        assert_eq!(field(&f, "PRIORITY"), b"3");
    }

    #[test]
    fn no_socket_is_an_error_the_caller_falls_back_on() {
        let d = tempfile::tempdir().unwrap();
        let rec = Record::new(Priority::Info, "freed");
        assert!(send(&d.path().join("none"), &rec).is_err());
    }
}
