#!/bin/bash
# Phase 4: a new wave of articles appears on the feeds; once the daemon has staged it this
# job tells the host "armed", and run.sh pulls the plug (kill -9 of qemu) at a random
# instant within CUT_WITHIN seconds: while it fetches, extracts, or writes a snapshot. Until then the
# job logs what the daemon has, every few seconds, through 9p (state.log).
set -u
# shellcheck source=/dev/null
. /pijob/files/src/tests/pi/guest-lib.sh
log "phase 4: power cut"
for _ in $(seq 120); do systemctl is-active --quiet "$UNIT" && break; sleep 1; done
check service-active systemctl is-active "$UNIT"
verdict live-db-restored-again "$([ "$(articles)" = "$(expected 2)" ] && echo 1 || echo 0)" "($(articles) articles)"
snap_before=$(stat -c %Y /var/lib/feedsync/feedsync.db)
echo "$snap_before" >"$OUT/snapshot-mtime-before"
log "$(wave 3)"
# Armed once the daemon has seen the new wave (its next poll of a feed can be minutes
# away): the cut then falls while pages are fetched and extracted, or around the next
# snapshot, not at an instant where nothing is in flight.
t0=$(date +%s)
while [ $(($(date +%s) - t0)) -lt 900 ]; do
    [ "$(queue_new)" -gt 0 ] || [ "$(articles)" -gt "$(expected 2)" ] && break
    sleep 2
done
log "the daemon has the new wave: articles=$(articles) queue=$(queue_new)"
python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1]).read()" "$WORLD/control/mark/armed"
log "armed: the plug will be pulled at any moment"
while true; do
    echo "$(date +%s.%N | cut -c1-14) articles=$(articles) queue=$(queue_new)" \
        "snapshot_mtime=$(stat -c %Y /var/lib/feedsync/feedsync.db) procs=$(cg_nprocs)" >>"$OUT/state.log"
    sleep 3
done
