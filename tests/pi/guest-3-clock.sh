#!/bin/bash
# Phase 3 (issue 42): the guest boots with its clock CLOCK_BEHIND_DAYS behind (run.sh
# starts the emulated board's RTC there: a Pi without an RTC whose fake-hwclock file is
# old, or with a flat RTC battery), then "NTP" corrects it. While it is behind: the
# snapshot is restored all the same, status says the clock cannot be believed, a new wave
# is fetched whole with the feeds' dates kept as given, retention waits. At the
# correction (the host's time set with settimeofday and the kernel's NTP state marked
# synchronized, what an NTP daemon does): polling goes on at once (the server's log says
# when, check.py), the articles fetched under the wrong clock are settled, none pruned.
set -u
# shellcheck source=/dev/null
. /pijob/files/src/tests/pi/guest-lib.sh
log "phase 3: the clock behind at boot, then corrected"
want1=$(expected 1)
want2=$(expected 2)

host=$(world_time)
guest=$(date +%s)
behind_days=$(((${host%.*} - guest) / 86400))
figure clock_behind_at_boot_days "$behind_days" d "the guest's clock at the job's start against the host's (GET /control/time)"
verdict booted-with-clock-behind "$([ "$behind_days" -ge 100 ] && echo 1 || echo 0)" \
    "(the guest read $(date -u '+%F %T') UTC, the host $(date -u -d "@${host%.*}" '+%F %T'))"

for _ in $(seq 120); do systemctl is-active --quiet "$UNIT" && break; sleep 1; done
check service-active-clock-behind systemctl is-active "$UNIT"
n=$(articles)
verdict restored-with-clock-behind "$([ "$n" = "$want1" ] && echo 1 || echo 0)" "($n articles in the live database, $want1 before)"
feedsync status >"$OUT/status-behind.txt" 2>&1
cat "$OUT/status-behind.txt"
state=$(status_field 's["clock"]["state"] + " " + s["clock"]["retention"]')
verdict status-says-clock-not-believed "$([ "$state" = "wrong waits" ] && echo 1 || echo 0)" \
    "(status --json clock: $state; $(grep -i 'clock' "$OUT/status-behind.txt" | head -2 | paste -sd' ' -))"

# ---------------------------------------------------------------- a wave while behind
log "$(wave 2)"
wave_at=$(world_time)
t0=$(now)
check wave-fetched-with-clock-behind wait_articles "$want2" 900
figure wave_seconds_clock_behind "$(since "$t0")" s "new wave published to its $((want2 - want1)) articles in news, the clock ${behind_days} days behind"
feedsync news --json --limit 200 >"$OUT/news-behind.json" 2>&1
python3 - "$OUT/news-behind.json" "$FILES/world/world.json" "${wave_at%.*}" >"$OUT/dates-behind.txt" <<'EOF'
import json, sys
from datetime import datetime
news = json.load(open(sys.argv[1]))
slugs = json.load(open(sys.argv[2]))["waves"]["2"]
wave_at = int(sys.argv[3])
found = [e for e in news if any(f"/{s}.html" in e["url"] for s in slugs)]
off = [e["url"] for e in found
       if not e["published"] or abs(datetime.fromisoformat(e["published"]).timestamp() - wave_at) > 3600]
print(f"{len(found)} of {len(slugs)} wave-2 entries found, {len(off)} not dated by the feed: {off}")
EOF
cat "$OUT/dates-behind.txt"
verdict feed-dates-kept-with-clock-behind "$(grep -q "^$((want2 - want1)) of $((want2 - want1)) wave-2 entries found, 0 not" "$OUT/dates-behind.txt" && echo 1 || echo 0)" \
    "($(cat "$OUT/dates-behind.txt"); the feed's dates within an hour of the host's time at publishing)"

# retention's first run (5 min after the start) must have waited: its own line, not the
# pass's warning that also says "retention waits"
for _ in $(seq 90); do journalctl -u feedsync -b --no-pager | grep -q 'retention waits: the clock is' && break; sleep 5; done
verdict retention-waits-with-clock-behind "$(journalctl -u feedsync -b --no-pager | grep -q 'retention waits: the clock is wrong' && echo 1 || echo 0)" \
    "($(journalctl -u feedsync -b --no-pager | grep -o 'retention waits.*' | head -1))"

