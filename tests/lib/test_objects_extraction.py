"""Objects from the RAM (OCAtari): equality with OCAtari under NumPy 1.26, the box mapping, RAM recording."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import ale_py
import cv2
import gymnasium as gym
import numpy as np
import pytest
import torch

from saliency_lib.envs import make_env, process_mask_a3c_frame, ram_stack
from saliency_lib.games import mask_a3c_crop
from saliency_lib.objects import (
    OBJECT_GAMES,
    RamObjectReader,
    StateObjects,
    box_mask,
    frame_objects,
    map_box,
    objects_from_ram,
    objects_table,
    state_objects,
)
from saliency_lib.states import StateSet, collect_states

gym.register_envs(ale_py)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ocatari_objects.json"
ROOT = Path(__file__).resolve().parents[2]


def _fixture() -> dict:
    return json.loads(FIXTURE.read_text())


def _records(game_fx: dict) -> dict[int, dict]:
    """The fixture's records with the ``0`` ("as before") entries filled in."""
    out, prev = {}, {}
    for t in sorted(game_fx["records"], key=int):
        rec = {c: (prev[c] if boxes == 0 else boxes) for c, boxes in game_fx["records"][t].items()}
        out[int(t)] = prev = rec
    return out


def _as_record(objs) -> dict[str, list[int]]:
    rec: dict[str, list[int]] = {}
    for o in objs:
        rec.setdefault(o.cls, []).extend([o.x, o.y, o.w, o.h])
    return rec


