//! Round 4 of the trust boundaries (issue 40, docs/TRUST.md "Round 4"): what `pack`,
//! `unpack`, the selection's lists and btrfs opened. One test per finding, each with real uids
//! (the victim, the attacker, a bystander) as the rest of `adversary.rs`, each seen failing on
//! the code before its fix.

use super::*;

/// The squashfs tools `pack` needs, or why the test cannot run.
fn pack_tools() -> Result<(), String> {
    crate::pack::tools()
}

const MAGIC: &[u8; 16] = b"reclaim-pack-v1\0";

/// The image bytes of a reclaim archive and its manifest (the JSON, decompressed).
fn split_archive(p: &Path) -> (Vec<u8>, Value) {
    let b = fs::read(p).unwrap();
    let foot = &b[b.len() - 64..];
    assert_eq!(&foot[..16], MAGIC, "{} is no reclaim archive", p.display());
    let word = |i: usize| u64::from_le_bytes(foot[i..i + 8].try_into().unwrap()) as usize;
    let (off, len) = (word(16), word(24));
    let json = zstd::decode_all(&b[off..off + len]).unwrap();
    (b[..off].to_vec(), serde_json::from_slice(&json).unwrap())
}

/// Writes `image` followed by the compressed manifest `packed` and a footer that matches it
/// (what a forger does: the footer's hash covers only the manifest).
fn join_archive(p: &Path, image: &[u8], packed: &[u8]) {
    let mut out = image.to_vec();
    let off = out.len() as u64;
    out.extend_from_slice(packed);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&off.to_le_bytes());
    out.extend_from_slice(&(packed.len() as u64).to_le_bytes());
    out.extend_from_slice(blake3::hash(packed).as_bytes());
    fs::write(p, out).unwrap();
}

/// Rewrites the manifest of the archive `p` with `edit`.
fn forge(p: &Path, edit: impl FnOnce(&mut Value)) {
    let (image, mut m) = split_archive(p);
    edit(&mut m);
    let packed = zstd::encode_all(&serde_json::to_vec(&m).unwrap()[..], 3).unwrap();
    join_archive(p, &image, &packed);
}

/// The manifest's view of a file as `stat` shows it to anyone: inode, links, size, times.
fn stat_facts(p: &Path) -> Value {
    let md = fs::symlink_metadata(p).unwrap();
    serde_json::json!({
        "ino": md.ino(),
        "nlink": md.nlink(),
        "size": md.size(),
        "mtime": [md.mtime(), md.mtime_nsec()],
        "ctime": [md.ctime(), md.ctime_nsec()],
    })
}

/// Sets the access and modification times of `p` (not following a symlink).
fn set_times(p: &Path, mtime: (i64, i64)) {
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let t = [
        libc::timespec {
            tv_sec: mtime.0,
            tv_nsec: mtime.1,
        },
        libc::timespec {
            tv_sec: mtime.0,
            tv_nsec: mtime.1,
        },
    ];
    // SAFETY: a NUL-terminated path and two timespecs that live for the call.
    let rc = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), t.as_ptr(), 0) };
    assert_eq!(rc, 0, "utimensat {}", p.display());
}

