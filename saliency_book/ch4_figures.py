"""Chapter 4 (insertion and deletion): one ``show_`` function per displayed figure or table.

The numbers come from :mod:`saliency_study.degradation`, :mod:`saliency_study.agreement` and
:mod:`saliency_study.advantage_stream` through :mod:`saliency_book.ch4_degradation`; this module only
lays out, draws and styles them. :func:`show_table` styles any tidy table of the chapter, the comparisons
with the paper included, whatever numeric and verdict columns they have.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from saliency_book.ch4_degradation import (
    PAPER_GAMES,
    SHORT_LABELS,
    SHORT_MEASURES,
    DegradationChapter,
    agent_label,
    measure_label,
    no_agent,
    pick_agent,
    short_label,
)
from saliency_book.common import Note, figure_image, fmt2, notes_pass
from saliency_book.tables import SMALL
from saliency_book.tables import show_table as show_table_
from saliency_study.degradation import (
    DEGRADATION_EXPERIMENTS,
    MEASURE_ROLE,
    PAPER_ANALOGUE,
    PAPER_AUC,
    PAPER_METHODS,
    PAPER_SUBSTRATES,
    best_non_random,
    curve_bands,
    degraded_images,
    measures_of,
    path_state,
    vs_random,
)
from saliency_study.evidence import DEGENERATE_MEASURES

__all__ = ["show_table", "show_comparison", "show_paper_table", "show_auc_table", "show_rankings",
           "show_ranking_detail", "show_side_by_side", "show_agreement", "show_factors", "show_curves", "show_paths"]


def show_table(table, caption: str, *, digits: int = 3, **kw):
    """:func:`saliency_book.tables.show_table` with chapter 4's short method, measure and agent names."""
    labels = {"method": short_label, "measure": measure_label, "paper_measure": measure_label, "agent": agent_label}
    if isinstance(table, pd.DataFrame):
        labels |= {c: short_label for c in table.columns if c.startswith("best_")}
    return show_table_(table, caption, digits=digits, labels=labels, **kw)


def show_comparison(table: pd.DataFrame, caption: str, *, game: str | None = None):
    """A comparison with the paper (:func:`~saliency_study.agreement.per_game` rows of ``game``, or
    :func:`~saliency_study.agreement.pooled`), whatever its numeric and verdict columns."""
    t = table if game is None else table[table["game"] == game].drop(columns="game")
    return show_table(t, caption)


def _pm(mean: float, std: float) -> str:
    return "NA" if pd.isna(mean) else f"{mean:.3f}±{std:.3f}".replace("-", "−")


def _bold_best(groups: list, columns: list[str], caption: str, index=None):
    """Rows ``(label, summary of one setting indexed by method, higher_is_better or None)``: cells "mean±std"
    in ``columns``, each row's best non-random method in bold (None: not ranked)."""
    labels = [label for label, _, _ in groups]
    cells = pd.DataFrame([[_pm(g["mean"].get(m, np.nan), g["std"].get(m, np.nan)) for m in columns]
                          for _, g, _ in groups], index=index if index is not None else pd.Index(labels),
                         columns=[short_label(m) for m in columns])
    best = [None if hib is None else best_non_random(g["mean"], hib) for _, g, hib in groups]
    css = pd.DataFrame([["font-weight: bold" if b is not None and short_label(b) == c else "" for c in cells.columns]
                        for b in best], index=cells.index, columns=cells.columns)
    return cells.style.apply(lambda _: css, axis=None).set_caption(caption).set_table_attributes(SMALL)


