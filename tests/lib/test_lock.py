"""requirements.lock: current with pyproject.toml, complete, CPU torch, and what is installed."""

from __future__ import annotations

import importlib.util
import platform
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _lock_module():
    spec = importlib.util.spec_from_file_location("_lock_script", ROOT / "scripts" / "lock.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


lock = _lock_module()


def test_lock_is_current_with_pyproject():
    recorded = lock.recorded_hash(lock.LOCK)
    assert recorded is not None, "requirements.lock has no dependency hash in its header"
    assert recorded == lock.dependency_hash(lock.PYPROJECT), (
        "pyproject.toml's dependency lists changed since requirements.lock was made: run `make lock`"
    )


def test_hash_follows_the_dependency_lists(tmp_path):
    text = (ROOT / "pyproject.toml").read_text()
    base = tmp_path / "base.toml"
    base.write_text(text)
    h = lock.dependency_hash(base)
    # reformatting and reordering do not matter ...
    moved = tmp_path / "moved.toml"
    moved.write_text(text.replace('"numpy>=1.24",', "").replace('"torch==2.13.0",', '"torch == 2.13.0",\n  "numpy>=1.24",'))
    assert lock.dependency_hash(moved) == h
    # ... a bound, a new package or a changed extra does
    for old, new in [('"numpy>=1.24"', '"numpy>=1.25"'), ('"tqdm>=4.60",', '"tqdm>=4.60", "rich",'),
                     ('ray = ["ray>=2.9"]', 'ray = ["ray[default]>=2.9"]')]:
        assert old in text, old
        changed = tmp_path / "changed.toml"
        changed.write_text(text.replace(old, new))
        assert lock.dependency_hash(changed) != h, new
    # an extra the lock does not cover does not
    other = tmp_path / "other.toml"
    other.write_text(text.replace("[project.optional-dependencies]", '[project.optional-dependencies]\ndocs = ["furo"]'))
    assert lock.dependency_hash(other) == h


def test_lock_satisfies_every_requirement():
    pins = lock.pins(lock.LOCK)
    lists = lock.dependency_lists(lock.PYPROJECT)
    reqs = lists["dependencies"] + [r for e in lock.EXTRAS for r in lists["optional-dependencies"][e]]
    env = {"python_version": lock.PYTHON_VERSION, "python_full_version": lock.PYTHON_VERSION + ".0",
           "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"}
    for line in reqs:
        req = Requirement(line)
        if req.marker and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in requirements.lock: run `make lock`"
        assert req.specifier.contains(Version(pins[name]), prereleases=True), f"{line} vs {name}=={pins[name]}"


def test_torch_is_the_cpu_build_without_cuda_packages():
    pins = lock.pins(lock.LOCK)
    assert pins["torch"] == "2.13.0+cpu"
    cuda = [n for n in pins if n.startswith(("nvidia-", "cuda-")) or n == "triton"]
    assert cuda == [], f"CUDA packages in the lock: {cuda}"


def test_lock_header_names_its_target_and_command():
    head = lock.LOCK.read_text().split("\n\n")[0]
    assert "CPython 3.11" in head and "x86_64" in head
    assert "make lock" in head
    assert not re.search(r"^-e ", lock.LOCK.read_text(), re.MULTILINE), "the project itself is not pinned"


def test_environment_yml_and_makefile_use_the_lock():
    yml = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s*- python=3\.11\s*$", yml, re.MULTILINE)
    assert "-r requirements.lock" in yml
    assert "torch==" not in yml and "[dev" not in yml, "pins come from the lock only"
    make = (ROOT / "Makefile").read_text()
    stamp = re.search(r"^\$\(STAMP\):(.*)$", make, re.MULTILINE)
    assert stamp and "$(LOCK)" in stamp.group(1)
    assert re.search(r"^LOCK\s*:?=\s*requirements\.lock\s*$", make, re.MULTILINE)
    assert re.search(r"^lock:", make, re.MULTILINE)


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11) or sys.platform != "linux" or platform.machine() != "x86_64",
    reason="the lock is for CPython 3.11 on Linux x86-64",
)
def test_running_environment_is_the_lock():
    """What `make env` installed is exactly the lock (the project itself and pip aside)."""
    pins = lock.pins(lock.LOCK)
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    wrong = {n: (v, installed.get(n)) for n, v in pins.items() if installed.get(n) != v}
    assert wrong == {}, f"installed versions differ from requirements.lock (pinned, installed): {wrong}; run `make env`"
