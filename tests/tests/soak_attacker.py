# The hostile user of the soak (tests/tests/soak.rs embeds this file and runs it with python3
# as uid 61002, through setpriv: no privilege at all). Standard library only.
#
# It performs random hostile actions on its own trash and on the shared top of the volume for
# the whole duration (and until it has done at least `min_actions`), seeded, one JSON line per
# action in its log: {"i", "t", "kind", "path", "ok", "error"?, "rc"?, "unexpected"?,
# "panic"?, "hang"?}. Once, at `flood_at` seconds, the decoy flood: `decoys` empty trashes of
# its own (`.reclaim-<uid>.decoy<n>`) and `victim_decoys` directories squatting the victim's
# trash names (`.reclaim-<victim>.decoy<n>`), logged as one "flood:decoys" line with when it
# started and ended. Its home (which a careless root uses as its HOME) gets hostile plants:
# FIFOs, symlinks to root's files and garbage where reclaim keeps its configuration and trash
# registry. The last line (also printed on stdout) is {"final": true, "actions", "counts" (by
# kind), "squats", "decoys"}: every name it made outside its own trash and did not remove
# again, with what it must still be, and the decoys' prefixes and counts (the soak checks that
# nobody removed or changed them).
#
# It only ever touches paths under the directories it is given (its trash at the top, the top
# itself for squatted names, the shared directory, its work directory) and reads the others.

import errno
import json
import os
import random
import stat
import subprocess
import sys
import time

cfg = json.loads(sys.argv[1])
TOP = cfg["top"]
TOPB = TOP.encode()
SHARED = cfg["shared"]
WORK = cfg["work"]
RECLAIM = cfg["reclaim"]
ME = os.getuid()
VICTIM = cfg["victim_uid"]
VICTIM_DIR = cfg["victim_dir"]
ROOT_FILES = cfg["root_files"]  # root's regular files on the volume (hard-link targets)
VICTIM_FILES = cfg["victim_files"]  # the victim's regular files on the volume
LINK_DIRS = cfg["link_dirs"]  # directories of root and of the victim (symlink targets)
FAKE_TRASHES = cfg["fake_trashes"]  # uid -> a directory of that uid that looks like a trash
ROOT_HIDDEN = cfg["root_hidden"]  # a path root hid with a long grace window
ROOT_DIR = cfg["root_dir"]
SECS = float(cfg["secs"])
FLOOD_AT = float(cfg.get("flood_at", -1))
DECOYS = int(cfg.get("decoys", 0))
VICTIM_DECOYS = int(cfg.get("victim_decoys", 0))
HOME = cfg["home"]
MIN_ACTIONS = int(cfg["min_actions"])
RATE = float(cfg["rate"])
rng = random.Random(cfg["seed"])
ENV = {
    "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": cfg["home"],
    "XDG_STATE_HOME": os.path.join(cfg["home"], "state"),
    "RECLAIM_CONFIG": "",
    "RECLAIM_UNDER": cfg["under"],
    "RECLAIM_NO_SPAWN": "1",
}

log = open(cfg["log"], "a", buffering=1)
counts = {}
squats = {}  # path -> what it must still be at the end
victim_names = []  # names seen in the victim's directory, oldest first
own_grace = []  # (path, deadline) of its own entries hidden with a grace window
seq = 0
actions = 0
BIG = 72 << 20


def show(p):
    if isinstance(p, bytes):
        return p.decode("utf-8", "backslashreplace")
    return p.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def j(*parts):
    parts = [p.encode() if isinstance(p, str) else p for p in parts]
    return os.path.join(*parts)


def exists(p):
    try:
        os.lstat(p)
        return True
    except OSError:
        return False


