"""Chapter 5: the official agents' masks among every method, on the full study's states (issue 18).

The full study explains each official Mask-A3C agent of the games Huber et al. and Itaya et al.
share (Breakout, Space Invaders, Ms. Pac-Man) on states spread over a whole greedy game, with
every method at the paper's parameters, the full sanity cascade and insertion/deletion on every
substrate. This module reads the packed units of that study, computing nothing (a Mask-A3C
state costs minutes), and ranks the methods of each agent with the paired moving-block
bootstrap (:func:`~saliency_book.ch5_rankings.block_ranking`).

* :data:`STUDY_GAMES`: the games with an official agent, in the paper's order.
* :func:`agent_study_rows`: the packed rows of one agent of the study, or a Note.
* :class:`AgentStudy`, :func:`official_studies`: each game's ranking (or the Note that says why
  there is none).
* :func:`mask_ranks_table`: the two masks' ranks per game, criterion and substrate.
* :func:`mask_study_sentence`: the generated sentences, which say only what the ranks and tests support.
* :func:`study_markdown`: those sentences, one paragraph per game, for the notebook.
* :func:`study_ranking_display`: one game's full ranking as a compact table.

The state value V is never ranked (:data:`saliency_study.evidence.DEGENERATE_MEASURES`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from saliency_book.ch5_rankings import block_ranking
from saliency_book.common import Note
from saliency_lib.agents.official import OFFICIAL_GAMES
from saliency_study.evidence import MIN_STATES, enough_states, too_few
from saliency_study.paper import GAME_LABELS, GAME_ORDER, NOT_RUN
from saliency_study.paths import RESULTS_DIR

__all__ = ["STUDY_GAMES", "EXPERIMENTS", "STUDY_COMMAND", "agent_study_rows", "AgentStudy", "official_studies",
           "mask_ranks_table", "mask_study_sentence", "study_markdown", "study_ranking_display"]

STUDY_GAMES = tuple(g for g in GAME_ORDER if g in OFFICIAL_GAMES)
"""The games of the study with an official Mask-A3C agent, in the paper's order."""
EXPERIMENTS = ("sanity", "insertion", "deletion")
STUDY_COMMAND = "saliency-study run --profile {profile} --games {game} --compact"
"""The command that computes (and packs) a game's units."""
_MASKS = ("mask_policy", "mask_value")


def _plan(profile: str, game: str, agent: str, results_dir) -> list:
    from saliency_lib.sweep import plan_units
    from saliency_study.study import profile_specs

    specs = profile_specs(profile, game, agents=[agent], results_dir=results_dir)
    return [u for s in specs for u in plan_units(dataclasses.replace(s, experiments=EXPERIMENTS),
                                                 results_dir=results_dir, states=False)[0]]


def agent_study_rows(profile: str, game: str, agent: str | None = None, *,
                     results_dir: str | os.PathLike = RESULTS_DIR) -> pd.DataFrame | Note:
    """The packed rows of one agent's units in the study of ``profile``, computing nothing.

    Parameters
    ----------
    profile, game : str
        The study (:func:`~saliency_study.study.profile_specs`).
    agent : str, optional
        Default the official agent of ``game`` (``official:<game>``).
    results_dir : path
        The result store.

    Returns
    -------
    DataFrame or Note
        The tidy rows (``attrs``: ``units_stored``, ``units_planned``) once every planned unit is
        packed; a Note when the official checkpoints are missing or the study is not finished
        for the agent (it says how far it got and names the command). Loose units of a run in
        progress are left out, so the chapter shows what a clean clone shows.
    """
    from saliency_lib.sweep import load_units, packed_keys
    from saliency_study.catalog import official_available

    agent = agent or f"official:{game}"
    if agent.startswith("official:") and not official_available(game):
        from saliency_book.ch5_mask_attention import official_missing

        return official_missing(game)
    planned = _plan(profile, game, agent, results_dir)
    keys = packed_keys(planned, results_dir=results_dir)
    stored = [u for u in planned if u.key in keys]
    if len(stored) < len(planned):
        return Note(f"{NOT_RUN.capitalize()} in full for `{agent}`: {len(stored)} of {len(planned)} units of the "
                    f"`{profile}` study are packed; `{STUDY_COMMAND.format(profile=profile, game=game)}` computes the "
                    "rest. A partial study is not ranked: its states would be a prefix of the episode.",
                    title="Study not finished")
    rows = load_units(stored, results_dir=results_dir)
    rows = rows[rows["experiment"].isin(EXPERIMENTS)].reset_index(drop=True)
    rows.attrs.update(units_stored=len(stored), units_planned=len(planned))
    return rows