/// What the attacker builds: an archive `<top>/name.sqfs` of a look-alike of `victim_dir`
/// (same names, sizes and times, other bytes), packed by the attacker, whose manifest is then
/// rewritten to name `victim_dir` with the device, inode, links and ctime `stat` shows of each
/// of the victim's entries. Owned by `owner`.
fn forged_archive(w: &World, victim_dir: &str, archive: &str, owner: u32) -> PathBuf {
    let fake = format!("{victim_dir}-lookalike");
    let real = w.p(victim_dir);
    w.dir(&fake, ATTACKER, 0o755);
    let mut rels = Vec::new();
    for e in walk_files(&real) {
        let rel = e.strip_prefix(&real).unwrap().to_path_buf();
        let md = fs::symlink_metadata(&e).unwrap();
        let to = w.p(Path::new(&fake).join(&rel));
        if md.is_dir() {
            fs::create_dir(&to).unwrap();
        } else {
            fs::write(&to, vec![b'X'; md.size() as usize]).unwrap();
        }
        own(&to, ATTACKER);
        chmod(&to, md.mode() & 0o7777);
        rels.push(rel);
    }
    for rel in rels.iter().rev() {
        let md = fs::symlink_metadata(real.join(rel)).unwrap();
        set_times(
            &w.p(Path::new(&fake).join(rel)),
            (md.mtime(), md.mtime_nsec()),
        );
    }
    let md = fs::metadata(&real).unwrap();
    set_times(&w.p(&fake), (md.mtime(), md.mtime_nsec()));
    let out = w.p(archive);
    w.reclaim(ATTACKER, args!["pack", "--keep", "--to", &out, w.p(&fake)])
        .ok();
    forge(&out, |m| {
        m["source"] = serde_json::json!({ "path": real.to_str().unwrap() });
        m["dev"] = md.dev().into();
        m["ino"] = md.ino().into();
        for e in m["entries"].as_array_mut().unwrap() {
            let rel = e["path"].as_str().unwrap().to_string();
            let facts = stat_facts(&real.join(&rel));
            for k in ["ino", "nlink", "size", "mtime", "ctime"] {
                e[k] = facts[k].clone();
            }
        }
    });
    own(&out, owner);
    // Readable by all: the victim's pack must be able to look at it.
    chmod(&out, 0o644);
    out
}

/// Every entry below `dir` (not `dir` itself), parents before children.
fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for p in names {
        out.push(p.clone());
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            out.extend(walk_files(&p));
        }
    }
    out
}

/// The victim's tree `<top>/rel`: a few files of the victim's, mode 0600.
fn victims_tree(w: &World, rel: &str, owner: u32) -> Vec<(PathBuf, Vec<u8>)> {
    w.dir(rel, owner, 0o755);
    w.dir(format!("{rel}/sub"), owner, 0o755);
    let mut files = Vec::new();
    for (i, name) in ["a", "b", "sub/c", "sub/d"].iter().enumerate() {
        let content = format!("the victim's file {i} with its own bytes\n").into_bytes();
        let p = w.file(format!("{rel}/{name}"), owner, 0o600, &content);
        files.push((p, content));
    }
    files
}

#[track_caller]
fn assert_files(files: &[(PathBuf, Vec<u8>)], what: &str) {
    for (p, content) in files {
        assert_eq!(
            fs::read(p).ok().as_deref(),
            Some(&content[..]),
            "{what}: {} lost or changed",
            p.display()
        );
    }
}

/// Finding 1: an archive another user planted at `DIR.sqfs`, whose manifest names DIR's
/// path, device and every inode (all visible to `stat`) and holds other bytes, is never
/// resumed from: the victim's `pack DIR` (and root's, of a directory of its own) refuses it in
/// one line, exit 1, and every original stays.
#[test]
fn a_foreign_archive_is_never_trusted_on_resume() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let files = victims_tree(&w, "data", VICTIM);
    let archive = forged_archive(&w, "data", "data.sqfs", ATTACKER);
    let o = w.reclaim(VICTIM, args!["pack", w.p("data")]).output();
    assert_files(&files, "the victim's pack beside a forged archive");
    assert_exit(&o, 1, "a pack beside another user's archive");
    let lines = stderr_lines(&o);
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(
        lines[0].contains(&ATTACKER.to_string()) && lines[0].contains("data.sqfs"),
        "it names the archive and its owner: {lines:?}"
    );
    assert!(
        archive.exists(),
        "the planted archive is not ours to remove"
    );

    // Root's own directory in the shared top: the same.
    let files = victims_tree(&w, "rootdata", ROOT);
    forged_archive(&w, "rootdata", "rootdata.sqfs", ATTACKER);
    let o = w.reclaim(ROOT, args!["pack", w.p("rootdata")]).output();
    assert_files(&files, "root's pack beside a forged archive");
    assert_exit(&o, 1, "root's pack beside another user's archive");
}

