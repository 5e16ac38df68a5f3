"""Chapter 1's deviation tables: read from the shipped agents, tied to the docstrings they cite."""

import importlib
import json
import re
import shutil
from pathlib import Path

import pytest

from saliency_book.ch1_deviations import (
    METHODS,
    TRAINING,
    agent_metas,
    compare_training,
    matching_sentence,
    methods_table,
    style_deviations,
    training_table,
)
from saliency_study.profiles import PROFILE_NAMES, sweep_sizes

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ROOT / "data" / "agents"


def _resolve(path: str):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(path)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text or "")


def test_shipped_agents_deviations_are_the_known_ones():
    t = training_table()
    dqn = t[t["paper"] == "Huber et al."].set_index("setting")["ours"]
    assert dqn["Replay sampling"] == "uniform"
    assert dqn["Return"] == "3-step"
    assert dqn["Training frames"] == "10 M"
    assert dqn["Conv padding"].startswith("VALID")
    assert dqn["Hidden units"] == "512"
    a3c = t[t["paper"] == "Itaya et al."].set_index("setting")["ours"]
    assert a3c["Training scheme"].startswith("synchronous: 16 environments")
    assert a3c["Learning rate"].startswith("0.0004")
    assert a3c["Optimiser steps"] == "one every 1,280 frames"
    assert (t["why"].str.len() > 20).all(), "every deviation says why"
    assert set(t["paper"]) == {"Huber et al.", "Itaya et al."}


def test_settings_that_match_are_listed_apart():
    t = compare_training(agent_metas())
    same = t[~t["deviates"]].set_index(["paper", "setting"])
    assert ("Huber et al.", "Optimiser") in same.index and ("Huber et al.", "Double Q") in same.index
    assert ("Itaya et al.", "Adam") in same.index
    text = matching_sentence()
    assert "**Optimiser** Adam (§1.4)" in text and "**Rollout** 20 steps (§2.1)" in text


def test_ours_is_read_from_meta_json(tmp_path):
    """Change one shipped agent's metadata: its row changes, and a setting set to the paper's stops deviating."""
    agents = tmp_path / "agents"
    agents.mkdir()
    for name in ("dqn-Breakout-s0", "dqn-MsPacman-s0"):
        (agents / name).mkdir()
        shutil.copy2(AGENTS / name / "meta.json", agents / name / "meta.json")
    meta_path = agents / "dqn-MsPacman-s0" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["train_args"]["n_step"] = 1
    meta["frames"] = 20_000_000
    meta_path.write_text(json.dumps(meta))
    t = compare_training(agent_metas(agents)).set_index("setting")
    assert t.loc["Return", "ours"] == "3-step (dqn-Breakout-s0); 1-step (dqn-MsPacman-s0)"
    assert bool(t.loc["Return", "deviates"])  # one agent still deviates
    m = json.loads((agents / "dqn-Breakout-s0" / "meta.json").read_text())
    m["train_args"]["n_step"], m["frames"] = 1, 20_000_000
    (agents / "dqn-Breakout-s0" / "meta.json").write_text(json.dumps(m))
    t = training_table(agents)
    assert "Return" not in set(t["setting"]) and "Training frames" not in set(t["setting"])
    assert "Conv padding" in set(t["setting"])
    assert set(t["paper"]) == {"Huber et al."}  # no actor-critic agent there: no Itaya rows


def test_every_training_setting_reads_every_shipped_agent():
    metas = agent_metas()
    for paper in TRAINING:
        ms = [m for m in metas.values() if m.get("algo") in paper.algos]
        assert ms, f"no shipped agent for {paper.paper}"
        for s in paper.settings:
            for m in ms:
                s.show(s.read(m))  # raises on a missing key


@pytest.mark.parametrize("row", METHODS, ids=lambda r: r.component)
def test_methods_rows_are_documented_where_they_say(row):
    assert row.kind in ("changed", "added")
    assert row.homes
    for path, phrase in row.homes:
        obj = _resolve(path)
        if phrase is not None:
            assert _flat(phrase) in _flat(obj.__doc__), f"{path}'s docstring no longer says {phrase!r}"


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_methods_table_follows_the_profile(profile):
    t = methods_table(profile).set_index("component")
    n = sweep_sizes(profile, "dqn").n_states
    assert f"the first {n} states" in t.loc["Explained states", "ours"]
    assert f"{sweep_sizes(profile, 'mask_a3c').n_states} states of one greedy game" in t.loc["Explained states", "ours"]
    coarse = any(sweep_sizes(profile, k).params for k in ("dqn", "mask_a3c"))
    assert ("Explainer parameters" in t.index) == coarse
    assert style_deviations(t.reset_index(), "caption").to_html()


def test_chapter_no_longer_claims_huber_training():
    nb = (ROOT / "notebooks" / "01_agents.py").read_text()
    assert not re.search(r"(?<!not\* )trained the way", _flat(nb)), "a sentence claims Huber et al.'s training"
    assert "training_table(" in nb and "methods_table(" in nb
