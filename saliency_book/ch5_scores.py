"""Chapter 5 (Mask attention): does attention make A3C score higher? Our runs beside the official one.

The runs, their final scores and the comparisons over seeds are :mod:`saliency_study.variants`'; here:

* :func:`show_curves`: the runs' learning curves beside the official run and its milestones;
* :func:`show_scores`: the final scores per variant (:func:`~saliency_study.variants.final_scores`);
* :func:`seed_comparisons`: every comparison, with a Note where there is none; :func:`show_comparison` (per
  variant), :func:`comparison_verdicts` and :func:`show_verdicts` (per comparison; the prose quotes its rows).
  The tables show every column the comparison carries, so a new statistic of the study shows without a change here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from saliency_book.ch5_mask_attention import COLORS, VARIANT_LABELS, VARIANT_ORDER
from saliency_book.common import Note, figure_image
from saliency_study import variants
from saliency_study.catalog import official_available
from saliency_study.paths import AGENTS_DIR
from saliency_study.variants import FINAL_FRACTION, VariantComparison

__all__ = ["MEASURES", "show_curves", "show_scores", "seed_comparisons", "show_comparison", "comparison_verdicts",
           "show_verdicts"]

MEASURES = {"greedy": "final score, greedy", "sticky": "final score, sticky actions",
            "curve_mean": "checkpoints' mean (greedy)", "curve_iqm": "checkpoints' IQM (greedy)"}
"""What each comparison of :func:`saliency_study.variants.seed_comparisons` compares, for the tables."""
_VARIANT_COLORS = {"none": "#555555", "policy": "#21918c", "value": "#de7d2c", "double": "#3b528b"}


def _greedy(comparisons):
    """The greedy protocol's comparison out of :func:`seed_comparisons` (or a comparison itself), or None."""
    c = comparisons.get("greedy") if isinstance(comparisons, dict) else comparisons
    return None if c is None or isinstance(c, Note) else c


