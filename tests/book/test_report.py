"""``saliency-study report``: its checks (one line on stderr, exit 2), its estimate, its plan, and one real report.

The command is called in-process through its parser (:func:`saliency_book.report.add_report_parser`), so these
tests need no reinstall of the entry point. The last test builds a whole report of an SB3 DQN trained by SB3
for 300 steps (slow: about ten minutes here).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest
import torch

from saliency_book.report import REPORT_CHAPTERS, REPORT_PAGE, add_report_parser, plan_report, report_specs
from saliency_book.report.build import report_toc
from saliency_book.report.plan import canonical_spec
from saliency_study.paths import REPO_ROOT

ENV_ID = "BreakoutNoFrameskip-v4"


def run(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="saliency-study")
    add_report_parser(p.add_subparsers(dest="command"))
    args = p.parse_args(["report", *argv])
    return args.func(args)


def one_line_error(capsys, argv: list[str], *needles: str, status: int = 2) -> str:
    """Run the command; it must fail with ``status`` and exactly one stderr line holding every needle."""
    assert run(argv) == status
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("saliency-study report: error: ") and "Traceback" not in err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def cleanrl_dqn(tmp_path_factory) -> Path:
    """A CleanRL dqn_atari checkpoint for Breakout (4 actions), in CleanRL's run-folder layout."""
    from saliency_lib.agents.cleanrl import CleanRLQNetwork

    torch.manual_seed(0)
    d = tmp_path_factory.mktemp("cleanrl") / f"{ENV_ID}__dqn_atari__1__0"
    d.mkdir()
    path = d / "dqn_atari.cleanrl_model"
    torch.save(CleanRLQNetwork(4).state_dict(), path)
    return path


# -- bad input: one line, exit 2 ---------------------------------------------------------------------

def test_wrong_spec_is_one_line(capsys, tmp_path):
    one_line_error(capsys, ["nosuch:thing", "--out", str(tmp_path / "r")], "unknown agent spec scheme 'nosuch'")
    text = tmp_path / "model.zip"
    text.write_text("not a model")
    one_line_error(capsys, [f"sb3:Breakout:{text}", "--out", str(tmp_path / "r")], "is not a zip archive")


def test_missing_file_is_one_line(capsys, tmp_path):
    one_line_error(capsys, [f"sb3:Breakout:{tmp_path / 'missing.zip'}", "--out", str(tmp_path / "r")],
                   "no sb3 model file at", "missing.zip")
    one_line_error(capsys, [str(tmp_path / "no-such-agent"), "--out", str(tmp_path / "r")], "no agent at")


def test_game_the_action_space_does_not_fit_is_one_line(capsys, tmp_path, cleanrl_dqn):
    one_line_error(capsys, [f"cleanrl:{cleanrl_dqn}", "--game", "Pong", "--out", str(tmp_path / "r")],
                   "has 4 actions but Pong's minimal action set has 6")
    one_line_error(capsys, [f"cleanrl:Breakout:{cleanrl_dqn}", "--game", "Pong", "--out", str(tmp_path / "r")],
                   "--game Pong contradicts the spec")


def test_game_of_a_checkpoint_is_its_own(capsys, tmp_path, agent_dir):
    one_line_error(capsys, [agent_dir, "--game", "MsPacman", "--out", str(tmp_path / "r")],
                   "--game MsPacman contradicts the agent", "plays Breakout")


def test_bad_options_are_one_line(capsys, tmp_path, agent_dir):
    out = ["--out", str(tmp_path / "r")]
    one_line_error(capsys, [agent_dir, "--states", "0", *out], "--states must be an integer >= 1, got 0")
    one_line_error(capsys, [agent_dir, "--methods", "occlusion", "nosuch", *out], "--methods must name the study's methods",
                   "nosuch")
    one_line_error(capsys, [agent_dir, "--methods", "mask_policy", *out], "mask_policy cannot explain this agent")
    one_line_error(capsys, [agent_dir, "--game", "Tetris", *out], "unknown game 'Tetris'")
    (tmp_path / "file").write_text("")
    one_line_error(capsys, [agent_dir, "--out", str(tmp_path / "file")], "is a file")


def test_unsupported_network_gives_a_notice_not_an_error(capsys, tmp_path, cleanrl_dqn):
    """A CleanRL network has no incremental inference: the estimate says so and prices full passes."""
    argv = [f"cleanrl:{cleanrl_dqn}", "--profile", "tiny", "--states", "1", "--methods", "occlusion",
            "--results-dir", str(tmp_path / "results"), "--out", str(tmp_path / "r"), "--estimate-only"]
    assert run(argv) == 0
    cap = capsys.readouterr()
    assert "sweep units to compute" in cap.out and "Traceback" not in cap.err
    notice = [line for line in cap.err.splitlines() if line.startswith("notice:")]
    assert len(notice) == 1 and "CleanRLQNetwork is not a DQNNet" in notice[0] and "full forward passes" in notice[0]


