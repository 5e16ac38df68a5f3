"""Chapter 4, "Which output did the paper explain?": insertion on the advantage stream of our DQN agent.

Huber et al.'s Keras agents may be the *advantage stream* of dueling networks: the converter
they used builds the dueling graph but saves only the action stream (reference notes §1.3,
an open question). Their "Q-value" would then be the un-centred advantage A(s, a), whose
level and sign carry no meaning, and the Q-ratio A_t(a) / A_x(a) would divide by a number
that can be near zero or negative. Our agents are dueling too, so we can run the paper's
insertion benchmark on both readings of the same network and see which one resembles the
paper's tables more.

* :func:`stream_results`: insertion rows (black and random, the paper's methods) of
  ``advstream:<DQN agent>`` (:func:`saliency_lib.agents.advantage_stream_agent`), from the
  study's sweep, so they are stored and reused like every other unit.
* :func:`clean_outputs`, :func:`style_clean_outputs`: the explained output on the clean
  states, the Q-ratio's denominator, in both readings.
* :func:`stream_agreement`, :func:`stream_sentence`: rank agreement with the paper for both
  readings, and a sentence formatted from it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from saliency_book.ch4_degradation import (
    PAPER_METHODS,
    PAPER_SUBSTRATES,
    DegradationChapter,
    auc_summary,
    measure_label,
    pick_agent,
)
from saliency_book.ch4_rankings import rank_agreement, side_by_side
from saliency_book.common import Note, fmt2, join_words

__all__ = ["SCHEME", "stream_spec", "stream_results", "clean_outputs", "style_clean_outputs", "stream_agreement",
           "stream_sentence"]

SCHEME = "advstream:"
"""Agent-spec prefix of the advantage-stream reading (:func:`saliency_lib.agents.load_agent`)."""


def stream_spec(results: pd.DataFrame | Note) -> str | Note:
    """``advstream:<spec>`` of the chapter's DQN agent, or a Note when there is none or it is not dueling."""
    from saliency_lib.agents import load_agent

    dqn = pick_agent(results, "dqn")
    if dqn is None:
        return Note("No DQN agent in this chapter's results, so there is no advantage stream to explain.",
                    title="No DQN agent")
    config = getattr(load_agent(dqn).net, "config", None)
    if not getattr(config, "dueling", False):
        return Note(f"The chapter's DQN agent ({dqn}) has no dueling head, so it has no separate advantage stream.",
                    title="Not a dueling agent")
    return SCHEME + str(dqn)


def stream_results(cfg: DegradationChapter, results: pd.DataFrame | Note, *, progress: bool = False
                   ) -> pd.DataFrame | Note:
    """Insertion rows of the advantage stream of the chapter's DQN agent: the paper's methods and substrates.

    The sweep has the chapter's profile sizes for DQN agents, so its states and explainer
    parameters are those of the full-Q rows it is compared with. Stored units are reused.
    """
    from saliency_lib.sweep import SweepSpec, run_sweep
    from saliency_study.profiles import sweep_sizes

    spec = stream_spec(results)
    if isinstance(spec, Note):
        return spec
    n, chunk, params = sweep_sizes(cfg.profile, "dqn")
    methods = tuple(m for m in PAPER_METHODS if m != "random")  # the random map joins every degradation sweep
    sweep = SweepSpec(agents=(spec,), methods=methods, experiments=("insertion",), substrates=PAPER_SUBSTRATES,
                      n_states=n, chunk=chunk, seed=cfg.seed, params={m: p for m, p in params.items() if m in methods})
    return run_sweep(sweep, executor=cfg.executor, results_dir=cfg.results_dir, progress=progress).table


