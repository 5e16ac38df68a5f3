"""Chapter 3: Huber et al.'s sanity-check similarities beside ours, for every game, and what their data already shows.

Huber et al.'s DQN agents and ours randomise the same five layer groups in the same order
(output, fc, conv3, conv2, conv1), so their ``rand_layer`` equals our level and the
similarities compare level by level (:data:`saliency_study.paper.LEVEL_LAYERS`). The
Mask-A3C agents have other layers and are not compared.

* :func:`sanity_rows`: the stored sanity rows of the study's DQN agents on every game
  (computing nothing).
* :func:`per_game`, :func:`pooled`: per game, and pooled over the games as the paper pools
  them (99 % CI), the paper's mean beside ours with n, effective sample size and a verdict.
* :func:`style_per_game`, :func:`style_pooled`, :func:`per_game_sentence`: their display.
* :func:`precedent_sentence`: for every method whose map we find still similar after full
  randomisation (in the stored paper-scale study where it has the game, :func:`study_means`),
  whether Huber et al.'s own numbers show the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from saliency_book.ch3_sanity import CONFIDENCE, MEASURE_LABELS, SanityChapter
from saliency_book.common import ExplainedAgent, Note, join_words
from saliency_lib.explainers import method_label
from saliency_study.evidence import MIN_STATES, enough_states, too_few
from saliency_study.paper import (
    GAME_LABELS,
    GAME_ORDER,
    LEVEL_LAYERS,
    NOT_RUN,
    compare_per_game,
    compare_pooled,
    paper_sanity,
    pooled_game_labels,
    stored_rows,
    style_comparison,
    verdict_counts,
)

__all__ = ["LEVELS", "KEYS", "sanity_rows", "per_game", "pooled", "style_per_game", "style_pooled",
           "per_game_sentence", "study_means", "precedent_sentence"]

LEVELS = (1, 5)
"""The levels compared by default: only the output layer random, and every layer random."""
KEYS = ("method", "level")
_LEVEL_NAMES = {1: "output layer", 2: "down to fc", 3: "down to conv3", 4: "down to conv2", 5: "all layers"}


def sanity_rows(cfg: SanityChapter, games: Sequence[str] = GAME_ORDER, *,
                measures: Sequence[str] = tuple(MEASURE_LABELS)) -> pd.DataFrame:
    """The stored sanity rows (levels 1–5, ``measures``) of the study's DQN agents on ``games``.

    Read from the packs (the committed units) of ``cfg.study_profile`` through
    :func:`saliency_study.paper.stored_rows`: nothing is computed, a run in progress does not
    change the chapter, and a game the study has not run has no rows. Columns ``agent, game,
    method, level, layer, measure, state, value``.
    """
    t = stored_rows(cfg.study_profile, games, experiments=("sanity",), preset="dqn", seed=cfg.seed,
                    results_dir=cfg.results_dir, packed_only=True)
    t = t[t["level"].isin(list(LEVEL_LAYERS)) & t["measure"].isin(list(measures))]
    t = t.assign(level=t["level"].astype(int))
    return t[["agent", "game", "method", "level", "layer", "measure", "state", "value"]].reset_index(drop=True)


def _paper(measure: str, levels: Sequence[int]) -> pd.DataFrame:
    p = paper_sanity(levels)
    return p[p["measure"] == measure]


def per_game(rows: pd.DataFrame, *, measure: str = "spearman", levels: Sequence[int] = LEVELS,
             confidence: float = CONFIDENCE, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_per_game` of one similarity measure at ``levels``, every game.

    The paper's value is its mean over the ≈ 135 states of each game that the extract holds.
    Rows: game (the paper's order), method, level.
    """
    ours = rows[(rows["measure"] == measure) & rows["level"].isin(list(levels))]
    t = compare_per_game(ours, _paper(measure, levels), KEYS, confidence=confidence, n_resamples=n_resamples, seed=seed)
    order = {g: i for i, g in enumerate(GAME_ORDER)}
    return t.sort_values(["game", "level", "method"], key=lambda c: c.map(order) if c.name == "game" else c,
                         kind="stable").reset_index(drop=True)


