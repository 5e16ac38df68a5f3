"""Chapter 4 (insertion and deletion): its figures and styled tables.

The numbers come from :mod:`saliency_book.ch4_degradation`; this module only draws them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from saliency_book.ch4_degradation import (
    DEGRADATION_EXPERIMENTS,
    MEASURE_LABELS,
    PAPER_METHODS,
    PAPER_SUBSTRATES,
    SHORT_LABELS,
    SHORT_MEASURES,
    SMALL,
    DegradationChapter,
    agent_label,
    measure_label,
    measures_of,
    no_agent,
    notes_pass,
    pick_agent,
    short_label,
)
from saliency_book.ch4_rankings import vs_random
from saliency_book.common import Note, figure_image, fmt2

__all__ = ["curve_bands", "curves_figure", "degraded_images", "degradation_figure", "style_paper_layout",
           "style_our_aucs", "style_rankings", "style_ranking_detail", "style_side_by_side", "style_agreement"]


def _bold_cells(table: pd.DataFrame, best: dict) -> pd.DataFrame:
    rows, cols = list(table.index), list(table.columns)
    css = np.full(table.shape, "", dtype=object)
    for row, col in best.items():
        if col is not None and col in cols and row in rows:
            css[rows.index(row), cols.index(col)] = "font-weight: bold"
    return pd.DataFrame(css, index=table.index, columns=table.columns)


@notes_pass
def style_paper_layout(table: pd.DataFrame, caption: str):
    """A :func:`paper_layout_table` as a captioned Styler; the best non-random method of each row in bold."""
    best = table.attrs.get("best", {})
    return table.style.apply(lambda t: _bold_cells(t, best), axis=None).set_caption(caption) \
        .set_table_attributes(SMALL)


@notes_pass
def style_our_aucs(table: pd.DataFrame, caption: str):
    """An :func:`our_auc_table` as a captioned Styler, the best non-random method of each row in bold."""
    return style_paper_layout(table, caption)


def curve_bands(values: np.ndarray, *, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0,
                block: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean curve and moving-block bootstrap band over states.

    Parameters
    ----------
    values : ndarray, shape (n_states, n_steps)
        One curve per state, in the order of the trajectory; non-finite values are ignored.
    confidence, n_resamples, seed
        As :func:`saliency_lib.metrics.block_bootstrap_ci`. States are resampled as whole
        curves in blocks of consecutive states (:func:`saliency_lib.metrics.dependence.block_indices`),
        so the band of every step uses the same resamples and keeps the dependence between
        neighbouring states.
    block : int, optional
        Block length; default :func:`~saliency_lib.metrics.dependence.block_length` of the
        curves' per-state means (their AUCs).

    Returns
    -------
    (mean, low, high) : three ndarrays of shape (n_steps,)
        With fewer than two states, ``low`` and ``high`` equal ``mean``.
    """
    from saliency_lib.metrics.dependence import block_indices, block_length

    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        raise ValueError(f"values must have shape (n_states, n_steps), got {v.shape}")
    v = np.where(np.isfinite(v), v, np.nan)
    with np.errstate(invalid="ignore"), _quiet():
        mean = np.nanmean(v, axis=0)
        if v.shape[0] < 2:
            return mean, mean.copy(), mean.copy()
        b = block_length(np.nanmean(v, axis=1)) if block is None else int(block)
        idx = block_indices(v.shape[0], b, n_resamples, np.random.default_rng(seed))
        boot = np.nanmean(v[idx], axis=1)  # (n_resamples, n_steps)
        a = (1 - confidence) / 2
        quantile = np.nanquantile if np.isnan(boot).any() else np.quantile  # nanquantile is slow
        low, high = quantile(boot, [a, 1 - a], axis=0)
    return mean, low, high


class _quiet:
    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def _colours(methods: list[str]) -> dict[str, object]:
    import matplotlib

    cmap = matplotlib.colormaps["tab20"]
    shades = [0, 2, 4, 6, 8, 10, 12, 16, 18, 1, 3, 5, 7, 9, 11, 13, 17, 19]  # dark shades first; no greys
    real = [m for m in methods if m != "random"]
    out = {m: cmap(shades[i % len(shades)]) for i, m in enumerate(real)}
    out["random"] = "black"
    return out


