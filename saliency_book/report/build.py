"""One agent's report: its sweep, then the book's chapters executed for it into a small book of its own.

:func:`build_report` runs three steps, and logs each:

1. **Estimate.** The sweep units of the report's agents (:func:`report_specs`) that are not stored
   yet, priced at the measured per-state costs (:func:`saliency_study.cost.estimate_sweep`), and a
   notice when the agent's network runs with full forward passes.
2. **Sweep.** Those units, under the plan's executor, with a progress bar
   (:func:`saliency_lib.sweep.run_sweep`). They are stored beside the study's, so a second report on
   the same agent computes none of them again.
3. **Book.** :func:`~saliency_book.builder.builder.build_book` executes the report's front page
   (``notebooks/_agent_report.py``: scores, the sanity verdicts beside the study's agent and the
   paper, the rankings, a video, the configuration) and the chapters of :data:`REPORT_CHAPTERS`
   with the agent as their ``agent`` parameter, then builds the HTML with the book's own
   configuration and offline assets, and checks that every page loads only local files.

The report lies in ``<out>/book/_build/html`` (``<out>/index.html`` redirects there); the executed
notebooks in ``<out>/book/chapters``.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from saliency_book.builder.builder import BOOK_SOURCES, BookBuild, build_book
from saliency_study.paths import repo_path

from .plan import ReportPlan

__all__ = ["REPORT_PAGE", "REPORT_CHAPTERS", "ReportBuild", "report_specs", "report_toc", "run_report_sweep",
           "build_report"]

REPORT_PAGE = "notebooks/_agent_report.py"
"""The report's front page (its name starts with ``_``, so the study's book does not list it)."""
REPORT_CHAPTERS = ("notebooks/02_gallery.py", "notebooks/03_sanity.py", "notebooks/04_degradation.py",
                   "notebooks/07_explorer.py")
"""The book's chapters that the report executes for its agent: the gallery, the sanity checks, insertion
and deletion, and the explorer of the gallery's maps (the gallery links to it)."""
APPENDIX = ("reproduce", "references")
"""The book's pages the report keeps: how to reproduce a result, and the bibliography the chapters cite."""


@dataclass
class ReportBuild:
    """What :func:`build_report` did: the book build, the estimate it started from, and the report's entry page."""

    book: BookBuild
    estimate: object
    """The :class:`~saliency_study.cost.SweepEstimate` before the sweep."""
    index: Path | None
    """``<out>/index.html`` (None without HTML)."""


def report_specs(plan: ReportPlan) -> list:
    """The sweep specs the report's chapters read: every experiment of the plan's agent, and the sanity
    checks of the agent that chapter 3 shows beside it (the study's agent of the other kind, where it exists)."""
    from saliency_book.common import chapter_agents
    from saliency_study.study import profile_specs

    def specs(agent: str, experiments: tuple[str, ...] | None = None) -> list:
        out = profile_specs(plan.profile, plan.game, agents=[agent], seed=plan.seed, results_dir=plan.results_dir,
                            n_states=plan.n_states, methods=plan.methods)
        return out if experiments is None else [dataclasses.replace(s, experiments=experiments) for s in out]

    beside = [a.spec for a in chapter_agents(plan.game, plan.spec, results_dir=plan.results_dir)
              if a and a.spec != plan.spec]
    return specs(plan.spec) + [s for a in beside for s in specs(a, ("sanity",))]


def report_toc(page: str, chapters: list[str]) -> str:
    """The report's table of contents: its front page as the root, the chapters, then :data:`APPENDIX`."""
    lines = ["# The table of contents of one agent's report (saliency_book.report.build).", "format: jb-book",
             f"root: chapters/{page}", "parts:", "  - caption: The agent's explanations", "    numbered: true",
             "    chapters:"]
    lines += [f"      - file: chapters/{c}" for c in chapters]
    lines += ["  - caption: Reproducing the study", "    chapters:"] + [f"      - file: {p}" for p in APPENDIX]
    return "\n".join(lines) + "\n"


def _stage(plan: ReportPlan, dest: Path) -> Path:
    """The book's sources under ``dest/book`` with the report's table of contents and title."""
    src, book = repo_path("book"), dest / "book"
    book.mkdir(parents=True, exist_ok=True)
    for pattern in BOOK_SOURCES:
        for p in src.glob(pattern):
            (shutil.copytree(p, book / p.name, dirs_exist_ok=True) if p.is_dir() else shutil.copy2(p, book / p.name))
    (book / "_toc.yml").write_text(report_toc(Path(REPORT_PAGE).stem, [Path(c).stem for c in REPORT_CHAPTERS]))
    config = (book / "_config.yml").read_text().splitlines()
    title = f'title: "Explaining {plan.spec.replace(chr(34), chr(39))}"'
    (book / "_config.yml").write_text("\n".join(title if line.startswith("title:") else line for line in config) + "\n")
    return book


def run_report_sweep(plan: ReportPlan, *, log: Callable[[str], None], progress: bool = True):
    """Estimate, then run, the report's sweep units that are not stored; returns the estimate."""
    from saliency_lib.sweep import run_sweep
    from saliency_study.cost import estimate_sweep

    specs = report_specs(plan)
    est = estimate_sweep(specs, results_dir=plan.results_dir)
    log(f"[report] {plan.spec}: {est.line()}")
    for agent, why in est.full_passes.items():
        log(f"[report] notice: {agent}: incremental inference does not support this network ({why}); the explainers "
            "and metrics use full forward passes, which the estimate prices")
    if est.missing:
        for spec in specs:
            run_sweep(spec, executor=plan.executor, results_dir=plan.results_dir, progress=progress)
    return est


def build_report(plan: ReportPlan, *, log: Callable[[str], None] | None = None, html: bool = True, force: bool = False,
                 progress: bool = True, kernel_name: str = "python3", timeout: float | None = 4 * 3600) -> ReportBuild:
    """Build the report of ``plan`` (see the module notes) under ``plan.out``.

    Raises
    ------
    ChapterError
        A page failed to execute (the partly executed notebook is kept, the message says where).
    RuntimeError
        The HTML build failed, or a page loads a file that is not in the report.
    """
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    est = run_report_sweep(plan, log=log, progress=progress)
    plan.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="report-src-", dir=plan.out) as tmp:
        book = build_book(plan.profile, book_dir=_stage(plan, Path(tmp)), build_dir=plan.out,
                          sources=[REPORT_PAGE, *REPORT_CHAPTERS], parameters=plan.parameters, games=[], sweep=False,
                          executor=plan.executor, results_dir=plan.results_dir, force=force, html=html,
                          kernel_name=kernel_name, timeout=timeout, log=log,
                          inputs={"agent": plan.spec, "sha256": plan.sha256})
    index = None
    if book.html_dir is not None:
        index = plan.out / "index.html"
        target = book.html_dir.relative_to(plan.out).as_posix() + "/index.html"
        index.write_text(f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Report</title>'
                         f'<meta http-equiv="refresh" content="0; url={target}"></head>'
                         f'<body><a href="{target}">The report</a></body></html>\n')
    return ReportBuild(book, est, index)
