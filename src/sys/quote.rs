//! How names are shown: in messages, `-v` lines and `status`, a path is quoted the way GNU
//! `rm` quotes it (`ls --quoting-style=shell-escape-always`), so a newline, an escape sequence
//! or an invalid byte in a name can neither split a line nor make two names look alike; in
//! JSON a path is a string plus, only when its bytes are not UTF-8, a `*_hex` twin with the
//! exact bytes. Never changes a name, only how it is printed.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

/// `path` quoted for a message, as GNU rm does it in this locale (`'a b'`, `"it's"`,
/// `'a'$'\n''b'`, `''$'\377'`).
pub fn quote(path: impl AsRef<OsStr>) -> String {
    quote_bytes(path.as_ref().as_bytes(), utf8_locale())
}

/// `path` as gnulib's `shell-escape` style shows it: as it is when a shell would read it
/// back unchanged (`-foo`, `a.b`), otherwise as `quote` does (GNU's dash hint, `quotef`).
pub fn quote_if_needed(path: impl AsRef<OsStr>) -> String {
    let bytes = path.as_ref().as_bytes();
    let Ok(s) = std::str::from_utf8(bytes) else {
        return quote(path);
    };
    let utf8 = utf8_locale();
    let plain = !s.is_empty()
        && s.char_indices().all(|(i, c)| match c {
            '#' | '~' => i != 0,
            '{' | '}' => s.len() != 1,
            '%' | '+' | ',' | '-' | '.' | '/' | ':' | '@' | ']' | '_' => true,
            c if c.is_ascii_alphanumeric() => true,
            c if c.is_ascii() => false,
            // SAFETY: iswprint reads libc's locale tables; no memory of ours.
            c => utf8 && unsafe { iswprint(c as u32) } != 0,
        });
    if plain {
        s.to_string()
    } else {
        quote(path)
    }
}

/// Whether the character set of the locale (LC_ALL, LC_CTYPE, LANG) is UTF-8: then printable
/// non-ASCII characters are shown as they are; otherwise every byte above 0x7f is escaped.
pub fn utf8_locale() -> bool {
    static UTF8: OnceLock<bool> = OnceLock::new();
    *UTF8.get_or_init(|| {
        // Only the character classes; messages stay as they are. Called before any thread
        // starts (main), so setlocale's process-wide effect races with nothing.
        // SAFETY: setlocale with a valid category and a NUL-terminated empty string;
        // nl_langinfo returns a pointer into libc's static locale data, read at once.
        unsafe {
            if libc::setlocale(libc::LC_CTYPE, c"".as_ptr()).is_null() {
                return false;
            }
            let set = libc::nl_langinfo(libc::CODESET);
            !set.is_null() && std::ffi::CStr::from_ptr(set).to_bytes() == b"UTF-8"
        }
    })
}

/// The quoting of `bytes`: `utf8` says whether valid UTF-8 beyond ASCII may be shown as is.
/// GNU's quotearg (gnulib), byte for byte: a name with a single quote whose other characters
/// are all harmless inside double quotes is shown as `"it's"`; otherwise single quotes, with
/// `'\''` for a quote and `$'\ooo'` runs for what is not printable. For a name with a single
/// quote, gnulib scans once and then writes in a second pass that starts in the escape state
/// the first one ended in; that quirk is reproduced (`'\001'\'''$'\001'`).
pub fn quote_bytes(bytes: &[u8], utf8: bool) -> String {
    let units = units(bytes, utf8);
    let (first, pending) = single_quoted(&units, false);
    if !bytes.contains(&b'\'') {
        return first;
    }
    let mut at = 0;
    let compatible = units.iter().all(|u| match u {
        Unit::Plain(s) => s.chars().all(|c| {
            let ok = double_compatible(c, at, bytes.len());
            at += c.len_utf8();
            ok
        }),
        Unit::Escape(_) => false,
    });
    if compatible {
        let mut out = String::with_capacity(bytes.len() + 2);
        out.push('"');
        for u in &units {
            if let Unit::Plain(s) = u {
                out.push_str(s);
            }
        }
        out.push('"');
        return out;
    }
    single_quoted(&units, pending).0
}

