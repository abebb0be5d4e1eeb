"""Run one command and report what it cost, its descendants included.

    python bench/probe.py --result FILE [--interval 0.1] -- COMMAND ARGS...

Stand-alone (standard library only): it runs under the interpreter of the bench, whatever
the command's own interpreter is.

Why a separate process: feedsync's extraction workers are children of a multiprocessing
*forkserver*, itself a child of feedsync. When feedsync exits, nobody waits for the
forkserver, so its CPU time (and its workers') would not reach feedsync's ``wait4``
rusage. This probe makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
orphans are re-parented to it, it reaps every one of them, and ``RUSAGE_CHILDREN`` then
holds the CPU time of the whole tree. While the command runs, a thread samples the
tree's memory (RSS and PSS summed over the processes) from /proc.

The result file is JSON: ``wall`` (s, start to the command's exit), ``user``, ``sys``
(s, all descendants), ``main_maxrss_kb`` (peak RSS of the command's own process),
``maxrss_kb`` (of the largest process in the tree), ``peak_tree_rss_kb`` and
``peak_tree_pss_kb`` (sampled sums), ``oublock`` (512-byte blocks written by the tree to
block devices), ``returncode``, ``orphans`` (processes reaped after the command exited).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def become_subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (from /proc/<pid>/stat)."""
    table: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name is in parentheses and may contain spaces
        fields = stat[stat.rfind(")") + 2 :].split()
        table[int(entry.name)] = int(fields[1])
    return table


def descendants(root: int) -> list[int]:
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in kB; (0, 0) once it is gone."""
    rss = pss = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KB
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
                break
    return rss, pss


class Sampler(threading.Thread):
    """Peak summed RSS and PSS of this process's descendants."""

    def __init__(self, interval: float):
        super().__init__(daemon=True)
        self.interval = interval
        self.peak_rss = 0
        self.peak_pss = 0
        self.done = threading.Event()

    def run(self) -> None:
        me = os.getpid()
        while not self.done.is_set():
            rss = pss = 0
            for pid in descendants(me):
                r, p = memory_kb(pid)
                rss += r
                pss += p
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_pss = max(self.peak_pss, pss)
            self.done.wait(self.interval)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--interval", type=float, default=0.1, help="memory sampling (s)")
    parser.add_argument("--reap-timeout", type=float, default=30.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")

    subreaper = become_subreaper()
    sampler = Sampler(args.interval)
    started = time.perf_counter()
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    sampler.start()
    _, status, own = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)  # waited here, not by Popen

    # the orphans (forkserver, resource tracker) come to us: wait for every one
    orphans = 0
    deadline = time.monotonic() + args.reap_timeout
    while True:
        try:
            pid, _, _ = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            orphans += 1
            continue
        if time.monotonic() > deadline:
            for stray in descendants(os.getpid()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(stray, signal.SIGKILL)
        time.sleep(0.005)
    sampler.done.set()
    sampler.join()

    tree = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = {
        "wall": wall,
        "user": tree.ru_utime,
        "sys": tree.ru_stime,
        "main_maxrss_kb": own.ru_maxrss,
        "maxrss_kb": tree.ru_maxrss,
        "peak_tree_rss_kb": sampler.peak_rss,
        "peak_tree_pss_kb": sampler.peak_pss,
        "oublock": tree.ru_oublock,
        "returncode": child.returncode,
        "orphans": orphans,
        "subreaper": subreaper,
    }
    args.result.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
