"""Chapter 1's deviation tables (saliency_study.deviations, shown by saliency_book.ch1_deviations): read from
``saliency_study/data/deviations.yaml`` and the shipped agents, tied to the docstrings they cite."""

import importlib
import json
import re
import shutil
from pathlib import Path

import pytest

from saliency_book.ch1_deviations import methods_table, show_methods, show_training
from saliency_study import deviations as study_deviations
from saliency_study.catalog import shipped_agents
from saliency_study.deviations import deviations, evaluate, fill, training_table
from saliency_study.profiles import PROFILE_NAMES, sweep_sizes

ROOT = Path(__file__).resolve().parents[2]
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
    t = t[t["deviates"]]
    dqn = t[t["paper"] == "Huber et al."].set_index("setting")["ours"]
    assert dqn["Training code"] == "saliency_lib.train.dqn"
    assert dqn["Replay sampling"] == "uniform"
    assert dqn["Return"] == "3-step"
    assert dqn["Training frames"] == "10 M"
    assert dqn["Conv padding"].startswith("VALID")
    assert dqn["Hidden units"] == "512"
    assert dqn["Gradient steps"] == "one of 64 transitions per 16 agent steps (4 replayed per step)"
    a3c = t[t["paper"] == "Itaya et al."].set_index("setting")["ours"]
    assert a3c["Training scheme"].startswith("synchronous: 16 environments")
    assert a3c["Learning rate"].startswith("0.0004")
    assert a3c["Optimiser steps"] == "one every 1,280 frames"
    assert (t["why"].str.len() > 20).all(), "every deviation says why"
    assert not t["why"].str.contains("None").any() and not t["ours"].str.contains("None").any()
    assert "400,000 take about 2.8 GB" in t.set_index("setting").loc["Replay buffer", "why"]
    assert set(t["paper"]) == {"Huber et al.", "Itaya et al."}


def test_settings_that_match_are_listed_apart():
    t = training_table()
    same = t[~t["deviates"]].set_index(["paper", "setting"])
    assert ("Huber et al.", "Optimiser") in same.index and ("Huber et al.", "Double Q") in same.index
    assert ("Itaya et al.", "Adam") in same.index and ("Itaya et al.", "Rollout") in same.index
    shown = show_training(t, "caption", matching=True).to_html()
    assert "Adam (§1.4)" in shown and "20 steps (§2.1)" in shown and "Conv padding" not in shown
    shown = show_training(t, "caption").to_html()
    assert "Conv padding" in shown and "Rollout" not in shown and "<code>deepq</code>" in shown


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
    t = training_table(agents).set_index("setting")
    assert t.loc["Return", "ours"] == "3-step (dqn-Breakout-s0); 1-step (dqn-MsPacman-s0)"
    assert bool(t.loc["Return", "deviates"])  # one agent still deviates
    m = json.loads((agents / "dqn-Breakout-s0" / "meta.json").read_text())
    m["train_args"]["n_step"], m["frames"] = 1, 20_000_000
    del m["config"]["padding"]  # an older agent without the key reads the documented default
    (agents / "dqn-Breakout-s0" / "meta.json").write_text(json.dumps(m))
    t = training_table(agents)
    t = t[t["deviates"]]
    assert "Return" not in set(t["setting"]) and "Training frames" not in set(t["setting"])
    assert "Conv padding" in set(t["setting"])
    assert set(t["paper"]) == {"Huber et al."}  # no actor-critic agent there: no Itaya rows


def test_every_training_setting_reads_every_shipped_agent():
    """Each expression of the data file finds its key in every shipped agent of its kind."""
    metas = [json.loads((ROOT / p / "meta.json").read_text()) for p in shipped_agents()["path"]]
    for group in deviations()["training"]:
        ms = [m for m in metas if m.get("algo") in group["algos"]]
        assert ms, f"no shipped agent for {group['paper']}"
        for s in group["settings"]:
            assert set(s) <= {"setting", "theirs", "read", "paper", "ours", "why"}, s["setting"]
            assert set(s.get("paper") or {}) <= set(s["read"]), s["setting"]
            assert "why" in s or "paper" in s, f"{s['setting']}: a setting that differs by design says why"
            for m in ms:
                values = {k: evaluate(e, m) for k, e in s["read"].items()}
                assert None not in values.values(), (s["setting"], values)


def test_expressions_and_templates():
    env = {"frames": 10_000_000, "train_args": {"n_step": 3}, "source": "mod (runs/x)", "improvements": ["n_step=3"]}
    assert evaluate("train_args.n_step or 1", env) == 3 and evaluate("train_args.missing or 1", env) == 1
    assert evaluate("before(source, ' (')", env) == "mod" and evaluate("mentions(improvements, 'n_step')", env)
    assert fill("{frames / 1e6:.3g} M after {4 * train_args.n_step:,}", env) == "10 M after 12"
    assert fill("{train_args.missing}", env) is None
    for bad in ("__import__('os')", "frames.__class__()", "[frames]", "frames ** 2"):
        with pytest.raises(ValueError, match="unsupported expression"):
            evaluate(bad, env)


@pytest.mark.parametrize("row", deviations()["methods"], ids=lambda r: r["component"])
def test_methods_rows_are_documented_where_they_say(row):
    assert row["kind"] in ("changed", "added")
    assert row["documented in"]
    for path, phrase in row["documented in"].items():
        obj = _resolve(path)
        if phrase is not None:
            assert _flat(phrase) in _flat(obj.__doc__), f"{path}'s docstring no longer says {phrase!r}"


def test_methods_table_has_the_reproduction_rows():
    t = methods_table().set_index("component")
    assert "row-major" in t.loc["Insertion: order of tied pixels", "ours"]
    assert "held fixed" in t.loc["Sanity check on Mask-A3C: recurrent state", "ours"]


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_methods_table_follows_the_profile(profile):
    t = methods_table(profile).set_index("component")
    n = sweep_sizes(profile, "dqn").n_states
    assert f"the first {n} states" in t.loc["Explained states", "ours"]
    assert f"{sweep_sizes(profile, 'mask_a3c').n_states} states of one greedy game" in t.loc["Explained states", "ours"]
    coarse = any(sweep_sizes(profile, k).params for k in ("dqn", "mask_a3c"))
    assert ("Explainer parameters" in t.index) == coarse
    bare = study_deviations.methods_table(profile).set_index("component")  # no coarse parameters worded
    assert "Explainer parameters" not in bare.index and bare.loc["Explained states", "ours"] == t.loc["Explained states", "ours"]
    assert "<code>torch.Generator</code>" in show_methods(t.reset_index(), "caption").to_html()


def test_chapter_no_longer_claims_huber_training():
    nb = (ROOT / "notebooks" / "01_agents.py").read_text()
    assert not re.search(r"(?<!not\* )trained the way", _flat(nb)), "a sentence claims Huber et al.'s training"
    assert "show_training(" in nb and "show_methods(" in nb
