"""The paper's insertion benchmark on the advantage stream alone of a dueling DQN agent (``advstream:``).

Huber et al.'s Keras agents may be the advantage stream of dueling networks, so that their "Q-value"
was the un-centred advantage A(s, a). Our agents are dueling too, and can be read both ways:

* :func:`stream_spec`, :func:`stream_results`: the advantage-stream reading and its insertion rows;
* :func:`clean_outputs`: the explained output on the clean states, the Q-ratio's denominator;
* :func:`stream_agreement`, :func:`stream_better`: which reading's method order follows the paper's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from saliency_study.agreement import rank_agreement, side_by_side
from saliency_study.degradation import PAPER_METHODS, PAPER_SUBSTRATES, auc_summary, pick_agent
from saliency_study.paths import RESULTS_DIR

__all__ = ["SCHEME", "stream_spec", "stream_results", "clean_outputs", "stream_agreement", "stream_better"]

SCHEME = "advstream:"
"""Agent-spec prefix of the advantage-stream reading (:func:`saliency_lib.agents.advantage_stream_agent`)."""


def stream_spec(results: pd.DataFrame) -> str:
    """``advstream:<spec>`` of the DQN agent of ``results``.

    Raises
    ------
    LookupError
        Without a DQN agent in ``results``, or when it has no dueling head (no separate advantage stream).
    """
    from saliency_lib.agents import load_agent

    dqn = pick_agent(results, "dqn")
    if dqn is None:
        raise LookupError("no DQN agent in the results, so there is no advantage stream to explain")
    if not getattr(getattr(load_agent(dqn).net, "config", None), "dueling", False):
        raise LookupError(f"the DQN agent {dqn} has no dueling head, so it has no separate advantage stream")
    return SCHEME + str(dqn)


def stream_results(spec: str, *, profile: str, seed: int = 0, results_dir=RESULTS_DIR, executor: str = "local",
                   progress: bool = False) -> pd.DataFrame:
    """Insertion rows of the advantage stream ``spec`` (:func:`stream_spec`): the paper's methods and substrates,
    on ``profile``'s states and parameters for DQN agents (stored units are reused)."""
    from saliency_lib.sweep import SweepSpec, run_sweep
    from saliency_study.profiles import sweep_sizes

    n, chunk, params = sweep_sizes(profile, "dqn")
    methods = tuple(m for m in PAPER_METHODS if m != "random")  # the random map joins every degradation sweep
    sweep = SweepSpec(agents=(spec,), methods=methods, experiments=("insertion",), substrates=PAPER_SUBSTRATES,
                      n_states=n, chunk=chunk, seed=seed, params={m: p for m, p in params.items() if m in methods})
    return run_sweep(sweep, executor=executor, results_dir=results_dir, progress=progress).table


def clean_outputs(stream: pd.DataFrame, *, results_dir=RESULTS_DIR) -> pd.DataFrame:
    """The explained output on the clean states, the Q-ratio's denominator, in both readings: Q(a) and the
    un-centred A(a). One row per reading: ``reading, states, mean, min, max, negative, near_zero`` (share of
    states below 0, and with ``|output| < 0.1 · median |Q(a)|``)."""
    import torch

    from saliency_lib.agents import load_agent
    from saliency_lib.sweep import study_states

    spec = str(stream["agent"].iloc[0])
    full, adv = load_agent(spec.removeprefix(SCHEME)), load_agent(spec)
    states, _ = study_states(spec, int(stream["state"].max()) + 1, results_dir=results_dir, agent=adv)
    x, a = states.states, states.actions[:, None]
    with torch.no_grad():
        outputs = {"Q(a), the full dueling output": full(x)["q"].gather(1, a)[:, 0].numpy(),
                   "A(a), the advantage stream alone": adv(x)["q"].gather(1, a)[:, 0].numpy()}
    scale = float(np.median(np.abs(outputs["Q(a), the full dueling output"])))
    return pd.DataFrame([{"reading": k, "states": len(v), "mean": float(v.mean()), "min": float(v.min()),
                          "max": float(v.max()), "negative": float((v < 0).mean()),
                          "near_zero": float((np.abs(v) < 0.1 * scale).mean())} for k, v in outputs.items()])


def stream_agreement(results: pd.DataFrame, stream: pd.DataFrame, game: str, *, confidence: float = 0.95,
                     n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.agreement.rank_agreement` for the full-Q and the advantage-stream reading of the
    DQN agent of ``results``, with ``reading`` (``"full Q"`` or ``"advantage stream"``) and ``paper_negative``,
    ``our_negative`` (the common methods with a negative mean AUC). Empty for a game the paper did not run."""
    dqn = pick_agent(results, "dqn")
    rows = pd.concat([results[(results["agent"] == dqn) & (results["experiment"] == "insertion")], stream],
                     ignore_index=True)
    side = side_by_side(auc_summary(rows, confidence=confidence, n_resamples=n_resamples, seed=seed), game)
    if side.empty:
        return pd.DataFrame()
    key = ["agent", "substrate", "paper_measure"]
    neg = side.groupby(key).agg(paper_negative=("paper_mean", lambda s: int((s < 0).sum())),
                                our_negative=("our_mean", lambda s: int((s < 0).sum())))
    agreement = rank_agreement(side).merge(neg.reset_index(), on=key)
    return agreement.assign(reading=np.where(agreement["agent"].astype(str).str.startswith(SCHEME), "advantage stream",
                                             "full Q"))


def stream_better(agreement: pd.DataFrame) -> dict[str, object]:
    """In how many settings the advantage stream's method order agrees better with the paper's than the full Q's
    (the higher Spearman ρ), of how many settings (``"–"`` without both readings)."""
    rho = None if agreement.empty else agreement.pivot_table(
        index=["substrate", "paper_measure"], columns="reading", values="spearman", dropna=False)
    if rho is None or not {"full Q", "advantage stream"} <= set(rho.columns):
        return {"better": "–", "settings": "–"}
    return {"better": int((rho["advantage stream"] > rho["full Q"]).sum()), "settings": len(rho)}
