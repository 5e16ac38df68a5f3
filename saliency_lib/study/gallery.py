"""Chapter 2 (Explainer gallery): every saliency method on the same HIGHLIGHTS-DIV states.

The chapter's notebook (``notebooks/02_gallery.py``) only calls these functions;
chapter 7 (:mod:`saliency_lib.study.explorer`) reuses them, and their caches.

* :class:`GalleryChapter`: the chapter's frozen configuration.
* :func:`chapter_agents`: the agents a chapter explains for its game, the study's
  DQN agent and the official Mask-A3C agent, each possibly missing.
* :func:`highlight_states`: HIGHLIGHTS-DIV states of one greedy trajectory
  (:func:`saliency_lib.states.select_highlights`), most important first, cached.
* :func:`saliency_map`: one map of one state by one method for one target
  (the agent's action, the runner-up action, an action index or the state value),
  cached per state under ``<results_dir>/_local/media``.
* :func:`compute_gallery`, :func:`gallery_figure`, :func:`gallery_tabs`,
  :func:`states_figure`: every method on the same states, overlaid on the raw frame.
* :func:`games_gallery`, :func:`games_tabs`: the DQN agents of Huber et al.'s four
  games, each on its most important state, one tab per game.
* :func:`agreement`, :func:`agreement_figure`, :func:`agreement_summary`: how similar
  the methods' maps are (Spearman rank correlation), and a summary generated from it.

A missing input (no DQN agent yet, official checkpoints not fetched) gives a
:class:`~saliency_lib.study.display.Note` instead of an exception.
"""

from __future__ import annotations

import functools
import io
import os
import re
import warnings
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType

import numpy as np
import pandas as pd

from ..games import HUBER_GAMES, game_info, mask_a3c_crop
from ..results import config_hash
from .agents import figure_image, official_available, study_agent
from .cache import cached_file
from .display import Note
from .paths import RESULTS_DIR, repo_path
from .profiles import profile_settings

__all__ = [
    "METHODS", "METHOD_LABELS", "TARGET_FREE", "TARGETS", "TARGET_LABELS", "HIGHLIGHTS_PARAMS", "BENCHMARK_STEPS",
    "EXPLAINER_PARAMS", "StateSelection", "GalleryChapter", "ExplainedAgent", "chapter_agents", "describe_agents", "load",
    "highlight_states", "applicable_methods", "action_names", "resolve_action", "saliency_map", "normalise",
    "on_frame", "overlay_map", "Gallery", "compute_gallery", "state_figure", "gallery_figure", "gallery_tabs",
    "states_figure", "games_gallery", "games_tabs", "agreement", "agreement_figure", "agreement_summary",
]

METHODS = ("occlusion", "ns_original", "ns_chosen", "sarfa", "rise", "lime_slic", "gradient", "integrated_gradients",
           "gradcam", "random", "mask_policy", "mask_value")
"""Registry names the gallery shows, in display order (``mask_*`` only for Mask-A3C agents)."""

METHOD_LABELS = MappingProxyType({
    "occlusion": "Occlusion", "ns_original": "NS original", "ns_chosen": "NS chosen action", "ns_black": "NS black",
    "sarfa": "SARFA", "rise": "RISE", "lime_slic": "LIME (SLIC)", "lime_quickshift": "LIME (quickshift)",
    "lime_felzenszwalb": "LIME (Felzenszwalb)", "gradient": "Gradient", "integrated_gradients": "Integrated Gradients",
    "gradcam": "Grad-CAM", "random": "Random", "mask_policy": "Policy mask", "mask_value": "Value mask",
})
"""Display name of each registry name."""

TARGET_FREE = frozenset({"random", "mask_policy", "mask_value"})
"""Methods whose map does not depend on the explained output or action."""

TARGETS = ("action", "runner_up", "value")
"""Named targets: the agent's (greedy) action, the action with the second-highest score, the state value."""
TARGET_LABELS = MappingProxyType({"action": "agent's action", "runner_up": "runner-up action", "value": "state value"})