/// One pass of the single-quoted form, starting inside a `$'...'` run if `pending`; returns
/// the text and whether it ended inside such a run.
fn single_quoted(units: &[Unit<'_>], mut pending: bool) -> (String, bool) {
    let mut out = String::from("'");
    for u in units {
        match u {
            Unit::Escape(b) => {
                if !pending {
                    out.push_str("'$'");
                    pending = true;
                }
                push_escape(&mut out, *b);
            }
            Unit::Plain(s) => {
                for c in s.chars() {
                    if c == '\'' {
                        out.push_str("'\\''");
                        pending = false;
                        continue;
                    }
                    if pending {
                        out.push_str("''");
                        pending = false;
                    }
                    out.push(c);
                }
            }
        }
    }
    out.push('\'');
    (out, pending)
}

/// Whether character `c` at byte offset `at` of a name of `len` bytes allows the `"it's"`
/// form (gnulib's `c_and_shell_quote_compat`): letters, digits, space, `%+,-./:@]_'` and
/// printable non-ASCII; `#` and `~` only first; `{` and `}` only as the whole name.
fn double_compatible(c: char, at: usize, len: usize) -> bool {
    match c {
        '#' | '~' => at == 0,
        '{' | '}' => len == 1,
        ' ' | '%' | '+' | ',' | '-' | '.' | '/' | ':' | '@' | ']' | '_' | '\'' => true,
        c if c.is_ascii_alphanumeric() => true,
        c => !c.is_ascii(),
    }
}

enum Unit<'a> {
    /// Printable text.
    Plain(&'a str),
    /// One byte shown as an escape.
    Escape(u8),
}

/// Splits `bytes` into printable runs and bytes to escape.
fn units(bytes: &[u8], utf8: bool) -> Vec<Unit<'_>> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(s) => (s, 0),
            Err(e) => {
                let valid = std::str::from_utf8(&rest[..e.valid_up_to()]).expect("valid prefix");
                (valid, e.error_len().unwrap_or(rest.len() - e.valid_up_to()))
            }
        };
        let mut start = 0;
        for (i, c) in valid.char_indices() {
            let printable = if c.is_ascii() {
                !c.is_ascii_control()
            } else {
                // The locale's own answer (unassigned code points are not printable).
                // SAFETY: iswprint reads libc's locale tables; no memory of ours.
                utf8 && unsafe { iswprint(c as u32) } != 0
            };
            if !printable {
                if start < i {
                    out.push(Unit::Plain(&valid[start..i]));
                }
                out.extend(valid[i..i + c.len_utf8()].bytes().map(Unit::Escape));
                start = i + c.len_utf8();
            }
        }
        if start < valid.len() {
            out.push(Unit::Plain(&valid[start..]));
        }
        let after = valid.len();
        out.extend(rest[after..after + bad].iter().copied().map(Unit::Escape));
        rest = &rest[after + bad..];
    }
    out
}

/// `bytes` as a screen may show them, one cell per character: printable characters as they
/// are (non-ASCII ones in a UTF-8 locale), and every other byte as an escape (`\n`, `\033`,
/// `\377`): control characters, escape sequences, bytes that are not UTF-8, and the invisible
/// characters that reorder or hide text (bidi controls, zero-width marks, line separators).
/// A name shown this way can never drive the terminal (`reclaim browse`).
pub fn visible(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for u in units(bytes, utf8_locale()) {
        match u {
            Unit::Plain(s) => {
                for c in s.chars() {
                    if invisible(c) {
                        let mut buf = [0u8; 4];
                        c.encode_utf8(&mut buf)
                            .bytes()
                            .for_each(|b| push_escape(&mut out, b));
                    } else {
                        out.push(c);
                    }
                }
            }
            Unit::Escape(b) => push_escape(&mut out, b),
        }
    }
    out
}

/// Characters a locale may call printable that show nothing or change how the text around
/// them is shown: bidi embeddings, overrides and isolates, zero-width characters, the line
/// and paragraph separators, the byte order mark.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}')
}

extern "C" {
    /// C's `iswprint` (wctype.h; `wint_t` is an unsigned 32-bit integer on Linux), which the
    /// `libc` crate does not declare.
    fn iswprint(wc: u32) -> libc::c_int;
}

