"""The ``sanity`` and ``insertion`` commands, on a small untrained DQN checkpoint."""

import argparse
import json

import pandas as pd
import pytest
import torch

from saliency_lib.agents import build_agent, save_agent
from saliency_lib.cli.metrics import add_metrics_parsers
from saliency_lib.results import KEY, read_table


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    torch.manual_seed(0)
    agent = build_agent("DQNNet", {"n_actions": 4, "hidden": 32}, game="Breakout", preset="dqn")
    return str(save_agent(agent, tmp_path_factory.mktemp("ckpt") / "dqn"))


def _parse(*argv):
    p = argparse.ArgumentParser()
    add_metrics_parsers(p.add_subparsers(dest="command", required=True))
    return p.parse_args(argv)


def test_sanity_command(checkpoint, tmp_path, capsys):
    out = tmp_path / "sanity"
    params = json.dumps({"occlusion": {"patch": 12}})
    argv = ["sanity", checkpoint, "--methods", "occlusion", "random", "--states", "4", "--levels", "2", "--chunk", "3",
            "--out", str(out), "--params", params, "--similarities", "spearman", "ssim", "--quiet"]
    args = _parse(*argv)
    assert args.func(args) == 0
    table = read_table(out / "sanity.parquet")
    assert set(table["method"]) == {"occlusion", "random"}
    assert set(table["layer"]) == {"original", "output", "fc", "random_uniform", "random_gaussian"}
    assert len(table) == 2 * 4 * 5 * 2  # methods × states × (3 levels + 2 references) × measures
    assert (out / "sanity.png").stat().st_size > 1000
    summ = pd.read_csv(out / "sanity_summary.csv")
    assert {"ci_low", "ci_high", "mean", "std"} <= set(summ.columns)
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert {ln["layer"] for ln in lines} >= {"output", "fc"} and all("ci95" in ln for ln in lines)
    parts = sorted((out / "sweep" / "sanity").glob("*.parquet"))
    assert len(parts) == 4  # units: 2 methods × 2 chunks, in the study's store
    mtimes = [p.stat().st_mtime_ns for p in parts]
    # a re-run reuses the cache and reproduces the table
    assert args.func(_parse(*argv)) == 0
    assert [p.stat().st_mtime_ns for p in parts] == mtimes
    pd.testing.assert_frame_equal(read_table(out / "sanity.parquet"), table)


def test_insertion_command(checkpoint, tmp_path, capsys):
    out = tmp_path / "ins"
    args = _parse("insertion", checkpoint, "--methods", "occlusion", "--states", "3", "--substrate", "random",
                  "--mode", "deletion", "--pixels-per-step", "700", "--out", str(out),
                  "--params", json.dumps({"occlusion": {"patch": 12}}), "--quiet")
    assert args.func(args) == 0
    table = read_table(out / "deletion_random.parquet")
    assert set(table["method"]) == {"occlusion", "random"}  # the random-map baseline is added
    assert not table.duplicated(list(KEY)).any()
    assert table["step"].isna().all()  # per-state AUCs; the curves are kept as means over states
    curves = pd.read_csv(out / "deletion_random_curves.csv")
    assert curves["step"].max() == 11  # ceil(7056 / 700) steps
    assert set(curves["method"]) == {"occlusion", "random"} and (curves["n"] == 3).all()
    assert (curves["low"] <= curves["mean"]).all() and (curves["mean"] <= curves["high"]).all()
    assert (out / "deletion_random_ranking_q_ratio_auc.csv").exists()
    assert (out / "deletion_random.png").exists()
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert {ln["measure"] for ln in lines} >= {"q_ratio_auc", "advantage_auc_trapz"}


def test_cli_errors(checkpoint, tmp_path):
    args = _parse("sanity", checkpoint, "--methods", "occlusion", "--states", "2", "--out", str(tmp_path), "--params", "{bad")
    with pytest.raises(ValueError, match="--params must be a JSON object"):
        args.func(args)
    args = _parse("sanity", checkpoint, "--methods", "occlusion", "--states", "2", "--out", str(tmp_path), "--params",
                  '{"rise": {}}')
    with pytest.raises(ValueError, match="not in --methods"):
        args.func(args)
    args = _parse("sanity", checkpoint, "--methods", "nonsense", "--states", "2", "--out", str(tmp_path))
    with pytest.raises(ValueError, match="unknown methods \\['nonsense'\\]"):
        args.func(args)
    args = _parse("sanity", checkpoint, "--methods", "occlusion", "--states", "0", "--out", str(tmp_path))
    with pytest.raises(ValueError, match="--states must be >= 1, got 0"):
        args.func(args)
    with pytest.raises(SystemExit):
        _parse("insertion", checkpoint, "--substrate", "gray", "--out", str(tmp_path))


def test_sanity_and_run_write_through_the_same_store(checkpoint, tmp_path):
    """One pipeline: the units of ``sanity`` are the units of ``run`` with the same sweep."""
    from saliency_lib.cli import main

    out = tmp_path / "store"
    assert main(["sanity", checkpoint, "--methods", "gradient", "--states", "2", "--chunk", "2", "--out", str(out),
                 "--quiet"]) == 0
    units = sorted(p.name for p in (out / "sweep" / "sanity").glob("*.parquet"))
    assert len(units) == 1
    before = (out / "sweep" / "sanity" / units[0]).stat().st_mtime_ns
    assert main(["run", "--agents", checkpoint, "--methods", "gradient", "--n-states", "2", "--chunk", "2",
                 "--experiments", "sanity", "--results-dir", str(out), "--no-progress"]) == 0
    assert sorted(p.name for p in (out / "sweep" / "sanity").glob("*.parquet")) == units  # found, not recomputed
    assert (out / "sweep" / "sanity" / units[0]).stat().st_mtime_ns == before
