"""Chapter 7 (Explorer): browse the saliency maps by game, agent, state, method, target and overlay strength.

The static book has no kernel, so the explorer embeds pre-rendered images (the chapter's game, both
agents, the first of chapter 2's states, every method, the :data:`~saliency_book.common.TARGETS` and
:data:`ALPHAS`) in nested ``ipywidgets.Stack`` containers whose ``selected_index`` is linked to a
control by :func:`ipywidgets.jslink`, a link the browser runs. In Jupyter, observers on the same
controls compute any other combination on demand (cached like every map).
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import NamedTuple

import ipywidgets as w
import numpy as np

from saliency_book.common import METHODS, TARGET_FREE, TARGET_LABELS, TARGETS, Note, action_names, chapter_agents
from saliency_book.config import ChapterConfig
from saliency_book.maps import ExampleMapsConfig, applicable_methods, highlight_states, overlay_map, saliency_map
from saliency_lib.explainers import METHOD_LABELS
from saliency_lib.games import valid_games
from saliency_study.catalog import load_spec

__all__ = ["ALPHAS", "STATIC_STATES", "ExplorerChapter", "Explorer", "explorer", "explorer_stats", "explorer_games",
           "encode_image", "colour_legend"]

ALPHAS = (0.35, 0.7, 1.0)
"""Overlay strengths: the blend weight of the colour map where the saliency is 1 (see :func:`saliency_lib.viz.overlay`)."""
STATIC_STATES = 3
"""Default number of states embedded in the static page (each adds about 2 × methods × targets × alphas images)."""


@dataclass(frozen=True)
class ExplorerChapter(ExampleMapsConfig):
    """Chapter 7's configuration: chapter 2's states (so its cached maps), of which the static page embeds
    ``n_states`` (None: :data:`STATIC_STATES`)."""

    @property
    def budget(self) -> int:
        """Chapter 2's default budget for this profile."""
        return self.settings["highlight_states"]

    @property
    def shown(self) -> int:
        """States embedded in the static page (at most)."""
        return min(self.n_states or STATIC_STATES, self.budget)

    def _profile_markdown(self) -> str:
        coarse = "; coarse method parameters (CI only)" if self.explainer_params else ""
        return (f"{ChapterConfig._profile_markdown(self)}: the first {self.shown} of chapter 2's HIGHLIGHTS-DIV states "
                f"(of a {self.trajectory}-state greedy trajectory), {len(ALPHAS)} overlay strengths{coarse}")


def explorer_games(cfg: ExplorerChapter) -> list[str]:
    """The chapter's game first, then every other game with a DQN or official Mask-A3C agent."""
    return [cfg.game] + [g for g in valid_games() if g != cfg.game and any(chapter_agents(g, results_dir=cfg.results_dir))]


