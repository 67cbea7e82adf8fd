//! `reclaim browse --import FILE`: a tree in ncdu's JSON export format (what `reclaim scan
//! --export` and `ncdu -o` write) read into a `Tree`, for browsing only.
//!
//! FILE is untrusted input: it is opened without following a symlink and only if it is a
//! regular file (a FIFO or a device is never opened), of at most `MAX_BYTES`; it is read as a
//! stream (nothing is allocated by a size it states) with an explicit stack (no recursion,
//! whatever its depth). A name must be one name (no `/`, not `.` or `..`, at most 255 bytes):
//! anything else stops the import at that byte with the reason. It never reads anything but
//! FILE and writes nothing.

use std::collections::HashSet;
use std::ffi::CString;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::FileType;

use super::tree::{self, Batch, Tree};
use crate::sys::dirfd::{Facts, Ident};
use crate::sys::quote::quote;

/// The largest FILE read.
pub const MAX_BYTES: u64 = 64 << 30;

/// The longest string read where a name is not expected (a root's path, a value skipped).
const MAX_STRING: usize = 4096;

/// Why FILE could not be read (in full).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot import {}: {why}", quote(.file))]
    Open { file: PathBuf, why: String },
    #[error("{} is not an ncdu export (byte {at}): {why}", quote(.file))]
    Format { file: PathBuf, at: u64, why: String },
}

/// An import under way: FILE open, its header and top directory read.
pub struct Import {
    file: PathBuf,
    reader: Reader,
    tree: Arc<Tree>,
    /// The top directory's device (entries without `dev` have their directory's).
    dev: u64,
    /// What wrote FILE (`progname` and `progver` of its header).
    pub made_by: String,
}

impl Import {
    /// Opens FILE and reads up to its top directory's record: the tree has its root then.
    pub fn open(file: &Path) -> Result<Import, ImportError> {
        let open_err = |why: String| ImportError::Open {
            file: file.to_path_buf(),
            why,
        };
        let name = file
            .file_name()
            .ok_or_else(|| open_err("it names no file".into()))?;
        let name =
            CString::new(name.as_bytes()).map_err(|_| open_err("a NUL byte in its name".into()))?;
        let parent = match file.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = crate::sys::dirfd::open_dir_path_only(parent)
            .map_err(|e| open_err(crate::sys::error::errno_text(e)))?;
        let f = crate::trash::safefile::open_to_read(&dir, &name, MAX_BYTES)
            .map_err(|e| open_err(e.to_string()))?;
        let mut reader = Reader {
            r: BufReader::with_capacity(1 << 16, f),
            at: 0,
        };
        let fail = |r: &Reader, why: &str| ImportError::Format {
            file: file.to_path_buf(),
            at: r.at,
            why: why.into(),
        };
        let header = (|| -> Result<(String, Record), &'static str> {
            reader.expect(b'[')?;
            if reader.integer()? != 1 {
                return Err("major version is not 1");
            }
            reader.expect(b',')?;
            reader.integer()?;
            reader.expect(b',')?;
            let made_by = reader.made_by()?;
            reader.expect(b',')?;
            reader.expect(b'[')?;
            let root = reader.record(MAX_STRING)?;
            Ok((made_by, root))
        })();
        let (made_by, root) = header.map_err(|why| fail(&reader, why))?;
        if root.name.is_empty() {
            return Err(fail(&reader, "the top directory has no name"));
        }
        let root_path = PathBuf::from(std::ffi::OsStr::from_bytes(&root.name));
        let tree = Arc::new(Tree::new(&root_path, None));
        let dev = root.dev.unwrap_or(0);
        tree.set_root(root.dsize, root.asize, root.ino, Some(dev));
        if root.read_error {
            tree.mark(tree::ROOT, tree::flag::ERROR);
        }
        Ok(Import {
            file: file.to_path_buf(),
            reader,
            tree,
            dev,
            made_by,
        })
    }

    /// The tree being filled.
    pub fn tree(&self) -> &Arc<Tree> {
        &self.tree
    }

    /// Reads the rest of FILE into the tree; the entries read so far stay on an error.
    pub fn run(mut self) -> Result<(), ImportError> {
        let r = self.entries();
        self.tree.walked(tree::ROOT);
        r.map_err(|why| ImportError::Format {
            file: self.file.clone(),
            at: self.reader.at,
            why: why.into(),
        })
    }

    fn entries(&mut self) -> Result<(), &'static str> {
        // (directory, its device, the entries read and not yet added).
        let mut stack: Vec<(u32, u64, Batch)> = vec![(tree::ROOT, self.dev, Batch::default())];
        let mut links: HashSet<(u64, u64)> = HashSet::new();
        while let Some(&(dir, dev, _)) = stack.last() {
            match self.reader.next_token()? {
                b']' => {
                    let (_, _, batch) = stack.pop().expect("not empty");
                    self.tree.add(dir, &batch);
                    self.tree.finished(dir, false);
                }
                b',' => match self.reader.next_token()? {
                    b'{' => {
                        let rec = self.reader.object(tree::NAME_MAX)?;
                        one_name(&rec.name)?;
                        let facts = rec.facts(dev, false);
                        let counted =
                            !rec.hlnkc || links.insert((facts.ident.dev, facts.ident.ino));
                        let batch = &mut stack.last_mut().expect("not empty").2;
                        batch.push(&rec.name, &facts, counted && rec.counted(), rec.flags());
                    }
                    b'[' => {
                        let batch = std::mem::take(&mut stack.last_mut().expect("not empty").2);
                        self.tree.add(dir, &batch);
                        self.reader.expect(b'{')?;
                        let rec = self.reader.object(tree::NAME_MAX)?;
                        one_name(&rec.name)?;
                        let facts = rec.facts(dev, true);
                        let sub = self.tree.dir(dir, &rec.name, &facts);
                        if rec.read_error {
                            self.tree.mark(sub, tree::flag::ERROR);
                        }
                        stack.push((sub, facts.ident.dev, Batch::default()));
                    }
                    _ => return Err("an entry must be an object or an array"),
                },
                _ => return Err("expected ',' or ']'"),
            }
        }
        // The outer array's end (absent in a truncated file: that is said).
        match self.reader.next_token() {
            Ok(b']') => Ok(()),
            _ => Err("the file ends before the export does"),
        }
    }
}

