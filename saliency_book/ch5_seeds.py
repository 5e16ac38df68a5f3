"""Chapter 5 (Mask attention): do the masks' ranks hold across seeds? (issue 15, part 4)

The study's seed sweep (``saliency-study run --profile full --seeds``,
:func:`saliency_study.study.seed_specs`) explains every shipped masked Mask-A3C
agent of a game: its masks and the gradient baselines on states spread over one greedy
game, with the sanity cascade and insertion/deletion on every substrate. This module reads
the stored units, computing nothing (a Mask-A3C state costs minutes), and asks whether the
masks rank where they rank in every seed.

* :func:`seed_rows`: the stored rows of the seed sweep, or a :class:`~saliency_book.common.Note`
  that names the command that makes them.
* :func:`seed_rankings`: per agent (seed), criterion and substrate, the methods ranked by their
  mean over states, with block-bootstrap CIs, n and the effective sample size.
* :func:`seed_sanity`: the similarity after full randomisation, per method and seed.
* :func:`rank_agreement`: per variant, criterion and substrate, each mask's rank in every seed
  side by side, their range, Kendall's W over all methods and a verdict.
* :func:`seed_sentence`: the generated sentence, which says only what the verdicts support.
* :class:`SeedStudy`, :func:`seed_study`: the section's input (or the Note that names the command);
  :func:`seed_display`, :func:`agreement_display`, :func:`seed_markdown`, :func:`seed_rank_figure`:
  what the notebook shows.

The state value V is never ranked (:data:`saliency_study.evidence.DEGENERATE_MEASURES`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_book.ch5_mask_attention import VARIANT_LABELS, VARIANT_ORDER
from saliency_book.ch5_rankings import CRITERIA, Criterion, block_ranking, check_criteria
from saliency_book.common import Note, figure_image
from saliency_study.evidence import MIN_STATES, TOO_FEW, enough_states, too_few
from saliency_study.paths import AGENTS_DIR, RESULTS_DIR

__all__ = ["MASKS", "ONE_SEED", "HOLDS", "DOES_NOT_HOLD", "SEED_COMMAND", "seed_rows", "seed_rankings", "seed_sanity",
           "kendall_w", "rank_agreement", "seed_sentence", "SeedStudy", "seed_study", "seed_display", "agreement_display",
           "seed_markdown", "seed_rank_figure"]

MASKS = ("mask_policy", "mask_value")
ONE_SEED = "one seed"
"""Verdict of a variant with a single seed: nothing to compare across seeds."""
HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
SEED_COMMAND = "saliency-study run --profile {profile} --seeds --games {game} --compact"
"""The command that computes (and packs) the seed sweep's units."""

_AGENT = re.compile(r"-(?P<variant>none|policy|value|double)-s(?P<seed>\d+)$")
_RANK_COLS = ["game", "variant", "seed", "agent", "criterion", "label", "substrate", "rank", "of", "method", "n", "n_eff",
              "mean", "std", "ci_low", "ci_high", "better_than", "worse_than", "tied_with"]


def _variant_seed(agent: str) -> tuple[str, int]:
    """(variant, seed) of an agent from its directory name (``a3c-Breakout-double-s0``)."""
    m = _AGENT.search(Path(str(agent)).name)
    if m is None:
        raise ValueError(f"cannot read the variant and seed from the agent name {agent!r} (expected '...-<variant>-s<seed>')")
    return m["variant"], int(m["seed"])


def _plain(label: str) -> str:
    return label.rstrip(" ↑↓")


# -- the stored rows ---------------------------------------------------------------------------

def seed_rows(profile: str = "full", game: str = "Breakout", *, results_dir: str | os.PathLike = RESULTS_DIR,
              agents_dir: str | os.PathLike = AGENTS_DIR) -> pd.DataFrame | Note:
    """The packed (committed) rows of the seed sweep of ``game`` in ``profile``, computing nothing.

    Loose units of a run in progress are left out, so the chapter shows what a clean clone shows.

    Parameters
    ----------
    profile, game : str
        The sweep of :func:`~saliency_study.study.seed_specs`.
    results_dir, agents_dir : path
        The result store and the shipped agents.

    Returns
    -------
    DataFrame or Note
        The tidy rows of every stored unit (``attrs``: ``units_stored``, ``units_planned``); a Note
        when no masked agent is shipped or none of the planned units is packed (it names the command).
    """
    from saliency_lib.sweep import load_units, packed_keys, plan_units
    from saliency_study.study import seed_specs

    specs = seed_specs(profile, game, agents_dir=agents_dir)
    if not specs:
        return Note(f"No masked Mask-A3C agent of {game} is shipped in `{agents_dir}` yet, so there is no seed to compare.",
                    title="No Mask-A3C agent")
    planned = [u for s in specs for u in plan_units(s, results_dir=results_dir, states=False)[0]]
    keys = packed_keys(planned, results_dir=results_dir)
    stored = [u for u in planned if u.key in keys]
    if not stored:
        return Note(f"None of the {len(planned)} units of the seed sweep ({len(specs)} agent{'s' if len(specs) != 1 else ''} "
                    f"of {game}, `{profile}` profile) is packed. A Mask-A3C state costs minutes, so this section does not "
                    f"compute them; `{SEED_COMMAND.format(profile=profile, game=game)}` does.", title="Seed sweep not run")
    rows = load_units(stored, results_dir=results_dir)
    rows.attrs.update(units_stored=len(stored), units_planned=len(planned))
    return rows


