"""Chapter 5 (Mask attention): the masks ranked among the other methods, on three sets of states.

* the profile's states of the official agent and of each of our Mask-A3C agents
  (:func:`chapter_ranking`, :func:`our_rankings`; rows of :func:`saliency_study.study.study_results`);
* the full study's states of each official agent (:func:`official_studies`, packed units only);
* the seed sweep of our Mask-A3C agents (:func:`seed_study`, packed units only) and whether the masks'
  ranks hold across seeds (:func:`rank_agreement`).

:func:`rank_methods` ranks one agent's methods on each :data:`CRITERIA` column and substrate. The state
value V is never ranked (:data:`saliency_study.evidence.DEGENERATE_MEASURES`). ``show_*`` give the
tables and the figure; ``*_numbers`` the numbers the chapter's prose quotes. A missing input gives a
:class:`~saliency_book.common.Note`, which the ``show_*`` functions pass through.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_book.ch5_mask_attention import (
    VARIANT_LABELS,
    MaskAttentionChapter,
    agent_label,
    mask_agents,
    not_trained_note,
    official_missing,
    shown_path,
)
from saliency_book.common import Note, figure_image
from saliency_lib.agents.official import OFFICIAL_GAMES
from saliency_lib.explainers import METHOD_LABELS
from saliency_study.catalog import official_available
from saliency_study.evidence import DEGENERATE_MEASURES, TOO_FEW, enough_states
from saliency_study.paper import GAME_LABELS, GAME_ORDER, NOT_RUN
from saliency_study.paths import AGENTS_DIR, RESULTS_DIR

__all__ = ["MASKS", "STUDY_GAMES", "STUDY_COMMAND", "SEED_COMMAND", "ONE_SEED", "HOLDS", "DOES_NOT_HOLD", "Criterion",
           "CRITERIA", "RANK_COLUMNS", "criterion_rows", "check_criteria", "rank_methods", "rank_agents",
           "chapter_ranking", "our_rankings", "official_studies", "seed_rows", "seed_study", "kendall_w", "rank_agreement",
           "show_ranking", "show_our_rankings", "show_mask_ranks", "show_agreement", "show_seed_ranks",
           "coarse_numbers", "ranking_numbers", "seed_numbers"]

MASKS = ("mask_policy", "mask_value")
STUDY_GAMES = tuple(g for g in GAME_ORDER if g in OFFICIAL_GAMES)
"""The games of the study with an official Mask-A3C agent, in the paper's order."""
STUDY_COMMAND = "saliency-study run --profile {profile} --games {game} --compact"
SEED_COMMAND = "saliency-study run --profile {profile} --seeds --games {game} --compact"
"""The commands that compute (and pack) the full study's and the seed sweep's units."""
ONE_SEED, HOLDS, DOES_NOT_HOLD = "one seed", "holds", "does not hold"
"""Verdicts of :func:`rank_agreement` (besides :data:`~saliency_study.evidence.TOO_FEW`)."""
_EXPERIMENTS = ("sanity", "insertion", "deletion")
_AGENT = re.compile(r"-(?P<variant>none|policy|value|double)-s(?P<seed>\d+)$")


@dataclass(frozen=True)
class Criterion:
    """One column of the ranking: rows of one experiment and measure, and its direction."""

    key: str
    label: str
    experiment: str
    measure: str
    higher_is_better: bool


CRITERIA = tuple(c for c in (
    Criterion("ins_prob", "insertion AUC, π(a) ↑", "insertion", "prob_auc", True),
    Criterion("ins_value", "insertion AUC, V ↑", "insertion", "value_auc", True),
    Criterion("del_prob", "deletion AUC, π(a) ↓", "deletion", "prob_auc", False),
    Criterion("del_value", "deletion AUC, V ↓", "deletion", "value_auc", False),
    Criterion("sanity", "Spearman after full randomisation ↓", "sanity", "spearman", False),
) if c.measure.removesuffix("_auc") not in DEGENERATE_MEASURES)
"""The ranking's columns. Insertion: a faithful map restores the output fast (high AUC); deletion: it
destroys it fast (low AUC); sanity check: a map that depends on the weights changes when all layers are
re-drawn (low similarity to the original map). V is left out: degenerate under insertion and deletion."""