def rm_any(p):
    """Removes whatever p is, as this user can (its own things only), never following a
    symlink; what a reaper removed meanwhile is fine."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
        return
    try:
        os.chmod(p, 0o700)
        names = os.listdir(p)
    except FileNotFoundError:
        return
    for n in names:
        rm_any(os.path.join(p, n))
    try:
        os.rmdir(p)
    except FileNotFoundError:
        pass


# ------------------------------------------------------------------------------------------
# Its trash and entries.


def my_trashes(usable_only=False):
    base = b".reclaim-%d" % ME
    decoy = base + b".decoy"
    out = []
    for n in os.listdir(TOPB):
        # The flood's decoys are not the trashes it plays with.
        if n.startswith(decoy):
            continue
        if n == base or n.startswith(base + b"."):
            p = j(TOPB, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_uid == ME:
                if not usable_only or stat.S_IMODE(st.st_mode) == 0o700:
                    out.append(p)
    out.sort()
    return out


def trash():
    usable = my_trashes(True)
    if usable and rng.random() < 0.85:
        return usable[0]
    every = my_trashes()
    if every:
        return rng.choice(every)
    p = j(TOPB, b".reclaim-%d" % ME)
    if exists(p):
        p = j(TOPB, b".reclaim-%d.%08x" % (ME, rng.getrandbits(32)))
    os.mkdir(p, 0o700)
    return p


def new_id(style=None):
    global seq
    seq += 1
    style = style or rng.choice(["old", "now", "now", "future", "weird"])
    now = time.time()
    t = {
        "old": rng.uniform(946684800, now - 86400),
        "future": rng.uniform(now + 86400, 4102444800),
    }.get(style, now)
    name = time.strftime("%Y%m%dT%H%M%S", time.gmtime(t)) + ".%06dZ-%d-%d" % (
        rng.randrange(10**6),
        40000 + rng.randrange(20000),
        seq,
    )
    b = name.encode()
    if style == "weird":
        b += rng.choice([b"\n", b"\xff\xfe", b"\x1b[2J", b" -> x", b"'$'\\n'", b"\t"]) + b"z"
    return b


def entries(t):
    try:
        return [j(t, n) for n in os.listdir(t) if n[:1].isdigit()]
    except OSError:
        return []


def new_entry(style=None, t=None):
    e = j(t or trash(), new_id(style))
    os.mkdir(e, 0o700)
    return e


def put(p, data, mode=0o600):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def meta_doc(e, uid=None, original=None, grace=None, kind="file"):
    original = original or os.path.join(WORK, "gone-%d" % seq)
    try:
        st = os.stat(os.path.dirname(original))
        dev, ino, puid = st.st_dev, st.st_ino, st.st_uid
    except OSError:
        dev, ino, puid = 0, 0, 0
    return {
        "version": 2,
        "id": show(os.path.basename(e)),
        "original": original,
        "parent_dev": dev,
        "parent_ino": ino,
        "parent": {"dev": dev, "ino": ino, "uid": puid},
        "uid": ME if uid is None else uid,
        "created_unix": time.time(),
        "grace_until_unix": grace,
        "kind": kind,
        "allocated": 4096,
        "files": 1,
        "pacing": {"fast": rng.random() < 0.5, "pace_trees": False},
    }


def put_meta(e, **kw):
    put(j(e, b"meta.json"), json.dumps(meta_doc(e, **kw)).encode())


def plant(p, how):
    """Makes `how` at p: what stands where reclaim expects one of its files."""
    if how == "fifo":
        os.mkfifo(p, 0o600)
    elif how == "symlink":
        os.symlink(rng.choice(ROOT_FILES + LINK_DIRS), p)
    elif how == "symlink_dir":
        os.symlink(rng.choice(LINK_DIRS), p)
    elif how == "hardlink":
        os.link(rng.choice(ROOT_FILES), p)
    elif how == "hardlink_victim":
        os.link(rng.choice(VICTIM_FILES), p)
    elif how == "sparse":
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, 1 << 30)
        finally:
            os.close(fd)
    elif how == "huge_sparse":
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, 1 << 40)
        finally:
            os.close(fd)
    elif how == "garbage":
        put(p, rng.randbytes(rng.randrange(1, 8192)))
    elif how == "dir":
        os.mkdir(p, 0o700)
    elif how == "file":
        put(p, b"attacker data %d\n" % seq)
    else:
        raise ValueError(how)


def tree_with_links(p, files=8):
    """A directory holding files, subdirectories, symlinks to root's and the victim's
    directories and files, and hard links to root's files."""
    os.mkdir(p, 0o700)
    for i in range(files):
        put(j(p, b"f%d" % i), b"x" * rng.randrange(0, 2048))
    sub = j(p, b"sub")
    os.mkdir(sub, 0o700)
    put(j(sub, b"inner"), b"inner\n")
    os.symlink(rng.choice(LINK_DIRS), j(p, b"to-dir"))
    os.symlink(rng.choice(ROOT_FILES), j(sub, b"to-file"))
    try:
        os.link(rng.choice(ROOT_FILES), j(p, b"root-link"))
    except OSError:
        pass
    os.symlink(b"..", j(sub, b"up"))