HIGHLIGHTS_PARAMS = MappingProxyType({"budget": 5, "context_length": 10, "minimum_gap": 10, "percentile": 3.0})
"""HIGHLIGHTS-DIV of Huber et al. (reference §2.2): 5 states per game, context 10, gap 10, 3rd percentile."""
BENCHMARK_STEPS = 997
"""Length of Huber et al.'s benchmark trajectory (reference §2.1), the longest trajectory a chapter plays."""

_COARSE = MappingProxyType({
    "occlusion": {"patch": 16}, "ns_original": {"radius": 12}, "ns_chosen": {"radius": 12}, "ns_black": {"radius": 12},
    "sarfa": {"radius": 12}, "rise": {"n_masks": 32}, "lime_slic": {"n_samples": 32, "n_segments": 30},
    "integrated_gradients": {"n_steps": 4},
})
EXPLAINER_PARAMS = MappingProxyType({"tiny": _COARSE, "quick": MappingProxyType({}), "full": MappingProxyType({})})
"""Method parameters per profile. ``quick`` and ``full`` use the defaults (Huber et al.'s final
parameters); ``tiny``, the CI smoke profile, uses few perturbations so that a chapter runs in seconds."""


# -- configuration ---------------------------------------------------------------------------

def _as_count(value, name: str) -> int | None:
    """A positive integer or None, accepting papermill's strings and whole floats."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
    return int(value)


def _as_methods(value) -> tuple[str, ...] | None:
    """Registry names from a list or a comma-separated string; None for all."""
    from ..explainers import EXPLAINERS

    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in EXPLAINERS]
    if unknown or not names:
        raise ValueError(f"methods must name registered explainers, got {value!r}; valid names are: {', '.join(EXPLAINERS)}")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class StateSelection:
    """Which states are explained: HIGHLIGHTS-DIV on one greedy trajectory (reference §2.2)."""

    trajectory: int
    """States of the greedy trajectory HIGHLIGHTS-DIV chooses from."""
    budget: int
    """States to choose (fewer when the trajectory leaves no room for more)."""
    seed: int = 0
    """Seed of the trajectory's first game."""
    context_length: int = HIGHLIGHTS_PARAMS["context_length"]
    minimum_gap: int = HIGHLIGHTS_PARAMS["minimum_gap"]
    percentile: float = HIGHLIGHTS_PARAMS["percentile"]