RANK_COLUMNS = ("game", "agent", "criterion", "label", "substrate", "rank", "of", "method", "n", "n_eff", "mean", "std",
                "ci_low", "ci_high", "better_than", "worse_than", "tied_with")
"""The columns of :func:`rank_methods` (:func:`rank_agents` adds ``variant`` and ``seed``)."""


def criterion_rows(table: pd.DataFrame, c: Criterion, substrate) -> pd.DataFrame:
    """The per-state rows of criterion ``c``: the AUC rows of one substrate, or the sanity rows of the
    deepest randomised layer (the full cascade)."""
    t = table[(table["experiment"] == c.experiment) & (table["measure"] == c.measure)]
    if c.experiment == "sanity":
        t = t[t["level"].notna()]
        return t[t["level"] == t["level"].max()] if len(t) else t
    return t[(t["substrate"] == substrate) & t["step"].isna()]


def check_criteria(criteria) -> None:
    """Raise ``ValueError`` for a criterion that ranks on a degenerate measure (V)."""
    for c in criteria:
        if c.measure.removesuffix("_auc") in DEGENERATE_MEASURES:
            raise ValueError(f"criterion {c.key!r} ranks on {c.measure!r}, a degenerate measure: "
                             f"{DEGENERATE_MEASURES[c.measure.removesuffix('_auc')]}")


