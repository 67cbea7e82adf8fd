#!/usr/bin/env python3
"""Timing helper of bench/trash.sh (Python 3 standard library only).

  measure.py usage MOUNT
      prints used_bytes=, used_inodes= of the file system at MOUNT (statvfs)

  measure.py fill DIR --count N --size BYTES [--start I]
      writes N files of BYTES zeros named like PostgreSQL WAL segments (24 hex digits) in DIR

  measure.py run --scratch S --mount M (--target P... | --files-dir D) --log F [options] -- ARGV...
      times one removal command and prints key=value lines (see RESULT_KEYS). ARGV is run
      directly (no shell); an argument "{files}" is replaced by the sorted paths of the files in
      D (listed before the caches are dropped). Every target must be strictly inside S.

      t=0 is just before the command is spawned. wall_s: the command's exit (wait4);
      gone: 1 if no target exists at that moment (lstat); eof_s: when the command's stdout+stderr
      pipe reached EOF (later than wall_s if a process it left behind holds it);
      free_df_s: first time statvfs(M) shows the space back (used bytes within 0.1% of the
      workload's, at least 4 MiB, of the empty file system's; used inodes within 16), polled every --poll-ms;
      free_status_s: first time `RECLAIM status --json` shows M's trash with no entry and no
      reaper (polled every --status-ms, only with --status); sync_s: syncfs(M) after the exit
      (only with --sync).
"""

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time

RESULT_KEYS = [
    "wall_s", "rc", "user_s", "sys_s", "gone", "left", "eof_s", "free_df_s", "free_status_s",
    "status_polls", "status_call_ms", "sync_s", "used_after_bytes", "used_after_inodes",
    "trash_entries_after", "note",
]


def usage_of(mount):
    st = os.statvfs(mount)
    used_bytes = (st.f_blocks - st.f_bfree) * st.f_frsize
    used_inodes = st.f_files - st.f_ffree
    return used_bytes, used_inodes


