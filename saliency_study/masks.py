"""The Mask-A3C agents' attention masks over play: chapter 5's first section.

* :func:`mask_agents`: our shipped actor-critic agents that carry masks;
* :func:`play_masks`: one greedy game segment of a Mask-A3C agent with both masks at every step (cached),
  a :class:`MaskPlay`;
* :func:`mask_mass`, :func:`mask_fraction_open`, :func:`mask_entropy`, :func:`topk_iou`, :func:`chance_iou`,
  :func:`mask_spearman`: per-step statistics; :func:`mask_series` tabulates them, :func:`series_summary` and
  :func:`series_numbers` average them over the steps;
* :data:`REFERENCE_MASK_STATS`: the released checkpoints' statistics over whole games (reference notes).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from .cache import cached_file
from .catalog import load_spec, shipped_agents
from .paths import AGENTS_DIR, RESULTS_DIR

__all__ = ["BRANCHES", "AC_ALGOS", "SUMMARY_STATS", "REFERENCE_MASK_STATS", "MaskPlay", "variant", "mask_agents",
           "conv_resets", "filmstrip_indices", "play_masks", "mask_mass", "mask_fraction_open", "mask_entropy", "topk_iou",
           "chance_iou", "mask_spearman", "mask_series", "series_summary", "series_numbers"]

BRANCHES = ("policy", "value")
AC_ALGOS = ("a3c", "a3c-sync")
"""``algo`` of our actor-critic agents in ``meta.json`` (the trainer writes ``a3c-sync``)."""
SUMMARY_STATS = ("policy_mass", "policy_open", "value_mass", "value_open", "policy_entropy", "value_entropy", "iou",
                 "spearman")
"""The columns of :func:`mask_series` that :func:`series_summary` averages."""
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
notes on Itaya et al. (their re-evaluation, not the paper's numbers), as the notes give their ranges."""


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
    preset: str = "mask_a3c"
    n_actions: int = 0
    """The agent's preset and number of actions (for the names of its actions)."""

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

    Raises
    ------
    ValueError
        The agent has no attention mask (variant ``none``).
    """
    import torch

    from saliency_lib.states import collect_states

    agent = load_spec(spec, device)
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
        preset=agent.preset, n_actions=agent.n_actions)


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


def series_summary(*plays, top: float = 0.1) -> pd.DataFrame:
    """Mean and sd over the steps of each agent's :func:`mask_series`: one row per agent and statistic of
    :data:`SUMMARY_STATS` (``agent, stat, steps, mean, sd``). Each argument is a :class:`MaskPlay` or a dict
    of them; anything else (a missing agent) is skipped."""
    flat = []
    for p in plays:
        flat += [x for x in (p.values() if isinstance(p, dict) else [p]) if isinstance(x, MaskPlay)]
    rows = []
    for play in flat:
        df = mask_series(play, top=top)
        for col in SUMMARY_STATS:
            v = df[col].to_numpy(float)
            v = v[np.isfinite(v)]
            rows.append({"agent": play.label, "stat": col, "steps": len(df), "mean": v.mean() if v.size else np.nan,
                         "sd": v.std() if v.size else np.nan})
    return pd.DataFrame(rows, columns=["agent", "stat", "steps", "mean", "sd"])


def series_numbers(play, *, top: float = 0.1) -> dict[str, float]:
    """The numbers of one agent's masks over play (all NaN when ``play`` is not a :class:`MaskPlay`):
    ``steps``, the mean of each :data:`SUMMARY_STATS` statistic over the steps, ``chance_iou`` and
    ``resets`` (ConvLSTM resets after the first step: lost lives and new games)."""
    keys = ["steps", *SUMMARY_STATS, "chance_iou", "resets"]
    if not isinstance(play, MaskPlay) or not len(play):
        return dict.fromkeys(keys, float("nan"))
    s = mask_series(play, top=top)
    mean = s.mean(numeric_only=True)
    return {"steps": len(s), **{k: float(mean[k]) for k in SUMMARY_STATS}, "chance_iou": chance_iou(100, top),
            "resets": int(s["reset"].sum()) - 1}