# -- the plan ------------------------------------------------------------------------------------------

def test_canonical_spec_names_the_game_and_an_absolute_path(tmp_path, cleanrl_dqn, agent_dir, monkeypatch):
    assert canonical_spec(f"cleanrl:{cleanrl_dqn}") == f"cleanrl:{cleanrl_dqn.resolve()}"
    assert canonical_spec(f"cleanrl:{cleanrl_dqn}", "Breakout") == f"cleanrl:Breakout:{cleanrl_dqn.resolve()}"
    monkeypatch.chdir(cleanrl_dqn.parent)
    assert canonical_spec(f"cleanrl:Breakout:{cleanrl_dqn.name}") == f"cleanrl:Breakout:{cleanrl_dqn.resolve()}"
    assert canonical_spec(agent_dir) == str(Path(agent_dir).resolve())  # outside the repository: absolute
    inside = REPO_ROOT / "data" / "agents" / "dqn-Breakout-s0"
    monkeypatch.chdir(inside.parent)
    assert canonical_spec("dqn-Breakout-s0") == "data/agents/dqn-Breakout-s0"  # the study's spelling
    monkeypatch.chdir(tmp_path)
    assert canonical_spec("data/agents/dqn-Breakout-s0") == "data/agents/dqn-Breakout-s0"  # relative to the repository
    assert canonical_spec("official:Breakout") == "official:Breakout"
    with pytest.raises(ValueError, match="contradicts"):
        canonical_spec("official:Breakout", "Pong")


def test_plan_reads_the_game_from_the_path_and_the_chapters_get_it(tmp_path, cleanrl_dqn):
    plan = plan_report(f"cleanrl:{cleanrl_dqn}", out=tmp_path / "r", states=2, methods="occlusion,gradient",
                       profile="tiny", results_dir=tmp_path / "results")
    assert plan.spec == f"cleanrl:Breakout:{cleanrl_dqn.resolve()}" and plan.game == "Breakout"
    assert plan.methods == ("occlusion", "gradient") and plan.full_passes == "CleanRLQNetwork is not a DQNNet"
    assert plan.parameters == {"agent": plan.spec, "game": "Breakout", "methods": "occlusion,gradient", "n_states": 2,
                               "executor": "local", "seed": 0}
    specs = report_specs(plan)
    mine = [s for s in specs if s.agents == (plan.spec,)]
    assert len(mine) == 1 and mine[0].n_states == 2 and mine[0].methods == ("occlusion", "gradient")
    assert set(mine[0].experiments) == {"sanity", "insertion", "deletion"}
    assert all(s.experiments == ("sanity",) for s in specs if s.agents != (plan.spec,))  # chapter 3's other agent


def test_profile_specs_overrides_states_and_methods(agent_dir):
    from saliency_study.study import profile_specs

    (s,) = profile_specs("tiny", "Breakout", agents=[agent_dir])
    (o,) = profile_specs("tiny", "Breakout", agents=[agent_dir], n_states=5, methods=["rise", "sarfa_blur", "gradient"])
    assert o.n_states == 5 and s.n_states == 2
    assert o.methods == ("rise", "gradient") and o.degradation_only == ("sarfa_blur",)
    assert o.params == s.params and s.degradation_only == ("occlusion_gray", "sarfa_blur")


def test_report_toc_lists_the_front_page_and_the_chapters():
    import yaml

    toc = yaml.safe_load(report_toc(Path(REPORT_PAGE).stem, [Path(c).stem for c in REPORT_CHAPTERS]))
    assert toc["root"] == "chapters/_agent_report"
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert files == ["chapters/02_gallery", "chapters/03_sanity", "chapters/04_degradation", "chapters/07_explorer",
                     "reproduce", "references"]
    assert all((REPO_ROOT / c).is_file() for c in (REPORT_PAGE, *REPORT_CHAPTERS))


# -- the estimate -------------------------------------------------------------------------------------