def victim_hidden():
    """A path the victim probably hid: seen in its directory before, gone now."""
    try:
        now = set(os.listdir(VICTIM_DIR))
    except OSError:
        now = set()
    for n in sorted(now):
        if n not in seen_victim:
            seen_victim.add(n)
            victim_names.append(n)
    gone = [n for n in victim_names[-200:] if n not in now]
    if gone:
        return os.path.join(VICTIM_DIR, rng.choice(gone[-20:]))
    return os.path.join(VICTIM_DIR, "f%d" % rng.randrange(1, 500))


seen_victim = set()


# ------------------------------------------------------------------------------------------
# Running reclaim as itself.


def reclaim(args, spawn=False, timeout=10):
    env = dict(ENV)
    if spawn:
        del env["RECLAIM_NO_SPAWN"]
    try:
        p = subprocess.run(
            [RECLAIM] + args,
            cwd=WORK,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout,
            start_new_session=spawn,
        )
    except subprocess.TimeoutExpired as e:
        return {"rc": None, "hang": True, "stderr": show((e.stderr or b"")[-400:])}
    out = {"rc": p.returncode}
    err = p.stderr.decode("utf-8", "backslashreplace")
    if p.returncode < 0 or p.returncode in (101, 134) or "panicked" in err:
        out["panic"] = True
        out["stderr"] = err[-800:]
    elif p.returncode != 0:
        out["stderr"] = err[-300:]
    out["stdout"] = p.stdout
    return out


# ------------------------------------------------------------------------------------------
# The actions. Each returns (path, extra fields for the log) or raises OSError.


def act_meta(how):
    e = new_entry()
    plant(j(e, b"meta.json"), how)
    if rng.random() < 0.8:
        put(j(e, b"data"), b"data of an entry with a hostile meta.json\n")
    else:
        os.mkdir(j(e, b"data"), 0o700)
    return e, {}


def act_meta_json(which):
    if which == "victim":
        # Names the victim: its uid and one of its (hidden) paths; a newer id than any real.
        e = new_entry("future")
        put_meta(e, uid=VICTIM, original=victim_hidden())
        put(j(e, b"data"), b"FORGED by the attacker\n")
    elif which == "root":
        e = new_entry("future")
        orig = rng.choice([ROOT_HIDDEN, os.path.join(ROOT_DIR, "planted")])
        put_meta(e, uid=0, original=orig, grace=time.time() + 86400)
        put(j(e, b"data"), b"FORGED by the attacker\n")
    elif which == "self_victim_path":
        # Its own entry naming the victim's path: a restore by path must never pick it.
        e = new_entry("future")
        put_meta(e, original=victim_hidden(), grace=time.time() + 86400)
        put(j(e, b"data"), b"FORGED by the attacker\n")
    elif which == "self_root_path":
        e = new_entry("future")
        orig = rng.choice([ROOT_HIDDEN, os.path.join(ROOT_DIR, "planted")])
        put_meta(e, original=orig, grace=time.time() + 86400)
        put(j(e, b"data"), b"FORGED by the attacker\n")
    elif which == "absurd":
        e = new_entry()
        d = meta_doc(e)
        for _ in range(rng.randrange(1, 5)):
            k, v = rng.choice(
                [
                    ("allocated", 18446744073709551615),
                    ("allocated", 18446744073709551616),
                    ("files", 18446744073709551615),
                    ("created_unix", 1e308),
                    ("created_unix", -1e308),
                    ("grace_until_unix", 1e308),
                    ("grace_until_unix", -1.0),
                    ("parent_dev", 18446744073709551615),
                    ("version", 4294967295),
                    ("uid", 4294967295),
                    ("kind", "\U0001f600" * 2000),
                    ("original", "/" * 4000 + "\n\x1b[31mforged"),
                    ("original", ""),
                    ("id", "../../etc"),
                    ("pacing", {"fast": False, "max_latency_ms": 1e308, "rate": 0, "iops": 0}),
                    ("pacing", {"fast": False, "max_latency_ms": -5.0, "rate": 1}),
                    ("original_hex", "zz" * 10),
                ]
            )
            d[k] = v
        put(j(e, b"meta.json"), json.dumps(d).encode())
        put(j(e, b"data"), b"x" * rng.randrange(0, 100000))
    else:
        raise ValueError(which)
    return e, {}


