"""Chapter 6 (Run-time): what each saliency map costs, how fast the trainers, environments and videos run.

The chapter reads the committed benchmark results in ``data/benchmarks/`` and does not re-run the benchmarks;
it only times one map per method on the study's own agents (:func:`spot_check`). The tables and numbers are
:mod:`saliency_study.runtime`'s and :mod:`saliency_study.scaleout`'s; here :func:`tabulate` turns a missing
benchmark into a :class:`~saliency_book.common.Note` that names the command measuring it, and
:mod:`saliency_book.ch6_scaleout` and :mod:`saliency_book.ch6_figures` show them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import MappingProxyType

import pandas as pd

from saliency_book.common import Note, join_words
from saliency_book.config import ChapterConfig
from saliency_lib.explainers import METHOD_LABELS
from saliency_study import runtime
from saliency_study.catalog import rel_path
from saliency_study.profiles import get_profile
from saliency_study.runtime import BENCHMARKS_DIR, Benchmarks, MissingBenchmark

__all__ = ["FAMILY_COLOURS", "RuntimeChapter", "tabulate", "regenerate_commands", "spot_check", "bf16_numbers"]

FAMILY_COLOURS = MappingProxyType({"perturbation": "tab:blue", "gradient": "tab:green", "attention mask": "tab:purple",
                                   "chance reference": "0.6"})


@dataclass(frozen=True)
class RuntimeChapter(ChapterConfig):
    """Configuration of chapter 6: the base's fields (``game``: of the spot check), then the chapter's own."""

    benchmarks_dir: str = BENCHMARKS_DIR
    """Directory of the committed benchmark JSON files."""

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.benchmarks_dir, (str, os.PathLike)) or not str(self.benchmarks_dir):
            raise ValueError(f"benchmarks_dir must be a non-empty path, got {self.benchmarks_dir!r}")

    @property
    def spot(self) -> dict:
        """The profile's spot check: ``methods`` (None: every benchmarked method and the masks) and ``states``."""
        prof = get_profile(self.profile)
        return {"methods": prof.runtime_methods, "states": prof.runtime_states}


def tabulate(table, b: Benchmarks) -> pd.DataFrame | Note:
    """``table(b)``, one of the study's benchmark tables, or the Note that says what is missing and which command
    measures it (an empty table: no benchmark file at all)."""
    d = rel_path(b.directory)
    try:
        t = table(b)
    except MissingBenchmark as e:
        run = f"Run `python benchmarks/{e.script.replace('.py', '.py --json ' + d + '/' + e.file, 1)}` to measure it."
        if e.part is None:
            return Note(f"No `{e.file}` in `{d}`. {run}", kind="warning", title="Benchmark missing")
        return Note(f"`{e.file}` records no {e.part}. {run}", title="Not recorded")
    return t if len(t) else Note(f"No benchmark results in `{d}`.", kind="warning", title="No benchmarks")


def regenerate_commands(b: Benchmarks):
    """:func:`saliency_study.runtime.regenerate_commands` as a Markdown block."""
    from IPython.display import Markdown

    return Markdown("```bash\n" + "\n".join(runtime.regenerate_commands(b)) + "\n```\n")


def spot_check(cfg: RuntimeChapter, b: Benchmarks) -> pd.DataFrame | Note:
    """:func:`saliency_study.runtime.spot_check` with the profile's methods and states, or a Note without an agent."""
    t = runtime.spot_check(cfg.game, states=cfg.spot["states"], methods=cfg.spot["methods"], seed=cfg.seed,
                           results_dir=cfg.results_dir, benchmarks=b)
    return t if t is not None else Note(
        f"No agent to time for {cfg.game}: no study DQN agent exists yet and the official Mask-A3C checkpoints are not "
        "fetched (`make fetch-official`).", title="No agent")


def bf16_numbers(table) -> dict:
    """:func:`saliency_study.runtime.bf16_summary` as the prose quotes it: ``bf16_agents``, ``bf16_states``, and in
    words ``bf16_kept``, ``bf16_not_kept``, ``bf16_faster``, ``bf16_defaults``, ``bf16_defaults_match`` ("NA" without
    a table)."""
    s = runtime.bf16_summary(table)
    if s is None:
        return {"bf16_agents": float("nan"), "bf16_states": float("nan"), **dict.fromkeys(
            ["bf16_kept", "bf16_not_kept", "bf16_faster", "bf16_defaults", "bf16_defaults_match"], "NA")}
    kinds, label = {"dqn": "the DQN agents", "mask_a3c": "the Mask-A3C agent"}, lambda m: METHOD_LABELS.get(m, m)
    return {"bf16_agents": s["agents"], "bf16_states": s["states"], "bf16_kept": join_words(map(label, s["kept"])),
            "bf16_not_kept": join_words(map(label, s["not_kept"])),
            "bf16_faster": join_words([f"{label(m)} on {kinds.get(k, k)} (×{x:.2f})" for k, m, x in s["faster"]]),
            "bf16_defaults": join_words([f"{label(m)} on {kinds.get(k, k)}" for k, m in s["defaults"]]),
            "bf16_defaults_match": "yes" if s["defaults_match"] else "no"}
