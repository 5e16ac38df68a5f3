"""Chapter 2's library (saliency_book.ch2_gallery): configuration, states, cached maps, display, agreement.

The end-to-end tests use a random-weight DQN checkpoint written to a temporary
directory (the study's trained agents may not exist) and the ``tiny`` profile's coarse
method parameters, with every result cached in a temporary ``results_dir``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import saliency_book.ch2_gallery as gl
import saliency_book.common as cm
import saliency_book.maps as mp
from saliency_book.common import Note
from saliency_lib.games import mask_a3c_crop
from saliency_study.catalog import load_spec


@pytest.fixture(scope="module")
def dqn_dir(tmp_path_factory):
    from saliency_lib.agents import build_agent, save_agent

    torch.manual_seed(0)
    agent = build_agent("DQNNet", {"n_actions": 4}, game="Breakout", preset="dqn")
    return str(save_agent(agent, tmp_path_factory.mktemp("agents") / "dqn-Breakout-s0"))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return str(tmp_path_factory.mktemp("results"))


def _cfg(dqn_dir, results, **kw):
    return gl.GalleryChapter(game="Breakout", agent=dqn_dir, profile="tiny", results_dir=results, **kw)


# -- configuration --------------------------------------------------------------------------------

def test_config_accepts_papermill_values_and_derives_the_selection():
    cfg = gl.GalleryChapter(methods="occlusion, rise,occlusion", n_states="3", seed="2", agent="None", profile="quick")
    assert cfg.methods == ("occlusion", "rise") and cfg.n_states == 3 and cfg.seed == 2 and cfg.agent is None
    assert cfg.selection == mp.StateSelection(trajectory=997, budget=3, seed=2)
    assert gl.GalleryChapter(profile="quick").selection.budget == 5  # profile's 20, capped at HIGHLIGHTS' 5
    tiny = gl.GalleryChapter(profile="tiny", n_states=2.0)
    assert tiny.selection.trajectory == 200 and tiny.n_states == 2  # capped at the profile's eval_max_steps
    assert tiny.explainer_params["occlusion"] == {"patch": 12} and gl.GalleryChapter().explainer_params == {}  # the tiny sweep's
    assert "coarse method parameters" in tiny._repr_markdown_()
    with pytest.raises(ValueError, match="methods must name registered explainers.*valid names are"):
        gl.GalleryChapter(methods="occlusion,shap")
    with pytest.raises(ValueError, match="n_states must be a positive integer"):
        gl.GalleryChapter(n_states=0)
    with pytest.raises(ValueError, match="unknown game"):
        gl.GalleryChapter(game="Tetris")


def test_chapter_agents_fill_two_slots(dqn_dir, results):
    from saliency_lib.agents.official import OFFICIAL_GAMES

    dqn, mask = cm.chapter_agents("Breakout", dqn_dir, results_dir=results)
    assert (dqn.kind, dqn.spec, dqn.label) == ("dqn", dqn_dir, "agent given as parameter") and dqn
    assert mask.kind == "mask_a3c" and (mask.spec == "official:Breakout") == bool(mask)
    _, given = cm.chapter_agents("Breakout", "official:Breakout", results_dir=results)
    assert given.spec in ("official:Breakout", None)
    dqn, mask = cm.chapter_agents("Pong", results_dir=results)
    assert "Pong" not in OFFICIAL_GAMES and not mask and "released no Mask-A3C checkpoint for Pong" in mask.missing
    assert isinstance(mask.note(), Note) and "No official Mask-A3C agent for Pong" in mask._repr_markdown_()


# -- display helpers ------------------------------------------------------------------------------

def test_normalise_and_frame_mapping():
    m = np.array([[1.0, 3.0], [2.0, 5.0]])
    n = mp.normalise(m)
    assert n.min() == 0 and n.max() == 1 and n[0, 1] == pytest.approx(0.5)
    assert not mp.normalise(np.full((4, 4), 7.0)).any()
    heat, inside = mp.on_frame(np.ones((84, 84), np.float32), preset="dqn", game="Breakout")
    assert heat.shape == (210, 160) and inside is None and np.allclose(heat, 1)
    heat, inside = mp.on_frame(np.ones((80, 80), np.float32), preset="mask_a3c", game="Breakout")
    c1, c2, _ = mask_a3c_crop("Breakout")
    assert heat.shape == inside.shape == (210, 160)
    assert inside[c1:c2 + 160].all() and not inside[:c1].any() and not inside[c2 + 160:].any()
    assert not heat[~inside].any()


def test_overlay_keeps_the_frame_where_saliency_is_zero_or_outside_the_crop():
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, (210, 160, 3), dtype=np.uint8)
    m = np.zeros((80, 80), np.float32)
    m[40:, 40:] = 1.0
    assert np.array_equal(mp.overlay_map(frame, m, preset="mask_a3c", game="Breakout", alpha=0.0), frame)
    out = mp.overlay_map(frame, m, preset="mask_a3c", game="Breakout", alpha=1.0)
    c1, _, _ = mask_a3c_crop("Breakout")
    assert np.array_equal(out[:c1], frame[:c1])  # above the crop
    assert np.array_equal(out[c1:c1 + 60, :60], frame[c1:c1 + 60, :60])  # zero saliency
    assert not np.array_equal(out[-30:-20, -30:], frame[-30:-20, -30:])  # the salient corner is coloured


def test_resolve_action():
    from saliency_lib.states import StateSet

    s = StateSet(states=torch.zeros(2, 4, 84, 84), actions=torch.tensor([1, 0]),
                 outputs={"q": torch.tensor([[1.0, 3.0, 2.0], [5.0, 1.0, 4.0]])}, hidden=None, frames=None,
                 steps=np.array([4, 5]), episode=np.array([0, 0]))
    assert mp.resolve_action(s, 0, "action") == 1 and mp.resolve_action(s, 0, "runner_up") == 2
    assert mp.resolve_action(s, 1, "runner_up") == 2 and mp.resolve_action(s, 1, 2) == 2
    with pytest.raises(ValueError, match="target must be"):
        mp.resolve_action(s, 0, 3)
    with pytest.raises(ValueError, match="target must be"):
        mp.resolve_action(s, 0, "best")


# -- states and maps on a random-weight DQN agent -----------------------------------------------------

def test_highlight_states_are_ordered_and_cached(dqn_dir, results, monkeypatch):
    import saliency_lib.states as st

    agent = load_spec(dqn_dir)
    sel = mp.StateSelection(trajectory=60, budget=2)
    s = mp.highlight_states(agent, dqn_dir, sel, results_dir=results)
    assert 1 <= len(s) <= 2 and s.frames.shape[1:] == (210, 160, 3)
    imp = s.meta["importance"]
    assert imp == sorted(imp, reverse=True) and len(s.meta["trajectory_index"]) == len(s)
    monkeypatch.setattr(st, "collect_states", lambda *a, **k: pytest.fail("not cached"))
    again = mp.highlight_states(agent, dqn_dir, sel, results_dir=results)
    assert torch.equal(again.states, s.states) and again.meta == s.meta


def test_saliency_map_targets_and_cache(dqn_dir, results):
    from saliency_study.cache import MEDIA
    from saliency_study.paths import repo_path

    agent = load_spec(dqn_dir)
    s = mp.highlight_states(agent, dqn_dir, mp.StateSelection(trajectory=60, budget=2), results_dir=results)
    from saliency_study.profiles import PROFILES

    params = PROFILES["tiny"].example_params
    media = repo_path(results) / MEDIA
    occ = mp.saliency_map(agent, dqn_dir, s, 0, "occlusion", params=params, results_dir=results)
    assert occ.shape == (84, 84) and occ.dtype == np.float32
    n = len(list(media.glob("saliency_map-*.npy")))
    greedy = int(s.actions[0])
    assert np.array_equal(mp.saliency_map(agent, dqn_dir, s, 0, "occlusion", greedy, params=params, results_dir=results), occ)
    assert len(list(media.glob("saliency_map-*.npy"))) == n  # the greedy action by index is the same cached map
    other = mp.saliency_map(agent, dqn_dir, s, 0, "occlusion", "runner_up", params=params, results_dir=results)
    assert not np.array_equal(other, occ)
    a = mp.saliency_map(agent, dqn_dir, s, 0, "ns_original", params=params, results_dir=results)
    b = mp.saliency_map(agent, dqn_dir, s, 0, "ns_original", "runner_up", params=params, results_dir=results)
    assert np.array_equal(a, b)  # the original Noise Sensitivity explains all actions at once
    assert mp.saliency_map(agent, dqn_dir, s, 0, "gradient", "value", results_dir=results) is None  # no value output
    assert mp.saliency_map(agent, dqn_dir, s, 0, "mask_policy", results_dir=results) is None  # no masks
    if len(s) > 1:
        r0 = mp.saliency_map(agent, dqn_dir, s, 0, "random", results_dir=results)
        r1 = mp.saliency_map(agent, dqn_dir, s, 1, "random", results_dir=results)
        assert not np.array_equal(r0, r1)  # one random map per state


def test_gallery_figures_on_a_dqn_agent(dqn_dir, results):
    cfg = _cfg(dqn_dir, results, methods="occlusion,gradient,random,mask_policy", n_states=2)
    dqn, _ = cm.chapter_agents(cfg.game, cfg.agent, results_dir=results)
    g = gl.compute_gallery(cfg, dqn)
    assert g.methods == ("occlusion", "gradient", "random") and g.preset == "dqn"
    assert all(len(v) == len(g) for v in g.maps.values())
    fig = gl.state_figure(g, 0, ncols=2)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["frame", "Occlusion", "Gradient", "Random"]
    assert "state 1 (step" in fig.get_suptitle()
    assert gl.show_gallery(g).data[:4] == b"\x89PNG" and gl.show_states(g).data[:4] == b"\x89PNG"
    assert gl.show_agreement(g).data[:4] == b"\x89PNG"
    long = gl.agreement(g)
    assert len(long) == 3 * len(g) and set(long.columns) == {"state", "method_a", "method_b", "spearman"}


def test_games_tabs_show_each_games_dqn_agent_or_why_it_is_missing(dqn_dir, tmp_path):
    from saliency_study.catalog import record_study_agent

    results = str(tmp_path)
    record_study_agent("Breakout", dqn_dir, results_dir=results)
    cfg = gl.GalleryChapter(game="MsPacman", methods="occlusion,gradient", n_states=3, profile="tiny", results_dir=results)
    galleries = gl.games_gallery(cfg, games=("Breakout", "Pong"))
    assert list(galleries) == ["Breakout", "Pong"]
    bo = galleries["Breakout"]
    assert bo.agent.spec == dqn_dir and bo.agent.game == "Breakout" and len(bo) == 1  # one state per game
    assert isinstance(galleries["Pong"], Note) and "No DQN agent for Pong" in galleries["Pong"].text
    tabs = gl.show_games(galleries)
    assert [tabs.get_title(k) for k in range(2)] == ["Breakout", "Pong"]
    assert tabs.children[0].value[:4] == b"\x89PNG"
    assert "<code>data/agents</code>" in tabs.children[1].value


def test_missing_agent_shows_one_note(results):
    cfg = gl.GalleryChapter(game="Pong", profile="tiny", results_dir=results)
    _, mask = cm.chapter_agents("Pong", results_dir=results)
    g = gl.compute_gallery(cfg, mask)
    assert isinstance(g, Note) and gl.show_states(g) is g and gl.show_agreement(g) is g
    assert gl.show_gallery(g) is None and gl.show_gallery_tabs(g) is None and gl.agreement_extremes(g) is g
    assert gl.show_extremes(g, "caption") is g


def test_agreement_of_known_maps():
    rng = np.random.default_rng(0)
    m = rng.random((8, 8)).astype(np.float32)
    who = cm.ExplainedAgent("dqn", "Breakout", "x", "test agent")
    maps = {"occlusion": [m, m], "rise": [m, m], "gradient": [-m, -m], "sarfa": [np.zeros_like(m)] * 2}
    g = gl.Gallery(who, "dqn", list(range(2)), tuple(maps), maps, ("NOOP",))
    long = gl.agreement(g).set_index(["method_a", "method_b"])["spearman"]
    assert long.loc[("occlusion", "rise")].tolist() == pytest.approx([1.0, 1.0])
    assert long.loc[("occlusion", "gradient")].tolist() == pytest.approx([-1.0, -1.0])
    assert long.loc[("occlusion", "sarfa")].isna().all()  # a constant map has no ranking
    t = gl.agreement_extremes(g).set_index("finding")
    assert tuple(t.loc["most similar pair"]) == ("Occlusion and RISE", pytest.approx(1.0))
    assert tuple(t.loc["least similar pair"]) == ("Occlusion and Gradient", pytest.approx(-1.0))
    assert t.loc["agrees most with the others", "methods"] in ("Occlusion", "RISE")
    assert t.loc["comparisons with a constant map (no ρ)", "methods"] == "6 of 12"
    assert "random map vs another method, lowest" not in t.index  # no random map in this gallery
    html = gl.show_extremes(t.reset_index(), "caption").to_html()
    assert "-1.00" in html and "1.00" in html and "6 of 12" in html
