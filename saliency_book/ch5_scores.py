"""Chapter 5 (Mask attention): does attention make A3C score higher? Our runs beside the official one.

* :func:`actor_critic_runs`: our A3C and Mask-A3C training runs (shipped agents and runs in progress);
  :func:`show_curves` draws their learning curves beside the official run and its milestones.
* :func:`a3c_score_table`, :func:`show_scores`: the final scores per variant.
* :func:`seed_comparisons`: the variants compared over seeds under each evaluation protocol
  (:func:`saliency_study.variants.compare_variants`); :func:`show_comparison` (per variant),
  :func:`comparison_verdicts` and :func:`show_verdicts` (per protocol; the prose quotes its rows). The
  tables show every column the comparison carries, so a new statistic of the study's comparison shows
  without a change here.
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

__all__ = ["FINAL_FRACTION", "actor_critic_runs", "show_curves", "a3c_score_table", "show_scores", "seed_comparisons",
           "show_comparison", "comparison_verdicts", "show_verdicts"]

FINAL_FRACTION = 0.1
"""Share of a run's logged frames, counted back from its last logged game, whose training games
:func:`a3c_score_table` averages."""
_VARIANT_COLORS = {"none": "#555555", "policy": "#21918c", "value": "#de7d2c", "double": "#3b528b"}
_RUN_NAME = re.compile(r"^(?P<algo>a3c(?:-sync)?)-(?P<game>[A-Za-z]+)-(?P<variant>[a-z]+)-s(?P<seed>\d+)$")


def actor_critic_runs(game: str, agents_dir: str | os.PathLike = AGENTS_DIR, runs_dir: str | os.PathLike | None = RUNS_DIR,
                      scores_csv: str | os.PathLike | None = None) -> pd.DataFrame:
    """Our actor-critic training runs of ``game``: shipped agents and, optionally, runs in progress.

    Shipped agents are the ``agents_dir`` folders with ``algo`` a3c; their final score comes from
    ``scores.csv`` next to them (``scores_csv``) or ``eval_score`` in ``meta.json``
    (:func:`~saliency_book.common.score_table`). Runs in progress are ``<runs_dir>/a3c-<game>-<variant>-s<seed>``
    with a ``train_log.csv`` and no shipped agent of the same name; they have no final score.

    Returns
    -------
    DataFrame
        Columns ``agent, variant, seed, frames, mean, std, episodes, shipped, logs`` (the folder with
        ``train_log.csv``/``eval_log.csv``, or None).
    """
    from saliency_book.common import score_table

    cols = ["agent", "variant", "seed", "frames", "mean", "std", "episodes", "shipped", "logs"]
    base = repo_path(agents_dir)
    scores = score_table(agents_dir, scores_csv if scores_csv is not None else base / "scores.csv", games=[game])
    rows = []
    for _, s in scores[scores["algo"].isin(AC_ALGOS)].iterrows():
        d = repo_path(s["path"])
        rows.append({"agent": s["agent"], "variant": variant(s), "seed": json.loads((d / "meta.json").read_text()).get("seed"),
                     "frames": s["frames"], "mean": s["mean"], "std": s["std"], "episodes": s["episodes"], "shipped": True,
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
    order = {v: i for i, v in enumerate(VARIANT_ORDER)}
    return pd.DataFrame(rows, columns=cols).sort_values(
        ["variant", "seed"], key=lambda c: c.map(order) if c.name == "variant" else c).reset_index(drop=True)


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


def _final_training_mean(logs) -> tuple[float, int]:
    """Mean score and count of the training games in the last :data:`FINAL_FRACTION` of the frames of the
    run's last logged game."""
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

    Only shipped agents have a final score. ``train_final`` is a second, less noisy measure: the mean over
    seeds of each run's training games (sampled actions) in the last :data:`FINAL_FRACTION` of its frames
    (``train_games`` games in all). A last row gives the official Mask-A3C run at the same number of frames
    (its last 20 greedy test games before it), when its log is available.
    """
    from saliency_lib.agents.official import OFFICIAL_GAMES, official_test_log

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
    frames = float(done["frames"].median())
    if game in OFFICIAL_GAMES and official_available(game, logs=True):
        log = official_test_log(game)
        s = log.loc[log["frames"] <= frames, "score"].tail(20)
        if len(s):
            rows.append({"variant": "official", "model": "official Mask-A3C run at the same frames", "seeds": 1,
                         "frames": frames, "train_final": np.nan, "train_games": 0, "mean": float(s.mean()),
                         "sd_seeds": np.nan, "min": np.nan, "max": np.nan,
                         "per_seed": f"last {len(s)} test games: sd {float(s.std(ddof=0)):,.1f}",
                         "source": "official test log"})
    return pd.DataFrame(rows)


def show_scores(table: pd.DataFrame | Note, caption: str):
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


# -- the comparison over seeds -------------------------------------------------------------------

def seed_comparisons(game: str, agents_dir: str | os.PathLike = AGENTS_DIR) -> dict | Note:
    """``{protocol: VariantComparison}`` for ``greedy`` (the papers' protocol) and ``sticky`` (sticky actions,
    games that differ), read from ``<agents_dir>/scores.csv``; a protocol under which no agent of ``game`` was
    evaluated maps to a Note, and a missing table gives a Note instead of the dict."""
    from saliency_lib.train.scores import PROTOCOL_NAMES, read_scores
    from saliency_study.variants import compare_variants

    path = repo_path(agents_dir) / "scores.csv"
    if not path.is_file():
        return Note(f"No scores table at `{path}`: no actor-critic agent is shipped yet.", title="Not trained yet")
    table, out = read_scores(path), {}
    for p in PROTOCOL_NAMES:
        try:
            out[p] = compare_variants(table, protocol=p, game=game)
        except ValueError as e:  # no agent of the game was evaluated under this protocol
            out[p] = Note(f"No {p} evaluation to compare: {e}.", title=f"No {p} scores")
    return out


_HIDDEN = {"variant", "seed_ids", "sd", "frames", "ci_low", "ci_high", "games", "distinct_games", "per_seed", "label",
           "seeds", "mean"}
"""Columns of a comparison's table that :func:`show_comparison` shows merged or not at all; any other
column is shown under its own name."""


def show_comparison(comparisons: dict | Note, caption: str):
    """One table of every protocol: per variant, the seeds' means, the mean over seeds and its t-interval over
    seeds, the games, and every further column of the comparison's table (formatted as numbers)."""
    if isinstance(comparisons, Note):
        return comparisons
    rows, extra = [], []
    for protocol, c in comparisons.items():
        if isinstance(c, Note):
            continue
        ci = f"{c.level:.0%} CI over seeds (t)"
        extra += [k for k in c.table.columns if k not in _HIDDEN and k not in extra]
        for r in c.table.to_dict("records"):
            games = f"{int(r['games'])}" + ("" if not np.isfinite(r["distinct_games"]) else f" ({int(r['distinct_games'])} distinct)")
            rows.append({"Protocol": protocol, "Variant": r["label"], "Seeds": r["seeds"],
                         "Per seed": ", ".join(f"{x:,.1f}" for x in r["per_seed"]), "Mean over seeds": r["mean"],
                         ci: "–" if not np.isfinite(r["ci_low"]) else f"{r['ci_low']:,.1f} to {r['ci_high']:,.1f}",
                         "Games (all seeds)": games, **{k: r[k] for k in extra if k in r}})
    if not rows:
        return Note("No actor-critic agent has a score under either protocol yet.", title="Not trained yet")
    t = pd.DataFrame(rows)
    fmt = {k: "{:,.1f}" for k in ["Mean over seeds", *extra] if pd.api.types.is_numeric_dtype(t[k])}
    return t.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)