@dataclass(frozen=True)
class GalleryChapter:
    """Configuration of chapter 2; every field is a parameter of the notebook."""

    game: str = "Breakout"
    """Atari game of the chapter."""
    agent: str | None = None
    """Agent spec; None: the study's DQN agent (:func:`~saliency_lib.study.agents.study_agent`).
    An ``official:<Game>`` spec replaces the official Mask-A3C agent instead."""
    methods: tuple[str, ...] | None = None
    """Registry names to show (list or comma-separated string); None: every applicable one of :data:`METHODS`."""
    n_states: int | None = None
    """HIGHLIGHTS-DIV states per agent; None: the profile's ``n_states``, at most Huber et al.'s budget of 5."""
    profile: str = "quick"
    """Execution profile: ``tiny``, ``quick`` or ``full`` (:mod:`saliency_lib.study.profiles`)."""
    seed: int = 0
    """Seed of the greedy trajectory (and offset of the random maps' seeds)."""
    device: str = "cpu"
    """Torch device of the agents."""
    results_dir: str = RESULTS_DIR
    """Cache of results (relative paths are under the repository root)."""
    settings: dict = field(init=False, repr=False, compare=False)
    """The profile's settings."""

    USED = ("n_states", "eval_max_steps")
    """Profile settings this chapter uses."""

    def __post_init__(self):
        game_info(self.game)
        if self.agent in ("", "None"):
            object.__setattr__(self, "agent", None)
        object.__setattr__(self, "methods", _as_methods(self.methods))
        object.__setattr__(self, "n_states", _as_count(self.n_states, "n_states"))
        if isinstance(self.seed, str) and self.seed.strip().isdigit():
            object.__setattr__(self, "seed", int(self.seed))
        object.__setattr__(self, "settings", profile_settings(self.profile))

    @property
    def trajectory(self) -> int:
        """States of the greedy trajectory: :data:`BENCHMARK_STEPS`, capped at the profile's ``eval_max_steps``."""
        cap = self.settings["eval_max_steps"]
        return min(BENCHMARK_STEPS, cap) if cap else BENCHMARK_STEPS

    @property
    def selection(self) -> StateSelection:
        """The explained states (the ``n_states`` parameter is the HIGHLIGHTS-DIV budget)."""
        budget = self.n_states or min(self.settings["n_states"], HIGHLIGHTS_PARAMS["budget"])
        return StateSelection(trajectory=self.trajectory, budget=budget, seed=self.seed)

    @property
    def explainer_params(self) -> dict:
        """Method parameters of the profile (:data:`EXPLAINER_PARAMS`)."""
        return {k: dict(v) for k, v in EXPLAINER_PARAMS[self.profile].items()}

    def _repr_markdown_(self) -> str:
        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self) if f.name != "settings")
        sel = self.selection
        used = ", ".join(f"`{k}={self.settings[k]!r}`" for k in self.USED)
        coarse = ("; **coarse method parameters** (few perturbations, CI only): "
                  + ", ".join(f"`{m}: {p}`" for m, p in self.explainer_params.items())) if self.explainer_params else ""
        return (f"**Parameters:** {params}.\n\n**From the profile `{self.profile}`:** {used}: up to {sel.budget} "
                f"HIGHLIGHTS-DIV states of a {sel.trajectory}-state greedy trajectory{coarse}.\n")


# -- agents ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExplainedAgent:
    """One agent a chapter explains: its kind, spec (None: missing) and how to name it."""

    kind: str
    """``"dqn"`` (the study's agent, or the ``agent`` parameter) or ``"mask_a3c"`` (official)."""
    game: str
    spec: str | None
    label: str
    """Name for text and captions, e.g. "the official Mask-A3C agent"."""
    missing: str = ""
    """Why ``spec`` is None and how to provide the agent."""

    def __bool__(self) -> bool:
        return self.spec is not None

    def note(self) -> Note:
        """The reason the agent is missing, as a Note."""
        return Note(self.missing, kind="warning", title=f"No {self.label} for {self.game}")

    def _repr_markdown_(self) -> str:
        if not self:
            return self.note()._repr_markdown_()
        return f"**{self.label[0].upper() + self.label[1:]} for {self.game}:** `{self.spec}`."


def describe_agents(agents: list[ExplainedAgent]):
    """The chapter's agents as Markdown, one line (or one note) each."""
    from IPython.display import Markdown

    return Markdown("\n\n".join(a._repr_markdown_() for a in agents))


def chapter_agents(game: str, agent: str | None = None, *, results_dir: str | os.PathLike = RESULTS_DIR
                   ) -> list[ExplainedAgent]:
    """The two agents a chapter explains for ``game``: ``[dqn, mask_a3c]``, each possibly missing.

    ``agent`` (a chapter parameter) replaces the study's DQN agent, or, when it is an
    ``official:<Game>`` spec, the official Mask-A3C agent.
    """
    from ..agents.official import OFFICIAL_GAMES

    given_official = bool(agent) and str(agent).startswith("official:")
    if agent and not given_official:
        dqn = ExplainedAgent("dqn", game, agent, "agent given as parameter")
    else:
        spec = study_agent(game, results_dir=results_dir)
        dqn = ExplainedAgent("dqn", game, spec, "DQN agent of the study", "" if spec else (
            f"No DQN agent for {game} yet: none is shipped in `data/agents` and none was trained for the study. "
            "This section fills in when one exists (chapter 1 trains one with `-p train true`)."))
    spec = agent if given_official else f"official:{game}"
    if game not in OFFICIAL_GAMES:
        mask = ExplainedAgent("mask_a3c", game, None, "official Mask-A3C agent",
                              f"Itaya et al. released no Mask-A3C checkpoint for {game} (they did for {', '.join(OFFICIAL_GAMES)}).")
    elif not official_available(spec.partition(":")[2]):
        mask = ExplainedAgent("mask_a3c", game, None, "official Mask-A3C agent",
                              "The official Mask-A3C checkpoints are not fetched; run `make fetch-official`.")
    else:
        mask = ExplainedAgent("mask_a3c", game, spec, "official Mask-A3C agent")
    return [dqn, mask]