def inside(path, scratch):
    p = os.path.realpath(path)
    s = os.path.realpath(scratch)
    return p.startswith(s + "/") and p != s


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def syncfs(mount):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(mount, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if libc.syncfs(fd) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    finally:
        os.close(fd)


def exists(path):
    try:
        os.lstat(path)
        return True
    except FileNotFoundError:
        return False


def status_of(reclaim, mount, boost=lambda on: None):
    """(done, entries, note, seconds the call took) for the trash of `mount`."""
    t = time.perf_counter()
    boost(False)  # the status command runs at the original niceness
    try:
        r = subprocess.run([reclaim, "status", "--json"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
    finally:
        boost(True)
    took = time.perf_counter() - t
    if r.returncode != 0:
        return False, None, f"status exit {r.returncode}: {r.stderr.strip()[:200]}", took
    try:
        doc = json.loads(r.stdout)
    except ValueError as e:
        return False, None, f"status --json unparsable: {e}", took
    want = os.path.realpath(mount)
    mine = [t for t in doc.get("trashes", [])
            if os.path.realpath(str(t.get("mount", ""))) == want]
    if not mine:
        return True, 0, "status lists no trash on the mount", took
    entries = sum(int(t.get("entries") or 0) for t in mine)
    busy = any(t.get("reaper") is not None for t in mine)
    return entries == 0 and not busy, entries, "", took


def cmd_usage(a):
    b, i = usage_of(a.mount)
    print(f"used_bytes={b}")
    print(f"used_inodes={i}")


def cmd_fill(a):
    buf = bytes(1 << 20)
    os.makedirs(a.dir, exist_ok=True)
    for i in range(a.start, a.start + a.count):
        name = f"{1:08X}{(i >> 8) & 0xFFFFFFFF:08X}{i & 0xFF:08X}"
        fd = os.open(os.path.join(a.dir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            left = a.size
            while left > 0:
                left -= os.write(fd, buf[: min(left, len(buf))])
        finally:
            os.close(fd)


def cmd_run(a):
    res = {k: "" for k in RESULT_KEYS}
    notes = []
    argv = list(a.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        sys.exit("measure.py run: no command")
    targets = list(a.target or [])
    if a.files_dir:
        files = sorted(os.path.join(a.files_dir, n) for n in os.listdir(a.files_dir))
        if not files:
            sys.exit(f"measure.py run: {a.files_dir} is empty")
        targets += files
        expanded = []
        for x in argv:
            expanded += files if x == "{files}" else [x]
        argv = expanded
    if not targets:
        sys.exit("measure.py run: no target")
    for t in targets + [a.mount]:
        if not inside(t, a.scratch):
            sys.exit(f"measure.py run: refusing: {t} is not inside the scratch dir {a.scratch}")
    if not os.path.ismount(a.mount):
        sys.exit(f"measure.py run: {a.mount} is not a mount point")

    if a.drop_caches:
        drop_caches()
    for exe in a.warm or []:
        # The programs (and their libraries) back into the page cache: the cold cache is the
        # measured file system's, not the executable's.
        subprocess.run([exe, "--version"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30, check=False)

    log = open(a.log, "wb")
    eof = {}
    nice0 = os.getpriority(os.PRIO_PROCESS, 0)

    def boost(on):
        # While measuring, the harness runs at nice -10 so that on a busy machine it notices the
        # command's exit at once; whatever it starts (the command, status polls) is forked at
        # the original niceness. Not an option of Popen: preexec_fn would cost a fork (~3 ms).
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice0 - 10 if on else nice0)
        except OSError:
            pass

    def pump(stream, t0):
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            log.write(chunk)
            log.flush()
        eof["t"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    boost(True)
    reaped = []

    def forward(signum, _frame):
        # The command is in its own session (so a timeout can kill its whole group): take it
        # down with us when the script is interrupted (not once reaped: its pid may be reused).
        if not reaped:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGHUP, forward)
    reader = threading.Thread(target=pump, args=(p.stdout, t0), daemon=True)
    reader.start()
    killer = None
    if a.timeout > 0:
        def kill():
            if reaped:
                return
            notes.append(f"killed after {a.timeout}s")
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the command's own process group (we made it)
            except ProcessLookupError:
                pass
        killer = threading.Timer(a.timeout, kill)
        killer.start()
    _, status, ru = os.wait4(p.pid, 0)
    reaped.append(True)
    wall = time.perf_counter() - t0
    if killer is not None:
        killer.cancel()
    left = sum(1 for t in targets if exists(t))
    p.returncode = os.waitstatus_to_exitcode(status)
    res.update(wall_s=f"{wall:.4f}", rc=p.returncode, user_s=f"{ru.ru_utime:.3f}",
               sys_s=f"{ru.ru_stime:.3f}", gone=int(left == 0), left=left)

    if a.sync:
        t = time.perf_counter()
        syncfs(a.mount)
        res["sync_s"] = f"{time.perf_counter() - t:.4f}"

    if a.poll_free:
        limit_b = a.empty_used_bytes + max((a.full_used_bytes - a.empty_used_bytes) // 1000, 4 << 20)
        limit_i = a.empty_used_inodes + 16
        want_status = bool(a.status)
        free_df = free_status = None
        polls, call_s = 0, 0.0
        next_status = 0.0
        fdl = time.perf_counter() + a.free_timeout
        while time.perf_counter() < fdl:
            now = time.perf_counter() - t0
            if free_df is None:
                b, i = usage_of(a.mount)
                if b <= limit_b and i <= limit_i:
                    free_df = now
            if want_status and free_status is None and now >= next_status:
                done, _, note, took = status_of(a.status, a.mount, boost)
                polls += 1
                call_s += took
                if note and note not in notes:
                    notes.append(note)
                if done:
                    free_status = time.perf_counter() - t0  # when that status call returned
                next_status = time.perf_counter() - t0 + a.status_ms / 1000
            if free_df is not None and (free_status is not None or not want_status):
                break
            time.sleep(a.poll_ms / 1000)
        if free_df is None:
            notes.append(f"space not back after {a.free_timeout}s")
        if want_status and free_status is None:
            notes.append(f"trash not empty after {a.free_timeout}s")
        res["free_df_s"] = "" if free_df is None else f"{free_df:.4f}"
        res["free_status_s"] = "" if free_status is None else f"{free_status:.4f}"
        res["status_polls"] = polls if want_status else ""
        res["status_call_ms"] = f"{1000 * call_s / polls:.1f}" if polls else ""
        if want_status:
            _, entries, _, _ = status_of(a.status, a.mount, boost)
            res["trash_entries_after"] = "" if entries is None else entries

    b, i = usage_of(a.mount)
    res["used_after_bytes"], res["used_after_inodes"] = b, i
    reader.join(timeout=a.eof_wait)
    if "t" in eof:
        res["eof_s"] = f"{eof['t']:.4f}"
    else:
        notes.append("stdout/stderr pipe still open (held by a process the command left behind)")
    log.flush()
    res["note"] = "; ".join(notes).replace(",", ";").replace("\n", " ")
    for k in RESULT_KEYS:
        print(f"{k}={res[k]}")
    sys.stdout.flush()
    os._exit(0)  # do not wait for the reader thread if a leftover process holds the pipe


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("usage")
    u.add_argument("mount")
    f = sub.add_parser("fill")
    f.add_argument("dir")
    f.add_argument("--count", type=int, required=True)
    f.add_argument("--size", type=int, required=True)
    f.add_argument("--start", type=int, default=1)
    r = sub.add_parser("run")
    r.add_argument("--scratch", required=True)
    r.add_argument("--mount", required=True)
    r.add_argument("--target", action="append")
    r.add_argument("--files-dir")
    r.add_argument("--log", required=True)
    r.add_argument("--drop-caches", action="store_true")
    r.add_argument("--warm", action="append", metavar="EXE", help="run EXE --version after dropping caches")
    r.add_argument("--sync", action="store_true")
    r.add_argument("--poll-free", action="store_true")
    r.add_argument("--status", metavar="RECLAIM", help="poll RECLAIM status --json too")
    r.add_argument("--empty-used-bytes", type=int, default=0)
    r.add_argument("--empty-used-inodes", type=int, default=0)
    r.add_argument("--full-used-bytes", type=int, default=0)
    r.add_argument("--poll-ms", type=float, default=10)
    r.add_argument("--status-ms", type=float, default=100)
    r.add_argument("--timeout", type=float, default=0, help="kill the command after this (0: never)")
    r.add_argument("--free-timeout", type=float, default=3600)
    r.add_argument("--eof-wait", type=float, default=1.0)
    r.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    {"usage": cmd_usage, "fill": cmd_fill, "run": cmd_run}[a.cmd](a)


if __name__ == "__main__":
    main()