/// Finding 1, the content rule: even an archive of the victim's own whose manifest matches
/// every `stat` field of the originals but holds other bytes (a forged one the victim was
/// handed, or one damaged after it was verified) takes no original: each is compared by
/// content with the archive's bytes before it goes.
#[test]
fn an_original_goes_only_if_its_bytes_are_the_archives() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let files = victims_tree(&w, "data", VICTIM);
    forged_archive(&w, "data", "data.sqfs", VICTIM);
    let o = w.reclaim(VICTIM, args!["pack", w.p("data")]).output();
    assert_files(&files, "a pack whose archive holds other bytes");
    assert_exit(&o, 1, "a pack whose archive holds other bytes");
    assert!(
        util::stderr_of(&o).contains("content"),
        "each stays because its content differs: {}",
        util::stderr_of(&o)
    );
}

/// The refused resume's message: an archive of the victim's own that fails verification
/// stays where it is, and the line says so (it said "it was removed").
#[test]
fn a_refused_resume_says_the_archive_stays() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let files = victims_tree(&w, "data", VICTIM);
    let archive = w.p("data.sqfs");
    w.reclaim(VICTIM, args!["pack", "--keep", w.p("data")]).ok();
    forge(&archive, |m| {
        let e = m["entries"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|e| e["k"] == "f")
            .unwrap();
        e["hash"] = "00".repeat(32).into();
    });
    own(&archive, VICTIM);
    let o = w.reclaim(VICTIM, args!["pack", w.p("data")]).output();
    assert_files(&files, "a resume from an archive that fails verification");
    assert_exit(&o, 1, "a resume from an archive that fails verification");
    let err = util::stderr_of(&o);
    assert!(archive.exists(), "the archive stays");
    assert!(
        !err.contains("was removed") && err.contains("stays"),
        "the line says the archive stays: {err}"
    );
}

/// Finding 2: for a directory that is gone, `pack` never opens `DIR.sqfs` by path: a FIFO
/// planted there does not hang it, and an archive another user forged for it is not "already
/// packed".
#[test]
fn a_fifo_or_a_forged_archive_of_a_gone_directory_is_never_already_packed() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    w.tool_ok(ATTACKER, "mkfifo", args![w.p("gone.sqfs")]);
    let o = w
        .reclaim(VICTIM, args!["pack", w.p("gone")])
        .output_within(Duration::from_secs(10));
    assert_exit(&o, 1, "a pack of a gone directory beside a FIFO");
    assert!(!util::stdout_of(&o).contains("already packed"));

    victims_tree(&w, "was", VICTIM);
    forged_archive(&w, "was", "was.sqfs", ATTACKER);
    fs::rename(w.p("was"), w.p("was-moved")).unwrap();
    let o = w.reclaim(VICTIM, args!["pack", w.p("was")]).output();
    assert_exit(&o, 1, "a pack of a gone directory beside a forged archive");
    assert!(
        !util::stdout_of(&o).contains("already packed"),
        "{}",
        util::stdout_of(&o)
    );
}

/// Finding 3: a 50 KB archive whose manifest inflates to 1.5 GiB (a zstd bomb) is refused
/// before it is inflated, by `unpack` and by `pack`'s resume: less than 256 MiB at the peak,
/// one line, exit 1, nothing removed.
#[test]
fn a_manifest_bomb_is_refused_before_it_is_inflated() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let files = victims_tree(&w, "data", VICTIM);
    let archive = w.p("data.sqfs");
    w.reclaim(VICTIM, args!["pack", "--keep", w.p("data")]).ok();
    let (image, _) = split_archive(&archive);
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..1536 {
        enc.write_all(&zeros).unwrap();
    }
    let bomb = enc.finish().unwrap();
    assert!(bomb.len() < 200 << 10, "a small bomb: {}", bomb.len());
    join_archive(&archive, &image, &bomb);
    own(&archive, VICTIM);
    // Peak memory of the command, said on the last line of its stderr (KiB).
    const PEAK: &str = "import resource, subprocess, sys\n\
        r = subprocess.run(sys.argv[1:])\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n\
        sys.exit(r.returncode)\n";
    let peak = w.s.path("peak.py");
    fs::write(&peak, PEAK).unwrap();
    chmod(&peak, 0o644);
    let measured = ["python3", peak.to_str().unwrap()];
    for (what, args) in [
        (
            "unpack of a manifest bomb",
            args!["unpack", &archive, w.p("out")],
        ),
        (
            "pack's resume from a manifest bomb",
            args!["pack", w.p("data")],
        ),
    ] {
        let o = w.reclaim(VICTIM, args).under(&measured).output();
        let mut lines = stderr_lines(&o);
        let kib: u64 = lines.pop().unwrap().trim().parse().unwrap();
        assert!(kib < 256 << 10, "{what}: {kib} KiB at its peak: {lines:?}");
        assert_exit(&o, 1, what);
        assert_eq!(lines.len(), 1, "{what}: one line: {lines:?}");
        assert!(lines[0].contains("manifest"), "{what}: {lines:?}");
    }
    assert_files(&files, "pack's resume from a manifest bomb");
}

