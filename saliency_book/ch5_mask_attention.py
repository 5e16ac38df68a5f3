"""Chapter 5 (Mask attention): the Mask-A3C agents' masks over play.

* :class:`MaskAttentionChapter`: the chapter's configuration (a :class:`~saliency_book.config.ChapterConfig`).
* :func:`play_masks`: one greedy game segment of a Mask-A3C agent with both masks at every step (cached);
  :func:`official_play`, :func:`our_mask_plays`: the chapter's agents.
* :func:`mask_mass`, :func:`mask_fraction_open`, :func:`mask_entropy`, :func:`topk_iou`, :func:`chance_iou`,
  :func:`mask_spearman`: per-step statistics; :func:`mask_series` tabulates them, :func:`series_summary` and
  :func:`series_numbers` average them.
* ``show_*``: the figures and the table of the section.

:mod:`saliency_book.ch5_rankings` ranks the masks among the other methods; :mod:`saliency_book.ch5_scores`
compares the variants' scores. A missing input (the official checkpoints, our agents) gives a
:class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import Note, figure_image
from saliency_book.config import ChapterConfig, as_float, as_int, as_optional
from saliency_lib.agents.mask_a3c import VARIANT_NAMES, VARIANTS
from saliency_lib.games import mask_a3c_crop
from saliency_lib.validation import check_choice
from saliency_study.cache import cached_file
from saliency_study.catalog import official_available, shipped_agents
from saliency_study.paths import AGENTS_DIR, REPO_ROOT, RESULTS_DIR, RUNS_DIR, repo_path
from saliency_study.profiles import get_profile

__all__ = [
    "BRANCHES", "AC_ALGOS", "VARIANT_ORDER", "VARIANT_LABELS", "COLORS", "REFERENCE_MASK_STATS", "MaskAttentionChapter",
    "MaskPlay", "variant", "mask_agents", "not_trained_note", "official_missing", "shown_path", "agent_label",
    "conv_resets", "filmstrip_indices", "play_masks", "official_play", "our_mask_plays", "mask_mass",
    "mask_fraction_open", "mask_entropy", "topk_iou", "chance_iou", "mask_spearman", "mask_series", "SUMMARY_COLUMNS",
    "series_summary", "series_numbers", "show_filmstrip", "show_series", "show_our_plays", "show_mask_summary",
]

BRANCHES = ("policy", "value")
AC_ALGOS = ("a3c", "a3c-sync")
"""``algo`` of our actor-critic agents in ``meta.json`` (the trainer writes ``a3c-sync``)."""
VARIANT_ORDER = VARIANTS
VARIANT_LABELS = VARIANT_NAMES
COLORS = MappingProxyType({"policy": "#3b528b", "value": "#de7d2c", "iou": "#5ec962", "spearman": "#8c2981",
                           "official": "#b0b0b0"})
REFERENCE_MASK_STATS = MappingProxyType({
    # game: (policy mean M, policy cells > 0.5, value mean M, value cells > 0.5), reference notes §3.4
    "Breakout": ("0.12–0.16", "1.5–3 %", "0.10–0.24", "3–13 %"),
    "MsPacman": ("0.24–0.25", "~10 %", "0.52–0.55", "~52 %"),
    "Seaquest": ("0.39", "~28 %", "0.38", "~15 %"),
    "SpaceInvaders": ("0.23", "~8.5 %", "0.39", "~27 %"),
    "BeamRider": ("0.27–0.30", "5–8 %", "0.35", "11–13 %"),
    "FishingDerby": ("0.18–0.19", "~5 %", "0.46–0.47", "~43 %"),
})
"""Mask statistics of the released checkpoints over whole greedy games, from the project's reference
notes on Itaya et al. (their re-evaluation, not the paper's numbers)."""


@dataclass(frozen=True)
class MaskAttentionChapter(ChapterConfig):
    """Configuration of chapter 5: the base's fields, then the chapter's own."""

    steps: int | None = None
    """Agent steps of the played game segment; None: :attr:`~saliency_study.profiles.Profile.play_steps`."""
    filmstrip: int = 6
    """Frames shown in a filmstrip, evenly spaced over the segment."""
    top: float = 0.1
    """Fraction of the mask cells whose overlap (IoU) between the policy and the value mask is measured."""
    substrate: str = "black"
    """Insertion/deletion substrate of the ranking table (``black``, ``random`` or ``blur``)."""
    agents_dir: str = AGENTS_DIR
    """Shipped agents (our actor-critic agents are found here)."""
    runs_dir: str = RUNS_DIR
    """Training runs in progress (learning curves of agents not shipped yet)."""

    def __post_init__(self):
        from saliency_lib.metrics import SUBSTRATES

        super().__post_init__()
        steps = as_optional(self.steps)
        object.__setattr__(self, "steps", None if steps is None else as_int("steps", steps, minimum=1))
        object.__setattr__(self, "filmstrip", as_int("filmstrip", self.filmstrip, minimum=1))
        object.__setattr__(self, "top", as_float("top", self.top, low=0, high=1, low_open=True))
        check_choice("substrate", self.substrate, SUBSTRATES)

    @property
    def play_steps(self) -> int:
        """Agent steps of the played segment."""
        return self.steps or get_profile(self.profile).play_steps

    @property
    def official(self) -> str:
        return f"official:{self.game}"


# -- agents ------------------------------------------------------------------------------------

def variant(row) -> str:
    """The mask variant of a shipped agent's row (``double`` when it records none)."""
    v = row.get("variant")
    return v if isinstance(v, str) and v else "double"


def mask_agents(game: str, agents_dir: str | os.PathLike = AGENTS_DIR) -> pd.DataFrame:
    """Our shipped actor-critic agents of ``game`` that carry masks (variant policy, value or double)."""
    df = shipped_agents(agents_dir)
    df = df[(df["game"] == game) & df["algo"].isin(AC_ALGOS)]
    df = df.assign(variant=[variant(r) for _, r in df.iterrows()])
    return df[df["variant"].isin(("policy", "value", "double"))].reset_index(drop=True)


def shown_path(path) -> str:
    """``path`` as the chapter shows it: relative to the repository when inside it."""
    p = repo_path(path).resolve()
    return p.relative_to(REPO_ROOT).as_posix() if p.is_relative_to(REPO_ROOT) else p.as_posix()


def not_trained_note(game: str, agents_dir, what: str) -> Note:
    return Note(f"Our own A3C / Mask-A3C agents for {game} are not trained yet: `{shown_path(agents_dir)}` holds no "
                f"`a3c-{game}-<variant>-s<seed>` agent. {what} They are trained by `scripts/train_agents.sh` "
                "and shipped with `saliency-study ship`; this section fills in when they exist.",
                kind="warning", title="Our actor-critic agents are not trained yet")


def official_missing(game: str) -> Note:
    from saliency_lib.agents.official import OFFICIAL_GAMES

    why = (f"Itaya et al. released no Mask-A3C checkpoint for {game} (they did for {', '.join(OFFICIAL_GAMES)})"
           if game not in OFFICIAL_GAMES else "The official Mask-A3C checkpoints are not fetched; run `make fetch-official`")
    return Note(why + ".", kind="warning", title="Official agent not available")


def agent_label(row) -> str:
    return f"our {VARIANT_LABELS.get(row['variant'], row['variant'])} agent `{row['agent']}`"


# -- playing with masks ------------------------------------------------------------------------

@dataclass
class MaskPlay:
    """A greedy game segment of a Mask-A3C agent with its masks at every step."""

    spec: str
    label: str
    game: str
    steps: np.ndarray
    """(N,) agent step within its game."""
    episode: np.ndarray
    """(N,) game index (0: the first game)."""
    actions: np.ndarray
    """(N,) greedy action."""
    value: np.ndarray
    """(N,) state value V(s)."""
    reset: np.ndarray
    """(N,) bool: the ConvLSTM state fed in was zero (start of a game or of a life)."""
    masks: dict[str, np.ndarray]
    """``"policy"`` / ``"value"`` → (N, 10, 10) sigmoid masks M (only the branches the agent has)."""
    frames: dict[int, np.ndarray]
    """Index into the segment → raw RGB frame (210, 160, 3), for the filmstrip."""
    action_names: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(len(self.steps))


def conv_resets(hidden) -> np.ndarray:
    """Whether each recorded recurrent state ``(h, c)`` (first axis N) is all zeros.

    The agent zeroes its ConvLSTM state at the start of a game and after each lost life;
    after one step of play ``h`` and ``c`` are never exactly zero, so zeros mark those resets.
    """
    h, c = hidden
    flat = [x.reshape(x.shape[0], -1).abs().sum(1) for x in (h, c)]
    return ((flat[0] == 0) & (flat[1] == 0)).cpu().numpy()


def filmstrip_indices(n: int, k: int) -> np.ndarray:
    """``k`` indices evenly spaced over ``n`` steps (first and last included)."""
    return np.unique(np.linspace(0, n - 1, min(k, n)).round().astype(int))


def play_masks(spec: str, *, steps: int, seed: int = 0, filmstrip: int = 6, label: str | None = None,
               results_dir: str | os.PathLike = RESULTS_DIR, device: str = "cpu") -> MaskPlay:
    """Play ``steps`` greedy agent steps of a Mask-A3C agent and record its masks.

    The game is :func:`saliency_lib.states.collect_states` from ``seed`` (a new game starts after a
    game over; the ConvLSTM state is zeroed at each life loss), so with ``seed=0`` its first states
    are the ones the study explains. Cached under ``<results_dir>/_local/media`` by the agent's
    weights hash and the arguments.
    """
    import torch

    from saliency_book.common import action_names, load
    from saliency_lib.states import collect_states

    agent = load(spec, device)
    names = [b for b in BRANCHES if f"{b}_mask" in agent.outputs]
    if not names:
        raise ValueError(f"{spec} has no attention masks (variant 'none'); pass a Mask-A3C agent")
    config = {"what": "mask_play", "agent": str(spec), "sha256": agent.meta.get("sha256"), "steps": int(steps),
              "seed": int(seed), "filmstrip": int(filmstrip), "version": 1}

    def make(path):
        n = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            s = collect_states(agent, steps, seed=seed, frames=True)
        finally:
            torch.set_num_threads(n)
        idx = filmstrip_indices(len(s), filmstrip)
        episode = np.asarray(s.episode)
        reset = conv_resets(s.hidden) if s.hidden is not None else np.r_[True, episode[1:] != episode[:-1]]
        arrays = {"steps": s.steps, "episode": episode, "actions": s.actions.numpy(),
                  "value": s.outputs["value"].numpy().astype(np.float32), "reset": reset,
                  "frame_index": idx, "frames": s.frames[idx]}
        arrays.update({f"mask_{b}": s.outputs[f"{b}_mask"].numpy().astype(np.float32) for b in names})
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)

    path = cached_file("mask_play", config, ".npz", make, results_dir=results_dir)
    with np.load(path) as z:
        d = {k: z[k] for k in z.files}
    return MaskPlay(
        spec=str(spec), label=label or str(spec), game=agent.game, steps=d["steps"], episode=d["episode"],
        actions=d["actions"], value=d["value"], reset=d["reset"].astype(bool),
        masks={b: d[f"mask_{b}"] for b in names}, frames=dict(zip(d["frame_index"].tolist(), d["frames"])),
        action_names=action_names(agent.game, agent.preset, agent.n_actions))


