"""Chapter 5 (Mask attention): the Mask-A3C agents' own explanations, over play and under test.

The chapter's notebook (``notebooks/05_mask_attention.py``) only calls these functions.

* :class:`MaskAttentionChapter`: the chapter's frozen configuration.
* :func:`play_masks`: one greedy game segment of a Mask-A3C agent with its policy and
  value masks at every step and a few raw frames for display (cached).
* :func:`mask_mass`, :func:`mask_entropy`, :func:`mask_fraction_open`, :func:`topk_iou`,
  :func:`mask_spearman`: per-step statistics of the masks; :func:`mask_series` puts
  them in a table, :func:`series_summary` averages it per agent.
* :func:`filmstrip_figure`, :func:`series_figure`, :func:`summary_sentence`: the
  chapter's figures and text on the masks over play.
* :mod:`saliency_book.ch5_rankings`: the masks next to the perturbation methods in the
  study's result table (insertion, deletion, sanity check).
* :mod:`saliency_book.ch5_scores` and :mod:`saliency_book.ch5_seeds`: our A3C and Mask-A3C
  training runs, over seeds, against the paper's claim that the masks improve the score.

Functions that need a missing input (our actor-critic agents are not trained yet, the
official checkpoints are not fetched) return a :class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, fields
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import Note, as_count
from saliency_lib.agents.mask_a3c import VARIANT_NAMES, VARIANTS
from saliency_lib.games import game_info
from saliency_study.cache import cached_file
from saliency_study.catalog import official_available, shipped_agents
from saliency_study.paths import AGENTS_DIR, REPO_ROOT, RESULTS_DIR, RUNS_DIR, repo_path
from saliency_study.profiles import get_profile, profile_settings

__all__ = [
    "BRANCHES", "AC_ALGOS", "VARIANT_LABELS", "REFERENCE_MASK_STATS", "PAPER_CLAIM",
    "MaskAttentionChapter", "MaskPlay", "mask_agents", "play_masks", "mask_mass", "mask_entropy",
    "mask_fraction_open", "topk_iou", "chance_iou", "mask_spearman", "conv_resets", "mask_series", "series_summary", "summary_sentence", "filmstrip_indices", "official_play",
    "our_mask_plays", "shown_path", "agent_label", "not_trained_note", "official_missing",
]

BRANCHES = ("policy", "value")
AC_ALGOS = ("a3c", "a3c-sync")
"""``algo`` of our actor-critic agents in ``meta.json`` (the trainer writes ``a3c-sync``)."""
VARIANT_ORDER = VARIANTS
VARIANT_LABELS = VARIANT_NAMES
COLORS = {"policy": "#3b528b", "value": "#de7d2c", "iou": "#5ec962", "spearman": "#8c2981", "official": "#b0b0b0"}

REFERENCE_MASK_STATS = MappingProxyType({
    # game: (policy mean M, policy cells > 0.5, value mean M, value cells > 0.5), reference notes §3.4
    "Breakout": ("0.12–0.16", "1.5–3 %", "0.10–0.24", "3–13 %"),
    "MsPacman": ("0.24–0.25", "~10 %", "0.52–0.55", "~52 %"),
    "Seaquest": ("0.39", "~28 %", "0.38", "~15 %"),
    "SpaceInvaders": ("0.23", "~8.5 %", "0.39", "~27 %"),
    "BeamRider": ("0.27–0.30", "5–8 %", "0.35", "11–13 %"),
    "FishingDerby": ("0.18–0.19", "~5 %", "0.46–0.47", "~43 %"),
})
"""Mask statistics of the released checkpoints over whole greedy games, from the project's
reference notes on Itaya et al. (their re-evaluation, not the paper's numbers)."""

PAPER_CLAIM = ("the agent could achieve a higher performance by introducing the attention mechanism")
"""The paper's claim about the score (its abstract), quoted in the reference notes (§3.1)."""


# -- configuration ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MaskAttentionChapter:
    """Configuration of chapter 5; every field is a parameter of the notebook."""

    game: str = "Breakout"
    """Atari game; the official agent exists for Breakout, MsPacman, SpaceInvaders, Seaquest, BeamRider, FishingDerby."""
    steps: int | None = None
    """Agent steps of the played game segment; None: :attr:`~saliency_study.profiles.Profile.play_steps`."""
    filmstrip: int = 6
    """Frames shown in a filmstrip, evenly spaced over the segment."""
    top: float = 0.1
    """Fraction of the mask cells whose overlap (IoU) between the policy and the value mask is measured."""
    substrate: str = "black"
    """Insertion/deletion substrate of the ranking table (``black``, ``random`` or ``blur``)."""
    profile: str = "quick"
    """Execution profile: ``tiny``, ``quick`` or ``full``."""
    seed: int = 0
    """Seed of the played game (the study's explained states come from seed 0)."""
    device: str = "cpu"
    """Torch device of the agents."""
    executor: str = "local"
    """Executor of the study's sweep (:func:`saliency_study.study.study_results`)."""
    results_dir: str = RESULTS_DIR
    """Cache of results (relative paths are under the repository root)."""
    agents_dir: str = AGENTS_DIR
    """Shipped agents (our actor-critic agents are found here)."""
    runs_dir: str = RUNS_DIR
    """Training runs in progress (learning curves of agents not shipped yet)."""
    settings: dict = field(init=False, repr=False, compare=False)
    """The profile's settings."""

    def __post_init__(self):
        from saliency_lib.metrics import SUBSTRATES
        from saliency_lib.sweep import EXECUTORS

        game_info(self.game)
        object.__setattr__(self, "steps", as_count(self.steps, "steps"))
        object.__setattr__(self, "filmstrip", as_count(self.filmstrip, "filmstrip"))
        object.__setattr__(self, "seed", int(self.seed))
        top = float(self.top)
        if not 0 < top <= 1:
            raise ValueError(f"top must be a fraction in (0, 1], got {self.top!r}")
        object.__setattr__(self, "top", top)
        if self.substrate not in SUBSTRATES:
            raise ValueError(f"substrate must be one of {', '.join(SUBSTRATES)}, got {self.substrate!r}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {self.executor!r}")
        object.__setattr__(self, "settings", profile_settings(self.profile))

    @property
    def play_steps(self) -> int:
        """Agent steps of the played segment."""
        return self.steps or get_profile(self.profile).play_steps

    @property
    def official(self) -> str:
        return f"official:{self.game}"

    def _repr_markdown_(self) -> str:
        skip = ("settings",)
        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self) if f.name not in skip)
        return (f"**Parameters:** {params}.\n\n**From the profile `{self.profile}`:** a game segment of "
                f"{self.play_steps} agent steps per agent; the study's result table of the `{self.profile}` profile.\n")