/// Finding 4: root's age purge of a user's directory with `--list DIR/purged.txt` never writes
/// through the user's symlink (to a root-only file) nor waits on the user's FIFO: refused
/// before anything is removed, in one line, exit 1.
#[test]
fn the_list_never_follows_a_symlink_nor_waits_on_a_fifo() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let secret = w.file("secret", ROOT, 0o600, "root's own\n");
    w.dir("u", VICTIM, 0o755);
    w.dir("u/old", VICTIM, 0o755);
    let old = w.file("u/old/log", VICTIM, 0o644, "old\n");
    set_times(&old, (1_000_000_000, 0));
    w.tool_ok(VICTIM, "ln", args!["-s", &secret, w.p("u/purged.txt")]);
    let purge = || {
        w.reclaim(
            ROOT,
            args![
                "rm",
                "-r",
                "--older-than",
                "1d",
                "--list",
                w.p("u/purged.txt"),
                w.p("u/old")
            ],
        )
        .output_within(Duration::from_secs(10))
    };
    let o = purge();
    assert_eq!(
        fs::read(&secret).unwrap(),
        b"root's own\n",
        "written through"
    );
    assert_exit(&o, 1, "--list through a user's symlink");
    assert!(
        old.exists(),
        "nothing removed when the list cannot be written"
    );
    fs::remove_file(w.p("u/purged.txt")).unwrap();
    w.tool_ok(VICTIM, "mkfifo", args![w.p("u/purged.txt")]);
    // A reader that never reads: a writer would fill the pipe and wait forever.
    let _reader = Proc::spawn(
        w.tool_cmd(
            VICTIM,
            "sh",
            args!["-c", "exec 3<\"$0\"; sleep 60", w.p("u/purged.txt")],
        ),
        "a reader that never reads".into(),
    );
    std::thread::sleep(Duration::from_millis(200));
    let o = purge();
    assert_exit(&o, 1, "--list on a user's FIFO");
    assert!(
        old.exists(),
        "nothing removed when the list cannot be written"
    );
}

/// Unmounts (lazily) every mount below the test's scratch directory but its volume.
struct Unmounts(PathBuf, PathBuf);

impl Drop for Unmounts {
    fn drop(&mut self) {
        for _ in 0..3 {
            let mut below = util::mounts_under(&self.0);
            below.retain(|p| *p != self.1);
            below.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
            for p in below {
                let _ = Command::new("umount").arg("-l").arg(&p).status();
            }
        }
    }
}