# ---------------------------------------------------------------- the correction
since_mark=$(date '+%Y-%m-%d %H:%M:%S')
mark clock-corrected
host=$(world_time)
date -u -s "@$host" >/dev/null
python3 - <<'EOF'
# what an NTP daemon does once it has set the clock: the kernel's NTP state says
# synchronized (STA_UNSYNC cleared, a small maximum error), read by timedatectl and
# feedsync (feedsync/clock.py)
import ctypes
class Timex(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
                ("rest", ctypes.c_byte * 256)]
ADJ_MAXERROR, ADJ_ESTERROR, ADJ_STATUS = 0x0004, 0x0008, 0x0010
t = Timex(modes=ADJ_MAXERROR | ADJ_ESTERROR | ADJ_STATUS, maxerror=50_000, esterror=1_000, status=0)
libc = ctypes.CDLL(None, use_errno=True)
print("adjtimex:", libc.adjtimex(ctypes.byref(t)), "errno", ctypes.get_errno())
EOF
log "clock corrected: $(date -u '+%F %T') UTC; timedatectl: $(timedatectl show -p NTPSynchronized --value 2>&1)"
corrected_at=$(now)

# retention runs at once (its next run, or the next save's, is past): it first gives the
# articles fetched under the wrong clock the corrected clock's time (a settle logs
# nothing when the save's retention does it: the fetch times say it)
fetched_back() {
    feedsync export >"$OUT/export-after.jsonl" 2>&1
    python3 - "$OUT/export-after.jsonl" "${host%.*}" <<'EOF'
import json, sys
from datetime import datetime
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
corrected = int(sys.argv[2])
back = [r["url"] for r in rows if datetime.fromisoformat(r["fetched_at"]).timestamp() < corrected - 86400]
print(f"{len(rows)} articles, {len(back)} with a fetch time more than a day before the correction: {back}")
EOF
}
for _ in $(seq 60); do
    fetched_back >"$OUT/fetched-after.txt"
    grep -q "^$want2 articles, 0 with" "$OUT/fetched-after.txt" && break
    sleep 5
done
figure settled_after_correction_seconds "$(since "$corrected_at")" s "from the correction to no article left with a fetch time of the wrong clock (feedsync export)"
cat "$OUT/fetched-after.txt"
verdict no-fetch-time-left-behind "$(grep -q "^$want2 articles, 0 with" "$OUT/fetched-after.txt" && echo 1 || echo 0)" "($(cat "$OUT/fetched-after.txt"))"
journalctl -u feedsync --since "$since_mark" --no-pager >"$OUT/journal-after-correction.txt"
grep -E 'clock|retention|snapshot' "$OUT/journal-after-correction.txt" | tail -20
verdict daemon-saw-the-jump "$(grep -q 'the clock jumped ahead by' "$OUT/journal-after-correction.txt" && echo 1 || echo 0)" \
    "($(grep -o 'the clock jumped ahead by.*' "$OUT/journal-after-correction.txt" | head -1))"
verdict clock-believed-after-correction "$(grep -q 'the clock can be believed again' "$OUT/journal-after-correction.txt" && echo 1 || echo 0)" \
    "($(grep -o 'the clock can be believed again.*' "$OUT/journal-after-correction.txt" | head -1))"
verdict retention-prunes-nothing "$(! grep -q 'retention: pruned' "$OUT/journal-after-correction.txt" && echo 1 || echo 0)" \
    "($(grep -c 'retention: pruned' "$OUT/journal-after-correction.txt") prune lines after the correction)"
n=$(articles)
verdict nothing-pruned-after-correction "$([ "$n" = "$want2" ] && echo 1 || echo 0)" "($n articles after the correction and retention, $want2 expected)"
feedsync status >"$OUT/status-after.txt" 2>&1
state=$(status_field 's["clock"]["state"] + " " + s["clock"]["retention"]')
verdict status-says-clock-synchronized "$([ "$state" = "synchronized runs" ] && echo 1 || echo 0)" "(status --json clock: $state)"
# polls go on at once: check.py reads the server's log from the mark on; give it a minute
sleep 90
feedsync save --force >"$OUT/snapshot.txt" 2>&1
cat "$OUT/snapshot.txt"
check snapshot-integrity-after-correction integrity /var/lib/feedsync/feedsync.db
finish