def encode_image(rgb: np.ndarray, *, quality: int = 80) -> bytes:
    """An RGB uint8 image as lossy WebP bytes (about 6 kB for a 210 × 160 frame, a third of a PNG)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="WEBP", quality=quality, method=6)
    return buf.getvalue()


def colour_legend(cmap: str = "inferno", *, steps: int = 11) -> str:
    """HTML of a horizontal colour bar (CSS gradient) from 0 to 1 for ``cmap``."""
    import matplotlib

    stops = ", ".join(matplotlib.colors.to_hex(matplotlib.colormaps[cmap](k / (steps - 1))) for k in range(steps))
    bar = f'<span style="display:inline-block;width:180px;height:12px;background:linear-gradient(to right, {stops})"></span>'
    return (f'<div style="font-size:0.85em">0 {bar} 1 &nbsp; saliency, min-max normalised per map; the overlay blends '
            "in the colour map with weight α × saliency</div>")


class _AgentData(NamedTuple):
    """What the explorer needs of one (game, agent kind): the agent, its states and names."""

    who: object
    agent: object
    states: object
    methods: tuple[str, ...]
    actions: tuple[str, ...]


def _not_applicable(d: _AgentData, method: str, target) -> str:
    """Why ``method`` has no map of ``target`` for the agent of ``d``."""
    if method not in d.methods:
        return f"{METHOD_LABELS.get(method, method)} cannot explain the {d.who.label}."
    if target == "value" and "value" not in d.agent.outputs:
        return f"The {d.who.label} has no state value to explain."
    what = TARGET_LABELS.get(target, "this target") if isinstance(target, str) else "this action"
    return f"{METHOD_LABELS.get(method, method)} cannot explain the {what} of the {d.who.label}."


class Explorer:
    """The explorer widget: controls, the static grid of pre-rendered images and the live view.

    ``games`` are the game menu's games (default :func:`explorer_games`); only ``cfg.game`` is
    pre-rendered. :attr:`widget` is what the notebook displays; :attr:`levels` maps the model id of
    every ``Stack`` of the grid to the name of the control in :attr:`controls` whose ``index`` is
    linked to its ``selected_index`` by the JavaScript links :attr:`links`.
    """

    CONTROLS = ("game", "agent", "state", "method", "target", "alpha")

    def __init__(self, cfg: ExplorerChapter, *, games: list[str] | None = None):
        self.cfg, self.games = cfg, list(games) if games else explorer_games(cfg)
        self.kinds = chapter_agents(cfg.game, cfg.agent, results_dir=cfg.results_dir)
        self.methods = cfg.methods or METHODS
        self._data: dict[tuple[str, int], _AgentData | None] = {}
        self._images, self._notes = {}, {}  # sha256 of a WebP image -> its widget; text -> its note
        self.levels, self.links = {}, []
        self.static_keys: set[tuple[int, ...]] = set()
        """Control indices (game, agent, state, method, target, alpha) that the static grid holds an image for."""
        self._img_layout, self._box_layout = w.Layout(width="240px"), w.Layout()  # one layout model for every stack
        names = next((d.actions for k in range(len(self.kinds)) if (d := self._agent_data(cfg.game, k))), ())
        self._names, self._busy = names, False
        self.controls = {
            "game": w.Dropdown(options=self.games, index=0, description="game"),
            "agent": w.Dropdown(options=[who.label for who in self.kinds],
                                index=next((k for k, who in enumerate(self.kinds) if who), 0), description="agent"),
            "state": w.SelectionSlider(options=[str(k + 1) for k in range(max(self.n_states, 1))], description="state"),
            "method": w.Dropdown(options=[METHOD_LABELS.get(m, m) for m in self.methods], description="method"),
            "target": w.Dropdown(options=[TARGET_LABELS[t] for t in TARGETS] + [f"action {a}" for a in names],
                                 description="target"),
            "alpha": w.SelectionSlider(options=[f"{a:g}" for a in ALPHAS], index=ALPHAS.index(0.7), description="overlay α"),
        }
        self._live_img, self._live_info = w.Image(format="webp", layout=self._img_layout), w.HTML()
        grid = self._stack("game", [self._stack("agent", [self._states_node(k) for k in range(len(self.kinds))])
                                    if g == cfg.game else self._note("Not pre-rendered for the static page: run this "
                                                                     "chapter in Jupyter to compute it.") for g in self.games])
        self.display = w.Stack(children=[grid, w.VBox([self._live_info, self._live_img])], selected_index=0)
        c = self.controls
        self.widget = w.VBox([w.HBox([c["game"], c["agent"]]), w.HBox([c["method"], c["target"]]),
                              w.HBox([c["state"], c["alpha"]]), self.display, w.HTML(colour_legend())])
        for name in self.CONTROLS:
            c[name].observe(self._on_change, names="index")

    @property
    def n_states(self) -> int:
        """States of the chapter's game in the grid (the most of its agents)."""
        return max((len(d.states) for k in range(len(self.kinds)) if (d := self._agent_data(self.cfg.game, k))), default=0)

    def _repr_mimebundle_(self, **kwargs):  # a notebook shows the widget
        return self.widget._repr_mimebundle_(**kwargs)

    def _agent_data(self, game: str, kind: int) -> _AgentData | None:
        """The agent of ``kind`` for ``game`` with its first ``cfg.shown`` states (None: missing)."""
        if (game, kind) not in self._data:
            who = chapter_agents(game, self.cfg.agent if game == self.cfg.game else None,
                                 results_dir=self.cfg.results_dir)[kind]
            self._data[(game, kind)] = None
            if who:
                agent = load_spec(who.spec, self.cfg.device)
                states = highlight_states(agent, who.spec, self.cfg.selection, results_dir=self.cfg.results_dir)
                self._data[(game, kind)] = _AgentData(who, agent, states.subset(list(range(min(self.cfg.shown, len(states))))),
                                                      applicable_methods(agent, self.methods),
                                                      action_names(agent.game, agent.preset, agent.n_actions))
        return self._data[(game, kind)]

    def _overlay(self, d: _AgentData, i: int, method: str, target, alphas) -> list[bytes] | None:
        """WebP images of the map of ``method`` for ``target`` on state ``i``, one per alpha (None: no map)."""
        m = saliency_map(d.agent, d.who.spec, d.states, i, method, target, params=self.cfg.explainer_params,
                         results_dir=self.cfg.results_dir)
        return None if m is None else [encode_image(overlay_map(d.states.frames[i], m, preset=d.agent.preset,
                                                                game=d.who.game, alpha=a)) for a in alphas]

    def _stack(self, control: str, children: list):
        s = w.Stack(children=children, selected_index=self.controls[control].index, layout=self._box_layout)
        self.links.append(w.jslink((self.controls[control], "index"), (s, "selected_index")))
        self.levels[s.model_id] = control
        return s

    def _note(self, text: str):
        if text not in self._notes:
            self._notes[text] = w.HTML(f'<div style="width:420px;padding:1em;color:#555;font-style:italic">{text}</div>')
        return self._notes[text]

    def _image(self, data: bytes):
        key = hashlib.sha256(data).hexdigest()
        if key not in self._images:  # identical images (target-free maps) share one widget
            self._images[key] = w.Image(value=data, format="webp", layout=self._img_layout)
        return self._images[key]

    def _states_node(self, kind: int):
        d = self._agent_data(self.cfg.game, kind)
        if d is None:
            return self._note(self.kinds[kind].missing)
        return self._stack("state", [self._note(f"The {d.who.label} has only {len(d.states)} chosen states.")
                                     if i >= len(d.states) else w.VBox([w.HTML(self._state_info(d, i)), w.HBox([
                                         self._image(encode_image(d.states.frames[i])), self._methods_node(d, kind, i)])])
                                     for i in range(len(self.controls["state"].options))])

    def _state_info(self, d: _AgentData, i: int) -> str:
        s, imp = d.states, d.states.meta["importance"][i]
        runner = int(np.argsort(-s.outputs.get("q", s.outputs.get("logits"))[i].numpy(), kind="stable")[1])
        return (f"<b>{d.who.label[0].upper() + d.who.label[1:]}, {d.who.game}, state {i + 1}</b>: step "
                f"{int(s.steps[i])} of game {int(s.episode[i]) + 1}; the agent plays <b>{d.actions[int(s.actions[i])]}</b>, "
                f"runner-up {d.actions[runner]}; HIGHLIGHTS importance {imp:.3g}.")

    def _methods_node(self, d: _AgentData, kind: int, i: int):
        later = self._note("Not pre-rendered for the static page: run this chapter in Jupyter to compute the map "
                           "of a particular action.")
        extra = len(self.controls["target"].options) - len(TARGETS)
        return self._stack("method", [
            self._note(_not_applicable(d, m, None)) if m not in d.methods else self._alphas_node(d, kind, i, m, None)
            if m in TARGET_FREE else self._stack("target", [self._alphas_node(d, kind, i, m, t) for t in TARGETS]
                                                 + [later] * extra) for m in self.methods])

    def _alphas_node(self, d: _AgentData, kind: int, i: int, m: str, target):
        images = self._overlay(d, i, m, target or "action", ALPHAS)
        if images is None:
            return self._note(_not_applicable(d, m, target))
        m_i = self.methods.index(m)
        self.static_keys |= {(0, kind, i, m_i, t_i, a_i) for t_i, t in enumerate(TARGETS) if target in (None, t)
                             for a_i in range(len(ALPHAS))}
        return self._stack("alpha", [self._image(x) for x in images])

    def selection(self) -> dict:
        """The controls' current choice: game, agent kind index, state, method, target, alpha."""
        c, t = self.controls, self.controls["target"].index
        return {"game": self.games[c["game"].index], "kind": c["agent"].index, "state": c["state"].index,
                "method": self.methods[c["method"].index], "target": TARGETS[t] if t < len(TARGETS) else t - len(TARGETS),
                "alpha": ALPHAS[c["alpha"].index]}

    def _relabel_targets(self) -> None:
        """Name the target menu's actions after the selected agent's game (live only)."""
        c = self.controls
        d = self._agent_data(self.games[c["game"].index], c["agent"].index)
        labels = tuple(TARGET_LABELS[t] for t in TARGETS) + tuple(f"action {a}" for a in (d.actions if d else self._names))
        if labels != tuple(c["target"].options):
            index, self._busy = c["target"].index, True
            try:
                c["target"].options = labels
                c["target"].index = index if index < len(labels) else 0
            finally:
                self._busy = False

    def _on_change(self, change=None) -> None:
        if self._busy:
            return
        c = self.controls
        if change is not None and change.get("owner") in (c["game"], c["agent"]):
            self._relabel_targets()
        if tuple(c[n].index for n in self.CONTROLS) in self.static_keys:
            self.display.selected_index = 0
            return
        self.display.selected_index = 1
        self._live_info.value, self._live_img.value = "<i>computing…</i>", b""
        self._live_info.value = self.render_live()

    def render_live(self) -> str:
        """Compute the current selection into the live image; returns the text shown above it."""
        sel = self.selection()
        d = self._agent_data(sel["game"], sel["kind"])
        if d is None:
            return chapter_agents(sel["game"], results_dir=self.cfg.results_dir)[sel["kind"]].missing
        i, m, target = sel["state"], sel["method"], sel["target"]
        if i >= len(d.states):
            return f"The {d.who.label} has only {len(d.states)} chosen states for {sel['game']}."
        if isinstance(target, int) and target >= len(d.actions):
            return f"{sel['game']} has only {len(d.actions)} actions for the {d.who.label}."
        images = self._overlay(d, i, m, target, [sel["alpha"]]) if m in d.methods else None
        if images is None:
            return _not_applicable(d, m, target)
        self._live_img.value = images[0]
        what = f"action {d.actions[target]}" if isinstance(target, int) else TARGET_LABELS[target]
        return self._state_info(d, i) + f" Map: {METHOD_LABELS.get(m, m)}, explaining the {what} (computed live)."


def explorer(cfg: ExplorerChapter, *, games: list[str] | None = None):
    """The explorer widget of chapter 7 (a Note when the chapter's game has no agent at all)."""
    import torch

    torch.set_num_threads(1)
    if not any(chapter_agents(cfg.game, cfg.agent, results_dir=cfg.results_dir)):
        return Note(f"No agent to explore for {cfg.game}: neither a DQN agent nor an official Mask-A3C checkpoint.",
                    kind="warning", title="No agents")
    return Explorer(cfg, games=games)


def explorer_stats(ex: Explorer | Note) -> dict:
    """What the static page embeds, for the chapter's prose (zeros for a Note)."""
    if isinstance(ex, Note):
        return (dict.fromkeys(("images", "megabytes", "stacks", "states", "methods", "targets", "alphas"), 0)
                | {"agents": "no agent"})
    return {"images": len(ex._images), "megabytes": round(sum(len(i.value) for i in ex._images.values()) / 1e6, 2),
            "stacks": len(ex.levels), "agents": " and the ".join(who.label for who in ex.kinds if who),
            "states": ex.n_states, "methods": len(ex.methods), "targets": len(TARGETS), "alphas": len(ALPHAS)}