def _curve_lines(results: pd.DataFrame, agent: str, experiment: str, measures: list[str], *, confidence: float,
                 n_resamples: int, seed: int) -> tuple[pd.DataFrame, str]:
    """The curves of :func:`curves_figure`: ``measure, substrate, method, step, x, mean, low, high`` and the band's name.

    From every state's curve where ``results`` holds them (:func:`curve_bands`); otherwise from
    the study store's mean curves of the rows' units, found by their keys (``config_hash``) under
    ``results.attrs["results_dir"]`` (:func:`saliency_study.cache.mean_curves`).
    """
    cols = ["measure", "substrate", "method", "step", "x", "mean", "low", "high"]
    mine = results[(results["agent"] == agent) & (results["experiment"] == experiment)]
    t = mine[mine["step"].notna() & mine["measure"].isin(measures)]
    out = []
    if len(t):
        for (meas, sub), g in t.groupby(["measure", "substrate"]):
            wide = g.pivot_table(index=["method", "state"], columns="step", values="value", aggfunc="first")
            steps = wide.columns.to_numpy(dtype=float)
            for m in wide.index.get_level_values(0).unique():
                mean, lo, hi = curve_bands(wide.loc[m].to_numpy(), confidence=confidence, n_resamples=n_resamples,
                                           seed=seed)
                out.append(pd.DataFrame({"measure": meas, "substrate": sub, "method": m, "step": steps,
                                         "x": steps / max(steps.max(), 1.0), "mean": mean, "low": lo, "high": hi}))
        return (pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)), "block-bootstrap band"
    from saliency_lib.sweep import mean_curves
    from saliency_study.paths import RESULTS_DIR

    try:  # the store keeps each curve's mean over the states, not every state's curve
        c = mean_curves(list(mine["config_hash"].dropna().unique()), confidence=confidence,
                        results_dir=results.attrs.get("results_dir", RESULTS_DIR))
    except (FileNotFoundError, ValueError):
        return pd.DataFrame(columns=cols), ""
    c = c[(c["agent"] == agent) & (c["experiment"] == experiment) & c["measure"].isin(measures)]
    last = c.groupby(["measure", "substrate"])["step"].transform("max").clip(lower=1)
    return c.assign(x=c["step"] / last)[cols].reset_index(drop=True), "band (t over the effective number of states)"


def curves_figure(results: pd.DataFrame | Note, preset: str, experiment: str, *, confidence: float = 0.95,
                  n_resamples: int = 1000, seed: int = 0, dpi: int = 90):
    """Mean insertion/deletion curves of the agent with ``preset``: rows measures, columns substrates.

    Bands: moving-block bootstrap CI over states (:func:`curve_bands`) where ``results`` holds
    every state's curve. The study's store keeps mean curves instead (:func:`_curve_lines`), whose
    band is the t-interval of the mean over the effective number of states of the curve's AUCs.
    The x-axis is the step divided by the last step, the fraction of pixels changed (84 pixels per
    step; exact for 84 × 84 states, within 84/6400 for 80 × 80 ones). The random-map baseline is
    the dashed black line. A Note when there is no such agent.
    """
    if isinstance(results, Note):
        return results
    agent = pick_agent(results, preset)
    if agent is None:
        return no_agent(preset, f"{experiment} curve")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    measures = measures_of(results, agent)
    t, band = _curve_lines(results, agent, experiment, measures, confidence=confidence, n_resamples=n_resamples,
                           seed=seed)
    measures = [m for m in measures if m in set(t["measure"].unique())]
    if t.empty or not measures:
        return Note(f"No {experiment} curves for {agent}.", title="No curves")
    substrates = [s for s in ("black", "random", "blur") if s in set(t["substrate"].unique())]
    present = set(t["method"].unique())
    methods = [m for m in SHORT_LABELS if m in present] + sorted(present - set(SHORT_LABELS))
    colours = _colours(methods)
    fig, axes = plt.subplots(len(measures), len(substrates), figsize=(4.0 * len(substrates), 3.1 * len(measures)),
                             squeeze=False)
    for (meas, sub), g in t.groupby(["measure", "substrate"]):
        ax = axes[measures.index(meas)][substrates.index(sub)]
        for m in methods:
            c = g[g["method"] == m].sort_values("step")
            if c.empty:
                continue
            ls, lw = ("--", 1.6) if m == "random" else ("-", 1.1)
            ax.plot(c["x"], c["mean"], ls=ls, lw=lw, color=colours[m], label=short_label(m))
            ax.fill_between(c["x"].to_numpy(float), c["low"].to_numpy(float), c["high"].to_numpy(float),
                            color=colours[m], alpha=0.12, lw=0)
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
    # fixed margins: tight_layout would lay the figure out twice (figure_image crops it anyway)
    fig.subplots_adjust(left=0.07, right=0.99, top=0.9 if len(measures) > 1 else 0.82, bottom=0.17 if len(measures) > 1 else 0.3,
                        wspace=0.22, hspace=0.38)
    try:
        return figure_image(fig, dpi=dpi)
    finally:
        plt.close(fig)


