"""Chapter 7's library (saliency_book.ch7_explorer): the static grid behind the controls and the live view.

The static page works because every control's ``index`` is linked in JavaScript to the
``selected_index`` of one level of nested ``Stack`` widgets. The tests walk that tree
with the control indices of each pre-rendered combination and check that an image is
there, and check that the Python observers switch to the live view for the rest.
"""

from __future__ import annotations

import ipywidgets as w
import pytest
import torch

import saliency_book.ch7_explorer as xp
import saliency_book.common as cm
from saliency_book.common import METHODS, TARGETS


@pytest.fixture(scope="module")
def ex(tmp_path_factory):
    from saliency_lib.agents import build_agent, save_agent

    torch.manual_seed(0)
    agent = build_agent("DQNNet", {"n_actions": 4}, game="Breakout", preset="dqn")
    spec = str(save_agent(agent, tmp_path_factory.mktemp("agents") / "dqn-Breakout-s0"))
    cfg = xp.ExplorerChapter(game="Breakout", agent=spec, methods="occlusion,ns_original,random,mask_policy",
                             profile="tiny", results_dir=str(tmp_path_factory.mktemp("results")))
    with pytest.MonkeyPatch.context() as mp:  # the DQN agent alone keeps the test fast; chapter 7's build covers Mask-A3C
        mp.setattr(cm, "official_available", lambda *a, **k: False)
        mp.setattr(cm, "study_agent", lambda game, **k: None)  # whatever data/agents holds
        yield xp.Explorer(cfg, games=["Breakout", "Pong"])


def test_config_embeds_a_few_of_chapter_2s_states():
    assert xp.ExplorerChapter(profile="tiny").shown == 2  # tiny chooses 2 states
    assert xp.ExplorerChapter(profile="quick").shown == xp.STATIC_STATES
    quick = xp.ExplorerChapter(profile="quick", n_states="9")
    assert quick.shown == 5 and quick.selection.budget == 5  # chapter 2's budget, whatever n_states
    assert "the first 5 of chapter 2's HIGHLIGHTS-DIV states" in quick._repr_markdown_()
    with pytest.raises(ValueError, match="n_states must be a positive integer"):
        xp.ExplorerChapter(n_states=-1)


def test_encode_image_and_legend():
    import numpy as np

    data = xp.encode_image(np.zeros((210, 160, 3), np.uint8))
    assert data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    assert "#000004" in xp.colour_legend() and "#fcffa4" in xp.colour_legend()  # inferno's ends


def _walk(ex, key):
    """Follow the static grid by the control indices of ``key``; returns the leaf widget."""
    names = ("game", "agent", "state", "method", "target", "alpha")
    node = ex.display.children[0]
    while True:
        if isinstance(node, w.Stack):
            node = node.children[key[names.index(ex.levels[node.model_id])]]
        elif isinstance(node, w.VBox) and len(node.children) == 2 and isinstance(node.children[1], w.HBox):
            node = node.children[1].children[1]  # state panel: info, (frame, methods)
        else:
            return node


def test_static_grid_has_an_image_for_every_pre_rendered_choice(ex):
    assert xp.explorer_stats(ex)["stacks"] == len(ex.links) == len(ex.levels)
    assert ex.methods == ("occlusion", "ns_original", "random", "mask_policy")
    dqn = 0
    n_states = len(ex.controls["state"].options)
    for s in range(n_states):
        for m, method in enumerate(ex.methods):
            for t, target in enumerate(TARGETS):
                for a in range(len(xp.ALPHAS)):
                    key = (0, dqn, s, m, t, a)
                    # the random map ignores the target; the DQN agent has no value to explain
                    has = method == "random" or (method in ("occlusion", "ns_original") and target != "value")
                    assert (key in ex.static_keys) == has, key
                    leaf = _walk(ex, key)
                    assert isinstance(leaf, w.Image if has else w.HTML), (key, leaf)
    # the alpha levels of one map are different images, identical maps share one image widget
    leaves = [_walk(ex, (0, dqn, 0, 0, 0, a)) for a in range(len(xp.ALPHAS))]
    assert len({id(x) for x in leaves}) == len(xp.ALPHAS)
    assert _walk(ex, (0, dqn, 0, 2, 0, 1)) is _walk(ex, (0, dqn, 0, 2, 1, 1))  # random: same for every target
    assert _walk(ex, (0, dqn, 0, 1, 0, 1)) is _walk(ex, (0, dqn, 0, 1, 1, 1))  # ns_original: all actions at once
    assert "has no state value" in _walk(ex, (0, dqn, 0, 0, 2, 1)).value
    assert "Not pre-rendered" in _walk(ex, (1, dqn, 0, 0, 0, 1)).value  # another game
    assert "Policy mask cannot explain" in _walk(ex, (0, dqn, 0, 3, 0, 1)).value


def test_links_run_from_controls_to_stacks(ex):
    assert len(ex.links) == len(ex.levels)
    for link in ex.links:
        control, trait = link.source
        assert trait == "index" and control is ex.controls[ex.levels[link.target[0].model_id]]
        assert link.target[1] == "selected_index"


def test_live_view_takes_over_outside_the_grid(ex):
    c = ex.controls
    c["agent"].index = 0
    assert ex.display.selected_index == 0
    c["target"].index = len(TARGETS) + 3  # one particular action: computed live
    assert ex.display.selected_index == 1 and ex._live_img.value[8:12] == b"WEBP"
    assert "explaining the action LEFT (computed live)" in ex._live_info.value
    c["target"].index = 0
    assert ex.display.selected_index == 0
    c["game"].index = 1  # Pong: no agent in this test's study
    assert ex.display.selected_index == 1 and "No DQN agent for Pong" in ex._live_info.value
    c["game"].index = 0
    assert ex.display.selected_index == 0 and ex.selection()["game"] == "Breakout"


def test_stats_report_the_embedded_grid(ex):
    s = xp.explorer_stats(ex)
    images = {id(leaf) for leaf in ex._images.values()}
    assert s["images"] == len(images) > 0 and 0 < s["megabytes"] < 1 and s["stacks"] == len(ex.levels)
    assert s["methods"] == 4 and set(METHODS) >= set(ex.methods) and s["agents"] == "agent given as parameter"
    assert (s["states"], s["targets"], s["alphas"]) == (len(ex.controls["state"].options), 3, len(xp.ALPHAS))
    assert xp.explorer_stats(cm.Note("none"))["images"] == 0
