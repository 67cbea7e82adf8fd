//! The shape of the code (docs/ARCHITECTURE.md), read from `src/`: each folder imports only the folders
//! below it (`main.rs` → `cli/` → `cmd/` → `ui/` → `reaper/` → `engine/` → `trash/` → `sys/`),
//! the modules inside a folder import each other without a cycle, and only `cmd/`, `ui/` and
//! `main.rs` print. No exceptions: a file that breaks a rule is named with the line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top to bottom.
const LAYERS: &[&str] = &[
    "main", "cli", "cmd", "ui", "reaper", "engine", "trash", "sys",
];

/// Where printing is allowed.
const PRINTERS: &[&str] = &["main", "cmd", "ui"];

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == layer)
}

/// Every `.rs` file below `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source without comments, string and character literals (each replaced by spaces, so
/// line numbers stay), so that neither a doc comment nor a message can count as code.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if b[i] == b'r'
            && (b[i + 1..].starts_with(b"\"") || b[i + 1..].starts_with(b"#"))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // A raw string: r"..." or r#"..."#.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let end: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            out.push(b'"');
            i += 2 + hashes;
            while i < b.len() && !b[i..].starts_with(&end) {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.push(b'"');
            i += end.len();
        } else if b[i] == b'"' {
            out.push(b'"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b'"');
            i += 1;
        } else if b[i] == b'\'' {
            // A character literal ('a', '\n', '\''), not a lifetime ('a).
            let lit = if b.get(i + 1) == Some(&b'\\') {
                // An escape: the quote after the escaped character ends it.
                b.get(i + 3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|p| p + 4)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(3)
            } else {
                // A multi-byte character.
                let s = std::str::from_utf8(&b[i + 1..]).ok().or_else(|| {
                    let end = (i + 5).min(b.len());
                    std::str::from_utf8(&b[i + 1..end]).ok()
                });
                s.and_then(|s| s.chars().next())
                    .filter(|c| c.len_utf8() > 1 && b.get(i + 1 + c.len_utf8()) == Some(&b'\''))
                    .map(|c| c.len_utf8() + 2)
            };
            match lit {
                Some(n) => {
                    out.extend(std::iter::repeat_n(b' ', n));
                    i += n;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The module path of a file below `src/` (`engine/walk/mod.rs` → `["engine", "walk"]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    match last.as_str() {
        "mod.rs" => {}
        "main.rs" | "lib.rs" if parts.is_empty() => parts.push(last.replace(".rs", "")),
        f => parts.push(f.trim_end_matches(".rs").to_string()),
    }
    parts
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The paths this code names from the crate's root: `crate::a::b` (also the items of
/// `use crate::{a::b, c}`), `super::` chains resolved from `module`, and (in `main.rs`)
/// `reclaim::a`. Each with its line.
fn crate_paths(code: &str, module: &[String], is_main: bool) -> Vec<(usize, Vec<String>)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    let line_of = |i: usize| code[..i].matches('\n').count() + 1;
    let mut i = 0;
    while i < b.len() {
        if i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b':') {
            i += 1;
            continue;
        }
        let (root, skip): (Option<Vec<String>>, usize) = if b[i..].starts_with(b"crate::") {
            (Some(Vec::new()), 7)
        } else if is_main && b[i..].starts_with(b"reclaim::") {
            (Some(Vec::new()), 9)
        } else if b[i..].starts_with(b"super::") {
            // A file's own module is its parent for `super` unless it is a mod.rs.
            let mut base = module.to_vec();
            let mut j = i;
            while b[j..].starts_with(b"super::") {
                base.pop();
                j += 7;
            }
            (Some(base), j - i)
        } else {
            (None, 0)
        };
        let Some(base) = root else {
            i += 1;
            continue;
        };
        let at = i;
        i += skip;
        for path in path_tree(b, &mut i) {
            let mut full = base.clone();
            full.extend(path);
            found.push((line_of(at), full));
        }
    }
    found
}

/// Reads `a::b::{c, d::e}` at `*i`; returns each path (the leading segments only matter).
fn path_tree(b: &[u8], i: &mut usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    loop {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
        if *i < b.len() && b[*i] == b'{' {
            *i += 1;
            let mut all = Vec::new();
            loop {
                while *i < b.len() && (b[*i].is_ascii_whitespace() || b[*i] == b',') {
                    *i += 1;
                }
                if *i >= b.len() || b[*i] == b'}' {
                    *i += 1;
                    break;
                }
                let before = *i;
                for p in path_tree(b, i) {
                    let mut full = prefix.clone();
                    full.extend(p);
                    all.push(full);
                }
                // Skip `as x` and anything else up to the next item.
                while *i < b.len() && b[*i] != b',' && b[*i] != b'}' {
                    *i += 1;
                }
                if *i == before {
                    *i += 1;
                }
            }
            return all;
        }
        let start = *i;
        while *i < b.len() && is_ident(b[*i]) {
            *i += 1;
        }
        if start == *i {
            return vec![prefix];
        }
        let seg = String::from_utf8_lossy(&b[start..*i]).into_owned();
        if seg != "self" {
            prefix.push(seg);
        }
        if b[*i..].starts_with(b"::") {
            *i += 2;
        } else {
            return vec![prefix];
        }
    }
}

struct Source {
    rel: PathBuf,
    module: Vec<String>,
    /// The text without comments and literals (what is checked).
    code: String,
    /// The text as it is (what is shown).
    text: String,
}

fn read_sources() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_path_buf();
            let text = std::fs::read_to_string(&p).unwrap();
            Source {
                module: module_of(&rel),
                code: code_only(&text),
                text,
                rel,
            }
        })
        .collect()
}

#[test]
fn each_layer_imports_only_the_layers_below_it() {
    let mut wrong = Vec::new();
    let mut seen_layers = BTreeSet::new();
    for s in read_sources() {
        let layer = &s.module[0];
        if layer == "lib" {
            continue;
        }
        let mine = rank(layer).unwrap_or_else(|| {
            panic!(
                "{}: not in a layer folder ({})",
                s.rel.display(),
                LAYERS.join(", ")
            )
        });
        seen_layers.insert(layer.clone());
        for (line, path) in crate_paths(&s.code, &s.module, layer == "main") {
            let Some(theirs) = path.first().and_then(|l| rank(l)) else {
                continue;
            };
            if theirs < mine {
                wrong.push(format!(
                    "src/{}:{line}: {layer} uses {} (a layer above it)",
                    s.rel.display(),
                    path.join("::")
                ));
            }
        }
    }
    assert_eq!(seen_layers.len(), LAYERS.len(), "{seen_layers:?}");
    assert!(
        wrong.is_empty(),
        "imports running upward:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn modules_inside_a_layer_import_each_other_without_a_cycle() {
    // Module = the layer and the next path segment (`engine::remove`, `engine::pace`).
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), String> = BTreeMap::new();
    for s in read_sources() {
        if s.module.len() < 2 {
            continue;
        }
        let from = format!("{}::{}", s.module[0], s.module[1]);
        for (line, path) in crate_paths(&s.code, &s.module, false) {
            if path.len() < 2 || path[0] != s.module[0] {
                continue;
            }
            let to = format!("{}::{}", path[0], path[1]);
            if to != from {
                why.entry((from.clone(), to.clone()))
                    .or_insert_with(|| format!("src/{}:{line}", s.rel.display()));
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|x| x == m).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, &edges, &mut state, &mut Vec::new()) {
                let steps: Vec<String> = c
                    .windows(2)
                    .map(|w| {
                        format!(
                            "{} -> {} ({})",
                            w[0],
                            w[1],
                            why[&(w[0].clone(), w[1].clone())]
                        )
                    })
                    .collect();
                panic!("an import cycle:\n{}", steps.join("\n"));
            }
        }
    }
}

/// The lines of `s` (as "src/FILE:LINE: text") whose code names one of `names` as a whole word
/// (a name that ends in `(` needs no boundary after it).
fn lines_calling(s: &Source, names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for ((n, line), shown) in s.code.lines().enumerate().zip(s.text.lines()) {
        let b = line.as_bytes();
        let hit = names.iter().any(|name| {
            line.match_indices(name).any(|(i, _)| {
                let end = i + name.len();
                (i == 0 || !is_ident(b[i - 1]))
                    && (name.ends_with('(') || end == b.len() || !is_ident(b[end]))
            })
        });
        if hit {
            out.push(format!(
                "src/{}:{}: {}",
                s.rel.display(),
                n + 1,
                shown.trim()
            ));
        }
    }
    out
}

#[test]
fn only_cmd_ui_and_main_print() {
    let mut wrong = Vec::new();
    for s in read_sources() {
        if PRINTERS.contains(&s.module[0].as_str()) {
            continue;
        }
        wrong.extend(lines_calling(
            &s,
            &["print!(", "println!(", "eprint!(", "eprintln!(", "dbg!("],
        ));
    }
    assert!(
        wrong.is_empty(),
        "library code that prints (only cmd/, ui/ and main.rs talk to the user):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_through_comments_strings_and_groups() {
    let code = code_only(
        "use crate::{a::x, b::{c, d}};\n// crate::z\nlet s = \"crate::y\"; super::super::w::v(); '\\''; 'a' ; r#\"crate::q\"#",
    );
    let paths: Vec<String> = crate_paths(&code, &["engine".into(), "pace".into()], false)
        .into_iter()
        .map(|(_, p)| p.join("::"))
        .collect();
    assert_eq!(paths, ["a::x", "b::c", "b::d", "w::v"]);
    assert!(code_only("eprintln!(\"x\") // println!(").contains("eprintln!("));
    assert!(!code_only("let s = \"println!(\";").contains("println!("));
}

/// The files of `src/` compiled only for tests (`#[cfg(test)] mod x;`): not checked by
/// `only_safeopen_opens_by_name` (tests build their fixtures by path).
fn test_only_files(all: &[Source]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for s in all {
        let dir = if s
            .rel
            .file_name()
            .is_some_and(|f| f == "mod.rs" || f == "lib.rs")
        {
            s.rel.parent().unwrap().to_path_buf()
        } else {
            s.rel.with_extension("")
        };
        let mut rest = s.code.as_str();
        while let Some(i) = rest.find("#[cfg(test)]") {
            rest = &rest[i + 12..];
            let t = rest.trim_start();
            let t = t
                .strip_prefix("pub(crate) ")
                .or_else(|| t.strip_prefix("pub "))
                .unwrap_or(t);
            if let Some(m) = t.strip_prefix("mod ") {
                let name: String = m
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if m[name.len()..].trim_start().starts_with(';') {
                    out.insert(dir.join(format!("{name}.rs")));
                    out.insert(dir.join(&name).join("mod.rs"));
                }
            }
        }
    }
    out
}

/// `code` with every `#[cfg(test)] mod x { ... }` blanked (lines kept).
fn without_test_modules(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(i) = code[from..].find("#[cfg(test)]").map(|i| i + from) {
        from = i + 12;
        let Some(open) = code[from..].find(['{', ';']).map(|k| k + from) else {
            break;
        };
        if b[open] == b';' || !code[from..open].contains("mod ") {
            continue;
        }
        let mut depth = 0;
        let mut end = open;
        for (k, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        for c in &mut out[i..=end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = end;
    }
    String::from_utf8(out).unwrap()
}

/// What opens, creates, mounts or removes by name, outside `sys/safeopen/`: each with why.
fn by_name_calls(code: &str) -> Vec<(usize, &'static str)> {
    const RAW: &[&str] = &[
        "openat",
        "openat2",
        "unlinkat",
        "renameat",
        "renameat_with",
        "renameat2",
        "mkdirat",
        "mknodat",
        "symlinkat",
        "linkat",
        "fsopen",
        "fsmount",
        "move_mount",
        "open_tree",
        "fsconfig_set_string",
        "fsconfig_create",
        "fspick",
    ];
    const STD_FS: &[&str] = &[
        "read",
        "read_to_string",
        "write",
        "read_dir",
        "create_dir",
        "create_dir_all",
        "remove_file",
        "remove_dir",
        "remove_dir_all",
        "rename",
        "copy",
        "hard_link",
        "metadata",
        "symlink_metadata",
        "canonicalize",
        "read_link",
        "set_permissions",
        "soft_link",
        "open",
    ];
    const LIBC: &[&str] = &[
        "open",
        "open64",
        "creat",
        "openat",
        "unlink",
        "unlinkat",
        "rename",
        "renameat",
        "renameat2",
        "mkdir",
        "mkdirat",
        "rmdir",
        "mount",
        "umount",
        "umount2",
        "mknod",
        "mknodat",
        "symlink",
        "symlinkat",
        "link",
        "linkat",
        "truncate",
        "fopen",
        "opendir",
    ];
    const PATH_METHODS: &[&str] = &[
        ".exists()",
        ".try_exists()",
        ".canonicalize()",
        ".read_dir()",
        ".read_link()",
        ".symlink_metadata()",
        ".metadata()",
    ];
    let mut hits = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let b = line.as_bytes();
        let word_call = |w: &str| {
            line.match_indices(w).any(|(i, _)| {
                (i == 0 || !is_ident(b[i - 1])) && line[i + w.len()..].trim_start().starts_with('(')
            })
        };
        let hit = if RAW.iter().any(|w| word_call(w)) {
            Some("a raw *at/mount call (use sys::safeopen)")
        } else if STD_FS.iter().any(|f| word_call(&format!("fs::{f}"))) {
            Some("a path-based std::fs or rustix::fs call (use sys::safeopen)")
        } else if ["File::open", "File::create", "File::create_new"]
            .iter()
            .any(|w| word_call(w))
            || line.contains("OpenOptions")
        {
            Some("a file opened by path (use sys::safeopen)")
        } else if LIBC.iter().any(|f| word_call(&format!("libc::{f}"))) {
            Some("a path-based libc call (use sys::safeopen)")
        } else if line.contains("rustix::mount") || word_call("unmount") {
            Some("a mount call (use sys::safeopen::mount)")
        } else if PATH_METHODS.iter().any(|m| line.contains(m)) {
            Some("a path method that looks the path up (use sys::safeopen)")
        } else if line.contains("tempfile::") {
            Some("a temporary file by name (use sys::safeopen::anonymous)")
        } else if line.contains("unix::fs::symlink") || line.contains("unix::fs::chown") {
            Some("a path-based std::os::unix::fs call (use sys::safeopen)")
        } else {
            None
        };
        if let Some(why) = hit {
            hits.push((n + 1, why));
        }
    }
    hits
}

#[test]
fn only_safeopen_opens_creates_mounts_or_removes_by_name() {
    let all = read_sources();
    let tests = test_only_files(&all);
    let mut wrong = Vec::new();
    for s in &all {
        if s.rel.starts_with("sys/safeopen") || tests.contains(&s.rel) {
            continue;
        }
        let code = without_test_modules(&s.code);
        let shown: Vec<&str> = s.text.lines().collect();
        for (line, why) in by_name_calls(&code) {
            wrong.push(format!(
                "src/{}:{line}: {why}: {}",
                s.rel.display(),
                shown[line - 1].trim()
            ));
        }
        // Tools that mount, named in a string the check above cannot see.
        for (n, l) in s.text.lines().enumerate() {
            if l.contains("Command::new(")
                && [
                    "\"mount\"",
                    "\"umount\"",
                    "\"losetup\"",
                    "\"squashfuse\"",
                    "\"fusermount",
                ]
                .iter()
                .any(|t| l.contains(t))
            {
                wrong.push(format!(
                    "src/{}:{}: a mount tool started outside sys::safeopen::mount: {}",
                    s.rel.display(),
                    n + 1,
                    l.trim()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "opens, creates, mounts or removes by name outside src/sys/safeopen/ (DESIGN §7: one \
         module does that, O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC, checked by fstat):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_by_name_check_sees_every_kind_of_call() {
    let code = code_only(
        "rustix::fs::openat(d, n, f, m);\nlet x = unlinkat (d, n, f);\nstd::fs::read(p);\n\
         fs::read_to_string(p);\nFile::open(p);\nstd::fs::OpenOptions::new();\nlibc::mount(a);\n\
         p.exists();\nrustix::mount::fsopen(\"x\", f);\nsafeopen::unlink_at(d, n);\n\
         // openat(\nlet s = \"std::fs::read(\";\nfd.read(&mut buf);\n",
    );
    let lines: Vec<usize> = by_name_calls(&code).into_iter().map(|(l, _)| l).collect();
    assert_eq!(lines, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let code =
        without_test_modules("fn a() {}\n#[cfg(test)]\nmod tests {\n    std::fs::read(p);\n}\n");
    assert!(by_name_calls(&code).is_empty());
}

/// The most lines a file in `src/` may have before its test module: past it, a file holds more
/// than one concept and is split by them.
const MAX_LINES: usize = 900;

#[test]
fn no_file_is_over_900_lines_before_its_tests() {
    let mut wrong = Vec::new();
    for s in read_sources() {
        let before = s
            .text
            .lines()
            .position(|l| l.starts_with("#[cfg(test)]"))
            .unwrap_or_else(|| s.text.lines().count());
        if before > MAX_LINES {
            wrong.push(format!("src/{}: {before} lines", s.rel.display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "files over {MAX_LINES} lines before their test module (split them by concept):\n{}",
        wrong.join("\n")
    );
}

/// Calls that remove a name from a directory.
const REMOVALS: &[&str] = &[
    "unlinkat",
    "unlink_at",
    "unlink_at_with",
    "rmdir_at",
    "remove_file",
    "remove_dir",
    "remove_dir_all",
    "remove_tree_at",
    "rmdir",
    "unlink",
];

#[test]
fn the_command_layer_never_removes() {
    let mut wrong = Vec::new();
    for s in read_sources() {
        if s.module[0] != "cmd" {
            continue;
        }
        wrong.extend(lines_calling(&s, REMOVALS));
    }
    assert!(
        wrong.is_empty(),
        "removals in src/cmd/ (the command layer asks the engine, which removes):\n{}",
        wrong.join("\n")
    );
}

/// Every text file of the repository a reader meets: sources, tests, docs, benchmarks.
fn repository_texts() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "out" {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
            } else if ["rs", "md", "sh", "py", "toml", "service", "timer"]
                .iter()
                .any(|x| p.extension().is_some_and(|e| e == *x))
            {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for d in ["src", "tests", "docs", "bench", "contrib", ".ci"] {
        walk(&root.join(d), &mut out);
    }
    out.push(root.join("README.md"));
    out.sort();
    out
}

/// Words of a lab notebook, not of the project: a numbered work period, "this VM", "this
/// branch". A comment says what and why in the present; a measurement's history is in
/// bench/RESULTS.md under its date and the machine's description.
fn notebook_words(line: &str) -> Option<&'static str> {
    let lower = line.to_lowercase();
    let session = ["sess", "ion"].concat();
    let numbered = lower.match_indices(&session).any(|(i, w)| {
        let rest = lower[i + w.len()..].trim_start_matches('s');
        rest.starts_with(' ') && rest[1..].starts_with(|c: char| c.is_ascii_digit())
            || rest.starts_with('-') && rest[1..].starts_with(|c: char| c.is_ascii_digit())
    });
    if numbered {
        return Some("a numbered work period");
    }
    if lower.contains(&["this ", "vm"].concat()) {
        return Some("\"this VM\"");
    }
    if lower.contains(&["this ", "branch"].concat()) {
        return Some("\"this branch\"");
    }
    None
}

#[test]
fn the_repository_speaks_of_the_project_not_of_work_periods() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    for p in repository_texts() {
        // This file names the words it looks for.
        if p.ends_with("tests/tests/layers.rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if let Some(what) = notebook_words(line) {
                wrong.push(format!(
                    "{}:{}: {what}: {}",
                    p.strip_prefix(root).unwrap().display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "lab-notebook words (say what and why in the present; dated results go to \
         bench/RESULTS.md):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn notebook_words_are_told_from_ordinary_ones() {
    let s = ["sess", "ion"].concat();
    assert!(notebook_words(&format!("measured in {s} 5")).is_some());
    assert!(notebook_words(&format!("2026-11-26, {s}s 8-9")).is_some());
    assert!(notebook_words(&format!("the {s}-3 run")).is_some());
    assert!(notebook_words(&["on this ", "VM's disk"].concat()).is_some());
    assert!(notebook_words(&format!("a login {s} of its own")).is_none());
    assert!(notebook_words("the browse Session ended").is_none());
}