# -- per seed ----------------------------------------------------------------------------------

def seed_rankings(rows: pd.DataFrame, *, criteria: tuple[Criterion, ...] = CRITERIA, substrates=None,
                  n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Rank the methods of every agent (seed) on each criterion and substrate.

    Each agent's ranking is :func:`~saliency_book.ch5_rankings.block_ranking`: the paired
    moving-block bootstrap, because the states of one greedy game are correlated (``n_eff``
    gives the effective sample size).

    Parameters
    ----------
    rows : DataFrame
        Tidy rows (:func:`seed_rows`) of one game; ``agent`` names end in ``-<variant>-s<seed>``.
    criteria : tuple of Criterion
        Default the chapter's (insertion and deletion AUC of π(a), sanity similarity after full
        randomisation). A criterion on a degenerate measure (V) raises ``ValueError``.
    substrates : sequence of str, optional
        Insertion/deletion substrates (default: those in ``rows``); the sanity check has none.
    n_resamples, seed
        Of the block bootstrap.

    Returns
    -------
    DataFrame
        One row per (agent, criterion, substrate, method): ``game``, ``variant``, ``seed``,
        ``agent``, ``criterion``, ``label``, ``substrate`` (NA for the sanity check), ``rank``,
        ``of``, ``method``, ``n``, ``n_eff``, ``mean``, ``std``, ``ci_low``, ``ci_high``,
        ``better_than``, ``worse_than``, ``tied_with``.
    """
    check_criteria(criteria)
    parts = []
    for agent, table in rows.groupby("agent", sort=True):
        variant, s = _variant_seed(agent)
        r = block_ranking(table, criteria=criteria, substrates=substrates, n_resamples=n_resamples, seed=seed)
        if len(r):
            parts.append(r.assign(game=table["game"].iloc[0], variant=variant, seed=s, agent=agent))
    if not parts:
        return pd.DataFrame(columns=_RANK_COLS)
    out = pd.concat(parts, ignore_index=True)[_RANK_COLS]
    return out.astype({"rank": int, "of": int, "seed": int, "n": int})


def seed_sanity(ranking: pd.DataFrame) -> pd.DataFrame:
    """The sanity check of :func:`seed_rankings`: per method and seed, the similarity after full randomisation.

    Returns
    -------
    DataFrame
        One row per (variant, seed, method): ``mean`` [``ci_low``, ``ci_high``] (block bootstrap),
        ``n``, ``n_eff``, ``rank`` and ``of`` (lower similarity ranks first: the map changed more).
    """
    s = ranking[ranking["criterion"] == "sanity"]
    return s[["variant", "seed", "method", "mean", "ci_low", "ci_high", "n", "n_eff", "rank", "of"]].reset_index(drop=True)


# -- across seeds ------------------------------------------------------------------------------

def kendall_w(ranks: np.ndarray) -> float:
    """Kendall's coefficient of concordance W of ``ranks`` (raters × items), corrected for ties.

    1: every rater (seed) orders the items (methods) alike; 0: no agreement. NaN for fewer
    than 2 raters or 2 items.
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


def _verdict(n_seeds: int, n: int, ranks: list[int]) -> str:
    if n_seeds < 2:
        return ONE_SEED
    if not enough_states(n):
        return TOO_FEW
    return HOLDS if max(ranks) == min(ranks) else DOES_NOT_HOLD


