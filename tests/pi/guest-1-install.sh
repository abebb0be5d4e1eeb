#!/bin/bash
# Phase 1 (fresh image): install.sh as a Pi owner runs it; the service active, verified,
# READY; the world's feeds land in news while it runs (proof items 1 and 2); the figures
# of a first pass (RSS, CPU, snapshot); then a stop that writes the snapshot (item 3,
# first half). The job ends with a clean power-off, which stops the service once more.
set -u
# shellcheck source=/dev/null
. /pijob/files/src/tests/pi/guest-lib.sh
log "phase 1: install on a fresh image ($(uname -m), $(python3 -V), $(nproc) CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB)"

# ---------------------------------------------------------------- 1. install.sh
t0=$(now)
cp -a "$FILES/src" "$SRC"
cd "$SRC" || exit 1
./install.sh >"$OUT/install.log" 2>&1
rc=$?
figure install_seconds "$(since "$t0")" s "wall time of ./install.sh on the fresh image (apt, venv, pip, unit, start)"
verdict install "$([ "$rc" = 0 ] && echo 1 || echo 0)" "(exit $rc; log: install.log)"
built=$(grep -oE 'Building wheel for [A-Za-z0-9_.-]+' "$OUT/install.log" | awk '{print $4}' | sort -u | paste -sd, -)
figure built_from_source "${built:-none}" - "packages pip compiled in the guest (no armv7 wheel)"
/opt/feedsync/venv/bin/python -m pip list >"$OUT/pip-list.txt" 2>&1
/opt/feedsync/venv/bin/python - >"$OUT/python-packages.txt" 2>&1 <<'EOF'
import importlib, importlib.metadata as m
for name, module in [("lxml", "lxml"), ("regex", "regex"), ("systemd-python", "systemd"),
                     ("trafilatura", "trafilatura"), ("dateparser", "dateparser"), ("htmldate", "htmldate")]:
    mod = importlib.import_module(module)
    where = "Debian (system site-packages)" if "/usr/lib/python3/dist-packages" in mod.__file__ else "venv (PyPI)"
    try:
        version = m.version(name)
    except m.PackageNotFoundError:
        version = "?"
    print(f"{name} {version}: {where}")
print("dateparser requires:", [r for r in m.requires("dateparser") if r.startswith("regex")])
print("htmldate requires:", [r for r in m.requires("htmldate") if r.startswith("dateparser")])
print("trafilatura requires:", [r for r in m.requires("trafilatura") if r.startswith(("htmldate", "lxml"))])
EOF
cat "$OUT/python-packages.txt"
dpkg-query -W python3-regex python3-lxml python3-systemd >>"$OUT/python-packages.txt" 2>&1
apt-cache policy python3-regex python3-lxml 2>/dev/null | grep -E '^[a-z]|Candidate' >>"$OUT/python-packages.txt"

check service-active systemctl is-active "$UNIT"
systemctl status "$UNIT" --no-pager >"$OUT/status-1.txt" 2>&1
systemd-analyze verify /etc/systemd/system/feedsync.service >"$OUT/verify.txt" 2>&1
rc=$?
verdict systemd-analyze-verify "$([ "$rc" = 0 ] && ! grep -qi feedsync "$OUT/verify.txt" && echo 1 || echo 0)" \
    "(exit $rc; $(grep -ci feedsync "$OUT/verify.txt") lines about feedsync, $(wc -l <"$OUT/verify.txt") in all: verify.txt)"
systemd-analyze security feedsync.service --no-pager >"$OUT/security.txt" 2>&1
figure security_exposure "$(grep -oE 'exposure level.* [0-9.]+' "$OUT/security.txt" | grep -oE '[0-9.]+$')" - "systemd-analyze security feedsync.service in the guest"
verdict journal-ready "$(journalctl -u feedsync --no-pager | grep -q 'Started feedsync.service' && journalctl -u feedsync --no-pager | grep -q 'daemon started' && echo 1 || echo 0)" \
    "(Type=notify: systemd logs Started only on READY=1)"
figure ready_seconds_empty "$(ready_seconds)" s "ExecMainStart to READY (systemd timestamps), first start, empty database"

# ---------------------------------------------------------------- 2. the world's feeds
write_test_config
systemctl restart "$UNIT"
figure ready_seconds_restart "$(ready_seconds)" s "ExecMainStart to READY after systemctl restart (live database on /run kept)"
(
    # RSS of the daemon and its extraction workers, every second, until told to stop
    while [ ! -e /tmp/stop-sampler ]; do
        echo "$(date +%s) $(cg_rss_kb) $(rss_kb "$(main_pid)") $(cg_nprocs) $(cg_pss_kb)"
        sleep 1
    done
) >"$OUT/rss-samples.txt" 2>/dev/null &
sampler=$!
cpu0=$(cg_cpu)
t0=$(now)
want=$(expected 1)
check first-pass-complete wait_articles "$want" 1200
figure first_pass_seconds "$(since "$t0")" s "restart with 6 feeds to $want articles extracted, queue empty"
cpu1=$(cg_cpu)
figure first_pass_cpu_seconds "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", b - a }')" s \
    "service cgroup cpu.stat usage over the first pass: 6 feeds parsed, $want pages fetched and extracted, workers started"
