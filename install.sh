#!/usr/bin/env bash
# install.sh: install feedsync from this source tree (Debian / Raspberry Pi OS).
#
#   sudo ./install.sh               the system service: user `feedsync`, a venv in
#                                   /opt/feedsync, /etc/feedsync/feedsync.toml (never
#                                   overwritten), the systemd unit, enabled and started;
#                                   without systemd, a cron job instead
#   sudo ./install.sh --cron        system-wide, run from /etc/cron.d instead of the service
#   sudo ./install.sh --systemd     the unit even where systemd is not running (an image)
#   ./install.sh --user             for you, no root: a venv in ~/.local/share/feedsync, the
#                                   command in ~/.local/bin, ~/.config/feedsync/feedsync.toml,
#                                   a user unit (started when a user systemd runs)
#   ./install.sh --user --cron      the same, scheduled by a line in your crontab
#   ... --run                       then one pass: `feedsync run`, or `feedsync demo`
#                                   while no feeds are configured
#   ... --postgresql                also the PostgreSQL driver (pip extra 'postgresql'), for
#                                   [storage] url = "postgresql://..." (README: Beyond one Pi)
#   ... --no-start                  install, but do not enable or start anything
#   ... --uninstall [--purge]       remove the service, cron job, venv and command; keep
#                                   the config and the data unless --purge (first, what
#                                   the live database in RAM holds is saved to the card)
#   ... --root DIR                  (tests) install into DIR; systemctl, useradd, chown,
#                                   crontab and apt-get are skipped and reported
#
# Running it again upgrades in place and keeps the config and the data. Each package at the
# version CI tested (.ci/requirements.lock, README "The lock"), not the newest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=system
schedule=auto
run_after=0
start=1
uninstall=0
purge=0
root=""
apt_updated=0
lock_suffix=""  # .ci/requirements$lock_suffix.lock

usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$1" >&2; exit "${2:-1}"; }  # $2: the exit code, not said