def show_curves(runs: pd.DataFrame, game: str, *, comparisons=None, window: int = 50, dpi: int = 90):
    """Learning curves of our A3C / Mask-A3C runs (one colour per variant), with the official run for reference.

    Left: every seed's training games (rolling mean of ``window``) and greedy evaluations, with the official
    run's greedy test games over the same emulator frames. Right, when the official log of ``game`` exists:
    the official run's whole course on a log axis of emulator frames, its milestones
    (:func:`~saliency_lib.agents.official.official_milestones`, reference-itaya2021 §3.2) at 4 frames per
    global step, and each variant's greedy score at our frames, the mean over seeds with its t-interval over
    seeds (the greedy comparison of ``comparisons``). Without runs the result is a Note.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from saliency_lib.agents.official import official_test_log
    from saliency_lib.train.common import read_log

    if runs.empty:
        return Note(f"Our A3C and Mask-A3C agents for {game} are not trained yet: no run is shipped or in progress, "
                    "so there is no learning curve to show. The comparison fills in when they exist.",
                    kind="warning", title="A3C and Mask-A3C not trained yet")
    official = official_test_log(game) if official_available(game, logs=True) else None
    fig = Figure(figsize=(11.5, 5.6) if official is not None else (9.6, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, width_ratios=[3, 2], sharey=True) if official is not None else [fig.subplots()]
    ax, top, seeds = axes[0], 0.0, {}  # seeds: variant -> its seeds, for one legend entry per variant
    for r in runs.itertuples():
        if not isinstance(r.logs, str):  # shipped without logs
            continue
        color = _VARIANT_COLORS.get(r.variant)
        seeds.setdefault(r.variant, []).append(f"{r.seed}" + ("" if r.shipped else " (in progress)"))
        tr = read_log(Path(r.logs) / "train_log.csv")
        ep = tr[tr["episode_score"].notna()] if "episode_score" in tr.columns else tr.iloc[:0]
        if len(ep):
            ax.plot(ep["frames"] / 1e6, ep["episode_score"].rolling(window, min_periods=1).mean(), color=color, lw=1.2,
                    alpha=0.85, ls="-" if r.shipped else "--")
            top = max(top, float(ep["frames"].max()))
        e = read_log(Path(r.logs) / "eval_log.csv") if (Path(r.logs) / "eval_log.csv").is_file() else []
        if len(e):
            ax.errorbar(e["frames"] / 1e6, e["eval_mean"], yerr=e["eval_std"], fmt="o", ms=3, capsize=1.5, lw=0.8,
                        color=color, alpha=0.7)
            top = max(top, float(e["frames"].max()))
    # one legend entry per variant (its seeds named): with several seeds a line each would outgrow the plot
    handles = [Line2D([], [], color=_VARIANT_COLORS.get(v), lw=1.6,
                      label=f"{VARIANT_LABELS.get(v, v)}, seed{'s' if len(seeds[v]) > 1 else ''} {', '.join(seeds[v])}")
               for v in sorted(seeds, key=lambda v: VARIANT_ORDER.index(v) if v in VARIANT_ORDER else len(VARIANT_ORDER))]
    handles += [Line2D([], [], color="black", lw=1.2, label=f"lines: training games (mean of {window})"),
                Line2D([], [], color="black", marker="o", ms=3, ls="none", label="dots: greedy evaluations (mean ± sd)")]
    if not runs["shipped"].all():
        handles.append(Line2D([], [], color="black", lw=1.2, ls="--", label="dashed: run in progress"))
    if top > 0 and official is not None and len(early := official[official["frames"] <= 1.05 * top]):
        ax.plot(early["frames"] / 1e6, early["score"].rolling(20, min_periods=1).mean(), color=COLORS["official"], lw=2,
                zorder=0)
        handles.append(Line2D([], [], color=COLORS["official"], lw=2,
                              label="official Mask-A3C run: greedy test games (mean of 20)"))
    ax.set_xlabel("emulator frames (millions)")
    ax.set_ylabel("game score (raw, all lives)")
    ax.set_title(f"A3C and Mask-A3C on {game}: our runs", fontsize=10)
    ax.grid(alpha=0.3)
    if official is None:
        fig.legend(handles=handles, fontsize=7.5, loc="outside right upper", frameon=False)
    else:
        handles += _official_course(axes[1], official, game, _greedy(comparisons), top)
        fig.legend(handles=handles, fontsize=7.5, loc="outside lower center", ncols=2, frameon=False)
    return figure_image(fig, dpi=dpi)


def _official_course(ax, official: pd.DataFrame, game: str, comparison, top: float) -> list:
    """The right panel: the official run's whole course with its milestones, and our variants (the rows of
    ``comparison``'s table, none without one) at their frames. Returns the legend handles it adds."""
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


def show_scores(table: pd.DataFrame, caption: str):
    """:func:`~saliency_study.variants.final_scores` as a Styler (a Note when it is empty)."""
    if table.empty:
        return Note("No final scores yet: no A3C or Mask-A3C agent is shipped (trained and evaluated).",
                    title="Not trained yet")
    ours = table["variant"] != "official"
    train = f"Training games, last {FINAL_FRACTION:.0%} of frames"
    t = pd.DataFrame({
        "Model": [VARIANT_LABELS.get(v, "official Mask-A3C run at the same frames") for v in table["variant"]],
        "Seeds": table["seeds"], "Frames (M)": table["frames"] / 1e6, "Score (mean over seeds)": table["mean"],
        "sd over seeds": table["sd_seeds"],
        "Per seed": [", ".join(f"{x:,.1f}" for x in r.per_seed) if o else f"last {r.test_games} test games: sd {r.test_sd:,.1f}"
                     for o, r in zip(ours, table.itertuples())],
        train: table["train_final"], "From": np.where(ours, "our agents (greedy evaluation)", "official test log")})
    fmt = {"Frames (M)": "{:.3g}", "Score (mean over seeds)": "{:,.1f}", "sd over seeds": "{:,.1f}", train: "{:,.1f}"}
    return t.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)


# -- the comparison over seeds -------------------------------------------------------------------

def seed_comparisons(game: str, agents_dir: str | os.PathLike = AGENTS_DIR) -> dict:
    """:func:`saliency_study.variants.seed_comparisons`: ``{key: VariantComparison}`` for the final score under
    ``greedy`` (the papers' protocol) and ``sticky`` (sticky actions, games that differ) and the learning-curve
    aggregates; a comparison the study cannot make maps to a Note that says why."""
    return {k: c if isinstance(c, VariantComparison) else Note(f"No {MEASURES.get(k, k)} to compare: {c}.",
                                                               title=f"No {MEASURES.get(k, k)}")
            for k, c in variants.seed_comparisons(game, agents_dir).items()}


