"""Chapter 4 (insertion and deletion): one ``show_`` function per displayed figure or table.

The numbers come from :mod:`saliency_book.ch4_degradation` and :mod:`saliency_book.ch4_paper`; this module
only draws and styles them. :func:`show_table` styles any tidy table of the chapter, the comparisons with
the paper included, whatever numeric and verdict columns they have.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from saliency_book.ch4_degradation import (
    DEGRADATION_EXPERIMENTS,
    PAPER_METHODS,
    PAPER_SUBSTRATES,
    SHORT_LABELS,
    SHORT_MEASURES,
    DegradationChapter,
    agent_label,
    measure_label,
    measures_of,
    no_agent,
    notes_pass,
    pick_agent,
    short_label,
    vs_random,
)
from saliency_book.common import Note, figure_image, fmt2
from saliency_book.tables import SMALL
from saliency_book.tables import show_table as show_table_

__all__ = ["show_table", "show_comparison", "show_auc_table", "show_rankings", "show_ranking_detail",
           "show_side_by_side", "show_agreement", "curve_bands", "show_curves", "degraded_images", "show_paths"]



def show_table(table, caption: str, *, digits: int = 3, **kw):
    """:func:`saliency_book.tables.show_table` with chapter 4's short method, measure and agent names."""
    labels = {"method": short_label, "measure": measure_label, "paper_measure": measure_label, "agent": agent_label}
    if isinstance(table, pd.DataFrame):
        labels |= {c: short_label for c in table.columns if c.startswith("best_")}
    return show_table_(table, caption, digits=digits, labels=labels, **kw)


def show_comparison(table: pd.DataFrame, caption: str, *, game: str | None = None):
    """A comparison with the paper (:func:`~saliency_book.ch4_paper.per_game` rows of ``game``, or
    :func:`~saliency_book.ch4_paper.pooled`), whatever its numeric and verdict columns."""
    t = table if game is None else table[table["game"] == game].drop(columns="game")
    return show_table(t, caption)


@notes_pass
def show_auc_table(table: pd.DataFrame, caption: str):
    """A :func:`~saliency_book.ch4_degradation.paper_layout_table` or
    :func:`~saliency_book.ch4_degradation.our_auc_table`; each row's best non-random method in bold."""
    best = table.attrs.get("best", {})
    css = pd.DataFrame([["font-weight: bold" if best.get(r) == c else "" for c in table.columns] for r in table.index],
                       index=table.index, columns=table.columns)
    return table.style.apply(lambda _: css, axis=None).set_caption(caption).set_table_attributes(SMALL)


@notes_pass
def show_rankings(ranks: pd.DataFrame, preset: str, experiment: str, caption: str):
    """Rank (mean AUC) of every method in every substrate × measure of the agent with ``preset``; bold: in the top
    group (no method significantly better); green/red: significantly better/worse than the random map (none
    below :data:`~saliency_study.evidence.MIN_STATES` states). Rows by mean rank."""
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
    """A :func:`~saliency_book.ch4_degradation.ranking_detail`, its setting named before ``caption``."""
    a = table.attrs
    head = f"{agent_label(a['agent'])}, {a['experiment']} on the {a['substrate']} substrate, {measure_label(a['measure'])}"
    return show_table(table, f"{head}: {caption}", names={"mean": "Mean [CI]", "better_than": "Significantly better than",
                                                          "worse_than": "Significantly worse than"})


@notes_pass
def show_side_by_side(side: pd.DataFrame, caption: str):
    """:func:`~saliency_book.ch4_paper.side_by_side`, wide: rows (agent, method), columns (setting, source); cells
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
    """A :func:`~saliency_book.ch4_paper.rank_agreement` (or :func:`~saliency_book.ch4_paper.stream_agreement`):
    per agent and setting, ρ and τ with their p, and the paper's and our best method and random map's place."""
    a = agreement

    def pair(col):
        return [" / ".join(short_label(v) if isinstance(v, str) else {True: "yes", False: "no"}.get(v, "NA")
                           for v in vs) for vs in zip(a[f"paper_{col}"], a[f"our_{col}"])]

    t = pd.DataFrame({
        "Agent": a["agent"].map(agent_label),
        "Setting (paper measure / ours)": [f"{s}, {measure_label(p)}" + ("" if p == m else f" / {SHORT_MEASURES.get(m, m)}")
                                           for s, p, m in zip(a["substrate"], a["paper_measure"], a["our_measure"])],
        "Methods": a["methods"], "States": a["n"],
        **{name: ["NA" if pd.isna(r) else f"{fmt2(r)} (p = {p:.2f})" for r, p in zip(a[c], a[f"{c}_p"])]
           for name, c in (("Spearman ρ", "spearman"), ("Kendall τ", "kendall"))},
        **{f"{name} (paper / ours)": pair(col) for name, col in (("Best non-random", "best"),
                                                                 ("Random map first", "random_first"),
                                                                 ("Random map last", "random_last"))},
        **({"Negative means (paper / ours)": [f"{p} / {o}" for p, o in zip(a["paper_negative"], a["our_negative"])]}
           if "our_negative" in a else {})})
    return t.set_index(["Agent", "Setting (paper measure / ours)"]).style.format(na_rep="NA").set_caption(caption)


# -- curves ---------------------------------------------------------------------------------------------

def curve_bands(values: np.ndarray, *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0,
                block: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean curve and moving-block bootstrap band over states.

    ``values``: one curve per state (rows, in the trajectory's order; non-finite values ignored). States
    are resampled as whole curves in blocks of consecutive states
    (:func:`~saliency_lib.metrics.dependence.block_indices`, block length ``block`` or
    :func:`~saliency_lib.metrics.dependence.block_length` of the curves' AUCs), so every step uses the
    same resamples. Returns ``(mean, low, high)``, each of shape ``(n_steps,)``; with fewer than two
    states ``low`` and ``high`` equal ``mean``.
    """
    from saliency_lib.metrics.dependence import block_indices, block_length

    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"values must have shape (n_states, n_steps), got {v.shape}")
    v = np.where(np.isfinite(v), v, np.nan)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(v, axis=0)
        if v.shape[0] < 2:
            return mean, mean.copy(), mean.copy()
        b = block_length(np.nanmean(v, axis=1)) if block is None else int(block)
        boot = np.nanmean(v[block_indices(v.shape[0], b, n_resamples, np.random.default_rng(seed))], axis=1)
        quantile = np.nanquantile if np.isnan(boot).any() else np.quantile  # nanquantile is slow
        low, high = quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    return mean, low, high


