#!/usr/bin/env python3
"""Times an interactive disk-usage browser in a pseudo-terminal (bench/browse.sh runs it).

The command runs on a terminal of its own; its output goes through pyte (a VT100 emulator,
Debian's python3-pyte) and the screen is watched:
  first_s  the first frame: the first moment the screen shows any text;
  done_s   the scan done: the first moment the screen shows --done TEXT (and not --not TEXT,
           and, with --count RE, a count of at least --at-least);
  hwm_kib  the peak resident memory of the process then (VmHWM of /proc/PID/status);
  delete_s with --delete: 'd' is typed, then 'y' once --ask TEXT shows, and the time from 'y'
           until --deleted TEXT shows (how long the deletion keeps the user waiting);
  gone_s   with --gone PATH too: the time from 'y' until PATH is gone from its directory.
Then --quit is typed and the process is waited for. One JSON object goes to stdout.

    browse_tty.py --done 'scanned ' -- reclaim browse /mnt/w
"""
import argparse
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time

import pyte


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--done", required=True, help="text on the screen once the scan is done")
    ap.add_argument("--not", dest="unless", default=None,
                    help="... and this text is not (dua: '-> scanning <-' while it scans)")
    ap.add_argument("--count", help="a regular expression whose first group is a count shown...")
    ap.add_argument("--at-least", type=int, default=0, help="... that must be at least this")
    ap.add_argument("--quit", default="q", help="keys that quit")
    ap.add_argument("--cols", type=int, default=120)
    ap.add_argument("--rows", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--delete", action="store_true", help="time d + y on the selected entry")
    ap.add_argument("--ask", default=" Delete? ")
    ap.add_argument("--deleted", default="deleted ")
    ap.add_argument("--gone", help="with --delete: also time until this path is gone (lstat)")
    ap.add_argument("--screen", help="write the screen at the end of the scan to this file")
    ap.add_argument("--then", action="append", default=[],
                    help="keys to type once the scan is done (\\r, \\x1b escapes; repeatable)")
    ap.add_argument("--raw", help="write every byte the program wrote, up to the quit, here")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")

    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        # The terminal's size before the program asks for it.
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", a.rows, a.cols, 0, 0))
        os.execvp(cmd[0], cmd)

    screen = pyte.Screen(a.cols, a.rows)
    # Answers what the program asks the terminal (dua asks the cursor position: CSI 6n).
    screen.write_process_input = lambda data: os.write(fd, data.encode())
    stream = pyte.ByteStream(screen)
    raw = bytearray()
    out = {"first_s": None, "done_s": None, "hwm_kib": None, "delete_s": None, "ok": False}

    def text():
        return "\n".join(screen.display)

    def pump(until, limit):
        """Reads output until until() holds (True) or `limit` seconds pass (False)."""
        end = time.monotonic() + limit
        while True:
            if until():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            r, _, _ = select.select([fd], [], [], min(left, 0.05))
            if r:
                try:
                    data = os.read(fd, 1 << 16)
                except OSError:
                    return until()
                if not data:
                    return until()
                stream.feed(data)
                raw.extend(data)
                if out["first_s"] is None and any(l.strip() for l in screen.display):
                    out["first_s"] = round(time.monotonic() - t0, 4)

    def done():
        t = text()
        if a.done not in t or (a.unless and a.unless in t):
            return False
        if a.count:
            m = re.search(a.count, t)
            return bool(m) and int(m.group(1).replace(",", "")) >= a.at_least
        return True

    if pump(done, a.timeout):
        out["done_s"] = round(time.monotonic() - t0, 4)
        out["hwm_kib"] = hwm(pid)
        if a.screen:
            with open(a.screen, "w") as f:
                f.write(text() + "\n")
        out["ok"] = True
        for keys in a.then:
            os.write(fd, keys.encode().decode("unicode_escape").encode())
            pump(lambda: False, 0.7)
        if a.delete:
            os.write(fd, b"d")
            if pump(lambda: a.ask in text(), 60):
                ty = time.monotonic()
                os.write(fd, b"y")
                if a.gone:
                    while os.path.lexists(a.gone) and time.monotonic() - ty < 600:
                        time.sleep(0.0005)
                    if not os.path.lexists(a.gone):
                        out["gone_s"] = round(time.monotonic() - ty, 4)
                if pump(lambda: a.deleted in text(), 600):
                    out["delete_s"] = round(time.monotonic() - ty, 4)
            if out["delete_s"] is None:
                out["ok"] = False
    if a.raw:
        with open(a.raw, "wb") as f:
            f.write(raw)
    os.write(fd, a.quit.encode())
    # Quitting is not measured, but waited for (dua takes a while to free a big tree).
    deadline = time.monotonic() + 120
    status = None
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        pump(lambda: False, 0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        out["quit_killed"] = True
    out["exit"] = None if status is None else os.waitstatus_to_exitcode(status)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


def hwm(pid):
    """The peak resident memory of `pid` in KiB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


if __name__ == "__main__":
    main()