@notes_pass
def show_paper_table(summary: pd.DataFrame, substrate: str, paper_measure: str, caption: str):
    """One of Huber et al.'s four insertion tables, our agents' rows (:func:`~saliency_study.degradation.auc_summary`)
    under the paper's: mean ± std, each row's best non-random method in bold.

    Rows: the paper's games, then one row per agent on the measure whose
    :data:`~saliency_study.degradation.PAPER_ANALOGUE` is ``paper_measure`` (none on a measure of
    :data:`~saliency_study.evidence.DEGENERATE_MEASURES`). Columns: the paper's methods in its order,
    then our other methods.
    """
    if substrate not in PAPER_SUBSTRATES or paper_measure not in ("q_ratio", "advantage"):
        raise ValueError(f"the paper has insertion tables for substrates {PAPER_SUBSTRATES} and measures "
                         f"('q_ratio', 'advantage'), got substrate={substrate!r}, measure={paper_measure!r}")
    ours = summary[(summary["experiment"] == "insertion") & (summary["substrate"] == substrate)
                   & (summary["measure"].map(PAPER_ANALOGUE) == paper_measure)
                   & ~summary["measure"].isin(list(DEGENERATE_MEASURES))]
    extra = [m for m in dict.fromkeys(ours["method"]) if m not in PAPER_METHODS]
    cols = list(PAPER_METHODS) + sorted(extra, key=lambda m: list(SHORT_LABELS).index(m) if m in SHORT_LABELS else 99)
    paper = PAPER_AUC[(PAPER_AUC["substrate"] == substrate) & (PAPER_AUC["measure"] == paper_measure)]
    groups = [(f"Huber et al.: {label}", paper[paper["game"] == game].set_index("method"), True)
              for game, label in PAPER_GAMES.items()]
    groups += [(f"Ours: {agent_label(a)}" + ("" if m == paper_measure else f", {measure_label(m)}"),
                g.set_index("method"), True) for (a, m), g in ours.groupby(["agent", "measure"], sort=False)]
    return _bold_best(groups, cols, caption)


@notes_pass
def show_auc_table(summary: pd.DataFrame, preset: str, caption: str):
    """Every setting of the agent with ``preset``: rows (experiment, substrate, measure), columns methods; cells
    mean ± std, the best non-random method in bold (insertion: highest, deletion: lowest), none on a
    degenerate measure (labelled "not ranked")."""
    agent = pick_agent(summary, preset)
    if agent is None:
        return no_agent(preset, "AUC table")
    s = summary[summary["agent"] == agent]
    methods = [m for m in SHORT_LABELS if m in set(s["method"])] + sorted(set(s["method"]) - set(SHORT_LABELS))
    subs = {"black": 0, "random": 1, "blur": 2}
    keys = sorted(s.groupby(["experiment", "substrate", "measure"]).groups, key=lambda k: (
        DEGRADATION_EXPERIMENTS.index(k[0]), subs.get(k[1], 9), {"value": 0, "action": 1}.get(MEASURE_ROLE.get(k[2]), 2), k[2]))
    groups, index = [], []
    for exp, sub, meas in keys:
        g = s[(s["experiment"] == exp) & (s["substrate"] == sub) & (s["measure"] == meas)].set_index("method")
        degenerate = meas in DEGENERATE_MEASURES  # shown, not ranked: no best method in bold
        index.append((exp, sub, SHORT_MEASURES.get(meas, meas) + (" (not ranked)" if degenerate else "")))
        groups.append((index[-1], g, None if degenerate else bool(g["higher_is_better"].iloc[0])))
    return _bold_best(groups, methods, caption, pd.MultiIndex.from_tuples(index, names=["Experiment", "Substrate", "Measure"]))


@notes_pass
def show_rankings(ranks: pd.DataFrame, preset: str, experiment: str, caption: str):
    """Rank (mean AUC) of every method in every substrate × measure of the agent with ``preset``; bold: in the top
    group (no method significantly better); green/red: significantly better/worse than the random map (none
    below :data:`~saliency_study.evidence.MIN_ESS` effective states). Rows by mean rank."""
    agent = pick_agent(ranks, preset)
    if agent is None:
        return no_agent(preset, "ranking")
    r = ranks[(ranks["agent"] == agent) & (ranks["experiment"] == experiment)]
    r = r.assign(col=r["substrate"] + ", " + r["measure"].map(measure_label),
                 cell=r["rank"].astype(str) + " (" + r["mean"].map(lambda v: f"{v:.3f}".replace("-", "−")) + ")",
                 css=np.where(r["worse_than"] == "", "font-weight: bold; ", "") + r.apply(vs_random, axis=1).map(
                     {1: "background-color: #d9f2d9", -1: "background-color: #f8d7d7", 0: ""}))
    order = {"black": 0, "random": 1, "blur": 2, **{m: i for i, m in enumerate(SHORT_MEASURES)}}
    cols = list(dict.fromkeys(r.sort_values(["substrate", "measure"], key=lambda c: c.map(order).fillna(9))["col"]))
    rows = r.groupby("method")["rank"].mean().sort_values().index
    cells, css = (r.pivot(index="method", columns="col", values=v).reindex(index=rows, columns=cols).rename(short_label)
                  for v in ("cell", "css"))
    cells.index.name, cells.columns.name = "Method", "substrate, measure: rank (mean AUC)"
    css = css.fillna("").set_axis(cells.index)
    return cells.style.apply(lambda _: css, axis=None).format(na_rep="NA").set_caption(caption).set_table_attributes(SMALL)