while [ $# -gt 0 ]; do
    case "$1" in
        --user) mode=user ;;
        --cron) schedule=cron ;;
        --systemd) schedule=systemd ;;
        --run) run_after=1 ;;
        --no-start) start=0 ;;
        --postgresql) lock_suffix="-postgresql" ;;
        --uninstall) uninstall=1 ;;
        --purge) purge=1 ;;
        --root)
            [ $# -ge 2 ] || die "--root needs a directory" 2
            root=$(cd -- "$2" 2>/dev/null && pwd) || die "--root: no such directory: $2" 2
            shift
            ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown option: $1 (see --help)" 2 ;;
    esac
    shift
done
[ "$purge" -eq 0 ] || [ "$uninstall" -eq 1 ] || die "--purge goes with --uninstall" 2

# Commands that change the machine outside the install root: skipped (and said) under --root.
system() {
    if [ -n "$root" ]; then
        say "(--root) skipped: $*"
    else
        "$@"
    fi
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "needs root for: $*"
    fi
}

# A partial index update (a mirror sync in progress) is not fatal: what matters is
# whether the packages can be installed.
apt_install() {
    command -v apt-get >/dev/null 2>&1 || { say "no apt-get: install $* yourself"; return 0; }
    local missing=()
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" ||
            missing+=("$package")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    say "installing ${missing[*]} (apt)"
    if [ -n "$root" ]; then
        say "(--root) skipped: apt-get install ${missing[*]}"
        return 0
    fi
    if [ "$apt_updated" -eq 0 ]; then  # once per run: a failing index stays failing
        apt_updated=1
        local attempt
        for attempt in 1 2 3; do
            as_root apt-get update -q && break
            say "apt-get update had errors (attempt $attempt); going on with what is there"
            sleep 5
        done
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

ensure_python() {
    command -v python3 >/dev/null 2>&1 || apt_install python3
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        die "feedsync needs Python 3.11 or newer; python3 is $(python3 -V 2>&1)"
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || apt_install python3-venv
}

# Exactly the lock: the versions CI tested, each file checked against PyPI's hash
# (README, "The lock"), not the newest that pyproject.toml allows; then feedsync itself,
# without touching them (--no-deps). PIP_CONFIG_FILE=/dev/null for the locked install:
# Raspberry Pi OS's /etc/pip.conf adds piwheels.org as an extra index, whose armv7 wheels
# are built there and match none of the lock's hashes (pip would refuse them, or pick
# by chance between them and PyPI's); the lock names PyPI's files, so PyPI alone is
# asked. A proxy or a certificate set in a pip.conf is not read either: pip's variables
# (https_proxy, PIP_CERT) still are. If a wheel is missing for this machine (regex on
# armv7) and something must be compiled, install the build headers and try once more.
pip_install() {
    local venv=$1
    local lock="$here/.ci/requirements$lock_suffix.lock"
    [ -f "$lock" ] || die "missing $lock: install from a complete copy of the source"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    # psycopg has no binary build for armv7 on PyPI (the lock skips it there): it runs on
    # the system's libpq
    if [ -n "$lock_suffix" ] && [ "$(uname -m)" = armv7l ]; then apt_install libpq5; fi
    locked() {
        PIP_CONFIG_FILE=/dev/null "$venv/bin/python" -m pip install --quiet \
            --index-url https://pypi.org/simple --require-hashes -r "$lock"
    }
    if ! locked; then
        say "a package had to be built from source: installing build headers"
        apt_install build-essential python3-dev libxml2-dev libxslt1-dev pkg-config
        locked
    fi
    "$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$here"
}

write_config() {  # path db snapshot: a commented config, never over an existing one
    local config=$1 db=$2 snapshot=$3
    if [ -e "$config" ]; then
        say "kept your config $config"
        return 0
    fi
    mkdir -p "$(dirname "$config")"
    # 0600 from the start: [storage] url may come to hold a PostgreSQL password
    (umask 077 && : >"$config")
    cat >"$config" <<EOF
# feedsync configuration (every key: README, "Configuration").

[storage]
# The live database sits in RAM (tmpfs) and holds what is recent; the snapshot, on the
# SD card, holds everything, saved every snapshot_interval (what a power cut may lose).
$db
$snapshot
# snapshot_interval = "1h"
# ram_budget = "50MB"   # the most the live database takes in RAM (default: half of it)

[poll]
# lookback = "24h"      # entries this much older than a feed's newest are still staged
# concurrency = 8       # feeds and pages fetched at once
# per_host = 2          # at once to one host, over every process on the database
# interval = "30m"      # first polls; then each feed follows its own publishing rate
# min_interval = "10m"
# max_interval = "24h"

[extract]
# max_attempts = 5      # a failing article page is given up after this many tries
# workers = 2           # extraction processes

[retention]
# news_days = 90        # articles older than this are pruned (0: keep forever)
# tombstone_days = 365  # and remembered this long, so they are never fetched again

[metrics]
# For node_exporter's textfile collector (Prometheus), off unless set:
# textfile = "/var/lib/prometheus/node-exporter/feedsync.prom"

# One [[feeds]] table per feed, or: feedsync add URL
# [[feeds]]
# url = "https://example.com/feed.xml"
EOF
    say "wrote $config"
}

# ------------------------------------------------------------------ the system service

sys_venv="$root/opt/feedsync/venv"
sys_config="$root/etc/feedsync/feedsync.toml"
sys_unit="$root/etc/systemd/system/feedsync.service"
sys_cron="$root/etc/cron.d/feedsync"
sys_wrapper="$root/usr/local/bin/feedsync"

has_systemd() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

install_system() {
    [ -n "$root" ] || [ "$(id -u)" -eq 0 ] || die "the system service needs root: sudo $0 (or: $0 --user)"
    [ "$schedule" != auto ] || { if has_systemd; then schedule=systemd; else schedule=cron; fi; }
    ensure_python
    if [ "$schedule" = systemd ]; then
        apt_install python3-venv python3-systemd
    else
        apt_install python3-venv cron
    fi
    if ! getent passwd feedsync >/dev/null 2>&1; then
        say "creating the system user feedsync"
        system useradd --system --user-group --home-dir /var/lib/feedsync --no-create-home \
            --shell /usr/sbin/nologin --comment "feedsync daemon" feedsync
    fi
    if [ ! -x "$sys_venv/bin/python" ]; then
        say "creating $sys_venv"
        mkdir -p "$(dirname "$sys_venv")"
        # system site packages: Debian's python3-systemd (and python3-lxml, if installed)
        python3 -m venv --system-site-packages "$sys_venv"
    fi
    say "installing feedsync into $sys_venv"
    pip_install "$sys_venv"

    write_config "$sys_config" 'db = "/run/feedsync/feedsync.db"' \
        'snapshot = "/var/lib/feedsync/feedsync.db"'
    # readable by the service (group feedsync), not by every local user: [storage] url
    # may hold a PostgreSQL password; an existing config is tightened the same way
    chmod 0640 "$sys_config"
    system chown root:feedsync "$sys_config"
    mkdir -p "$root/var/lib/feedsync" "$root/run/feedsync"
    chmod 0700 "$root/var/lib/feedsync" "$root/run/feedsync"
    system chown feedsync:feedsync "$root/var/lib/feedsync" "$root/run/feedsync"

    mkdir -p "$(dirname "$sys_wrapper")"
    cat >"$sys_wrapper" <<'EOF'
#!/bin/sh
# feedsync as the service user, with the system config (installed by install.sh).
set -e
feedsync=/opt/feedsync/venv/bin/feedsync
config=/etc/feedsync/feedsync.toml
if [ "$(id -un)" = feedsync ]; then exec "$feedsync" --config "$config" "$@"; fi
if [ "$(id -u)" -eq 0 ]; then exec runuser -u feedsync -- "$feedsync" --config "$config" "$@"; fi
exec sudo -u feedsync "$feedsync" --config "$config" "$@"
EOF
    chmod 0755 "$sys_wrapper"

    if [ "$schedule" = systemd ]; then
        rm -f "$sys_cron"
        mkdir -p "$(dirname "$sys_unit")"
        install -m 0644 "$here/systemd/feedsync.service" "$sys_unit"
        system systemctl daemon-reload
        if [ "$start" -eq 1 ]; then
            system systemctl enable feedsync.service
            system systemctl restart feedsync.service
        fi
        say "installed: the feedsync service ($(sys_version))"
        say "logs:   journalctl -u feedsync -f        state: systemctl status feedsync"
    else
        if [ -e "$sys_unit" ]; then
            system systemctl disable --now feedsync.service
            rm -f "$sys_unit"
        fi
        mkdir -p "$(dirname "$sys_cron")"
        cat >"$sys_cron" <<'EOF'
# feedsync (installed by install.sh --cron): every 5 minutes, the feeds that are due
# (each has its own next poll time), never two runs at once; each run that changed
# something ends with a save to the card database in /var/lib/feedsync.
SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
@reboot      root      install -d -o feedsync -g feedsync -m 0700 /run/feedsync
*/5 * * * *  feedsync  flock -n /run/feedsync/cron.lock /opt/feedsync/venv/bin/feedsync --config /etc/feedsync/feedsync.toml run --due --quiet
EOF
        chmod 0644 "$sys_cron"
        say "installed: feedsync from cron ($(sys_version)), every 5 minutes"
        say "logs: cron mails what a run prints; /var/log/syslog shows the runs"
    fi
    say "add feeds: edit /etc/feedsync/feedsync.toml (then: systemctl reload feedsync)," \
        "or: sudo feedsync add https://example.com/feed.xml"
    say "see it work: sudo feedsync status; sudo feedsync feeds"
}

sys_version() { "$sys_venv/bin/feedsync" --version; }

# Before the command goes: save to the card database what the live database (in RAM:
# /run/feedsync, /dev/shm/feedsync-<uid>) holds and the card lacks, and say what stays
# where. A running service saves when it stops; this is for cron and one-off commands
# (`feedsync add` leaves its change unsaved until the next run). Args: the venv, the
# config, then the command that runs feedsync (as the service's user for the system).
save_live_database() {
    local venv=$1 config=$2
    shift 2
    [ -x "$venv/bin/python" ] || return 0
    local live
    live=$("$venv/bin/python" -c '
import sys
from feedsync import config
storage = config.load(sys.argv[1] if sys.argv[1:] else None).storage
print("" if storage.url else storage.live_path)' "$config" 2>/dev/null) || live=""
    [ -n "$live" ] || return 0
    if [ -n "$root" ]; then
        say "(--root) skipped: $* snapshot"
        return 0
    fi
    [ -e "$live" ] || return 0
    say "saving the live database $live to the card database first"
    if "$@" snapshot; then
        say "the live database $live holds nothing unsaved; it stays in RAM until the next reboot (or: rm -r $(dirname "$live"))"
    else
        say "could NOT save $live (above): it is left as it is, in RAM until the next reboot; copy it now to keep what it holds"
    fi
}

uninstall_system() {
    [ -n "$root" ] || [ "$(id -u)" -eq 0 ] || die "removing the system service needs root"
    if [ -e "$sys_unit" ]; then
        say "stopping the service (it saves to the card database first)"
        system systemctl disable --now feedsync.service
        rm -f "$sys_unit"
        system systemctl daemon-reload
    fi
    if [ "$purge" -eq 0 ]; then
        save_live_database "$sys_venv" "$sys_config" "$sys_wrapper"
    fi
    rm -f "$sys_cron" "$sys_wrapper"
    rm -rf "$root/opt/feedsync"
    if [ "$purge" -eq 1 ]; then
        rm -rf "$root/etc/feedsync" "$root/var/lib/feedsync" "$root/run/feedsync"
        if getent passwd feedsync >/dev/null 2>&1; then system userdel feedsync; fi
        say "removed feedsync, its config and its data"
    else
        say "removed feedsync; kept the config (/etc/feedsync) and the data (/var/lib/feedsync)"
    fi
}

# ------------------------------------------------------------------ per user

data_home=${XDG_DATA_HOME:-$HOME/.local/share}
config_home=${XDG_CONFIG_HOME:-$HOME/.config}
user_venv="$root$data_home/feedsync/venv"
user_bin="$root$HOME/.local/bin"
user_config="$root$config_home/feedsync/feedsync.toml"
user_unit="$root$config_home/systemd/user/feedsync.service"
cron_mark="# feedsync (install.sh --user --cron)"

has_user_systemd() {
    [ -z "$root" ] && command -v systemctl >/dev/null 2>&1 &&
        systemctl --user show-environment >/dev/null 2>&1
}

# The cron lock sits in the user's own 0700 folder (beside the venv): a lock at a
# predictable path in a world-writable place (/dev/shm, /tmp) could be made and held by
# another local user, and no run would ever start. Not $XDG_RUNTIME_DIR: cron does not
# set it, and logout removes it. flock writes nothing to the card but the empty file.
user_lock_dir="$data_home/feedsync"

user_crontab_line() {
    printf '*/5 * * * * flock -n %s/cron.lock %s/bin/feedsync run --due --quiet %s\n' \
        "$user_lock_dir" "$user_venv" "$cron_mark"
}

install_user() {
    ensure_python
    if [ ! -x "$user_venv/bin/python" ]; then
        say "creating $user_venv"
        mkdir -p "$(dirname "$user_venv")"
        python3 -m venv "$user_venv"
    fi
    say "installing feedsync into $user_venv"
    pip_install "$user_venv"
    mkdir -p "$root$user_lock_dir"
    chmod 0700 "$root$user_lock_dir"
    mkdir -p "$user_bin"
    ln -sfn "$user_venv/bin/feedsync" "$user_bin/feedsync"
    write_config "$user_config" "# db = \"/dev/shm/feedsync-$(id -u)/feedsync.db\"" \
        "# snapshot = \"$data_home/feedsync/feedsync.db\""
    mkdir -p "$(dirname "$user_unit")"
    install -m 0644 "$here/systemd/feedsync-user.service" "$user_unit"
    say "installed: $("$user_venv/bin/feedsync" --version)"
    if [ "$schedule" = cron ]; then
        if [ -n "$root" ]; then
            say "(--root) skipped: crontab line: $(user_crontab_line)"
        else
            command -v crontab >/dev/null 2>&1 || die "no crontab here: install cron, or use the user unit"
            { crontab -l 2>/dev/null | grep -vF "$cron_mark" || true; user_crontab_line; } | crontab -
            say "scheduled from your crontab (crontab -l)"
        fi
    elif [ "$start" -eq 1 ] && has_user_systemd; then
        systemctl --user daemon-reload
        systemctl --user enable feedsync.service
        systemctl --user restart feedsync.service
        say "started the user service: systemctl --user status feedsync; journalctl --user -u feedsync"
    else
        say "not scheduled: systemctl --user enable --now feedsync (with a user systemd)," \
            "or ./install.sh --user --cron"
    fi
}

# After a --user install: `feedsync` is in ~/.local/bin, which this shell may not have on
# its PATH yet (Debian's ~/.profile adds it at login once the folder exists): say what
# to type, in so many words. Said last, after the demo, where the eye is.
path_note() {
    [ "$mode" = user ] && [ "$uninstall" -eq 0 ] || return 0
    case ":$PATH:" in
        *":$HOME/.local/bin:"* | *":$user_bin:"*) return 0 ;;
    esac
    say "feedsync is in $user_bin, which is not on this shell's PATH yet. In this shell, type"
    # shellcheck disable=SC2016  # printed for the user to type, not expanded here
    say '    export PATH="$HOME/.local/bin:$PATH"'
    say "or call it as $user_bin/feedsync."
    if grep -qs '\.local/bin' "$HOME/.profile" "$HOME/.bash_profile"; then
        say "Your next login shell has it on its PATH (~/.profile adds ~/.local/bin)."
    else
        # shellcheck disable=SC2016
        say 'To keep it, add to ~/.profile:  export PATH="$HOME/.local/bin:$PATH"'
    fi
}

uninstall_user() {
    if [ -e "$user_unit" ]; then
        if has_user_systemd; then systemctl --user disable --now feedsync.service || true; fi
        rm -f "$user_unit"
    fi
    if [ -z "$root" ] && command -v crontab >/dev/null 2>&1 && crontab -l 2>/dev/null | grep -qF "$cron_mark"; then
        crontab -l | grep -vF "$cron_mark" | crontab -
    fi
    if [ "$purge" -eq 0 ]; then
        save_live_database "$user_venv" "$user_config" "$user_venv/bin/feedsync" --config "$user_config"
    fi
    rm -f "$user_bin/feedsync"
    rm -rf "$user_venv"
    if [ "$purge" -eq 1 ]; then
        rm -rf "$root$config_home/feedsync" "$root$data_home/feedsync" "/dev/shm/feedsync-$(id -u)"
        say "removed feedsync, its config and its data"
    else
        say "removed feedsync; kept the config ($config_home/feedsync) and the data ($data_home/feedsync)"
    fi
}

# ------------------------------------------------------------------ main

if [ "$mode" = system ]; then
    if [ "$uninstall" -eq 1 ]; then uninstall_system; else install_system; fi
    feedsync_cmd=("$sys_wrapper")
else
    if [ "$uninstall" -eq 1 ]; then uninstall_user; else install_user; fi
    # --config: on a machine with the system install too, /etc/feedsync would come first;
    # the command by the name the user has for it (what the demo tells them to type)
    feedsync_cmd=("$user_bin/feedsync" --config "$user_config")
fi

code=0
if [ "$run_after" -eq 1 ] && [ "$uninstall" -eq 0 ]; then
    listing=$("${feedsync_cmd[@]}" feeds)
    case "$listing" in
        "no feeds yet"*)
            say "no feeds configured yet: running the demo (add yours with 'feedsync add URL')"
            "${feedsync_cmd[@]}" demo || code=$?
            ;;
        *) "${feedsync_cmd[@]}" run || code=$? ;;
    esac
fi
path_note
exit "$code"
