#!/usr/bin/env bash
# install.sh: install feedsync from this source tree.
#
#   ./install.sh --user          per-user install, no root: a venv under
#                                ${XDG_DATA_HOME:-~/.local/share}/feedsync/venv, the command
#                                at ~/.local/bin/feedsync, a commented config at
#                                ${XDG_CONFIG_HOME:-~/.config}/feedsync/feedsync.toml
#                                (never overwritten)
#   ./install.sh --user --run    the same, then one pass: `feedsync run`, or `feedsync demo`
#                                when no feeds are configured yet
#
# Running it again upgrades in place and keeps the config and the data. The system-wide
# service (systemd unit, dedicated user, cron fallback) is not built yet: see README.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=""
run_after=0

usage() {
    sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
    case "$1" in
        --user) mode=user ;;
        --run) run_after=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install.sh: unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [ "$mode" != user ]; then
    echo "install.sh: only --user is available so far (the system service comes with" \
        "'feedsync daemon'); run: ./install.sh --user" >&2
    exit 2
fi

say() { printf 'install.sh: %s\n' "$*"; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "install.sh: needs root for: $*" >&2
        return 1
    fi
}

# Debian's python3 has no venv/ensurepip until python3-venv is installed.
ensure_python() {
    if ! command -v python3 >/dev/null 2>&1; then
        say "installing python3 (apt)"
        as_root apt-get update -q || true
        as_root apt-get install -y -q python3 python3-venv
    fi
    if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "install.sh: feedsync needs Python 3.11 or newer; python3 is $(python3 -V 2>&1)" >&2
        exit 1
    fi
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
        say "installing python3-venv (apt)"
        as_root apt-get update -q || true
        as_root apt-get install -y -q python3-venv
    fi
}

data_home=${XDG_DATA_HOME:-$HOME/.local/share}
config_home=${XDG_CONFIG_HOME:-$HOME/.config}
venv="$data_home/feedsync/venv"
bin_dir="$HOME/.local/bin"
config="$config_home/feedsync/feedsync.toml"

ensure_python
if [ ! -x "$venv/bin/python" ]; then
    say "creating $venv"
    python3 -m venv "$venv"
fi
say "installing feedsync into $venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet --upgrade "$here"

mkdir -p "$bin_dir"
ln -sfn "$venv/bin/feedsync" "$bin_dir/feedsync"

if [ ! -e "$config" ]; then
    mkdir -p "$(dirname "$config")"
    cat >"$config" <<EOF
# feedsync configuration (all keys: README, "Configuration").

[storage]
# The live database sits in RAM (tmpfs); its snapshot is the copy that survives a reboot.
# db = "/dev/shm/feedsync-$(id -u)/feedsync.db"
# snapshot = "$data_home/feedsync/feedsync.db"
# snapshot_interval = "1h"

[poll]
# lookback = "24h"      # entries this much older than a feed's newest are still staged
# concurrency = 8       # feeds and pages fetched at once
# per_host = 2          # of which to one host
# timeout = "30s"       # whole-request deadline

[extract]
# max_attempts = 5      # a failing article page is given up after this many tries
# workers = 2           # extraction processes

# One [[feeds]] table per feed:
# [[feeds]]
# url = "https://example.com/feed.xml"
EOF
    say "wrote $config"
else
    say "kept your config $config"
fi

say "installed: $("$venv/bin/feedsync" --version)"
case ":$PATH:" in
    *":$bin_dir:"*) ;;
    *) say "note: $bin_dir is not on your PATH; add it, or call $bin_dir/feedsync" ;;
esac

if [ "$run_after" -eq 1 ]; then
    listing=$("$venv/bin/feedsync" --config "$config" feeds)
    case "$listing" in
        "no feeds yet"*)
            say "no feeds configured yet: running the demo (add yours with 'feedsync add URL')"
            exec "$venv/bin/feedsync" demo
            ;;
        *) exec "$venv/bin/feedsync" --config "$config" run ;;
    esac
fi
say "next: feedsync add https://example.com/feed.xml && feedsync run   (or: feedsync demo)"