@notes_pass
def style_rankings(ranks: pd.DataFrame, preset: str, experiment: str, caption: str):
    """Ranks of every method in every substrate × measure of the agent with ``preset`` in one experiment.

    Cell: rank and mean AUC. Bold: in the top group (no method significantly better). Green:
    significantly better than the random map; red: significantly worse (Holm-corrected paired
    block-bootstrap tests, none below :data:`~saliency_study.evidence.MIN_STATES` states). Rows
    are ordered by the mean rank over the columns.
    """
    agent = pick_agent(ranks, preset)
    if agent is None:
        return no_agent(preset, "ranking")
    r = ranks[(ranks["agent"] == agent) & (ranks["experiment"] == experiment)]
    if r.empty:
        return Note(f"No {experiment} rankings for {agent}.", title="No rankings")
    r = r.assign(col=r["substrate"] + ", " + r["measure"].map(measure_label),
                 cell=r["rank"].astype(str) + " (" + r["mean"].map(lambda v: f"{v:.3f}".replace("-", "−")) + ")",
                 top=r["worse_than"] == "", vs=r.apply(vs_random, axis=1))
    cols = list(dict.fromkeys(r.sort_values(["substrate", "measure"], key=lambda c: c.map(
        {"black": 0, "random": 1, "blur": 2, **{m: i for i, m in enumerate(MEASURE_LABELS)}}).fillna(9))["col"]))
    order = r.groupby("method")["rank"].mean().sort_values().index
    cells = r.pivot(index="method", columns="col", values="cell").reindex(index=order, columns=cols)
    top = r.pivot(index="method", columns="col", values="top").reindex(index=order, columns=cols)
    vs = r.pivot(index="method", columns="col", values="vs").reindex(index=order, columns=cols)
    css = np.where(top.eq(True).to_numpy(), "font-weight: bold", "").astype(object)
    colour = np.select([vs.eq(1).to_numpy(), vs.eq(-1).to_numpy()], ["background-color: #d9f2d9", "background-color: #f8d7d7"], "")
    css = pd.DataFrame([["; ".join(x for x in (a, b) if x) for a, b in zip(ra, rb)] for ra, rb in zip(css, colour)],
                       index=[short_label(m) for m in cells.index], columns=cols)
    cells.index = css.index
    cells.index.name = "Method"
    cells.columns.name = "substrate, measure: rank (mean AUC)"
    styled = cells.style.apply(lambda _: css, axis=None)
    return styled.format(na_rep="NA").set_caption(caption).set_table_attributes(SMALL)


@notes_pass
def style_ranking_detail(table: pd.DataFrame, caption: str):
    """A :func:`ranking_detail` as a captioned Styler; rows with a significant difference are bold."""
    def css(row):
        sig = bool(row["Significantly better than"]) or bool(row["Significantly worse than"])
        return ["font-weight: bold" if sig else ""] * len(row)

    fmt = {c: "{:.3f}" for c in ("Mean", "Std", "CI low", "CI high")}
    a = table.attrs
    if a:
        caption = (f"{agent_label(a['agent'])}, {a['experiment']} on the {a['substrate']} substrate, "
                   f"{measure_label(a['measure'])}: {caption}")
    return table.style.apply(css, axis=1).format(fmt, na_rep="NA").hide(axis="index").set_caption(caption)


def style_side_by_side(side: pd.DataFrame | Note, caption: str):
    """The :func:`side_by_side` table, wide: rows (agent, method), columns (setting, source); cell "mean (rank)".

    The setting is the paper's substrate and measure; an agent whose own measure differs
    (actor-critic) names its measures in its row label. A Note passes through.
    """
    if isinstance(side, Note):
        return side
    labels = {}
    for a, g in side.groupby("agent", sort=False):
        own = [SHORT_MEASURES.get(m, m) for m in dict.fromkeys(g.loc[g["our_measure"] != g["paper_measure"], "our_measure"])]
        labels[a] = agent_label(a) + (f", ours: {' / '.join(own)}" if own else "")
    t = side.assign(Agent=side["agent"].map(labels), Method=side["method"].map(short_label),
                    setting=side["substrate"] + ", " + side["paper_measure"].map(measure_label))
    cell = lambda mean, rank: "NA" if pd.isna(mean) else f"{mean:.3f} ({int(rank)})".replace("-", "−")  # noqa: E731
    t["Huber et al."] = [cell(m, r) for m, r in zip(t["paper_mean"], t["paper_rank"])]
    t["ours"] = [cell(m, r) for m, r in zip(t["our_mean"], t["our_rank"])]
    settings = [f"{sub}, {measure_label(pm)}" for sub in PAPER_SUBSTRATES for pm in ("q_ratio", "advantage")
                if f"{sub}, {measure_label(pm)}" in set(t["setting"])]
    methods = [short_label(m) for m in PAPER_METHODS if short_label(m) in set(t["Method"])]
    wide = t.pivot_table(index=["Agent", "Method"], columns="setting", values=["Huber et al.", "ours"], aggfunc="first",
                         sort=False)
    wide = wide.swaplevel(0, 1, axis=1).reindex(columns=pd.MultiIndex.from_product([settings, ["Huber et al.", "ours"]]))
    rows = [(labels[a], m) for a in dict.fromkeys(side["agent"]) for m in methods]
    wide = wide.reindex(index=pd.MultiIndex.from_tuples(rows, names=["Agent", "Method"]))
    return wide.style.format(na_rep="NA").set_caption(caption).set_table_attributes(SMALL)


