#!/usr/bin/env bash
# install.sh: install feedsync from this source tree (Debian / Raspberry Pi OS).
#
#   sudo ./install.sh               the system service: user `feedsync`, a venv in
#                                   /opt/feedsync, /etc/feedsync/feedsync.toml (never
#                                   overwritten), the systemd unit, enabled and started
#                                   (and feedsync serve's socket and service, NOT enabled);
#                                   where systemd is not running, a cron job instead.
#                                   Run again, it upgrades what is installed, as it is
#   sudo ./install.sh --cron        system-wide, run from /etc/cron.d instead of the service
#   sudo ./install.sh --systemd     the unit even where systemd is not running (an image):
#                                   enabled, it starts at the first boot with systemd
#   ./install.sh --user             for you, no root: a venv in ~/.local/share/feedsync, the
#                                   command in ~/.local/bin, ~/.config/feedsync/feedsync.toml,
#                                   a user unit (started when a user systemd runs)
#   ./install.sh --user --cron      the same, scheduled by a line in your crontab
#   ./install.sh --user --systemd   the user unit, enabled even where no user systemd runs
#   ... --run                       then one pass: `feedsync run`, or `feedsync demo`
#                                   while no feeds are configured
#   ... --postgresql                also the PostgreSQL driver (pip extra 'postgresql'), for
#                                   [storage] url = "postgresql://..." (README: Beyond one Pi)
#   ... --no-start                  install, but schedule nothing: no unit enabled or
#                                   started, no cron job
#   ... --uninstall [--purge]       remove the service, cron job, venv and command; keep
#                                   the config and the data unless --purge (first, what
#                                   the live database in RAM holds is saved to the card).
#                                   It undoes any install, finished or not
#   ... --root DIR                  (tests) install into DIR; systemctl, useradd, chown,
#                                   crontab and apt-get are skipped and reported
#
# Every step that fails says so in one line: what failed, what it left installed, and how
# to undo it (--uninstall) or finish it (the same command again). Each package at the
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

usage() { sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
say() { printf 'install.sh: %s\n' "$*"; }

# The one line a failure prints: set `said` so that the exit trap does not add another.
said=0
usage_error() { printf 'install.sh: %s\n' "$1" >&2; said=1; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --user) mode=user ;;
        --cron | --systemd)
            [ "$schedule" = auto ] || [ "$schedule" = "${1#--}" ] ||
                usage_error "--cron and --systemd: choose one"
            schedule=${1#--}
            ;;
        --run) run_after=1 ;;
        --no-start) start=0 ;;
        --postgresql) lock_suffix="-postgresql" ;;
        --uninstall) uninstall=1 ;;
        --purge) purge=1 ;;
        --root)
            [ $# -ge 2 ] || usage_error "--root needs a directory"
            root=$(cd -- "$2" 2>/dev/null && pwd) || usage_error "--root: no such directory: $2"
            shift
            ;;
        -h | --help) usage; exit 0 ;;
        *) usage_error "unknown option: $1 (see --help)" ;;
    esac
    shift
done
[ "$purge" -eq 0 ] || [ "$uninstall" -eq 1 ] || usage_error "--purge goes with --uninstall"
if [ "$uninstall" -eq 1 ] && { [ "$schedule" != auto ] || [ "$run_after" -eq 1 ]; }; then
    usage_error "--uninstall takes no --cron, --systemd or --run"
fi

# The command that undoes or repeats this run, as the user types it.
self=$0
[ -z "$root" ] || self="$self --root $root"
[ "$mode" = system ] || self="$self --user"
[ "$mode" = user ] || [ "$(id -u)" -eq 0 ] || self="sudo $self"

# ------------------------------------------------------------------ failing in one line

# What is being done now, named by the line a failure prints (set before each step that
# can fail). Empty: nothing changed yet.
step=""

# shellcheck disable=SC2317  # called by the exit trap
on_exit() {
    local code=$?
    [ "$code" -ne 0 ] && [ "$said" -eq 0 ] || return 0
    if [ -z "$step" ]; then
        printf 'install.sh: failed (exit %s) before changing anything\n' "$code" >&2
        return 0
    fi
    local next
    if [ "$uninstall" -eq 1 ]; then
        next="Fix the cause and run $self --uninstall$([ "$purge" -eq 0 ] || echo ' --purge') again."
    else
        next="To undo it: $self --uninstall (--purge: also the config and the data); to finish it: fix the cause and run the same command again."
    fi
    printf 'install.sh: FAILED (exit %s) %s. Left: %s. %s\n' "$code" "$step" "$(state 2>/dev/null || echo '?')" "$next" >&2
}
trap on_exit EXIT