# -- agents ------------------------------------------------------------------------------------

def variant(row) -> str:
    v = row.get("variant")
    return v if isinstance(v, str) and v else "double"


def mask_agents(game: str, agents_dir: str | os.PathLike = AGENTS_DIR) -> pd.DataFrame:
    """Our shipped actor-critic agents of ``game`` that carry masks (variant policy, value or double)."""
    df = shipped_agents(agents_dir)
    df = df[(df["game"] == game) & df["algo"].isin(AC_ALGOS)]
    df = df.assign(variant=[variant(r) for _, r in df.iterrows()])
    return df[df["variant"].isin(("policy", "value", "double"))].reset_index(drop=True)


def not_trained_note(game: str, agents_dir, what: str) -> Note:
    return Note(f"Our own A3C / Mask-A3C agents for {game} are not trained yet: `{shown_path(agents_dir)}` holds no "
                f"`a3c-{game}-<variant>-s<seed>` agent. {what} They are trained by `scripts/train_agents.sh` "
                "and shipped with `saliency-study ship`; this section fills in when they exist.",
                kind="warning", title="Our actor-critic agents are not trained yet")


def shown_path(path) -> str:
    """``path`` as the chapter shows it: relative to the repository when inside it."""
    p = repo_path(path).resolve()
    return p.relative_to(REPO_ROOT).as_posix() if p.is_relative_to(REPO_ROOT) else p.as_posix()


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

    The game is :func:`saliency_lib.states.collect_states` from ``seed`` (a new game
    starts after a game over; the ConvLSTM state is zeroed at each life loss), so with
    ``seed=0`` its first states are the ones the study explains. The result is cached
    under ``<results_dir>/_local/media`` by the agent's weights hash and the arguments.
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
    """Normalised spatial entropy per step, in [0, 1].

    The mask is read as a distribution over its cells, ``p = M / ΣM``; the entropy
    ``−Σ p log p`` is divided by ``log(cells)``, so 1 is a uniform mask and values near
    0 a mask concentrated on few cells. A mask that is zero everywhere gives NaN.
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


def _top_cells(a: np.ndarray, k: int) -> np.ndarray:
    """Boolean (N, cells): the ``k`` largest cells of each row (ties keep the row-major order)."""
    order = np.argsort(-a, axis=1, kind="stable")[:, :k]
    out = np.zeros(a.shape, bool)
    np.put_along_axis(out, order, True, axis=1)
    return out


def _k(cells: int, fraction: float) -> int:
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction!r}")
    return max(1, int(round(fraction * cells)))


def topk_iou(a, b, fraction: float = 0.1) -> np.ndarray:
    """Intersection over union of the top ``fraction`` cells of two mask stacks, per step. Shape (N,)."""
    fa, fb = _flat(a), _flat(b)
    if fa.shape != fb.shape:
        raise ValueError(f"mask stacks differ in shape: {np.shape(a)} vs {np.shape(b)}")
    k = _k(fa.shape[1], fraction)
    ta, tb = _top_cells(fa, k), _top_cells(fb, k)
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

    fa, fb = _flat(a), _flat(b)
    if fa.shape != fb.shape:
        raise ValueError(f"mask stacks differ in shape: {np.shape(a)} vs {np.shape(b)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantMapWarning)
        return np.array([spearman(x[None], y[None], sign_invariant=False) for x, y in zip(fa, fb)])


def mask_series(play: MaskPlay, *, top: float = 0.1) -> pd.DataFrame:
    """Per-step statistics of the masks of ``play``.

    Columns: ``t`` (index in the segment), ``step``, ``episode``, ``reset``, ``value``,
    ``action``, and per branch ``<b>_mass``, ``<b>_open`` (cells > 0.5), ``<b>_entropy``
    (NaN for a branch without a mask); ``iou`` (top-``top`` cells) and ``spearman``
    between the two masks (NaN unless both exist).
    """
    n = len(play)
    df = pd.DataFrame({"t": np.arange(n), "step": play.steps, "episode": play.episode, "reset": play.reset,
                       "value": play.value, "action": play.actions})
    for b in BRANCHES:
        m = play.masks.get(b)
        df[f"{b}_mass"] = mask_mass(m) if m is not None else np.nan
        df[f"{b}_open"] = mask_fraction_open(m) if m is not None else np.nan
        df[f"{b}_entropy"] = mask_entropy(m) if m is not None else np.nan
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
    """Mean and sd over the steps of each agent's :func:`mask_series` (one row per agent and statistic).

    Each argument is a :class:`MaskPlay`, a dict of them (:func:`our_mask_plays`) or a
    Note (skipped), so missing agents need no special case.
    """
    flat = []
    for p in plays:
        flat += list(p.values()) if isinstance(p, dict) else [] if isinstance(p, Note) else [p]
    rows = []
    for play in flat:
        label, df = play.label, mask_series(play, top=top)
        for col in SUMMARY_COLUMNS:
            v = df[col].to_numpy(float)
            v = v[np.isfinite(v)]
            rows.append({"agent": label, "stat": col, "steps": len(df), "mean": v.mean() if v.size else np.nan,
                         "sd": v.std() if v.size else np.nan})
    return pd.DataFrame(rows)


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def summary_sentence(play: MaskPlay | Note, *, top: float = 0.1):
    """Markdown sentences on one agent's masks over play, generated from its :func:`mask_series` (None for a Note)."""
    from IPython.display import Markdown

    if isinstance(play, Note):
        return None
    series, label = mask_series(play, top=top), play.label
    n = len(series)
    if not n:
        return Markdown(f"The {label} played no step.")
    mean = series.mean(numeric_only=True)
    parts = [f"Over the {n} steps of the {label}, the policy mask lets on average {mean['policy_mass']:.2f} of each "
             f"feature through and opens {pct(mean['policy_open'])} of its cells (M > 0.5); the value mask "
             f"{mean['value_mass']:.2f} and {pct(mean['value_open'])}."]
    if np.isfinite(mean["policy_entropy"]) and np.isfinite(mean["value_entropy"]):
        pe, ve = mean["policy_entropy"], mean["value_entropy"]
        if round(pe, 2) == round(ve, 2):
            parts.append(f"Both masks are about equally spread: their mean normalised entropy is {pe:.2f} "
                         "(1 is a uniform mask).")
        else:
            broader = "value" if ve > pe else "policy"
            parts.append(f"By the normalised entropy (1 is a uniform mask), the {broader} mask is the more spread "
                         f"out one: {pe:.2f} for the policy, {ve:.2f} for the value mask.")
    if np.isfinite(mean["iou"]):
        chance = chance_iou(100, top)
        rel = "more" if mean["iou"] > chance else "less"
        parts.append(f"Their top {100 * top:.0f} % cells overlap with an IoU of {mean['iou']:.2f} on average, "
                     f"{rel} than two random sets of cells would ({chance:.2f}), and their mean Spearman "
                     f"correlation is {mean['spearman']:.2f}.")
    resets = int(series["reset"].sum()) - 1
    if resets > 0:
        parts.append(f"The ConvLSTM state was reset {resets} time{'s' if resets != 1 else ''} in the segment "
                     "(a lost life or a new game).")
    return Markdown(" ".join(parts))