def act_payload(name, how):
    """An entry whose `data` or `reaping` is hostile (with a valid record of its own)."""
    e = new_entry(rng.choice(["old", "now"]))
    put_meta(e)
    if how == "dir_links":
        tree_with_links(j(e, name))
    elif how == "both":
        put(j(e, b"data"), b"data\n")
        put(j(e, b"reaping"), b"reaping\n")
    else:
        plant(j(e, name), how)
    return e, {}


def act_state(name, how):
    """A trash's state file (lock, reaper.json, reaper.log, a temporary name) or an entry's
    failed.json that is not what reclaim made."""
    t = trash()
    if name == "failed.json":
        es = entries(t)
        e = rng.choice(es) if es and rng.random() < 0.5 else new_entry(t=t)
        if not exists(j(e, b"meta.json")):
            try:
                put_meta(e)
            except OSError:
                pass
        p = j(e, b"failed.json")
    elif name == "tmp":
        p = j(t, b".reaper.json.%012x.tmp" % rng.getrandbits(48))
    else:
        p = j(t, name.encode())
    if exists(p):
        rm_any(p)
    if how == "json":
        put(
            p,
            json.dumps(
                {
                    "attempts": 18446744073709551615,
                    "next_attempt_unix": rng.choice([1e308, -1.0, 0.0]),
                    "errors": [{"path": ROOT_HIDDEN, "error": "\x1b[31mforged\n"}],
                    "pid": 1,
                    "state": "waiting",
                }
            ).encode(),
        )
    else:
        plant(p, how)
    return p, {}


def act_swap(which):
    """Renames and swaps inside its trash while root's reaper may be working on it."""
    t = trash()
    if which in ("data_symlink", "reaping_symlink", "subdir_symlink"):
        e = new_entry("old", t=t)
        put_meta(e)
        data = j(e, b"data")
        os.mkdir(data, 0o700)
        for i in range(rng.randrange(50, 300)):
            put(j(data, b"f%d" % i), b"y" * 100)
        sub = j(data, b"sub")
        os.mkdir(sub, 0o700)
        for i in range(50):
            put(j(sub, b"g%d" % i), b"z")
        name = {
            "data_symlink": b"data",
            "reaping_symlink": b"reaping",
            "subdir_symlink": b"data/sub",
        }[which]
        end = time.time() + rng.uniform(0.05, 0.6)
        flips = 0
        while time.time() < end:
            # The reaper may have claimed it (data -> reaping) meanwhile: follow it.
            p = j(e, name)
            if which == "subdir_symlink" and not exists(j(e, b"data")):
                p = j(e, b"reaping/sub")
            aside = p + b".aside"
            try:
                os.rename(p, aside)
            except OSError:
                if which == "data_symlink" and exists(j(e, b"reaping")):
                    name = b"reaping"
                    continue
                break
            os.symlink(rng.choice(LINK_DIRS), p)
            time.sleep(rng.uniform(0, 0.004))
            try:
                os.unlink(p)
                os.rename(aside, p)
            except OSError:
                break
            flips += 1
        return e, {"flips": flips}
    es = entries(t)
    if not es:
        es = [new_entry(t=t)]
    e = rng.choice(es)
    if which == "entry_rename":
        to = j(t, new_id())
        os.rename(e, to)
        return to, {}
    if which == "entries_swap":
        if len(es) < 2:
            raise OSError(errno.ENOENT, "fewer than two entries")
        a, b = rng.sample(es, 2)
        tmp = j(t, new_id("now"))
        os.rename(a, tmp)
        os.rename(b, a)
        os.rename(tmp, b)
        return a, {}
    if which == "entry_symlink":
        # The entry goes away for a moment and a symlink to root's directory stands there.
        aside = j(WORK.encode(), b"aside-%d" % seq)
        os.rename(e, aside)
        os.symlink(rng.choice(LINK_DIRS), e)
        time.sleep(rng.uniform(0, 0.05))
        os.unlink(e)
        os.rename(aside, e)
        return e, {}
    if which == "trash_symlink":
        # Its whole trash renamed away, and the name made a symlink to a fake trash.
        aside = j(TOPB, b".aside-%d-%d" % (ME, seq))
        os.rename(t, aside)
        try:
            os.symlink(rng.choice(list(FAKE_TRASHES.values()) + LINK_DIRS), t)
            time.sleep(rng.uniform(0, 0.3))
            os.unlink(t)
        finally:
            os.rename(aside, t)
        return t, {}
    raise ValueError(which)