# idle: the extraction workers exit when the queue is empty
for _ in $(seq 120); do [ "$(cg_nprocs)" -le 1 ] && break; sleep 1; done
sleep 5
touch /tmp/stop-sampler
wait "$sampler"
figure rss_idle_kb "$(rss_kb "$(main_pid)")" kB "VmRSS of the daemon, queue empty and workers gone ($(cg_nprocs) process in the cgroup)"
figure rss_peak_kb "$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$OUT/rss-samples.txt")" kB \
    "largest sum of VmRSS over the daemon and its workers, sampled every second during the first pass"
figure rss_peak_daemon_kb "$(awk '/^VmHWM/ { print $2 }' "/proc/$(main_pid)/status")" kB "VmHWM of the daemon process itself"
figure pss_peak_kb "$(awk 'BEGIN { m = 0 } $5 > m { m = $5 } END { print m }' "$OUT/rss-samples.txt")" kB \
    "largest sum of PSS (smaps_rollup) over the daemon and its workers, sampled every second during the first pass"
figure mem_total_kb "$(awk '/^MemTotal/ { print $2 }' /proc/meminfo)" kB "the guest's MemTotal (a 1 GB board)"
figure extract_workers_auto "$(/opt/feedsync/venv/bin/python -c 'from feedsync.board import Board, auto_workers; print(auto_workers(Board.this_one()))' 2>&1 | tail -1)" - \
    "extraction workers [extract] workers = \"auto\" (the default) gives this board"
figure peak_processes "$(awk 'BEGIN { m = 0 } $4 > m { m = $4 } END { print m }' "$OUT/rss-samples.txt")" - "most processes in the service cgroup at once"

feedsync status >"$OUT/status.txt" 2>&1
storage_figures "after the first pass ($want articles)" first-pass
feedsync feeds >"$OUT/feeds.txt" 2>&1
feedsync news >"$OUT/news.txt" 2>&1
cat "$OUT/status.txt"
verdict status-shows-articles "$(grep -qE "^articles +$want " "$OUT/status.txt" && echo 1 || echo 0)" "(feedsync status: $(grep '^articles' "$OUT/status.txt"))"
healthy=$(status_field 's["feeds"]["healthy"]')
verdict feeds-healthy "$([ "$healthy" = 6 ] && echo 1 || echo 0)" "($healthy of 6 feeds ok)"
shown=$(grep -c '(story [0-9]*)' "$OUT/news.txt")
verdict news-shows-articles "$([ "$shown" -ge 10 ] && echo 1 || echo 0)" "(feedsync news lists $shown articles of the world)"
feedsync news --json >"$OUT/news.json" 2>&1

# CPU per feed parse and per extraction: feedsync's own functions on the same documents
/opt/feedsync/venv/bin/python "$SRC/tests/pi/cpubench.py" "$FILES/world/files" >"$OUT/cpubench.json" 2>"$OUT/cpubench.err"
cat "$OUT/cpubench.json"

# ---------------------------------------------------------------- snapshot
w0=$(vda_written)
feedsync save --force >"$OUT/snapshot.txt" 2>&1
sync
w1=$(vda_written)
cat "$OUT/snapshot.txt"
figure snapshot_seconds "$(grep -oE '[0-9.]+s\)' "$OUT/snapshot.txt" | tr -d 's)')" s "feedsync save --force, as it reports ($want articles)"
figure snapshot_bytes "$(stat -c %s /var/lib/feedsync/feedsync.db)" B "size of /var/lib/feedsync/feedsync.db with $want articles"
figure snapshot_card_bytes "$((w1 - w0))" B "bytes written to vda across feedsync save --force + sync (/sys/block/vda/stat): a save when nothing changed"

# ---------------------------------------------------------------- 3. stop writes the snapshot
before=$(stat -c %Y /var/lib/feedsync/feedsync.db)
sleep 2
# a change to save: a feed added by hand (it carries articles the others have: no new fetch)
check add-feed-by-hand feedsync add "$(python3 -c "import json; print(json.load(open('$FILES/world/world.json'))['extra_feed'])")"
t0=$(now)
systemctl stop "$UNIT"
figure stop_seconds "$(since "$t0")" s "systemctl stop (finish work, final snapshot, exit)"
after=$(stat -c %Y /var/lib/feedsync/feedsync.db)
verdict stop-writes-snapshot "$([ "$after" -gt "$before" ] && journalctl -u feedsync --no-pager | grep -q 'final snapshot: written' && echo 1 || echo 0)" \
    "(snapshot mtime $before -> $after; journal: $(journalctl -u feedsync --no-pager | grep -o 'final snapshot: .*' | tail -1))"
check snapshot-integrity integrity /var/lib/feedsync/feedsync.db
# started again: the power-off that ends this job is the clean reboot of item 3
systemctl start "$UNIT"
check active-before-reboot systemctl is-active "$UNIT"
status_field 's["articles"]["total"]' >"$OUT/articles-before-reboot"
date +%s >"$OUT/shutdown-at"
finish
