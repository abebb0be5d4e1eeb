#!/bin/bash
# tests/pi/run.sh: the emulated-Pi proof of feedsync (issue 14), in one command.
#
#   tests/pi/run.sh [--work DIR] [--from PHASE] [--port PORT]
#
# Needs the image built once by ../shared/pi-emu/build-image.sh (as root, ~30 min) under
# $PI_EMU_DIR (default /var/tmp/pi-emu: rootfs.img, vmlinuz, initrd.img), qemu-system-arm
# and python3. That image is never written: the proof runs on a sparse copy in the work
# dir (default $PI_EMU_DIR/proof-<time>). Takes about an hour on two host cores.
#
# On the host: tests/pi/world.py serves a generated news site on 127.0.0.1:PORT (the
# guest's http://10.0.2.2:PORT) and counts every request. In the guest, five boots:
#   1 install   fresh image: ./install.sh, service active + verify + READY, the feeds land
#               in news, figures (RSS, PSS, CPU, snapshot), stop writes the snapshot;
#               clean power-off
#   2 reboot    live database restored from the snapshot, nothing fetched again; bytes
#               written to the "SD card" while the daemon polls
#   3 clock     booted with the board's clock CLOCK_BEHIND_DAYS behind (qemu -rtc base=),
#               a new wave fetched meanwhile, then the clock corrected: nothing lost,
#               polling goes on at once, nothing pruned early
#   4 powercut  a new wave of articles; once staged, kill -9 of qemu at a random instant
#   5 after     snapshot integrity, service up, news complete after one poll; install.sh
#               again (upgrade), --uninstall, --cron with the service gone
# then tests/pi/check.py prints PASS/FAIL per check (the guest's and the server's) and the
# figures, also written to WORK/summary.txt. Exit status 0 when everything passed.
# --from PHASE resumes an earlier run's work dir at that phase (1-5, or 6 = checks only).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=/dev/null
. "$HERE/common.sh"

work=
from=1
port=${PORT:-18080}
world_pid=
SD_WINDOW=${SD_WINDOW:-600}   # seconds of polling over which the card's writes are counted
CUT_WITHIN=${CUT_WITHIN:-180} # the power cut falls 0..this many seconds after the daemon staged the new wave
CLOCK_BEHIND_DAYS=${CLOCK_BEHIND_DAYS:-200} # the guest's clock at the clock phase's boot (> retention's 90 days)

say() { printf '[run.sh %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

stop_world() {
    if [ -n "$world_pid" ]; then kill "$world_pid" 2>/dev/null || true; wait "$world_pid" 2>/dev/null || true; fi
}

start_world() {
    python3 "$HERE/world.py" --port "$port" --state "$work/world" >>"$work/world.log" 2>&1 &
    world_pid=$!
    local _
    for _ in $(seq 50); do
        [ -s "$work/world/world.json" ] && [ -e "$work/world/world.pid" ] && return 0
        sleep 0.2
    done
    say "the world server did not start: $(cat "$work/world.log")"
    return 1
}

# the job share: the project's tree (as committed + uncommitted changes) and the world
share() {
    rm -rf "$work/share"
    mkdir -p "$work/share/src" "$work/share/world"
    (cd "$REPO" && git ls-files -z -c -o --exclude-standard | grep -zv '^bench/' |
        tar --null -T - -cf -) | tar -xf - -C "$work/share/src"
    cp -a "$work/world/world.json" "$work/world/files" "$work/share/world/"
    echo "http://10.0.2.2:$port" >"$work/share/world-base"
    echo "$SD_WINDOW" >"$work/share/sd-window"
}

phase() {  # NUMBER NAME [guest-run options...]
    local number=$1 name=$2 rc
    shift 2
    [ "$number" -ge "$from" ] || return 0
    share
    say "phase $number ($name): booting the emulated Pi"
    echo "$number $name start $(date +%s.%N)" >>"$work/phases.txt"
    set +e
    IMG="$work/rootfs.img" "$HERE/guest-run.sh" -o "$work/phase$number" -f "$work/share" --persist "$@" \
        "$HERE/guest-$number-$name.sh" >"$work/phase$number.log" 2>&1
    rc=$?
    set -e
    echo "$number $name end $(date +%s.%N) $rc" >>"$work/phases.txt"
    local passed failed
    passed=$(grep -c '^CHECK PASS' "$work/phase$number/results.txt" 2>/dev/null || true)
    failed=$(grep -c '^CHECK FAIL' "$work/phase$number/results.txt" 2>/dev/null || true)
    say "phase $number ($name): exit $rc; ${passed:-0} passed, ${failed:-0} failed;" \
        "$(grep wall "$work/phase$number/run.txt" 2>/dev/null || true)"
}

main() {
    while [ $# -gt 0 ]; do
        case "$1" in
            --work) work=$2; shift ;;
            --from) from=$2; shift ;;
            --port) port=$2; shift ;;
            -h | --help) sed -n '2,28p' "$0"; exit 0 ;;
            *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
        esac
        shift
    done
    for f in "$IMG" "$KERNEL" "$INITRD"; do
        [ -f "$f" ] || { echo "missing $f: build the image with ../shared/pi-emu/build-image.sh" >&2; exit 1; }
    done
    command -v qemu-system-arm >/dev/null || { echo "needs qemu-system-arm (apt install qemu-system-arm)" >&2; exit 1; }
    work=${work:-$PI_EMU_DIR/proof-$(date +%Y%m%d-%H%M%S)}
    mkdir -p "$work/world"
    work=$(cd "$work" && pwd)
    say "work dir $work"
    local t0
    t0=$(date +%s)
    trap stop_world EXIT
    start_world
    if [ "$from" -le 1 ]; then
        say "copying the image (sparse) to $work/rootfs.img"
        rm -f "$work/rootfs.img" "$work/phases.txt"
        cp --sparse=always "$IMG" "$work/rootfs.img"
    fi
    phase 1 install -t 5400
    phase 2 reboot -t $((1800 + SD_WINDOW))
    phase 3 clock -t 2400 --rtc-base "$(date -u -d "-$CLOCK_BEHIND_DAYS days" +%Y-%m-%dT%H:%M:%S)"
    rm -f "$work/world/mark-armed"
    phase 4 powercut -t 1800 --cut-when "$work/world/mark-armed" --cut-within "$CUT_WITHIN"
    phase 5 after -t 3600
    stop_world
    world_pid=
    echo "$(($(date +%s) - t0))" >"$work/run-seconds"
    python3 "$HERE/check.py" "$work" | tee "$work/summary.txt"
    return "${PIPESTATUS[0]}"
}

main "$@"; exit $?