def rank_agreement(ranking: pd.DataFrame, *, methods=MASKS) -> pd.DataFrame:
    """Whether each mask ranks the same in every seed of its variant, per criterion and substrate.

    Seeds are compared within one variant (a policy-only agent ranks among fewer methods than
    a Mask-A3C agent with both masks).

    Parameters
    ----------
    ranking : DataFrame
        :func:`seed_rankings`.
    methods : sequence of str
        The methods whose rank is followed (default the two masks).

    Returns
    -------
    DataFrame
        One row per (variant, criterion, substrate, method): ``game``, ``seeds`` (list),
        ``n_seeds``, ``ranks``, ``better_than``, ``worse_than`` (lists in the order of ``seeds``;
        the methods a paired block-bootstrap test separates it from), ``of``, ``min_rank``,
        ``max_rank``, ``rank_range``, ``n`` (fewest states of any method in any seed),
        ``kendall_w`` (over the methods every seed ranked; NaN with one seed) and ``verdict``:
        ``"one seed"``, ``"too few states"`` (n < :data:`~saliency_study.evidence.MIN_STATES`),
        ``"holds"`` (the same rank in every seed) or ``"does not hold"``.
    """
    cols = ["game", "variant", "criterion", "label", "substrate", "method", "seeds", "n_seeds", "ranks", "better_than",
            "worse_than", "of", "min_rank",
            "max_rank", "rank_range", "n", "kendall_w", "verdict"]
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
            ranks = [int(mine.loc[s, "rank"]) for s in seeds if s in mine.index]
            have = [int(s) for s in seeds if s in mine.index]
            rows.append({"game": game, "variant": variant, "criterion": crit, "label": label, "substrate": sub,
                         "method": m, "seeds": have, "n_seeds": len(have), "ranks": ranks,
                         "better_than": [str(mine.loc[s, "better_than"]) for s in have],
                         "worse_than": [str(mine.loc[s, "worse_than"]) for s in have],
                         "of": int(mine["of"].max()), "min_rank": min(ranks), "max_rank": max(ranks),
                         "rank_range": max(ranks) - min(ranks), "n": n, "kendall_w": w,
                         "verdict": _verdict(len(have), n, ranks)})
    return pd.DataFrame(rows, columns=cols)


def _where(r) -> str:
    return _plain(r.label) + ("" if pd.isna(r.substrate) else f", {r.substrate} substrate")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _seed_list(seeds: list[int]) -> str:
    return ("seed " if len(seeds) == 1 else "seeds ") + _and([str(s) for s in seeds])


def _tests(g: pd.DataFrame) -> str:
    """What the paired block-bootstrap tests of one seed (the first) say about the mask, criterion by criterion."""
    from saliency_lib.explainers import METHOD_LABELS

    def names(text: str) -> str:
        return _and([METHOD_LABELS.get(x.strip(), x.strip()) for x in text.split(",") if x.strip()])

    found = [f"better than {names(r.better_than[0])} on {_where(r)}" for r in g.itertuples() if r.better_than[0]]
    found += [f"worse than {names(r.worse_than[0])} on {_where(r)}" for r in g.itertuples() if r.worse_than[0]]
    pre = "Paired block-bootstrap tests over the states (Holm-corrected, α = 0.05)"
    if not found:
        return f"{pre} separate it from no other method on any criterion."
    rest = len(g) - len({r.Index for r in g.itertuples() if r.better_than[0] or r.worse_than[0]})
    tail = (f"; on the other {rest} criteri{'on' if rest == 1 else 'a'} they separate it from no method"
            if rest else "")
    return f"{pre} find it " + "; ".join(found) + tail + "."