/// Finding 5: root's `pack --mount` of a user's directory mounts on the directory it packed,
/// never where the user's symlink points after a swap during the pack, and prints no boot-time
/// mount line for a path the user can change.
#[test]
fn pack_mount_lands_on_the_packed_directory_or_nowhere() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let _unmount = Unmounts(w.s.root().to_path_buf(), w.top.clone());
    w.dir("u", VICTIM, 0o755);
    w.dir("u/data", VICTIM, 0o755);
    for i in 0..200 {
        w.file(
            format!("u/data/f{i:03}"),
            VICTIM,
            0o644,
            format!("file {i}\n"),
        );
    }
    // An empty directory of root's (a mount point in waiting, say).
    let rootdir = w.dir("rootdir", ROOT, 0o755);
    // The owner swaps the directory for a symlink to root's once the removal is under way.
    const SWAP: &str = "import os, sys, time\n\
        d, to = sys.argv[1], sys.argv[2]\n\
        t0 = time.time()\n\
        while time.time() - t0 < 60:\n\
        \x20   try:\n\
        \x20       n = len(os.listdir(d))\n\
        \x20   except OSError:\n\
        \x20       n = 200\n\
        \x20   if n < 150:\n\
        \x20       os.rename(d, d + '.moved')\n\
        \x20       os.symlink(to, d)\n\
        \x20       sys.exit(0)\n\
        \x20   time.sleep(0.002)\n\
        sys.exit(1)\n";
    let script = w.s.path("swap.py");
    fs::write(&script, SWAP).unwrap();
    chmod(&script, 0o644);
    let mut swapper = Proc::spawn(
        w.tool_cmd(VICTIM, "python3", args![script, w.p("u/data"), &rootdir]),
        "the swapper".into(),
    );
    // Root keeps the archive in a directory of its own (beside the user's directory, the user
    // could take it away: refused).
    w.dir("archives", ROOT, 0o755);
    let to = w.p("archives/data.sqfs");
    let o = w
        .reclaim(
            ROOT,
            args![
                "pack",
                "--mount",
                "--iops",
                "40",
                "--to",
                &to,
                w.p("u/data")
            ],
        )
        .output_within(Duration::from_secs(60));
    let swapped = swapper.wait_exit(Duration::from_secs(5));
    if swapped.is_none() {
        swapper.stop();
    }
    let mounted: Vec<PathBuf> = util::mounts_under(w.s.root());
    assert!(
        !mounted.contains(&rootdir),
        "the user's archive was mounted on root's directory: {mounted:?}\n{}",
        util::stderr_of(&o)
    );
    assert!(
        list(&rootdir).is_empty(),
        "root's directory shows nothing of the user's"
    );
    assert!(
        swapped.is_some_and(|st| st.success()),
        "the swap happened during the pack: {}",
        util::stderr_of(&o)
    );
    let out = util::stdout_of(&o);
    assert!(
        !out.contains("squashfs ro,loop"),
        "no fstab line for a path the user can change: {out}"
    );
    assert!(
        util::stderr_of(&o).contains(&VICTIM.to_string()),
        "it says why there is no boot-time line: {}",
        util::stderr_of(&o)
    );
}

/// Finding 5, the rest: `pack --mount` never mounts over entries that stayed behind (they
/// would be hidden): one line says why, exit 1.
#[test]
fn pack_mount_never_hides_entries_that_stayed() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let _unmount = Unmounts(w.s.root().to_path_buf(), w.top.clone());
    let files = victims_tree(&w, "data", VICTIM);
    // A process holds one file open: it cannot be proven unused, so it stays.
    let held = files[0].0.clone();
    let _holder = Proc::spawn(
        w.tool_cmd(VICTIM, "sh", args!["-c", "exec 3<\"$0\"; sleep 60", &held]),
        "a reader".into(),
    );
    std::thread::sleep(Duration::from_millis(200));
    let o = w
        .reclaim(ROOT, args!["pack", "--mount", w.p("data")])
        .output();
    assert_exit(&o, 1, "pack --mount with an entry that stays");
    assert!(held.exists(), "the held file stays");
    assert!(
        !util::mounts_under(w.s.root()).contains(&w.p("data")),
        "nothing mounted over what stayed"
    );
    assert!(
        util::stderr_of(&o).contains("not mounting") || util::stderr_of(&o).contains("not mounted"),
        "{}",
        util::stderr_of(&o)
    );
}

/// Finding 6: a btrfs subvolume named `sv (deleted)` (what `/proc/self/fd` shows for a
/// removed directory) with a tmpfs mounted inside: root's `rm -r` never deletes it whole; the
/// mount and its data stay.
#[test]
fn a_subvolume_named_deleted_keeps_the_mount_inside_it() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Btrfs));
    let sv = w.p("sv (deleted)");
    w.tool_ok(VICTIM, "btrfs", args!["subvolume", "create", &sv]);
    let inner = util::or_skip!(Volume::tmpfs_with(&w.s, "vol/sv (deleted)/m", "size=4m"));
    fs::write(sv.join("m/precious"), b"data in the tmpfs\n").unwrap();
    let o = w.reclaim(ROOT, args!["rm", "-r", &sv]).output();
    assert_eq!(
        fs::read(sv.join("m/precious")).ok().as_deref(),
        Some(&b"data in the tmpfs\n"[..]),
        "the tmpfs inside was taken: {}",
        util::stderr_of(&o)
    );
    assert!(
        util::mounts_under(w.s.root()).contains(&sv.join("m")),
        "the mount stays"
    );
    assert_exit(&o, 1, "rm -r of a subvolume holding a mount");
    drop(inner);
    let _ = Command::new("btrfs")
        .args(["subvolume", "delete"])
        .arg(&sv)
        .output();
}