def style_agreement(agreement: pd.DataFrame | Note, caption: str):
    """The rank agreement as a captioned Styler (a Note passes through)."""
    if isinstance(agreement, Note):
        return agreement
    a = agreement

    def corr(r, p):
        return "NA" if pd.isna(r) else f"{fmt2(r)} (p = {p:.2f})"

    def pair(x, y):
        return " / ".join(short_label(m) if isinstance(m, str) else {True: "yes", False: "no"}.get(m, "NA")
                          for m in (x, y))

    t = pd.DataFrame({
        "Agent": a["agent"].map(agent_label),
        "Setting (paper measure / ours)": [f"{s}, {measure_label(pm)}" + ("" if pm == m else f" / {SHORT_MEASURES.get(m, m)}")
                                           for s, pm, m in zip(a["substrate"], a["paper_measure"], a["our_measure"])],
        "Methods": a["methods"], "Spearman ρ": [corr(r, p) for r, p in zip(a["spearman"], a["spearman_p"])],
        "Kendall τ": [corr(r, p) for r, p in zip(a["kendall"], a["kendall_p"])],
        "Best non-random (paper / ours)": [pair(x, y) for x, y in zip(a["paper_best"], a["our_best"])],
        "Random map last (paper / ours)": [pair(x, y) for x, y in zip(a["paper_random_last"], a["our_random_last"])],
    }).set_index(["Agent", "Setting (paper measure / ours)"])
    return t.style.format(na_rep="NA").set_caption(caption)


def degraded_images(state, saliency, *, substrate: str, fractions, mode: str = "insertion", seed: int = 0,
                    state_id: int = 0, blur_sigma: float = 5.0):
    """The inputs along an insertion or deletion path of one state, as the metric builds them.

    Parameters
    ----------
    state : Tensor, shape (C, H, W)
    saliency : array_like, shape (H, W)
        Pixels are changed in order of decreasing saliency (stable, as the metric).
    substrate : {"black", "random", "blur"}
    fractions : sequence of float in [0, 1]
        Fractions of the ``H·W`` pixel locations changed; ``k = round(f·H·W)`` locations.
    mode : {"insertion", "deletion"}
    seed, state_id : int
        Seed and state id of the random substrate (the metric's ``seed`` and ``state_ids``).
    blur_sigma : float
        σ of the blur substrate (the metric's default).

    Returns
    -------
    Tensor, shape (len(fractions), C, H, W)
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
    order = torch.argsort(torch.from_numpy(-s.reshape(-1)), stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(h * w)
    out = []
    for f in fr:
        changed = (rank < int(round(f * h * w))).view(1, h, w)
        out.append(torch.where(changed, x, sub) if mode == "insertion" else torch.where(changed, sub, x))
    return torch.stack(out)


def degradation_figure(cfg: DegradationChapter, agent: str | None, *, method: str = "occlusion",
                       fractions=(0.0, 0.05, 0.15, 0.3, 0.6, 1.0), dpi: int = 80):
    """Inputs along the insertion and deletion paths of one explained state, for every substrate.

    The state is the last of the agent's explained states; the order comes from ``method``'s map
    with the sweep's parameters for this agent and profile (cached as ``.npy``). Each panel shows
    the newest frame of the input on the grey scale of the clean state (values outside it are clipped).
    A Note when ``agent`` is None.
    """
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
    config = {"what": "degradation_map", "states": scfg, "index": i, "method": method, "params": kw}

    def make(path):
        torch.set_num_threads(1)
        hid = None if states.hidden is None else tuple(h[i:i + 1].to(ag.device) for h in states.hidden)
        res = get_explainer(method, ag, **kw).attribute(states.states[i:i + 1].to(ag.device),
                                                        target=states.actions[i:i + 1], hidden=hid)
        with open(path, "wb") as f:
            np.save(f, np.asarray(res.maps[0].detach().cpu().numpy() if hasattr(res.maps, "detach") else res.maps[0],
                                  dtype=np.float32))

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