def comparison_verdicts(comparisons: dict | Note, protocols=("greedy", "sticky")) -> pd.DataFrame:
    """The verdict of each protocol, one row each: ``protocol, baseline, treatment, level``, the means over seeds
    (``mean_baseline``, ``mean_treatment``) and ``frames``, every field of the comparison's ``difference``
    (``diff, se, df, ci_low, ci_high, n_baseline, n_treatment`` and any the study adds), ``verdict`` ("no
    verdict" where the study gives none) and ``reason``. A protocol without a comparison gets a row of NaN
    whose reason is the Note's text, so that the prose can always quote the row."""
    rows = []
    for p in protocols:
        c = comparisons.get(p) if isinstance(comparisons, dict) else comparisons
        if c is None or isinstance(c, Note):
            rows.append({"protocol": p, "baseline": "none", "treatment": "double", "level": np.nan, "n_baseline": 0,
                         "n_treatment": 0, "verdict": "no verdict", "reason": c.text if c is not None else "no scores"})
            continue
        mean = c.table.set_index("variant")["mean"]
        rows.append({"protocol": p, "baseline": c.baseline, "treatment": c.treatment, "level": c.level,
                     "mean_baseline": mean.get(c.baseline, np.nan), "mean_treatment": mean.get(c.treatment, np.nan),
                     "frames": c.frames, **c.difference, "verdict": c.verdict or "no verdict", "reason": c.reason or ""})
    cols = ["protocol", "baseline", "treatment", "level", "mean_baseline", "mean_treatment", "frames", "diff", "se", "df",
            "ci_low", "ci_high", "n_baseline", "n_treatment"]
    t = pd.DataFrame(rows)
    return t.reindex(columns=[*cols, *[k for k in t.columns if k not in cols]])


_VERDICT_COLUMNS = {"protocol": "Protocol", "comparison": "Comparison", "seeds": "Seeds", "diff": "Difference (points)",
                    "ci": "CI (Welch t over seeds)", "verdict": "Verdict", "reason": "Why no verdict"}


def show_verdicts(verdicts: pd.DataFrame | Note, caption: str):
    """:func:`comparison_verdicts` as a small table; fields it does not know are shown under their own names."""
    if isinstance(verdicts, Note):
        return verdicts
    known = {"protocol", "baseline", "treatment", "level", "mean_baseline", "mean_treatment", "frames", "diff", "se",
             "df", "ci_low", "ci_high", "n_baseline", "n_treatment", "verdict", "reason"}
    t = verdicts.assign(
        comparison=[f"{VARIANT_LABELS.get(r.treatment, r.treatment)} − {VARIANT_LABELS.get(r.baseline, r.baseline)}"
                    for r in verdicts.itertuples()],
        seeds=[f"{r.n_treatment} and {r.n_baseline}" for r in verdicts.itertuples()],
        ci=["–" if not np.isfinite(r.ci_low) else f"{r.level:.0%}: {r.ci_low:+,.1f} to {r.ci_high:+,.1f}"
            for r in verdicts.itertuples()])
    extra = [k for k in verdicts.columns if k not in known]
    out = t[[*_VERDICT_COLUMNS, *extra]].rename(columns=_VERDICT_COLUMNS)
    fmt = {"Difference (points)": "{:+,.1f}", **{k: "{:,.3g}" for k in extra if pd.api.types.is_numeric_dtype(out[k])}}
    return out.style.format(fmt, na_rep="–").hide(axis="index").set_caption(caption)