def act_chmod(what, mode):
    t = trash()
    if what == "trash":
        p = t
    else:
        es = entries(t)
        if not es:
            es = [new_entry(t=t)]
        p = rng.choice(es)
        if what == "data":
            p = j(p, b"data")
    if stat.S_ISLNK(os.lstat(p).st_mode):
        raise OSError(errno.ELOOP, "a symlink: chmod would follow it", p)
    os.chmod(p, mode)
    if rng.random() < 0.6:
        time.sleep(rng.uniform(0, 0.3))
        os.chmod(p, 0o700)
        return p, {"restored": True}
    return p, {}


# Names at the top that stand for other users' trashes.
def squat_name(which):
    hexs = "%08x" % rng.getrandbits(32)
    return {
        "victim": ".reclaim-%d" % VICTIM,
        "victim_suffix": ".reclaim-%d.%s" % (VICTIM, hexs),
        "root": ".reclaim-0",
        "root_suffix": ".reclaim-0.%s" % hexs,
        "legacy": ".reclaim",
    }[which]


def describe(p):
    """What p is now (types, sizes, modes, symlink targets; recursively)."""
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        return {"type": "symlink", "target": os.readlink(p)}
    if stat.S_ISFIFO(st.st_mode):
        return {"type": "fifo"}
    if stat.S_ISREG(st.st_mode):
        return {"type": "file", "len": st.st_size}
    if stat.S_ISDIR(st.st_mode):
        tree = {}
        for n in sorted(os.listdir(p)):
            tree[n] = describe(os.path.join(p, n))
        return {"type": "dir", "mode": stat.S_IMODE(st.st_mode), "tree": tree}
    return {"type": "other"}


def act_squat(which, how):
    p = os.path.join(TOP, squat_name(which))
    if exists(p):
        raise OSError(errno.EEXIST, "taken")
    uid_named = {"victim": VICTIM, "victim_suffix": VICTIM, "root": 0, "root_suffix": 0}.get(which)
    if how == "dir":
        os.mkdir(p, 0o700)
        # Filled like a trash of the uid it names: entries a reaper would free if it
        # took this directory for that user's trash.
        inner = [p]
        if which == "legacy":
            inner = []
            for u in (VICTIM, 0):
                d = os.path.join(p, str(u))
                os.mkdir(d, 0o700)
                inner.append((d, u))
        else:
            inner = [(p, uid_named)]
        for d, u in inner:
            e = os.path.join(d, new_id("old").decode("latin-1"))
            os.mkdir(e, 0o700)
            put_meta(e.encode(), uid=u)
            put(os.path.join(e, "data"), b"squatted entry data\n")
            try:
                os.link(rng.choice(ROOT_FILES + VICTIM_FILES), os.path.join(e, "link"))
            except OSError:
                pass
            os.symlink(rng.choice(LINK_DIRS), os.path.join(e, "reaping"))
        os.chmod(p, rng.choice([0o700, 0o755]))
    elif how == "file":
        put(p, rng.randbytes(rng.randrange(0, 512)), 0o644)
    elif how == "fifo":
        os.mkfifo(p, 0o644)
    elif how == "symlink":
        # To a directory of that user that looks like its trash (or root's, or the victim's
        # home-like directory).
        target = FAKE_TRASHES.get(str(uid_named)) if uid_named is not None else None
        if which == "legacy":
            target = rng.choice(LINK_DIRS)
        os.symlink(target or rng.choice(LINK_DIRS), p)
    else:
        raise ValueError(how)
    squats[p] = describe(p)
    return p, {}


