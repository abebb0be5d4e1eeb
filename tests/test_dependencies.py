"""What feedsync imports is declared in pyproject.toml, with a range, and the locks pin it
inside that range: a Pi installed in a year gets what CI tested (README, "The lock")."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# the extras feedsync's own code imports (test: the tools of the tests, never imported)
RUNTIME_EXTRAS = ("systemd", "postgresql")
# imported by feedsync, never installed in the test venv (install.sh takes Debian's)
NOT_INSTALLED_HERE = {"systemd": "systemd-python"}
LOCKS = {
    "runtime": REPO / ".ci/requirements.lock",
    "postgresql": REPO / ".ci/requirements-postgresql.lock",
    "test": REPO / ".ci/requirements-test.lock",
}


def imported_modules() -> dict[str, set[str]]:
    """The top-level names of every absolute import in feedsync/ (lazy ones inside
    functions too) that are neither the standard library's nor feedsync's own."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "feedsync").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top != "feedsync" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def requirements(*extras: str, base: bool = True) -> list[Requirement]:
    lines = list(PROJECT["dependencies"]) if base else []
    for extra in extras:
        lines += PROJECT["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


def pins(lock: Path) -> dict[str, Version]:
    found = re.findall(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", lock.read_text(), re.MULTILINE)
    return {canonicalize_name(name): Version(version) for name, version in found}


def test_every_third_party_import_is_declared() -> None:
    declared = {canonicalize_name(r.name) for r in requirements(*RUNTIME_EXTRAS)}
    distributions = importlib.metadata.packages_distributions()
    undeclared = {}
    for module, where in imported_modules().items():
        names = distributions.get(module) or [NOT_INSTALLED_HERE.get(module, module)]
        if not {canonicalize_name(n) for n in names} & declared:
            undeclared[module] = sorted(where)
    assert undeclared == {}, "imported by feedsync, not in pyproject.toml"


def test_every_runtime_dependency_has_a_lower_and_an_upper_bound() -> None:
    unbounded = []
    for requirement in requirements(*RUNTIME_EXTRAS):
        operators = {spec.operator for spec in requirement.specifier}
        if not operators & {"<", "<=", "==", "~="} or not operators & {">", ">=", "==", "~="}:
            unbounded.append(str(requirement))
    assert unbounded == []


def test_the_locks_pin_every_dependency_inside_its_range() -> None:
    """install.sh installs .ci/requirements.lock (with --postgresql, the -postgresql
    one), CI the -test one: each pins what it must, inside pyproject's ranges, and a
    package in two of them is pinned at one version (CI tests what install.sh installs).
    The systemd extra is in none: install.sh takes Debian's python3-systemd."""
    wanted = {
        "runtime": requirements(),
        "postgresql": requirements("postgresql"),
        "test": requirements("postgresql", "test"),
    }
    problems = []
    for name, lock in LOCKS.items():
        pinned = pins(lock)
        for requirement in wanted[name]:
            version = pinned.get(canonicalize_name(requirement.name))
            if version is None:
                problems.append(f"{lock.name}: {requirement.name} is not pinned")
            elif not requirement.specifier.contains(version, prereleases=True):
                problems.append(f"{lock.name}: {requirement.name}=={version} not in {requirement}")
    runtime, postgresql, test = (pins(lock) for lock in LOCKS.values())
    for smaller, larger in ((runtime, postgresql), (postgresql, test)):
        problems += [
            f"{package}: {version} and {larger.get(package)}"
            for package, version in smaller.items()
            if larger.get(package) != version
        ]
    assert problems == []


def test_every_file_of_every_lock_has_a_hash() -> None:
    for lock in LOCKS.values():
        blocks = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text())
        packages = [b for b in blocks if "==" in b.partition("\n")[0]]
        assert packages, lock
        assert all("--hash=sha256:" in block for block in packages), lock
