"""objects_report: the JSON summary of localisation and object faithfulness on a shipped agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from saliency_lib.objects.report import objects_report

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def agent():
    from saliency_lib.agents import load_agent

    return load_agent(str(ROOT / "data" / "agents" / "dqn-Breakout-s0"))


def test_breakout_random_map_at_chance_and_occlusion_above_it(agent):
    rep = objects_report(agent, ["occlusion", "random"], n_states=20)
    json.dumps(rep, allow_nan=False)  # JSON-able, no NaN
    assert rep["n_states"] == 20 and rep["game"] == "Breakout" and rep["ess"] > 1
    for m in ("occlusion", "random"):
        r = rep["methods"][m]
        assert {"relevance_mass", "relevance_rank", "pointing_game", "object_faithfulness", "chance"} <= set(r)
        assert r["relevance_mass_ci"][0] <= r["relevance_mass"] <= r["relevance_mass_ci"][1]
        assert {"all", "no_hud", "hud", "cls:Ball", "cls:Player", "cls:Block"} <= set(r["groups"])
    rnd, occ = rep["methods"]["random"], rep["methods"]["occlusion"]
    assert abs(rnd["relevance_mass"] - rnd["chance"]) < 0.05
    assert occ["relevance_mass"] > rnd["relevance_mass"]
    assert occ["chance"] == rnd["chance"]


def test_bad_arguments(agent):
    with pytest.raises(ValueError, match="exactly one"):
        objects_report(agent, ["random"])
    with pytest.raises(ValueError, match="unknown method"):
        objects_report(agent, ["occlusionn"], n_states=2)
    with pytest.raises(ValueError, match="at least one"):
        objects_report(agent, [], n_states=2)
    with pytest.raises(ValueError, match="unknown group"):
        objects_report(agent, ["random"], n_states=2, group="ball")


def test_the_objects_command_prints_one_json_object_and_refuses_bad_input(capsys):
    """``saliency-study objects AGENT --states N --json``: the report's fields; bad input: one line, exit 2."""
    import json
    from pathlib import Path

    from saliency_lib.cli import main

    agent = str(Path(__file__).resolve().parents[2] / "data" / "agents" / "dqn-Breakout-s0")
    assert main(["objects", agent, "--states", "3", "--methods", "random", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_states"] == 3 and set(report["methods"]) == {"random"}
    assert {"relevance_mass", "relevance_rank", "pointing_game", "object_faithfulness", "chance"} <= set(
        report["methods"]["random"])
    for argv, message in ((["--states", "0"], "--states: must be a positive"), (["--methods", "shap"], "unknown method")):
        assert main(["objects", agent, *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