def official_play(cfg: MaskAttentionChapter) -> MaskPlay | Note:
    """:func:`play_masks` of the official Mask-A3C agent of the chapter's game, or a Note if it is missing."""
    if not official_available(cfg.game):
        return official_missing(cfg.game)
    return play_masks(cfg.official, steps=cfg.play_steps, seed=cfg.seed, filmstrip=cfg.filmstrip,
                      label="official Mask-A3C agent", results_dir=cfg.results_dir, device=cfg.device)


def our_mask_plays(cfg: MaskAttentionChapter) -> dict[str, MaskPlay] | Note:
    """:func:`play_masks` for each of our shipped Mask-A3C agents of the game, or a Note if there are none."""
    agents = mask_agents(cfg.game, cfg.agents_dir)
    if agents.empty:
        return not_trained_note(cfg.game, cfg.agents_dir, "This chapter therefore shows the masks of the official agent only.")
    return {r["agent"]: play_masks(r["path"], steps=cfg.play_steps, seed=cfg.seed, filmstrip=cfg.filmstrip,
                                   label=agent_label(r), results_dir=cfg.results_dir, device=cfg.device)
            for _, r in agents.iterrows()}


# -- per-step statistics -----------------------------------------------------------------------

def _flat(m) -> np.ndarray:
    a = np.asarray(m, dtype=np.float64)
    if a.ndim != 3:
        raise ValueError(f"masks must have shape (N, H, W), got {a.shape}")
    return a.reshape(a.shape[0], -1)


