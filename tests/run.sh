#!/usr/bin/env bash
# tests/run.sh: set everything up on a fresh Debian / Raspberry Pi OS machine and run the
# whole test suite, with the linters. This is what CI runs (.ci/run) and what README's
# Quick start tells a developer to type. Extra arguments go to pytest.
#
# It installs the system packages the tests need (apt, only those missing), creates .venv
# with the locked versions (.ci/requirements-test.lock) and feedsync installed editable,
# then runs ruff, mypy, shellcheck and pytest. pytest's exit code is the script's: no tests collected (5) fails too.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Debian package -> a command or file that shows it is there.
needed=()
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || needed+=(python3-venv)
command -v shellcheck >/dev/null 2>&1 || needed+=(shellcheck)
command -v strace >/dev/null 2>&1 || needed+=(strace)  # counts the writes to the "SD card"
command -v systemd-analyze >/dev/null 2>&1 || needed+=(systemd)  # verify + security of the units
command -v sqlite3 >/dev/null 2>&1 || needed+=(sqlite3)  # reads a snapshot, as README says
command -v openssl >/dev/null 2>&1 || needed+=(openssl)  # a certificate for the https tests
# libfaketime: the clock of the feedsync processes the clock tests start (tests/test_clock.py)
compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null || needed+=(faketime)
# a throwaway PostgreSQL server for the tests of the PostgreSQL backend (tests/pgserver.py)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || needed+=(postgresql)
# a real browser for the web page's tests (tests/browser.py: headless Chromium, WebDriver)
command -v chromium >/dev/null 2>&1 || needed+=(chromium)
command -v chromedriver >/dev/null 2>&1 || needed+=(chromium-driver)
# install.sh's crontab paths (tests/test_install_paths.py): crontab and the cron daemon,
# as install.sh installs them, without the mail server cron recommends
bare=()
command -v crontab >/dev/null 2>&1 || bare+=(cron)
if [ ${#needed[@]} -gt 0 ] || [ ${#bare[@]} -gt 0 ]; then
    echo "tests/run.sh: installing ${needed[*]} ${bare[*]} (apt)"
    # a partial index update (mirror sync in progress) is not fatal: the install says
    as_root apt-get update -q || echo "tests/run.sh: apt-get update had errors; trying anyway"
fi
if [ ${#needed[@]} -gt 0 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${needed[@]}"
fi
if [ ${#bare[@]} -gt 0 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${bare[@]}"
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# exactly the versions install.sh installs, plus the test tools (.ci/requirements-test.lock,
# README "The lock"; PyPI alone, as install.sh says why), then feedsync itself, editable
PIP_CONFIG_FILE=/dev/null .venv/bin/python -m pip install --quiet \
    --index-url https://pypi.org/simple --require-hashes -r .ci/requirements-test.lock
.venv/bin/python -m pip install --quiet --no-deps -e .
# datasette in a venv of its own, as a user would install it (pipx): in feedsync's venv its
# click would make every `import httpx` load httpx's command line (rich, pygments)
if [ ! -x .venv/datasette/bin/datasette ]; then
    python3 -m venv .venv/datasette
    .venv/datasette/bin/python -m pip install --quiet datasette
fi

echo "tests/run.sh: ruff"
.venv/bin/ruff check feedsync tests bench
.venv/bin/ruff format --check feedsync tests bench
echo "tests/run.sh: mypy"
.venv/bin/mypy
echo "tests/run.sh: shellcheck"
shellcheck install.sh tests/run.sh .ci/run .ci/lock .ci/newest tests/pi/*.sh
echo "tests/run.sh: pytest"
# the referee test reads feedparser's own test corpus from its sdist on PyPI (fetched into
# ~/.cache/feedsync-tests by the test): here, where PyPI is reachable, not having it fails
export FEEDSYNC_FEEDPARSER_CORPUS_REQUIRED=1
# the round trip of feedsync serve's feeds through reader needs the bench's venv (pip from
# PyPI, tests/test_serve_roundtrip.py): here, not being able to make it fails
export FEEDSYNC_READER_REQUIRED=1
# the web page's tests in a real browser: here, where tests/run.sh installed it, not having
# Chromium fails (tests/test_serve_browser.py)
export FEEDSYNC_BROWSER_REQUIRED=1
exec .venv/bin/python -m pytest "$@"