/// Refuses what is not one name of a directory.
fn one_name(name: &[u8]) -> Result<(), &'static str> {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
        return Err("an entry's name is not one name (empty, '.', '..' or with a '/')");
    }
    if name.contains(&0) {
        return Err("an entry's name holds a NUL byte");
    }
    Ok(())
}

/// One entry's record.
#[derive(Default)]
struct Record {
    name: Vec<u8>,
    asize: u64,
    dsize: u64,
    dev: Option<u64>,
    ino: u64,
    nlink: u32,
    hlnkc: bool,
    read_error: bool,
    notreg: bool,
    /// ncdu's `excluded`: `pattern`, `otherfs`/`othfs`, `kernfs`, `frmlnk`.
    excluded: Option<Vec<u8>>,
    mode: Option<u32>,
    mtime: Option<i64>,
}

impl Record {
    fn facts(&self, dir_dev: u64, dir: bool) -> Facts {
        let file_type = if dir {
            FileType::Directory
        } else if let Some(m) = self.mode {
            FileType::from_raw_mode(m)
        } else if self.other_fs() {
            FileType::Directory
        } else if self.notreg {
            FileType::Unknown
        } else {
            FileType::RegularFile
        };
        Facts {
            ident: Ident {
                dev: self.dev.unwrap_or(dir_dev),
                ino: self.ino,
            },
            mnt_id: 0,
            file_type,
            nlink: self.nlink.max(1),
            allocated: self.dsize,
            size: self.asize,
            mtime: self.mtime.unwrap_or(i64::MIN),
            atime: self.mtime.unwrap_or(i64::MIN),
        }
    }

    fn other_fs(&self) -> bool {
        matches!(self.excluded.as_deref(), Some(b"otherfs" | b"othfs"))
    }

    fn counted(&self) -> bool {
        self.excluded.is_none()
    }

    fn flags(&self) -> u16 {
        let mut f = 0;
        if self.other_fs() {
            f |= tree::flag::MOUNT;
        } else if self.excluded.is_some() {
            f |= tree::flag::EXCLUDED;
        }
        if self.read_error {
            f |= tree::flag::UNREADABLE;
        }
        f
    }
}

/// FILE as a stream of JSON tokens, with the byte offset for messages.
struct Reader {
    r: BufReader<std::fs::File>,
    at: u64,
}

type Parse<T> = Result<T, &'static str>;