# A check that fails: before any change, said with "(nothing was changed)"; after one,
# the exit trap's line names it and what is installed.
refuse() {
    if [ -z "$step" ]; then
        printf 'install.sh: %s (nothing was changed)\n' "$1" >&2
        said=1
    else
        step=$1
    fi
    exit 1
}

# shellcheck disable=SC2317  # called by the exit trap
join_parts() {  # "a, b and c"; "nothing of feedsync" for none
    case $# in
        0) echo "nothing of feedsync" ;;
        1) echo "$1" ;;
        *)
            local out=$1
            shift
            while [ $# -gt 1 ]; do out="$out, $1"; shift; done
            echo "$out and $1"
            ;;
    esac
}

# shellcheck disable=SC2317  # called by the exit trap
comma() {  # "a, b, c"
    local out=$1
    shift
    while [ $# -gt 0 ]; do out="$out, $1"; shift; done
    echo "$out"
}

version_of() {  # the venv's feedsync, by its own word
    local out
    out=$("$1/bin/feedsync" --version 2>/dev/null) || out=""
    if [ -n "$out" ]; then echo "$out"; else echo "incomplete: no working feedsync in it"; fi
}

# An uninstall where nothing is installed says so and ends there. $1: the state function.
nothing_to_remove() {
    [ "$("$1")" = "nothing of feedsync" ] || return 0
    say "nothing of feedsync is installed here: nothing to remove"
    exit 0
}

# ------------------------------------------------------------------ the machine

# systemd as the running init, as systemd's own sd_booted() decides (/run/systemd/system),
# which `systemctl is-system-running` asks first: "offline" when systemd is not PID 1 (a
# container, an image being prepared in a chroot). Anything else (running, degraded,
# starting, ...) is a systemd that daemon-reload and start can talk to.
systemd_state=""
booted=0
if [ -z "$root" ] && command -v systemctl >/dev/null 2>&1; then
    systemd_state=$(systemctl is-system-running 2>/dev/null) || true
    case "$systemd_state" in "" | offline) ;; *) booted=1 ;; esac
fi
not_booted_why() {
    if [ -n "$root" ]; then echo "an install into --root $root"
    elif ! command -v systemctl >/dev/null 2>&1; then echo "no systemctl here"
    else echo "systemctl is-system-running: ${systemd_state:-no answer}"
    fi
}

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
        printf 'install.sh: needs root for: %s\n' "$*" >&2
        return 1
    fi
}

# Debian packages, without the packages they only recommend (cron's are a mail server).
# A partial index update (a mirror sync in progress) is not fatal: what matters is
# whether the packages can be installed.
apt_install() {
    local missing=()
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" ||
            missing+=("$package")
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        say "no apt-get here: install ${missing[*]} yourself"
        return 0
    fi
    say "installing ${missing[*]} (apt-get, without recommended packages)"
    if [ -n "$root" ]; then
        say "(--root) skipped: apt-get install --no-install-recommends ${missing[*]}"
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
    step="installing ${missing[*]} (apt-get install)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# A venv to install into, as it is; or says why it is made (again): a venv whose python
# no longer runs (Debian's python3 upgraded since, a half-made venv) is made anew.
venv_runs() {
    if "$1/bin/python" -c '' >/dev/null 2>&1; then return 0; fi
    if [ -e "$1" ] || [ -L "$1" ]; then
        say "the venv $1 does not run (python3 upgraded since it was made?): making it anew"
    else
        say "creating $1"
    fi
    return 1
}

lock="$here/.ci/requirements$lock_suffix.lock"
need_lock() {
    [ -f "$lock" ] || refuse "missing $lock: install from a complete copy of the source"
}

ensure_python() {
    command -v python3 >/dev/null 2>&1 || apt_install python3
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
        refuse "feedsync needs Python 3.11 or newer; python3 is $(python3 -V 2>&1)"
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || apt_install python3-venv
}

# A cron daemon at work: a process named cron or crond (Debian's cron, cronie, busybox's
# crond); under systemd also systemd-cron's cron.target, which has no daemon.
cron_daemon_runs() {
    local comm name
    for comm in /proc/[0-9]*/comm; do
        { read -r name <"$comm"; } 2>/dev/null || continue
        case "$name" in cron | crond) return 0 ;; esac
    done
    [ "$booted" -eq 1 ] && systemctl is-active --quiet cron.service crond.service cron.target 2>/dev/null
}

