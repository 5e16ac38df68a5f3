"""saliency_lib.versions: the recorded package versions and their differences from the running ones."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

from saliency_lib import __version__, versions
from saliency_lib.versions import MISSING, NOT_RECORDED, TRACKED, cpu_model, environment_versions, version_differences


def test_environment_versions_names_and_values():
    v = environment_versions()
    assert list(v) == [*TRACKED, "saliency-lib"]
    assert set(TRACKED) == {"torch", "numpy", "scipy", "scikit-image", "gymnasium", "ale-py"}
    assert v["saliency-lib"] == __version__
    assert v["numpy"] == metadata.version("numpy")
    assert v["torch"].startswith("2.13.0")  # the pinned CPU build, local label kept
    assert json.loads(json.dumps(v)) == v  # storable beside a result


def test_environment_versions_imports_nothing_heavy():
    code = (
        "import sys; from saliency_lib.versions import environment_versions; environment_versions(); "
        "print([m for m in ('torch', 'numpy', 'scipy', 'skimage', 'gymnasium', 'ale_py') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_differences_against_itself():
    assert version_differences(environment_versions()) == {}


def test_differences_name_the_changed_packages():
    running = {"torch": "2.13.0+cpu", "numpy": "2.4.6", "scikit-image": "0.26.0", "saliency-lib": "0.1.0"}
    recorded = {"torch": "2.12.0", "numpy": "2.4.6", "Scikit_Image": "0.25.2", "saliency-lib": "0.1.0"}
    assert version_differences(recorded, running) == {
        "torch": ("2.12.0", "2.13.0+cpu"),
        "scikit-image": ("0.25.2", "0.26.0"),
    }


def test_differences_on_one_side_only():
    running = {"torch": "2.13.0+cpu", "numpy": "2.4.6"}
    recorded = {"torch": "2.13.0+cpu", "lime": "0.2.0.1"}
    assert version_differences(recorded, running) == {
        "numpy": (NOT_RECORDED, "2.4.6"),
        "lime": ("0.2.0.1", MISSING),
    }


def test_default_running_looks_up_extra_recorded_packages():
    # a record may carry packages beyond TRACKED; they compare with their installed version
    recorded = dict(environment_versions(), pytest=metadata.version("pytest"), **{"no-such-dist-xyz": "1.0"})
    assert version_differences(recorded) == {"no-such-dist-xyz": ("1.0", MISSING)}


def test_cpu_model_reads_cpuinfo_and_falls_back_to_platform(monkeypatch, tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU @ 1.00GHz\nflags\t: fpu\n")
    real = versions.Path
    monkeypatch.setattr(versions, "Path", lambda p: real(info) if p == "/proc/cpuinfo" else real(p))
    assert cpu_model() == "Test CPU @ 1.00GHz"
    monkeypatch.setattr(versions, "Path", lambda p: real(tmp_path / "missing"))
    monkeypatch.setattr(versions.platform, "processor", lambda: "")
    monkeypatch.setattr(versions.platform, "machine", lambda: "x86_64")
    assert cpu_model() == "x86_64"
