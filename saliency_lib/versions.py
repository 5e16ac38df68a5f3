"""Versions of the packages, and the CPU, that can move the study's numbers.

A result table or a shipped agent records :func:`environment_versions` when it is made; a
reader compares the record with the running environment with :func:`version_differences`.
Both are cheap: the versions come from the installed distributions' metadata
(:mod:`importlib.metadata`), so nothing heavy (torch, scipy) is imported.

Examples
--------
>>> recorded = environment_versions()
>>> version_differences(recorded)
{}
"""

from __future__ import annotations

import platform
import re
from importlib import metadata
from pathlib import Path

#: The distributions whose versions can change a number of the study, by their names on PyPI:
#: the network and its kernels (torch), the arrays and statistics (numpy, scipy), the
#: segmentations and similarity measures (scikit-image), the emulator (gymnasium, ale-py).
TRACKED = ("torch", "numpy", "scipy", "scikit-image", "gymnasium", "ale-py")
#: The library's own distribution name; its version is recorded under this key.
SELF = "saliency-lib"
#: Recorded for a package that is not installed.
MISSING = "not installed"
#: Stands for a package that a record does not name.
NOT_RECORDED = "not recorded"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return MISSING


def _own_version() -> str:
    # The source tree's version wins over the installed metadata: an editable install keeps
    # the metadata of the day it was installed.
    from saliency_lib import __version__

    return __version__


def environment_versions() -> dict[str, str]:
    """The running versions of the packages that can change the study's numbers.

    Returns
    -------
    dict of str to str
        ``{distribution name: version}`` for :data:`TRACKED` (torch, numpy, scipy,
        scikit-image, gymnasium, ale-py) and :data:`SELF` (``"saliency-lib"``, this library),
        in that order. Versions are the installed distributions' own strings, local labels
        included (``"2.13.0+cpu"``); a package that is not installed maps to
        :data:`MISSING`. The dictionary is JSON-serialisable, to store beside a result.

    Notes
    -----
    Reads package metadata only; importing this module or calling the function imports
    none of the tracked packages.
    """
    out = {name: _version(name) for name in TRACKED}
    out[SELF] = _own_version()
    return out


def version_differences(recorded: dict[str, str], running: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    """The packages whose recorded version differs from the running one.

    Parameters
    ----------
    recorded : dict of str to str
        Versions stored with a result, as returned by :func:`environment_versions` when it
        was made (it may name further packages). Keys are distribution names; case, ``_``
        and ``.`` are normalised as on PyPI (``"scikit_image"`` is ``"scikit-image"``).
    running : dict of str to str, optional
        The versions to compare with. Default: :func:`environment_versions` now, plus the
        installed version of every further package that ``recorded`` names.

    Returns
    -------
    dict of str to tuple of (str, str)
        ``{name: (recorded version, running version)}`` for every package whose two
        versions differ, in the order of ``running``, then of the names only ``recorded``
        has. A package that ``recorded`` lacks compares as :data:`NOT_RECORDED`, one that
        ``running`` lacks as :data:`MISSING`. Empty when the environments agree.

    Examples
    --------
    >>> version_differences({"torch": "2.12.0"}, {"torch": "2.13.0+cpu", "numpy": "2.4.6"})
    {'torch': ('2.12.0', '2.13.0+cpu'), 'numpy': ('not recorded', '2.4.6')}
    """
    rec = {_normalise(k): str(v) for k, v in recorded.items()}
    if running is None:
        run = {_normalise(k): v for k, v in environment_versions().items()}
        run.update({k: _version(k) for k in rec if k not in run})
    else:
        run = {_normalise(k): str(v) for k, v in running.items()}
    names = list(run) + [k for k in rec if k not in run]
    pairs = {k: (rec.get(k, NOT_RECORDED), run.get(k, MISSING)) for k in names}
    return {k: p for k, p in pairs.items() if p[0] != p[1]}


def _normalise(name: str) -> str:
    """PEP 503 normalisation of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else what :mod:`platform` knows.

    Benchmarks record it beside their times, and caches of timings key on it: the
    convolution kernels (and so the last bits of a map) and the speed depend on the CPU.
    """
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
