"""Localisation measures: hand-computed cases, chance level of random maps, Quantus 0.6 cross-check."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from saliency_lib.metrics.localisation import (
    LOCALISATION_MEASURES,
    chance_level,
    localisation_scores,
    localisation_table,
    object_masks,
    pointing_game,
    relevance_mass,
    relevance_rank,
)
from saliency_lib.objects import FrameObject, SceneObject, StateObjects


def _mask(shape, *boxes):
    m = np.zeros(shape, dtype=bool)
    for x0, y0, x1, y1 in boxes:
        m[y0:y1, x0:x1] = True
    return m


def test_hand_computed_scores():
    s = np.array([[4.0, 0.0, -2.0],
                  [1.0, 3.0, 0.0]])
    m = _mask(s.shape, (0, 0, 1, 2))  # the first column
    # positive mass 4 + 1 of 8; top-2 pixels are 4 and 3: one inside; the maximum 4 is inside
    assert relevance_mass(s, m, baseline="zero") == pytest.approx(5 / 8)
    # above the median 0.5: 3.5 + 0.5 of 3.5 + 0.5 + 2.5; above the minimum −2: 6 + 3 of 6+2+0+3+5+2
    assert relevance_mass(s, m) == pytest.approx(4 / 6.5)
    assert relevance_mass(s, m, baseline="min") == pytest.approx(9 / 18)
    assert relevance_rank(s, m) == pytest.approx(1 / 2)
    assert pointing_game(s, m) == 1.0
    assert chance_level(m) == pytest.approx(2 / 6)
    m2 = _mask(s.shape, (1, 1, 3, 2))  # 3 and 0 of the bottom row
    assert relevance_mass(s, m2, baseline="zero") == pytest.approx(3 / 8)
    assert relevance_rank(s, m2) == pytest.approx(1 / 2)  # top-2: 4 (out), 3 (in)
    assert pointing_game(s, m2) == 0.0


def test_ties_count_by_expectation():
    # a 2×2 plateau of the maximum with one pixel in the mask: pointing 1/4
    s = np.zeros((4, 4))
    s[:2, :2] = 1.0
    m = _mask(s.shape, (1, 1, 2, 2), (3, 3, 4, 4))  # pixel (1,1) in the plateau, (3,3) outside it
    assert pointing_game(s, m) == pytest.approx(1 / 4)
    # k = 2: both places go to the plateau, of whose 4 pixels 1 is inside → 2 · 1/4 = 0.5 pixels of 2
    assert relevance_rank(s, m) == pytest.approx(0.25)
    # a constant map scores chance on rank and pointing, whatever the pixel order
    c = np.full((5, 7), 0.3)
    mm = _mask(c.shape, (0, 0, 3, 2))
    assert relevance_rank(c, mm) == pytest.approx(chance_level(mm))
    assert pointing_game(c, mm) == pytest.approx(chance_level(mm))
    assert relevance_mass(c, mm, baseline="zero") == pytest.approx(chance_level(mm))
    assert np.isnan(relevance_mass(c, mm))  # nothing above its median: no mass to share


def test_degenerate_and_bad_inputs():
    s = np.random.default_rng(0).random((6, 6))
    empty = np.zeros((6, 6), dtype=bool)
    assert np.isnan(relevance_mass(s, empty)) and np.isnan(relevance_rank(s, empty)) and np.isnan(pointing_game(s, empty))
    assert np.isnan(relevance_mass(-s, _mask((6, 6), (0, 0, 2, 2)), baseline="zero"))  # no positive mass
    full = np.ones((6, 6), dtype=bool)
    with pytest.raises(ValueError, match="unknown baseline"):
        relevance_mass(s, full, baseline="mean")
    assert relevance_rank(s, full) == 1.0 and relevance_mass(s, full) == 1.0
    with pytest.raises(ValueError, match=r"one \(H, W\) map"):
        relevance_mass(s[None], full[None])
    with pytest.raises(ValueError, match="the map's shape"):
        relevance_rank(s, full[:5])
    with pytest.raises(TypeError, match="boolean"):
        pointing_game(s, full.astype(int))
    with pytest.raises(ValueError, match="NaN"):
        relevance_mass(np.full((6, 6), np.nan), full)


def _random_boxes(rng, shape, n_boxes):
    h, w = shape
    boxes = []
    for _ in range(n_boxes):
        bw, bh = int(rng.integers(1, 16)), int(rng.integers(1, 16))
        x0, y0 = int(rng.integers(0, w - bw)), int(rng.integers(0, h - bh))
        boxes.append((x0, y0, x0 + bw, y0 + bh))
    return _mask(shape, *boxes)


def test_random_maps_sit_at_the_chance_level():
    # the library's random map (uniform in [0, 1)) against random object masks: the mean of
    # (score − area fraction) is zero within 4 standard errors on every measure
    from saliency_lib.agents import DQNConfig, DQNNet, QAgent
    from saliency_lib.explainers import RandomMap

    n = 1500
    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    maps = RandomMap(agent, seed=3).attribute(torch.rand(n, 4, 84, 84, generator=torch.Generator().manual_seed(1))).maps.numpy()
    rng = np.random.default_rng(0)
    diffs = {m: [] for m in (*LOCALISATION_MEASURES, "mass_zero", "mass_min")}
    chance = []
    for i in range(n):
        mask = _random_boxes(rng, (84, 84), int(rng.integers(1, 8)))
        sc = localisation_scores(maps[i], mask)
        sc["mass_zero"] = relevance_mass(maps[i], mask, baseline="zero")
        sc["mass_min"] = relevance_mass(maps[i], mask, baseline="min")
        chance.append(sc["chance"])
        for m in diffs:
            diffs[m].append(sc[m] - sc["chance"])
    assert 0.01 < np.mean(chance) < 0.3
    for m, d in diffs.items():
        d = np.asarray(d)
        se = d.std(ddof=1) / np.sqrt(n)
        assert abs(d.mean()) < 4 * se, f"{m}: mean excess {d.mean():.4f} (se {se:.4f})"
    # and an informative map does not: mass concentrated on the objects scores far above chance
    mask = _random_boxes(rng, (84, 84), 3)
    assert relevance_mass(maps[0] + 100 * mask, mask) > chance_level(mask) + 0.5


def test_cross_check_with_quantus_0_6():
    import quantus

    assert quantus.__version__ == "0.6.0"
    rng = np.random.default_rng(7)
    n, shape = 40, (84, 84)
    a = rng.gamma(0.5, size=(n, *shape))  # continuous, non-negative: no ties, no negative mass
    s = np.stack([_random_boxes(rng, shape, int(rng.integers(1, 6))) for _ in range(n)])
    a[::2] *= 1 + 4 * s[::2]  # half the maps lean on the objects, so the pointing game has hits and misses
    x, y = np.zeros((n, 1, *shape)), np.zeros(n, dtype=int)
    ours = {m: np.array([localisation_scores(a[i], s[i], baseline="zero")[m] for i in range(n)]) for m in LOCALISATION_MEASURES}
    kw = {"disable_warnings": True, "normalise": False, "abs": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = {
            "relevance_mass": quantus.RelevanceMassAccuracy(**kw),
            "relevance_rank": quantus.RelevanceRankAccuracy(**kw),
            "pointing_game": quantus.PointingGame(**kw),
        }
        for name, metric in theirs.items():
            q = np.asarray(metric(model=None, x_batch=x, y_batch=y, a_batch=a[:, None], s_batch=s[:, None].astype(float)),
                           dtype=np.float64)
            np.testing.assert_allclose(ours[name], q, rtol=1e-12, atol=1e-12, err_msg=name)
    assert 0 < ours["pointing_game"].sum() < n  # both outcomes occur


def _objects():
    objs = (
        FrameObject(3, SceneObject("Ball", 1, 0, 0, 2, 2, False), (10, 10, 12, 12)),
        FrameObject(2, SceneObject("Ball", 1, 0, 0, 2, 2, False), (12, 12, 14, 14)),
        FrameObject(3, SceneObject("Player", 0, 0, 0, 2, 2, False), (40, 75, 48, 78)),
        FrameObject(3, SceneObject("PlayerScore", 5, 0, 0, 2, 2, True), (0, 0, 20, 5)),
        FrameObject(3, SceneObject("Ghost", 9, 0, 0, 2, 2, False), None),  # cropped away: no box
    )
    return StateObjects("Breakout", "dqn", 4, objs)


def test_object_masks_and_table():
    so = _objects()
    masks = object_masks(so)
    assert set(masks) == {"all", "no_hud", "hud", "cls:Ball", "cls:Player", "cls:PlayerScore"}
    assert masks["cls:Ball"].sum() == 8 and masks["hud"].sum() == 100
    assert masks["all"].sum() == 8 + 24 + 100
    assert object_masks(so, frames=[3])["cls:Ball"].sum() == 4
    maps = np.zeros((2, 84, 84))
    maps[0, 10:12, 10:12] = 1.0  # all mass on the ball
    maps[1] = np.random.default_rng(0).random((84, 84))
    df = localisation_table(maps, [so, so], state_ids=[7, 8], method="m")
    assert list(df.columns) == ["method", "state", "group", "measure", "value", "chance", "area"]
    row = df[(df.state == 7) & (df.group == "cls:Ball")].set_index("measure")["value"]
    assert row["relevance_mass"] == 1.0 and row["pointing_game"] == 1.0
    # top 8 (the ball's two boxes): its 4 lit pixels, and 4 places among the 84² − 4 zeros, 4 of them inside
    assert row["relevance_rank"] == pytest.approx((4 + 4 * 4 / (84**2 - 4)) / 8)
    no_hud = df[(df.state == 7) & (df.group == "no_hud") & (df.measure == "relevance_mass")].iloc[0]
    assert no_hud["value"] == 1.0 and no_hud["chance"] == pytest.approx(32 / 84**2)
    hud = df[(df.state == 7) & (df.group == "hud") & (df.measure == "relevance_mass")]["value"].iloc[0]
    assert hud == 0.0
    with pytest.raises(ValueError, match="shape"):
        localisation_table(np.zeros((2, 80, 80)), [so, so])
    with pytest.raises(ValueError, match="empty"):
        localisation_table(np.zeros((0, 84, 84)), [])
    assert isinstance(df, pd.DataFrame)