@notes_pass
def show_ranking_detail(table: pd.DataFrame, caption: str):
    """A :func:`~saliency_study.degradation.ranking_detail`, its setting named before ``caption``."""
    a = table.attrs
    head = f"{agent_label(a['agent'])}, {a['experiment']} on the {a['substrate']} substrate, {measure_label(a['measure'])}"
    t = table.assign(**{c: table[c].map(lambda s: ", ".join(short_label(m) for m in s.split(", ")) if s else "")
                        for c in ("better_than", "worse_than")})
    return show_table(t, f"{head}: {caption}", names={"mean": "Mean [CI]", "better_than": "Significantly better than",
                                                      "worse_than": "Significantly worse than"})


@notes_pass
def show_side_by_side(side: pd.DataFrame, caption: str):
    """:func:`~saliency_study.agreement.side_by_side`, wide: rows (agent, method), columns (setting, source); cells
    "mean (rank)". An agent whose own measures differ (actor-critic) names them in its row label."""
    labels = {}
    for a, g in side.groupby("agent", sort=False):
        own = [SHORT_MEASURES.get(m, m) for m in dict.fromkeys(g.loc[g["our_measure"] != g["paper_measure"], "our_measure"])]
        labels[a] = agent_label(a) + (f", ours: {' / '.join(own)}" if own else "")
    t = side.assign(Agent=side["agent"].map(labels), Method=side["method"].map(short_label),
                    setting=side["substrate"] + ", " + side["paper_measure"].map(measure_label))
    for who, col in (("paper", "Huber et al."), ("our", "ours")):
        t[col] = [("NA" if pd.isna(m) else f"{m:.3f} ({int(r)})".replace("-", "−"))
                  for m, r in zip(t[f"{who}_mean"], t[f"{who}_rank"])]
    settings = [f"{s}, {measure_label(m)}" for s in PAPER_SUBSTRATES for m in ("q_ratio", "advantage")]
    settings = [s for s in settings if s in set(t["setting"])]
    wide = t.pivot_table(index=["Agent", "Method"], columns="setting", values=["Huber et al.", "ours"], aggfunc="first")
    wide = wide.swaplevel(0, 1, axis=1).reindex(columns=pd.MultiIndex.from_product([settings, ["Huber et al.", "ours"]]))
    methods = [short_label(m) for m in PAPER_METHODS if short_label(m) in set(t["Method"])]
    wide = wide.reindex(index=pd.MultiIndex.from_tuples([(labels[a], m) for a in labels for m in methods],
                                                        names=["Agent", "Method"]))
    return wide.style.format(na_rep="NA").set_caption(caption).set_table_attributes(SMALL)


@notes_pass
def show_agreement(agreement: pd.DataFrame, caption: str):
    """A :func:`~saliency_study.agreement.rank_agreement` (or :func:`~saliency_study.advantage_stream.stream_agreement`):
    per agent and setting, the states and effective states behind our means, ρ and τ with their p, and the
    paper's and our best method and random map's place."""
    a = agreement

    def pair(col):
        return [" / ".join(short_label(v) if isinstance(v, str) else {True: "yes", False: "no"}.get(v, "NA")
                           for v in vs) for vs in zip(a[f"paper_{col}"], a[f"our_{col}"])]

    t = pd.DataFrame({
        "Agent": a["agent"].map(agent_label),
        "Setting (paper measure / ours)": [f"{s}, {measure_label(p)}" + ("" if p == m else f" / {SHORT_MEASURES.get(m, m)}")
                                           for s, p, m in zip(a["substrate"], a["paper_measure"], a["our_measure"])],
        "Methods": a["methods"], "States": a["n"], "ESS": a["n_eff"].map(lambda v: f"{v:.1f}"),
        **{name: ["NA" if pd.isna(r) else f"{fmt2(r)} (p = {p:.2f})" for r, p in zip(a[c], a[f"{c}_p"])]
           for name, c in (("Spearman ρ", "spearman"), ("Kendall τ", "kendall"))},
        **{f"{name} (paper / ours)": pair(col) for name, col in (("Best non-random", "best"),
                                                                 ("Random map first", "random_first"),
                                                                 ("Random map last", "random_last"))},
        **({"Negative means (paper / ours)": [f"{p} / {o}" for p, o in zip(a["paper_negative"], a["our_negative"])]}
           if "our_negative" in a else {})})
    return t.set_index(["Agent", "Setting (paper measure / ours)"]).style.format(na_rep="NA").set_caption(caption)


