"""The insertion/deletion AUC that the book states is the one the library computes and stores.

The formula, as in ``book/intro.md`` (label ``eq-auc``), the metric's docstring and
Huber et al.'s code (reference notes §6: the plain mean of the 85 step values)::

    AUC = 1/(K+1) · Σ_{k=0}^{K} f_a(s^(k))

``s^(0)`` is the start (the substrate for insertion, the intact state for deletion),
``s^(K)`` the other end, so the start state counts. The tests compute it by hand and
compare it with :func:`saliency_lib.metrics.auc` and with the ``<measure>_auc`` rows that
:class:`~saliency_lib.metrics.Insertion` and :class:`~saliency_lib.metrics.Deletion` store.
"""

from pathlib import Path

import numpy as np
import pytest
import torch
from toy_models import TwoHeadNet, as_agent, random_states

from saliency_lib.metrics import Deletion, Insertion, auc

ROOT = Path(__file__).resolve().parents[2]


def by_hand(curve) -> float:
    """AUC = 1/(K+1) · Σ_{k=0}^{K} f_k, written out as a loop."""
    total = 0.0
    for f_k in curve:  # k = 0 … K
        total += f_k
    return total / len(curve)  # len(curve) = K + 1


def test_auc_of_a_tiny_curve_is_the_mean_including_step_zero():
    curve = np.array([0.0, 1.0, 3.0])  # K = 2 steps: f_0 (start), f_1, f_2
    assert by_hand(curve) == pytest.approx(4 / 3)
    assert auc(curve[None])[0] == pytest.approx(by_hand(curve))
    # The formula the intro stated before: (1/K) Σ_{k=1}^{K} leaves out the start and gives 2.
    assert auc(curve[None])[0] != pytest.approx(curve[1:].sum() / 2)


def _half_map() -> np.ndarray:
    """Saliency 1 on the top 42 rows, 0 below: with 3528 pixels per step, step 1 changes exactly the top half."""
    m = np.zeros((84, 84))
    m[:42] = 1.0
    return m[None]


def _measures(q: torch.Tensor, a: int, q_clean_a: float) -> dict[str, float]:
    return {"q_ratio": float(q[a] / q_clean_a), "advantage": float(q[a] - q.mean())}


@pytest.mark.parametrize("metric", [Insertion, Deletion])
@pytest.mark.parametrize("measure", ["q_ratio", "advantage"])
def test_stored_auc_equals_the_formula_on_hand_built_states(metric, measure):
    """Two steps (K = 2, three evaluations) on a network whose outputs we evaluate ourselves."""
    net = TwoHeadNet()  # action 0 reads a patch in the top half, action 1 a patch in the bottom half
    agent = as_agent(net, 2)
    x = random_states(1, seed=3)
    z = torch.zeros_like(x)  # the black substrate
    top = torch.zeros(1, 1, 84, 1, dtype=torch.bool)
    top[:, :, :42] = True
    mixed_ins, mixed_del = torch.where(top, x, z), torch.where(top, z, x)
    path = [z, mixed_ins, x] if metric is Insertion else [x, mixed_del, z]  # s^(0), s^(1), s^(2)
    with torch.no_grad():
        q_clean = net(x)[0]
        a = int(q_clean.argmax())
        curve = [_measures(net(s)[0], a, float(q_clean[a]))[measure] for s in path]

    table = metric(substrate="black", pixels_per_step=42 * 84).evaluate(agent, x, saliency=_half_map())
    stored = table.loc[table["measure"] == f"{measure}_auc", "value"]
    steps = table.loc[table["measure"] == measure].sort_values("step")["value"].to_numpy()
    assert len(steps) == 3  # K + 1 evaluations
    np.testing.assert_allclose(steps, curve, rtol=1e-5, atol=1e-6)
    assert float(stored.iloc[0]) == pytest.approx(by_hand(curve), rel=1e-5, abs=1e-6)


def test_the_intro_states_the_tested_formula():
    """``book/intro.md``'s eq-auc is the formula tested above (and not the 1/K, k = 1 … K form)."""
    text = (ROOT / "book" / "intro.md").read_text()
    block = text.split(":label: eq-auc", 1)[1].split("```", 1)[0]
    assert r"\frac{1}{K+1} \sum_{k=0}^{K}" in block
    assert r"\frac{1}{K}" not in block