/// Finding 7: writes through `mmap` change neither mtime nor ctime once the page is dirty.
/// A file mapped for writing while `pack` runs stays (a lease cannot be had); one written
/// through a mapping after it was read, the mapping gone since, stays too (its bytes are not
/// the archive's). Both keep what was written.
#[test]
fn writes_through_mmap_are_never_lost_to_pack() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Ext4));
    w.dir("data", VICTIM, 0o755);
    let held = w.file("data/0-held", VICTIM, 0o644, vec![b'.'; 64 << 10]);
    let closed = w.file("data/1-closed", VICTIM, 0o644, vec![b'.'; 64 << 10]);
    let mut big = vec![0u8; 24 << 20];
    let mut x = 0x9e3779b97f4a7c15u64;
    for b in big.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    w.file("data/2-big", VICTIM, 0o644, &big);
    for i in 0..50 {
        w.file(format!("data/3-{i}"), VICTIM, 0o644, format!("{i}\n"));
    }
    const WRITER: &str = "import mmap, os, sys, time\n\
        held, closed, partial_dir, archive = sys.argv[1:5]\n\
        fh = open(held, 'r+b'); mh = mmap.mmap(fh.fileno(), 0); fh.close()\n\
        fc = open(closed, 'r+b'); mc = mmap.mmap(fc.fileno(), 0); fc.close()\n\
        mh[0:1] = b'A'; mc[0:1] = b'A'\n\
        print('ready', flush=True)\n\
        def partial_size():\n\
        \x20   for n in os.listdir(partial_dir):\n\
        \x20       if '.partial-' in n:\n\
        \x20           try: return os.stat(os.path.join(partial_dir, n)).st_size\n\
        \x20           except OSError: pass\n\
        \x20   return 0\n\
        t0 = time.time()\n\
        while partial_size() < (4 << 20) and not os.path.exists(archive) and time.time() - t0 < 60: time.sleep(0.001)\n\
        mc[1:2] = b'C'; mc.close()\n\
        while not os.path.exists(archive) and time.time() - t0 < 60: time.sleep(0.001)\n\
        mh[1:2] = b'B'\n\
        time.sleep(30)\n";
    let script = w.s.path("mmapper.py");
    fs::write(&script, WRITER).unwrap();
    chmod(&script, 0o644);
    let mut writer = Proc::spawn(
        w.tool_cmd(
            VICTIM,
            "python3",
            args![script, &held, &closed, &w.top, w.p("data.sqfs")],
        ),
        "the mmap writer".into(),
    );
    wait_for("the writer maps", HANG, || {
        String::from_utf8_lossy(&taken_now(&writer.out))
            .contains("ready")
            .then_some(())
    });
    let o = w.reclaim(VICTIM, args!["pack", w.p("data")]).output();
    let after_held = fs::read(&held).ok();
    let after_closed = fs::read(&closed).ok();
    writer.stop();
    assert_eq!(
        after_closed.as_deref().map(|b| &b[..2]),
        Some(&b"AC"[..]),
        "the write through a closed mapping is lost: {}",
        util::stderr_of(&o)
    );
    assert_eq!(
        after_held.as_deref().map(|b| &b[..2]),
        Some(&b"AB"[..]),
        "the write through a live mapping is lost: {}",
        util::stderr_of(&o)
    );
    assert_exit(&o, 1, "pack while files are written through mappings");
}

/// What `b` has read so far (without waiting for its end).
fn taken_now(b: &Buf) -> Vec<u8> {
    b.lock().unwrap().0.clone()
}