# What the cron job needs to run at all, said in so many words.
say_cron_daemon() {
    if [ -n "$root" ]; then
        say "(--root) not checked: whether a cron daemon runs"
    elif cron_daemon_runs; then
        say "a cron daemon is running: the first run within 5 minutes"
    elif [ "$booted" -eq 1 ]; then
        say "NO cron daemon is running, so nothing runs feedsync yet: sudo systemctl enable --now cron"
    else
        say "NO cron daemon is running here ($(not_booted_why)), so nothing runs feedsync yet:" \
            "start one (sudo service cron start), or it starts at the machine's next boot"
    fi
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
    step="installing feedsync into $venv (pip install --upgrade pip)"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    # psycopg has no binary build for armv7 on PyPI (the lock skips it there): it runs on
    # the system's libpq
    if [ -n "$lock_suffix" ] && [ "$(uname -m)" = armv7l ]; then apt_install libpq5; fi
    locked() {
        PIP_CONFIG_FILE=/dev/null "$venv/bin/python" -m pip install --quiet \
            --index-url https://pypi.org/simple --require-hashes -r "$lock"
    }
    step="installing the locked packages into $venv (pip install -r ${lock#"$here"/})"
    if ! locked; then
        say "pip could not install the lock (above); if a package had to be built from" \
            "source, the build headers help: installing them and trying once more"
        apt_install build-essential python3-dev libxml2-dev libxslt1-dev pkg-config
        step="installing the locked packages into $venv (pip install -r ${lock#"$here"/}, with build headers)"
        locked
    fi
    step="installing feedsync itself into $venv (pip install --no-deps)"
    "$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$here"
}

