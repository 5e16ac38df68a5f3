"""Object interventions: removal paints an object over with its background; effects and faithfulness."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from saliency_lib.agents import QAgent
from saliency_lib.objects import FrameObject, SceneObject, StateObjects, box_mask, map_box, state_objects
from saliency_lib.objects.interventions import object_effects, object_faithfulness, object_mass, remove_object

ROOT = Path(__file__).resolve().parents[2]


def _fo(frame, slot, box, cls="Thing", hud=False):
    return FrameObject(frame, SceneObject(cls, slot, 0, 0, 1, 1, hud), box)


def _state(k=4, value=0.2):
    return torch.full((k, 84, 84), value)


def test_a_box_that_shows_only_background_is_left_unchanged():
    x = _state()
    x[:, 60:70, 10:30] = 0.7  # some other scenery, away from the box
    so = StateObjects("Breakout", "dqn", 4, tuple(_fo(k, 3, (40, 40, 46, 44)) for k in range(4)))
    out = remove_object(x, so, 3)
    assert torch.equal(out, x) and out is not x
    # and with a one-frame state (no other frame to copy from: the frame's background colour)
    so1 = StateObjects("Breakout", "mask_a3c", 1, (_fo(0, 3, (40, 40, 46, 44)),))
    x1 = torch.full((1, 80, 80), -0.3)
    assert torch.equal(remove_object(x1, so1, 3), x1)


def test_a_moving_object_is_replaced_by_what_the_other_frames_show_behind_it():
    x = _state()
    x[:, 30:34, :] = 0.5  # a stripe of scenery that the object crosses
    boxes = [(10 + 6 * k, 28, 14 + 6 * k, 36) for k in range(4)]
    for k, (x0, y0, x1, y1) in enumerate(boxes):
        x[k, y0:y1, x0:x1] = 1.0
    so = StateObjects("Breakout", "dqn", 4, tuple(_fo(k, 1, b) for k, b in enumerate(boxes)))
    out = remove_object(x, so, 1)
    clean = _state()
    clean[:, 30:34, :] = 0.5
    assert torch.equal(out, clean)


def test_a_static_object_is_filled_with_the_background_colour_outside_the_objects():
    x = _state(value=0.1)
    x[:, 20:24, 20:30] = 0.9  # the object, in every frame
    x[:, 24:60, 20:30] = 0.6  # a large neighbouring object: not background although it surrounds the first
    x[:, 19, 19:31] = 0.5  # a thin border around the object: no object, but not the frame's background either
    so = StateObjects("Breakout", "dqn", 4, tuple(_fo(k, 2, (20, 20, 30, 24)) for k in range(4))
                      + tuple(_fo(k, 5, (20, 24, 30, 60)) for k in range(4)))
    out = remove_object(x, so, 2)
    assert torch.allclose(out[:, 20:24, 20:30], torch.tensor(0.1))
    assert torch.equal(out[:, 24:], x[:, 24:]) and torch.equal(out[:, :20], x[:, :20])


def test_the_zero_frames_of_a_reset_are_no_source_of_background():
    x = _state()
    x[:2] = 0.0  # frames 0 and 1: the zeros of a reset
    x[3, 40:44, 40:44] = 1.0  # the object in frame 3 only
    x[2, 40:44, 40:44] = 0.2
    so = StateObjects("Breakout", "dqn", 4, (_fo(3, 1, (40, 40, 44, 44)),), empty_frames=(0, 1))
    out = remove_object(x, so, 1)
    assert torch.allclose(out[3, 40:44, 40:44], torch.tensor(0.2))  # copied from frame 2, not from the zeros


def test_remove_object_rejects_bad_input():
    so = StateObjects("Breakout", "dqn", 4, (_fo(3, 1, (40, 40, 44, 44)),))
    with pytest.raises(ValueError, match="shape"):
        remove_object(torch.zeros(1, 84, 84), so, 1)
    with pytest.raises(ValueError, match="no box"):
        remove_object(_state(), so, 7)
    assert isinstance(remove_object(_state().numpy(), so, 1), np.ndarray)


class _Linear(nn.Module):
    """Q_0 = Σ w·x over the newest frame, Q_1 = c."""

    def __init__(self, w: torch.Tensor, c: float):
        super().__init__()
        self.register_buffer("w", w)
        self.c = nn.Parameter(torch.tensor(c))

    def forward(self, x):
        q0 = (x[:, 3] * self.w).flatten(1).sum(1)
        return torch.stack([q0, self.c.expand_as(q0)], dim=1)


def _scene():
    """Three static objects on a 0 background: A (weight 1), B (weight 0.2), C (weight 0), each 4×4 of value 1."""
    boxes = {0: (10, 10, 14, 14), 1: (40, 40, 44, 44), 2: (70, 20, 74, 24)}
    x = torch.zeros(1, 4, 84, 84)
    w = torch.zeros(84, 84)
    for slot, (x0, y0, x1, y1) in boxes.items():
        x[0, :, y0:y1, x0:x1] = 1.0
        w[y0:y1, x0:x1] = {0: 1.0, 1: 0.2, 2: 0.0}[slot]
    objs = tuple(_fo(k, slot, b, cls="ABC"[slot]) for k in range(4) for slot, b in boxes.items())
    objs += tuple(_fo(k, 9, (0, 0, 84, 3), cls="Score", hud=True) for k in range(4))
    agent = QAgent(_Linear(w, c=16.0 * 1.0 + 16 * 0.2 - 10.0), game="Breakout", preset="dqn", n_actions=2)
    return agent, x, StateObjects("Breakout", "dqn", 4, objs), boxes


def test_object_effects_known_answer():
    agent, x, so, _ = _scene()
    eff = object_effects(agent, x, [so], state_ids=[5]).set_index("slot")
    assert list(eff.index) == [0, 1, 2]  # the HUD score is not removed by default
    # Q_0 = 16·1 + 16·0.2 = 19.2 > c = 9.2: action 0; removing A drops Q_0 by 16 below c
    np.testing.assert_allclose(eff["delta"], [16.0, 3.2, 0.0], atol=1e-5)
    assert eff["action_changed"].tolist() == [True, False, False]
    assert (eff["target"] == 0).all() and (eff["state"] == 5).all() and (eff["output"] == "q").all()
    assert eff.loc[0, "area"] == 16 and eff.loc[0, "cls"] == "A" and not eff["unchanged"].any()
    with_hud = object_effects(agent, x, [so], hud=True)
    assert 9 in set(with_hud["slot"])
    with pytest.raises(ValueError, match="one StateObjects per state"):
        object_effects(agent, x, [so, so])


def test_object_faithfulness_known_answer():
    agent, x, so, boxes = _scene()
    eff = object_effects(agent, x, [so])
    good = np.zeros((1, 84, 84))
    bad = np.zeros((1, 84, 84))
    for slot, (x0, y0, x1, y1) in boxes.items():
        good[0, y0:y1, x0:x1] = {0: 3.0, 1: 2.0, 2: 1.0}[slot]
        bad[0, y0:y1, x0:x1] = {0: 1.0, 1: 2.0, 2: 3.0}[slot]
    f_good = object_faithfulness(good, [so], eff).iloc[0]
    f_bad = object_faithfulness(bad, [so], eff).iloc[0]
    assert f_good["faithfulness"] == pytest.approx(1.0) and f_bad["faithfulness"] == pytest.approx(-1.0)
    assert f_good["top_changes"] == 1.0 and f_bad["top_changes"] == 0.0
    assert f_good["random_changes"] == pytest.approx(1 / 3) and f_good["n_objects"] == 3
    # a flat map carries no ranking: NaN correlation; the tie of all objects counts their mean
    flat = object_faithfulness(np.ones((1, 84, 84)), [so], eff).iloc[0]
    assert np.isnan(flat["faithfulness"]) and flat["top_changes"] == pytest.approx(1 / 3)
    # too few objects: NaN
    assert np.isnan(object_faithfulness(good, [so], eff[eff.slot != 2]).iloc[0]["faithfulness"])
    # mean and sum of the saliency over an object's pixels
    np.testing.assert_allclose(object_mass(good[0], so, [0, 2], baseline="zero"), [3.0, 1.0])
    np.testing.assert_allclose(object_mass(good[0], so, [0, 2], baseline="zero", reduce="sum"), [48.0, 16.0])
    with pytest.raises(ValueError, match="reduce"):
        object_mass(good[0], so, [0], reduce="max")


def test_removing_the_ball_leaves_no_ball_pixels_in_breakout_states():
    from saliency_lib.agents import load_agent
    from saliency_lib.states import collect_states

    agent = load_agent(str(ROOT / "data" / "agents" / "dqn-Breakout-s0"))
    ss = collect_states(agent, 40, seed=0, rams=True).subset(slice(10, 40))
    objs = state_objects(ss)
    walls = box_mask([map_box(b, "dqn", "Breakout") for b in [(0, 17, 8, 196), (152, 17, 160, 196)]], (84, 84))
    band = np.zeros((84, 84), dtype=bool)
    band[39:75] = True  # rows strictly between the bricks (raw row 93) and the paddle (raw row 189)
    removed = 0
    for i, so in enumerate(objs):
        ball = so.select(cls="Ball")
        if not ball:
            continue
        out = remove_object(ss.states[i], so, ball[0].slot).numpy()
        for k in range(4):
            assert not ((out[k] > 0) & band & ~walls).any(), f"state {i} frame {k}"
        removed += 1
        outside = ~so.mask(cls="Ball")
        assert np.array_equal(out[:, outside], ss.states[i].numpy()[:, outside])
    assert removed > 20
    # a brick row is in every frame: it is painted with the game's background, black
    so = objs[0]
    row = so.select(cls="Block", frames=[3])[2]
    out = remove_object(ss.states[0], so, row.slot).numpy()
    x0, y0, x1, y1 = row.box
    assert (out[:, y0:y1, x0:x1] == 0).all() and (ss.states[0].numpy()[:, y0:y1, x0:x1] > 0).any()
    eff = object_effects(agent, ss.states, objs)
    assert set(eff["cls"]) >= {"Ball", "Player", "Block"} and not eff["unchanged"].any()
