"""Chapter 5 (Mask attention): the masks ranked among the other methods, on three sets of states.

* the profile's states of the official agent and of each of our Mask-A3C agents
  (:func:`chapter_ranking`, :func:`our_rankings`);
* the full study's states of each official agent (:func:`official_studies`, packed units only);
* the seed sweep of our Mask-A3C agents (:func:`seed_study`, packed units only); whether the masks'
  ranks hold across seeds is :func:`saliency_study.rankings.rank_agreement`.

The rankings are :mod:`saliency_study.rankings`'; here they are loaded, a missing input becomes a
:class:`~saliency_book.common.Note` (which the ``show_*`` functions pass through), and shown.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from saliency_book.ch5_mask_attention import (
    VARIANT_LABELS,
    MaskAttentionChapter,
    agent_label,
    not_trained_note,
    official_missing,
    shown_path,
)
from saliency_book.common import Note, figure_image
from saliency_lib.explainers import METHOD_LABELS
from saliency_study.catalog import official_available
from saliency_study.masks import mask_agents
from saliency_study.paper import GAME_LABELS, NOT_RUN
from saliency_study.paths import AGENTS_DIR, RESULTS_DIR
from saliency_study.rankings import MASKS, STUDY_GAMES, official_rows, profile_ranking, rank_agents, seed_rows

__all__ = ["STUDY_COMMAND", "SEED_COMMAND", "chapter_ranking", "our_rankings", "official_studies", "seed_study",
           "show_ranking", "show_our_rankings", "show_mask_ranks", "show_agreement", "show_seed_ranks", "coarse_numbers"]

STUDY_COMMAND = "saliency-study run --profile {profile} --games {game} --compact"
SEED_COMMAND = "saliency-study run --profile {profile} --seeds --games {game} --compact"
"""The commands that compute (and pack) the full study's and the seed sweep's units."""


def chapter_ranking(cfg: MaskAttentionChapter) -> pd.DataFrame | Note:
    """The official agent's methods ranked on the study's table of ``cfg.profile``, one substrate, Wilcoxon tests
    (:func:`~saliency_study.rankings.profile_ranking`)."""
    if not official_available(cfg.game):
        return official_missing(cfg.game)
    r = profile_ranking(cfg.profile, cfg.game, cfg.official, substrate=cfg.substrate, executor=cfg.executor,
                        results_dir=cfg.results_dir)
    return r if len(r) else Note(f"The study's `{cfg.profile}` table holds no rows for {cfg.official} yet.",
                                 title="No results")


def our_rankings(cfg: MaskAttentionChapter) -> dict[str, pd.DataFrame] | Note:
    """As :func:`chapter_ranking` for each of our shipped Mask-A3C agents (label → ranking), on its own greedy
    game's states. Stored units are reused; the profile's ``ranked_own_agents`` caps how many agents are ranked,
    in name order (the ``tiny`` profile ranks one)."""
    agents = mask_agents(cfg.game, cfg.agents_dir)
    if agents.empty:
        return not_trained_note(cfg.game, cfg.agents_dir, "The ranking above is therefore of the official agent only.")
    cap = cfg.settings["ranked_own_agents"]
    return {agent_label(r): profile_ranking(cfg.profile, cfg.game, shown_path(r["path"]), substrate=cfg.substrate,
                                            executor=cfg.executor, results_dir=cfg.results_dir)
            for _, r in agents.sort_values("agent", kind="stable").head(len(agents) if cap is None else cap).iterrows()}


def official_studies(profile: str = "full", games=STUDY_GAMES, *, results_dir: str | os.PathLike = RESULTS_DIR,
                     n_resamples: int = 2000) -> dict[str, pd.DataFrame | Note]:
    """Each game's official agent in the study of ``profile``, ranked (:func:`~saliency_study.rankings.rank_agents`),
    computing nothing. A game gives a Note when the official checkpoints are missing or not every planned unit is
    packed (a partial study's states would be a prefix of the episode); the Note names the command."""
    out: dict[str, pd.DataFrame | Note] = {}
    for game in games:
        if not official_available(game):
            out[game] = official_missing(game)
            continue
        p = official_rows(profile, game, results_dir=results_dir)
        out[game] = rank_agents(p.rows, n_resamples=n_resamples) if p.complete else Note(
            f"{NOT_RUN.capitalize()} in full for `official:{game}`: {p.stored} of {p.planned} units of the `{profile}` "
            f"study are packed; `{STUDY_COMMAND.format(profile=profile, game=game)}` computes the rest. A partial "
            "study is not ranked: its states would be a prefix of the episode.", title="Study not finished")
    return out


def seed_study(profile: str = "full", game: str = "Breakout", *, results_dir: str | os.PathLike = RESULTS_DIR,
               agents_dir: str | os.PathLike = AGENTS_DIR, n_resamples: int = 2000) -> pd.DataFrame | Note:
    """The packed seed sweep of ``game`` (:func:`~saliency_study.rankings.seed_rows`) ranked per agent, computing
    nothing; a Note when no masked agent is shipped or no unit is packed (it names the command)."""
    p, n_agents = seed_rows(profile, game, results_dir=results_dir, agents_dir=agents_dir)
    if not n_agents:
        return Note(f"No masked Mask-A3C agent of {game} is shipped in `{agents_dir}` yet, so there is no seed to compare.",
                    title="No Mask-A3C agent")
    if p.rows is None:
        return Note(f"None of the {p.planned} units of the seed sweep ({n_agents} agent{'s' if n_agents != 1 else ''} "
                    f"of {game}, `{profile}` profile) is packed. A Mask-A3C state costs minutes, so this section does not "
                    f"compute them; `{SEED_COMMAND.format(profile=profile, game=game)}` does.", title="Seed sweep not run")
    return rank_agents(p.rows, n_resamples=n_resamples)


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
    """:func:`~saliency_study.rankings.rank_agreement` as a Styler.

    One column per seed (``#rank of K``), then the range, Kendall's W and the verdict.
    """
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


# -- the numbers the prose quotes ----------------------------------------------------------------------

def coarse_numbers(profile: str) -> dict:
    """``coarse_states``: the official agent's states in ``profile``'s study; ``coarse_params``: the explainer
    parameters that differ from the paper's there (a Mask-A3C pass costs many DQN passes), or "none"."""
    from saliency_book.common import describe_params
    from saliency_study.profiles import sweep_sizes

    n, _, params = sweep_sizes(profile, "mask_a3c")
    return {"coarse_states": int(n), "coarse_params": describe_params(params) if params else "none"}
