//! `--list FILE`: every removed path (or, in a dry run, every path that would be), one per
//! record, as an audit trail. NUL-separated with `-0`/`--null`, else newline-separated with
//! `\` written as `\\` and a newline inside a name as `\n` (so every record is one line and
//! the exact bytes can be read back). Workers hand over a batch of records at a time.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use std::os::unix::ffi::OsStrExt;

/// The audit list being written.
pub struct List {
    out: Mutex<Out>,
    nul: bool,
}

struct Out {
    w: Box<dyn Write + Send>,
    /// The first write error (later records are dropped; the run reports it once).
    error: Option<std::io::Error>,
}

impl std::fmt::Debug for List {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("List").field("nul", &self.nul).finish()
    }
}

impl List {
    pub fn new(w: Box<dyn Write + Send>, nul: bool) -> List {
        List {
            out: Mutex::new(Out { w, error: None }),
            nul,
        }
    }

    /// Adds the record of `path` to `buf` (a worker's batch).
    pub fn record(&self, buf: &mut Vec<u8>, path: &Path) {
        let bytes = path.as_os_str().as_bytes();
        if self.nul {
            buf.extend_from_slice(bytes);
            buf.push(0);
        } else {
            escape_into(buf, bytes);
            buf.push(b'\n');
        }
    }

    /// Writes a batch of records.
    pub fn write(&self, buf: &[u8]) {
        if buf.is_empty() {
            return;
        }
        let mut out = self.out.lock().expect("list lock");
        if out.error.is_none() {
            if let Err(e) = out.w.write_all(buf) {
                out.error = Some(e);
            }
        }
    }

    /// Flushes; the first error of the whole run, if there was one.
    pub fn finish(&self) -> Result<(), std::io::Error> {
        let mut out = self.out.lock().expect("list lock");
        if let Some(e) = out.error.take() {
            return Err(e);
        }
        out.w.flush()
    }
}

/// One newline-separated record: `\` as `\\`, newline as `\n`.
pub fn escape_into(buf: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        match b {
            b'\\' => buf.extend_from_slice(b"\\\\"),
            b'\n' => buf.extend_from_slice(b"\\n"),
            _ => buf.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads one newline-separated record back (the inverse of `escape_into`).
    fn unescape(line: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(line.len());
        let mut it = line.iter();
        while let Some(&b) = it.next() {
            if b == b'\\' {
                match it.next() {
                    Some(b'n') => out.push(b'\n'),
                    Some(&c) => out.push(c),
                    None => out.push(b'\\'),
                }
            } else {
                out.push(b);
            }
        }
        out
    }

    #[test]
    fn records_round_trip() {
        for name in [&b"plain"[..], b"new\nline", b"back\\slash\\n", b"\xff\xfe"] {
            let mut buf = Vec::new();
            escape_into(&mut buf, name);
            assert!(!buf.contains(&b'\n'));
            assert_eq!(unescape(&buf), name);
        }
    }
}
