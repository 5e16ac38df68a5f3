"""Huber et al.'s §6.2 ablation beside ours, and the robust AUC aggregates (saliency_study.degradation)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from saliency_study.degradation import ablation_table, robust_aucs
from saliency_study.paper import paper_insertion


def _aucs(shift: float, n: int = 300, noise: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """Breakout, black, Q-ratio: occlusion's AUCs and gray occlusion's = occlusion's + ``shift`` + noise."""
    rng = np.random.default_rng(seed)
    base = rng.normal(2.0, 1.0, n)
    rows = [{"game": "Breakout", "substrate": "black", "measure": "q_ratio", "method": m, "state": i, "value": v}
            for m, values in (("occlusion", base), ("occlusion_gray", base + shift + rng.normal(0, noise, n)))
            for i, v in enumerate(values)]
    return pd.DataFrame(rows)


def _paper_change() -> float:
    main, abl = paper_insertion("main"), paper_insertion("ablation")
    cell = lambda p: p[(p.game == "Breakout") & (p.substrate == "black") & (p.measure == "q_ratio")  # noqa: E731
                       & (p.method == "occlusion")]["mean"].item()
    return cell(abl) - cell(main)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_paired_change_is_measured_and_its_direction_compared_with_the_papers(sign):
    paper = _paper_change()
    assert paper != 0
    t = ablation_table(_aucs(sign * 0.5))
    (row,) = t.to_dict("records")
    assert row["method"] == "occlusion" and row["ablated"] == "occlusion_gray" and row["n"] == 300
    assert row["paper_change"] == pytest.approx(paper)
    assert row["change"] == pytest.approx(sign * 0.5, abs=0.02)
    assert row["change_low"] < row["change"] < row["change_high"] and row["p"] < 1e-6
    assert row["direction"] == ("agrees" if np.sign(sign) == np.sign(paper) else "opposite")


def test_no_change_is_not_significant_and_settings_without_the_paper_are_left_out():
    t = ablation_table(_aucs(0.0, noise=1.0, seed=3))
    assert t["direction"].tolist() == ["not significant"]
    pong = _aucs(0.5).assign(game="Pong")
    assert ablation_table(pong).empty and list(ablation_table(pong).columns)[:3] == ["game", "method", "ablated"]


def test_robust_aggregates_are_not_carried_by_one_state():
    values = [1.0, 2.0, 3.0, 4.0, 1000.0]
    a = pd.DataFrame({"game": "Breakout", "substrate": "black", "measure": "q_ratio", "method": "occlusion",
                      "state": range(5), "value": values})
    (row,) = robust_aucs(a).to_dict("records")
    assert row["n"] == 5 and row["mean"] == pytest.approx(202.0) and row["median"] == 3.0
    assert row["iqm"] == pytest.approx(3.0)  # 25 % trimmed at each end: the mean of 2, 3, 4
    p = paper_insertion("main")
    assert row["paper"] == p[(p.game == "Breakout") & (p.substrate == "black") & (p.measure == "q_ratio")
                             & (p.method == "occlusion")]["mean"].item()
    assert robust_aucs(a.iloc[:0]).empty
