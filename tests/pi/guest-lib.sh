# shellcheck shell=bash
# tests/pi/guest-lib.sh: helpers for the guest phases (sourced inside the emulated Pi).
# Results go to /pijob/out/results.txt, one line each, which run.sh collects and prints:
#   CHECK <PASS|FAIL> <name> <detail>
#   FIGURE <name> <value> <unit> <how it was measured>
OUT=/pijob/out
FILES=/pijob/files
RES=$OUT/results.txt
# shellcheck disable=SC2034  # used by the phase scripts
SRC=/root/feedsync
UNIT=feedsync.service
CG=/sys/fs/cgroup/system.slice/feedsync.service
WORLD=$(cat "$FILES/world-base")
mkdir -p "$OUT"

log() { printf '[%s %6ss] %s\n' "$(date -u +%H:%M:%S)" "$(cut -d' ' -f1 /proc/uptime)" "$*"; }

# check NAME COMMAND...: PASS when the command succeeds; its output goes to the job log.
check() {
    local name=$1 rc
    shift
    "$@"
    rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "CHECK PASS $name" >>"$RES"
    else
        echo "CHECK FAIL $name (exit $rc: $*)" >>"$RES"
    fi
    log "check $name: $([ "$rc" -eq 0 ] && echo PASS || echo FAIL)"
    return 0
}

# verdict NAME TRUTH DETAIL: a check already decided (TRUTH is 0 or 1).
verdict() {
    local name=$1 ok=$2 detail=$3
    if [ "$ok" = 1 ]; then echo "CHECK PASS $name $detail" >>"$RES"; else echo "CHECK FAIL $name $detail" >>"$RES"; fi
    log "check $name: $([ "$ok" = 1 ] && echo PASS || echo FAIL) $detail"
}

figure() {  # NAME VALUE UNIT HOW...
    local name=$1 value=$2 unit=$3
    shift 3
    echo "FIGURE $name $value $unit $*" >>"$RES"
    log "figure $name = $value $unit"
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# feedsync status --json, one field (python expression on the object `s`)
status_field() {
    feedsync status --json 2>/dev/null | python3 -c "import json, sys; s = json.load(sys.stdin); print($1)"
}
articles() { status_field 's["articles"]["total"]' || echo -1; }

# storage_figures WHEN: /run, the live database against its RAM budget, the card database
storage_figures() {
    local ram live budget card
    ram=$(status_field 's["storage"]["ram_disk_size"]')
    live=$(status_field 's["storage"]["live_bytes"]')
    budget=$(status_field 's["storage"]["ram_budget"]')
    card=$(status_field 's["storage"]["snapshot_bytes"]')
    figure run_tmpfs_bytes "$ram" B "size of the guest's /run (a tmpfs, 10% of RAM: initramfs-tools' RUNSIZE) $1"
    figure live_db_bytes "$live" B "the live database in /run/feedsync, WAL included (feedsync status --json) $1"
    figure ram_budget_bytes "$budget" B "the RAM budget feedsync used: half of /run (no [storage] ram_budget set) $1"
    figure card_db_bytes "$card" B "the card database /var/lib/feedsync/feedsync.db $1"
    verdict "live-within-budget-$2" "$([ "$live" -le "$budget" ] && echo 1 || echo 0)" "($live of $budget bytes $1)"
}
queue_new() { status_field 's["queue"]["new"] + s["queue"]["failed_waiting"]' || echo -1; }

expected() {  # articles once wave $1 is out
    python3 -c "import json, sys; print(json.load(open('$FILES/world/world.json'))['expected'][sys.argv[1]])" "$1"
}

world_time() { python3 -c "import urllib.request, sys; print(urllib.request.urlopen(sys.argv[1]).read().decode().strip())" "$WORLD/control/time"; }
mark() { python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1]).read()" "$WORLD/control/mark/$1"; }

wave() { python3 -c "import urllib.request, sys; print(urllib.request.urlopen(sys.argv[1]).read().decode().strip())" "$WORLD/control/wave/$1"; }

# wait_articles N SECONDS: until N articles and an empty queue; 0 if reached
wait_articles() {
    local want=$1 limit=$2 t0 n q
    t0=$(date +%s)
    while [ $(($(date +%s) - t0)) -lt "$limit" ]; do
        n=$(articles)
        q=$(queue_new)
        if [ "$n" = "$want" ] && [ "$q" = 0 ]; then return 0; fi
        sleep 5
    done
    log "wait_articles: wanted $want, have $(articles) (queue $(queue_new)) after ${limit}s"
    return 1
}

vda_written() { awk '{ print $7 * 512 }' /sys/block/vda/stat; }  # bytes written to the "SD card"
cg_cpu() { awk '/^usage_usec/ { printf "%.3f", $2 / 1e6 }' "$CG/cpu.stat" 2>/dev/null || echo 0; }
cg_written() {  # bytes the service wrote to block devices (io.stat), if the io controller is on
    if [ -r "$CG/io.stat" ]; then
        awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub("wbytes=", "", $i); s += $i } } END { print s + 0 }' "$CG/io.stat"
    else
        echo NA
    fi
}
main_pid() { systemctl show -p MainPID --value "$UNIT"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
cg_rss_kb() {  # RSS of every process of the service (daemon + extraction workers)
    local pid total=0
    while read -r pid; do total=$((total + $(rss_kb "$pid"))); done <"$CG/cgroup.procs"
    echo "$total"
}
cg_pss_kb() {  # PSS of every process of the service (shared pages split among them)
    local pid total=0 pss
    while read -r pid; do
        pss=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null)
        total=$((total + ${pss:-0}))
    done <"$CG/cgroup.procs"
    echo "$total"
}
cg_nprocs() { wc -l <"$CG/cgroup.procs"; }

# seconds from the start of the main process to READY (systemd's own timestamps)
ready_seconds() {
    local start active
    start=$(systemctl show -p ExecMainStartTimestampMonotonic --value "$UNIT")
    active=$(systemctl show -p ActiveEnterTimestampMonotonic --value "$UNIT")
    awk -v a="$start" -v b="$active" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'
}

integrity() {  # FILE: SQLite's integrity_check, read-only
    python3 - "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
result = db.execute("PRAGMA integrity_check").fetchall()
count = db.execute("SELECT count(*) FROM news").fetchone()[0]
print("integrity_check:", result, "news rows:", count)
sys.exit(0 if result == [("ok",)] else 1)
EOF
}

# The test config: the installed one with short intervals, so that a proof takes minutes.
write_test_config() {
    local path=/etc/feedsync/feedsync.toml
    [ -e /etc/feedsync/feedsync.toml.installed ] || cp -p "$path" /etc/feedsync/feedsync.toml.installed
    {
        cat <<EOF
# feedsync: the emulated-Pi proof (tests/pi). The installed config is feedsync.toml.installed.
[storage]
db = "/run/feedsync/feedsync.db"
card = "/var/lib/feedsync/feedsync.db"
save_interval = "3m"

[poll]
interval = "1m"
min_interval = "1m"
max_interval = "10m"

[daemon]
tick = "15s"
EOF
        python3 -c "import json; [print(f'\n[[feeds]]\nurl = \"{u}\"') for u in json.load(open('$FILES/world/world.json'))['feeds']]"
    } >"$path"
}

finish() {
    log "results:"
    cat "$RES"
    ! grep -q '^CHECK FAIL' "$RES"
}