write_config() {  # path db card: a commented config, never over an existing one
    local config=$1 db=$2 card=$3
    if [ -e "$config" ]; then
        say "kept your config $config"
        return 0
    fi
    step="writing the config $config"
    mkdir -p "$(dirname "$config")"
    # 0600 from the start: [storage] url may come to hold a PostgreSQL password
    (umask 077 && : >"$config")
    cat >"$config" <<EOF
# feedsync configuration (every key: README, "Configuration").

[storage]
# The live database sits in RAM (tmpfs) and holds what is recent; the card database, on
# the SD card, holds everything, saved every save_interval (what a power cut may lose).
$db
$card
# save_interval = "1h"
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
sys_wants="$root/etc/systemd/system/multi-user.target.wants/feedsync.service"
# feedsync serve's socket and service: installed with the unit, never enabled or started
# (README: "Reading it from a browser or a feed reader")
sys_web_units=("$root/etc/systemd/system/feedsync-web.socket" "$root/etc/systemd/system/feedsync-web.service")
sys_web_wants="$root/etc/systemd/system/sockets.target.wants/feedsync-web.socket"
sys_cron="$root/etc/cron.d/feedsync"
sys_wrapper="$root/usr/local/bin/feedsync"

sys_user_exists() { [ -z "$root" ] && getent passwd feedsync >/dev/null 2>&1; }

# Each part of a system install found on this machine, in a few words.
# shellcheck disable=SC2317  # called by the exit trap
system_state() {
    local parts=()
    if sys_user_exists; then parts+=("the user feedsync"); fi
    if [ -e "$sys_venv" ]; then parts+=("the venv $sys_venv ($(version_of "$sys_venv"))"); fi
    if [ -e "$sys_config" ]; then parts+=("the config $sys_config"); fi
    if [ -e "$sys_wrapper" ]; then parts+=("the command $sys_wrapper"); fi
    if [ -e "$sys_unit" ] || [ -L "$sys_wants" ]; then
        local how
        how=$([ -L "$sys_wants" ] && echo enabled || echo "not enabled")
        if [ "$booted" -eq 1 ]; then how="$how, $(systemctl is-active feedsync.service 2>/dev/null || true)"; fi
        parts+=("the unit $sys_unit ($how)")
    fi
    if [ -e "$sys_cron" ]; then parts+=("the cron job $sys_cron"); fi
    local data=() folder
    for folder in "$root/var/lib/feedsync" "$root/run/feedsync"; do
        if [ -e "$folder" ]; then data+=("$folder"); fi
    done
    if [ ${#data[@]} -gt 0 ]; then parts+=("the data ($(comma "${data[@]}"))"); fi
    join_parts "${parts[@]}"
}

sys_version() { version_of "$sys_venv"; }

install_system() {
    [ -n "$root" ] || [ "$(id -u)" -eq 0 ] ||
        refuse "the system service needs root: sudo $0 (or, for you alone: $0 --user)"
    need_lock
    # What to install: what was asked; run again, what is installed; else the service
    # where systemd runs, cron where it does not.
    if [ "$schedule" = auto ]; then
        if [ -e "$sys_unit" ]; then
            schedule=systemd
            say "upgrading the service install (--cron: switch to a cron job)"
        elif [ -e "$sys_cron" ]; then
            schedule=cron
            say "upgrading the cron install (--systemd: switch to the service)"
        elif [ "$booted" -eq 1 ]; then
            schedule=systemd
        else
            schedule=cron
            say "systemd is not running here ($(not_booted_why)): installing a cron job" \
                "(--systemd: the unit anyway, for an image that boots with systemd)"
        fi
    fi
    ensure_python
    if [ "$schedule" = systemd ]; then
        apt_install python3-venv python3-systemd
    else
        apt_install python3-venv cron
    fi
    if [ -z "$root" ] && ! getent passwd feedsync >/dev/null 2>&1; then
        say "creating the system user feedsync"
        step="creating the system user feedsync (useradd)"
        useradd --system --user-group --home-dir /var/lib/feedsync --no-create-home \
            --shell /usr/sbin/nologin --comment "feedsync daemon" feedsync
    elif [ -n "$root" ]; then
        say "(--root) skipped: useradd feedsync"
    fi
    if ! venv_runs "$sys_venv"; then
        step="creating the venv $sys_venv (python3 -m venv)"
        mkdir -p "$(dirname "$sys_venv")"
        # system site packages: Debian's python3-systemd (and python3-lxml, if installed)
        python3 -m venv --clear --system-site-packages "$sys_venv"
    fi
    say "installing feedsync into $sys_venv"
    pip_install "$sys_venv"

    write_config "$sys_config" 'db = "/run/feedsync/feedsync.db"' \
        'card = "/var/lib/feedsync/feedsync.db"'
    # readable by the service (group feedsync), not by every local user: [storage] url
    # may hold a PostgreSQL password; an existing config is tightened the same way
    step="setting the config's owner and mode (chmod 0640, chown root:feedsync $sys_config)"
    chmod 0640 "$sys_config"
    system chown root:feedsync "$sys_config"
    step="making the data folders $root/var/lib/feedsync and $root/run/feedsync"
    mkdir -p "$root/var/lib/feedsync" "$root/run/feedsync"
    chmod 0700 "$root/var/lib/feedsync" "$root/run/feedsync"
    system chown feedsync:feedsync "$root/var/lib/feedsync" "$root/run/feedsync"

    step="writing the command $sys_wrapper"
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

    if [ "$schedule" = systemd ]; then install_system_unit; else install_system_cron; fi
    say "see it work: sudo feedsync status; sudo feedsync feeds"
}

install_system_unit() {
    if [ -e "$sys_cron" ]; then
        step="removing the cron job $sys_cron (the service replaces it)"
        rm -f "$sys_cron"
        say "removed the cron job $sys_cron: the service replaces it"
    fi
    step="installing the unit $sys_unit"
    mkdir -p "$(dirname "$sys_unit")"
    install -m 0644 "$here/systemd/feedsync.service" "$sys_unit"
    step="installing feedsync serve's units (disabled) ${sys_web_units[*]}"
    install -m 0644 "$here/systemd/feedsync-web.socket" "${sys_web_units[0]}"
    install -m 0644 "$here/systemd/feedsync-web.service" "${sys_web_units[1]}"
    local reload="edit /etc/feedsync/feedsync.toml, then: sudo systemctl reload feedsync"
    if [ "$booted" -eq 1 ]; then
        step="loading the unit (systemctl daemon-reload)"
        systemctl daemon-reload
        if [ "$start" -eq 1 ]; then
            step="enabling the service (systemctl enable feedsync.service)"
            systemctl enable feedsync.service
            step="starting the service (systemctl restart feedsync.service; why: systemctl status feedsync, journalctl -u feedsync)"
            systemctl restart feedsync.service
            say "installed and started: the feedsync service ($(sys_version))"
        else
            say "installed: the feedsync service ($(sys_version)), not enabled or started" \
                "(--no-start): sudo systemctl enable --now feedsync"
        fi
        say "logs: journalctl -u feedsync -f        state: systemctl status feedsync"
    elif [ "$start" -eq 1 ] && [ -z "$root" ] && command -v systemctl >/dev/null 2>&1; then
        # Without a running systemd, enable only links the unit into multi-user.target.
        step="enabling the service (systemctl enable feedsync.service, offline: the link only)"
        systemctl enable feedsync.service
        say "installed and enabled: the feedsync service ($(sys_version)). systemd is not" \
            "running here ($(not_booted_why)), so nothing was started: it starts at the" \
            "next boot with systemd"
        say "then, logs: journalctl -u feedsync -f        state: systemctl status feedsync"
        reload="edit /etc/feedsync/feedsync.toml (the service reads it when it starts)"
    else
        if [ "$start" -eq 0 ]; then
            say "installed: the feedsync service ($(sys_version)), not enabled (--no-start)"
        elif [ -n "$root" ]; then
            say "(--root) skipped: systemctl enable feedsync.service"
            say "installed: the feedsync service ($(sys_version)) in $root, not enabled"
        else
            say "installed: the feedsync service ($(sys_version)), not enabled: no systemctl" \
                "here (systemd is not installed)"
        fi
        say "to start it where systemd runs: sudo systemctl enable --now feedsync"
        reload="edit /etc/feedsync/feedsync.toml (the service reads it when it starts)"
    fi
    say "add feeds: sudo feedsync add https://example.com/feed.xml, or $reload"
}

install_system_cron() {
    remove_system_unit ": the cron job replaces it"
    if [ "$start" -eq 0 ]; then
        if [ -e "$sys_cron" ]; then
            say "installed: feedsync ($(sys_version)); the cron job $sys_cron kept as it was (--no-start)"
        else
            say "installed: feedsync ($(sys_version)), not scheduled (--no-start): $self --cron schedules it"
        fi
        return 0
    fi
    step="writing the cron job $sys_cron"
    mkdir -p "$(dirname "$sys_cron")"
    cat >"$sys_cron" <<'EOF'
# feedsync (installed by install.sh --cron): every 5 minutes, the feeds that are due
# (each has its own next poll time), never two runs at once; each run that changed
# something ends with a save to the card database in /var/lib/feedsync. What a run
# prints (its errors: --quiet) goes to the system log: journalctl -t feedsync.
SHELL=/bin/sh
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
@reboot      root      install -d -o feedsync -g feedsync -m 0700 /run/feedsync
*/5 * * * *  feedsync  flock -n /run/feedsync/cron.lock /opt/feedsync/venv/bin/feedsync --config /etc/feedsync/feedsync.toml run --due --quiet 2>&1 | logger -t feedsync
EOF
    chmod 0644 "$sys_cron"
    say "installed: feedsync from cron ($(sys_version)): $sys_cron, every 5 minutes"
    say_cron_daemon
    if [ "$booted" -eq 1 ]; then
        say "logs: journalctl -t feedsync (what runs print)        the runs: journalctl -u cron"
    else
        say "logs: what runs print goes to the system log, tagged feedsync (grep feedsync /var/log/syslog, where a syslog daemon runs)"
    fi
    say "add feeds: sudo feedsync add https://example.com/feed.xml, or edit /etc/feedsync/feedsync.toml (the next run reads it)"
}

# The unit, stopped (the service saves to the card first), disabled and removed: from a
# finished install or from one that failed half way (a unit systemd never loaded).
remove_system_unit() {
    local why=${1:-}
    [ -e "$sys_unit" ] || [ -L "$sys_wants" ] || return 0
    if [ -n "$root" ]; then
        say "(--root) skipped: systemctl disable --now feedsync.service"
    elif [ "$booted" -eq 1 ]; then
        if systemctl is-active --quiet feedsync.service; then
            say "stopping the service (it saves to the card database first)"
            step="stopping the service (systemctl stop feedsync.service)"
            systemctl stop feedsync.service
        fi
        systemctl disable feedsync.service ||
            say "systemctl disable failed (above): removing its link by hand"
    elif command -v systemctl >/dev/null 2>&1; then
        # no running systemd, nothing runs the unit: disable only unlinks it
        systemctl disable feedsync.service || say "systemctl disable failed (above): removing its link by hand"
    fi
    if [ -L "$sys_web_wants" ]; then
        # the owner turned feedsync serve on: off with the service it reads
        if [ -n "$root" ]; then
            say "(--root) skipped: systemctl disable --now feedsync-web.socket feedsync-web.service"
        elif [ "$booted" -eq 1 ]; then
            systemctl disable --now feedsync-web.socket feedsync-web.service ||
                say "systemctl disable failed (above): removing its link by hand"
        elif command -v systemctl >/dev/null 2>&1; then
            systemctl disable feedsync-web.socket || say "systemctl disable failed (above): removing its link by hand"
        fi
    fi
    step="removing the unit $sys_unit"
    rm -f "$sys_unit" "$sys_wants" "${sys_web_units[@]}" "$sys_web_wants"
    if [ "$booted" -eq 1 ]; then
        systemctl daemon-reload ||
            say "systemctl daemon-reload failed (above): the unit file is gone, systemd forgets it at its next reload"
    fi
    say "removed the unit $sys_unit$why"
}

# Before the command goes: save to the card database what the live database (in RAM:
# /run/feedsync, /dev/shm/feedsync-<uid>) holds and the card lacks, and say what stays
# where. A running service saves when it stops; this is for cron and one-off commands
# (`feedsync add` leaves its change unsaved until the next run). Args: the venv, the
# config, then the command that runs feedsync (as the service's user for the system).
save_live_database() {
    local venv=$1 config=$2
    shift 2
    [ -e "$venv" ] || return 0
    local live
    if ! live=$("$venv/bin/python" -c '
import sys
from feedsync import config
storage = config.load(sys.argv[1] if sys.argv[1:] else None).storage
print("" if storage.url else storage.live_path)' "$config" 2>/dev/null); then
        say "the installed feedsync cannot say where its live database is (an incomplete" \
            "install?): nothing saved; a live database in RAM stays there until the next reboot"
        return 0
    fi
    [ -n "$live" ] || return 0
    if [ -n "$root" ]; then
        say "(--root) skipped: $* snapshot"
        return 0
    fi
    [ -e "$live" ] || return 0
    say "saving the live database $live to the card database first"
    # `snapshot`, save's name before: the installed feedsync may be older than this script
    if "$@" snapshot; then
        say "the live database $live holds nothing unsaved; it stays in RAM until the next reboot (or: rm -r $(dirname "$live"))"
    else
        say "could NOT save $live (above): it is left as it is, in RAM until the next reboot; copy it now to keep what it holds"
    fi
}

uninstall_system() {
    [ -n "$root" ] || [ "$(id -u)" -eq 0 ] || refuse "removing the system service needs root: sudo $0 --uninstall"
    nothing_to_remove system_state
    step="removing the service"
    remove_system_unit
    if [ -e "$sys_cron" ]; then
        step="removing the cron job $sys_cron"
        rm -f "$sys_cron"
        say "removed the cron job $sys_cron"
    fi
    if [ "$purge" -eq 0 ]; then
        step="saving the live database"
        save_live_database "$sys_venv" "$sys_config" "$sys_wrapper"
    fi
    step="removing the command $sys_wrapper and the venv $root/opt/feedsync"
    rm -f "$sys_wrapper"
    rm -rf "$root/opt/feedsync"
    if [ "$purge" -eq 1 ]; then
        step="removing the config and the data"
        rm -rf "$root/etc/feedsync" "$root/var/lib/feedsync" "$root/run/feedsync"
        if sys_user_exists; then
            step="removing the system user feedsync (userdel)"
            userdel feedsync
        elif [ -n "$root" ]; then
            say "(--root) skipped: userdel feedsync"
        fi
        say "removed feedsync, its config and its data"
    else
        say "removed feedsync; kept the config (/etc/feedsync), the data (/var/lib/feedsync)" \
            "and the user feedsync (--uninstall --purge removes them)"
    fi
}

# ------------------------------------------------------------------ per user

data_home=${XDG_DATA_HOME:-$HOME/.local/share}
config_home=${XDG_CONFIG_HOME:-$HOME/.config}
user_venv="$root$data_home/feedsync/venv"
user_bin="$root$HOME/.local/bin"
user_config="$root$config_home/feedsync/feedsync.toml"
user_unit="$root$config_home/systemd/user/feedsync.service"
user_wants="$root$config_home/systemd/user/default.target.wants/feedsync.service"
cron_mark="# feedsync (install.sh --user --cron)"

# A user systemd (the user's own manager) to enable and start the user unit with.
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
    printf '*/5 * * * * flock -n %s/cron.lock %s/bin/feedsync run --due --quiet 2>&1 | logger -t feedsync %s\n' \
        "$user_lock_dir" "$user_venv" "$cron_mark"
}

# Your crontab without feedsync's line ("" when that was all of it, or there is none).
crontab_without_ours() {
    local table
    table=$(crontab -l 2>/dev/null) || table=""
    grep -vF "$cron_mark" <<<"$table" || true
}

has_our_crontab_line() {
    [ -z "$root" ] && command -v crontab >/dev/null 2>&1 || return 1
    local table
    table=$(crontab -l 2>/dev/null) || return 1
    grep -qF "$cron_mark" <<<"$table"
}

# Your crontab as $1 says; an empty one is removed (crontab -r), as before the install.
set_crontab() {
    if [ -n "${1//[[:space:]]/}" ]; then
        printf '%s\n' "$1" | crontab -
    else
        crontab -r
    fi
}

# shellcheck disable=SC2317  # called by the exit trap
user_state() {
    local parts=()
    if [ -e "$user_venv" ]; then parts+=("the venv $user_venv ($(version_of "$user_venv"))"); fi
    if [ -L "$user_bin/feedsync" ] || [ -e "$user_bin/feedsync" ]; then parts+=("the command $user_bin/feedsync"); fi
    if [ -e "$user_config" ]; then parts+=("the config $user_config"); fi
    if [ -e "$user_unit" ] || [ -L "$user_wants" ]; then
        parts+=("the user unit $user_unit ($([ -L "$user_wants" ] && echo enabled || echo "not enabled"))")
    fi
    if has_our_crontab_line; then parts+=("feedsync's line in your crontab"); fi
    local data=() folder
    for folder in "$root$data_home/feedsync" "/dev/shm/feedsync-$(id -u)"; do
        if [ -e "$folder" ]; then data+=("$folder"); fi
    done
    if [ ${#data[@]} -gt 0 ]; then parts+=("the data ($(comma "${data[@]}"))"); fi
    join_parts "${parts[@]}"
}

# shellcheck disable=SC2317  # called by the exit trap
state() { if [ "$mode" = system ]; then system_state; else user_state; fi; }

# The user unit, stopped, disabled and its link removed (the file itself stays: the
# install puts it there whatever schedules feedsync).
disable_user_unit() {
    [ -L "$user_wants" ] || return 0
    if has_user_systemd; then
        step="stopping the user service (systemctl --user disable --now feedsync.service)"
        systemctl --user disable --now feedsync.service
    fi
    rm -f "$user_wants"
    say "disabled the user unit $user_unit"
}

remove_our_crontab_line() {
    has_our_crontab_line || return 0
    step="removing feedsync's line from your crontab (crontab -)"
    set_crontab "$(crontab_without_ours)"
    if crontab -l >/dev/null 2>&1; then
        say "removed feedsync's line from your crontab (the rest kept: crontab -l)"
    else
        say "removed feedsync's line from your crontab, its only line: no crontab left"
    fi
}

install_user() {
    # What schedules it: what was asked; run again, what is installed (a crontab line
    # stays a crontab line); else the user unit.
    if [ "$schedule" = auto ]; then
        if has_our_crontab_line; then
            schedule=cron
            say "upgrading the crontab install (--systemd: switch to the user unit)"
        else
            schedule=systemd
        fi
    fi
    if [ "$schedule" = cron ] && [ "$start" -eq 1 ] && [ -z "$root" ] && ! command -v crontab >/dev/null 2>&1; then
        refuse "no crontab command here: sudo apt-get install --no-install-recommends cron, then again; or without cron: $0 --user"
    fi
    need_lock
    ensure_python
    if ! venv_runs "$user_venv"; then
        step="creating the venv $user_venv (python3 -m venv)"
        mkdir -p "$(dirname "$user_venv")"
        python3 -m venv --clear "$user_venv"
    fi
    say "installing feedsync into $user_venv"
    pip_install "$user_venv"
    step="making the folder $root$user_lock_dir and the command $user_bin/feedsync"
    mkdir -p "$root$user_lock_dir"
    chmod 0700 "$root$user_lock_dir"
    mkdir -p "$user_bin"
    ln -sfn "$user_venv/bin/feedsync" "$user_bin/feedsync"
    write_config "$user_config" "# db = \"/dev/shm/feedsync-$(id -u)/feedsync.db\"" \
        "# card = \"$data_home/feedsync/feedsync.db\""
    step="installing the user unit $user_unit"
    mkdir -p "$(dirname "$user_unit")"
    install -m 0644 "$here/systemd/feedsync-user.service" "$user_unit"
    say "installed: $(version_of "$user_venv")"
    if [ "$schedule" = cron ]; then
        disable_user_unit
        if [ "$start" -eq 0 ]; then
            say "not scheduled (--no-start): $0 --user --cron schedules it"
        elif [ -n "$root" ]; then
            say "(--root) skipped: crontab line: $(user_crontab_line)"
        else
            step="writing your crontab (crontab -)"
            local rest
            rest=$(crontab_without_ours)
            set_crontab "$(printf '%s\n%s' "$rest" "$(user_crontab_line)" | sed '/./,$!d')"
            say "scheduled from your crontab, every 5 minutes (crontab -l); what runs print: journalctl -t feedsync, or /var/log/syslog"
            say_cron_daemon
        fi
        return 0
    fi
    remove_our_crontab_line
    if [ "$start" -eq 0 ]; then
        say "not scheduled (--no-start): systemctl --user enable --now feedsync (with a user systemd), or $0 --user --cron"
    elif has_user_systemd; then
        step="loading the user unit (systemctl --user daemon-reload)"
        systemctl --user daemon-reload
        step="enabling the user service (systemctl --user enable feedsync.service)"
        systemctl --user enable feedsync.service
        step="starting the user service (systemctl --user restart feedsync.service; why: journalctl --user -u feedsync)"
        systemctl --user restart feedsync.service
        say "started the user service: systemctl --user status feedsync; journalctl --user -u feedsync"
    elif [ "$schedule" = systemd ] && [ "$explicit_systemd" -eq 1 ] && [ -z "$root" ] && command -v systemctl >/dev/null 2>&1; then
        step="enabling the user unit (systemctl --user enable feedsync.service, offline: the link only)"
        systemctl --user enable feedsync.service
        say "enabled the user unit: no user systemd runs here ($(not_booted_why)), so nothing was" \
            "started: it starts with your user systemd (your next login where systemd runs)"
    else
        say "not scheduled: no user systemd runs here. From cron: $0 --user --cron;" \
            "where a user systemd runs: systemctl --user enable --now feedsync"
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
    nothing_to_remove user_state
    step="removing the user unit $user_unit"
    disable_user_unit
    if [ -e "$user_unit" ]; then
        rm -f "$user_unit"
        if has_user_systemd; then systemctl --user daemon-reload || true; fi
        say "removed the user unit $user_unit"
    fi
    remove_our_crontab_line
    if [ "$purge" -eq 0 ]; then
        step="saving the live database"
        save_live_database "$user_venv" "$user_config" "$user_venv/bin/feedsync" --config "$user_config"
    fi
    step="removing the command $user_bin/feedsync and the venv $user_venv"
    rm -f "$user_bin/feedsync"
    rm -rf "$user_venv"
    if [ "$purge" -eq 1 ]; then
        step="removing the config and the data"
        rm -rf "$root$config_home/feedsync" "$root$data_home/feedsync" "/dev/shm/feedsync-$(id -u)"
        say "removed feedsync, its config and its data"
    else
        say "removed feedsync; kept the config ($config_home/feedsync) and the data" \
            "($data_home/feedsync) (--uninstall --purge removes them)"
    fi
}

# ------------------------------------------------------------------ main

explicit_systemd=0
[ "$schedule" != systemd ] || explicit_systemd=1
if [ "$mode" = system ]; then
    if [ "$uninstall" -eq 1 ]; then uninstall_system; else install_system; fi
    feedsync_cmd=("$sys_wrapper")
else
    if [ "$uninstall" -eq 1 ]; then uninstall_user; else install_user; fi
    # the command by the name the user has for it (what the demo tells them to type), with
    # the config it was installed with
    feedsync_cmd=("$user_bin/feedsync" --config "$user_config")
fi

code=0
if [ "$run_after" -eq 1 ]; then
    step="running one pass after the install (feedsync feeds)"
    listing=$("${feedsync_cmd[@]}" feeds)
    case "$listing" in
        "no feeds yet"*)
            say "no feeds configured yet: running the demo (add yours with 'feedsync add URL')"
            "${feedsync_cmd[@]}" demo || code=$?
            ;;
        *) "${feedsync_cmd[@]}" run || code=$? ;;
    esac
    if [ "$code" -ne 0 ]; then
        say "installed; the pass after it failed (exit $code, above)"
        said=1
    fi
fi
path_note
exit "$code"
