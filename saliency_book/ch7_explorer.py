"""Chapter 7 (Explorer): browse the saliency maps by game, agent, state, method, target and overlay strength.

The chapter's notebook (``notebooks/07_explorer.py``) only calls these functions.

* :class:`ExplorerChapter`: the chapter's frozen configuration.
* :class:`Explorer`: the ipywidgets explorer. :func:`explorer` builds it.

**Static and live.** The book is static HTML without a kernel, so the explorer
embeds a small grid of pre-rendered images: the chapter's game, both agents, the
first ``n_states`` HIGHLIGHTS-DIV states of chapter 2 (:mod:`~saliency_book.ch2_gallery`,
whose cached maps it reuses), every method, the targets of
:data:`~saliency_book.ch2_gallery.TARGETS` and the overlay strengths of :data:`ALPHAS`.
The images sit in nested ``ipywidgets.Stack`` containers; each control's ``index``
is linked to the ``selected_index`` of its level with :func:`ipywidgets.jslink`, a link
that the browser runs, so the saved widget state switches images with no kernel.
Combinations outside the grid (another game, one particular action) show a note
on the static page. In Jupyter, observers on the same controls compute them on demand
(cached like every map) and show them below the controls instead of the grid.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, fields

import numpy as np

from saliency_book.common import (
    METHODS,
    TARGET_FREE,
    TARGET_LABELS,
    TARGETS,
    Note,
    action_names,
    as_count,
    chapter_agents,
    load,
)
from saliency_book.maps import (
    ExampleMapsConfig,
    StateSelection,
    applicable_methods,
    highlight_states,
    overlay_map,
    saliency_map,
)
from saliency_lib.explainers import METHOD_LABELS
from saliency_lib.games import valid_games

__all__ = ["ALPHAS", "STATIC_STATES", "ExplorerChapter", "Explorer", "explorer", "explorer_summary", "explorer_games",
           "encode_image", "colour_legend"]

ALPHAS = (0.35, 0.7, 1.0)
"""Overlay strengths: the blend weight of the colour map where the saliency is 1 (see :func:`saliency_lib.viz.overlay`)."""
STATIC_STATES = 3
"""Default number of states embedded in the static page (each adds about 2 × methods × targets × alphas images)."""


@dataclass(frozen=True)
class ExplorerChapter(ExampleMapsConfig):
    """Configuration of chapter 7; every field is a parameter of the notebook.

    The states are chapter 2's HIGHLIGHTS-DIV states of the same profile and seed, so
    their maps for the agent's action come from chapter 2's cache.
    """

    n_states: int | None = None
    """States embedded in the static page (most important first); None: :data:`STATIC_STATES`,
    at most the states chapter 2 chooses."""

    USED = ("highlight_states", "eval_max_steps")

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "n_states", as_count(self.n_states, "n_states"))

    @property
    def selection(self) -> StateSelection:
        """Chapter 2's default selection for this profile and seed."""
        budget = self.settings["highlight_states"]
        return StateSelection(trajectory=self.trajectory, budget=budget, seed=self.seed)

    @property
    def shown(self) -> int:
        """States embedded in the static page (at most)."""
        return min(self.n_states or STATIC_STATES, self.selection.budget)

    def _repr_markdown_(self) -> str:
        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self) if f.name != "settings")
        used = ", ".join(f"`{k}={self.settings[k]!r}`" for k in self.USED)
        coarse = " Coarse method parameters (CI only)." if self.explainer_params else ""
        return (f"**Parameters:** {params}.\n\n**From the profile `{self.profile}`:** {used}: the first {self.shown} of "
                f"chapter 2's HIGHLIGHTS-DIV states (of a {self.trajectory}-state greedy trajectory), "
                f"{len(ALPHAS)} overlay strengths.{coarse}\n")


def explorer_games(cfg: ExplorerChapter) -> list[str]:
    """The chapter's game first, then every other game with a DQN or official Mask-A3C agent."""
    others = [g for g in valid_games() if g != cfg.game and any(chapter_agents(g, results_dir=cfg.results_dir))]
    return [cfg.game] + others


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