@dataclass(frozen=True)
class AgentStudy:
    """One agent's study, ranked: every method on each criterion and substrate (:func:`block_ranking`)."""

    game: str
    agent: str
    ranking: pd.DataFrame
    n_states: int

    @classmethod
    def of(cls, rows: pd.DataFrame, *, n_resamples: int = 2000, seed: int = 0) -> AgentStudy:
        return cls(game=str(rows["game"].iloc[0]), agent=str(rows["agent"].iloc[0]),
                   ranking=block_ranking(rows, n_resamples=n_resamples, seed=seed), n_states=int(rows["state"].nunique()))

    def _repr_markdown_(self) -> str:
        return (f"**{GAME_LABELS.get(self.game, self.game)}, `{self.agent}`:** {self.n_states} states, "
                f"{self.ranking['method'].nunique()} methods ranked.")


def official_studies(profile: str = "full", games: Sequence[str] = STUDY_GAMES, *,
                     results_dir: str | os.PathLike = RESULTS_DIR, n_resamples: int = 2000) -> dict[str, AgentStudy | Note]:
    """Each game's official agent, ranked (:class:`AgentStudy`), or the Note that says why not."""
    out: dict[str, AgentStudy | Note] = {}
    for game in games:
        rows = agent_study_rows(profile, game, results_dir=results_dir)
        out[game] = rows if isinstance(rows, Note) else AgentStudy.of(rows, n_resamples=n_resamples)
    return out


def _where(r) -> str:
    return r.label.rstrip(" ↑↓") + ("" if pd.isna(r.substrate) else f", {r.substrate}")


def mask_ranks_table(studies: dict[str, AgentStudy | Note]) -> pd.DataFrame:
    """The masks' ranks: one row per (game, mask), one ``#rank of K`` cell per criterion and substrate.

    Each cell adds ``(↑k ↓j)``: the paired block-bootstrap tests (Holm, α = 0.05) find ``k`` maps
    significantly better than the mask (above it) and ``j`` significantly worse (below it).
    ``n / ESS`` is the states and the effective sample size of the first insertion criterion.
    Games without a ranking are left out.
    """
    from saliency_lib.explainers import METHOD_LABELS

    rows = []
    for game, st in studies.items():
        if isinstance(st, Note):
            continue
        for m in _MASKS:
            mine = st.ranking[st.ranking["method"] == m]
            if mine.empty:
                continue
            row = {"game": GAME_LABELS.get(game, game), "mask": METHOD_LABELS.get(m, m)}
            for r in mine.itertuples():
                row[_where(r)] = f"#{r.rank} of {r.of} (↑{_count(r.worse_than)} ↓{_count(r.better_than)})"
            first = mine[mine["criterion"] != "sanity"].iloc[0] if (mine["criterion"] != "sanity").any() else mine.iloc[0]
            row["n / ESS"] = f"{first['n']} / {first['n_eff']:.0f}"
            rows.append(row)
    return pd.DataFrame(rows).fillna("–")


def _count(names) -> int:
    return len([x for x in str(names or "").split(",") if x.strip()])


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _span(values, mark: str = "") -> str:
    lo, hi = min(values), max(values)
    return f"{mark}{lo}" if lo == hi else f"{mark}{lo} to {mark}{hi}"


