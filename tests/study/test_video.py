"""Saliency videos: the writer (MP4, GIF), the frame composition, the whole game and the ``video`` command."""

from __future__ import annotations

import json
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
import torch
from torch import nn

from saliency_lib.agents import QAgent
from saliency_lib.video import (
    CHOSEN_RGB,
    VideoWriter,
    action_chart,
    check_video_path,
    map_heat,
    saliency_frame,
    write_saliency_video,
)

DQN_BREAKOUT = Path(__file__).resolve().parents[2] / "data" / "agents" / "dqn-Breakout-s0"
Q_CONST = (0.1, 0.4, 0.9, -0.3)  # the constant agent's Q-values: it always plays action 2 (RIGHT)


class ConstQNet(nn.Module):
    """Q-values that do not depend on the state: every saliency map of it is constant."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4 * 84 * 84, 4)
        with torch.no_grad():
            self.lin.weight.zero_()
            self.lin.bias.copy_(torch.tensor(Q_CONST))

    def forward(self, x):
        return self.lin(x.flatten(1))


@pytest.fixture(scope="module")
def const_agent():
    return QAgent(ConstQNet(), game="Breakout", preset="dqn", n_actions=4)


def _frames(path) -> np.ndarray:
    kw = {"plugin": "FFMPEG"} if str(path).endswith(".mp4") else {}
    return np.asarray(iio.imread(path, index=None, **kw))[..., :3]


def _is_chosen_colour(img: np.ndarray, tol: int = 40) -> np.ndarray:
    return (np.abs(img.astype(int) - np.array(CHOSEN_RGB)) <= tol).all(axis=-1)


# -- the writer ---------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_writer_writes_every_frame_and_reads_back(tmp_path, suffix):
    path = tmp_path / f"v{suffix}"
    # flat colours, one per frame: H.264 keeps them (within rounding), so the order can be checked too
    colours = [(30 * i, 200 - 25 * i, 120) for i in range(7)]
    frames = [np.broadcast_to(np.array(c, np.uint8), (30, 42, 3)).copy() for c in colours]
    with VideoWriter(path, fps=10) as w:
        for f in frames:
            w.append(f)
    assert w.frames == 7
    back = _frames(path)
    assert back.shape[0] == 7
    if suffix == ".mp4":  # padded (black, bottom and right) to H.264's 16-pixel blocks, not resized
        assert back.shape[1:] == (32, 48, 3)
        assert np.abs(back[:, :30, :42].astype(int) - np.stack(frames)).mean(axis=(1, 2, 3)).max() < 6
    else:
        assert back.shape[1:] == (30, 42, 3)
        assert (back == np.stack(frames)).all()
        assert iio.improps(path).shape[1:3] == (30, 42)


def test_writer_leaves_no_file_on_error_or_without_frames(tmp_path):
    path = tmp_path / "v.mp4"
    with pytest.raises(RuntimeError), VideoWriter(path, fps=5) as w:
        w.append(np.zeros((16, 16, 3), np.uint8))
        raise RuntimeError("stop")
    with pytest.raises(ValueError, match="first frame's shape"), VideoWriter(path, fps=5) as w:
        w.append(np.zeros((16, 16, 3), np.uint8))
        w.append(np.zeros((16, 18, 3), np.uint8))
    with pytest.raises(ValueError, match="no frame was written"), VideoWriter(tmp_path / "v.gif", fps=5):
        pass
    with pytest.raises(ValueError, match=r"\(H, W, 3\) uint8"), VideoWriter(path, fps=5) as w:
        w.append(np.zeros((16, 16, 3), np.float32))
    assert list(tmp_path.iterdir()) == []  # neither the video nor a temporary file


@pytest.mark.parametrize("path, match", [("v.avi", "unknown video suffix '.avi'"),
                                         ("v", "has no suffix; the suffix chooses the format: .mp4"),
                                         ("file.txt/v.mp4", "cannot write the video"), ("adir.mp4", "it is a directory")])
def test_bad_video_paths(tmp_path, path, match):
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "adir.mp4").mkdir()
    with pytest.raises(ValueError, match=match):
        check_video_path(tmp_path / path)


@pytest.mark.parametrize("fps", [0, -1.0, float("nan")])
def test_writer_rejects_non_positive_fps(tmp_path, fps):
    with pytest.raises(ValueError, match="fps"):
        VideoWriter(tmp_path / "v.gif", fps=fps)


# -- one frame ----------------------------------------------------------------------------------
def test_overlay_changes_pixels_only_where_the_map_is_high():
    frame = np.full((210, 160, 3), 90, np.uint8)
    names = ("NOOP", "FIRE", "RIGHT", "LEFT")
    values, scale = (0.0, 1.0, 0.5, 0.2), 2

    def left_panel(map84):
        heat, where = map_heat(map84, preset="dqn", game="Breakout")
        img = saliency_frame(frame, heat, values, names, 1, where=where, scale=scale)
        return img[16:16 + 210 * scale, :160 * scale].astype(int)

    constant = left_panel(np.full((84, 84), 3.0, np.float32))
    assert (constant == 90).all()  # a constant map marks nothing: the frame is unchanged
    one_hot = np.zeros((84, 84), np.float32)
    one_hot[42, 20] = 1.0
    hot = left_panel(one_hot)
    r, c = int(42.5 * 210 / 84) * scale, int(20.5 * 160 / 84) * scale  # the pixel's centre on the enlarged frame
    assert np.abs(hot[r - 2:r + 3, c - 2:c + 3] - 90).max() > 60  # changed where the map is high ...
    assert (hot[:r - 20] == 90).all() and (hot[:, c + 20:] == 90).all()  # ... and nowhere far from it


def test_mask_a3c_maps_go_back_through_the_crop():
    heat, where = map_heat(np.ones((80, 80), np.float32) * np.arange(80)[:, None], preset="mask_a3c", game="Breakout")
    assert heat.shape == where.shape == (210, 160)
    assert where.any() and not where.all() and heat[~where].max() == 0.0
    assert heat.min() >= 0.0 and heat.max() == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("values", [(1.0, 3.0, -0.5, 2.0), (0.1, 0.2, 0.6, 0.1), (-4.0, -1.0, -2.0, -3.0)])
def test_bar_chart_highlights_the_argmax_action_with_the_longest_bar(values):
    names = ("NOOP", "FIRE", "RIGHT", "LEFT")
    best = int(np.argmax(values))
    img = action_chart(values, names, best, height=200, width=200)
    chosen = _is_chosen_colour(img, tol=0)
    rows = np.nonzero(chosen.any(axis=1))[0]
    assert rows.size
    row_h = rows.max() - rows.min() + 1
    # the highlighted name and bar lie in one band of rows, apart from the other (grey) bars
    grey = np.nonzero((np.abs(img.astype(int) - 120).sum(-1) == 0).sum(axis=1) >= 5)[0]
    assert grey.size and not np.intersect1d(np.nonzero(chosen.sum(axis=1) >= 5)[0], grey).size
    centres = [np.median(np.nonzero(_is_chosen_colour(action_chart(values, names, k, height=200, width=200), tol=0)
                                    .any(axis=1))[0]) for k in range(4)]
    assert np.all(np.diff(centres) >= row_h)  # action k's band is the k-th from the top, one band per action
    # the longest bar from the zero line is the argmax's where every value is positive
    if min(values) > 0:
        lengths = []
        for k in range(4):
            band_k = action_chart(values, names, k, height=200, width=200)
            lengths.append(int(_is_chosen_colour(band_k, tol=0)[:, 60:].sum()))
        assert int(np.argmax(lengths)) == best


def test_bar_chart_checks_its_inputs():
    with pytest.raises(ValueError, match="one name per value"):
        action_chart((1.0, 2.0), ("a",), 0, height=50, width=50)
    with pytest.raises(ValueError, match=r"chosen must be an action index in \[0, 2\)"):
        action_chart((1.0, 2.0), ("a", "b"), 2, height=50, width=50)


# -- a whole game -------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_video_has_one_frame_per_step_the_constant_map_and_the_argmax_action(tmp_path, const_agent, suffix):
    path = tmp_path / f"ep{suffix}"
    s = write_saliency_video(const_agent, "occlusion", path, max_steps=12, chunk=5, progress=False)
    assert s.frames == 12 and s.lengths == [12] and s.maps_per_second > 0 and s.explain_seconds > 0
    frames = _frames(path)
    assert frames.shape[0] == 12
    h, w = (16 + 420 + 16, 320 + 4 + 200)
    assert frames.shape[1:3] == ((h + 15) // 16 * 16, (w + 15) // 16 * 16) if suffix == ".mp4" else (h, w)
    # the chart's highlighted row is the one of the argmax action (2), as action_chart draws it
    expected = action_chart(Q_CONST, ("NOOP", "FIRE", "RIGHT", "LEFT"), 2, height=420, width=200)
    want = np.median(np.nonzero(_is_chosen_colour(expected, tol=0).any(axis=1))[0])
    chart = frames[5, 16:436, 324:524]
    got = np.nonzero(_is_chosen_colour(chart).sum(axis=1) > 20)[0]
    assert got.size and abs(np.median(got) - want) < 5
    # the constant agent's maps are constant: the game frames are shown as they are (the same game as play_episode's)
    from saliency_lib.play import play_episode

    raw = play_episode(const_agent, seed=0, record=True, max_steps=12).frames
    left = frames[:, 16:436, :320].astype(int)
    expected_left = np.stack([np.repeat(np.repeat(f, 2, axis=0), 2, axis=1) for f in raw]).astype(int)
    assert np.abs(left - expected_left).mean() < (4 if suffix == ".mp4" else 1)


def test_write_gif_uses_the_same_writer(tmp_path, const_agent):
    from saliency_lib.game_video import write_gif

    ep = write_gif(const_agent, str(tmp_path / "play.mp4"), max_steps=10, every=2)
    assert ep.steps == 10 and _frames(tmp_path / "play.mp4").shape[0] == 5
    ep = write_gif(const_agent, str(tmp_path / "play.gif"), max_steps=10, every=2)
    assert _frames(tmp_path / "play.gif").shape[0] == 5
    with pytest.raises(ValueError, match="unknown video suffix"):
        write_gif(const_agent, str(tmp_path / "play.webm"), max_steps=4)


def test_mask_methods_need_an_agent_with_masks(tmp_path, const_agent):
    with pytest.raises(ValueError, match="mask_value.*value attention mask.*only Mask-A3C agents"):
        write_saliency_video(const_agent, "mask_value", tmp_path / "x.gif", max_steps=2, progress=False)
    assert not (tmp_path / "x.gif").exists()


def test_official_mask_a3c_policy_mask_video(tmp_path, official_available):
    from saliency_lib.agents import load_agent

    agent = load_agent("official:Breakout")
    s = write_saliency_video(agent, "mask_policy", tmp_path / "m.gif", max_steps=8, chunk=3, progress=False)
    assert s.frames == 8 and s.forward_passes == 1 and s.method == "mask_policy"
    assert _frames(tmp_path / "m.gif").shape[0] == 8


# -- the command --------------------------------------------------------------------------------
@pytest.fixture
def cli(monkeypatch):
    """``saliency_lib.cli.main`` with the library's own commands only (no entry-point plugins)."""
    import saliency_lib.cli as cli_mod

    monkeypatch.setattr(cli_mod, "entry_points", lambda group: [])
    return cli_mod.main