impl Reader {
    fn peek(&mut self) -> Parse<Option<u8>> {
        let buf = self.r.fill_buf().map_err(|_| "a read error")?;
        Ok(buf.first().copied())
    }

    fn bump(&mut self) -> Parse<u8> {
        let b = self.peek()?.ok_or("the file ends before the export does")?;
        self.r.consume(1);
        self.at += 1;
        Ok(b)
    }

    fn skip_ws(&mut self) -> Parse<()> {
        while let Some(b) = self.peek()? {
            if !b.is_ascii_whitespace() {
                break;
            }
            self.bump()?;
        }
        Ok(())
    }

    /// The next byte that is not white space.
    fn next_token(&mut self) -> Parse<u8> {
        self.skip_ws()?;
        self.bump()
    }

    fn expect(&mut self, want: u8) -> Parse<()> {
        if self.next_token()? == want {
            return Ok(());
        }
        Err(match want {
            b'[' => "expected '['",
            b'{' => "expected '{'",
            b',' => "expected ','",
            b':' => "expected ':'",
            _ => "unexpected punctuation",
        })
    }

    /// An integer (signed), as a string of digits; fractions are refused.
    fn integer(&mut self) -> Parse<i64> {
        self.skip_ws()?;
        let negative = self.peek()? == Some(b'-');
        if negative {
            self.bump()?;
        }
        let mut n: i64 = 0;
        let mut digits = 0;
        while let Some(b @ b'0'..=b'9') = self.peek()? {
            self.bump()?;
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(i64::from(b - b'0')))
                .ok_or("a number out of range")?;
            digits += 1;
        }
        if digits == 0 {
            return Err("expected a number");
        }
        if matches!(self.peek()?, Some(b'.' | b'e' | b'E')) {
            return Err("expected an integer");
        }
        Ok(if negative { -n } else { n })
    }

    fn unsigned(&mut self) -> Parse<u64> {
        u64::try_from(self.integer()?).map_err(|_| "a negative size or number")
    }

    /// A string, as bytes: escapes decoded, other bytes as they are (ncdu writes non-UTF-8
    /// names raw); at most `max` bytes.
    fn string(&mut self, max: usize) -> Parse<Vec<u8>> {
        if self.next_token()? != b'"' {
            return Err("expected a string");
        }
        let mut out = Vec::new();
        loop {
            let b = self.bump()?;
            match b {
                b'"' => return Ok(out),
                b'\\' => match self.bump()? {
                    b'"' => out.push(b'"'),
                    b'\\' => out.push(b'\\'),
                    b'/' => out.push(b'/'),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'u' => {
                        let c = self.unicode()?;
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                    _ => return Err("a bad escape in a string"),
                },
                _ => out.push(b),
            }
            if out.len() > max {
                return Err("a string longer than a name may be");
            }
        }
    }

    fn hex4(&mut self) -> Parse<u32> {
        let mut v = 0;
        for _ in 0..4 {
            let d = (self.bump()? as char)
                .to_digit(16)
                .ok_or("a bad \\u escape")?;
            v = v * 16 + d;
        }
        Ok(v)
    }

    /// The character of a `\uXXXX` escape (a surrogate pair: both halves).
    fn unicode(&mut self) -> Parse<char> {
        let hi = self.hex4()?;
        if (0xd800..0xdc00).contains(&hi) {
            if self.bump()? != b'\\' || self.bump()? != b'u' {
                return Err("a lone surrogate in a \\u escape");
            }
            let lo = self.hex4()?;
            if !(0xdc00..0xe000).contains(&lo) {
                return Err("a lone surrogate in a \\u escape");
            }
            return char::from_u32(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00))
                .ok_or("a bad \\u escape");
        }
        char::from_u32(hi).ok_or("a lone surrogate in a \\u escape")
    }

    fn boolean(&mut self) -> Parse<bool> {
        let b = self.next_token()?;
        let (word, value): (&[u8], bool) = match b {
            b't' => (b"rue", true),
            b'f' => (b"alse", false),
            _ => return Err("expected true or false"),
        };
        for &w in word {
            if self.bump()? != w {
                return Err("expected true or false");
            }
        }
        Ok(value)
    }

    /// Skips one value of any kind (nested ones counted, not recursed into).
    fn skip_value(&mut self) -> Parse<()> {
        let mut depth = 0usize;
        loop {
            self.skip_ws()?;
            match self.peek()?.ok_or("the file ends before the export does")? {
                b'"' => {
                    self.string(MAX_STRING)?;
                }
                b'[' | b'{' => {
                    self.bump()?;
                    depth += 1;
                    continue;
                }
                b']' | b'}' => {
                    if depth == 0 {
                        return Err("unexpected punctuation");
                    }
                    self.bump()?;
                    depth -= 1;
                }
                b',' | b':' if depth > 0 => {
                    self.bump()?;
                    continue;
                }
                b'-' | b'0'..=b'9' => {
                    self.bump()?;
                    while matches!(
                        self.peek()?,
                        Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                    ) {
                        self.bump()?;
                    }
                }
                b't' | b'f' => {
                    self.boolean()?;
                }
                b'n' => {
                    for &w in b"null" {
                        if self.bump()? != w {
                            return Err("unexpected value");
                        }
                    }
                }
                _ => return Err("unexpected value"),
            }
            if depth == 0 {
                return Ok(());
            }
        }
    }

    /// The header's metadata object: who wrote it.
    fn made_by(&mut self) -> Parse<String> {
        if self.next_token()? != b'{' {
            return Err("expected the metadata object");
        }
        let (mut name, mut version) = (String::new(), String::new());
        self.fields(|r, key| {
            match key {
                b"progname" => name = String::from_utf8_lossy(&r.string(MAX_STRING)?).into(),
                b"progver" => version = String::from_utf8_lossy(&r.string(MAX_STRING)?).into(),
                _ => r.skip_value()?,
            }
            Ok(())
        })?;
        Ok(format!("{name} {version}").trim().to_string())
    }

    /// An entry's record (its `{`, and a name of at most `max` bytes).
    fn record(&mut self, max: usize) -> Parse<Record> {
        if self.next_token()? != b'{' {
            return Err("expected an entry's record");
        }
        self.object(max)
    }

    /// The rest of an entry's record, after its `{`.
    fn object(&mut self, max: usize) -> Parse<Record> {
        let mut rec = Record::default();
        let mut named = false;
        self.fields(|r, key| {
            match key {
                b"name" => {
                    rec.name = r.string(max)?;
                    named = true;
                }
                b"asize" => rec.asize = r.unsigned()?,
                b"dsize" => rec.dsize = r.unsigned()?,
                b"dev" => rec.dev = Some(r.unsigned()?),
                b"ino" => rec.ino = r.unsigned()?,
                b"nlink" => rec.nlink = u32::try_from(r.unsigned()?).unwrap_or(u32::MAX),
                b"hlnkc" => rec.hlnkc = r.boolean()?,
                b"read_error" => rec.read_error = r.boolean()?,
                b"notreg" => rec.notreg = r.boolean()?,
                b"excluded" => rec.excluded = Some(r.string(MAX_STRING)?),
                b"mode" => rec.mode = Some(u32::try_from(r.unsigned()?).unwrap_or(0)),
                b"mtime" => rec.mtime = Some(r.integer()?),
                _ => r.skip_value()?,
            }
            Ok(())
        })?;
        if !named {
            return Err("an entry without a name");
        }
        Ok(rec)
    }

    /// Calls `each` with every key of an object whose `{` was read; `each` reads the value.
    fn fields(&mut self, mut each: impl FnMut(&mut Reader, &[u8]) -> Parse<()>) -> Parse<()> {
        self.skip_ws()?;
        if self.peek()? == Some(b'}') {
            self.bump()?;
            return Ok(());
        }
        loop {
            let key = self.string(MAX_STRING)?;
            self.expect(b':')?;
            each(self, &key)?;
            match self.next_token()? {
                b',' => continue,
                b'}' => return Ok(()),
                _ => return Err("expected ',' or '}'"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scan::tree::{flag, Query, SortBy, ROOT};
    use std::io::Write;

    fn import(text: &[u8]) -> Result<Arc<Tree>, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("export.json");
        std::fs::File::create(&p).unwrap().write_all(text).unwrap();
        let imp = Import::open(&p).map_err(|e| e.to_string())?;
        let tree = imp.tree().clone();
        imp.run().map_err(|e| e.to_string())?;
        Ok(tree)
    }

    fn names(t: &Tree, dir: u32) -> Vec<String> {
        let q = Query {
            sort: SortBy::Name,
            descending: false,
            ..Query::default()
        };
        t.infos(&t.list(dir, &q))
            .into_iter()
            .map(|i| String::from_utf8_lossy(&i.name).into_owned())
            .collect()
    }

    #[test]
    fn reads_what_ncdu_and_scan_export_write() {
        let text = br#"[1,2,{"progname":"ncdu","progver":"1.18","timestamp":1},
[{"name":"/srv/data","asize":4096,"dsize":4096,"dev":2049,"ino":2},
{"name":"a.bin","asize":100,"dsize":4096,"ino":3,"mtime":1700000000},
{"name":"link","asize":7,"dsize":0,"ino":4,"notreg":true},
{"name":"h1","asize":10,"dsize":4096,"ino":5,"hlnkc":true,"nlink":2},
[{"name":"sub","asize":4096,"dsize":4096,"ino":6,"read_error":true},
 {"name":"h2","asize":10,"dsize":4096,"ino":5,"hlnkc":true,"nlink":2},
 {"name":"mnt","excluded":"othfs"}],
{"name":"esc\u001b]0;x\u0007","asize":1,"dsize":4096,"ino":7}]]
"#;
        let t = import(text).unwrap();
        assert_eq!(t.path(ROOT), Path::new("/srv/data"));
        assert_eq!(
            names(&t, ROOT),
            ["a.bin", "esc\u{1b}]0;x\u{7}", "h1", "link", "sub"]
        );
        let root = t.info(ROOT);
        // The hard link once: 4096 (root) + a.bin + h1 + sub + esc = 5 x 4096.
        assert_eq!(root.disk, 5 * 4096);
        assert_eq!(root.items, 7);
        assert!(root.has(flag::DONE) && root.has(flag::ERROR_BELOW));
        let sub = t.list(ROOT, &Query::default());
        let sub = t
            .infos(&sub)
            .into_iter()
            .find(|i| i.name == b"sub")
            .unwrap();
        assert!(sub.has(flag::ERROR));
        let inside = t.infos(&t.list(sub.index, &Query::default()));
        assert!(inside
            .iter()
            .any(|i| i.name == b"mnt" && i.has(flag::MOUNT)));
        assert!(inside
            .iter()
            .any(|i| i.name == b"h2" && i.has(flag::UNCOUNTED)));
    }

    #[test]
    fn refuses_names_that_are_not_one_name_and_says_where() {
        for bad in [
            &br#"[1,2,{},[{"name":"/r"},{"name":"../x"}]]"#[..],
            br#"[1,2,{},[{"name":"/r"},{"name":".."}]]"#,
            br#"[1,2,{},[{"name":"/r"},{"name":""}]]"#,
            br#"[1,2,{},[{"name":"/r"},{"asize":1}]]"#,
            br#"[1,2,{},[{"name":"/r"},{"name":"a\u0000b"}]]"#,
        ] {
            let e = import(bad).unwrap_err();
            assert!(e.contains("is not an ncdu export (byte"), "{e}");
        }
        let long = format!(
            r#"[1,2,{{}},[{{"name":"/r"}},{{"name":"{}"}}]]"#,
            "n".repeat(256)
        );
        assert!(import(long.as_bytes()).unwrap_err().contains("longer"));
    }

    #[test]
    fn a_truncated_or_malformed_file_keeps_what_was_read_and_says_why() {
        for bad in [
            &br#"[1,2,{},[{"name":"/r"},{"name":"a","asize":1}"#[..],
            br#"[2,0,{},[{"name":"/r"}]]"#,
            br#"[1,2,{},[{"name":"/r"},{"name":"a","asize":1.5}]]"#,
            br#"[1,2,{},[{"name":"/r"},{"name":"a","asize":-1}]]"#,
            br#"{"name":"/r"}"#,
            b"",
        ] {
            assert!(import(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn deep_nesting_is_read_without_recursion() {
        let depth = 200_000;
        let mut text = br#"[1,2,{},[{"name":"/r"}"#.to_vec();
        for _ in 0..depth {
            text.extend_from_slice(br#",[{"name":"d","dsize":1}"#);
        }
        text.extend(std::iter::repeat_n(b']', depth + 2));
        let t = import(&text).unwrap();
        assert_eq!(t.info(ROOT).disk, depth as u64);
    }

    #[test]
    fn a_fifo_or_a_symlink_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = Import::open(&fifo).err().unwrap().to_string();
        assert!(e.contains("FIFO"), "{e}");
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        let e = Import::open(&dir.path().join("link"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("symbolic link"), "{e}");
    }
}