def seed_sentence(agreement: pd.DataFrame, *, method: str = "mask_policy", within_seed: bool = True) -> str:
    """The generated sentence on whether ``method``'s rank holds across seeds, per variant.

    It names the game, the seeds and the states, and says only what :func:`rank_agreement`'s
    verdicts support: with one seed, that the question cannot be judged; below
    :data:`~saliency_study.evidence.MIN_STATES` states per seed, that there are too few states.

    Parameters
    ----------
    agreement : DataFrame
        :func:`rank_agreement`.
    method : str
        The mask whose rank is followed.
    within_seed : bool
        For a variant with one seed, also give the ranks and the paired tests within that seed
        (the chapter does; the introduction's finding, which asks about seeds, does not).

    Returns
    -------
    str
        Markdown, one paragraph per variant that has ``method``.
    """
    from saliency_lib.explainers import METHOD_LABELS

    name = METHOD_LABELS.get(method, method).lower()
    a = agreement[agreement["method"] == method]
    if a.empty:
        return f"No seed of any Mask-A3C variant has a stored ranking of the {name}."
    out = []
    for variant in [v for v in VARIANT_ORDER if v in set(a["variant"])]:
        g = a[a["variant"] == variant]
        seeds = sorted({s for ss in g["seeds"] for s in ss})
        game, n = g["game"].iloc[0], int(g["n"].min())
        who = f"{VARIANT_LABELS.get(variant, variant)} on {game}, {_seed_list(seeds)}"
        if len(seeds) < 2:
            # as with several seeds, a criterion where some method has too few finite states (a
            # constant map gives NaN) is set aside by name and the others keep their ranks
            ok = g[g["n"].map(enough_states)]
            first = (f"The {name} of {who} ({int(g['n'].max())} states): one seed so far: whether the ranks hold "
                     "across seeds cannot be judged.")
            if not within_seed:
                out.append(first)
                continue
            if ok.empty:
                out.append(f"{first} Within the seed, {too_few(n)}.")
                continue
            ranks = "; ".join(f"#{r.ranks[0]} of {r.of} on {_where(r)}" for r in ok.itertuples())
            few = [f"{_where(r)} (n={r.n})" for r in g.itertuples() if not enough_states(r.n)]
            tail = (f" Too few states for a rank on {_and(few)}: some method has fewer than {MIN_STATES} finite "
                    "values." if few else "")
            out.append(f"{first} In that seed it ranks, by the mean over the states, {ranks}. {_tests(ok)}{tail}")
        elif not enough_states(g["n"].max()):
            out.append(f"The {name} of {who}: {too_few(n)} on whether its rank holds across seeds "
                       f"({MIN_STATES} states per seed are needed).")
        else:
            # a criterion where some method has too few finite states (a constant map gives NaN) is set
            # aside by name; the others keep their verdicts
            judged = g[g["verdict"].isin([HOLDS, DOES_NOT_HOLD])]
            holds = [f"{_where(r)} (#{r.ranks[0]} of {r.of})" for r in g.itertuples() if r.verdict == HOLDS]
            moves = [f"{_where(r)} (#{r.min_rank} to #{r.max_rank})" for r in g.itertuples() if r.verdict == DOES_NOT_HOLD]
            few = [f"{_where(r)} (n={r.n})" for r in g.itertuples() if r.verdict == TOO_FEW]
            parts = []
            if holds:
                parts.append(f"holds in every seed on {_and(holds)}")
            if moves:
                parts.append(f"does not hold on {_and(moves)}")
            tail = (f" Too few states for a verdict on {_and(few)}: some method has fewer than {MIN_STATES} finite "
                    "values in some seed." if few else "")
            out.append(f"The {name} of {who} (at least {int(judged['n'].min())} states each): its rank by the mean "
                       + "; it ".join(parts) + "." + tail)
    return "\n\n".join(out)


# -- the chapter's section ---------------------------------------------------------------------

@dataclass(frozen=True)
class SeedStudy:
    """The seed sweep of one game, read: the per-seed rankings and their agreement across seeds."""

    game: str
    ranking: pd.DataFrame
    agreement: pd.DataFrame
    units_stored: int
    units_planned: int

    @classmethod
    def of(cls, rows: pd.DataFrame, *, n_resamples: int = 2000) -> SeedStudy:
        """Rank the stored ``rows`` (:func:`seed_rows`) of one game."""
        ranking = seed_rankings(rows, n_resamples=n_resamples)
        return cls(game=str(rows["game"].iloc[0]), ranking=ranking, agreement=rank_agreement(ranking),
                   units_stored=int(rows.attrs.get("units_stored", 0)), units_planned=int(rows.attrs.get("units_planned", 0)))

    def _repr_markdown_(self) -> str:
        seeds = self.ranking.groupby("variant")["seed"].unique()
        who = "; ".join(f"{VARIANT_LABELS.get(v, v)}: {_seed_list(sorted(int(x) for x in s))}" for v, s in seeds.items())
        return (f"**Seed sweep of {self.game}:** {self.units_stored} of {self.units_planned} units stored; {who}; "
                f"at most {int(self.ranking['n'].max()) if len(self.ranking) else 0} states per seed.")


def seed_study(profile: str = "full", game: str = "Breakout", *, results_dir: str | os.PathLike = RESULTS_DIR,
               agents_dir: str | os.PathLike = AGENTS_DIR) -> SeedStudy | Note:
    """:class:`SeedStudy` of the stored seed sweep (:func:`seed_rows`), or the Note that says which command makes it."""
    rows = seed_rows(profile, game, results_dir=results_dir, agents_dir=agents_dir)
    return rows if isinstance(rows, Note) else SeedStudy.of(rows)