# -- figures -----------------------------------------------------------------------------------


def official_play(cfg: MaskAttentionChapter) -> MaskPlay | Note:
    """:func:`play_masks` of the official Mask-A3C agent of the chapter's game, or a Note if it is missing."""
    if not official_available(cfg.game):
        return official_missing(cfg.game)
    return play_masks(cfg.official, steps=cfg.play_steps, seed=cfg.seed, filmstrip=cfg.filmstrip,
                      label="official Mask-A3C agent", results_dir=cfg.results_dir, device=cfg.device)


def official_missing(game: str) -> Note:
    from saliency_lib.agents.official import OFFICIAL_GAMES

    why = (f"Itaya et al. released no Mask-A3C checkpoint for {game} (they did for {', '.join(OFFICIAL_GAMES)})"
           if game not in OFFICIAL_GAMES else "The official Mask-A3C checkpoints are not fetched; run `make fetch-official`")
    return Note(why + ".", kind="warning", title="Official agent not available")


# -- our own Mask-A3C agents --------------------------------------------------------------------

def agent_label(row) -> str:
    return f"our {VARIANT_LABELS.get(row['variant'], row['variant'])} agent `{row['agent']}`"


def our_mask_plays(cfg: MaskAttentionChapter) -> dict[str, MaskPlay] | Note:
    """:func:`play_masks` for each of our shipped Mask-A3C agents of the game, or a Note if there are none."""
    agents = mask_agents(cfg.game, cfg.agents_dir)
    if agents.empty:
        return not_trained_note(cfg.game, cfg.agents_dir, "This chapter therefore shows the masks of the official agent only.")
    return {r["agent"]: play_masks(r["path"], steps=cfg.play_steps, seed=cfg.seed, filmstrip=cfg.filmstrip,
                                   label=agent_label(r), results_dir=cfg.results_dir, device=cfg.device)
            for _, r in agents.iterrows()}
