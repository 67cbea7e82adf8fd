//! A condition of a whole file system (read-only, full) is said once, with what it stopped,
//! not once per path, and with its true reason; a fall-back from `--background` to a removal
//! in the foreground is said, and refused where an undo was asked for. GNU mode stays GNU
//! rm's: one line per path, as `/usr/bin/rm` prints them.

use std::path::Path;

use crate::util::{self, scratch, Scratch, Volume};

/// A tmpfs on `vol` with room for `inodes` inodes, filled to its last one with files
/// `vol/fill-N` (the directory and `files` files `vol/f-N` made first).
fn full_tmpfs(s: &Scratch, inodes: u64, files: usize) -> Result<Volume, String> {
    let v = Volume::tmpfs_with(s, "vol", &format!("size=16m,nr_inodes={inodes}"))?;
    for i in 0..files {
        std::fs::write(s.path(format!("vol/f-{i}")), b"x").unwrap();
    }
    let mut n = 0;
    while std::fs::write(s.path(format!("vol/fill-{n}")), b"").is_ok() {
        n += 1;
    }
    Ok(v)
}

fn lines_with(text: &str, what: &str) -> usize {
    text.lines().filter(|l| l.contains(what)).count()
}

/// No inode left for the trash: the reason is the file system's own (no space, and where),
/// said once for all the paths, and a grace window is not given up: the paths stay.
#[test]
fn no_room_for_a_trash_is_said_once_with_its_true_reason() {
    let s = scratch!();
    util::require_root!();
    let _v = util::or_skip!(full_tmpfs(&s, 64, 5));
    let args = [
        "--background",
        "--grace",
        "1h",
        "vol/f-0",
        "vol/f-1",
        "vol/f-2",
    ];
    let o = s.rm(&args).env(util::NO_SPAWN, "1").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = util::stderr_of(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("3 paths")
            && err.contains("cannot make")
            && err.contains(".reclaim-0")
            && err.contains("No space left on device")
            && err.contains("left in place"),
        "{err}"
    );
    for i in 0..3 {
        assert!(s.exists(format!("vol/f-{i}")), "f-{i} was removed");
    }
    // Without a grace window nothing is promised but the removal: said once, then done.
    let o = s
        .rm(&["--background", "vol/f-0", "vol/f-1", "vol/f-2"])
        .env(util::NO_SPAWN, "1")
        .output()
        .unwrap();
    util::assert_success(&o);
    let err = util::stderr_of(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("No space left on device") && err.contains("removing them now instead"),
        "{err}"
    );
    for i in 0..3 {
        assert!(!s.exists(format!("vol/f-{i}")));
    }
}

/// `prune` hides what it removes; where no trash can be made, the thousands of files it
/// removes in the foreground instead are said in one line, not one each.
#[test]
fn prune_says_once_that_no_trash_could_be_made() {
    let s = scratch!();
    util::require_root!();
    let _v = util::or_skip!(full_tmpfs(&s, 600, 0));
    // The fill files are the entries; keep the newest.
    let o = s
        .cmd(&["prune", "--keep-last", "1", "vol"])
        .env(util::NO_SPAWN, "1")
        .output()
        .unwrap();
    util::assert_success(&o);
    let err = util::stderr_of(&o);
    assert_eq!(lines_with(&err, "removing"), 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let left = std::fs::read_dir(s.path("vol")).unwrap().count();
    assert_eq!(left, 1, "{err}");
}

/// A read-only file system: `reclaim rm -r` says the first path and then how many more, not
/// 2,000 lines; `--json` still lists every path; GNU mode prints what GNU rm prints, one line
/// per path.
#[test]
fn a_read_only_file_system_is_said_once_with_a_count() {
    let s = scratch!();
    util::require_root!();
    for d in 0..4 {
        for f in 0..500 {
            s.file(format!("src/d{d}/f{f}"), "x");
        }
    }
    let _ro = util::or_skip!(Volume::bind(&s, "src", "ro", true));
    let before = s.snapshot("ro");
    let o = s
        .rm(&["-r", "ro/d0", "ro/d1", "ro/d2", "ro/d3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = util::stderr_of(&o);
    assert!(err.lines().count() <= 3, "{err}");
    assert_eq!(lines_with(&err, "Read-only file system"), 2, "{err}");
    assert!(err.contains("and 1,999 more paths not removed"), "{err}");
    let o = s
        .rm(&["-r", "--json", "ro/d0", "ro/d1", "ro/d2", "ro/d3"])
        .output()
        .unwrap();
    let v = util::json_object(&o.stdout);
    assert_eq!(v["errors"].as_array().unwrap().len(), 2000, "{v}");
    util::assert_same("ro", &before, &s.snapshot("ro"));
    // GNU mode: as GNU rm, line for line.
    let link = s.path("bin/rm");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(util::reclaim_bin(), &link).unwrap();
    let gnu = |prog: &Path| {
        use std::os::unix::process::CommandExt;
        let o = std::process::Command::new(prog)
            .arg0("rm")
            .args(["-r", "ro/d0"])
            .current_dir(s.root())
            .env("RECLAIM_CONFIG", "")
            .env("LC_ALL", "C")
            .output()
            .unwrap();
        let mut lines: Vec<String> = util::stderr_of(&o).lines().map(String::from).collect();
        lines.sort();
        (o.status.code(), lines)
    };
    let (code, ours) = gnu(&link);
    let (want_code, theirs) = gnu(Path::new("/usr/bin/rm"));
    assert_eq!(code, want_code);
    assert_eq!(ours.len(), 500, "one line per file, as GNU rm");
    assert!(ours == theirs, "{:?}\n{:?}", &ours[..2], &theirs[..2]);
}