def mask_mass(m) -> np.ndarray:
    """Mean mask value per step: the share of each feature the branch lets through, on average. Shape (N,)."""
    return _flat(m).mean(1)


def mask_fraction_open(m, threshold: float = 0.5) -> np.ndarray:
    """Fraction of the cells whose mask exceeds ``threshold`` per step (the reference notes' "M > 0.5")."""
    return (_flat(m) > threshold).mean(1)


def mask_entropy(m) -> np.ndarray:
    """Normalised spatial entropy per step, in [0, 1]: ``−Σ p log p / log(cells)`` with ``p = M / ΣM``.

    1 is a uniform mask, values near 0 a mask concentrated on few cells; an all-zero mask gives NaN.
    """
    a = _flat(m)
    if (a < 0).any():
        raise ValueError("masks must be non-negative to be read as distributions")
    total = a.sum(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = a / total
        h = -np.where(p > 0, p * np.log(p), 0.0).sum(1)
    h[total[:, 0] == 0] = np.nan
    return h / np.log(a.shape[1])


def _k(cells: int, fraction: float) -> int:
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}")
    return max(1, int(round(fraction * cells)))


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    fa, fb = _flat(a), _flat(b)
    if fa.shape != fb.shape:
        raise ValueError(f"mask stacks differ in shape: {np.shape(a)} vs {np.shape(b)}")
    return fa, fb