def seed_display(study: SeedStudy | Note):
    """Every seed's ranking as a compact table: one row per (variant, seed, method), one ``mean [CI] #rank`` cell
    per criterion and substrate, and n / ESS of the insertion AUC on the first substrate (how few independent
    states the CIs rest on)."""
    from saliency_lib.explainers import METHOD_LABELS

    if isinstance(study, Note):
        return study
    cells: dict[tuple, dict[str, str]] = {}
    for x in study.ranking.itertuples():
        col = _plain(x.label) + ("" if pd.isna(x.substrate) else f" ({x.substrate})")
        ci = f" [{x.ci_low:.2f}, {x.ci_high:.2f}]" if np.isfinite(x.ci_low) else ""
        c = cells.setdefault((x.variant, x.seed, x.method), {})
        c[col] = f"{x.mean:.2f}{ci} #{x.rank}"
        if "n / ESS" not in c and x.criterion != "sanity":
            c["n / ESS"] = f"{x.n} / {x.n_eff:.0f}"
    t = pd.DataFrame([{"variant": VARIANT_LABELS.get(v, v), "seed": s, "method": METHOD_LABELS.get(m, m), **c}
                      for (v, s, m), c in cells.items()])
    rest = [c for c in t.columns if c not in ("variant", "seed", "method", "n / ESS")]
    return t[["variant", "seed", "method", *rest, "n / ESS"]].fillna("–")


def agreement_display(study: SeedStudy | Note):
    """:func:`rank_agreement` with one column per seed (``#rank of K``), the range, Kendall's W and the verdict."""
    from saliency_lib.explainers import METHOD_LABELS

    if isinstance(study, Note):
        return study
    rows = []
    for r in study.agreement.itertuples():
        row = {"variant": VARIANT_LABELS.get(r.variant, r.variant), "criterion": _plain(r.label),
               "substrate": "–" if pd.isna(r.substrate) else r.substrate, "method": METHOD_LABELS.get(r.method, r.method)}
        row.update({f"seed {s}": f"#{k} of {r.of}" for s, k in zip(r.seeds, r.ranks)})
        row.update({"range": f"#{r.min_rank}–#{r.max_rank}" if r.n_seeds > 1 else "–",
                    "Kendall's W": "–" if not np.isfinite(r.kendall_w) else f"{r.kendall_w:.2f}",
                    "n states": r.n, "verdict": r.verdict})
        rows.append(row)
    return pd.DataFrame(rows).fillna("–")


def seed_markdown(study: SeedStudy | Note):
    """Markdown of :func:`seed_sentence` for the policy and the value mask (None for a Note, which is shown above)."""
    from IPython.display import Markdown

    if isinstance(study, Note):
        return None
    return Markdown("\n\n".join(seed_sentence(study.agreement, method=m) for m in MASKS
                                 if m in set(study.agreement["method"])))


def seed_rank_figure(study: SeedStudy | Note, *, variant: str = "double", dpi: int = 90):
    """Ranks per seed: one x position per criterion and substrate, one line per method and seed (marker = seed)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from saliency_lib.explainers import METHOD_LABELS

    if isinstance(study, Note):
        return None
    r = study.ranking[study.ranking["variant"] == variant]
    if r.empty:
        return Note(f"No seed of the {VARIANT_LABELS.get(variant, variant)} variant is ranked yet.", title="No ranking")
    r = r.assign(col=[_plain(x.label).replace(" AUC, ", "\n").replace(" after full ", "\nafter full\n")
                      + ("" if pd.isna(x.substrate) else f"\n{x.substrate}") for x in r.itertuples()])
    cols = list(dict.fromkeys(r["col"]))
    seeds = sorted(r["seed"].unique())
    fig = Figure(figsize=(1.1 * len(cols) + 2.6, 3.4), layout="constrained")
    ax = fig.subplots()
    markers = "osD^v"
    for i, m in enumerate(sorted(r["method"].unique(), key=lambda m: (m not in MASKS, m))):
        lw, alpha = (2.2, 1.0) if m in MASKS else (1.0, 0.6)
        for j, s in enumerate(seeds):
            t = r[(r["method"] == m) & (r["seed"] == s)].set_index("col").reindex(cols)
            x = np.arange(len(cols)) + (j - (len(seeds) - 1) / 2) * 0.08
            ax.plot(x, t["rank"], marker=markers[j % len(markers)], lw=lw, alpha=alpha, color=f"C{i}",
                    label=METHOD_LABELS.get(m, m) if j == 0 else None)
    ax.set_xticks(np.arange(len(cols)), cols, fontsize=7)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.invert_yaxis()
    ax.set_ylabel("rank (1 = best)")
    ax.set_title(f"{VARIANT_LABELS.get(variant, variant)} on {study.game}: rank of each method in "
                 f"{_seed_list([int(s) for s in seeds])} (marker = seed)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure_image(fig, dpi=dpi)