/// Finding 8: an archive whose image holds entries its manifest does not list (another user
/// grafted reclaim's manifest onto a bigger image) is never unpacked as if checked: the extra
/// entries are not created, each is named, exit 1.
#[test]
fn unpack_never_extracts_what_the_manifest_does_not_list() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    victims_tree(&w, "data", ATTACKER);
    let archive = w.p("data.sqfs");
    w.reclaim(ATTACKER, args!["pack", "--keep", w.p("data")])
        .ok();
    // The image again, with two entries more, and the original trailer after it.
    let tar = w.s.path("t.tar");
    let out = Command::new("sqfs2tar")
        .args(["--root-becomes", ".", "--no-skip"])
        .arg(&archive)
        .output()
        .unwrap();
    assert!(out.status.success());
    fs::write(&tar, out.stdout).unwrap();
    const GRAFT: &str = "import io, sys, tarfile\n\
        t = tarfile.open(sys.argv[1], 'a', format=tarfile.PAX_FORMAT)\n\
        for name in ['./evil', './sub/evil2']:\n\
        \x20   ti = tarfile.TarInfo(name); ti.size = 5; ti.mode = 0o4755\n\
        \x20   t.addfile(ti, io.BytesIO(b'evil\\n'))\n\
        t.close()\n";
    let py = w.s.path("graft.py");
    fs::write(&py, GRAFT).unwrap();
    assert!(Command::new("python3")
        .arg(&py)
        .arg(&tar)
        .status()
        .unwrap()
        .success());
    let img = w.s.path("bigger.img");
    let made = Command::new("tar2sqfs")
        .args(["--quiet", "--force", "--no-skip"])
        .arg(&img)
        .stdin(fs::File::open(&tar).unwrap())
        .status()
        .unwrap();
    assert!(made.success());
    let b = fs::read(&archive).unwrap();
    let foot = &b[b.len() - 64..];
    let off = u64::from_le_bytes(foot[16..24].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(foot[24..32].try_into().unwrap()) as usize;
    let grafted = w.p("grafted.sqfs");
    join_archive(&grafted, &fs::read(&img).unwrap(), &b[off..off + len]);
    own(&grafted, ATTACKER);
    let dest = w.p("out");
    let o = w.reclaim(VICTIM, args!["unpack", &grafted, &dest]).output();
    assert!(
        !dest.join("evil").exists(),
        "an entry the manifest does not list"
    );
    assert!(!dest.join("sub/evil2").exists());
    assert_exit(&o, 1, "unpack of an image with unlisted entries");
    let err = util::stderr_of(&o);
    assert!(err.contains("evil") && err.contains("manifest"), "{err}");
    assert!(
        !util::stdout_of(&o).contains("contents checked against the manifest"),
        "{}",
        util::stdout_of(&o)
    );
}

/// Finding 9: `--from` with 3,000 distinct parents under `ulimit -n 1024` removes every
/// listed path (it held one fd per parent: ~2,000 "Too many open files").
#[test]
fn from_keeps_few_fds_open_for_thousands_of_parents() {
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    let top = w.dir("many", VICTIM, 0o755);
    let mut list = Vec::new();
    for i in 0..3000 {
        let d = top.join(format!("d{i}"));
        fs::create_dir(&d).unwrap();
        let f = d.join("f");
        fs::write(&f, b"x").unwrap();
        own(&d, VICTIM);
        own(&f, VICTIM);
        list.extend_from_slice(f.as_os_str().as_bytes());
        list.push(b'\n');
    }
    let list_file = w.file("list.txt", VICTIM, 0o644, &list);
    let o = w
        .reclaim(VICTIM, args!["rm", "-r", "--from", &list_file])
        .under(&["prlimit", "--nofile=1024:1024", "--"])
        .output();
    assert_exit(&o, 0, "--from with 3,000 parents under 1,024 fds");
    let left = (0..3000)
        .filter(|i| top.join(format!("d{i}/f")).exists())
        .count();
    assert_eq!(left, 0, "every listed path removed");
}