def rank_methods(table: pd.DataFrame, *, criteria=CRITERIA, substrates=None, test: str = "block",
                 n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Rank the methods of one agent on each criterion and substrate (:func:`saliency_lib.metrics.ranking_table`).

    Parameters
    ----------
    table : DataFrame
        Tidy rows of one agent.
    criteria : tuple of Criterion
        Default the chapter's; a criterion on a degenerate measure (V) raises ``ValueError``.
    substrates : sequence of str, optional
        Insertion/deletion substrates (default: those in ``table``); the sanity check has none.
    test : {"block", "wilcoxon"}
        The paired test: the moving-block bootstrap for the states of one trajectory (correlated; ``n_eff``
        is their effective number), or Wilcoxon's signed-rank test, which the profile's ranking uses.
    n_resamples, seed
        Of the bootstrap.

    Returns
    -------
    DataFrame
        One row per (criterion, substrate, method), best first, columns :data:`RANK_COLUMNS` (``substrate``
        NA for the sanity check; ``of``: methods ranked).
    """
    from saliency_lib.metrics import ranking_table

    check_criteria(criteria)
    if table["agent"].nunique() > 1:
        raise ValueError(f"rank_methods needs the rows of one agent, got {sorted(table['agent'].unique())}")
    if substrates is None:
        substrates = sorted(table["substrate"].dropna().unique()) if "substrate" in table else []
    parts = []
    for c in criteria:
        for sub in ([pd.NA] if c.experiment == "sanity" else substrates):
            sel = criterion_rows(table, c, sub)
            if len(sel):
                r = ranking_table(sel, higher_is_better=c.higher_is_better, test=test, n_resamples=n_resamples, seed=seed)
                parts.append(r.assign(game=sel["game"].iloc[0], agent=sel["agent"].iloc[0], criterion=c.key,
                                      label=c.label, substrate=sub, of=len(r)))
    if not parts:
        return pd.DataFrame(columns=list(RANK_COLUMNS))
    return pd.concat(parts, ignore_index=True)[list(RANK_COLUMNS)].astype({"rank": int, "of": int, "n": int})


def rank_agents(rows: pd.DataFrame | Note, *, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame | Note:
    """:func:`rank_methods` (block test) of every agent of ``rows``, with ``variant`` and ``seed`` read from
    names such as ``a3c-Breakout-double-s1`` (NA otherwise); ``attrs`` are kept."""
    if isinstance(rows, Note):
        return rows
    parts = []
    for agent, table in rows.groupby("agent", sort=True):
        m = _AGENT.search(Path(str(agent)).name)
        r = rank_methods(table, n_resamples=n_resamples, seed=seed)
        parts.append(r.assign(variant=m["variant"] if m else pd.NA, seed=int(m["seed"]) if m else pd.NA))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*RANK_COLUMNS, "variant", "seed"])
    out.attrs.update(rows.attrs)
    return out


# -- the profile's states ------------------------------------------------------------------------

def chapter_ranking(cfg: MaskAttentionChapter) -> pd.DataFrame | Note:
    """The official agent's methods ranked on the study's table of ``cfg.profile``, one substrate, Wilcoxon tests."""
    from saliency_study.study import study_results

    if not official_available(cfg.game):
        return official_missing(cfg.game)
    df = study_results(cfg.profile, cfg.game, executor=cfg.executor, results_dir=cfg.results_dir, agents=[cfg.official])
    df = df[df["agent"] == cfg.official]
    if df.empty:
        return Note(f"The study's `{cfg.profile}` table holds no rows for {cfg.official} yet.", title="No results")
    return rank_methods(df, substrates=[cfg.substrate], test="wilcoxon")


def our_rankings(cfg: MaskAttentionChapter) -> dict[str, pd.DataFrame] | Note:
    """As :func:`chapter_ranking` for each of our shipped Mask-A3C agents (label → ranking), on its own greedy
    game's states. Stored units are reused; the profile's ``ranked_own_agents`` caps how many agents are ranked,
    in name order (the ``tiny`` profile ranks one)."""
    from saliency_study.study import study_results

    agents = mask_agents(cfg.game, cfg.agents_dir)
    if agents.empty:
        return not_trained_note(cfg.game, cfg.agents_dir, "The ranking above is therefore of the official agent only.")
    cap = cfg.settings["ranked_own_agents"]
    out = {}
    for _, r in agents.sort_values("agent", kind="stable").head(len(agents) if cap is None else cap).iterrows():
        spec = shown_path(r["path"])
        df = study_results(cfg.profile, cfg.game, executor=cfg.executor, results_dir=cfg.results_dir, agents=[spec])
        out[agent_label(r)] = rank_methods(df[df["agent"] == spec], substrates=[cfg.substrate], test="wilcoxon")
    return out


# -- packed sweeps: the full study and the seed sweep --------------------------------------------

def _packed(specs, results_dir) -> tuple[pd.DataFrame | None, int, int]:
    """The rows of the packed (committed) units of ``specs``, and how many units are stored and planned.
    Loose units of a run in progress are left out, so the chapter shows what a clean clone shows."""
    from saliency_lib.sweep import load_units, packed_keys, plan_units

    planned = [u for s in specs for u in plan_units(s, results_dir=results_dir, states=False)[0]]
    keys = packed_keys(planned, results_dir=results_dir)
    stored = [u for u in planned if u.key in keys]
    rows = load_units(stored, results_dir=results_dir) if stored else None
    if rows is not None:
        rows = rows[rows["experiment"].isin(_EXPERIMENTS)].reset_index(drop=True)
        rows.attrs.update(units_stored=len(stored), units_planned=len(planned))
    return rows, len(stored), len(planned)


def official_studies(profile: str = "full", games=STUDY_GAMES, *, results_dir: str | os.PathLike = RESULTS_DIR,
                     n_resamples: int = 2000) -> dict[str, pd.DataFrame | Note]:
    """Each game's official agent in the study of ``profile``, ranked (:func:`rank_agents`), computing nothing.

    A game gives a Note when the official checkpoints are missing or not every planned unit is packed (a
    partial study's states would be a prefix of the episode); the Note names the command.
    """
    from saliency_study.study import profile_specs

    out: dict[str, pd.DataFrame | Note] = {}
    for game in games:
        agent = f"official:{game}"
        if not official_available(game):
            out[game] = official_missing(game)
            continue
        specs = [dataclasses.replace(s, experiments=_EXPERIMENTS)
                 for s in profile_specs(profile, game, agents=[agent], results_dir=results_dir)]
        rows, stored, planned = _packed(specs, results_dir)
        out[game] = rank_agents(rows, n_resamples=n_resamples) if stored == planned and rows is not None else Note(
            f"{NOT_RUN.capitalize()} in full for `{agent}`: {stored} of {planned} units of the `{profile}` study are "
            f"packed; `{STUDY_COMMAND.format(profile=profile, game=game)}` computes the rest. A partial study is not "
            "ranked: its states would be a prefix of the episode.", title="Study not finished")
    return out


def seed_rows(profile: str = "full", game: str = "Breakout", *, results_dir: str | os.PathLike = RESULTS_DIR,
              agents_dir: str | os.PathLike = AGENTS_DIR) -> pd.DataFrame | Note:
    """The packed rows of the seed sweep of ``game`` (:func:`~saliency_study.study.seed_specs`; ``attrs``:
    ``units_stored``, ``units_planned``), computing nothing; a Note when no masked agent is shipped or no unit
    is packed (it names the command)."""
    from saliency_study.study import seed_specs

    specs = seed_specs(profile, game, agents_dir=agents_dir)
    if not specs:
        return Note(f"No masked Mask-A3C agent of {game} is shipped in `{agents_dir}` yet, so there is no seed to compare.",
                    title="No Mask-A3C agent")
    rows, _, planned = _packed(specs, results_dir)
    if rows is None:
        return Note(f"None of the {planned} units of the seed sweep ({len(specs)} agent{'s' if len(specs) != 1 else ''} "
                    f"of {game}, `{profile}` profile) is packed. A Mask-A3C state costs minutes, so this section does not "
                    f"compute them; `{SEED_COMMAND.format(profile=profile, game=game)}` does.", title="Seed sweep not run")
    return rows


def seed_study(profile: str = "full", game: str = "Breakout", *, results_dir: str | os.PathLike = RESULTS_DIR,
               agents_dir: str | os.PathLike = AGENTS_DIR, n_resamples: int = 2000) -> pd.DataFrame | Note:
    """:func:`seed_rows` ranked per agent (:func:`rank_agents`), or its Note."""
    return rank_agents(seed_rows(profile, game, results_dir=results_dir, agents_dir=agents_dir), n_resamples=n_resamples)


def kendall_w(ranks) -> float:
    """Kendall's coefficient of concordance W of ``ranks`` (raters × items), corrected for ties.

    1: every rater (seed) orders the items (methods) alike; 0: no agreement. NaN for fewer than 2 raters
    or 2 items.
    """
    from scipy.stats import rankdata

    r = np.asarray(ranks, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] < 2 or r.shape[1] < 2:
        return float("nan")
    m, k = r.shape
    r = np.vstack([rankdata(row) for row in r])  # ties get mid-ranks
    s = float(((r.sum(axis=0) - m * (k + 1) / 2) ** 2).sum())
    ties = sum(float((c ** 3 - c).sum()) for c in (np.unique(row, return_counts=True)[1] for row in r))
    denom = m ** 2 * (k ** 3 - k) - m * ties
    return float(12 * s / denom) if denom > 0 else float("nan")


def rank_agreement(ranking: pd.DataFrame | Note, *, methods=MASKS) -> pd.DataFrame | Note:
    """Whether each mask ranks the same in every seed of its variant, per criterion and substrate.

    Seeds are compared within one variant (a policy-only agent ranks among fewer methods than one with both).

    Returns
    -------
    DataFrame or Note
        One row per (variant, criterion, substrate, method): ``seeds``, ``ranks``, ``better_than``,
        ``worse_than`` (lists in seed order), ``n_seeds``, ``of``, ``min_rank``, ``max_rank``, ``rank_range``,
        ``n`` (fewest states of any method in any seed), ``kendall_w`` (over the methods every seed ranked) and
        ``verdict``: :data:`ONE_SEED`, :data:`~saliency_study.evidence.TOO_FEW`, :data:`HOLDS` (the same rank
        in every seed) or :data:`DOES_NOT_HOLD`.
    """
    if isinstance(ranking, Note):
        return ranking
    rows = []
    key = ["game", "variant", "criterion", "label", "substrate"]
    for (game, variant, crit, label, sub), g in ranking.groupby(key, sort=False, dropna=False):
        seeds = sorted(g["seed"].unique())
        # Kendall's W on the methods that every seed ranked, re-ranked among themselves by their means
        common = set.intersection(*(set(g.loc[g["seed"] == s, "method"]) for s in seeds))
        wide = g[g["method"].isin(common)].pivot(index="seed", columns="method", values="rank").loc[seeds]
        w = kendall_w(wide.to_numpy()) if len(common) > 1 else float("nan")
        n = int(g["n"].min())
        for m in methods:
            mine = g[g["method"] == m].set_index("seed")
            if mine.empty:
                continue
            have = [int(s) for s in seeds if s in mine.index]
            ranks = [int(mine.loc[s, "rank"]) for s in have]
            verdict = (ONE_SEED if len(have) < 2 else TOO_FEW if not enough_states(n) else
                       HOLDS if max(ranks) == min(ranks) else DOES_NOT_HOLD)
            rows.append({"game": game, "variant": variant, "criterion": crit, "label": label, "substrate": sub,
                         "method": m, "seeds": have, "n_seeds": len(have), "ranks": ranks,
                         "better_than": [str(mine.loc[s, "better_than"]) for s in have],
                         "worse_than": [str(mine.loc[s, "worse_than"]) for s in have], "of": int(mine["of"].max()),
                         "min_rank": min(ranks), "max_rank": max(ranks), "rank_range": max(ranks) - min(ranks), "n": n,
                         "kendall_w": w, "verdict": verdict})
    return pd.DataFrame(rows, columns=[*key[:3], "label", "substrate", "method", "seeds", "n_seeds", "ranks",
                                       "better_than", "worse_than", "of", "min_rank", "max_rank", "rank_range", "n",
                                       "kendall_w", "verdict"])


# -- what the chapter shows ------------------------------------------------------------------------

def _column(r, substrates: bool) -> str:
    return r.label + ("" if not substrates or pd.isna(r.substrate) else f" ({r.substrate})")


def _count(names) -> int:
    return len([x for x in str(names or "").split(",") if x.strip()])


def _bold_masks(t: pd.DataFrame, caption: str, column: str = "method"):
    masks = {METHOD_LABELS[m] for m in MASKS}
    return (t.style.apply(lambda row: ["font-weight: bold" if row[column] in masks else "" for _ in row], axis=1)
            .hide(axis="index").set_caption(caption))


def show_ranking(ranking: pd.DataFrame | Note | None, caption: str, *, by=("method",)):
    """A ranking as a table: one row per ``by`` (in the order of the first criterion), one ``mean [CI] #rank``
    cell per criterion (and substrate, where there are several) and n / ESS of the first curve criterion;
    the masks in bold. A Note passes through; None (no official agent for the game) gives one."""
    if ranking is None:
        return Note("Itaya et al. released no official Mask-A3C agent for this game.", title="No official agent")
    if isinstance(ranking, Note):
        return ranking
    subs = ranking["substrate"].dropna().nunique() > 1
    cells: dict[tuple, dict[str, str]] = {}
    for x in ranking.itertuples():
        ci = f" [{x.ci_low:.2f}, {x.ci_high:.2f}]" if np.isfinite(x.ci_low) else ""
        c = cells.setdefault(tuple(getattr(x, b) for b in by), {})
        c[_column(x, subs)] = f"{x.mean:.2f}{ci} #{x.rank}"
        if "n / ESS" not in c and x.criterion != "sanity":
            c["n / ESS"] = f"{x.n} / {x.n_eff:.0f}"
    labels = {"variant": lambda v: VARIANT_LABELS.get(v, v), "method": lambda m: METHOD_LABELS.get(m, m)}
    t = pd.DataFrame([{**{b: labels.get(b, str)(k) for b, k in zip(by, key)}, **c} for key, c in cells.items()])
    rest = [c for c in t.columns if c not in (*by, "n / ESS")]
    return _bold_masks(t[[*by, *rest, *(["n / ESS"] if "n / ESS" in t else [])]].fillna("–"), caption)


def show_our_rankings(rankings: dict[str, pd.DataFrame] | Note, caption: str):
    """:func:`show_ranking` of each agent of :func:`our_rankings`, one captioned table each (HTML)."""
    from IPython.display import HTML

    if isinstance(rankings, Note):
        return rankings
    return HTML("".join(show_ranking(r, f"{caption} Agent: {label.replace('`', '')}.").to_html()
                        for label, r in rankings.items()))


def show_mask_ranks(rankings: pd.DataFrame | dict | Note, caption: str):
    """The masks' ranks: one row per (game, mask), one ``#rank of K (↑k ↓j)`` cell per criterion and substrate,
    where the paired tests (Holm, α = 0.05) find ``k`` maps significantly better than the mask and ``j`` worse;
    n / ESS of the first curve criterion. ``rankings`` is one ranking or a dict of them (a game with a Note is
    named in the caption; with no ranking left, the Notes' text is the Note shown)."""
    if isinstance(rankings, dict):
        notes = {g: r.text for g, r in rankings.items() if isinstance(r, Note)}
        done = [r for r in rankings.values() if not isinstance(r, Note)]
        if not done:
            return Note(" ".join(dict.fromkeys(notes.values())) or "No official agent's study is packed.",
                        title="Study not finished")
        rankings = pd.concat(done, ignore_index=True)
        caption += "".join(f" Not in the table: {GAME_LABELS.get(g, g)}: {text}" for g, text in notes.items())
    if isinstance(rankings, Note):
        return rankings
    subs, rows = rankings["substrate"].dropna().nunique() > 1, []
    for (game, _agent, m), mine in rankings[rankings["method"].isin(MASKS)].groupby(["game", "agent", "method"], sort=False):
        row = {"game": GAME_LABELS.get(game, game), "mask": METHOD_LABELS.get(m, m)}
        row.update({_column(r, subs): f"#{r.rank} of {r.of} (↑{_count(r.worse_than)} ↓{_count(r.better_than)})"
                    for r in mine.itertuples()})
        curve = mine[mine["criterion"] != "sanity"]
        first = (curve if len(curve) else mine).iloc[0]
        row["n / ESS"] = f"{first['n']} / {first['n_eff']:.0f}"
        rows.append(row)
    if not rows:
        return Note("Neither mask is ranked.", title="No mask")
    return pd.DataFrame(rows).fillna("–").style.hide(axis="index").set_caption(caption)


def show_agreement(agreement: pd.DataFrame | Note, caption: str):
    """:func:`rank_agreement` with one column per seed (``#rank of K``), the range, Kendall's W and the verdict."""
    if isinstance(agreement, Note):
        return agreement
    rows = []
    for r in agreement.itertuples():
        row = {"variant": VARIANT_LABELS.get(r.variant, r.variant), "criterion": r.label.rstrip(" ↑↓"),
               "substrate": "–" if pd.isna(r.substrate) else r.substrate, "method": METHOD_LABELS.get(r.method, r.method)}
        row.update({f"seed {s}": f"#{k} of {r.of}" for s, k in zip(r.seeds, r.ranks)})
        row.update({"range": f"#{r.min_rank}–#{r.max_rank}" if r.n_seeds > 1 else "–",
                    "Kendall's W": "–" if not np.isfinite(r.kendall_w) else f"{r.kendall_w:.2f}",
                    "n states": r.n, "verdict": r.verdict})
        rows.append(row)
    return _bold_masks(pd.DataFrame(rows).fillna("–"), caption)


def show_seed_ranks(ranking: pd.DataFrame | Note, *, variant: str = "double", dpi: int = 90):
    """Ranks per seed: one x position per criterion and substrate, one line per method and seed (marker = seed);
    None for a Note (shown with the table above)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    if isinstance(ranking, Note):
        return None
    r = ranking[ranking["variant"] == variant]
    if r.empty:
        return Note(f"No seed of the {VARIANT_LABELS.get(variant, variant)} variant is ranked yet.", title="No ranking")
    r = r.assign(col=[x.label.rstrip(" ↑↓").replace(" AUC, ", "\n").replace(" after full ", "\nafter full\n")
                      + ("" if pd.isna(x.substrate) else f"\n{x.substrate}") for x in r.itertuples()])
    cols, seeds = list(dict.fromkeys(r["col"])), sorted(r["seed"].unique())
    fig = Figure(figsize=(1.1 * len(cols) + 2.6, 3.4), layout="constrained")
    ax = fig.subplots()
    for i, m in enumerate(sorted(r["method"].unique(), key=lambda m: (m not in MASKS, m))):
        lw, alpha = (2.2, 1.0) if m in MASKS else (1.0, 0.6)
        for j, s in enumerate(seeds):
            t = r[(r["method"] == m) & (r["seed"] == s)].set_index("col").reindex(cols)
            x = np.arange(len(cols)) + (j - (len(seeds) - 1) / 2) * 0.08
            ax.plot(x, t["rank"], marker="osD^v"[j % 5], lw=lw, alpha=alpha, color=f"C{i}",
                    label=METHOD_LABELS.get(m, m) if j == 0 else None)
    ax.set_xticks(np.arange(len(cols)), cols, fontsize=7)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    ax.set_ylabel("rank (1 = best)")
    ax.set_title(f"{VARIANT_LABELS.get(variant, variant)} on {r['game'].iloc[0]}: rank of each method in seeds "
                 f"{', '.join(str(int(s)) for s in seeds)} (marker = seed)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure_image(fig, dpi=dpi)


# -- the numbers the prose quotes --------------------------------------------------------------------

def coarse_numbers(profile: str) -> dict:
    """``coarse_states``: the official agent's states in ``profile``'s study; ``coarse_params``: the explainer
    parameters that differ from the paper's there (a Mask-A3C pass costs many DQN passes), or "none"."""
    from saliency_book.common import describe_params
    from saliency_study.profiles import sweep_sizes

    n, _, params = sweep_sizes(profile, "mask_a3c")
    return {"coarse_states": int(n), "coarse_params": describe_params(params) if params else "none"}


def ranking_numbers(ranking: pd.DataFrame | Note) -> dict:
    """``rank_states``: the most states behind a mean of ``ranking``; ``rank_min_p``: the smallest exact
    two-sided p-value a paired Wilcoxon test can reach with that many pairs, 2 / 2ⁿ (NaN for a Note)."""
    n = float("nan") if isinstance(ranking, Note) or ranking.empty else int(ranking["n"].max())
    return {"rank_states": n, "rank_min_p": 2.0 / 2.0 ** n}


def seed_numbers(ranking: pd.DataFrame | Note, agreement: pd.DataFrame | Note) -> dict:
    """The seed sweep's size and its verdicts: ``seed_units_stored``, ``seed_units_planned``, ``seed_states``
    (most states per seed), ``seed_holds``, ``seed_moves`` (criteria where a mask's rank holds, does not hold
    across the seeds; NaN for a Note)."""
    if isinstance(ranking, Note) or isinstance(agreement, Note):
        return dict.fromkeys(["seed_units_stored", "seed_units_planned", "seed_states", "seed_holds", "seed_moves"],
                             float("nan"))
    v = agreement["verdict"]
    return {"seed_units_stored": int(ranking.attrs.get("units_stored", 0)),
            "seed_units_planned": int(ranking.attrs.get("units_planned", 0)),
            "seed_states": int(ranking["n"].max()) if len(ranking) else 0,
            "seed_holds": int((v == HOLDS).sum()), "seed_moves": int((v == DOES_NOT_HOLD).sum())}
