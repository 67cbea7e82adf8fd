#!/usr/bin/env bash
# Measure the emulated disk: fio through a loop device on slowdisk's disk.img,
# then mkfs + mount + write 200 MB + sync for ext3, ext4 and xfs.
# Usage (root): bench/slowdisk/check.sh [on|off]   (loop --direct-io, default on)
# Needs: fio, e2fsprogs, xfsprogs (apt-get install -y fio xfsprogs).
# Extra slowdisk arguments can be passed in SLOWDISK_ARGS (e.g. "--model ssd-sata").
set -euo pipefail
DIO=${1:-on}
RT=${RT:-15}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/target/release/slowdisk
[ -x "$BIN" ] || (cd "$HERE" && cargo build --release -q)
W=$(mktemp -d /var/tmp/slowdisk-check.XXXXXX)
mkdir "$W/mnt" "$W/fs"
LOOP=""
PID=""

cleanup() {
    mountpoint -q "$W/fs" && umount "$W/fs"
    [ -n "$LOOP" ] && losetup -d "$LOOP"
    if [ -n "$PID" ]; then
        sleep 0.3 # the loop device releases disk.img asynchronously
        kill -TERM "$PID"
        wait "$PID" || true
    fi
    rm -rf "$W"
}
trap cleanup EXIT

# shellcheck disable=SC2086
"$BIN" --backing "$W/back.img" --size 20G --trace "$W/trace.txt" \
    --ready-file "$W/ready" ${SLOWDISK_ARGS:-} "$W/mnt" &
PID=$!
for _ in $(seq 100); do [ -e "$W/ready" ] && break; sleep 0.1; done
[ -e "$W/ready" ] || { echo "slowdisk did not get ready" >&2; exit 1; }
LOOP=$(losetup --find --show --direct-io="$DIO" "$W/mnt/disk.img")
echo "loop $LOOP dio=$(cat /sys/block/"${LOOP#/dev/}"/loop/dio) kernel $(uname -r) $(date -u +%F)"

fio_job() { # name, fio args...
    local name=$1
    shift
    fio --name="$name" --filename="$LOOP" --direct=1 --ioengine=libaio --time_based \
        --runtime="$RT" --output-format=json "$@" >"$W/fio.json"
    python3 - "$name" "$W/fio.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[2]))["jobs"][0]
for k in ("read", "write"):
    d = j[k]
    if d["io_bytes"]:
        p = d["clat_ns"]["percentile"]
        print(f'{sys.argv[1]:12s} {k:5s} iops={d["iops"]:7.1f} MB/s={d["bw_bytes"]/1e6:6.1f} '
              f'clat mean={d["clat_ns"]["mean"]/1e6:6.2f}ms p50={p["50.000000"]/1e6:6.2f} '
              f'p99={p["99.000000"]/1e6:6.2f}')
s = j.get("sync", {}).get("lat_ns", {})
if s.get("mean"):
    print(f'{sys.argv[1]:12s} fdatasync mean={s["mean"]/1e6:.2f}ms '
          f'p99={s["percentile"]["99.000000"]/1e6:.2f}ms')
EOF
}

fio_job randread-qd1 --rw=randread --bs=4k --iodepth=1
fio_job randread-qd4 --rw=randread --bs=4k --iodepth=4
fio_job seqread-1M --rw=read --bs=1M --iodepth=1
fio_job seqwrite-1M --rw=write --bs=1M --iodepth=1
fio_job randw+fdsync --rw=randwrite --bs=4k --iodepth=1 --fdatasync=1 --ioengine=psync

for fs in ext3 ext4 xfs; do
    t0=$(date +%s.%N)
    case $fs in
    xfs) mkfs.xfs -q -f "$LOOP" ;;
    *) "mkfs.$fs" -q -F "$LOOP" ;;
    esac
    t1=$(date +%s.%N)
    mount "$LOOP" "$W/fs"
    t2=$(date +%s.%N)
    dd if=/dev/zero of="$W/fs/f" bs=1M count=200 status=none
    sync
    t3=$(date +%s.%N)
    umount "$W/fs"
    printf '%-4s mkfs %.1fs  mount %.2fs  write 200MB+sync %.1fs\n' "$fs" \
        "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$(echo "$t3 - $t2" | bc)"
done

echo "request sizes (op len count), top 12:"
awk '{print $2, $4}' "$W/trace.txt" | sort | uniq -c | sort -rn | head -12