/// Finding 10: root's `unpack` of an archive another user made behaves as GNU tar run by a
/// user (compared with GNU tar as uid 61003 on the same tar stream): owners become root's,
/// setuid, setgid and sticky bits dropped, the umask applied, no device node made (said,
/// exit 1), DEST made 0700 and given its mode at the end; `--same-owner` restores them all.
#[test]
fn root_unpacks_a_users_archive_as_tar_does_for_a_user() {
    util::or_skip!(pack_tools());
    let w = util::or_skip!(World::new(scratch!(), Vol::Tmpfs));
    const MAKE: &str = "import io, sys, tarfile\n\
        t = tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT)\n\
        def add(name, kind=tarfile.REGTYPE, mode=0o644, data=b'', uid=61002, **kw):\n\
        \x20   ti = tarfile.TarInfo(name); ti.type = kind; ti.mode = mode; ti.uid = uid; ti.gid = uid\n\
        \x20   ti.size = len(data); ti.mtime = 1700000000\n\
        \x20   for k, v in kw.items(): setattr(ti, k, v)\n\
        \x20   t.addfile(ti, io.BytesIO(data) if data else None)\n\
        add('./', tarfile.DIRTYPE, 0o777)\n\
        add('./suid', mode=0o4755, data=b'x', uid=0)\n\
        add('./sgid', mode=0o2775, data=b'x')\n\
        add('./open', mode=0o666, data=b'y')\n\
        add('./sticky', tarfile.DIRTYPE, 0o1777)\n\
        add('./sgiddir', tarfile.DIRTYPE, 0o2775)\n\
        add('./fifo', tarfile.FIFOTYPE, 0o666)\n\
        add('./null', tarfile.CHRTYPE, 0o666, devmajor=1, devminor=3)\n\
        t.close()\n";
    let tar = w.p("evil.tar");
    python_ok(&w, ATTACKER, "maketar", MAKE, args![&tar]);
    let archive = w.p("evil.sqfs");
    let made = w.tool(
        ATTACKER,
        "sh",
        args![
            "-c",
            "tar2sqfs --quiet --force --no-skip \"$1\" < \"$0\"",
            &tar,
            &archive
        ],
    );
    assert!(made.status.success(), "{}", util::stderr_of(&made));
    // GNU tar as a user, with umask 022.
    let by_tar = w.dir("by-tar", THIRD, 0o755);
    let _ = w.tool(
        THIRD,
        "sh",
        args![
            "-c",
            "umask 022; cd \"$0\" && tar -xf \"$1\"",
            &by_tar,
            &tar
        ],
    );
    let umask022 = ["sh", "-c", "umask 022 && exec \"$@\"", "sh"];
    let dest = w.p("out");
    let o = w
        .reclaim(ROOT, args!["unpack", &archive, &dest])
        .under(&umask022)
        .output();
    assert_exit(
        &o,
        1,
        "root's unpack of a user's archive with a device node",
    );
    assert!(
        util::stderr_of(&o).contains("null"),
        "the device is named: {}",
        util::stderr_of(&o)
    );
    assert!(
        !dest.join("null").exists(),
        "no device node from a user's archive"
    );
    for name in ["suid", "sgid", "open", "sticky", "sgiddir", "fifo"] {
        let ours = fs::symlink_metadata(dest.join(name)).unwrap();
        let theirs = fs::symlink_metadata(by_tar.join(name)).unwrap();
        assert_eq!(
            (ours.mode(), ours.uid(), ours.gid()),
            (theirs.mode(), 0, 0),
            "{name}: as GNU tar gives a user, owned by root"
        );
    }
    let top = fs::metadata(&dest).unwrap();
    assert_eq!(
        top.mode() & 0o7777,
        0o755,
        "DEST's mode: the archive's, less the umask"
    );
    // Asked to trust it: everything as the archive says.
    let same = w.p("same");
    let o = w
        .reclaim(ROOT, args!["unpack", "--same-owner", &archive, &same])
        .under(&umask022)
        .output();
    assert_exit(&o, 0, "root's unpack --same-owner");
    assert_eq!(
        fs::metadata(same.join("suid")).unwrap().mode() & 0o7777,
        0o4755
    );
    assert!(fs::symlink_metadata(same.join("null"))
        .unwrap()
        .file_type()
        .is_char_device());
}
