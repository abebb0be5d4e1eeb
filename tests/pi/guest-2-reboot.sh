#!/bin/bash
# Phase 2 (after the clean power-off of phase 1): the service came up by itself, the live
# database (RAM, emptied by the reboot) was restored from the snapshot, nothing is
# fetched again (item 3; the server's counters say so in check.py). Then the bytes
# written to the "SD card" while the daemon polls, over SD_WINDOW seconds.
set -u
# shellcheck source=/dev/null
. /pijob/files/src/tests/pi/guest-lib.sh
log "phase 2: after a clean reboot"
want=$(expected 1)

for _ in $(seq 120); do systemctl is-active --quiet "$UNIT" && break; sleep 1; done
check service-active-after-reboot systemctl is-active "$UNIT"
figure ready_seconds_restore "$(ready_seconds)" s "ExecMainStart to READY at boot, restoring the snapshot into /run ($want articles)"
journalctl -u feedsync -b --no-pager >"$OUT/feedsync-journal.txt"
verdict restored-from-snapshot "$(grep -q 'restored /run/feedsync/feedsync.db from /var/lib/feedsync/feedsync.db' "$OUT/feedsync-journal.txt" && echo 1 || echo 0)" \
    "($(grep -o 'restored /run.*' "$OUT/feedsync-journal.txt" | head -1))"
journalctl -b -1 -u feedsync --no-pager >"$OUT/previous-boot-journal.txt" 2>&1 || true
if grep -q 'final snapshot' "$OUT/previous-boot-journal.txt"; then
    verdict shutdown-wrote-snapshot 1 "(previous boot: $(grep -o 'final snapshot: .*' "$OUT/previous-boot-journal.txt" | tail -1))"
fi
n=$(articles)
verdict live-db-restored "$([ "$n" = "$want" ] && echo 1 || echo 0)" "($n articles in the live database after the reboot, $want before)"
feedsync status >"$OUT/status.txt" 2>&1
cat "$OUT/status.txt"
storage_figures "after the reboot (restored from the card)" restored

# ---------------------------------------------------------------- the "SD card"
# Only the root filesystem is on vda; the job's files go through 9p. The daemon polls
# every feed once a minute here (the test config's min_interval; 10 min by default), the
# world unchanged: every poll is a conditional GET answered 304.
window=$(cat "$FILES/sd-window")
journal_before=$(journalctl --disk-usage 2>/dev/null | grep -oE '[0-9.]+[KMG]?B?' | head -1)
sync
sleep 5
w0=$(vda_written)
c0=$(cg_written)
cpu0=$(cg_cpu)
since_mark=$(date '+%Y-%m-%d %H:%M:%S')
mark sd-window-start  # the server counts the feed requests between the marks (check.py)
log "counting the card's writes for ${window}s"
sleep "$window"
mark sd-window-end
w1=$(vda_written)
c1=$(cg_written)
cpu1=$(cg_cpu)
figure sd_window_seconds "$window" s "window of steady polling (world unchanged, feeds answer 304; the feed requests in it: check.py, server/sd_window_feed_requests)"
figure sd_bytes_window "$((w1 - w0))" B "bytes written to vda in the window, whole system (/sys/block/vda/stat), journald included"
figure sd_bytes_window_feedsync "$([ "$c0" = NA ] && echo NA || echo $((c1 - c0)))" B "bytes the feedsync service wrote to block devices in the window (cgroup io.stat)"
figure sd_bytes_per_hour_idle "$(((w1 - w0) * 3600 / window))" B "vda bytes scaled from the window to an hour"
figure idle_cpu_seconds_window "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", b - a }')" s "service CPU in the window (every feed polled once a minute, all 304)"
figure rss_idle_after_polling_kb "$(rss_kb "$(main_pid)")" kB "VmRSS of the daemon after the window"
figure rss_idle_service_kb "$(cg_rss_kb)" kB "VmRSS summed over every process of the service after the window ($(cg_nprocs) processes)"
ps -o pid,ppid,rss,etime,args -p "$(paste -sd, "$CG/cgroup.procs")" >"$OUT/service-processes.txt" 2>&1
cat "$OUT/service-processes.txt"
log "journal disk usage: $journal_before -> $(journalctl --disk-usage 2>/dev/null)"
journalctl -u feedsync --since "$since_mark" --no-pager | tail -20
date +%s >"$OUT/shutdown-at"
finish