@notes_pass
def show_factors(table: pd.DataFrame, caption: str):
    """:func:`~saliency_study.agreement.factors`, one row group per source (the paper's games, our agents)."""
    source = [f"Huber et al.: {PAPER_GAMES[a]}" if s == "paper" else f"Ours: {agent_label(a)}"
              for s, a in zip(table["source"], table["agent"])]
    return show_table(table.drop(columns="agent").assign(source=source), caption, digits=2, index=["source", "substrate"],
                      names={"best_value": "Best, value measure", "best_action": "Best, action measure",
                             "rho_roles": "ρ, value vs action", "rho_black_value": "ρ with black, value",
                             "rho_black_action": "ρ with black, action", "random_first_value": "Random first, value",
                             "random_first_action": "Random first, action"})


# -- curves ---------------------------------------------------------------------------------------------

def _curve_lines(results: pd.DataFrame, agent: str, experiment: str, measures: list[str], *, confidence: float,
                 n_resamples: int, seed: int) -> tuple[pd.DataFrame, str]:
    """The curves of :func:`show_curves`, ``measure, substrate, method, step, x, mean, low, high``, and the
    band's name: from every state's curve where ``results`` holds them
    (:func:`~saliency_study.degradation.curve_bands`), else from the
    store's mean curves of the rows' units (:func:`saliency_lib.sweep.mean_curves`)."""
    from saliency_lib.sweep import mean_curves
    from saliency_study.paths import RESULTS_DIR

    cols = ["measure", "substrate", "method", "step", "x", "mean", "low", "high"]
    mine = results[(results["agent"] == agent) & (results["experiment"] == experiment)]
    t = mine[mine["step"].notna() & mine["measure"].isin(measures)]
    out = []
    for (meas, sub), g in t.groupby(["measure", "substrate"]):
        wide = g.pivot_table(index=["method", "state"], columns="step", values="value", aggfunc="first")
        steps = wide.columns.to_numpy(dtype=float)
        for m in wide.index.get_level_values(0).unique():
            mean, lo, hi = curve_bands(wide.loc[m].to_numpy(), confidence=confidence, n_resamples=n_resamples, seed=seed)
            out.append(pd.DataFrame({"measure": meas, "substrate": sub, "method": m, "step": steps,
                                     "x": steps / max(steps.max(), 1.0), "mean": mean, "low": lo, "high": hi}))
    if out:
        return pd.concat(out, ignore_index=True), "block-bootstrap band"
    try:  # the store keeps each curve's mean over the states, not every state's curve
        c = mean_curves(list(mine["config_hash"].dropna().unique()), confidence=confidence,
                        results_dir=results.attrs.get("results_dir", RESULTS_DIR))
    except (FileNotFoundError, ValueError):
        return pd.DataFrame(columns=cols), ""
    c = c[(c["agent"] == agent) & (c["experiment"] == experiment) & c["measure"].isin(measures)]
    last = c.groupby(["measure", "substrate"])["step"].transform("max").clip(lower=1)
    return c.assign(x=c["step"] / last)[cols].reset_index(drop=True), "band (t over the effective number of states)"