_HIDDEN = {"variant", "seed_ids", "sd", "frames", "ci_low", "ci_high", "games", "distinct_games", "per_seed", "label",
           "seeds", "mean"}
"""Columns of a comparison's table that :func:`show_comparison` shows merged or not at all; any other
column is shown under its own name."""


def show_comparison(comparisons: dict | Note, caption: str):
    """One table of every comparison: per variant, the seeds' numbers, the mean over seeds and its t-interval over
    seeds, the games, and every further column of the comparison's table (formatted as numbers)."""
    if isinstance(comparisons, Note):
        return comparisons
    rows, extra = [], []
    for key, c in comparisons.items():
        if isinstance(c, Note):
            continue
        ci = f"{c.level:.0%} CI over seeds (t)"
        extra += [k for k in c.table.columns if k not in _HIDDEN and k not in extra]
        for r in c.table.to_dict("records"):
            games = f"{int(r['games'])}" + ("" if not np.isfinite(r["distinct_games"])
                                            else f" ({int(r['distinct_games'])} distinct)")
            rows.append({"Measure": MEASURES.get(key, key), "Variant": r["label"], "Seeds": r["seeds"],
                         "Per seed": ", ".join(f"{x:,.1f}" for x in r["per_seed"]), "Mean over seeds": r["mean"],
                         ci: "–" if not np.isfinite(r["ci_low"]) else f"{r['ci_low']:,.1f} to {r['ci_high']:,.1f}",
                         "Games (all seeds)": games, **{k: r[k] for k in extra if k in r}})
    if not rows:
        return Note("No actor-critic agent has a score under either protocol yet.", title="Not trained yet")
    t = pd.DataFrame(rows)
    fmt = {k: "{:,.1f}" for k in ["Mean over seeds", *extra] if pd.api.types.is_numeric_dtype(t[k])}
    return t.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)


def comparison_verdicts(comparisons: dict) -> pd.DataFrame:
    """:func:`saliency_study.variants.verdict_table` of :func:`seed_comparisons` (a Note's text is its reason)."""
    return variants.verdict_table({k: c.text if isinstance(c, Note) else c for k, c in comparisons.items()})


_VERDICT_COLUMNS = {"measure": "Measure", "comparison": "Comparison", "seeds": "Seeds", "diff": "Difference (points)",
                    "ci": "CI (Welch t over seeds)", "mde": f"Detectable at {100 * variants.POWER:g} % power",
                    "margin": f"± {100 * variants.MARGIN:g} % of the baseline", "verdict": "Verdict", "reason": "Why no verdict"}
_KNOWN = {*variants.VERDICT_COLUMNS, "key", "verdict", "reason"}


def show_verdicts(verdicts: pd.DataFrame | Note, caption: str):
    """:func:`comparison_verdicts` as a small table; fields it does not know are shown under their own names."""
    if isinstance(verdicts, Note):
        return verdicts
    t = verdicts.assign(
        measure=[MEASURES.get(k, k) for k in verdicts["key"]],
        comparison=[f"{VARIANT_LABELS.get(r.treatment, r.treatment)} − {VARIANT_LABELS.get(r.baseline, r.baseline)}"
                    for r in verdicts.itertuples()],
        seeds=[f"{r.n_treatment} and {r.n_baseline}" for r in verdicts.itertuples()],
        ci=["–" if not np.isfinite(r.ci_low) else f"{r.level:.0%}: {r.ci_low:+,.1f} to {r.ci_high:+,.1f}"
            for r in verdicts.itertuples()])
    extra = [k for k in verdicts.columns if k not in _KNOWN]
    out = t[[*_VERDICT_COLUMNS, *extra]].rename(columns=_VERDICT_COLUMNS)
    fmt = {_VERDICT_COLUMNS["diff"]: "{:+,.1f}", _VERDICT_COLUMNS["mde"]: "{:,.1f}", _VERDICT_COLUMNS["margin"]: "{:,.1f}",
           **{k: "{:,.3g}" for k in extra if pd.api.types.is_numeric_dtype(out[k])}}
    return out.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)