def pooled(rows: pd.DataFrame, *, measure: str = "spearman", levels: Sequence[int] = LEVELS, n_resamples: int = 2000,
           seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_pooled` over the games we have run, 99 % CI (the paper's figures)."""
    ours = rows[(rows["measure"] == measure) & rows["level"].isin(list(levels))]
    return compare_pooled(ours, _paper(measure, levels), KEYS, confidence=0.99, n_resamples=n_resamples,
                          seed=seed).sort_values(["level", "method"], kind="stable").reset_index(drop=True)


_LABELS = {"columns": {"method": "Method", "level": "Randomised"}, "level": _LEVEL_NAMES}


def _named(table: pd.DataFrame) -> pd.DataFrame:
    return table.assign(method=table["method"].map(method_label))


def style_per_game(table: pd.DataFrame, game: str, *, measure: str = "spearman"):
    """One game's rows of :func:`per_game` as a captioned table."""
    t = table[table["game"] == game]
    label = GAME_LABELS.get(game, game)
    if (t["verdict"] == NOT_RUN).all():
        caption = (f"{label}: Huber et al.'s mean {MEASURE_LABELS[measure]} to the trained agent's map (≈ 135 states "
                   "of their DQN agent); the study has not run this game yet.")
    else:
        caption = (f"{label}: mean {MEASURE_LABELS[measure]} to the trained agent's map, Huber et al.'s (≈ 135 states "
                   f"of their DQN agent) beside our DQN agent's with its {int(CONFIDENCE * 100)} % moving-block "
                   f"bootstrap CI, the states and their effective number (ESS). Verdict: consistent when the paper's "
                   f"mean lies in our CI; a verdict needs {MIN_STATES} states.")
    return style_comparison(_named(t), _LABELS, caption)


def style_pooled(table: pd.DataFrame, *, measure: str = "spearman"):
    """:func:`pooled` as a captioned table."""
    if table.empty:
        return Note("The study has no sanity-check results of a DQN agent yet.", title="No results")
    games = join_words(pooled_game_labels(table))
    caption = (f"{MEASURE_LABELS[measure]} pooled over the games we have run ({games}), every state counting once as "
               "in Huber et al.'s figures: their mean over the same games beside ours with a 99 % CI (moving blocks "
               "within each game, then combined), states and ESS.")
    return style_comparison(_named(table), _LABELS, caption)


def per_game_sentence(table: pd.DataFrame):
    """The verdicts of :func:`per_game` counted per game (Markdown)."""
    from IPython.display import Markdown

    parts = []
    for game, g in table.groupby("game", sort=False):
        label = GAME_LABELS.get(game, game)
        ran = g[g["verdict"] != NOT_RUN]
        if ran.empty:
            parts.append(f"{label}: {NOT_RUN}")
        elif not enough_states(int(ran["n"].max())):
            parts.append(f"{label}: {too_few(int(ran['n'].max()))} ({len(ran)} of {len(g)} rows run)")
        else:
            parts.append(f"{label} ({int(ran['n'].max())} states): {verdict_counts(g)}")
    return Markdown("Per game, against Huber et al.'s similarities: " + "; ".join(parts) + ".")


def study_means(rows: pd.DataFrame, agent: str, game: str, *, level: int = 5) -> pd.DataFrame | None:
    """Per method, the mean Spearman similarity of ``agent``'s maps on ``game`` at ``level`` over the stored
    study's states (:func:`sanity_rows`), as columns ``agent, method, spearman, n``; ``None`` when some
    method has fewer than :data:`~saliency_study.evidence.MIN_STATES` states (or none is stored)."""
    r = rows[(rows["agent"] == agent) & (rows["game"] == game) & (rows["measure"] == "spearman") & (rows["level"] == level)]
    if r.empty:
        return None
    t = r.groupby("method")["value"].agg(spearman="mean", n="count").reset_index().assign(agent=agent)
    return t[["agent", "method", "spearman", "n"]] if all(enough_states(n) for n in t["n"]) else None


def precedent_sentence(verdicts: pd.DataFrame | Note, who: ExplainedAgent, game: str, *,
                       threshold: float = 0.5, level: int = 5, study: pd.DataFrame | None = None):
    """For each method whose map stays similar after full randomisation, whether Huber et al.'s own data shows it.

    "Stays similar": our mean Spearman similarity at the deepest level is at or above
    ``threshold`` (the verdict's τ), whatever the verdict. For each such method the sentence
    gives the paper's mean at ``level`` (all five groups random) on ``game`` and says whether it
    is at or above τ too, so that an effect the paper's data already holds is not presented as
    new. Methods the paper did not run are named as such.

    ``study``: the stored paper-scale study's rows (:func:`sanity_rows`). Where they hold every
    method of ``who`` on ``game`` with enough states (:func:`study_means`), our means come from
    them instead of from ``verdicts`` (the chapter's own, smaller profile).

    Returns
    -------
    Markdown or Note
    """
    from IPython.display import Markdown

    if isinstance(verdicts, Note):
        return verdicts
    if not who or game not in GAME_LABELS:
        return Note(f"Huber et al. have no sanity-check numbers to compare for {game} or this agent.", title="No paper")
    stored = study_means(study, who.spec, game, level=level) if study is not None and len(study) else None
    if stored is not None:
        verdicts = stored
    v = verdicts[(verdicts["agent"] == who.spec) & (verdicts["spearman"] >= threshold)]
    if v.empty:
        return Markdown(f"No method's map of the {who.label} keeps a mean Spearman similarity of {threshold:.2f} or more "
                        "once every layer is random, so there is no such effect to check against the paper.")
    p = _paper("spearman", [level])
    p = p[p["game"] == game].set_index("method")
    label = GAME_LABELS[game]
    same, unlike, absent = [], [], []
    for r in v.itertuples():
        name = f"**{method_label(r.method)}** (ours ρ = {r.spearman:.2f}, n = {int(r.n)})"
        if r.method not in p.index:
            absent.append(name)
        elif p.loc[r.method, "mean"] >= threshold:
            same.append(f"{name}: theirs ρ = {p.loc[r.method, 'mean']:.2f}")
        else:
            unlike.append(f"{name}: theirs ρ = {p.loc[r.method, 'mean']:.2f}")
    n_paper = int(p["n"].max()) if len(p) else 0
    source = f" (the paper-scale study, {int(v['n'].min())} states)" if stored is not None else ""
    text = [f"Methods whose map of the {who.label}{source} keeps a mean Spearman similarity of at least {threshold:.2f} "
            f"once every layer is random, against Huber et al.'s numbers for {label} (all five layer groups random, "
            f"≈ {n_paper} states of their agent):"]
    if same:
        text.append(f"Huber et al.'s own data already shows this for {join_words(same)}; it is their finding as much "
                    "as ours, not a new one.")
    if unlike:
        text.append(f"Their data does not show it for {join_words(unlike)}: there it is our agent's, or our "
                    "implementation's.")
    if absent:
        text.append(f"Huber et al. did not run {join_words(absent)}.")
    few = [int(n) for n in v["n"] if not enough_states(n)]
    if few:
        text.append(f"Our numbers rest on {min(few)} states: {too_few(min(few))} of their own.")
    return Markdown(" ".join(text))