@notes_pass
def show_curves(results: pd.DataFrame, preset: str, experiment: str, *, confidence: float = 0.95,
                n_resamples: int = 1000, seed: int = 0, dpi: int = 90):
    """Mean insertion/deletion curves of the agent with ``preset``: rows measures, columns substrates, the random
    map dashed black. The band is the moving-block bootstrap CI over states where ``results`` holds every
    state's curve, else the t-interval over the effective number of states of the store's mean curves. The
    x-axis is the fraction of pixel locations changed (84 per step). A Note when there is no such agent."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    agent = pick_agent(results, preset)
    if agent is None:
        return no_agent(preset, f"{experiment} curve")
    t, band = _curve_lines(results, agent, experiment, measures_of(results, agent), confidence=confidence,
                           n_resamples=n_resamples, seed=seed)
    measures = [m for m in measures_of(results, agent) if m in set(t["measure"])]
    if not measures:
        return Note(f"No {experiment} curves for {agent}.", title="No curves")
    substrates = [s for s in ("black", "random", "blur") if s in set(t["substrate"])]
    methods = [m for m in SHORT_LABELS if m in set(t["method"])] + sorted(set(t["method"]) - set(SHORT_LABELS))
    cmap, shades = matplotlib.colormaps["tab20"], [0, 2, 4, 6, 8, 10, 12, 16, 18, 1, 3, 5, 7, 9, 11, 13, 17, 19]
    colours = {m: cmap(shades[i % len(shades)]) for i, m in enumerate(m for m in methods if m != "random")}
    fig, axes = plt.subplots(len(measures), len(substrates), figsize=(4.0 * len(substrates), 3.1 * len(measures)),
                             squeeze=False)
    for (meas, sub), g in t.groupby(["measure", "substrate"]):
        ax = axes[measures.index(meas)][substrates.index(sub)]
        for m in methods:
            c = g[g["method"] == m].sort_values("step")
            colour, ls, lw = ("black", "--", 1.6) if m == "random" else (colours[m], "-", 1.1)
            ax.plot(c["x"], c["mean"], ls=ls, lw=lw, color=colour, label=short_label(m))
            ax.fill_between(c["x"].to_numpy(float), c["low"].to_numpy(float), c["high"].to_numpy(float),
                            color=colour, alpha=0.12, lw=0)
        ax.set_title(f"{sub} substrate, {measure_label(meas)}", fontsize=10)
        ax.grid(alpha=0.3)
        if sub == substrates[0]:
            ax.set_ylabel(measure_label(meas))
        if meas == measures[-1]:
            ax.set_xlabel(f"fraction of pixels {'inserted' if experiment == 'insertion' else 'deleted'}")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 7), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"{experiment.capitalize()} curves of {agent_label(agent)}: mean over states, "
                 f"{int(confidence * 100)} % {band}", fontsize=11)
    many = len(measures) > 1  # fixed margins: tight_layout would lay the figure out twice
    fig.subplots_adjust(left=0.07, right=0.99, top=0.9 if many else 0.82, bottom=0.17 if many else 0.3, wspace=0.22,
                        hspace=0.38)
    try:
        return figure_image(fig, dpi=dpi)
    finally:
        plt.close(fig)


# -- the paths ----------------------------------------------------------------------------------------

def show_paths(cfg: DegradationChapter, agent: str | None, *, method: str = "occlusion",
               fractions=(0.0, 0.05, 0.15, 0.3, 0.6, 1.0), dpi: int = 80):
    """Inputs along the insertion and deletion paths (:func:`~saliency_study.degradation.degraded_images`) of
    the agent's last explained state, for every substrate, in the order of ``method``'s map
    (:func:`~saliency_study.degradation.path_state`): the newest frame on the clean state's grey scale. A
    Note when ``agent`` is None."""
    if agent is None:
        return Note("No agent to show.", title="No agent")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from saliency_lib.sweep import SUBSTRATES

    x, sal, i = path_state(agent, profile=cfg.profile, method=method, device=cfg.device, results_dir=cfg.results_dir)
    lo, hi = float(x[-1].min()), float(x[-1].max())
    rows = [(mode, s) for mode in DEGRADATION_EXPERIMENTS for s in SUBSTRATES]
    fig, axes = plt.subplots(len(rows), len(fractions) + 1, figsize=(1.55 * (len(fractions) + 1), 1.65 * len(rows)),
                             squeeze=False)
    for r, (mode, s) in enumerate(rows):
        imgs = degraded_images(x, sal, substrate=s, fractions=fractions, mode=mode, seed=cfg.seed, state_id=i)
        axes[r][1].set_ylabel(f"{mode}\n{s}", fontsize=8)
        for c, f in enumerate(fractions, start=1):
            axes[r][c].imshow(imgs[c - 1, -1].numpy(), cmap="gray", vmin=lo, vmax=hi)
            if r == 0:
                axes[r][c].set_title(f"{int(round(100 * f))} %", fontsize=8)
    axes[0][0].imshow(sal, cmap="inferno")
    axes[0][0].set_title(f"{short_label(method)} map", fontsize=8)
    axes[1][0].imshow(x[-1].numpy(), cmap="gray", vmin=lo, vmax=hi)
    axes[1][0].set_title("clean state", fontsize=8)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes[2:, 0]:
        ax.set_axis_off()
    fig.suptitle(f"{agent_label(agent)}, state {i}: pixels changed", fontsize=9)
    fig.tight_layout()
    try:
        return figure_image(fig, dpi=dpi)
    finally:
        plt.close(fig)
