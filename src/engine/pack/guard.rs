//! A bound on the tar stream an archive is read back as (`sqfs2tar`'s output, from an image
//! anyone may have made): a reader that passes the stream through unchanged while it follows
//! its 512-byte headers, and fails as soon as a header that the tar reader keeps in memory
//! (PAX `x`/`g` records, GNU long names `L`/`K`) says it is larger than `MAX_META`. File data
//! streams through without a bound (it is hashed or written as it comes); what the reader
//! holds is bounded before it is allocated. Owns no policy beyond that bound.

use std::io::{self, Read};

/// The most a header kept in memory may hold: a PAX record set (paths, xattrs: squashfs keeps
/// an xattr value up to 64 KiB in practice, names up to 255 bytes), a GNU long name.
pub const MAX_META: u64 = 16 << 20;

/// Where the guard is in the stream.
#[derive(Debug, Clone, Copy)]
enum At {
    /// Collecting a header: this many of its 512 bytes seen.
    Header(usize),
    /// Passing an entry's data (and its padding): this many bytes left.
    Data(u64),
}

/// `inner`, checked header by header.
pub struct Guard<R> {
    inner: R,
    at: At,
    header: [u8; 512],
    /// The PAX records being passed (kept, up to `MAX_META`): a `size` record there is the
    /// next entry's size.
    pax: Option<Vec<u8>>,
    next_size: Option<u64>,
}

impl<R: Read> Guard<R> {
    pub fn new(inner: R) -> Self {
        Guard {
            inner,
            at: At::Header(0),
            header: [0; 512],
            pax: None,
            next_size: None,
        }
    }
}

/// The `size` record of PAX records (`LEN size=N\n`), if any.
fn pax_size(records: &[u8]) -> Option<u64> {
    let mut rest = records;
    let mut found = None;
    while !rest.is_empty() {
        let sp = rest.iter().position(|&b| b == b' ')?;
        let len: usize = std::str::from_utf8(&rest[..sp]).ok()?.parse().ok()?;
        if len <= sp || len > rest.len() {
            return found;
        }
        let rec = &rest[sp + 1..len];
        if let Some(v) = rec.strip_prefix(b"size=") {
            let v = v.strip_suffix(b"\n").unwrap_or(v);
            found = std::str::from_utf8(v).ok().and_then(|v| v.parse().ok());
        }
        rest = &rest[len..];
    }
    found
}

/// The size field of a tar header (octal, or base-256 with the high bit set); `None` if it is
/// neither.
fn size_of(h: &[u8; 512]) -> Option<u64> {
    let field = &h[124..136];
    if field[0] & 0x80 != 0 {
        // Base-256: the rest big-endian; more than 8 bytes of it is beyond any real size.
        if field[1..4].iter().any(|&b| b != 0) {
            return None;
        }
        return Some(
            field[4..]
                .iter()
                .fold(0u64, |n, &b| (n << 8) | u64::from(b)),
        );
    }
    let digits: Vec<u8> = field
        .iter()
        .copied()
        .skip_while(|&b| b == b' ')
        .take_while(|&b| (b'0'..=b'7').contains(&b))
        .collect();
    if digits.is_empty() {
        return Some(0);
    }
    std::str::from_utf8(&digits)
        .ok()
        .and_then(|s| u64::from_str_radix(s, 8).ok())
}

impl<R: Read> Read for Guard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = match self.at {
            At::Header(seen) => buf.len().min(512 - seen),
            At::Data(left) => buf.len().min(usize::try_from(left).unwrap_or(usize::MAX)),
        };
        if want == 0 && !buf.is_empty() {
            // A data part of nothing: on to the next header.
            self.at = At::Header(0);
            return self.read(buf);
        }
        let n = self.inner.read(&mut buf[..want])?;
        match self.at {
            At::Header(seen) => {
                self.header[seen..seen + n].copy_from_slice(&buf[..n]);
                let seen = seen + n;
                if seen < 512 {
                    self.at = At::Header(seen);
                    return Ok(n);
                }
                if self.header.iter().all(|&b| b == 0) {
                    self.at = At::Header(0);
                    return Ok(n);
                }
                let mut size = size_of(&self.header)
                    .ok_or_else(|| io::Error::other("a tar header with an unreadable size"))?;
                let kept = matches!(self.header[156], b'x' | b'g' | b'L' | b'K');
                if kept && size > MAX_META {
                    return Err(io::Error::other(format!(
                        "a tar header of {size} bytes (at most {MAX_META} are read)"
                    )));
                }
                if self.header[156] == b'x' {
                    self.pax = Some(Vec::with_capacity(size as usize));
                } else if !kept {
                    if let Some(n) = self.next_size.take() {
                        size = n;
                    }
                }
                // Links, directories and devices carry no data whatever their size says.
                let data = match self.header[156] {
                    b'1' | b'2' | b'3' | b'4' | b'5' | b'6' => 0,
                    _ => size.div_ceil(512).saturating_mul(512),
                };
                self.at = if data == 0 {
                    At::Header(0)
                } else {
                    At::Data(data)
                };
            }
            At::Data(left) => {
                if let Some(p) = self.pax.as_mut() {
                    p.extend_from_slice(&buf[..n]);
                }
                let left = left - n as u64;
                self.at = if left == 0 {
                    if let Some(p) = self.pax.take() {
                        self.next_size = pax_size(&p);
                    }
                    At::Header(0)
                } else {
                    At::Data(left)
                };
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u8, size: u64) -> [u8; 512] {
        let mut h = tar::Header::new_ustar();
        h.set_path("x").unwrap();
        h.set_size(size);
        h.set_entry_type(tar::EntryType::new(kind));
        h.set_cksum();
        *h.as_bytes()
    }

    #[test]
    fn a_large_header_kept_in_memory_is_refused_and_data_passes() {
        let mut s = header(b'0', 3).to_vec();
        s.extend_from_slice(&[b'a'; 512]);
        s.extend_from_slice(&header(b'x', MAX_META + 1));
        s.extend_from_slice(&[0; 1024]);
        let mut out = Vec::new();
        let e = Guard::new(&s[..]).read_to_end(&mut out).unwrap_err();
        assert!(e.to_string().contains("tar header"), "{e}");
        assert_eq!(
            &out[..1024],
            &s[..1024],
            "what came before passed unchanged"
        );
        // A PAX size record gives the next entry's size (its own header says 0).
        let mut ok = header(b'x', 12).to_vec();
        ok.extend_from_slice(b"12 size=600\n");
        ok.extend_from_slice(&[0; 500]);
        ok.extend_from_slice(&header(b'0', 0));
        ok.extend_from_slice(&[b'd'; 1024]);
        ok.extend_from_slice(&header(b'0', 1));
        ok.extend_from_slice(&[b'e'; 512]);
        ok.extend_from_slice(&[0; 1024]);
        assert_eq!(pax_size(b"12 size=600\n"), Some(600));
        let mut out = Vec::new();
        Guard::new(&ok[..]).read_to_end(&mut out).unwrap();
        assert_eq!(out, ok);
    }
}
