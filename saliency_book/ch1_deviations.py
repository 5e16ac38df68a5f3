"""Chapter 1: where this study deviates from Huber et al. and Itaya et al. (:mod:`saliency_study.deviations`).

The tables are the study's; here the profile's coarser explainer parameters are worded for the methods
table, and both tables are shown.
"""

from __future__ import annotations

import html
import re

import pandas as pd

from saliency_book.common import describe_params
from saliency_lib.explainers import method_label
from saliency_study import deviations
from saliency_study.deviations import training_table
from saliency_study.profiles import sweep_sizes

__all__ = ["training_table", "methods_table", "show_training", "show_methods"]


def _coarse(profile: str) -> str | None:
    """The profile's coarser explainer parameters, as the ``{coarse}`` field of the methods table."""
    parts = [f"{who}: {describe_params(dict(p), label=method_label)}"
             for kind, who in (("dqn", "DQN agents"), ("mask_a3c", "Mask-A3C agents"))
             if (p := sweep_sizes(profile, kind).params)]
    if not parts:
        return None
    full = "" if any(sweep_sizes("full", k).params for k in ("dqn", "mask_a3c")) else " Profile `full`: all at the paper's."
    return f"coarser in profile `{profile}`: " + "; ".join(parts) + ". Every other method at the paper's." + full


def methods_table(profile: str = "quick") -> pd.DataFrame:
    """:func:`saliency_study.deviations.methods_table` for ``profile``, its coarser parameters in words."""
    return deviations.methods_table(profile, coarse=_coarse(profile))


def _styled(t: pd.DataFrame, caption: str):
    # The cells hold Markdown-style `code`; the Styler writes raw HTML, so make it <code> (after escaping the text).
    t = t.map(lambda v: re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(str(v), quote=False)))
    return (t.style.hide(axis="index").set_caption(caption)
            .set_table_styles([{"selector": "td, th", "props": "text-align: left; vertical-align: top;"}]))


def show_training(table: pd.DataFrame, caption: str, *, matching: bool = False):
    """The settings of :func:`training_table` that deviate (or, ``matching``, that match the paper's) as a Styler."""
    t = table[table["deviates"] != matching]
    cols = {"Agents": [f"Our {a} vs {p}" for p, a in zip(t["paper"], t["agents"])], "Setting": t["setting"]}
    if matching:
        return _styled(pd.DataFrame({**cols, "Theirs and ours (reference notes §)": t["theirs"]}), caption)
    return _styled(pd.DataFrame({**cols, "Theirs (reference notes §)": t["theirs"], "Ours (shipped agents' meta.json)":
                                 t["ours"], "Why / expected effect": t["why"]}), caption)


def show_methods(table: pd.DataFrame, caption: str):
    """:func:`methods_table` as a captioned Styler."""
    return _styled(table.rename(columns={
        "component": "Explainer or metric", "kind": "Kind", "theirs": "Huber et al. / Itaya et al. (reference notes §)",
        "ours": "Ours", "why": "Why / expected effect", "documented in": "Documented in"}), caption)
