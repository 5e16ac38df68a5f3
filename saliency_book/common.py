"""What several chapters share: notes, the methods and targets they show, the explained agents, scores, figures."""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import pandas as pd

from saliency_book.config import as_int, as_optional
from saliency_lib.explainers import METHOD_LABELS, method_label
from saliency_study.catalog import official_available, study_agent
from saliency_study.paths import RESULTS_DIR
from saliency_study.scores import score_table

__all__ = [
    "Note", "METHODS", "TARGET_FREE", "TARGETS", "TARGET_LABELS", "as_count", "ExplainedAgent", "describe_agents",
    "chapter_agents", "action_names", "score_table", "figure_image", "png_tabs", "versions_note",
    "method_names", "fmt2", "join_words", "describe_params", "notes_pass", "sweep_table",
]

METHODS = ("occlusion", "ns_original", "ns_chosen", "sarfa", "rise", "lime_slic", "gradient", "integrated_gradients",
           "gradcam", "random", "mask_policy", "mask_value")
"""Registry names the gallery shows, in display order (``mask_*`` only for Mask-A3C agents)."""
TARGET_FREE = frozenset({"random", "mask_policy", "mask_value"})
"""Methods whose map does not depend on the explained output or action."""
TARGETS = ("action", "runner_up", "value")
"""Named targets: the agent's (greedy) action, the action with the second-highest score, the state value."""
TARGET_LABELS = MappingProxyType({"action": "agent's action", "runner_up": "runner-up action", "value": "state value"})


class Note:
    """A short message rendered as an admonition in the book: what chapter functions return instead of a
    table or figure when an input is missing, saying what is missing and how to get it."""

    def __init__(self, text: str, *, kind: str = "note", title: str | None = None):
        if kind not in ("note", "warning", "important", "tip"):
            raise ValueError(f"kind must be 'note', 'warning', 'important' or 'tip', got {kind!r}")
        self.text, self.kind, self.title = text, kind, title or kind.capitalize()

    def __bool__(self) -> bool:  # a Note stands for a missing result
        return False

    def __repr__(self) -> str:
        return f"{self.title}: {self.text}"

    def _repr_markdown_(self) -> str:
        # Markdown only (no HTML repr): myst-nb renders it as a MyST admonition.
        return f"```{{admonition}} {self.title}\n:class: {self.kind}\n\n{self.text}\n```\n"


def _png(fig, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def figure_image(fig, *, dpi: int = 110):
    """A matplotlib figure as an ``IPython.display.Image`` (PNG), so it displays once, in any kernel."""
    from IPython.display import Image

    return Image(data=_png(fig, dpi), format="png")


def png_tabs(pages: dict, *, dpi: int = 72):
    """An ipywidgets ``Tab``, one per key: a matplotlib figure as a PNG (saved with the notebook, so the
    tabs work in the static book without a kernel), or a :class:`Note` as HTML."""
    import html
    import re

    import ipywidgets as w

    children = []
    for page in pages.values():
        if isinstance(page, Note):
            text = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(page.text))  # the Note's Markdown code spans
            children.append(w.HTML(f"<p><b>{html.escape(page.title)}.</b> {text}</p>"))
        else:
            children.append(w.Image(value=_png(page, dpi), format="png", layout=w.Layout(max_width="100%")))
    tabs = w.Tab(children=children)
    for k, title in enumerate(pages):
        tabs.set_title(k, str(title))
    return tabs


def as_count(value, name: str) -> int | None:
    """A positive integer or None, accepting papermill's strings and whole floats (:func:`~saliency_book.config.as_int`)."""
    try:
        return None if as_optional(value) is None else as_int(name, value, minimum=1)
    except ValueError:
        raise ValueError(f"{name} must be a positive integer or None, got {value!r}") from None


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
    from saliency_lib.agents.official import OFFICIAL_GAMES

    given_official = bool(agent) and str(agent).startswith("official:")
    if agent and not given_official:
        dqn = ExplainedAgent("dqn", game, agent, "agent given as parameter")
    else:
        spec = study_agent(game, results_dir=results_dir)
        dqn = ExplainedAgent("dqn", game, spec, "DQN agent of the study", "" if spec else (
            f"No DQN agent for {game} yet: none is shipped in `data/agents` and none was trained for the study. "
            "This section fills in when one exists (chapter 1 trains one with `-p train true`)."))
    spec, missing = agent if given_official else f"official:{game}", ""
    if game not in OFFICIAL_GAMES:
        missing = f"Itaya et al. released no Mask-A3C checkpoint for {game} (they did for {', '.join(OFFICIAL_GAMES)})."
    elif not official_available(spec.partition(":")[2]):
        missing = "The official Mask-A3C checkpoints are not fetched; run `make fetch-official`."
    return [dqn, ExplainedAgent("mask_a3c", game, None if missing else spec, "official Mask-A3C agent", missing)]