def act_unsquat(where):
    live = [p for p in squats if (os.path.dirname(p) == SHARED) == (where == "shared")]
    if not live:
        raise OSError(errno.ENOENT, "no squat to remove")
    p = rng.choice(live)
    rm_any(p)
    del squats[p]
    return p, {}


def act_shrink_squat(how):
    """`.reclaim-shrink.<inode hex>[.<random>]` in the shared sticky directory: for others'
    files (and guessed inode numbers of files to come), as a file, FIFO, symlink, hard link
    to root's file or a directory."""
    names = [n for n in os.listdir(SHARED) if not n.startswith(".reclaim-shrink.")]
    inos = []
    for n in names:
        try:
            inos.append(os.lstat(os.path.join(SHARED, n)).st_ino)
        except OSError:
            pass
    probe = os.path.join(WORK, "probe-%d" % seq)
    put(probe, b"")
    base = os.lstat(probe).st_ino
    os.unlink(probe)
    inos += [base + k for k in range(1, 40)]
    ino = rng.choice(inos)
    name = ".reclaim-shrink.%x" % ino
    if rng.random() < 0.5:
        name += ".%016x" % rng.getrandbits(64)
    p = os.path.join(SHARED, name)
    if exists(p):
        raise OSError(errno.EEXIST, "taken")
    if how == "file":
        put(p, b"attacker's shrink leftover\n", 0o644)
    elif how == "dir":
        os.mkdir(p, 0o755)
    else:
        plant(p, how)
    squats[p] = describe(p)
    return p, {}


def act_rm(how):
    """A real entry of its own: `reclaim rm --background` of its own file or tree."""
    p = os.path.join(WORK, "own-%d" % seq)
    args = ["rm", "--background"]
    if how == "tree":
        os.mkdir(p)
        for i in range(rng.randrange(1, 30)):
            put(os.path.join(p, "f%d" % i), b"own\n")
        args.append("-r")
    else:
        put(p, b"own file\n" * rng.randrange(1, 1000))
    if how == "grace":
        args += ["--grace", "2s"]
    r = reclaim(args + [p], spawn=(how == "spawn"))
    if how == "grace" and r.get("rc") == 0:
        own_grace.append((p, time.time() + 2.0))
    return p, r


def act_reclaim(which):
    if which == "restore_own":
        live = [(p, d) for p, d in own_grace if d - time.time() > 0.5]
        if not live:
            raise OSError(errno.ENOENT, "no own entry in its grace window")
        p, d = live[-1]
        own_grace.remove((p, d))
        return p, reclaim(["restore", p])
    if which == "restore_victim":
        # The victim's hidden path: its own forged entries name it; must never succeed.
        p = victim_hidden()
        r = reclaim(["restore", p])
        if r.get("rc") == 0:
            r["unexpected"] = True
        return p, r
    if which == "restore_root":
        p = rng.choice([ROOT_HIDDEN, os.path.join(ROOT_DIR, "planted")])
        r = reclaim(["restore", p])
        if r.get("rc") == 0:
            r["unexpected"] = True
        return p, r
    if which == "status":
        r = reclaim(["status", "--json"])
        try:
            ok = isinstance(json.loads(r.get("stdout") or b""), dict)
        except ValueError:
            ok = False
        if not ok and not r.get("hang"):
            r["unexpected"] = True
            r["stderr"] = "status --json is not one object: " + show((r.get("stdout") or b"")[:300])
        return TOP, r
    if which == "reap":
        return TOP, reclaim(["reap", "--once", "--json"])
    if which == "rm_big_shared":
        # A foreground removal of a big file of its own among the squatted shrink names.
        p = os.path.join(SHARED, "atk-big-%d" % seq)
        with open(p, "xb") as f:
            chunk = rng.randbytes(1 << 20)
            for _ in range(BIG >> 20):
                f.write(chunk)
        r = reclaim(["rm", p])
        return p, r
    raise ValueError(which)


