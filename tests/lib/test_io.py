from pathlib import Path

import pytest

from saliency_lib._io import atomic_write


def test_atomic_write_replaces_and_keeps_the_old_file_on_error(tmp_path):
    p = tmp_path / "sub" / "table.csv"
    atomic_write(p, lambda tmp: Path(tmp).write_text("a\n1\n"))
    assert p.read_text() == "a\n1\n" and oct(p.stat().st_mode & 0o777) == "0o644"

    def broken(tmp):
        Path(tmp).write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(p, broken)
    assert p.read_text() == "a\n1\n"  # untouched
    assert [f.name for f in p.parent.iterdir()] == ["table.csv"]  # no temporary file left behind