def load(spec: str, device: str = "cpu"):
    """:func:`saliency_lib.agents.load_agent` on a checkpoint directory (relative to the repository) or a spec."""
    from ..agents import load_agent

    path = repo_path(spec)
    return load_agent(path if (path / "meta.json").is_file() else spec, device=device)


@functools.cache
def action_names(game: str, preset: str, n_actions: int) -> tuple[str, ...]:
    """The ALE's names of the agent's actions (``"action k"`` when the counts disagree)."""
    from ..envs import make_env

    env = make_env(game, preset)
    try:
        names = tuple(env.unwrapped.get_action_meanings())
    finally:
        env.close()
    return names if len(names) == n_actions else tuple(f"action {k}" for k in range(n_actions))


# -- states -----------------------------------------------------------------------------------

def highlight_states(agent, spec: str, selection: StateSelection, *,
                     results_dir: str | os.PathLike = RESULTS_DIR):
    """HIGHLIGHTS-DIV states of one greedy trajectory, most important first, with their raw frames.

    Plays ``selection.trajectory`` greedy steps (:func:`saliency_lib.states.collect_states`),
    chooses ``selection.budget`` states with :func:`saliency_lib.states.select_highlights`
    and keeps only them. Cached (``.pt``) under ``<results_dir>/_local/media``.

    Returns
    -------
    saliency_lib.states.StateSet
        The chosen states, ordered by decreasing importance. ``meta`` holds ``key``
        (the cache key of the selection), ``trajectory_index``, ``importance`` and
        ``threshold`` (the diversity threshold).
    """
    import torch

    from ..states import StateSet, collect_states, importance, select_highlights

    config = {"what": "highlight_states", "agent": spec, "sha256": agent.meta.get("sha256"), "game": agent.game,
              "preset": agent.preset, "trajectory": selection.trajectory, "budget": selection.budget,
              "seed": selection.seed, "context_length": selection.context_length,
              "minimum_gap": selection.minimum_gap, "percentile": selection.percentile}

    def make(path):
        torch.set_num_threads(1)
        run = collect_states(agent, selection.trajectory, seed=selection.seed, frames=True)
        h = select_highlights(run, budget=selection.budget, context_length=selection.context_length,
                              minimum_gap=selection.minimum_gap, percentile=selection.percentile)
        imp = importance(run.outputs.get("q", run.outputs.get("logits")))
        order = sorted(h.states, key=lambda i: -imp[i])
        chosen = run.subset(order)
        chosen.meta.update(key=config_hash(config), trajectory_index=[int(i) for i in order],
                           importance=[float(imp[i]) for i in order], threshold=float(h.threshold))
        chosen.save(path)

    return StateSet.load(cached_file("highlight_states", config, ".pt", make, results_dir=results_dir))


# -- maps -------------------------------------------------------------------------------------

def applicable_methods(agent, methods=None) -> tuple[str, ...]:
    """The methods of ``methods`` (default :data:`METHODS`) that can explain ``agent``, in order."""
    from ..explainers import get_explainer

    out = []
    for m in methods or METHODS:
        try:
            get_explainer(m, agent)
        except (ValueError, TypeError):
            continue
        out.append(m)
    return tuple(out)


