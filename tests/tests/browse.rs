//! `reclaim browse` driven in a pseudo-terminal, its screen read back (`tty.rs`): the listing
//! and its order, entering and leaving, deleting into the trash and undoing it byte for byte,
//! several marked, emptying, the question before a removal that cannot be undone, names that
//! try to drive the terminal, symlinks and mounts, a directory removed by someone else, an
//! import, and the terminal given back on quit, Ctrl-C and SIGTERM. Text goldens of the main
//! screens are in tests/golden/browse/ (`RECLAIM_BLESS=1` rewrites them).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::tty::Tty;
use crate::util::{self, scratch, Scratch, Volume};

/// A fixed time for every entry of a golden tree: 2020-01-02 03:04 UTC.
const STAMP: &str = "@1577934240";

/// `reclaim browse ARGS` in `s`'s `cwd` on a terminal of `cols` x `rows`: no config, trashes
/// only below the scratch directory, no detached reaper (the trash stays as the view left
/// it), UTC, a UTF-8 locale.
fn browse(s: &Scratch, cwd: &str, args: &[&OsStr], cols: u16, rows: u16) -> Tty {
    browse_as(s, None, cwd, args, cols, rows)
}

/// `browse`, as `uid` (and gid `uid`, no other groups) when given.
fn browse_as(
    s: &Scratch,
    uid: Option<u32>,
    cwd: &str,
    args: &[&OsStr],
    cols: u16,
    rows: u16,
) -> Tty {
    let dir = s.path(cwd);
    let mut all: Vec<&OsStr> = vec![OsStr::new("browse")];
    all.extend_from_slice(args);
    s.check_args(&dir, &all);
    let mut c = match uid {
        None => Command::new(util::reclaim_bin()),
        Some(u) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={u}"))
                .arg(format!("--regid={u}"))
                .args(["--clear-groups", "--"])
                .arg(util::reclaim_bin());
            c
        }
    };
    c.args(&all)
        .current_dir(&dir)
        .env("RECLAIM_CONFIG", "")
        .env("RECLAIM_UNDER", s.root())
        .env("XDG_CACHE_HOME", s.root().join(".cache"))
        .env(util::NO_SPAWN, "1")
        .env("TZ", "UTC")
        .env("LANG", "C.UTF-8")
        .env("TERM", "xterm-256color")
        .env_remove("LC_ALL")
        .env_remove("NO_COLOR");
    Tty::spawn(c, cols, rows)
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// Sets the mtime of every entry below (and of) `p` to `STAMP`, without following symlinks.
fn stamp(p: &Path) {
    let out = Command::new("find")
        .arg(p)
        .args(["-exec", "touch", "-h", "-d", STAMP, "{}", "+"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// Waits for the scan to finish (its title says so).
fn scanned(t: &Tty) -> String {
    t.wait_text("scanned ")
}

/// Quits with `q` and checks the terminal is back as it was: exit 0, cooked mode, the normal
/// screen, a visible cursor.
fn quit(mut t: Tty) {
    t.send(b"q");
    let st = t.wait_exit();
    assert_eq!(
        st.code(),
        Some(0),
        "exit status; the screen:\n{}",
        t.screen()
    );
    assert_restored(&t);
}

fn assert_restored(t: &Tty) {
    assert!(t.cooked(), "the terminal is left in raw mode");
    assert_eq!(
        t.modes(),
        (false, false),
        "alternate screen, hidden cursor left"
    );
}

/// The names of the list rows, in order (`/dir` for directories): from the column the
/// heads' `Name` starts at.
fn names(screen: &str) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let Some(at) = lines.get(2).and_then(|h| h.find("Name")) else {
        return Vec::new();
    };
    lines
        .iter()
        .skip(3)
        .take(lines.len().saturating_sub(5))
        .filter_map(|l| {
            let name: String = l.chars().skip(at).collect();
            let name = name.trim_start_matches(' ').to_string();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// The parts of a screen that differ from run to run made fixed, for a golden.
fn steady(screen: &str) -> String {
    let mut out = Vec::new();
    for line in screen.lines() {
        let mut l = line.to_string();
        if let Some(at) = l.find("scanned ") {
            if let Some(inn) = l[at..].find(" in ") {
                let end = l[at + inn + 4..]
                    .find(" s")
                    .map_or(l.len(), |e| at + inn + 4 + e + 2);
                l.replace_range(at + inn + 4..end, "T");
            }
        }
        if let Some(at) = l.find("| free ") {
            let end = l[at + 2..].find(" |").map_or(l.len(), |e| at + 2 + e);
            l.replace_range(at..end, "| free F of T");
        }
        if let Some(at) = l.find("Inode:") {
            let end = l[at..].find('│').map_or(l.len(), |e| at + e);
            let width = end - at;
            l.replace_range(at..end, &format!("{:<width$}", "Inode:    N"));
        }
        out.push(l);
    }
    out.join("\n") + "\n"
}

/// A small tree of known sizes and times on a fresh tmpfs (sizes there are whole pages):
/// returns the volume (unmounted when dropped) and the tree's path relative to the root.
fn golden_tree(s: &Scratch) -> Result<Volume, String> {
    let v = Volume::tmpfs(s, "vol")?;
    s.file("vol/top/big.bin", vec![7u8; 3 << 20]);
    s.file("vol/top/logs/app.log", vec![b'l'; 100_000]);
    s.file("vol/top/logs/app.log.1", vec![b'l'; 20_000]);
    s.file("vol/top/logs/tiny", b"x");
    s.file("vol/top/src/lib/a.rs", vec![b'r'; 9_000]);
    s.file("vol/top/src/main.rs", vec![b'r'; 5_000]);
    s.file("vol/top/hard1", vec![b'h'; 50_000]);
    s.hardlink("vol/top/hard2", "vol/top/hard1");
    s.symlink("vol/top/link", "/");
    s.mkdir("vol/top/empty");
    let evil = s
        .path("vol/top")
        .join(OsStr::from_bytes(b"evil\x1b]0;pwned\x07.txt"));
    fs::write(evil, b"owned?").unwrap();
    stamp(&s.path("vol/top"));
    Ok(v)
}

#[test]
fn lists_biggest_first_enters_and_comes_back_and_matches_the_goldens() {
    util::require_root!();
    let s = scratch!();
    let _v = util::or_skip!(golden_tree(&s));
    let mut t = browse(&s, "vol", &[os("top")], 100, 24);
    let first = scanned(&t);
    // Largest first; the hard link's bytes count once (in the totals; each name shows its
    // size, marked H); a symlink is never followed.
    assert_eq!(
        names(&first),
        [
            "big.bin",
            "/logs",
            "hard1",
            "hard2",
            "/src",
            "evil\\033]0;pwned\\a.txt",
            "/empty",
            "link",
        ],
        "{first}"
    );
    super::golden::golden("browse/list.txt", &steady(&first));
    // Each frame is one synchronized update: a terminal that knows the mode never shows half
    // of one (and this harness shows whole frames only: `tty::Frames`).
    let raw = t.raw();
    let count = |mark: &[u8]| raw.windows(mark.len()).filter(|w| *w == mark).count();
    let (begins, ends) = (count(b"\x1b[?2026h"), count(b"\x1b[?2026l"));
    assert!(
        begins > 0 && ends >= begins.saturating_sub(1),
        "{begins} {ends}"
    );
    // The selected row is the first.
    assert!(t.reversed_row(3).is_some_and(|r| r.contains("big.bin")));
    // Down to logs, into it, back: the cursor is on logs again.
    t.send(b"j");
    t.wait_for("logs selected", |_| {
        t.reversed_row(3).is_some_and(|r| r.contains("/logs"))
    });
    t.send(b"\r");
    let inside = t.wait_text("--- top/logs ---");
    assert_eq!(names(&inside), ["app.log", "app.log.1", "tiny"]);
    super::golden::golden("browse/inside.txt", &steady(&inside));
    t.send(b"h");
    t.wait_text("--- top ---");
    t.wait_for("logs selected again", |_| {
        t.reversed_row(3).is_some_and(|r| r.contains("/logs"))
    });
    // Name order, then details, then help.
    t.send(b"n");
    let by_name = t.wait_text("by name ^");
    let names_now = names(&by_name);
    let mut sorted = names_now.clone();
    sorted.sort_by(|a, b| a.trim_start_matches('/').cmp(b.trim_start_matches('/')));
    assert_eq!(names_now, sorted);
    t.send(b"s");
    t.wait_text("by disk usage v");
    t.send(b"i");
    let details = t.wait_text(" Details ");
    super::golden::golden("browse/details.txt", &steady(&details));
    t.send(b"x");
    t.wait_for("details closed", |s| !s.contains(" Details "));
    t.send(b"?");
    let help = t.wait_text("reclaim browse: keys");
    super::golden::golden("browse/help.txt", &steady(&help));
    t.send(b"x");
    t.wait_for("help closed", |s| !s.contains("reclaim browse: keys"));
    t.send(b"d");
    let confirm = t.wait_text(" Delete? ");
    super::golden::golden("browse/delete.txt", &steady(&confirm));
    t.send(b"n");
    t.wait_text("nothing done");
    assert!(s.exists("vol/top/big.bin"));
    quit(t);
}

/// The IDs of the entries of the trash at the top of `vol`.
fn trash_ids(s: &Scratch) -> Vec<String> {
    util::trash_entries(&util::trash_dir(&s.path("vol")))
}

#[test]
fn delete_then_undo_restores_byte_for_byte() {
    let s = scratch!();
    let (_settle, _v) = util::or_skip!(util::trash_vol(&s));
    s.file("vol/top/gone/a", vec![1u8; 200_000]);
    s.file("vol/top/gone/sub/b", b"bee");
    s.symlink("vol/top/gone/sub/l", "../a");
    s.file("vol/top/keep", b"k");
    let before = s.snapshot("vol/top");
    let ino = fs::symlink_metadata(s.path("vol/top/gone")).unwrap().ino();
    let mut t = browse(&s, "vol", &[os("top")], 100, 24);
    let screen = scanned(&t);
    assert_eq!(names(&screen), ["/gone", "keep"], "{screen}");
    t.send(b"d");
    let ask = t.wait_text(" Delete? ");
    assert!(ask.contains("1 entry (200.0 KiB, 5 items)"), "{ask}");
    t.send(b"y");
    let after = t.wait_text("deleted 1 entry");
    assert!(
        after.contains("into the trash; u restores until"),
        "{after}"
    );
    assert_eq!(names(&after), ["keep"], "{after}");
    assert!(!s.exists("vol/top/gone"));
    let ids = trash_ids(&s);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let meta = util::entry_meta(&util::trash_dir(&s.path("vol")), &ids[0]);
    assert_eq!(
        meta["original"].as_str().map(Path::new),
        Some(s.path("vol/top/gone").as_path()),
        "{meta}"
    );
    // The size the scan found is recorded (status and free-space targets count it).
    assert_eq!(meta["allocated"], 200 * 1024, "{meta}");
    assert!(meta["grace_until_unix"].as_f64().is_some(), "{meta}");
    // The status bar counts what waits in the trash.
    t.wait_text("trash: 1");
    t.send(b"u");
    let back = t.wait_text("restored 1 entry");
    assert_eq!(names(&back), ["/gone", "keep"], "{back}");
    util::assert_same("the tree after undo", &before, &s.snapshot("vol/top"));
    // The very directory, not a copy.
    assert_eq!(
        fs::symlink_metadata(s.path("vol/top/gone")).unwrap().ino(),
        ino
    );
    assert!(trash_ids(&s).is_empty());
    quit(t);
}

#[test]
fn several_marked_are_hidden_together_and_come_back_together() {
    let s = scratch!();
    let (_settle, _v) = util::or_skip!(util::trash_vol(&s));
    s.file("vol/top/m1", vec![1u8; 40_000]);
    s.file("vol/top/m2", vec![1u8; 30_000]);
    s.mkdir("vol/top/m3/inner");
    s.file("vol/top/m3/inner/f", vec![1u8; 20_000]);
    s.file("vol/top/stay", b"s");
    let before = s.snapshot("vol/top");
    let mut t = browse(&s, "vol", &[os("top")], 100, 24);
    let screen = scanned(&t);
    assert_eq!(names(&screen), ["m1", "m2", "/m3", "stay"], "{screen}");
    t.send(b"   ");
    t.wait_text("3 marked");
    t.send(b"d");
    let ask = t.wait_text(" Delete? ");
    assert!(ask.contains("3 entries"), "{ask}");
    for n in ["top/m1", "top/m2", "top/m3"] {
        assert!(ask.contains(n), "{n} not named: {ask}");
    }
    t.send(b"y");
    let after = t.wait_text("deleted 3 entries");
    assert_eq!(names(&after), ["stay"], "{after}");
    assert!(!after.contains("marked"), "{after}");
    // One batch entry for the three (one directory), as prune hides.
    assert_eq!(trash_ids(&s).len(), 1);
    t.send(b"u");
    let back = t.wait_text("restored 3 entries");
    assert_eq!(names(&back), ["m1", "m2", "/m3", "stay"], "{back}");
    util::assert_same("the tree after undo", &before, &s.snapshot("vol/top"));
    quit(t);
}

#[test]
fn empty_keeps_the_directory_and_undo_brings_its_entries_back() {
    let s = scratch!();
    let (_settle, _v) = util::or_skip!(util::trash_vol(&s));
    for i in 0..50 {
        s.file(format!("vol/top/cache/f{i}"), vec![1u8; 5000]);
    }
    s.file("vol/top/cache/d/x", b"x");
    s.file("vol/top/other", b"o");
    let before = s.snapshot("vol/top");
    let ino = fs::symlink_metadata(s.path("vol/top/cache")).unwrap().ino();
    let mut t = browse(&s, "vol", &[os("top")], 100, 24);
    scanned(&t);
    t.send(b"e");
    let ask = t.wait_text("Empty this directory?");
    assert!(ask.contains("Its 51 entries"), "{ask}");
    t.send(b"y");
    t.wait_text("emptied top/cache:");
    let cache = s.path("vol/top/cache");
    assert_eq!(fs::read_dir(&cache).unwrap().count(), 0);
    assert_eq!(
        fs::symlink_metadata(&cache).unwrap().ino(),
        ino,
        "the directory stays"
    );
    t.send(b"\r");
    t.wait_text("(empty directory)");
    t.send(b"hu");
    t.wait_text("restored 51 entries");
    util::assert_same("the tree after undo", &before, &s.snapshot("vol/top"));
    quit(t);
}

#[test]
fn a_name_holding_an_escape_sequence_never_reaches_the_terminal_raw() {
    let s = scratch!();
    s.mkdir("top");
    for name in [
        &b"title\x1b]0;pwned\x07"[..],
        b"csi\x1b[2J\x1b[31mred",
        b"bell\x07\x07",
        b"\xff\xfenot utf8",
        "rtl\u{202e}txt.exe".as_bytes(),
        b"new\nline",
    ] {
        fs::write(s.path("top").join(OsStr::from_bytes(name)), b"x").unwrap();
    }
    let mut t = browse(&s, "top", &[], 100, 24);
    let screen = scanned(&t);
    for shown in [
        "title\\033]0;pwned\\a",
        "csi\\033[2J\\033[31mred",
        "bell\\a\\a",
        "\\377\\376not utf8",
        "rtl\\342\\200\\256txt.exe",
        "new\\nline",
    ] {
        assert!(screen.contains(shown), "{shown} not shown: {screen}");
    }
    t.send(b"q");
    assert_eq!(t.wait_exit().code(), Some(0));
    let raw = t.raw();
    let has = |needle: &[u8]| raw.windows(needle.len()).any(|w| w == needle);
    assert!(!has(b"\x1b]"), "an OSC sequence reached the terminal");
    assert!(!has(b"\x07"), "a BEL reached the terminal");
    assert!(
        !has(b"\x1b[2J\x1b[31mred"),
        "a name's CSI reached the terminal"
    );
    assert!(
        !has("\u{202e}".as_bytes()),
        "a bidi override reached the terminal"
    );
    assert!(
        !has(b"\xff\xfe"),
        "bytes that are not UTF-8 reached the terminal"
    );
}

#[test]
fn sigterm_and_ctrl_c_give_the_terminal_back() {
    let s = scratch!();
    s.file("top/f", b"x");
    let mut t = browse(&s, "top", &[], 80, 20);
    scanned(&t);
    assert!(!t.cooked(), "raw mode while browsing");
    assert_eq!(t.modes(), (true, true));
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(t.child.id() as i32, libc::SIGTERM) };
    let st = t.wait_exit();
    assert_eq!(st.code(), Some(128 + libc::SIGTERM), "{}", t.screen());
    assert_restored(&t);

    let mut t = browse(&s, "top", &[], 80, 20);
    scanned(&t);
    t.send(b"\x03");
    let st = t.wait_exit();
    assert_eq!(st.code(), Some(130), "{}", t.screen());
    assert_restored(&t);
}

#[test]
fn resize_redraws_for_the_new_size() {
    let s = scratch!();
    s.file("top/some-file", b"x");
    let mut t = browse(&s, "top", &[], 110, 24);
    let wide = scanned(&t);
    assert!(wide.contains("Modified"), "{wide}");
    t.resize(64, 14);
    let narrow = t.wait_for("the narrow layout", |s| {
        !s.contains("Modified") && s.contains("some-file")
    });
    assert!(narrow.lines().all(|l| l.chars().count() <= 64), "{narrow}");
    quit(t);
}

#[test]
fn a_directory_removed_during_the_scan_is_no_error_and_one_removed_after_leaves_the_view() {
    let s = scratch!();
    // On a tmpfs of its own: whatever the view hid would go to that file system's trash,
    // inside the scratch directory (a 1-byte file takes a page there: 64 MiB).
    let (_settle, _v) = util::or_skip!(util::trash_vol_with(&s, "size=64m"));
    // Enough entries that the scan is still at work while the victim goes.
    for d in 0..40 {
        for f in 0..250 {
            s.file(format!("vol/top/victim/d{d}/f{f}"), b"v");
        }
    }
    s.file("vol/top/later/f", vec![1u8; 10_000]);
    s.file("vol/top/stays", b"s");
    let victim = s.path("vol/top/victim");
    let mut t = browse(&s, "vol", &[os("--threads"), os("1"), os("top")], 100, 24);
    fs::remove_dir_all(&victim).unwrap();
    let screen = scanned(&t);
    // Gone before it was read is no read error.
    assert!(!screen.contains("unreadable"), "{screen}");
    // Removed by someone else after the scan: deleting it says so, and it leaves the view.
    fs::remove_dir_all(s.path("vol/top/later")).unwrap();
    // The cursor stays on the entry it was on while the scan reordered the rows (not
    // always the first row): counted from the first row, and the question read before it
    // is answered.
    let at = wait_row(&t, "/later");
    t.send(b"\x1b[H");
    t.send(&b"j".repeat(at));
    t.wait_for("later selected", |_| {
        t.reversed_row(3).is_some_and(|r| r.contains("/later"))
    });
    // A `y` typed with the `d`, before the question was on the screen, answers nothing: the
    // question stays until a key read after it answers it.
    t.send(b"dy");
    let ask = t.wait_text(" Delete? ");
    assert!(ask.contains("top/later"), "{ask}");
    assert!(!ask.contains("top/stays"), "{ask}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let still = t.screen();
    assert!(
        still.contains(" Delete? ") && !still.contains("Not done:"),
        "{still}"
    );
    t.send(b"y");
    let note = t.wait_text("Not done:");
    assert!(
        note.contains("top/later: No such file or directory"),
        "{note}"
    );
    t.send(b"x");
    let after = t.wait_for("the note closed", |s| !s.contains("Not done:"));
    assert!(!names(&after).contains(&"/later".to_string()), "{after}");
    assert!(s.exists("vol/top/stays"));
    assert!(trash_ids(&s).is_empty(), "{:?}", trash_ids(&s));
    t.send(b"q");
    // A failed action is an exit status of 1.
    assert_eq!(t.wait_exit().code(), Some(1));
    assert_restored(&t);
}

/// The row of the entry named `name` once the scan is done and the rows read the same twice
/// in a row, a listing refresh apart (not a frame still being written).
fn wait_row(t: &Tty, name: &str) -> usize {
    let mut last = Vec::new();
    loop {
        let screen = t.wait_for(&format!("{name} listed"), |s| {
            s.contains("scanned ") && names(s).iter().any(|n| n == name)
        });
        let rows = names(&screen);
        if rows == last {
            return rows.iter().position(|n| n == name).unwrap();
        }
        last = rows;
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// `d`, and the question it asks once it is on the screen (a `y` sent with the `d` would be
/// typed ahead of the question, and is no answer to it).
fn delete_asked(t: &mut Tty) -> String {
    t.send(b"d");
    t.wait_text(" Delete? ")
}

#[test]
fn where_no_trash_can_be_made_removing_for_good_is_asked_first() {
    let s = scratch!();
    let _v = util::or_skip!(Volume::tmpfs_with(&s, "vol", "size=1m,nr_inodes=16"));
    s.file("vol/top/old.log", vec![1u8; 8192]);
    // Fill the blocks, then the inodes: no room for a trash or an entry's record.
    {
        use std::io::Write;
        let mut filler = fs::File::create(s.path("vol/filler")).unwrap();
        let chunk = vec![1u8; 4096];
        while filler.write_all(&chunk).is_ok() {}
        while filler.write_all(&[1u8]).is_ok() {}
    }
    for n in 0.. {
        if fs::File::create(s.path("vol").join(format!("inode{n}"))).is_err() {
            break;
        }
    }
    let mut t = browse(&s, "vol", &[os("top")], 100, 24);
    scanned(&t);
    delete_asked(&mut t);
    t.send(b"y");
    let ask = t.wait_text("No undo possible");
    assert!(ask.contains("cannot go to a trash"), "{ask}");
    assert!(ask.contains("This cannot be undone"), "{ask}");
    // Nothing went yet.
    assert!(s.exists("vol/top/old.log"));
    t.send(b"y");
    t.wait_text("removed 1 entry for good");
    assert!(!s.exists("vol/top/old.log"));
    quit(t);
}

#[test]
fn symlinks_are_never_followed_and_mounts_are_entered_only_when_asked() {
    let s = scratch!();
    let (_settle, _v) = util::or_skip!(util::trash_vol(&s));
    s.file("outside/precious", vec![9u8; 50_000]);
    let outside = s.snapshot("outside");
    s.symlink("vol/top/link", s.path("outside"));
    s.file("vol/top/own", b"o");
    let _inner = util::or_skip!(Volume::tmpfs(&s, "vol/top/mnt"));
    s.file("vol/top/mnt/elsewhere", vec![1u8; 100_000]);
    let mut t = browse(&s, "vol", &[os("top")], 100, 24);
    let screen = scanned(&t);
    // The mount point is shown, marked and not counted; its file is not listed anywhere.
    let mnt = screen
        .lines()
        .find(|l| l.ends_with("/mnt"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(mnt.starts_with(" >"), "{mnt}");
    assert!(!screen.contains("100.0 KiB"), "{screen}");
    let link = screen.lines().find(|l| l.ends_with(" link")).unwrap();
    assert!(link.starts_with(" @"), "{link}");
    // Enter on the link stays here (a link is not a directory to enter).
    let at = names(&screen).iter().position(|n| n == "link").unwrap();
    t.send(&b"j".repeat(at));
    t.wait_for("link selected", |_| {
        t.reversed_row(3).is_some_and(|r| r.contains("link"))
    });
    t.send(b"\r");
    // Deleting the link takes the link, never what it points to.
    let ask = delete_asked(&mut t);
    assert!(ask.contains("top/link"), "{ask}");
    t.send(b"y");
    t.wait_text("deleted 1 entry");
    assert!(!s.exists("vol/top/link"));
    util::assert_same("what the link pointed to", &outside, &s.snapshot("outside"));
    // The mount: Enter asks, then scans it.
    t.send(b"g");
    let screen = t.wait_text("--- top ---");
    let at = names(&screen).iter().position(|n| n == "/mnt").unwrap();
    t.send(b"\x1b[H");
    t.send(&b"j".repeat(at));
    t.wait_for("mnt selected", |_| {
        t.reversed_row(3).is_some_and(|r| r.contains("/mnt"))
    });
    // Never deleted from here: that would empty another file system.
    t.send(b"d");
    t.wait_text("another file system's mount point (unmount it first): left out");
    assert!(s.exists("vol/top/mnt/elsewhere"));
    t.send(b"\r");
    let ask = t.wait_text("Enter another file system?");
    assert!(ask.contains("another file system (a mount point)"), "{ask}");
    t.send(b"y");
    t.wait_for("the mount's entries", |s| {
        s.contains("--- top/mnt ---") && s.contains("elsewhere")
    });
    quit(t);
}

#[test]
fn an_import_is_browsing_only() {
    let s = scratch!();
    s.file("t/a/big", vec![1u8; 100_000]);
    s.file("t/b", b"b");
    s.mkdir("out");
    let out = s
        .cmd(&["scan", "--no-estimate", "--export", "out/t.json", "t"])
        .output()
        .unwrap();
    util::assert_success(&out);
    let mut t = browse(&s, ".", &[os("--import"), os("out/t.json")], 100, 24);
    let screen = t.wait_for("the import read", |s| {
        s.contains("import of out/t.json by reclaim") && !s.contains("reading")
    });
    assert_eq!(names(&screen), ["/a", "b"], "{screen}");
    t.send(b"d");
    t.wait_text("browsing an import");
    t.send(b"e");
    t.wait_text("e: browsing an import");
    assert!(s.exists("t/a/big") && s.exists("t/b"));
    quit(t);
    // A file that is not an export: said in one line, exit 1, the terminal untouched.
    s.file("out/not.json", b"{\"hello\": 1}");
    let mut t = browse(&s, ".", &[os("--import"), os("out/not.json")], 100, 24);
    assert_eq!(t.wait_exit().code(), Some(1));
    let said = t.screen();
    assert!(
        said.contains(
            "reclaim browse: 'out/not.json' is not an ncdu export (byte 1): expected '['"
        ),
        "{said}"
    );
    assert_restored(&t);
}

#[test]
fn without_a_terminal_it_is_a_usage_error() {
    let s = scratch!();
    s.mkdir("t");
    let o = s.cmd(&["browse", "t"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = util::stderr_of(&o);
    assert!(err.contains("must be a terminal"), "{err}");
}

#[test]
fn filters_by_name_and_by_age() {
    let s = scratch!();
    s.file("top/old-report.txt", vec![1u8; 9000]);
    s.file("top/old-data.bin", vec![1u8; 5000]);
    s.file("top/new-report.txt", b"n");
    stamp(&s.path("top/old-report.txt"));
    stamp(&s.path("top/old-data.bin"));
    let mut t = browse(&s, "top", &[], 100, 24);
    scanned(&t);
    t.send(b"/report");
    let only = t.wait_for("the name filter", |s| names(s).len() == 2);
    assert_eq!(names(&only), ["old-report.txt", "new-report.txt"], "{only}");
    t.send(b"\r\x1b");
    t.wait_for("all again", |s| names(s).len() == 3);
    t.send(b"o365d\r");
    let old = t.wait_for("the age filter", |s| names(s).len() == 2);
    assert_eq!(names(&old), ["old-report.txt", "old-data.bin"], "{old}");
    assert!(old.contains("older than 365d"), "{old}");
    // The command line's duration grammar: a bad age is said.
    t.send(b"o\x7f\x7f\x7f\x7fsoon\r");
    t.wait_text("o: ");
    quit(t);
}

#[test]
fn pack_packs_a_directory_with_reclaims_pack() {
    if Command::new("tar2sqfs").arg("--version").output().is_err() {
        util::skip!("no tar2sqfs (squashfs-tools-ng; .ci/run installs it)");
    }
    let s = scratch!();
    for i in 0..30 {
        s.file(format!("top/cold/f{i}"), format!("file {i}\n"));
    }
    let before = s.snapshot("top/cold");
    let mut t = browse(&s, ".", &[os("top")], 100, 24);
    scanned(&t);
    t.send(b"p");
    let ask = t.wait_text("Pack this directory?");
    assert!(ask.contains("top/cold.sqfs"), "{ask}");
    t.send(b"y");
    let done = t.wait_text("packed top/cold into top/cold.sqfs");
    assert!(names(&done).contains(&"cold.sqfs".to_string()), "{done}");
    assert!(!s.exists("top/cold"));
    quit(t);
    let o = s
        .cmd(&["unpack", "top/cold.sqfs", "top/back"])
        .output()
        .unwrap();
    util::assert_success(&o);
    util::assert_same("the unpacked tree", &before, &s.snapshot("top/back"));
}

#[test]
fn unreadable_directories_are_marked_and_so_are_the_directories_above() {
    util::require_root!();
    use std::os::unix::fs::PermissionsExt;
    const USER: u32 = 61001;
    let s = scratch!();
    fs::set_permissions(s.root(), fs::Permissions::from_mode(0o755)).unwrap();
    s.file("top/deep/secret/inside", vec![1u8; 30_000]);
    s.file("top/open/f", b"f");
    // Root's, closed to others: the user lists top and deep, never secret.
    std::os::unix::fs::chown(s.path("top"), Some(USER), Some(USER)).unwrap();
    std::os::unix::fs::chown(s.path("top/open"), Some(USER), Some(USER)).unwrap();
    std::os::unix::fs::chown(s.path("top/open/f"), Some(USER), Some(USER)).unwrap();
    fs::set_permissions(s.path("top/deep/secret"), fs::Permissions::from_mode(0o700)).unwrap();
    let mut t = browse_as(&s, Some(USER), ".", &[os("top")], 100, 24);
    let screen = scanned(&t);
    assert!(screen.contains("1 unreadable"), "{screen}");
    let deep = screen
        .lines()
        .find(|l| l.ends_with("/deep"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(deep.starts_with(" ."), "{deep}");
    let open = screen.lines().find(|l| l.ends_with("/open")).unwrap();
    assert!(open.starts_with("  "), "{open}");
    t.send(b"\r");
    let inside = t.wait_text("--- top/deep ---");
    let secret = inside
        .lines()
        .find(|l| l.ends_with("/secret"))
        .unwrap_or_else(|| panic!("{inside}"));
    assert!(secret.starts_with(" !"), "{secret}");
    quit(t);
}

#[test]
fn the_trash_is_never_deleted_or_emptied_from_the_view() {
    let s = scratch!();
    let (_settle, _v) = util::or_skip!(util::trash_vol(&s));
    s.file("vol/old/big", vec![1u8; 300_000]);
    let o = s
        .rm(&["-r", "--background", "--grace", "1h", "vol/old"])
        .env(util::NO_SPAWN, "1")
        .output()
        .unwrap();
    util::assert_success(&o);
    let trash = util::trash_dir(&s.path("vol"));
    let held = s.snapshot("vol");
    let mut t = browse(&s, ".", &[os("vol")], 100, 24);
    let screen = scanned(&t);
    let name = format!("/{}", trash.file_name().unwrap().to_str().unwrap());
    let at = names(&screen)
        .iter()
        .position(|n| *n == name)
        .unwrap_or_else(|| panic!("{screen}"));
    t.send(&b"j".repeat(at));
    t.wait_for("the trash selected", |_| {
        t.reversed_row(3).is_some_and(|r| r.contains(&name))
    });
    delete_asked(&mut t);
    t.send(b"y");
    let note = t.wait_text("Not done:");
    assert!(note.contains("it is reclaim's trash"), "{note}");
    t.send(b"x");
    t.wait_for("the note closed", |s| !s.contains("Not done:"));
    t.send(b"e");
    t.wait_text("Empty this directory?");
    t.send(b"y");
    let note = t.wait_text("Not done:");
    assert!(note.contains("it is reclaim's trash"), "{note}");
    util::assert_same("the trash", &held, &s.snapshot("vol"));
    t.send(b"x");
    t.send(b"q");
    assert_eq!(t.wait_exit().code(), Some(1));
}
