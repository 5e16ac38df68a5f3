"""Regenerate ``requirements.lock`` from ``pyproject.toml`` (``make lock``).

The lock pins every package that ``make env`` installs, for Linux x86-64 and CPython 3.11,
with ``uv pip compile``. Its header records a hash of the dependency lists it was made from
(``project.dependencies`` and the optional-dependency groups in :data:`EXTRAS`);
``tests/lib/test_lock.py`` fails when ``pyproject.toml``'s lists change and the lock was not
regenerated.

Existing pins are kept unless ``--upgrade`` is given (uv prefers the versions already in the
output file), so regenerating after adding a dependency changes only what it must.

torch is pinned as its CPU build (``torch==2.13.0+cpu``), which is not on PyPI: uv and pip
find it through ``--find-links`` (this machine: ``/opt/wheels``; elsewhere PyTorch's CPU
wheel page, see the Makefile's ``TORCH_FIND_LINKS``). PyPI's ``torch==2.13.0`` is the CUDA
build and pulls several GB of ``nvidia-*`` packages.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"
#: The optional-dependency groups that ``make env`` installs, in the lock.
EXTRAS = ("dev", "book", "captum", "ray", "objects")
#: Requirements that replace what a package declares (``uv pip compile --override``). OCAtari 2.2.1
#: declares numpy<2, which its RAM arithmetic needs only on uint8 RAM (saliency_lib.objects passes
#: int64; tests/fixtures/ocatari_objects.json proves the objects equal numpy 1.26's). Quantus declares
#: opencv-python, whose cv2 would overwrite opencv-python-headless's: a never-true marker drops it.
OVERRIDES = ("numpy>=1.24", "opencv-python; sys_platform == 'never'")
#: The lock's target: uv resolves for this interpreter and platform, whatever runs it.
PYTHON_VERSION = "3.11"
PYTHON_PLATFORM = "x86_64-manylinux_2_28"
HASH_KEY = "pyproject-deps-sha256"
_HASH_LINE = re.compile(rf"^#\s*{HASH_KEY}:\s*([0-9a-f]{{64}})\s*$", re.MULTILINE)


def _load_toml(path: Path) -> dict:
    import tomllib  # Python >= 3.11, the lock's target

    with open(path, "rb") as f:
        return tomllib.load(f)


def dependency_lists(pyproject: Path = PYPROJECT, extras: tuple[str, ...] = EXTRAS) -> dict:
    """The lock's inputs: ``project.dependencies`` and the chosen optional groups.

    Each requirement is stripped of white space and each list sorted, so reformatting or
    reordering ``pyproject.toml`` does not make the lock stale; any change of a name, bound,
    marker or extra does.

    Parameters
    ----------
    pyproject : Path
        The ``pyproject.toml`` to read.
    extras : tuple of str
        The optional-dependency groups the lock covers. A group missing from
        ``pyproject.toml`` is recorded as absent (``None``).

    Returns
    -------
    dict
        ``{"dependencies": [...], "optional-dependencies": {extra: [...] or None}}``.
    """
    project = _load_toml(pyproject)["project"]
    optional = project.get("optional-dependencies", {})

    def norm(reqs):
        return sorted("".join(r.split()) for r in reqs)

    return {
        "dependencies": norm(project.get("dependencies", [])),
        "optional-dependencies": {e: (norm(optional[e]) if e in optional else None) for e in extras},
    }


def dependency_hash(pyproject: Path = PYPROJECT, extras: tuple[str, ...] = EXTRAS) -> str:
    """SHA-256 (hex) of :func:`dependency_lists`, as stored in the lock's header.

    Parameters
    ----------
    pyproject : Path
        The ``pyproject.toml`` to read.
    extras : tuple of str
        The optional-dependency groups the lock covers.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    blob = json.dumps(dependency_lists(pyproject, extras), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def recorded_hash(lock: Path = LOCK) -> str | None:
    """The dependency hash written in the lock's header, or ``None`` if it has none."""
    m = _HASH_LINE.search(Path(lock).read_text())
    return m.group(1) if m else None


def pins(lock: Path = LOCK) -> dict[str, str]:
    """The lock's pins as ``{normalised name: version}`` (``==`` lines only)."""
    out = {}
    for line in Path(lock).read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if m:
            out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


def header(pyproject: Path = PYPROJECT) -> str:
    return (
        f"# Exact versions of everything `make env` installs: CPython {PYTHON_VERSION}, Linux x86-64"
        f" ({PYTHON_PLATFORM}).\n"
        "# Regenerate with `make lock` (`make lock UPGRADE=1` to move every pin); never edit by hand.\n"
        f"# Inputs: pyproject.toml's project.dependencies and the extras {', '.join(EXTRAS)};\n"
        f"# overrides (scripts/lock.py): {'; '.join(OVERRIDES)}. Install with --no-deps: the lock is complete.\n"
        f"# {HASH_KEY}: {dependency_hash(pyproject)}\n"
        "# torch is the CPU build, found through --find-links (Makefile: TORCH_FIND_LINKS), not PyPI.\n"
    )


def find_uv() -> str:
    here = Path(sys.executable).parent / "uv"
    found = str(here) if here.exists() else shutil.which("uv")
    if not found:
        sys.exit("uv not found: `.venv/bin/python -m pip install uv` (it is in the dev extra)")
    return found


def compile_lock(
    lock: Path = LOCK,
    pyproject: Path = PYPROJECT,
    find_links: list[str] = (),
    upgrade: bool = False,
    uv: str | None = None,
) -> None:
    """Run ``uv pip compile`` into ``lock`` and write the header with the dependency hash."""
    cmd = [uv or find_uv(), "pip", "compile", str(pyproject)]
    for e in EXTRAS:
        cmd += ["--extra", e]
    cmd += [
        "--python-version", PYTHON_VERSION,
        "--python-platform", PYTHON_PLATFORM,
        "--custom-compile-command", "make lock",
        "--no-config",
        "--quiet",
        "-o", str(lock),
    ]  # fmt: skip
    for link in find_links:
        cmd += ["--find-links", link]
    if upgrade:
        cmd.append("--upgrade")
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as overrides:
        overrides.write("\n".join(OVERRIDES) + "\n")
        overrides.flush()
        subprocess.run([*cmd, "--override", overrides.name], check=True, cwd=pyproject.parent)
    body = Path(lock).read_text()
    Path(lock).write_text(header(pyproject) + body)
    p = pins(lock)
    if p.get("torch", "").split("+")[-1] != "cpu" or any(n.startswith("nvidia-") for n in p):
        sys.exit(
            f"{lock}: torch resolved to {p.get('torch')!r} (CUDA build?); pass the CPU wheel's"
            " location with --find-links (Makefile: TORCH_FIND_LINKS)"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--find-links", nargs="*", default=[], help="where torch's CPU wheel lies")
    ap.add_argument("--upgrade", action="store_true", help="move every pin to the newest allowed version")
    ap.add_argument("--uv", default=None, help="the uv executable (default: beside this Python, then PATH)")
    ap.add_argument("--check", action="store_true", help="only check the lock's hash against pyproject.toml")
    args = ap.parse_args(argv)
    if args.check:
        ok = recorded_hash(LOCK) == dependency_hash(PYPROJECT)
        print("lock is current" if ok else "lock is stale: run `make lock`")
        return 0 if ok else 1
    compile_lock(find_links=[f for f in args.find_links if f], upgrade=args.upgrade, uv=args.uv)
    print(f"wrote {LOCK.relative_to(ROOT)} ({len(pins(LOCK))} pins)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