def resolve_action(states, i: int, target) -> int:
    """The action index ``target`` names in state ``i``: ``"action"`` (greedy), ``"runner_up"`` or an index."""
    scores = states.outputs.get("q", states.outputs.get("logits"))
    if target == "action":
        return int(states.actions[i])
    if target == "runner_up":
        return int(np.argsort(-scores[i].numpy(), kind="stable")[1])
    if isinstance(target, (int, np.integer)) and not isinstance(target, bool) and 0 <= target < scores.shape[1]:
        return int(target)
    raise ValueError(f"target must be 'action', 'runner_up', 'value' or an action index in [0, {scores.shape[1]}), "
                     f"got {target!r}")


def saliency_map(agent, spec: str, states, i: int, method: str, target="action", *, params: dict | None = None,
                 results_dir: str | os.PathLike = RESULTS_DIR) -> np.ndarray | None:
    """One saliency map of state ``i`` of ``states``, cached as ``.npy`` under ``<results_dir>/_local/media``.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
    spec : str
        The agent's spec (part of the cache key, with its weights hash).
    states : saliency_lib.states.StateSet
        From :func:`highlight_states` (its ``meta["key"]`` names the states in the cache key).
    i : int
        Index into ``states``.
    method : str
        Registry name (:data:`saliency_lib.explainers.EXPLAINERS`).
    target : {"action", "runner_up", "value"} or int
        What to explain: the agent's action, the runner-up action, the state value
        (``output="value"``) or an action index. Methods of :data:`TARGET_FREE` ignore it;
        a method that explains all actions at once (``ns_original``) ignores the action.
    params : dict, optional
        ``{method: {parameter: value}}`` overriding the method's defaults.

    Returns
    -------
    numpy.ndarray or None
        ``(H, W)`` float32 map at the agent's input resolution (not normalised), or
        None when the method cannot explain this target for this agent (e.g. the value
        of an agent without one, SARFA on the value).
    """
    import torch

    from ..explainers import get_explainer

    kw = dict((params or {}).get(method, {}))
    index = int(states.meta.get("trajectory_index", list(range(len(states))))[i])
    if method == "random":  # a different random map per state, reproducible
        kw["seed"] = int(kw.get("seed", 0)) + states.seed + index
    action = None
    if target == "value" and method not in TARGET_FREE:
        kw["output"] = "value"
    elif method not in TARGET_FREE:
        action = resolve_action(states, i, target)
    try:
        ex = get_explainer(method, agent, **kw)
    except (ValueError, TypeError):
        return None
    if ex.output == "all":  # one map for all actions
        action = None
    config = {"what": "saliency_map", "agent": spec, "sha256": agent.meta.get("sha256"), "states": states.meta["key"],
              "index": index, "explainer": {k: v for k, v in ex.config.items() if k != "batch_size"}, "action": action}

    def make(path):
        torch.set_num_threads(1)
        hidden = None if states.hidden is None else tuple(h[i:i + 1].to(agent.device) for h in states.hidden)
        res = ex.attribute(states.states[i:i + 1].to(agent.device), target=action, hidden=hidden)
        with open(path, "wb") as f:
            np.save(f, res.maps[0].detach().cpu().numpy().astype(np.float32))

    return np.load(cached_file("saliency_map", config, ".npy", make, results_dir=results_dir))


# -- display ----------------------------------------------------------------------------------

def normalise(m: np.ndarray) -> np.ndarray:
    """Min-max normalise a map to [0, 1] for display; a constant map becomes all zeros."""
    m = np.asarray(m, dtype=np.float32)
    lo, hi = float(np.nanmin(m)), float(np.nanmax(m))
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
        return np.zeros_like(m)
    return (m - lo) / (hi - lo)