def act_cleanup():
    t = trash()
    es = entries(t)
    if not es:
        raise OSError(errno.ENOENT, "empty")
    n = 1 if len(es) < 300 else 20
    for e in rng.sample(es, min(n, len(es))):
        rm_any(e)
    return t, {"removed": min(n, len(es))}


def act_flood():
    """The decoy flood (once): empty trashes of its own and squats of the victim's names."""
    t0 = time.time()
    for i in range(DECOYS):
        os.mkdir(os.path.join(TOP, ".reclaim-%d.decoy%d" % (ME, i)), 0o700)
    for i in range(VICTIM_DECOYS):
        os.mkdir(os.path.join(TOP, ".reclaim-%d.decoy%d" % (VICTIM, i)), 0o700)
    return TOP, {"start": round(t0, 3), "end": round(time.time(), 3), "count": DECOYS + VICTIM_DECOYS}


# Where a careless root (its HOME this one) would read its configuration and keep its trash
# registry.
HOME_NAMES = {
    "config": os.path.join(HOME, ".config", "reclaim.toml"),
    "registry": os.path.join(HOME, ".local", "state", "reclaim", "trashes"),
    "registry_tmp": os.path.join(HOME, ".local", "state", "reclaim", "trashes.tmp"),
}


def act_home(which, how):
    """Plants `how` where a root that kept this user's HOME reads or writes."""
    p = HOME_NAMES[which]
    os.makedirs(os.path.dirname(p), exist_ok=True)
    rm_any(p)
    if how == "valid":
        put(p, b'[rm]\nmode = "background"\ngrace = "1d"\n[reap]\nlog = "none"\n', 0o644)
    elif how == "lines":
        put(p, ("\n".join(LINK_DIRS) + "\n").encode(), 0o644)
    else:
        plant(p, how)
    return p, {}


def act_fix():
    """Makes its trashes and entries usable again (0700), as a careless user would."""
    for t in my_trashes():
        os.chmod(t, 0o700)
        for e in entries(t):
            try:
                os.chmod(e, 0o700)
            except OSError:
                pass
    return TOP, {}


ACTIONS = []


def add(kind, weight, fn, *args):
    ACTIONS.append((kind, weight, fn, args))


for how in ["fifo", "symlink", "hardlink", "hardlink_victim", "sparse", "garbage", "dir"]:
    add("meta:" + how, 3, act_meta, how)
for which in ["victim", "root", "self_victim_path", "self_root_path", "absurd"]:
    add("meta:" + which, 3, act_meta_json, which)
for name in [b"data", b"reaping"]:
    for how in ["fifo", "symlink_dir", "hardlink", "hardlink_victim", "huge_sparse", "dir_links"]:
        add("%s:%s" % (name.decode(), how), 2, act_payload, name, how)
add("data+reaping", 2, act_payload, b"data", "both")
for name in ["lock", "reaper.json", "reaper.log", "tmp", "failed.json"]:
    for how in ["fifo", "symlink", "hardlink", "garbage", "sparse", "dir", "json"]:
        if how == "json" and name not in ("reaper.json", "failed.json"):
            continue
        add("state:%s:%s" % (name, how), 1, act_state, name, how)
for which in [
    "data_symlink",
    "reaping_symlink",
    "subdir_symlink",
    "entry_rename",
    "entries_swap",
    "entry_symlink",
    "trash_symlink",
]:
    add("swap:" + which, 3, act_swap, which)
for what in ["trash", "entry", "data"]:
    for mode in [0o777, 0o000, 0o755]:
        add("chmod:%s:%04o" % (what, mode), 1, act_chmod, what, mode)