@dataclass
class _AgentData:
    """What the explorer needs of one (game, agent kind): the agent, its states and names."""

    who: object
    agent: object
    states: object
    methods: tuple[str, ...]
    actions: tuple[str, ...]


def _not_applicable(d: _AgentData, method: str, target) -> str:
    """Why ``method`` has no map of ``target`` for the agent of ``d``."""
    if target == "value" and "value" not in d.agent.outputs:
        return f"The {d.who.label} has no state value to explain."
    what = TARGET_LABELS.get(target, "this target") if isinstance(target, str) else "this action"
    return f"{METHOD_LABELS.get(method, method)} cannot explain the {what} of the {d.who.label}."


class Explorer:
    """The explorer widget: controls, the static grid of pre-rendered images and the live view.

    Parameters
    ----------
    cfg : ExplorerChapter
    games : list of str, optional
        Games of the game menu (default :func:`explorer_games`). Only ``cfg.game`` is
        pre-rendered; the others are computed live.

    Attributes
    ----------
    widget : ipywidgets.VBox
        What the notebook displays.
    levels : dict
        Model id of every ``Stack`` of the static grid → name of the control in
        :attr:`controls` whose ``index`` is linked to its ``selected_index``.
    links : list of ipywidgets.Link
        Those links (they run in the browser).
    stats : dict
        ``images`` (distinct embedded images), ``bytes`` (their total size), ``stacks``
        and ``links`` (JavaScript links), ``states``, ``methods``, ``targets``, ``alphas``.
    """

    def __init__(self, cfg: ExplorerChapter, *, games: list[str] | None = None):
        import ipywidgets as w

        self.cfg = cfg
        self.games = list(games) if games else explorer_games(cfg)
        self.kinds = chapter_agents(cfg.game, cfg.agent, results_dir=cfg.results_dir)
        self.methods = cfg.methods or METHODS
        self._data: dict[tuple[str, int], _AgentData | None] = {}
        self._images: dict[str, w.Image] = {}
        self._notes: dict[str, w.HTML] = {}
        self._static: set[tuple] = set()
        self.levels: dict[str, str] = {}  # model id of each Stack -> the control linked to it
        self.links: list = []
        self.stats = {"images": 0, "bytes": 0, "stacks": 0, "links": 0, "states": 0, "methods": len(self.methods),
                      "targets": len(TARGETS), "alphas": len(ALPHAS)}
        self._img_layout = w.Layout(width="240px")
        self._box_layout = w.Layout()  # one layout model shared by every stack
        first = next((k for k, who in enumerate(self.kinds) if who), 0)
        names = next((d.actions for k in range(len(self.kinds)) if (d := self._agent_data(cfg.game, k))), ())
        self._names, self._busy = names, False
        self.controls = {
            "game": w.Dropdown(options=self.games, index=0, description="game"),
            "agent": w.Dropdown(options=[who.label for who in self.kinds], index=first, description="agent"),
            "state": w.SelectionSlider(options=[str(k + 1) for k in range(max(self._n_states(), 1))], index=0,
                                       description="state"),
            "method": w.Dropdown(options=[METHOD_LABELS.get(m, m) for m in self.methods], index=0, description="method"),
            "target": w.Dropdown(options=[TARGET_LABELS[t] for t in TARGETS] + [f"action {a}" for a in names], index=0,
                                 description="target"),
            "alpha": w.SelectionSlider(options=[f"{a:g}" for a in ALPHAS], index=ALPHAS.index(0.7), description="overlay α"),
        }
        self._live_img = w.Image(format="webp", layout=self._img_layout)
        self._live_info = w.HTML()
        grid = self._stack("game", [self._agents_node() if g == cfg.game else self._note(
            "Not pre-rendered for the static page: run this chapter in Jupyter to compute it.") for g in self.games])
        self.display = w.Stack(children=[grid, w.VBox([self._live_info, self._live_img])], selected_index=0)
        c = self.controls
        self.widget = w.VBox([w.HBox([c["game"], c["agent"]]), w.HBox([c["method"], c["target"]]),
                              w.HBox([c["state"], c["alpha"]]), self.display, w.HTML(colour_legend())])
        self.stats["states"] = self._n_states()
        self.stats["links"] = len(self.links)
        for name in ("game", "agent", "state", "method", "target", "alpha"):
            c[name].observe(self._on_change, names="index")

    @property
    def static_keys(self) -> frozenset[tuple[int, ...]]:
        """Control indices (game, agent, state, method, target, alpha) that the static grid holds an image for."""
        return frozenset(self._static)

    def _repr_mimebundle_(self, **kwargs):  # a notebook shows the widget
        return self.widget._repr_mimebundle_(**kwargs)

    # -- data ----------------------------------------------------------------------------
    def _n_states(self) -> int:
        return max((len(d.states) for k in range(len(self.kinds)) if (d := self._agent_data(self.cfg.game, k))),
                   default=0)

    def _agent_data(self, game: str, kind: int) -> _AgentData | None:
        """The agent of ``kind`` for ``game`` with its first ``cfg.shown`` states (None: missing)."""
        key = (game, kind)
        if key not in self._data:
            who = chapter_agents(game, self.cfg.agent if game == self.cfg.game else None,
                                 results_dir=self.cfg.results_dir)[kind]
            if not who:
                self._data[key] = None
            else:
                agent = load(who.spec, self.cfg.device)
                states = highlight_states(agent, who.spec, self.cfg.selection, results_dir=self.cfg.results_dir)
                states = states.subset(list(range(min(self.cfg.shown, len(states)))))
                self._data[key] = _AgentData(who, agent, states, applicable_methods(agent, self.methods),
                                             action_names(agent.game, agent.preset, agent.n_actions))
        return self._data[key]

    def _map(self, d: _AgentData, i: int, method: str, target):
        return saliency_map(d.agent, d.who.spec, d.states, i, method, target, params=self.cfg.explainer_params,
                            results_dir=self.cfg.results_dir)

    # -- static grid ---------------------------------------------------------------------
    def _stack(self, control: str, children: list):
        import ipywidgets as w

        s = w.Stack(children=children, selected_index=self.controls[control].index, layout=self._box_layout)
        self.links.append(w.jslink((self.controls[control], "index"), (s, "selected_index")))
        self.levels[s.model_id] = control
        self.stats["stacks"] += 1
        return s

    def _note(self, text: str):
        import ipywidgets as w

        if text not in self._notes:
            self._notes[text] = w.HTML(f'<div style="width:420px;padding:1em;color:#555;font-style:italic">{text}</div>')
        return self._notes[text]

    def _image(self, data: bytes):
        import ipywidgets as w

        key = hashlib.sha256(data).hexdigest()
        if key not in self._images:  # identical images (target-free maps) share one widget
            self._images[key] = w.Image(value=data, format="webp", layout=self._img_layout)
            self.stats["images"] += 1
            self.stats["bytes"] += len(data)
        return self._images[key]

    def _agents_node(self):
        return self._stack("agent", [self._states_node(k) for k in range(len(self.kinds))])

    def _states_node(self, kind: int):
        import ipywidgets as w

        d = self._agent_data(self.cfg.game, kind)
        if d is None:
            return self._note(self.kinds[kind].missing)
        children = []
        for i in range(len(self.controls["state"].options)):
            if i >= len(d.states):
                children.append(self._note(f"The {d.who.label} has only {len(d.states)} chosen states."))
                continue
            frame = self._image(encode_image(d.states.frames[i]))
            children.append(w.VBox([w.HTML(self._state_info(d, i)),
                                    w.HBox([frame, self._methods_node(d, kind, i)])]))
        return self._stack("state", children)

    def _state_info(self, d: _AgentData, i: int) -> str:
        s, imp = d.states, d.states.meta["importance"][i]
        scores = s.outputs.get("q", s.outputs.get("logits"))[i].numpy()
        runner = int(np.argsort(-scores, kind="stable")[1])
        return (f"<b>{d.who.label[0].upper() + d.who.label[1:]}, {d.who.game}, state {i + 1}</b>: step "
                f"{int(s.steps[i])} of game {int(s.episode[i]) + 1}; the agent plays <b>{d.actions[int(s.actions[i])]}</b>, "
                f"runner-up {d.actions[runner]}; HIGHLIGHTS importance {imp:.3g}.")

    def _methods_node(self, d: _AgentData, kind: int, i: int):
        children = []
        for m in self.methods:
            if m not in d.methods:
                children.append(self._note(f"{METHOD_LABELS.get(m, m)} cannot explain the {d.who.label}."))
            elif m in TARGET_FREE:
                children.append(self._alphas_node(d, kind, i, m, None))
            else:
                children.append(self._targets_node(d, kind, i, m))
        return self._stack("method", children)

    def _targets_node(self, d: _AgentData, kind: int, i: int, m: str):
        children = [self._alphas_node(d, kind, i, m, t) for t in TARGETS]
        extra = len(self.controls["target"].options) - len(TARGETS)
        children += [self._note("Not pre-rendered for the static page: run this chapter in Jupyter to compute "
                                "the map of a particular action.")] * extra
        return self._stack("target", children)

    def _alphas_node(self, d: _AgentData, kind: int, i: int, m: str, target):
        mp = self._map(d, i, m, target or "action")
        if mp is None:
            return self._note(_not_applicable(d, m, target))
        images = [self._image(encode_image(overlay_map(d.states.frames[i], mp, preset=d.agent.preset, game=d.who.game,
                                                       alpha=a))) for a in ALPHAS]
        m_i = self.methods.index(m)
        for t_i, t in enumerate(TARGETS):
            if target is None or t == target:
                for a_i in range(len(ALPHAS)):
                    self._static.add((0, kind, i, m_i, t_i, a_i))
        return self._stack("alpha", images)

    # -- live ---------------------------------------------------------------------------
    def selection(self) -> dict:
        """The controls' current choice: game, agent kind index, state, method, target, alpha."""
        c = self.controls
        t = c["target"].index
        return {"game": self.games[c["game"].index], "kind": c["agent"].index, "state": c["state"].index,
                "method": self.methods[c["method"].index], "target": TARGETS[t] if t < len(TARGETS) else t - len(TARGETS),
                "alpha": ALPHAS[c["alpha"].index]}

    def _relabel_targets(self) -> None:
        """Name the target menu's actions after the selected agent's game (live only)."""
        c = self.controls
        d = self._agent_data(self.games[c["game"].index], c["agent"].index)
        names = d.actions if d else self._names
        labels = tuple(TARGET_LABELS[t] for t in TARGETS) + tuple(f"action {a}" for a in names)
        if labels != tuple(c["target"].options):
            index = c["target"].index
            self._busy = True
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
        key = tuple(c[n].index for n in ("game", "agent", "state", "method", "target", "alpha"))
        if key in self._static:
            self.display.selected_index = 0
            return
        self.display.selected_index = 1
        self._live_info.value = "<i>computing…</i>"
        self._live_img.value = b""
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
        if m not in d.methods:
            return f"{METHOD_LABELS.get(m, m)} cannot explain the {d.who.label}."
        if isinstance(target, int) and target >= len(d.actions):
            return f"{sel['game']} has only {len(d.actions)} actions for the {d.who.label}."
        mp = self._map(d, i, m, target)
        if mp is None:
            return _not_applicable(d, m, target)
        self._live_img.value = encode_image(overlay_map(d.states.frames[i], mp, preset=d.agent.preset, game=d.who.game,
                                                        alpha=sel["alpha"]))
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


def explorer_summary(ex: Explorer | Note):
    """Markdown: what the static page embeds (generated from :attr:`Explorer.stats`)."""
    from IPython.display import Markdown

    if isinstance(ex, Note):
        return ex
    s = ex.stats
    agents = [who.label for who in ex.kinds if who]
    return Markdown(
        f"The page embeds {s['images']} distinct images ({s['bytes'] / 1e6:.2f} MB as WebP) in {s['stacks']} "
        f"nested stacks, each linked to its control in JavaScript: {ex.cfg.game}, the {' and the '.join(agents)}, "
        f"{s['states']} state{'s' if s['states'] != 1 else ''}, {s['methods']} methods, {s['targets']} targets and "
        f"{s['alphas']} overlay strengths (maps that do not depend on the target are stored once).")