fn push_escape(out: &mut String, b: u8) {
    match b {
        0x07 => out.push_str("\\a"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        0x0b => out.push_str("\\v"),
        b => out.push_str(&format!("\\{b:03o}")),
    }
}

/// The bytes of a path in hex, when they are not valid UTF-8 (the JSON `*_hex` twin of a
/// lossy string); `None` when the string field is already exact.
pub fn hex_if_needed(path: impl AsRef<OsStr>) -> Option<String> {
    let b = path.as_ref().as_bytes();
    std::str::from_utf8(b)
        .is_err()
        .then(|| b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Bytes from a `*_hex` field (pairs of hex digits); `None` if malformed.
pub fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.as_bytes()
        .chunks(2)
        .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
        .collect()
}

/// A path as JSON shows it: `"path"`, the name as UTF-8 (invalid bytes replaced), and
/// `"path_hex"`, the exact bytes in hex, only when they are not valid UTF-8. Embedded with
/// `#[serde(flatten)]` in every JSON object that names a path.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathField {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_hex: Option<String>,
}

impl PathField {
    pub fn new(p: impl AsRef<OsStr>) -> Self {
        let p = p.as_ref();
        PathField {
            path: p.to_string_lossy().into_owned(),
            path_hex: hex_if_needed(p),
        }
    }

    /// The exact path (from the hex twin when there is one).
    pub fn exact(&self) -> std::path::PathBuf {
        use std::os::unix::ffi::OsStringExt;
        match self.path_hex.as_deref().and_then(unhex) {
            Some(b) => std::ffi::OsString::from_vec(b).into(),
            None => std::path::PathBuf::from(&self.path),
        }
    }
}

impl std::fmt::Display for PathField {
    /// Quoted, for messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&quote(self.exact()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_gnu_rm() {
        // SAFETY: as in `same_as_ls`.
        unsafe { libc::setlocale(libc::LC_CTYPE, c"C.UTF-8".as_ptr()) };
        let cases: &[(&[u8], &str)] = &[
            (b"plain", "'plain'"),
            (b"a\nb", "'a'$'\\n''b'"),
            (b"\xff", "''$'\\377'"),
            (b"it's", "\"it's\""),
            (b"it's$x", "'it'\\''s$x'"),
            (b"x\n", "'x'$'\\n'"),
            (b"it's\nx", "'it'\\''s'$'\\n''x'"),
            (b"\x1b[31m", "''$'\\033''[31m'"),
            (b"sp ace", "'sp ace'"),
            (b"it's x", "\"it's x\""),
            (b"it's~x", "'it'\\''s~x'"),
        ];
        for (raw, want) in cases {
            assert_eq!(quote_bytes(raw, true), *want, "{raw:?}");
        }
        assert_eq!(quote_bytes("é".as_bytes(), true), "'é'");
        assert_eq!(quote_bytes("é".as_bytes(), false), "''$'\\303\\251'");
        assert_eq!(quote_bytes("é'".as_bytes(), false), "''$'\\303\\251'\\'''");
        assert_eq!(quote_bytes("é'".as_bytes(), true), "\"é'\"");
    }

    #[test]
    fn visible_names_hold_no_control_byte_and_no_bidi_control() {
        let shown = visible(b"a\x1b]0;pwned\x07b\nc\xff\x7f");
        assert_eq!(shown, "a\\033]0;pwned\\ab\\nc\\377\\177");
        assert!(!shown.chars().any(|c| c.is_control()));
        // U+202E RIGHT-TO-LEFT OVERRIDE, U+200B ZERO WIDTH SPACE: escaped in any locale.
        let shown = visible("x\u{202e}y\u{200b}z".as_bytes());
        assert_eq!(shown, "x\\342\\200\\256y\\342\\200\\213z");
        assert_eq!(visible(b"plain name.txt"), "plain name.txt");
    }

    #[test]
    fn hex_only_when_needed() {
        assert_eq!(hex_if_needed("abc"), None);
        let odd = std::ffi::OsStr::from_bytes(b"a\xffb");
        assert_eq!(hex_if_needed(odd).as_deref(), Some("61ff62"));
        assert_eq!(unhex("61ff62"), Some(b"a\xffb".to_vec()));
        assert_eq!(unhex("6"), None);
        assert_eq!(unhex("zz"), None);
    }
}

/// Differential: the same names through `ls --quoting-style=shell-escape-always` (GNU's
/// quotearg, which `rm` uses) in the C and C.UTF-8 locales.
#[cfg(test)]
mod against_gnu {
    use super::*;
    use proptest::prelude::*;

    fn gnu(names: &[Vec<u8>], locale: &str) -> Option<Vec<String>> {
        let dir = tempfile::tempdir().ok()?;
        let mut cmd = std::process::Command::new("ls");
        cmd.current_dir(dir.path()).env("LC_ALL", locale).args([
            "-1",
            "-U",
            "-d",
            "--quoting-style=shell-escape-always",
            "--",
        ]);
        for n in names {
            let p = dir.path().join(OsStr::from_bytes(n));
            std::fs::write(&p, b"").ok()?;
            cmd.arg(OsStr::from_bytes(n));
        }
        let out = cmd.output().ok()?;
        if !out.status.success() {
            return None;
        }
        Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned)
                .collect(),
        )
    }

    fn name() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            4 => prop::sample::select(b"ab '\"$`\\!#&()*;<=>?[]^{|}~%+,-.:@_".to_vec()),
            1 => 1u8..0x20,
            1 => Just(0x7fu8),
            1 => 0x80u8..=0xff,
            2 => prop::sample::select(vec![0xc3u8, 0xa9]), // é, and halves of it
        ];
        prop::collection::vec(byte, 1..12).prop_filter("not . or ..", |n| n != b"." && n != b"..")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]
        #[test]
        fn same_as_ls(names in prop::collection::vec(name(), 1..60)) {
            // iswprint answers for the process's LC_CTYPE: make it UTF-8, as a UTF-8 user's is.
            // SAFETY: setlocale with valid NUL-terminated strings (tests only).
            unsafe { libc::setlocale(libc::LC_CTYPE, c"C.UTF-8".as_ptr()) };
            let mut names = names;
            names.sort();
            names.dedup();
            for (locale, utf8) in [("C", false), ("C.UTF-8", true)] {
                let Some(want) = gnu(&names, locale) else {
                    crate::sys::testing::skipped("same_as_ls", "GNU ls not available");
                    return Ok(());
                };
                let ours: Vec<String> = names.iter().map(|n| quote_bytes(n, utf8)).collect();
                prop_assert_eq!(&ours, &want, "locale {}", locale);
            }
        }
    }
}
