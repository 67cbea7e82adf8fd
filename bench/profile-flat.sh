#!/bin/bash
# Usage (root): bash bench/profile-flat.sh [FILES]   -- everything lives in /var/tmp/prof (a loop image it makes and removes).
# Profile reclaim vs rm -rf on a cold, journaled ext4 loop image with N flat files.
set -e
N=${1:-300000}; W=/var/tmp/prof; X=/work/main/target/release
mkdir -p $W/mnt; truncate -s 8G $W/img; mkfs.ext4 -q -F -N $((N*3)) $W/img
dev=$(losetup --find --show --direct-io=on $W/img); trap "umount $W/mnt 2>/dev/null; losetup -d $dev; rm -f $W/img" EXIT
mount $dev $W/mnt
$X/examples/mkworkload --shape flat --files $N $W/mnt/a >/dev/null; $X/examples/mkworkload --shape flat --files $N $W/mnt/b >/dev/null
sync; echo 3 > /proc/sys/vm/drop_caches
perf record -q -g -o $W/rm.data rm -rf $W/mnt/a 2>/dev/null
sync; echo 3 > /proc/sys/vm/drop_caches
perf record -q -g -o $W/rc.data $X/reclaim rm -r $W/mnt/b 2>/dev/null
for t in rm rc; do echo "== $t: top kernel symbols (self)"; perf report -i $W/$t.data --no-children --stdio --sort sym 2>/dev/null | grep -E "^ +[0-9]" | head -14; done