add("fix", 1, act_fix)
for which in ["victim", "victim_suffix", "root", "root_suffix", "legacy"]:
    for how in ["dir", "file", "symlink", "fifo"]:
        add("squat:%s:%s" % (which, how), 1, act_squat, which, how)
add("unsquat:top", 3, act_unsquat, "top")
for how in ["file", "fifo", "symlink", "hardlink", "dir"]:
    add("shrink-squat:" + how, 1, act_shrink_squat, how)
add("unsquat:shared", 1, act_unsquat, "shared")
for how in ["file", "tree", "grace", "spawn"]:
    add("rm:" + how, {"spawn": 1}.get(how, 4), act_rm, how)
for which in ["restore_own", "restore_victim", "restore_root", "status", "reap"]:
    add(which.replace("_", ":"), 2, act_reclaim, which)
add("rm:big-shared", 0.15, act_reclaim, "rm_big_shared")
add("cleanup", 3, act_cleanup)
for which in HOME_NAMES:
    for how in ["fifo", "symlink", "hardlink", "garbage", "sparse", "dir", "valid", "lines"]:
        add("home:%s:%s" % (which, how), 0.5, act_home, which, how)

# SOAK_SKIP_KINDS (kinds or prefixes, comma-separated): leave some out, e.g. to see what else
# fails while a bug one of them finds is open.
SKIP = [k for k in cfg.get("skip_kinds", []) if k]
ACTIONS = [a for a in ACTIONS if not any(a[0] == k or a[0].startswith(k + ":") for k in SKIP)]
WEIGHTS = [a[1] for a in ACTIONS]


def record(kind, path, ok, extra):
    global actions
    actions += 1
    counts[kind] = counts.get(kind, 0) + 1
    line = {"i": actions, "t": round(time.time(), 3), "kind": kind, "path": show(path), "ok": ok}
    for k, v in extra.items():
        if k != "stdout":
            line[k] = v
    log.write(json.dumps(line) + "\n")


def one(kind, fn, args):
    try:
        path, extra = fn(*args)
        ok = extra.get("rc", 0) == 0 and not extra.get("hang")
        record(kind, path, ok, extra)
    except OSError as e:
        record(kind, e.filename or "", False, {"error": errno.errorcode.get(e.errno, str(e))})
    except Exception as e:  # a bug of this script: the soak reports it
        record(kind, "", False, {"script_error": "%s: %s" % (type(e).__name__, e)})


start = time.time()
end = start + SECS
# First the squats of the other users' names, before they ever hide anything.
for which in ["victim", "root", "legacy"]:
    how = rng.choice(["dir", "symlink", "file"])
    one("squat:%s:%s" % (which, how), act_squat, (which, how))
flooded = FLOOD_AT < 0 or (DECOYS + VICTIM_DECOYS) == 0
decoys = {}
while True:
    now = time.time()
    if not flooded and now >= start + FLOOD_AT:
        flooded = True
        one("flood:decoys", act_flood, ())
        decoys = {
            os.path.join(TOP, ".reclaim-%d.decoy" % ME): DECOYS,
            os.path.join(TOP, ".reclaim-%d.decoy" % VICTIM): VICTIM_DECOYS,
        }
    if now >= end and actions >= MIN_ACTIONS:
        break
    if now >= start + 3 * SECS + 60:
        break
    kind, _, fn, args = rng.choices(ACTIONS, weights=WEIGHTS)[0]
    one(kind, fn, args)
    # Paced to RATE actions per second on average (random gaps), as far as it keeps up.
    ahead = start + actions / RATE - time.time()
    if ahead > 0 and now < end:
        time.sleep(min(rng.uniform(0, 2 * ahead), 0.5))

# Every squat it still holds, as it is now (it never changes one after making it).
final = {"final": True, "actions": actions, "counts": counts, "squats": {}, "decoys": decoys}
for p, d in squats.items():
    final["squats"][show(p)] = d
log.write(json.dumps(final) + "\n")
log.close()
print(json.dumps({"final": True, "actions": actions}))