def on_frame(m: np.ndarray, *, preset: str, game: str, frame_hw: tuple[int, int] = (210, 160)
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """A map at the agent's input resolution, resized onto the raw frame.

    ``dqn`` maps cover the whole frame (:func:`saliency_lib.viz.map84_to_frame`);
    ``mask_a3c`` maps cover the game's crop and go back through it as in the official
    visualiser (:func:`saliency_lib.viz.mask_to_frame`). Returns the map on the frame
    and, for ``mask_a3c``, a boolean array that is True inside the crop (else None).
    """
    from ..viz import map84_to_frame, mask_to_frame

    if preset == "mask_a3c":
        return mask_to_frame(m, mask_a3c_crop(game), frame_hw)
    return map84_to_frame(m, frame_hw), None


def overlay_map(frame: np.ndarray, m: np.ndarray, *, preset: str, game: str, alpha: float = 0.7,
                cmap: str = "inferno") -> np.ndarray:
    """``m``, min-max normalised, blended onto the raw RGB ``frame`` (:func:`saliency_lib.viz.overlay`)."""
    from ..viz import overlay

    heat, inside = on_frame(normalise(m), preset=preset, game=game, frame_hw=frame.shape[:2])
    return overlay(frame, heat, alpha=alpha, cmap=cmap, where=inside)


@dataclass
class Gallery:
    """Every method's map of every chosen state for one agent."""

    agent: ExplainedAgent
    preset: str
    states: object
    """The :class:`~saliency_lib.states.StateSet` of :func:`highlight_states`."""
    methods: tuple[str, ...]
    maps: dict[str, list[np.ndarray | None]]
    """Method → one map (or None) per state."""
    actions: tuple[str, ...]
    """Names of the agent's actions."""

    def __len__(self) -> int:
        return len(self.states)

    def state_label(self, i: int) -> str:
        """E.g. "state 1 (step 412 of game 1, action FIRE)"."""
        s = self.states
        return (f"state {i + 1} (step {int(s.steps[i])} of game {int(s.episode[i]) + 1}, "
                f"action {self.actions[int(s.actions[i])]})")


def compute_gallery(cfg: GalleryChapter, who: ExplainedAgent) -> Gallery | Note:
    """The maps of every applicable method (``cfg.methods``) on ``cfg.selection``'s states, for the agent's action."""
    import torch

    if not who:
        return who.note()
    torch.set_num_threads(1)
    agent = load(who.spec, cfg.device)
    states = highlight_states(agent, who.spec, cfg.selection, results_dir=cfg.results_dir)
    methods = applicable_methods(agent, cfg.methods)
    maps = {m: [saliency_map(agent, who.spec, states, i, m, "action", params=cfg.explainer_params,
                             results_dir=cfg.results_dir) for i in range(len(states))] for m in methods}
    return Gallery(who, agent.preset, states, methods, maps, action_names(agent.game, agent.preset, agent.n_actions))


def state_figure(g: Gallery, i: int = 0, *, ncols: int = 7, alpha: float = 0.7, cmap: str = "inferno"):
    """The raw frame of state ``i`` and every method's map on it, one labelled panel each.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib import cm, colors
    from matplotlib.figure import Figure

    frame = g.states.frames[i]
    panels = [("frame", frame)] + [(METHOD_LABELS.get(m, m), None if g.maps[m][i] is None else
                                    overlay_map(frame, g.maps[m][i], preset=g.preset, game=g.agent.game, alpha=alpha,
                                                cmap=cmap)) for m in g.methods]
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(1.45 * ncols, 2.05 * nrows + 0.55), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat:
        ax.set_axis_off()
    for ax, (label, img) in zip(axes.flat, panels):
        if img is None:
            ax.text(0.5, 0.5, "not\napplicable", ha="center", va="center", transform=ax.transAxes, color="0.4")
        else:
            ax.imshow(img, interpolation="nearest")
        ax.set_title(label, fontsize=9)
    fig.colorbar(cm.ScalarMappable(colors.Normalize(0, 1), cmap), ax=axes, orientation="horizontal", fraction=0.04,
                 shrink=0.35, label="saliency, min-max normalised per map")
    fig.suptitle(f"{g.agent.label[0].upper() + g.agent.label[1:]}, {g.agent.game}: {g.state_label(i)}", fontsize=10)
    return fig


def gallery_figure(g: Gallery | Note, i: int = 0, *, dpi: int = 90):
    """:func:`state_figure` as an image; None for a Note (:func:`states_figure` has shown it)."""
    if isinstance(g, Note):
        return None
    return figure_image(state_figure(g, i), dpi=dpi)


def _png_widget(fig, dpi: int):
    """A matplotlib figure as an ipywidgets ``Image`` (PNG, saved with the notebook)."""
    import ipywidgets as w

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return w.Image(value=buf.getvalue(), format="png", layout=w.Layout(max_width="100%"))


def gallery_tabs(g: Gallery | Note, *, start: int = 1, dpi: int = 72):
    """An ipywidgets ``Tab`` with :func:`state_figure` of states ``start`` … (PNG, saved with the notebook).

    Returns a Note when there is no such state, None for a Note (:func:`states_figure` has shown it).
    """
    import ipywidgets as w

    if isinstance(g, Note):
        return None
    if len(g) <= start:
        return Note(f"Only {len(g)} state{'s' if len(g) != 1 else ''} chosen; no further states to show.")
    children = [_png_widget(state_figure(g, i), dpi) for i in range(start, len(g))]
    tabs = w.Tab(children=children)
    for k in range(len(children)):
        tabs.set_title(k, f"state {start + k + 1}")
    return tabs


def games_gallery(cfg: GalleryChapter, games: tuple[str, ...] = HUBER_GAMES) -> dict[str, Gallery | Note]:
    """Every method on the most important HIGHLIGHTS-DIV state of the study's DQN agent of each game.

    The chapter's configuration is reused with ``game`` replaced and a budget of one
    state; a game without a DQN agent maps to the Note that says how to get one.
    """
    out: dict[str, Gallery | Note] = {}
    for game in games:
        gcfg = replace(cfg, game=game, agent=None, n_states=1)
        out[game] = compute_gallery(gcfg, chapter_agents(game, results_dir=cfg.results_dir)[0])
    return out


def games_tabs(galleries: dict[str, Gallery | Note], *, dpi: int = 72):
    """An ipywidgets ``Tab``, one per game: :func:`state_figure` of its state (PNG), or its Note as HTML."""
    import html

    import ipywidgets as w

    children = []
    for g in galleries.values():
        if isinstance(g, Note):
            text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(g.text))  # the Note's Markdown code spans
            children.append(w.HTML(f"<p><b>{html.escape(g.title)}.</b> {text}</p>"))
        else:
            children.append(_png_widget(state_figure(g, 0), dpi))
    tabs = w.Tab(children=children)
    for k, game in enumerate(galleries):
        tabs.set_title(k, game)
    return tabs


def states_figure(g: Gallery | Note, *, dpi: int = 90):
    """The chosen states' raw frames in a row, with step, action and HIGHLIGHTS importance."""
    from matplotlib.figure import Figure

    if isinstance(g, Note):
        return g
    n = len(g)
    fig = Figure(figsize=(1.6 * n, 2.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, n))
    for i, ax in enumerate(axes):
        ax.imshow(g.states.frames[i], interpolation="nearest")
        ax.set_axis_off()
        ax.set_title(f"state {i + 1}: step {int(g.states.steps[i])}\n{g.actions[int(g.states.actions[i])]}, "
                     f"importance {g.states.meta['importance'][i]:.3g}", fontsize=8)
    return figure_image(fig, dpi=dpi)


# -- agreement between methods ------------------------------------------------------------------

def agreement(g: Gallery) -> pd.DataFrame:
    """Spearman rank correlation between the maps of every pair of methods, per state.

    Maps are compared at the agent's input resolution, without the sign-flip of the
    sanity checks (both maps say "higher = more important"). A constant map has no
    ranking; its pairs are NaN.

    Returns
    -------
    pandas.DataFrame
        Long table: ``state, method_a, method_b, spearman`` (each unordered pair once).
    """
    from ..metrics.similarity import ConstantMapWarning, spearman

    rows = []
    for i in range(len(g)):
        for a_i, a in enumerate(g.methods):
            for b in g.methods[a_i + 1:]:
                ma, mb = g.maps[a][i], g.maps[b][i]
                if ma is None or mb is None:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConstantMapWarning)
                    rho = spearman(ma, mb, sign_invariant=False)
                rows.append({"state": i, "method_a": a, "method_b": b, "spearman": rho})
    return pd.DataFrame(rows, columns=["state", "method_a", "method_b", "spearman"])


