"""Every result row records the precision its map was computed in (issue "Beyond the forward-pass floor", part 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from saliency_lib.agents import ActorCriticAgent, DQNConfig, DQNNet, MaskA3CConfig, MaskA3CNet, QAgent
from saliency_lib.explainers import get_explainer
from saliency_lib.metrics import Insertion, RandomisationTest
from saliency_lib.results import SCHEMA, read_table, to_table, write_table
from saliency_lib.sweep import RANDOM_BASELINE, Unit, compute_unit


@pytest.fixture(scope="module")
def dqn():
    torch.manual_seed(0)
    return QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)


@pytest.fixture(scope="module")
def a3c():
    torch.manual_seed(0)
    return ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)


def test_the_schema_has_the_column():
    assert SCHEMA["precision"] == "string"


def test_metrics_record_the_explainers_precision(dqn):
    x = torch.rand(2, 4, 84, 84)
    for precision in ("fp32", "bf16"):
        exp = get_explainer("rise", dqn, n_masks=8, precision=precision)
        ins = Insertion(substrate="black").evaluate(dqn, x, explainer=exp, method="rise")
        assert set(ins["precision"]) == {precision}
        san = RandomisationTest(similarities=("spearman",), levels=1, reference_rows=False).evaluate(
            dqn, x, explainer=exp, method="rise")
        assert set(san["precision"]) == {precision}
    maps = torch.rand(2, 84, 84)
    assert Insertion(substrate="black").evaluate(dqn, x, saliency=maps)["precision"].isna().all()  # unknown maps: NA
    assert set(Insertion(substrate="black").evaluate(dqn, x, saliency=maps, precision="fp32")["precision"]) == {"fp32"}


def test_units_record_their_precision_and_a_bf16_default_enters_the_key(a3c):
    from types import SimpleNamespace

    g = torch.Generator().manual_seed(0)
    states = SimpleNamespace(states=torch.randn(2, 1, 80, 80, generator=g), actions=torch.tensor([0, 1]),
                             hidden=tuple(0.1 * torch.randn(2, 64, 10, 10, generator=g) for _ in range(2)))
    base = dict(experiment="degradation", agent="toy", game="Breakout", degradation=(("insertion", "black"),), states=(0, 1),
                state_config="{}", seed=0)
    rise = Unit(method="rise", params=json.dumps({"n_masks": 4, "precision": "bf16"}), **base)
    rand = Unit(method=RANDOM_BASELINE, params="{}", **base)
    occ = Unit(method="occlusion", params=json.dumps({"patch": 40}), **base)
    assert (rise.precision, rand.precision, occ.precision) == ("bf16", None, "fp32")
    assert set(compute_unit(rise, a3c, states)["precision"]) == {"bf16"}
    assert compute_unit(rand, a3c, states)["precision"].isna().all()
    assert set(compute_unit(occ, a3c, states)["precision"]) == {"fp32"}
    assert rise.key != Unit(method="rise", params=json.dumps({"n_masks": 4}), **base).key


def test_plans_write_a_bf16_default_into_the_units_parameters(agent_dir, monkeypatch, tmp_path):
    """No method defaults to bf16 today (bf16_decision.json); if one did, its units would say so and get new keys."""
    import saliency_lib.explainers._precision as precision
    from saliency_lib.sweep import SweepSpec, plan_units

    spec = SweepSpec(agents=(agent_dir,), methods=("rise", "occlusion"), n_states=2, chunk=2, experiments=("insertion",),
                     substrates=("black",), params={"rise": {"n_masks": 4}})
    units, _ = plan_units(spec, results_dir=tmp_path, states=False)
    assert {u.method: u.precision for u in units} == {"rise": "fp32", "occlusion": "fp32", RANDOM_BASELINE: None}
    assert all("precision" not in json.loads(u.params) for u in units)  # float32 defaults keep the keys stored before
    a3c = Path(__file__).resolve().parents[2] / "data" / "agents" / "a3c-Breakout-double-s0"
    monkeypatch.setattr(precision, "BF16_DEFAULTS", frozenset({("mask_a3c", "rise")}))
    if (a3c / "model.safetensors").exists():
        units, _ = plan_units(SweepSpec(agents=(str(a3c),), methods=("rise", "occlusion"), n_states=2, chunk=2,
                                        experiments=("insertion",), substrates=("black",)), results_dir=tmp_path, states=False)
        assert {u.method: u.precision for u in units} == {"rise": "bf16", "occlusion": "fp32", RANDOM_BASELINE: None}
        assert json.loads(next(u for u in units if u.method == "rise").params) == {"precision": "bf16"}


def test_tables_stored_before_the_column_read_as_na(tmp_path):
    rows = to_table([{"experiment": "insertion", "agent": "a", "game": "Breakout", "method": "m", "state": 0,
                      "measure": "q_ratio", "value": 1.0}])
    old = rows.drop(columns=["precision"])
    path = tmp_path / "old.parquet"
    old.to_parquet(path)
    back = read_table(path)
    assert list(back.columns) == list(SCHEMA) and back["precision"].isna().all()
    write_table(rows.assign(precision="bf16"), tmp_path / "new.parquet")
    assert set(read_table(tmp_path / "new.parquet")["precision"]) == {"bf16"}
