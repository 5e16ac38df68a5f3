"""Saliency maps for the book's figures: which states, which methods, one map, a map on a game frame (chapters 2, 3, 7)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from types import MappingProxyType

import numpy as np

from saliency_book.common import METHODS, TARGET_FREE, as_count
from saliency_book.config import ChapterConfig
from saliency_lib.games import BENCHMARK_STATES, mask_a3c_crop
from saliency_lib.results import config_hash
from saliency_study.cache import cached_file
from saliency_study.paths import RESULTS_DIR
from saliency_study.profiles import get_profile

__all__ = ["HIGHLIGHTS_PARAMS", "StateSelection", "highlight_states", "applicable_methods", "resolve_action",
           "saliency_map", "normalise", "on_frame", "overlay_map", "as_methods", "ExampleMapsConfig"]

HIGHLIGHTS_PARAMS = MappingProxyType({"budget": 5, "context_length": 10, "minimum_gap": 10, "percentile": 3.0})
"""HIGHLIGHTS-DIV of Huber et al. (reference §2.2): 5 states per game, context 10, gap 10, 3rd percentile."""


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


def highlight_states(agent, spec: str, selection: StateSelection, *,
                     results_dir: str | os.PathLike = RESULTS_DIR):
    """HIGHLIGHTS-DIV states of one greedy trajectory, most important first, with their raw frames (a ``StateSet``).

    Plays ``selection.trajectory`` greedy steps (:func:`saliency_lib.states.collect_states`) and keeps the
    ``selection.budget`` states :func:`saliency_lib.highlights.select_highlights` chooses, cached under
    ``<results_dir>/_local/media``. ``meta`` holds ``key`` (the selection's cache key), ``trajectory_index``,
    ``importance`` and ``threshold`` (the diversity threshold).
    """
    import torch

    from saliency_lib.highlights import importance, select_highlights
    from saliency_lib.states import StateSet, collect_states

    config = {"what": "highlight_states", "agent": spec, "sha256": agent.meta.get("sha256"), "game": agent.game,
              "preset": agent.preset, **asdict(selection)}

    def make(path):
        torch.set_num_threads(1)
        run = collect_states(agent, selection.trajectory, seed=selection.seed, frames=True)
        h = select_highlights(run, **{k: v for k, v in asdict(selection).items() if k not in ("trajectory", "seed")})
        imp = importance(run.outputs.get("q", run.outputs.get("logits")))
        order = sorted(h.states, key=lambda i: -imp[i])
        chosen = run.subset(order)
        chosen.meta.update(key=config_hash(config), trajectory_index=[int(i) for i in order],
                           importance=[float(imp[i]) for i in order], threshold=float(h.threshold))
        chosen.save(path)

    return StateSet.load(cached_file("highlight_states", config, ".pt", make, results_dir=results_dir))


def applicable_methods(agent, methods=None) -> tuple[str, ...]:
    """The methods of ``methods`` (default :data:`METHODS`) that can explain ``agent``, in order."""
    from saliency_lib.explainers import get_explainer

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

    ``spec`` and the agent's weights hash, and ``states.meta["key"]`` (:func:`highlight_states`), name the
    map in the cache key. ``method`` is a registry name; ``params`` (``{method: {parameter: value}}``)
    override its defaults. ``target`` is ``"action"``, ``"runner_up"``, ``"value"`` (``output="value"``)
    or an action index; methods of :data:`~saliency_book.common.TARGET_FREE`, and the action of a method
    that explains all actions at once (``ns_original``), ignore it. Returns the ``(H, W)`` float32 map at
    the agent's input resolution (not normalised), or None when the method cannot explain this target
    for this agent (the value of an agent without one, SARFA on the value).
    """
    import torch

    from saliency_lib.explainers import get_explainer

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


def normalise(m: np.ndarray) -> np.ndarray:
    """Min-max normalise a map to [0, 1] for display; a constant map becomes all zeros."""
    m = np.asarray(m, dtype=np.float32)
    lo, hi = float(np.nanmin(m)), float(np.nanmax(m))
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
        return np.zeros_like(m)
    return (m - lo) / (hi - lo)


def on_frame(m: np.ndarray, *, preset: str, game: str, frame_hw: tuple[int, int] = (210, 160)
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """A map at the agent's input resolution, resized onto the raw frame, and (``mask_a3c``) where the crop is.

    ``dqn`` maps cover the whole frame (:func:`saliency_lib.viz.map84_to_frame`); ``mask_a3c`` maps cover the
    game's crop and go back through it as in the official visualiser (:func:`saliency_lib.viz.mask_to_frame`).
    """
    from saliency_lib.viz import map84_to_frame, mask_to_frame

    if preset == "mask_a3c":
        return mask_to_frame(m, mask_a3c_crop(game), frame_hw)
    return map84_to_frame(m, frame_hw), None


def overlay_map(frame: np.ndarray, m: np.ndarray, *, preset: str, game: str, alpha: float = 0.7,
                cmap: str = "inferno") -> np.ndarray:
    """``m``, min-max normalised, blended onto the raw RGB ``frame`` (:func:`saliency_lib.viz.overlay`)."""
    from saliency_lib.viz import overlay

    heat, inside = on_frame(normalise(m), preset=preset, game=game, frame_hw=frame.shape[:2])
    return overlay(frame, heat, alpha=alpha, cmap=cmap, where=inside)


def as_methods(value) -> tuple[str, ...] | None:
    """Registry names from a list or a comma-separated string; None for all."""
    from saliency_lib.explainers import EXPLAINERS

    if value is None or (isinstance(value, str) and value.strip() in ("", "None")):
        return None
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in EXPLAINERS]
    if unknown or not names:
        raise ValueError(f"methods must name registered explainers, got {value!r}; valid names are: {', '.join(EXPLAINERS)}")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class ExampleMapsConfig(ChapterConfig):
    """The configuration of the chapters that show example maps (2, 7): the base's fields, then which maps.

    ``agent`` replaces the study's DQN agent; an ``official:<Game>`` spec replaces the official
    Mask-A3C agent instead.
    """

    methods: tuple[str, ...] | None = None
    """Registry names to show (list or comma-separated string); None: every applicable one of :data:`METHODS`."""
    n_states: int | None = None
    """HIGHLIGHTS-DIV states per agent; None: the profile's ``highlight_states``."""

    USED = ("highlight_states", "eval_max_steps")

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "methods", as_methods(self.methods))
        object.__setattr__(self, "n_states", as_count(self.n_states, "n_states"))

    @property
    def trajectory(self) -> int:
        """States of the greedy trajectory: Huber et al.'s benchmark length, capped at the profile's ``eval_max_steps``."""
        cap = self.settings["eval_max_steps"]
        return min(BENCHMARK_STATES, cap) if cap else BENCHMARK_STATES

    @property
    def budget(self) -> int:
        """HIGHLIGHTS-DIV states per agent: the ``n_states`` parameter, else the profile's."""
        return self.n_states or self.settings["highlight_states"]

    @property
    def selection(self) -> StateSelection:
        """The explained states."""
        return StateSelection(self.trajectory, self.budget, self.seed)

    @property
    def explainer_params(self) -> dict:
        """Method parameters of the profile's example maps (:attr:`~saliency_study.profiles.Profile.example_params`)."""
        return {k: dict(v) for k, v in get_profile(self.profile).example_params.items()}

    def _profile_markdown(self) -> str:
        coarse = ("; **coarse method parameters** (few perturbations, CI only): "
                  + ", ".join(f"`{m}: {p}`" for m, p in self.explainer_params.items())) if self.explainer_params else ""
        return (f"{super()._profile_markdown()}: up to {self.selection.budget} HIGHLIGHTS-DIV states of a "
                f"{self.trajectory}-state greedy trajectory{coarse}")