@functools.cache
def action_names(game: str, preset: str, n_actions: int) -> tuple[str, ...]:
    """The ALE's names of the agent's actions (``"action k"`` when the counts disagree)."""
    from saliency_lib.envs import make_env

    env = make_env(game, preset)
    try:
        names = tuple(env.unwrapped.get_action_meanings())
    finally:
        env.close()
    return names if len(names) == n_actions else tuple(f"action {k}" for k in range(n_actions))


def join_words(items: list[str]) -> str:
    """"a, b and c" ("none" when empty)."""
    items = list(items)
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def method_names(methods) -> str:
    """Markdown list of methods in bold: "**A**, **B** and **C**" ("none" when empty)."""
    return join_words([f"**{METHOD_LABELS.get(m, m)}**" for m in methods])


def fmt2(x: float) -> str:
    """Two decimals with a true minus sign, for prose."""
    return f"{x:.2f}".replace("-", "−")


def describe_params(params: dict, *, label: Callable[[str], str] = str, sep: str = " = ") -> str:
    """Explainer parameters as text for the chapters, e.g. ``"Occlusion patch = 4, RISE n_masks = 500"``."""
    return ", ".join(f"{label(m)} {', '.join(f'{k}{sep}{v}' for k, v in kw.items())}" for m, kw in params.items())


def notes_pass(func):
    """A Note among the positional arguments is returned as is, so a missing input stays visible downstream."""
    @functools.wraps(func)
    def wrapper(*args, **kw):
        note = next((a for a in args if isinstance(a, Note)), None)
        return note if note is not None else func(*args, **kw)

    return wrapper


def sweep_table(profile: str, agents: Mapping[str, str] | Sequence[str], states: Mapping[str, int] | None = None
                ) -> pd.DataFrame | Note:
    """Per agent: the states its results cover (``states`` per spec, else the profile's count) and the
    explainer parameters coarser than Huber et al.'s final ones in ``profile``. ``agents``: specs, or
    ``{name: spec}`` (then a ``spec`` column follows the name)."""
    from saliency_study.catalog import agent_preset
    from saliency_study.profiles import sweep_sizes

    named = isinstance(agents, Mapping)
    rows = []
    for name, spec in (agents.items() if named else ((a, a) for a in agents)):
        n, _, params = sweep_sizes(profile, agent_preset(spec))
        rows.append({"agent": name, **({"spec": spec} if named else {}), "states": (states or {}).get(spec, n),
                     "coarser parameters": describe_params(params, label=method_label) if params else "none"})
    return pd.DataFrame(rows) if rows else Note("No agent is available for this game.", kind="warning", title="No agents")


def versions_note(profile: str, games, *, agents=None, results_dir=RESULTS_DIR):
    """Whether the stored results this chapter reads were made with the running package versions: a warning
    naming each differing package and how many units predate the recording, or a one-line note."""
    from saliency_study.study import study_versions

    games = [games] if isinstance(games, str) else list(games)
    v = study_versions(profile, games, agents=agents, results_dir=results_dir)
    if not v["units"]:
        return Note("No stored results yet: this chapter computes them with the running versions.", title="Versions")
    parts = []
    if v["differences"]:
        parts.append("Some stored results were made with other package versions than the running ones: " + "; ".join(
            f"**{name}** {', '.join(was)} (running: {now})" for name, (was, now) in v["differences"].items())
            + ". A number may differ if the chapter is recomputed with the running versions.")
    if v["unrecorded"]:
        parts.append(f"{v['unrecorded']} of the {v['units']} stored units were made before the study recorded package "
                     "versions, so their versions are unknown.")
    if not parts:
        return Note(f"All {v['units']} stored units of this chapter were made with the running package versions.",
                    title="Versions")
    return Note(" ".join(parts), kind="warning", title="Versions of the stored results")
