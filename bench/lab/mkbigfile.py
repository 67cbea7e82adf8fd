#!/usr/bin/env python3
"""Write the impact lab's big file: a backup written next to a busy database.

  mkbigfile.py --mode frag|contig --size BYTES [--hole BYTES] FILE FILLER_DIR

frag:   first fragment the free space (fill the file system with --hole-sized files in
        FILLER_DIR, 1 MiB by default, remove every other one), then write FILE into the holes:
        ~BYTES/hole extents on ext4 and xfs (more on ext3, whose indirect blocks interleave).
        Needs a file system of about 2 x BYTES.
contig: one sequential write into free space, fsync at the end.
The data is zeros: removal never reads it, and the lab's image copies can then keep it as holes.
Prints the number of bytes written. Creates FILE and the fillers exclusively (refuses to
overwrite anything).
"""
import argparse
import errno
import os
import sys


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    s = s.strip().upper().rstrip("B").rstrip("I")
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["frag", "contig"], required=True)
    ap.add_argument("--size", type=parse_size, required=True)
    ap.add_argument("--hole", type=parse_size, default=1 << 20)
    ap.add_argument("file")
    ap.add_argument("filler_dir")
    a = ap.parse_args()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    big = os.open(a.file, flags, 0o644)
    if a.mode == "contig":
        buf = bytes(8 << 20)
        left = a.size
        while left > 0:
            n = os.write(big, buf[: min(left, len(buf))])
            left -= n
        os.fsync(big)
        os.close(big)
        print(a.size)
        return
    # frag: fragment the free space the way a busy database's churn does, then write the file
    # into it. Phase 1 fills the whole file system with `--hole`-sized files; phase 2 removes
    # every other one; phase 3 writes the big file sequentially, so it can only land in holes of
    # `--hole` bytes. (Interleaving appends with other files' appends is not enough: ext4's and
    # xfs's preallocation keep such a file contiguous; and any large free region left over would
    # take the file whole.) Size the file system at about 2 x BYTES + what else it must hold.
    os.close(big)
    os.makedirs(a.filler_dir, exist_ok=True)
    n = 0
    while True:
        path = os.path.join(a.filler_dir, f"db.{n}")
        try:
            f = os.open(path, flags, 0o644)
        except OSError as e:  # xfs: no space left for another inode
            if e.errno == errno.ENOSPC:
                break
            raise
        try:
            os.posix_fallocate(f, 0, a.hole)  # glibc writes the blocks where fallocate is missing (ext3)
        except OSError as e:
            os.close(f)
            os.unlink(path)
            if e.errno == errno.ENOSPC:
                break
            raise
        os.close(f)
        n += 1
    os.sync()
    for i in range(1, n, 2):
        os.unlink(os.path.join(a.filler_dir, f"db.{i}"))
    os.sync()
    st = os.statvfs(a.filler_dir)
    if st.f_bavail * st.f_frsize < a.size:
        sys.exit(f"mkbigfile: only {st.f_bavail * st.f_frsize} bytes in holes, need {a.size}: make the file system bigger")
    big = os.open(a.file, os.O_WRONLY | os.O_NOFOLLOW)
    buf = bytes(8 << 20)
    left = a.size
    while left > 0:
        left -= os.write(big, buf[: min(left, len(buf))])
    os.fsync(big)
    os.close(big)
    print(a.size)


if __name__ == "__main__":
    main()