def clean_outputs(cfg: DegradationChapter, stream: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """The explained output on the clean states in both readings: Q(a) and the un-centred A(a).

    Returns
    -------
    DataFrame or Note
        One row per reading: ``reading, states, mean, min, max, negative, near_zero`` (share of
        states with the output below 0, and with ``|output| < 0.1 · median |Q(a)|``).
    """
    import torch

    from saliency_lib.agents import load_agent
    from saliency_lib.sweep import study_states

    if isinstance(stream, Note):
        return stream
    spec = str(stream["agent"].iloc[0])
    base = spec.removeprefix(SCHEME)
    n = int(stream["state"].max()) + 1
    full, adv = load_agent(base), load_agent(spec)
    states, _ = study_states(spec, n, results_dir=cfg.results_dir, agent=adv)
    x, a = states.states, states.actions[:, None]
    with torch.no_grad():
        q = full(x)["q"]
        outputs = {"Q(a), the full dueling output": q.gather(1, a)[:, 0].numpy(),
                   "A(a), the advantage stream alone": adv(x)["q"].gather(1, a)[:, 0].numpy()}
    scale = float(np.median(np.abs(outputs["Q(a), the full dueling output"])))
    rows = [{"reading": k, "states": len(v), "mean": float(v.mean()), "min": float(v.min()), "max": float(v.max()),
             "negative": float((v < 0).mean()), "near_zero": float((np.abs(v) < 0.1 * scale).mean())}
            for k, v in outputs.items()]
    return pd.DataFrame(rows)


def style_clean_outputs(table: pd.DataFrame | Note, caption: str):
    """:func:`clean_outputs` as a captioned Styler (a Note passes through)."""
    if isinstance(table, Note):
        return table
    t = table.rename(columns={"reading": "Explained output", "states": "States", "mean": "Mean", "min": "Min",
                              "max": "Max", "negative": "Below 0", "near_zero": "Near 0"}).set_index("Explained output")
    fmt = {c: "{:.3f}" for c in ("Mean", "Min", "Max")} | {c: "{:.0%}" for c in ("Below 0", "Near 0")}
    return t.style.format(fmt).set_caption(caption)


def stream_agreement(results: pd.DataFrame | Note, stream: pd.DataFrame | Note, game: str, *,
                     confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame | Note:
    """:func:`~saliency_book.ch4_rankings.rank_agreement` for the full-Q and the advantage-stream
    reading of the chapter's DQN agent, with the sign of our mean AUCs per setting.

    Returns
    -------
    DataFrame or Note
        The rank-agreement columns plus ``reading`` (``"full Q"`` or ``"advantage stream"``),
        ``paper_negative`` and ``our_negative`` (how many of the common methods have a
        negative mean AUC).
    """
    for x in (results, stream):
        if isinstance(x, Note):
            return x
    dqn = pick_agent(results, "dqn")
    rows = pd.concat([results[(results["agent"] == dqn) & (results["experiment"] == "insertion")], stream],
                     ignore_index=True)
    summary = auc_summary(rows, confidence=confidence, n_resamples=n_resamples, seed=seed)
    side = side_by_side(summary, game)
    if isinstance(side, Note):
        return side
    agreement = rank_agreement(side)
    neg = side.groupby(["agent", "substrate", "paper_measure"]).agg(
        paper_negative=("paper_mean", lambda s: int((s < 0).sum())), our_negative=("our_mean", lambda s: int((s < 0).sum())))
    agreement = agreement.merge(neg.reset_index(), on=["agent", "substrate", "paper_measure"])
    reading = np.where(agreement["agent"].astype(str).str.startswith(SCHEME), "advantage stream", "full Q")
    return agreement.assign(reading=reading)


def stream_sentence(agreement: pd.DataFrame | Note, game: str):
    """Which reading of our agent agrees better with the paper, setting by setting (Markdown)."""
    from IPython.display import Markdown

    if isinstance(agreement, Note):
        return agreement
    wide = agreement.pivot_table(index=["substrate", "paper_measure"], columns="reading", aggfunc="first",
                                 values=["spearman", "our_negative", "paper_negative", "methods"])
    if "advantage stream" not in wide["spearman"] or "full Q" not in wide["spearman"]:
        return Note("Both readings are needed for the comparison.", title="Incomplete")
    order = [(s, m) for s in PAPER_SUBSTRATES for m in ("q_ratio", "advantage") if (s, m) in wide.index]
    parts, better = [], 0
    for (sub, pm), r in wide.loc[order].iterrows():
        full, adv = r[("spearman", "full Q")], r[("spearman", "advantage stream")]
        better += int(pd.notna(adv) and pd.notna(full) and adv > full)
        parts.append(f"{sub}/{measure_label(pm)}: ρ = {fmt2(adv)} with the advantage stream, {fmt2(full)} with the full Q")
    sig = agreement[(agreement["spearman_p"] < 0.05) & (agreement["spearman"] > 0)].groupby("reading").size()
    text = (f"Spearman correlation of our method order with the paper's {game} order: {join_words(parts)}. "
            f"The advantage stream agrees better in {better} of {len(wide)} settings. The positive agreement is "
            f"significant at 5 % in {int(sig.get('advantage stream', 0))} of {len(wide)} settings with the advantage "
            f"stream and in {int(sig.get('full Q', 0))} with the full Q.")
    key = ("random", "q_ratio")
    if key in wide.index:
        r = wide.loc[key]
        n = int(r[("methods", "full Q")])
        text += (f" Under random insertion with the Q-ratio, {int(r[('paper_negative', 'full Q')])} of the paper's {n} "
                 f"mean AUCs are negative; of ours, {int(r[('our_negative', 'full Q')])} with the full Q and "
                 f"{int(r[('our_negative', 'advantage stream')])} with the advantage stream.")
    return Markdown(text)