def topk_iou(a, b, fraction: float = 0.1) -> np.ndarray:
    """Intersection over union of the top ``fraction`` cells of two mask stacks, per step (ties keep the
    row-major order). Shape (N,)."""
    fa, fb = _pair(a, b)
    k = _k(fa.shape[1], fraction)
    ta, tb = (np.zeros(x.shape, bool) for x in (fa, fb))
    for top, x in ((ta, fa), (tb, fb)):
        np.put_along_axis(top, np.argsort(-x, axis=1, kind="stable")[:, :k], True, axis=1)
    return (ta & tb).sum(1) / (ta | tb).sum(1)


def chance_iou(cells: int, fraction: float = 0.1) -> float:
    """Expected IoU of two independent, uniformly random sets of ``round(fraction·cells)`` cells.

    The overlap ``j`` is hypergeometric; the IoU of two ``k``-sets is ``j / (2k − j)``.
    """
    from scipy.stats import hypergeom

    k = _k(cells, fraction)
    j = np.arange(0, k + 1)
    return float((hypergeom(cells, k, k).pmf(j) * j / (2 * k - j)).sum())


def mask_spearman(a, b) -> np.ndarray:
    """Signed Spearman rank correlation of two mask stacks, per step (NaN for a constant mask). Shape (N,)."""
    from saliency_lib.metrics import ConstantMapWarning, spearman

    fa, fb = _pair(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantMapWarning)
        return np.array([spearman(x[None], y[None], sign_invariant=False) for x, y in zip(fa, fb)])


def mask_series(play: MaskPlay, *, top: float = 0.1) -> pd.DataFrame:
    """Per-step statistics of the masks of ``play``.

    Columns ``t`` (index in the segment), ``step``, ``episode``, ``reset``, ``value``, ``action``; per
    branch ``<b>_mass``, ``<b>_open`` (cells > 0.5), ``<b>_entropy`` (NaN without that mask); ``iou``
    (top-``top`` cells) and ``spearman`` between the two masks (NaN unless both exist).
    """
    df = pd.DataFrame({"t": np.arange(len(play)), "step": play.steps, "episode": play.episode, "reset": play.reset,
                       "value": play.value, "action": play.actions})
    for b in BRANCHES:
        m = play.masks.get(b)
        for stat, fn in (("mass", mask_mass), ("open", mask_fraction_open), ("entropy", mask_entropy)):
            df[f"{b}_{stat}"] = fn(m) if m is not None else np.nan
    both = all(b in play.masks for b in BRANCHES)
    df["iou"] = topk_iou(play.masks["policy"], play.masks["value"], top) if both else np.nan
    df["spearman"] = mask_spearman(play.masks["policy"], play.masks["value"]) if both else np.nan
    return df


