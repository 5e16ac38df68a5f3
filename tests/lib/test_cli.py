import json
import subprocess
import sys

import imageio.v2 as imageio
import numpy as np


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "saliency_lib", *args], capture_output=True, text=True, timeout=timeout)


def test_evaluate_official_prints_one_json_line_and_writes_gif(tmp_path, official_available):
    gif = tmp_path / "play.gif"
    r = _run("evaluate", "official:Breakout", "--episodes", "1", "--seed", "0", "--max-steps", "120", "--gif", str(gif),
             "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1
    res = json.loads(lines[0])
    assert res["episodes"] == 1 and len(res["scores"]) == 1 and res["frames"] == 4 * res["steps"] == 480
    assert {"mean", "std"} <= set(res)
    frames = imageio.mimread(gif)
    assert len(frames) == 60  # every 2nd of 120 steps
    h, w = frames[0].shape[:2]
    assert h == 16 + 210 + 16 and w == 3 * 160 + 2 * 4  # titles | frame, policy mask, value mask | colour scale
    f = np.asarray(frames[30])[..., :3].astype(int)
    body = f[16:226]
    assert np.abs(body[:, 328:488] - body[:, :160]).mean() > 1  # the value-mask overlay changes the picture
    assert f[:16].max() > 128 and f[:16, 168:328].max() > 128  # each panel has a title
    bar = f[226 + 3 + 5, 70:w - 70]  # the colour scale runs from the colormap's dark end to its bright end
    assert bar[:5].max(axis=1).mean() < 60 < 200 < bar[-5:].max(axis=1).mean()


def test_bad_agent_spec_is_a_clear_error(tmp_path):
    r = _run("evaluate", str(tmp_path / "missing"), "--episodes", "1")
    assert r.returncode == 2 and "no agent checkpoint" in r.stderr
    r = _run("evaluate", "official:Pong", "--episodes", "1")
    assert r.returncode == 2 and "no official Mask-A3C checkpoint for 'Pong'" in r.stderr
    r = _run("train", "dqn", "--game", "Pacman", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "unknown game 'Pacman'" in r.stderr