def test_video_command_writes_the_mp4_and_prints_maps_per_second(tmp_path, cli, capsys):
    out = tmp_path / "ep.mp4"
    rc = cli(["video", str(DQN_BREAKOUT), "--method", "occlusion", "--out", str(out), "--max-steps", "6", "--quiet", "--json"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    lines = [ln for ln in cap.out.splitlines() if ln.strip()]
    assert len(lines) == 1
    res = json.loads(lines[0])
    assert res["frames"] == 6 and res["method"] == "occlusion" and res["maps_per_second"] > 0
    assert "maps/s" in cap.err
    assert _frames(out).shape[0] == 6


@pytest.mark.parametrize("args, message", [
    (["--method", "occlusoin"], "unknown method 'occlusoin'; did you mean 'occlusion'"),
    (["--method", "mask_policy"], "method 'mask_policy' explains with the agent's policy attention mask"),
    (["--out", "{tmp}/ep.avi"], "unknown video suffix '.avi'"),
    (["--out", "{tmp}/file.txt/ep.mp4"], "cannot write the video"),
    (["--max-steps", "0"], "--max-steps must be an integer >= 1, got 0"),
    (["--max-steps", "-5"], "--max-steps must be an integer >= 1, got -5"),
    (["--fps", "0"], "--fps must"),
    (["--fps", "-2"], "--fps must"),
    (["--episodes", "0"], "--episodes must be an integer >= 1"),
    (["--agent", "{tmp}/missing"], "no agent checkpoint"),
])
def test_each_bad_input_is_one_line_and_exit_code_2(tmp_path, cli, capsys, args, message):
    (tmp_path / "file.txt").write_text("x")
    opts = {"--agent": str(DQN_BREAKOUT), "--method": "occlusion", "--out": str(tmp_path / "ep.mp4"), "--max-steps": "3"}
    for k, v in zip(args[::2], args[1::2]):
        opts[k] = v.format(tmp=tmp_path)
    agent = opts.pop("--agent")
    argv = ["video", agent, *[x for kv in opts.items() for x in kv], "--quiet"]
    rc = cli(argv)
    cap = capsys.readouterr()
    assert rc == 2
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cap.err, cap.err
    assert lines[0].startswith("saliency-study: error: ") and message in lines[0], lines[0]
    assert cap.out == "" and not (tmp_path / "ep.mp4").exists()