SUMMARY_COLUMNS = MappingProxyType({
    "policy_mass": "policy: mean M", "policy_open": "policy: cells > 0.5", "value_mass": "value: mean M",
    "value_open": "value: cells > 0.5", "policy_entropy": "policy: entropy", "value_entropy": "value: entropy",
    "iou": "top-cells IoU", "spearman": "Spearman ρ",
})


def series_summary(*plays: MaskPlay | dict | Note, top: float = 0.1) -> pd.DataFrame:
    """Mean and sd over the steps of each agent's :func:`mask_series`: one row per agent and statistic
    (``agent, stat, steps, mean, sd``). Each argument is a :class:`MaskPlay`, a dict of them or a Note (skipped)."""
    flat = []
    for p in plays:
        flat += list(p.values()) if isinstance(p, dict) else [] if isinstance(p, Note) else [p]
    rows = []
    for play in flat:
        df = mask_series(play, top=top)
        for col in SUMMARY_COLUMNS:
            v = df[col].to_numpy(float)
            v = v[np.isfinite(v)]
            rows.append({"agent": play.label, "stat": col, "steps": len(df), "mean": v.mean() if v.size else np.nan,
                         "sd": v.std() if v.size else np.nan})
    return pd.DataFrame(rows, columns=["agent", "stat", "steps", "mean", "sd"])


def series_numbers(play: MaskPlay | Note, *, top: float = 0.1) -> dict[str, float]:
    """The numbers the chapter's prose quotes about one agent's masks over play (all NaN for a Note):
    ``steps``, the mean of each :data:`SUMMARY_COLUMNS` statistic over the steps, ``chance_iou`` and
    ``resets`` (ConvLSTM resets after the first step: lost lives and new games)."""
    keys = ["steps", *SUMMARY_COLUMNS, "chance_iou", "resets"]
    if isinstance(play, Note) or not len(play):
        return dict.fromkeys(keys, float("nan"))
    s = mask_series(play, top=top)
    mean = s.mean(numeric_only=True)
    return {"steps": len(s), **{k: float(mean[k]) for k in SUMMARY_COLUMNS}, "chance_iou": chance_iou(100, top),
            "resets": int(s["reset"].sum()) - 1}


# -- what the section shows --------------------------------------------------------------------

def show_mask_summary(summary: pd.DataFrame, game: str, caption: str):
    """:func:`series_summary` as a Styler: mean ± sd per agent, with the reference notes' whole-game values."""
    if summary.empty:
        return Note(f"No Mask-A3C agent for {game} played, so there are no mask statistics.", title="No masks")
    wide = {}
    for (agent, stat), g in summary.groupby(["agent", "stat"], sort=False):
        m, sd = g["mean"].iloc[0], g["sd"].iloc[0]
        pct = stat.endswith("_open")
        cell = "–" if not np.isfinite(m) else f"{100 * m:.1f} % ± {100 * sd:.1f} %" if pct else f"{m:.2f} ± {sd:.2f}"
        wide.setdefault(agent, {"steps": str(int(g["steps"].iloc[0]))})[SUMMARY_COLUMNS[stat]] = cell
    ref = REFERENCE_MASK_STATS.get(game)
    if ref:
        wide["released checkpoint, whole games (reference notes)"] = {
            "steps": "–", **dict(zip(["policy: mean M", "policy: cells > 0.5", "value: mean M", "value: cells > 0.5"], ref))}
    t = pd.DataFrame.from_dict(wide, orient="index").reindex(columns=["steps", *SUMMARY_COLUMNS.values()])
    return t.fillna("–").rename_axis("agent").reset_index().style.hide(axis="index").set_caption(caption)


