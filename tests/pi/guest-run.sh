#!/bin/bash
# tests/pi/guest-run.sh: boot the emulated armhf Debian, run a script in it as root once
# systemd has reached multi-user.target, collect the output, power off. A copy of
# ../shared/pi-emu/run-in-guest.sh with a power-cut mode added.
#
#   tests/pi/guest-run.sh [options] SCRIPT
#     -o DIR        where to put results (default: $PI_EMU_DIR/runs/<timestamp>)
#     -f DIR        copy DIR into the job share; the script sees it as /pijob/files
#     -t SECONDS    time limit for the whole boot+job+poweroff (default 1800)
#     --persist     keep disk changes in the image $IMG (default: discard them)
#     --cut-when FILE --cut-within SECONDS
#                   power cut: once FILE exists on the host, wait a random 0..SECONDS,
#                   then kill -9 qemu (no shutdown, no sync: the plug pulled)
#     --rtc-base DATE
#                   the emulated board's real-time clock starts at DATE (UTC, as qemu's
#                   -rtc base=), not the host's time: the guest boots with its clock wrong
#
# The script runs with CWD /pijob, as root, via the image's pi-emu-job.service. Anything
# it writes to /pijob/out/ comes back in the results dir: job.log, exit-code,
# job-seconds, boot-info.txt, failed-units.txt, journal.txt, console.log, run.txt.
# Exit status: the script's; 124 if the time limit hit; 125 if no result came back;
# 0 after a power cut (the job never finishes then).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=/dev/null
. "$HERE/common.sh"

out=
files=
limit=1800
snap=on
cut_when=
cut_within=0
rtc_base=
while [ $# -gt 0 ]; do
    case "$1" in
        -o) out=$2; shift ;;
        -f) files=$2; shift ;;
        -t) limit=$2; shift ;;
        --persist) snap=off ;;
        --cut-when) cut_when=$2; shift ;;
        --cut-within) cut_within=$2; shift ;;
        --rtc-base) rtc_base=$2; shift ;;
        -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 1 ;;
        *) break ;;
    esac
    shift
done
[ $# -eq 1 ] || { echo "usage: $0 [-o DIR] [-f DIR] [-t SECONDS] [--persist] [--cut-when FILE --cut-within SECONDS] [--rtc-base DATE] SCRIPT" >&2; exit 1; }
script=$1
for f in "$IMG" "$KERNEL" "$INITRD" "$script"; do [ -f "$f" ] || { echo "missing $f" >&2; exit 1; }; done

out=${out:-$PI_EMU_DIR/runs/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
job=$(mktemp -d "${TMPDIR:-/tmp}/pi-job.XXXXXX")
qemu_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    if [ -n "$qemu_pid" ]; then kill -9 "$qemu_pid" 2>/dev/null || true; fi
    rm -rf "$job"
}
trap cleanup EXIT
cp "$script" "$job/job.sh"
if [ -n "$files" ]; then mkdir -p "$job/files"; cp -a "$files/." "$job/files/"; fi
mkdir -p "$job/out"

mapfile -t args < <(qemu_base_args "$KERNEL_CMDLINE_BASE pi_emu_job=1")
# shellcheck disable=SC2054  # commas inside qemu option values
args+=(-drive "if=none,file=$IMG,format=raw,id=hd,snapshot=$snap" -device virtio-blk-device,drive=hd
    -fsdev "local,id=fs0,path=$job,security_model=none" -device virtio-9p-device,fsdev=fs0,mount_tag=pijob
    -serial "file:$out/console.log")
[ -z "$rtc_base" ] || args+=(-rtc "base=$rtc_base")

t0=$(date +%s.%N)
qemu-system-arm "${args[@]}" &
qemu_pid=$!
qrc=
cut=
deadline=$(($(date +%s) + limit))
while kill -0 "$qemu_pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        kill -9 "$qemu_pid" 2>/dev/null || true
        qrc=124
        break
    fi
    if [ -n "$cut_when" ] && [ -e "$cut_when" ]; then
        delay=$(awk -v max="$cut_within" -v seed="$RANDOM$$" 'BEGIN { srand(seed); printf "%.1f", rand() * max }')
        echo "power cut armed ($cut_when); pulling the plug in $delay s"
        sleep "$delay"
        kill -9 "$qemu_pid"
        cut="$delay s after $(basename "$cut_when"), at $(date -u +%H:%M:%S.%N | cut -c1-12) UTC"
        qrc=0
        break
    fi
    sleep 1
done
set +e
wait "$qemu_pid" 2>/dev/null
rc=$?
set -e
qemu_pid=
[ -n "$qrc" ] || qrc=$rc
t1=$(date +%s.%N)

cp -a "$job/out/." "$out/" 2>/dev/null || true
wall=$(echo "$t0 $t1" | awk '{printf "%.1f", $2-$1}')
{
    echo "qemu exit: $qrc"
    echo "wall seconds (boot + job + poweroff): $wall"
    [ -f "$out/boot-info.txt" ] && echo "guest uptime when job started: $(head -2 "$out/boot-info.txt" | tail -1 | cut -d' ' -f1) s"
    [ -f "$out/job-seconds" ] && echo "job seconds: $(cat "$out/job-seconds")"
    [ -z "$cut" ] || echo "power cut: kill -9 of qemu $cut"
} >"$out/run.txt"
cat "$out/run.txt"
echo "results: $out"

if [ -n "$cut" ]; then exit 0; fi
if [ "$qrc" = 124 ]; then echo "TIME LIMIT ($limit s) hit" >&2; exit 124; fi
if [ ! -f "$out/exit-code" ]; then
    echo "no result came back; see $out/console.log" >&2
    tail -20 "$out/console.log" >&2
    exit 125
fi
echo "---- job.log (tail) ----"
tail -40 "$out/job.log"
exit "$(cat "$out/exit-code")"