def _curve_lines(results: pd.DataFrame, agent: str, experiment: str, measures: list[str], *, confidence: float,
                 n_resamples: int, seed: int) -> tuple[pd.DataFrame, str]:
    """The curves of :func:`show_curves`, ``measure, substrate, method, step, x, mean, low, high``, and the
    band's name: from every state's curve where ``results`` holds them (:func:`curve_bands`), else from the
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

def degraded_images(state, saliency, *, substrate: str, fractions, mode: str = "insertion", seed: int = 0,
                    state_id: int = 0, blur_sigma: float = 5.0):
    """The inputs along an insertion or deletion path of one state ``(C, H, W)``, as the metric builds them.

    Pixel locations change in order of decreasing ``saliency`` ``(H, W)`` (stable, as the metric);
    ``fractions`` in [0, 1] of the ``H·W`` locations are changed; ``seed``, ``state_id`` and ``blur_sigma``
    are the metric's for the substrate. Returns a tensor ``(len(fractions), C, H, W)``.
    """
    import torch

    from saliency_lib.metrics import make_substrate

    if mode not in DEGRADATION_EXPERIMENTS:
        raise ValueError(f"mode must be one of {DEGRADATION_EXPERIMENTS}, got {mode!r}")
    x = torch.as_tensor(state)
    if x.ndim != 3:
        raise ValueError(f"state must have shape (C, H, W), got {tuple(x.shape)}")
    c, h, w = x.shape
    s = np.asarray(saliency, dtype=np.float64)
    if s.shape != (h, w):
        raise ValueError(f"saliency must have shape {(h, w)} like the state, got {s.shape}")
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or ((fr < 0) | (fr > 1)).any():
        raise ValueError(f"fractions must be a 1-D sequence in [0, 1], got {fractions!r}")
    sub = make_substrate(x[None], substrate, seed=seed, state_ids=[state_id], blur_sigma=blur_sigma)[0]
    rank = torch.empty(h * w, dtype=torch.long)
    rank[torch.argsort(torch.from_numpy(-s.reshape(-1)), stable=True)] = torch.arange(h * w)
    out = []
    for f in fr:
        changed = (rank < int(round(f * h * w))).view(1, h, w)
        out.append(torch.where(changed, x, sub) if mode == "insertion" else torch.where(changed, sub, x))
    return torch.stack(out)


def show_paths(cfg: DegradationChapter, agent: str | None, *, method: str = "occlusion",
               fractions=(0.0, 0.05, 0.15, 0.3, 0.6, 1.0), dpi: int = 80):
    """Inputs along the insertion and deletion paths of the agent's last explained state, for every substrate,
    in the order of ``method``'s map (the sweep's parameters; cached as ``.npy``): the newest frame on the
    clean state's grey scale. A Note when ``agent`` is None."""
    if agent is None:
        return Note("No agent to show.", title="No agent")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import torch

    from saliency_lib.agents import load_agent
    from saliency_lib.explainers import get_explainer
    from saliency_lib.sweep import SUBSTRATES, study_states
    from saliency_study.cache import cached_file
    from saliency_study.profiles import get_profile, sweep_sizes

    ag = load_agent(agent, device=cfg.device)
    n, _, params = sweep_sizes(cfg.profile, ag.preset)
    prof = get_profile(cfg.profile)  # the sweep's states: the profile's selection for this kind of agent
    states, scfg = study_states(agent, n, seed=0, results_dir=cfg.results_dir, agent=ag,
                                selection=prof.selection(ag.preset), episode_cap=prof.episode_cap())
    i = len(states) - 1
    kw = dict(params.get(method, {}))

    def make(path):
        torch.set_num_threads(1)
        hid = None if states.hidden is None else tuple(h[i:i + 1].to(ag.device) for h in states.hidden)
        res = get_explainer(method, ag, **kw).attribute(states.states[i:i + 1].to(ag.device),
                                                        target=states.actions[i:i + 1], hidden=hid)
        with open(path, "wb") as f:
            np.save(f, np.asarray(res.maps[0].detach().cpu().numpy() if hasattr(res.maps, "detach") else res.maps[0],
                                  dtype=np.float32))

    config = {"what": "degradation_map", "states": scfg, "index": i, "method": method, "params": kw}
    sal = np.load(cached_file("degradation_map", config, ".npy", make, results_dir=cfg.results_dir))
    x = states.states[i].cpu()
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