def _norm(m: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (m - lo) / (hi - lo) if hi > lo else np.zeros_like(m)


def show_filmstrip(play: MaskPlay | Note, *, cmap: str = "inferno", dpi: int = 90):
    """A few frames of ``play`` with the policy (top row) and value mask (bottom row) overlaid.

    As in the official visualiser, each branch's masks are min-max normalised over the whole segment
    and upsampled back through the crop (:func:`saliency_lib.viz.mask_to_frame`), drawn with the
    perceptually uniform ``cmap`` (a Note passes through).
    """
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    from saliency_lib.viz import mask_to_frame, overlay

    if isinstance(play, Note):
        return play
    crop, idx = mask_a3c_crop(play.game), sorted(play.frames)
    branches = [b for b in BRANCHES if b in play.masks]
    fig = Figure(figsize=(1.75 * len(idx) + 1.2, 2.6 * len(branches) + 0.5), layout="constrained")
    axes = np.atleast_2d(fig.subplots(len(branches), len(idx), squeeze=False))
    for r, b in enumerate(branches):
        ms = play.masks[b]
        lo, hi = float(ms.min()), float(ms.max())
        for c, i in enumerate(idx):
            heat, inside = mask_to_frame(_norm(ms[i], lo, hi), crop)
            ax = axes[r, c]
            ax.imshow(overlay(play.frames[i], heat, cmap=cmap, where=inside))
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                act = play.action_names[play.actions[i]] if play.action_names else str(play.actions[i])
                ax.set_title(f"step {play.steps[i]}\n{act}, V = {play.value[i]:.2f}", fontsize=8)
            if c == 0:
                ax.set_ylabel(f"{b} mask", fontsize=9)
        fig.colorbar(ScalarMappable(Normalize(lo, hi), colormaps[cmap]), ax=axes[r, :].tolist(), shrink=0.85,
                     label=f"{b} mask M", pad=0.01)
    fig.suptitle(f"{play.label}, {play.game}: policy and value masks over play", fontsize=10)
    return figure_image(fig, dpi=dpi)


def show_series(play: MaskPlay | Note, *, top: float = 0.1, dpi: int = 90):
    """Mask statistics of ``play`` per step (:func:`mask_series`): mean M, normalised entropy, and the
    policy–value agreement; the filmstrip's frames are marked (a Note passes through)."""
    from matplotlib.figure import Figure

    if isinstance(play, Note):
        return play
    series = mask_series(play, top=top)
    fig = Figure(figsize=(8.0, 6.2), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True)
    t = series["t"].to_numpy()
    for b in BRANCHES:
        if series[f"{b}_mass"].notna().any():
            axes[0].plot(t, series[f"{b}_mass"], color=COLORS[b], lw=1.3, label=f"{b} mask")
            axes[1].plot(t, series[f"{b}_entropy"], color=COLORS[b], lw=1.3, label=f"{b} mask")
    axes[0].set_ylabel("mean M")
    axes[1].set_ylabel("entropy\n(1 = uniform)")
    if series["iou"].notna().any():
        axes[2].plot(t, series["iou"], color=COLORS["iou"], lw=1.3, label=f"IoU of the top {100 * top:.0f} % cells")
        axes[2].plot(t, series["spearman"], color=COLORS["spearman"], lw=1.3, label="Spearman ρ")
        axes[2].axhline(chance_iou(100, top), color=COLORS["iou"], ls=":", lw=1, label="IoU of random cells")
        axes[2].axhline(0, color="0.5", lw=0.6)
    else:
        axes[2].text(0.5, 0.5, "the agent has only one mask", ha="center", va="center", transform=axes[2].transAxes)
    axes[2].set_ylabel("policy vs value")
    axes[2].set_xlabel("agent step in the segment")
    resets = t[series["reset"].to_numpy(bool)]
    for ax in axes:
        for x in resets[resets > 0]:
            ax.axvline(x, color="0.6", ls="--", lw=0.8)
        for x in sorted(play.frames):
            ax.axvline(x, color="0.85", lw=3, zorder=0)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{play.label}: masks per step (dashed: ConvLSTM reset after a lost life or game; "
                 "grey bands: filmstrip frames)", fontsize=9)
    return figure_image(fig, dpi=dpi)


def show_our_plays(plays: dict[str, MaskPlay] | Note, *, top: float = 0.1, dpi: int = 72):
    """A Tab widget with the filmstrip and the per-step statistics of each of our agents (a Note passes
    through); the PNGs are stored in the widget state, so the tabs work in the static book."""
    import ipywidgets as w

    if isinstance(plays, Note):
        return plays
    children = [w.VBox([w.Image(value=i.data, format="png", layout=w.Layout(max_width="100%"))
                        for i in (show_filmstrip(p, dpi=dpi), show_series(p, top=top, dpi=dpi))]) for p in plays.values()]
    tabs = w.Tab(children=children)
    for i, name in enumerate(plays):
        tabs.set_title(i, name)
    return tabs