def test_estimate_prices_full_passes_coarse_parameters_and_stored_units(tmp_path, agent_dir, cleanrl_dqn):
    from saliency_lib.agents import load_agent
    from saliency_lib.sweep import SweepSpec, plan_units, run_sweep
    from saliency_study.cost import estimate_sweep, read_costs, unit_seconds

    costs = read_costs()
    assert costs is not None and costs["unit_s"] > 0 and costs["startup_s"] > 0
    spec = SweepSpec(agents=(agent_dir,), methods=("occlusion",), experiments=("sanity",), n_states=2, chunk=2)
    (unit,), _ = plan_units(spec, results_dir=tmp_path, states=False)
    agent = load_agent(agent_dir)
    fast, naive = (unit_seconds(unit, agent, costs, full_passes=f) for f in (False, True))
    per = costs["cascade"]["per_method_ms_per_state"]["occlusion"]
    share = costs["cascade"]["similarity_ms_per_state"] / len(costs["cascade"]["methods"])
    assert fast == pytest.approx(2 * (per["fast"] + share) / 1000 + costs["unit_s"])
    assert naive == pytest.approx(2 * (per["naive"] + share) / 1000 + costs["unit_s"])
    coarse = SweepSpec(agents=(agent_dir,), methods=("occlusion",), experiments=("sanity",), n_states=2, chunk=2,
                       params={"occlusion": {"patch": 12}})
    (cu,), _ = plan_units(coarse, results_dir=tmp_path, states=False)
    # the default occlusion slides a 2-pixel patch by 2 pixels, this one a 12-pixel patch by 12: 36 times fewer
    assert unit_seconds(cu, agent, costs, full_passes=False) - costs["unit_s"] == pytest.approx((fast - costs["unit_s"]) / 36)

    tiny = SweepSpec(agents=(agent_dir,), methods=("gradient",), experiments=("sanity",), n_states=2, chunk=1)
    before = estimate_sweep([tiny], results_dir=tmp_path)
    assert (before.units, before.missing) == (2, 2) and before.seconds > 0 and before.full_passes == {}
    run_sweep(tiny, results_dir=tmp_path)
    after = estimate_sweep([tiny], results_dir=tmp_path)
    assert (after.units, after.missing, after.seconds) == (2, 0, 0.0) and "nothing to compute" in after.line()
    foreign = estimate_sweep([SweepSpec(agents=(f"cleanrl:Breakout:{cleanrl_dqn}",), methods=("gradient",),
                                        experiments=("sanity",), n_states=1, chunk=1)], results_dir=tmp_path)
    assert list(foreign.full_passes.values()) == ["CleanRLQNetwork is not a DQNNet"]


# -- one whole report ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sb3_breakout(tmp_path_factory) -> Path:
    """An SB3 DQN trained by SB3 itself for 300 steps on its Atari wrappers, saved with ``model.save``."""
    sb3 = pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import VecFrameStack

    from saliency_lib import envs  # noqa: F401  (registers the ALE environments)

    env = VecFrameStack(make_atari_env(ENV_ID, n_envs=1, seed=0), n_stack=4)
    model = sb3.DQN("CnnPolicy", env, buffer_size=1000, learning_starts=100, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))
    model.learn(300)
    path = tmp_path_factory.mktemp("sb3") / "model.zip"
    model.save(path)
    env.close()
    return path


@pytest.mark.slow
def test_report_of_an_sb3_dqn_builds_offline(tmp_path, sb3_breakout, capsys):
    """``report sb3:Breakout:model.zip --states 3 --profile tiny``: pages with the gallery, the sanity checks and
    insertion, no traceback on any page, every resource local; a second report computes no unit again."""
    from saliency_book.builder.offline import check_offline

    results = tmp_path / "results"
    (results / "sweep").mkdir(parents=True)
    # the stored paper-scale study that the pages compare with (read only); the report's own units go to `results`
    os.symlink(REPO_ROOT / "data" / "results" / "sweep" / "packs", results / "sweep" / "packs")
    out = tmp_path / "report"
    assert run([f"sb3:Breakout:{sb3_breakout}", "--states", "3", "--profile", "tiny", "--out", str(out),
                "--results-dir", str(results), "--quiet"]) == 0
    cap = capsys.readouterr()
    assert cap.out.strip() == str(out / "index.html") and "sweep units to compute" in cap.err
    html = out / "book" / "_build" / "html"
    pages = {p.relative_to(html).as_posix(): p.read_text() for p in html.rglob("*.html") if "_static" not in p.parts}
    for name in ("chapters/_agent_report.html", "chapters/02_gallery.html", "chapters/03_sanity.html",
                 "chapters/04_degradation.html", "chapters/07_explorer.html"):
        assert name in pages, sorted(pages)
    for name, text in pages.items():
        assert "Traceback" not in text, name
    front = pages["chapters/_agent_report.html"]
    assert "Your agent" in front and "Huber et al." in front and "Insertion" in front and "fig-report-video" in front
    assert "SB3QNetwork" in front and "stable-baselines3" in front
    assert "Sanity checks" in pages["chapters/03_sanity.html"] and "Input degradation" in pages["chapters/04_degradation.html"]
    assert check_offline(html) == []
    meta = json.loads((out / "book" / "_build" / "timings.json").read_text())
    assert set(meta["chapters"]) == {"_agent_report", "02_gallery", "03_sanity", "04_degradation", "07_explorer"}

    from saliency_study.cost import estimate_sweep

    plan = plan_report(f"sb3:Breakout:{sb3_breakout}", out=out, states=3, profile="tiny", results_dir=results)
    assert estimate_sweep(report_specs(plan), results_dir=results).missing == 0  # the second report computes no unit

    from saliency_book.builder.browser import ChromiumMissing, check_book, ensure_chromium

    try:
        ensure_chromium()
    except ChromiumMissing as e:
        pytest.skip(str(e))
    problems = [f"{r.page}: {p}" for r in check_book(html) for p in r.problems]
    assert not problems, problems