def mask_study_sentence(study: AgentStudy | Note, game: str) -> str:
    """The generated sentence on one game's official agent: where each mask ranks on insertion and
    deletion of π(a) (over the substrates) and on the sanity check, and how many maps the paired
    moving-block bootstrap tests (Holm-corrected, α = 0.05) find significantly better and worse.

    It names the game, the states and the effective sample size; a criterion with fewer than
    :data:`~saliency_study.evidence.MIN_STATES` states gives no rank; a Note gives its own text.
    """
    from saliency_lib.explainers import METHOD_LABELS

    label = GAME_LABELS.get(game, game)
    if isinstance(study, Note):
        return f"{label}: {study.text}"
    r = study.ranking
    n_hi = int(r["n"].max())
    ess = r.loc[r["criterion"] != "sanity", "n_eff"]
    states = f"{n_hi} states" + (f", effective sample size {ess.min():.0f} to {ess.max():.0f}" if len(ess) else "")
    if not enough_states(n_hi):
        return f"{label} ({states}): {too_few(n_hi)} ({MIN_STATES} states are needed)."
    r = r[[enough_states(n) for n in r["n"]]]
    parts = []
    for m in _MASKS:
        mine = r[r["method"] == m]
        if mine.empty:
            continue
        curves = mine[mine["criterion"] != "sanity"]
        bits = []
        for key, word in (("ins_prob", "insertion"), ("del_prob", "deletion")):
            g = curves[curves["criterion"] == key]
            if len(g):
                bits.append(f"{_span(g['rank'].tolist(), '#')} on {word}")
        text = f"the {METHOD_LABELS.get(m, m).lower()} ranks " + " and ".join(bits)
        if len(curves):
            subs = _and(sorted(curves["substrate"].dropna().unique().tolist()))
            better = _span([_count(x) for x in curves["worse_than"]])
            text += (f" of π(a) over the {subs} substrates ({curves['of'].max()} maps, the random map among them; "
                     f"the paired tests find {better} {'map' if better == '1' else 'maps'} significantly better and "
                     f"{_span([_count(x) for x in curves['better_than']])} worse)")
        for x in mine[mine["criterion"] == "sanity"].itertuples():
            text += (f", and #{x.rank} of {x.of} on {_where(x)} ({_count(x.worse_than)} significantly better, "
                     f"{_count(x.better_than)} worse)")
        parts.append(text)
    if not parts:
        return f"{label} ({states}): neither mask is ranked."
    return f"{label} ({states}): " + "; ".join(parts) + "."


def study_markdown(studies: dict[str, AgentStudy | Note]):
    """Markdown of :func:`mask_study_sentence` for every game of ``studies``, one paragraph each."""
    from IPython.display import Markdown

    return Markdown("\n\n".join(mask_study_sentence(st, g) for g, st in studies.items()))


def study_ranking_display(study: AgentStudy | Note) -> pd.DataFrame | Note:
    """One agent's ranking: one row per method (the order of the first criterion), one
    ``mean [CI] #rank`` cell per criterion and substrate, and n / ESS."""
    from saliency_lib.explainers import METHOD_LABELS

    if isinstance(study, Note):
        return study
    cells: dict[str, dict[str, str]] = {}
    for x in study.ranking.itertuples():
        ci = f" [{x.ci_low:.2f}, {x.ci_high:.2f}]" if np.isfinite(x.ci_low) else ""
        c = cells.setdefault(x.method, {})
        c[_where(x)] = f"{x.mean:.2f}{ci} #{x.rank}"
        if "n / ESS" not in c and x.criterion != "sanity":
            c["n / ESS"] = f"{x.n} / {x.n_eff:.0f}"
    t = pd.DataFrame([{"method": METHOD_LABELS.get(m, m), **c} for m, c in cells.items()])
    rest = [c for c in t.columns if c not in ("method", "n / ESS")]
    return t[["method", *rest, "n / ESS"]].fillna("–")
