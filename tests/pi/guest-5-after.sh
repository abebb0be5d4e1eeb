#!/bin/bash
# Phase 5 (boot after the power cut): the snapshot passes integrity_check, the service
# starts, after one poll the news set is complete (item 4). Then item 5: install.sh again
# upgrades in place keeping data and config; --uninstall leaves no unit; --cron works
# with the service gone (a new wave fetched by a cron run).
set -u
# shellcheck source=/dev/null
. /pijob/files/src/tests/pi/guest-lib.sh
log "phase 5: after the power cut"
want=$(expected 3)

# ---------------------------------------------------------------- 4. after the cut
ls -la /var/lib/feedsync/ >"$OUT/state-dir.txt" 2>&1
cat "$OUT/state-dir.txt"
check snapshot-integrity-after-cut integrity /var/lib/feedsync/feedsync.db
aside=$(find /var/lib/feedsync -name 'feedsync.db.corrupt-*' | wc -l)
verdict no-snapshot-set-aside "$([ "$aside" = 0 ] && echo 1 || echo 0)" "($aside damaged snapshots set aside)"
for _ in $(seq 120); do systemctl is-active --quiet "$UNIT" && break; sleep 1; done
check service-active-after-cut systemctl is-active "$UNIT"
figure ready_seconds_after_cut "$(ready_seconds)" s "ExecMainStart to READY at the boot after the power cut (restore)"
journalctl -u feedsync -b --no-pager >"$OUT/feedsync-journal-boot.txt"
restored=$(articles)
figure articles_restored_after_cut "$restored" - "articles on the card after the cut (what feedsync sees at the restart), of $want published before it"
t0=$(now)
check news-complete-after-cut wait_articles "$want" 900
figure recovery_seconds "$(since "$t0")" s "from the service up to all $want articles back (re-polled from the feeds)"
journalctl -u feedsync -b --no-pager | grep -E 'polled|snapshot|restored' | head -20

# ---------------------------------------------------------------- 5. upgrade in place
rm -rf "$SRC"
cp -a "$FILES/src" "$SRC"
cd "$SRC" || exit 1
config_sum=$(sha256sum /etc/feedsync/feedsync.toml)
t0=$(now)
./install.sh >"$OUT/upgrade.log" 2>&1
rc=$?
figure upgrade_seconds "$(since "$t0")" s "./install.sh run again on the installed Pi (upgrade in place)"
verdict upgrade-install "$([ "$rc" = 0 ] && echo 1 || echo 0)" "(exit $rc; upgrade.log)"
verdict upgrade-keeps-config "$([ "$(sha256sum /etc/feedsync/feedsync.toml)" = "$config_sum" ] && grep -q 'kept your config' "$OUT/upgrade.log" && echo 1 || echo 0)" \
    "($(grep -o 'kept your config.*' "$OUT/upgrade.log"))"
check upgrade-service-active systemctl is-active "$UNIT"
n=$(articles)
verdict upgrade-keeps-data "$([ "$n" = "$want" ] && echo 1 || echo 0)" "($n articles after the upgrade, $want before)"

# ---------------------------------------------------------------- uninstall
./install.sh --uninstall >"$OUT/uninstall.log" 2>&1
rc=$?
verdict uninstall "$([ "$rc" = 0 ] && echo 1 || echo 0)" "(exit $rc)"
units=$(systemctl list-unit-files 'feedsync*' --no-legend 2>/dev/null | wc -l)
verdict uninstall-no-unit "$([ ! -e /etc/systemd/system/feedsync.service ] && [ "$units" = 0 ] && ! systemctl is-active --quiet "$UNIT" && echo 1 || echo 0)" \
    "(unit file $([ -e /etc/systemd/system/feedsync.service ] && echo present || echo gone), $units unit files named feedsync*, service $(systemctl is-active "$UNIT"))"
verdict uninstall-keeps-config-data "$([ -e /etc/feedsync/feedsync.toml ] && [ -s /var/lib/feedsync/feedsync.db ] && [ ! -e /opt/feedsync ] && [ ! -e /usr/local/bin/feedsync ] && echo 1 || echo 0)" \
    "(config and snapshot kept, venv and command gone)"
integrity /var/lib/feedsync/feedsync.db

# ---------------------------------------------------------------- cron mode
t0=$(now)
./install.sh --cron >"$OUT/cron-install.log" 2>&1
rc=$?
figure cron_install_seconds "$(since "$t0")" s "./install.sh --cron after --uninstall (apt cron, venv, pip from the wheel cache)"
verdict cron-install "$([ "$rc" = 0 ] && echo 1 || echo 0)" "(exit $rc; cron-install.log)"
verdict cron-no-service "$([ -e /etc/cron.d/feedsync ] && [ ! -e /etc/systemd/system/feedsync.service ] && ! systemctl is-enabled --quiet "$UNIT" 2>/dev/null && echo 1 || echo 0)" \
    "(/etc/cron.d/feedsync $([ -e /etc/cron.d/feedsync ] && echo present || echo missing), service $(systemctl is-enabled "$UNIT" 2>&1 | head -1))"
check cron-daemon-active systemctl is-active cron
cat /etc/cron.d/feedsync
snap0=$(stat -c %Y /var/lib/feedsync/feedsync.db)
log "$(wave 4)"
t0=$(now)
check cron-fetches-new-wave wait_articles "$(expected 4)" 900
figure cron_wave_seconds "$(since "$t0")" s "new wave published to its articles in news, by cron runs (every 5 min)"
sleep 20  # the run that extracted them ends with a snapshot
snap1=$(stat -c %Y /var/lib/feedsync/feedsync.db)
verdict cron-run-snapshots "$([ "$snap1" -gt "$snap0" ] && echo 1 || echo 0)" "(snapshot mtime $snap0 -> $snap1)"
journalctl -u cron --no-pager | grep -i feedsync | tail -5 >"$OUT/cron-journal.txt"
cat "$OUT/cron-journal.txt"
verdict cron-ran-feedsync "$([ -s "$OUT/cron-journal.txt" ] && echo 1 || echo 0)" "($(wc -l <"$OUT/cron-journal.txt") cron lines naming feedsync)"
feedsync status >"$OUT/status.txt" 2>&1
cat "$OUT/status.txt"
check final-snapshot-integrity integrity /var/lib/feedsync/feedsync.db
finish