def _matrix(long: pd.DataFrame, methods) -> pd.DataFrame:
    mean = long.groupby(["method_a", "method_b"])["spearman"].mean()
    mat = pd.DataFrame(np.eye(len(methods)), index=list(methods), columns=list(methods))
    for (a, b), v in mean.items():
        mat.loc[a, b] = mat.loc[b, a] = v
    return mat


def agreement_figure(g: Gallery | Note, *, dpi: int = 90):
    """Heat map of the mean Spearman correlation between methods over the chosen states."""
    from matplotlib.figure import Figure

    if isinstance(g, Note):
        return g
    mat = _matrix(agreement(g), g.methods)
    labels = [METHOD_LABELS.get(m, m) for m in g.methods]
    n = len(labels)
    fig = Figure(figsize=(0.55 * n + 2.2, 0.5 * n + 1.2), layout="constrained")
    ax = fig.subplots()
    im = ax.imshow(mat.to_numpy(float), cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set_xticks(range(n), labels, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(n), labels, fontsize=8)
    for r in range(n):
        for c in range(n):
            v = mat.iat[r, c]
            ax.text(c, r, "–" if np.isnan(v) else f"{v:.2f}", ha="center", va="center", fontsize=6.5,
                    color="white" if abs(v) > 0.6 else "black")
    fig.colorbar(im, ax=ax, shrink=0.8, label="mean Spearman ρ")
    ax.set_title(f"{g.agent.label[0].upper() + g.agent.label[1:]}, {g.agent.game}: agreement over {len(g)} "
                 f"state{'s' if len(g) != 1 else ''}", fontsize=10)
    return figure_image(fig, dpi=dpi)


def _rho(x: float) -> str:
    """A correlation with two decimals, without a negative zero."""
    text = f"{x:.2f}"
    return "0.00" if text == "-0.00" else text


def agreement_summary(g: Gallery | Note):
    """Markdown sentences on the agreement between methods, generated from :func:`agreement` (None for a Note)."""
    from IPython.display import Markdown

    if isinstance(g, Note):
        return None
    long = agreement(g)
    mean = long.groupby(["method_a", "method_b"])["spearman"].mean().dropna()
    lab = METHOD_LABELS.get
    n = len(g)
    pairs = mean[[("random" not in k) for k in mean.index]]
    if pairs.empty:
        return Markdown(f"Too few methods with a ranking on these {n} states to compare.")
    hi, lo = pairs.idxmax(), pairs.idxmin()
    text = [f"Over the {n} state{'s' if n != 1 else ''} of the {g.agent.label}, the most similar methods are "
            f"**{lab(hi[0])}** and **{lab(hi[1])}** (mean Spearman ρ = {_rho(pairs[hi])}), the least similar "
            f"**{lab(lo[0])}** and **{lab(lo[1])}** (ρ = {_rho(pairs[lo])})."]
    rnd = mean[[("random" in k) for k in mean.index]]
    if not rnd.empty:
        text.append(f"The random map's correlation with the other methods lies between {_rho(rnd.min())} "
                    f"and {_rho(rnd.max())}.")
    per = pd.Series({m: pairs[[m in k for k in pairs.index]].mean() for m in g.methods if m != "random"}).dropna()
    if len(per) >= 2:
        text.append(f"Averaged over its partners, **{lab(per.idxmax())}** agrees most with the other methods "
                    f"(ρ = {_rho(per.max())}) and **{lab(per.idxmin())}** least (ρ = {_rho(per.min())}).")
    nan = long["spearman"].isna().sum()
    if nan:
        text.append(f"{nan} of {len(long)} comparisons involve a constant map and have no rank correlation.")
    return Markdown(" ".join(text))
