"""Chapter 5 (mask attention): does attention make A3C score higher? Our runs beside the official ones.

The training runs of each variant (none, policy, value, double), their learning curves next to
the official Mask-A3C milestones, the score table and the sentence built from it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_book.ch5_mask_attention import AC_ALGOS, COLORS, VARIANT_LABELS, VARIANT_ORDER, variant
from saliency_book.common import Note, figure_image
from saliency_study.catalog import official_available
from saliency_study.paths import AGENTS_DIR, RUNS_DIR, repo_path

__all__ = ["actor_critic_runs", "a3c_curves_figure", "a3c_score_table", "style_a3c_scores",
           "seed_comparisons", "greedy_comparison", "style_seed_comparison", "seed_sentences"]


def actor_critic_runs(game: str, agents_dir: str | os.PathLike = AGENTS_DIR, runs_dir: str | os.PathLike | None = RUNS_DIR,
                      scores_csv: str | os.PathLike | None = None) -> pd.DataFrame:
    """Our actor-critic training runs of ``game``: shipped agents and, optionally, runs in progress.

    Shipped agents are the ``data/agents/*`` directories with ``algo`` a3c (``meta.json``);
    their final score comes from ``scores.csv`` next to them (``scores_csv``) or
    ``eval_score`` in ``meta.json`` (:func:`~saliency_book.ch1_agents.score_table`).
    Runs in progress are ``<runs_dir>/a3c-<game>-<variant>-s<seed>`` with a
    ``train_log.csv`` and no shipped agent of the same name; they have no final score.

    Returns
    -------
    DataFrame
        Columns ``agent, variant, seed, frames, mean, std, episodes, shipped, logs`` (the
        directory with ``train_log.csv``/``eval_log.csv``, or None).
    """
    from saliency_book.common import score_table

    cols = ["agent", "variant", "seed", "frames", "mean", "std", "episodes", "shipped", "logs"]
    base = repo_path(agents_dir)
    scores = score_table(agents_dir, scores_csv if scores_csv is not None else base / "scores.csv", games=[game])
    scores = scores[scores["algo"].isin(AC_ALGOS)]
    rows = []
    for _, s in scores.iterrows():
        d = repo_path(s["path"])
        meta = json.loads((d / "meta.json").read_text())
        rows.append({"agent": s["agent"], "variant": variant(s), "seed": meta.get("seed"), "frames": s["frames"],
                     "mean": s["mean"], "std": s["std"], "episodes": s["episodes"], "shipped": True,
                     "logs": str(d) if (d / "train_log.csv").is_file() else None})
    shipped = {r["agent"] for r in rows}
    runs = repo_path(runs_dir) if runs_dir is not None else None
    for d in sorted(runs.glob(f"a3c*-{game}-*-s*")) if runs is not None and runs.is_dir() else []:
        m = _RUN_NAME.match(d.name)
        if not m or m["game"] != game or d.name in shipped or not (d / "train_log.csv").is_file():
            continue
        tr = pd.read_csv(d / "train_log.csv")
        rows.append({"agent": d.name, "variant": m["variant"], "seed": int(m["seed"]),
                     "frames": float(tr["frames"].max()) if len(tr) else 0.0, "mean": np.nan, "std": np.nan,
                     "episodes": np.nan, "shipped": False, "logs": str(d)})
    df = pd.DataFrame(rows, columns=cols)
    order = {v: i for i, v in enumerate(VARIANT_ORDER)}
    return df.sort_values(["variant", "seed"], key=lambda c: c.map(order) if c.name == "variant" else c).reset_index(drop=True)


def _official_reference(game: str, frames: float, last: int = 20) -> dict | None:
    """The official run's mean over its last ``last`` test games before ``frames`` emulator frames."""
    from saliency_lib.agents.official import OFFICIAL_GAMES, official_test_log

    if game not in OFFICIAL_GAMES or not official_available(game, logs=True):
        return None
    log = official_test_log(game)
    before = log[log["frames"] <= frames]
    if before.empty:
        return None
    s = before["score"].tail(last)
    return {"mean": float(s.mean()), "std": float(s.std(ddof=0)), "games": int(len(s)), "frames": float(frames)}


def a3c_curves_figure(runs: pd.DataFrame, game: str, *, comparison=None, window: int = 50, dpi: int = 90):
    """Learning curves of our A3C / Mask-A3C runs (one colour per variant), with the official run for reference.

    ``runs`` is :func:`actor_critic_runs`; without runs the result is a Note.

    Left panel: every seed's training games (rolling mean of ``window``) and greedy
    evaluations, with the official run's greedy test games over the same emulator frames.
    Right panel, when the official log of ``game`` is available: the official run's whole
    course on a log axis of emulator frames, with its milestones
    (:func:`~saliency_lib.agents.official.official_milestones`, reference-itaya2021 §3.2)
    marked at their frames (4 per global step), and, at our runs' frames, each variant's
    greedy score as the mean over seeds with its t-interval over seeds (``comparison``, the
    greedy :class:`~saliency_lib.train.scores.VariantComparison`; without it, the panel has
    the official run only).
    """
    from matplotlib.figure import Figure

    from saliency_lib.agents.official import official_test_log
    from saliency_lib.train.common import read_log

    if runs.empty:
        return Note(f"Our A3C and Mask-A3C agents for {game} are not trained yet: no run is shipped or in progress, "
                    "so there is no learning curve to show. The comparison fills in when they exist.",
                    kind="warning", title="A3C and Mask-A3C not trained yet")
    from matplotlib.lines import Line2D

    official = official_test_log(game) if official_available(game, logs=True) else None
    fig = Figure(figsize=(11.5, 5.6) if official is not None else (9.6, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, width_ratios=[3, 2], sharey=True) if official is not None else [fig.subplots()]
    ax = axes[0]
    top = 0.0
    seeds: dict[str, list[str]] = {}  # variant -> its seeds, for one legend entry per variant
    for r in runs.itertuples():
        color = _VARIANT_COLORS.get(r.variant)
        if not isinstance(r.logs, str):  # shipped without logs
            continue
        seeds.setdefault(r.variant, []).append(f"{r.seed}" + ("" if r.shipped else " (in progress)"))
        tr = read_log(Path(r.logs) / "train_log.csv")
        ep = tr[tr["episode_score"].notna()] if "episode_score" in tr.columns else tr.iloc[:0]
        if len(ep):
            ax.plot(ep["frames"] / 1e6, ep["episode_score"].rolling(window, min_periods=1).mean(), color=color, lw=1.2,
                    alpha=0.85, ls="-" if r.shipped else "--")
            top = max(top, float(ep["frames"].max()))
        ev = Path(r.logs) / "eval_log.csv"
        if ev.is_file():
            e = read_log(ev)
            if len(e):
                ax.errorbar(e["frames"] / 1e6, e["eval_mean"], yerr=e["eval_std"], fmt="o", ms=3, capsize=1.5, lw=0.8,
                            color=color, alpha=0.7)
                top = max(top, float(e["frames"].max()))
    # one entry per variant (its seeds named), and one for the markers: with several seeds a line each
    # would make the legend longer than the plot
    handles = [Line2D([], [], color=_VARIANT_COLORS.get(v), lw=1.6,
                      label=f"{VARIANT_LABELS.get(v, v)}, seed{'s' if len(ss) > 1 else ''} {', '.join(ss)}")
               for v in [v for v in VARIANT_ORDER if v in seeds] + [v for v in seeds if v not in VARIANT_ORDER]
               for ss in [seeds[v]]]
    handles.append(Line2D([], [], color="black", lw=1.2, label=f"lines: training games (mean of {window})"))
    handles.append(Line2D([], [], color="black", marker="o", ms=3, ls="none", label="dots: greedy evaluations (mean ± sd)"))
    if any(not r.shipped for r in runs.itertuples()):
        handles.append(Line2D([], [], color="black", lw=1.2, ls="--", label="dashed: run in progress"))
    if top > 0 and official is not None:
        early = official[official["frames"] <= 1.05 * top]
        if len(early):
            ax.plot(early["frames"] / 1e6, early["score"].rolling(20, min_periods=1).mean(), color=COLORS["official"],
                    lw=2, zorder=0)
            handles.append(Line2D([], [], color=COLORS["official"], lw=2,
                                  label="official Mask-A3C run: greedy test games (mean of 20)"))
    ax.set_xlabel("emulator frames (millions)")
    ax.set_ylabel("game score (raw, all lives)")
    ax.set_title(f"A3C and Mask-A3C on {game}: our runs", fontsize=10)
    ax.grid(alpha=0.3)
    if official is None:
        fig.legend(handles=handles, fontsize=7.5, loc="outside right upper", frameon=False)
    else:
        handles += _official_course(axes[1], official, game, comparison, top)
        fig.legend(handles=handles, fontsize=7.5, loc="outside lower center", ncols=2, frameon=False)
    return figure_image(fig, dpi=dpi)


def _official_course(ax, official: pd.DataFrame, game: str, comparison, top: float) -> list:
    """The official run's whole course with its milestones, and our variants at their frames (the right panel).

    Our variants are the rows of ``comparison``'s table (none without a comparison). Returns
    the legend handles it adds.
    """
    from matplotlib.lines import Line2D

    from saliency_lib.agents.official import FRAMES_PER_STEP, official_milestones

    ms = official_milestones(game)
    ax.plot(official["frames"], official["score"].rolling(20, min_periods=1).mean(), color=COLORS["official"], lw=1.5,
            zorder=0)
    ax.plot(ms["frames"], ms["mean"], ls="none", marker="D", ms=5, color="black", zorder=3)
    for i, m in enumerate(ms.itertuples()):  # labels alternate below and above: the late milestones sit close
        if np.isfinite(m.mean):
            ax.annotate(f"{m.mean:,.0f}", (m.frames, m.mean), textcoords="offset points", xytext=(0, -11 if i % 2 else 6),
                        ha="center", fontsize=6.5)
    ours = comparison.table if comparison is not None else pd.DataFrame()
    if top > 0:
        ax.axvline(top, color="black", lw=0.8, ls=":", zorder=1)
    for i, p in enumerate(ours.itertuples()):
        x = p.frames * 1.12 ** (i - (len(ours) - 1) / 2)  # side by side at the same frames (log axis)
        yerr = None if not np.isfinite(p.ci_low) else [[p.mean - p.ci_low], [p.ci_high - p.mean]]
        ax.errorbar([x], [p.mean], yerr=yerr, fmt="s", ms=4, capsize=2, lw=1, color=_VARIANT_COLORS.get(p.variant), zorder=4)
    ax.set_xscale("log")
    ax.set_xlim(1e6, 1.3 * max(float(official["frames"].max()), float(ms["frames"].max())))
    ax.set_xlabel("emulator frames (log scale)")
    ax.set_title("The official run's whole course" + (f"; ours at {top / 1e6:.3g} M frames (dotted)" if top > 0 else ""),
                 fontsize=10)
    ax.grid(alpha=0.3, which="both")
    handles = [Line2D([], [], color="black", marker="D", ms=5, ls="none",
                      label="official milestones: mean greedy test score, ±5 M global steps (reference §3.2), "
                            f"at {FRAMES_PER_STEP} frames per global step")]
    if len(ours):
        handles.append(Line2D([], [], color="black", marker="s", ms=4, lw=1,
                              label="squares: our variants' greedy scores (mean over seeds, t-interval over seeds)"))
    return handles


def _final_training_mean(logs) -> tuple[float, int]:
    """Mean score and count of the training games after ``(1 − FINAL_FRACTION) ×`` the frames of the
    run's last logged game (:data:`FINAL_FRACTION`)."""
    from saliency_lib.train.common import read_log

    if not isinstance(logs, (str, os.PathLike)) or not (Path(logs) / "train_log.csv").is_file():  # None or NaN: none
        return float("nan"), 0
    log = read_log(Path(logs) / "train_log.csv").dropna(subset=["episode_score"])
    if log.empty:
        return float("nan"), 0
    last = log[log["frames"] > (1 - FINAL_FRACTION) * log["frames"].max()]
    return float(last["episode_score"].mean()), len(last)


def a3c_score_table(runs: pd.DataFrame, game: str) -> pd.DataFrame | Note:
    """Final scores per variant: seeds, frames, mean ± sd over seeds of the agents' evaluation means.

    Only shipped agents have a final score. ``train_final`` is a second, less noisy measure:
    the mean over seeds of each run's training games (sampled actions) in the last
    :data:`FINAL_FRACTION` of its frames, from its log (``train_games`` games in all). A last
    row gives the official Mask-A3C run's level at the same number of frames (its last 20
    greedy test games before it), when its log is available.
    """
    done = runs[runs["shipped"] & runs["mean"].notna()] if len(runs) else runs
    if done.empty:
        return Note(f"No final scores yet: no A3C or Mask-A3C agent for {game} is shipped (trained and evaluated).",
                    title="Not trained yet")
    rows = []
    for v in [v for v in VARIANT_ORDER if v in set(done["variant"])]:
        g = done[done["variant"] == v]
        final = [_final_training_mean(logs) for logs in g["logs"]]
        train = [m for m, n in final if n]
        rows.append({"variant": v, "model": VARIANT_LABELS[v], "seeds": len(g), "frames": float(g["frames"].median()),
                     "train_final": float(np.mean(train)) if train else np.nan, "train_games": sum(n for _, n in final),
                     "mean": float(g["mean"].mean()), "sd_seeds": float(g["mean"].std(ddof=1)) if len(g) > 1 else np.nan,
                     "min": float(g["mean"].min()), "max": float(g["mean"].max()),
                     "per_seed": ", ".join(f"{x:,.1f}" for x in g["mean"]), "source": "our agents (greedy evaluation)"})
    ref = _official_reference(game, float(done["frames"].median()))
    if ref:
        rows.append({"variant": "official", "model": "official Mask-A3C run at the same frames", "seeds": 1,
                     "frames": ref["frames"], "train_final": np.nan, "train_games": 0, "mean": ref["mean"],
                     "sd_seeds": np.nan, "min": np.nan, "max": np.nan,
                     "per_seed": f"last {ref['games']} test games: sd {ref['std']:,.1f}",
                     "source": "official test log"})
    return pd.DataFrame(rows)


def style_a3c_scores(table: pd.DataFrame | Note, caption: str):
    """:func:`a3c_score_table` as a Styler (a Note passes through)."""
    if isinstance(table, Note):
        return table
    train = f"Training games, last {FINAL_FRACTION:.0%} of frames"
    t = table[["model", "seeds", "frames", "mean", "sd_seeds", "per_seed", "train_final", "source"]].rename(columns={
        "model": "Model", "seeds": "Seeds", "frames": "Frames (M)", "mean": "Score (mean over seeds)",
        "sd_seeds": "sd over seeds", "per_seed": "Per seed", "train_final": train, "source": "From"})
    t = t.assign(**{"Frames (M)": t["Frames (M)"] / 1e6})
    fmt = {"Frames (M)": "{:.3g}", "Score (mean over seeds)": "{:,.1f}", "sd over seeds": "{:,.1f}", train: "{:,.1f}"}
    return t.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)


_VARIANT_COLORS = {"none": "#555555", "policy": "#21918c", "value": "#de7d2c", "double": "#3b528b"}


_RUN_NAME = re.compile(r"^(?P<algo>a3c(?:-sync)?)-(?P<game>[A-Za-z]+)-(?P<variant>[a-z]+)-s(?P<seed>\d+)$")


FINAL_FRACTION = 0.1
"""Share of a run's logged frames, counted back from its last logged game, whose training games
:func:`a3c_score_table` averages."""


def seed_comparisons(game: str, agents_dir: str | os.PathLike = AGENTS_DIR) -> dict:
    """The variants compared over seeds under each evaluation protocol (:func:`saliency_study.variants.compare_variants`).

    Returns ``{protocol: VariantComparison}`` for ``greedy`` (the papers' protocol) and
    ``sticky`` (sticky actions, games that differ), read from ``<agents_dir>/scores.csv``;
    a protocol under which no agent of ``game`` was evaluated maps to a Note, and a
    missing table gives a Note instead of the dict.
    """
    from saliency_lib.train.scores import PROTOCOL_NAMES, read_scores
    from saliency_study.variants import compare_variants

    path = repo_path(agents_dir) / "scores.csv"
    if not path.is_file():
        return Note(f"No scores table at `{path}`: no actor-critic agent is shipped yet.", title="Not trained yet")
    table = read_scores(path)
    out = {}
    for p in PROTOCOL_NAMES:
        try:
            out[p] = compare_variants(table, protocol=p, game=game)
        except ValueError as e:  # no agent of the game was evaluated under this protocol
            out[p] = Note(f"No {p} evaluation to compare: {e}.", title=f"No {p} scores")
    return out


def greedy_comparison(comparisons):
    """The greedy protocol's comparison out of :func:`seed_comparisons`, or None where there is none."""
    if isinstance(comparisons, Note):
        return None
    c = comparisons.get("greedy")
    return None if isinstance(c, Note) else c


def style_seed_comparison(comparisons, caption: str):
    """One table of both protocols: per variant, the seeds' means, the mean over seeds and its t-interval over seeds."""
    if isinstance(comparisons, Note):
        return comparisons
    rows = []
    for protocol, c in comparisons.items():
        if isinstance(c, Note):
            continue
        for r in c.table.itertuples():
            games = f"{int(r.games)}" + ("" if not np.isfinite(r.distinct_games) else f" ({int(r.distinct_games)} distinct)")
            rows.append({"Protocol": protocol, "Variant": r.label, "Seeds": r.seeds,
                         "Per seed": ", ".join(f"{x:,.1f}" for x in r.per_seed), "Mean over seeds": r.mean,
                         f"{c.level:.0%} CI over seeds (t)": "–" if not np.isfinite(r.ci_low) else f"{r.ci_low:,.1f} to {r.ci_high:,.1f}",
                         "Games (all seeds)": games})
    if not rows:
        return Note("No actor-critic agent has a score under either protocol yet.", title="Not trained yet")
    t = pd.DataFrame(rows)
    return t.style.format({"Mean over seeds": "{:,.1f}"}).hide(axis="index").set_caption(caption)


def seed_sentences(comparisons):
    """Markdown: the generated sentence of each protocol (it names its n and says only what the CI supports)."""
    from IPython.display import Markdown

    if isinstance(comparisons, Note):
        return comparisons
    return Markdown("\n\n".join(f"* **{p}:** {c.text if isinstance(c, Note) else c.sentence}"
                                  for p, c in comparisons.items()))