def _trajectory(game: str, fx: dict):
    """Replay the fixture's trajectory: yields ``(step, RAM, reset)`` after the first reset (step −1)
    and after every emulator step; ``reset``: the step ended the game, and the RAM is the new game's."""
    proto = fx["protocol"]
    actions = fx["games"][game]["actions"]
    env = gym.make(f"{game}NoFrameskip-v4")
    try:
        env.reset(seed=proto["reset_seed"])
        yield -1, env.unwrapped.ale.getRAM(), True
        for t in range(proto["steps"]):
            _, _, term, trunc, _ = env.step(actions[t // proto["hold"]])
            reset = term or trunc
            if reset:
                env.reset()
            yield t, env.unwrapped.ale.getRAM(), reset
    finally:
        env.close()


@pytest.mark.parametrize("game", OBJECT_GAMES)
def test_reader_equals_ocatari_under_numpy_1_26(game):
    # the fixture is OCAtari 2.2.1 run as released (uint8 RAM) under NumPy 1.26
    # (scripts/make_ocatari_fixture.py); ours passes the RAM as int64 under NumPy 2
    fx = _fixture()
    assert fx["versions"]["numpy"].startswith("1.26") and fx["versions"]["ocatari"] == "2.2.1"
    expected = _records(fx["games"][game])
    assert len(expected) >= 100 and fx["protocol"]["steps"] >= 500
    reader = RamObjectReader(game)
    n = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        for t, ram, reset in _trajectory(game, fx):
            if reset:
                reader.reset()
            got = reader.read(ram)
            if t in expected:
                assert _as_record(got) == expected[t], f"{game} step {t}"
                n += 1
    assert n == len(expected)
    hud = {o.cls for o in got if o.hud}
    assert hud <= set(fx["games"][game]["hud_classes"])


def test_uint8_ram_is_what_breaks_ocatari_under_numpy_2():
    # the reason for the int64 RAM: OCAtari's own uint8 arithmetic fails on Ms. Pac-Man's score
    from saliency_lib.objects.extraction import _ocatari

    ext = _ocatari()
    fx = _fixture()
    ram = next(r for t, r, _ in _trajectory("MsPacman", fx) if t == 300)
    objs = ext.init_objects("MsPacman", True)
    with pytest.raises(OverflowError):
        ext.detect_objects_ram(objs, ram, "MsPacman", True)
    RamObjectReader("MsPacman").read(ram)  # int64: fine


@pytest.mark.parametrize("game", ["SpaceInvaders", "MsPacman"])
def test_objects_from_ram_do_not_depend_on_history(game):
    # a reader that has followed the game and then reads the same RAM until it settles gives the
    # same objects as a fresh one: the objects of a frame depend on its RAM alone
    fx = _fixture()
    reader = RamObjectReader(game)
    checked = differs_from_cadence = 0
    for t, ram, reset in _trajectory(game, fx):
        if reset:
            reader.reset()
        once = reader.read(ram)
        if t % 7 == 0:
            settled = [reader.read(ram) for _ in range(4)]
            fresh = objects_from_ram(game, ram)
            if settled[-1] == settled[-2]:
                assert fresh == settled[-1], f"{game} step {t}"
            else:  # a cycle of two reader states: the union over it contains both reads
                for o in settled[-1] + settled[-2]:
                    f = next(p for p in fresh if p.slot == o.slot)
                    assert f.x <= o.x and f.y <= o.y and f.x + f.w >= o.x + o.w and f.y + f.h >= o.y + o.h
            differs_from_cadence += fresh != once
            checked += 1
    assert checked > 100
    if game == "SpaceInvaders":  # OCAtari's one-step cadence shows some bullets a frame late or early
        assert differs_from_cadence > 0


def test_reader_rejects_a_bad_ram_and_game():
    with pytest.raises(ValueError, match="128 integers"):
        RamObjectReader("Breakout").read(np.zeros(100, dtype=np.uint8))
    with pytest.raises(ValueError, match="128 integers"):
        RamObjectReader("Breakout").read(np.full(128, 300))
    with pytest.raises(ValueError, match="objects are read for"):
        RamObjectReader("Pong")
    with pytest.raises(ValueError, match="unknown game"):
        RamObjectReader("Tetris")
    with pytest.raises(ValueError, match=r"\(R, 128\)"):
        frame_objects("Breakout", np.zeros(128))


def test_frame_objects_skip_the_zero_frames_of_a_reset_and_union_the_pooled_pair():
    fx = _fixture()
    rams = [ram.copy() for t, ram, _ in _trajectory("Breakout", fx) if 400 <= t <= 401]
    assert frame_objects("Breakout", np.full((2, 128), -1)) == []
    a, b = (objects_from_ram("Breakout", r) for r in rams)
    both = frame_objects("Breakout", np.stack(rams))
    ball = [o for o in both if o.cls == "Ball"]
    balls = [o for o in a + b if o.cls == "Ball"]
    assert len(ball) == 1 and balls
    for o in balls:  # the union holds each raw frame's ball
        assert ball[0].x <= o.x and ball[0].x + ball[0].w >= o.x + o.w and ball[0].y <= o.y and ball[0].y + ball[0].h >= o.y + o.h


# -- the box mapping ----------------------------------------------------------------------------------
def _support_bbox(img: np.ndarray):
    ys, xs = np.nonzero(img > 1e-6)
    return (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1) if len(ys) else None


@pytest.mark.parametrize("game", OBJECT_GAMES)
def test_map_box_is_the_support_of_the_box_after_preprocessing(game):
    rng = np.random.default_rng(0)
    for _ in range(40):
        x0, y0 = int(rng.integers(0, 159)), int(rng.integers(0, 209))
        box = (x0, y0, x0 + int(rng.integers(1, 12)), y0 + int(rng.integers(1, 12)))
        ind = np.zeros((210, 160), dtype=np.float32)
        ind[box[1]:box[3], box[0]:box[2]] = 1.0
        # dqn: WarpGray84's resize on the indicator; in float, every influenced pixel is > 0
        assert map_box(box, "dqn", game) == _support_bbox(cv2.resize(ind, (84, 84), interpolation=cv2.INTER_AREA))
        # uint8 frames (as the env) lose faint edges to rounding, never gain pixels outside the box
        u8 = cv2.resize((ind * 255).astype(np.uint8), (84, 84), interpolation=cv2.INTER_AREA)
        got = _support_bbox(u8.astype(np.float32))
        if got is not None:
            m = map_box(box, "dqn", game)
            assert m[0] <= got[0] and m[1] <= got[1] and m[2] >= got[2] and m[3] >= got[3]
        # mask_a3c: the crop and both bilinear resizes of process_mask_a3c_frame
        rgb = np.repeat((ind * 255).astype(np.uint8)[..., None], 3, axis=2)
        assert map_box(box, "mask_a3c", game) == _support_bbox(process_mask_a3c_frame(rgb, mask_a3c_crop(game))[0])


def test_map_box_edges():
    assert map_box((0, 0, 160, 210), "dqn", "Breakout") == (0, 0, 84, 84)
    assert map_box((-5, -5, 0, 3), "dqn", "Breakout") is None  # empty after clipping
    c1 = mask_a3c_crop("SpaceInvaders")[0]
    assert map_box((10, 0, 20, c1), "mask_a3c", "SpaceInvaders") is None  # above the crop
    m = box_mask([(1, 2, 3, 5), None], (6, 6))
    assert m.sum() == 6 and m[2:5, 1:3].all()


# -- real states: ball and paddle -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def breakout_states():
    from saliency_lib.agents import load_agent

    agent = load_agent(str(ROOT / "data" / "agents" / "dqn-Breakout-s0"))
    plain = collect_states(agent, 60, seed=0)
    ss = collect_states(agent, 60, seed=0, frames=True, rams=True)
    return plain, ss, state_objects(ss)


def test_recording_the_ram_changes_no_state(breakout_states, tmp_path):
    plain, ss, _ = breakout_states
    assert torch.equal(plain.states, ss.states) and torch.equal(plain.actions, ss.actions)
    assert ss.rams.shape == (60, 4, 2, 128) and ss.rams.dtype == np.int16 and (ss.rams >= 0).all()
    back = StateSet.load(ss.save(tmp_path / "s.pt"))
    np.testing.assert_array_equal(back.rams, ss.rams)
    np.testing.assert_array_equal(ss.subset([3, 1]).rams, ss.rams[[3, 1]])
    old = StateSet.load(plain.save(tmp_path / "plain.pt"))  # a set without RAM loads with rams=None
    assert old.rams is None
    with pytest.raises(ValueError, match="rams=True"):
        state_objects(plain)


def _band(lo_row: int, hi_row: int) -> tuple[int, int]:
    """Preprocessed rows strictly inside the raw rows [lo_row, hi_row) (no blending with outside rows)."""
    b = map_box((8, lo_row, 152, hi_row), "dqn", "Breakout")
    inner = (map_box((8, lo_row, 152, lo_row + 1), "dqn", "Breakout")[3],
             map_box((8, hi_row - 1, 152, hi_row), "dqn", "Breakout")[1])
    return max(b[1], inner[0]), min(b[3], inner[1])


def test_ball_box_holds_the_ball_pixels_on_preprocessed_frames(breakout_states):
    _, ss, objs = breakout_states
    walls = box_mask([map_box(b, "dqn", "Breakout") for b in [(0, 17, 8, 196), (152, 17, 160, 196)]], (84, 84))
    r0, r1 = _band(94, 189)  # between the lowest brick row and the paddle row
    balls = 0
    for i, so in enumerate(objs):
        for k in range(4):
            frame = ss.states[i, k].numpy()
            lit = np.zeros_like(walls)
            lit[r0:r1] = frame[r0:r1] > 0
            lit &= ~walls
            ball = so.select(cls="Ball", frames=[k])
            if ball:
                inside = box_mask([ball[0].box], (84, 84))
                assert not (lit & ~inside).any(), f"state {i} frame {k}: ball pixels outside its box"
                balls += bool((lit & inside).any())
            else:
                assert not lit.any(), f"state {i} frame {k}: lit pixels in the play band but no ball"
    assert balls > 100


def test_paddle_box_lies_on_the_paddle_row(breakout_states):
    _, ss, objs = breakout_states
    rows = map_box((8, 189, 152, 193), "dqn", "Breakout")  # the paddle's raw rows 189-192
    for i, so in enumerate(objs):
        for k in range(4):
            (pad,) = so.select(cls="Player", frames=[k])
            assert (pad.box[1], pad.box[3]) == (rows[1], rows[3])
            frame = ss.states[i, k].numpy()
            x0, _, x1, _ = pad.box
            row = frame[rows[1] + 1:rows[3] - 1, 5:79]  # inner rows of the paddle row, inside the walls
            lit = np.flatnonzero(row.max(axis=0) > 0) + 5
            assert lit.size and lit.min() >= x0 and lit.max() < x1
    cls_hud = {(o.cls, o.hud) for so in objs for o in so.objects}
    assert {("Ball", False), ("Player", False), ("Block", False), ("PlayerScore", True)} <= cls_hud


def test_objects_table_rows(breakout_states):
    _, _, objs = breakout_states
    df = objects_table(objs[:3], state_ids=[10, 11, 12])
    assert list(df["state"].unique()) == [10, 11, 12]
    assert len(df) == sum(len(so.objects) for so in objs[:3])
    ball = df[(df.cls == "Ball") & (df.state == 10) & (df.frame == 3)].iloc[0]
    (fo,) = objs[0].select(cls="Ball", frames=[3])
    assert (ball.x0, ball.y0, ball.x1, ball.y1) == fo.box
    with pytest.raises(ValueError, match="one id per state"):
        objects_table(objs[:3], state_ids=[1])


def test_mask_a3c_states_ball_box_holds_the_ball_pixels():
    from saliency_lib.agents import load_agent

    agent = load_agent(str(ROOT / "data" / "agents" / "a3c-Breakout-double-s0"))
    ss = collect_states(agent, 40, seed=0, frames=True, rams=True)
    assert torch.equal(ss.states, collect_states(agent, 40, seed=0).states)
    objs = state_objects(ss)
    assert all(isinstance(so, StateObjects) and so.n_frames == 1 and so.shape == (80, 80) for so in objs)
    crop, seen = mask_a3c_crop("Breakout"), 0
    for i, so in enumerate(objs):
        red = (ss.frames[i] == np.array([200, 72, 72])).all(-1)
        red[:94] = False
        red[189:] = False
        img = np.zeros_like(ss.frames[i])
        img[red] = 255
        lit = process_mask_a3c_frame(img, crop)[0] > 1e-6
        if lit.any():
            (ball,) = so.select(cls="Ball")
            assert not (lit & ~box_mask([ball.box], (80, 80))).any()
            seen += 1
    assert seen > 20


def test_env_ram_stack_marks_the_zero_frames_and_follows_the_emulator():
    env = make_env("Breakout", "dqn", mode="eval", record_ram=True)
    try:
        env.reset(seed=0)
        st = ram_stack(env)
        assert st.shape == (4, 2, 128) and (st[:3] == -1).all() and (st[3] >= 0).all()
        for _ in range(3):
            env.step(0)
        st = ram_stack(env)
        assert (st >= 0).all()
        np.testing.assert_array_equal(st[3, 1], env.unwrapped.ale.getRAM())  # newest frame, last raw frame
    finally:
        env.close()
    plain = make_env("Breakout", "dqn", mode="eval")
    try:
        plain.reset(seed=0)
        with pytest.raises(AttributeError):
            ram_stack(plain)
    finally:
        plain.close()
