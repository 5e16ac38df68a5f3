"""The Mask-A3C agents' masks over play (saliency_study.masks): per-step statistics and recorded plays.

The tests save tiny untrained MaskA3CNet agents in temporary directories; every cache goes to a
temporary ``results_dir``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from toy_study import save_acs, toy_play

import saliency_study.masks as mk
from saliency_study.paths import repo_path


@pytest.fixture(scope="module")
def agents_dir(tmp_path_factory):
    return save_acs(tmp_path_factory.mktemp("agents"))


def test_mask_statistics_on_hand_computable_masks():
    uniform = np.full((1, 2, 2), 0.5)
    peak = np.array([[[1.0, 0.0], [0.0, 0.0]]])
    m = np.concatenate([uniform, peak])
    np.testing.assert_allclose(mk.mask_mass(m), [0.5, 0.25])
    np.testing.assert_allclose(mk.mask_fraction_open(m), [0.0, 0.25])  # 0.5 is not > 0.5
    np.testing.assert_allclose(mk.mask_entropy(m), [1.0, 0.0], atol=1e-12)
    assert np.isnan(mk.mask_entropy(np.zeros((1, 2, 2))))[0]
    with pytest.raises(ValueError, match="non-negative"):
        mk.mask_entropy(-m)
    with pytest.raises(ValueError, match=r"shape \(N, H, W\)"):
        mk.mask_mass(np.ones((2, 2)))


def test_topk_iou_spearman_and_chance_level():
    a = np.arange(16, dtype=float).reshape(1, 4, 4)
    assert mk.topk_iou(a, a, 0.25)[0] == 1.0
    assert mk.topk_iou(a, -a, 0.25)[0] == 0.0  # top 4 vs bottom 4 cells
    b = a.copy()
    b[0, 3, 3] = -1  # one of the top 4 cells drops out: 3 shared of 5
    assert mk.topk_iou(a, b, 0.25)[0] == pytest.approx(3 / 5)
    np.testing.assert_allclose(mk.mask_spearman(np.concatenate([a, a]), np.concatenate([a, -a])), [1.0, -1.0])
    with pytest.raises(ValueError, match="differ in shape"):
        mk.topk_iou(a, a[:, :2], 0.25)
    with pytest.raises(ValueError, match="fraction must lie in"):
        mk.topk_iou(a, a, 0.0)
    # two random 2-sets of 4 cells: overlap 0, 1, 2 with p 1/6, 4/6, 1/6 -> IoU 0, 1/3, 1
    assert mk.chance_iou(4, 0.5) == pytest.approx(7 / 18)
    assert mk.chance_iou(100, 0.01) == pytest.approx(0.01)
    rng = np.random.default_rng(0)
    mc = mk.topk_iou(rng.random((4000, 10, 10)), rng.random((4000, 10, 10)), 0.1).mean()
    assert mc == pytest.approx(mk.chance_iou(100, 0.1), abs=0.01)


def test_series_summary_and_numbers_from_a_synthetic_play():
    rng = np.random.default_rng(1)
    pol = rng.random((5, 10, 10)) * 0.2
    val = pol.copy()
    val[:, :2] = 0.9  # the value mask opens two rows more
    play = toy_play({"policy": pol, "value": val})
    s = mk.mask_series(play, top=0.1)
    assert list(s["t"]) == list(range(5)) and s["reset"].tolist() == [True, False, False, False, False]
    np.testing.assert_allclose(s["value_open"], 0.2)
    assert (s["policy_open"] == 0).all() and (s["value_mass"] > s["policy_mass"]).all()
    summary = mk.series_summary(play, "a missing agent", {"x": toy_play({"policy": pol}, label="policy-only agent")})
    assert set(summary["agent"]) == {"toy agent", "policy-only agent"}
    assert list(summary.loc[summary["agent"] == "toy agent", "stat"]) == list(mk.SUMMARY_STATS)
    only = summary[summary["agent"] == "policy-only agent"].set_index("stat")
    assert np.isnan(only.loc["iou", "mean"]) and np.isnan(only.loc["value_mass", "mean"])
    toy = summary[summary["agent"] == "toy agent"].set_index("stat")
    assert toy.loc["value_open", "mean"] == pytest.approx(0.2) and toy.loc["value_open", "sd"] == pytest.approx(0.0)
    n = mk.series_numbers(play, top=0.1)
    assert n["steps"] == 5 and n["resets"] == 0 and n["value_open"] == pytest.approx(0.2)
    assert n["value_mass"] == pytest.approx(s["value_mass"].mean()) and n["chance_iou"] == pytest.approx(mk.chance_iou(100))
    missing = mk.series_numbers(None)
    assert all(np.isnan(v) for v in missing.values())
    assert set(missing) == set(n)  # the prose can quote every name in either case


def test_conv_resets_and_filmstrip_indices():
    h = torch.ones(4, 2, 3, 3)
    h[0] = 0
    h[2] = 0
    c = torch.ones(4, 2, 3, 3)
    c[0] = 0
    assert mk.conv_resets((h, c)).tolist() == [True, False, False, False]  # step 2: h zero but c not
    assert mk.filmstrip_indices(10, 4).tolist() == [0, 3, 6, 9]
    assert mk.filmstrip_indices(3, 6).tolist() == [0, 1, 2]


def test_mask_agents_finds_masked_actor_critics_only(agents_dir, tmp_path):
    found = mk.mask_agents("Breakout", agents_dir)
    assert sorted(found["variant"]) == ["double", "policy"]  # the 'none' agent has no mask
    assert mk.mask_agents("MsPacman", agents_dir).empty
    assert mk.mask_agents("Breakout", tmp_path / "nothing").empty
    assert mk.variant({"variant": None}) == "double" and mk.variant({"variant": "value"}) == "value"


def test_play_masks_records_and_caches_an_untrained_agent(agents_dir, tmp_path):
    results = str(tmp_path / "results")
    spec = str(agents_dir / "a3c-Breakout-double-s0")
    play = mk.play_masks(spec, steps=6, seed=0, filmstrip=3, label="toy", results_dir=results)
    assert len(play) == 6 and set(play.masks) == {"policy", "value"}
    assert play.masks["policy"].shape == (6, 10, 10) and ((play.masks["value"] > 0) & (play.masks["value"] < 1)).all()
    assert sorted(play.frames) == [0, 2, 5] and play.frames[0].shape == (210, 160, 3)
    assert play.reset[0] and play.steps[0] == 0 and (play.preset, play.n_actions) == ("mask_a3c", 4)
    cached = mk.play_masks(spec, steps=6, seed=0, filmstrip=3, label="toy", results_dir=results)
    np.testing.assert_array_equal(cached.masks["policy"], play.masks["policy"])
    assert len(list((repo_path(results) / "_local" / "media").glob("mask_play-*.npz"))) == 1
    with pytest.raises(ValueError, match="has no attention masks"):
        mk.play_masks(str(agents_dir / "a3c-Breakout-none-s0"), steps=2, results_dir=results)
