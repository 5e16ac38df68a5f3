"""The book pipeline: ``saliency-study book [--profile quick|full|tiny] [--only NOTEBOOK]``.

:func:`build_book` runs its steps and prints the time of each:

1. **Assets.** :func:`~saliency_book.builder.assets.install_assets` puts the offline JavaScript into
   ``book/_offline/vendor/``.
2. **Sweep.** The study's stored results for each game of the build (:mod:`saliency_study.study`).
3. **Chapters.** Each ``notebooks/*.py`` (jupytext) is converted to ``notebooks/*.ipynb`` and
   executed by papermill on the kernel of *this* interpreter (:func:`resolve_kernel`) into
   ``book/chapters/``. A failing cell raises :class:`ChapterError`; the failed notebook is kept under
   ``book/_build/failed/``. A chapter whose inputs (source, parameters, code, data files, stored
   results, official checkpoints) are unchanged is not executed again. With several games, each
   chapter of :data:`~saliency_book.builder.pages.PER_GAME_CHAPTERS` gets a page per further game.
4. **HTML.** ``jupyter-book build book`` (execution off, warnings as errors, nitpicky) into
   ``book/_build/html``; every page is then checked for external or broken resources
   (:func:`~saliency_book.builder.offline.check_offline`).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from saliency_book.builder.assets import install_assets, write_if_changed
from saliency_book.builder.offline import check_offline
from saliency_book.builder.pages import book_games, game_page, page_games, toc_with_game_pages
from saliency_study.paths import AGENT_SCORES_CSV, AGENTS_DIR, OFFICIAL_SCORES_CSV, REPO_ROOT, RESULTS_DIR, repo_path
from saliency_study.profiles import PROFILE_NAMES

__all__ = ["build_book", "BookBuild", "ChapterError", "resolve_kernel", "list_notebooks", "add_book_parser", "run_book"]

EXECUTORS = ("local", "processes", "ray")
"""Where the sweep runs: :data:`saliency_lib.sweep.EXECUTORS`, spelt out so that the command line starts without torch."""
BOOK_SOURCES = ("_config.yml", "_toc.yml", "*.md", "*.bib", "*.svg", "*.png", "_static", "_templates")
_META_KEY = "saliency_study"


class ChapterError(RuntimeError):
    """A chapter failed to execute; ``notebook`` is the partly executed copy."""

    def __init__(self, message: str, notebook: Path | None = None):
        super().__init__(message)
        self.notebook = notebook


@dataclass
class BookBuild:
    """What :func:`build_book` did."""

    profile: str
    html_dir: Path | None
    chapters: dict[str, dict] = field(default_factory=dict)
    """Chapter name → ``{"path", "executed", "seconds"}``."""
    timings: dict[str, float] = field(default_factory=dict)
    """Step → seconds (``assets``, ``chapters``, ``html``, ``check``, ``total``)."""


def list_notebooks(notebooks_dir: str | os.PathLike = "notebooks") -> list[Path]:
    """The chapter sources ``notebooks/*.py``, in file-name order."""
    d = repo_path(notebooks_dir)
    return sorted(p for p in d.glob("*.py") if not p.name.startswith(("_", ".")))


def resolve_kernel(name: str = "python3") -> str:
    """Check that the Jupyter kernel ``name`` runs this interpreter and return ``name``.

    The venv's own ``python3`` kernelspec has ``argv[0] == "python"``, which jupyter_client replaces
    by ``sys.executable``; a user-level kernelspec of the same name that points at another
    interpreter would shadow it, and raises ``RuntimeError`` (as does a missing kernelspec).
    """
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
    from jupyter_client.manager import KernelManager

    ksm = KernelSpecManager()
    try:
        spec = ksm.get_kernel_spec(name)
    except NoSuchKernel as e:
        raise RuntimeError(f"no Jupyter kernel {name!r}; install ipykernel into this environment "
                           f"({sys.executable} -m pip install ipykernel)") from e
    km = KernelManager(kernel_name=name, kernel_spec_manager=ksm)
    cmd = km.format_kernel_cmd()
    exe = shutil.which(cmd[0]) or cmd[0]
    if os.path.abspath(exe) != os.path.abspath(sys.executable):
        raise RuntimeError(
            f"kernel {name!r} ({spec.resource_dir}) runs {exe}, not this interpreter {sys.executable}; "
            f"remove the shadowing kernelspec (jupyter kernelspec remove {name}) or pass another kernel_name"
        )
    return name


def book_files(package: str = "saliency_book") -> list[Path]:
    """A package's code and data files (``<package>/**/*.py`` and ``*.yaml``): the book's and the study's shape
    every chapter (the study computes what the chapters show)."""
    return sorted(p for p in (REPO_ROOT / package).rglob("*") if p.suffix in (".py", ".yaml"))


def _sha_files(paths: Sequence[Path], root: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() if p.is_relative_to(root) else str(p).encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _table_digest(tables: Sequence) -> str:
    """SHA-256 of the rows of the sweep's tables (order and dtypes included)."""
    import pandas as pd

    h = hashlib.sha256()
    for t in tables:
        h.update(",".join(map(str, t.columns)).encode() + ",".join(map(str, t.dtypes)).encode())
        h.update(pd.util.hash_pandas_object(t, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _inputs_fingerprint(results_dir: str | os.PathLike, sweep: str | None = None) -> dict:
    """Hashes of what a chapter's output depends on besides its source and parameters.

    ``sweep`` is the digest of the sweep step's result table for the page's game (:func:`_table_digest`;
    None without the sweep step). Units a chapter computes itself are not part of it, so a rebuild does
    not see the chapter's own results as a changed input. The packs are: chapters 3 to 5 read the
    packed paper-scale study whatever the profile, and only a compaction writes them.
    """
    from saliency_lib.agents.official import official_dir

    lib = sorted((REPO_ROOT / "saliency_lib").rglob("*.py"))
    book = book_files()
    agents = repo_path(AGENTS_DIR)
    data = sorted(agents.glob("*/meta.json")) + [repo_path(AGENT_SCORES_CSV), repo_path(OFFICIAL_SCORES_CSV),
                                                 repo_path(results_dir) / "_local" / "study_agents.json"]
    data += sorted(repo_path("data/benchmarks").glob("*.json"))  # read by the runtime chapter
    off = official_dir()
    official = sorted(p for p in off.rglob("*") if p.is_file()) if off.is_dir() else []
    packs = sorted(p for p in (repo_path(results_dir) / "sweep" / "packs").glob("*/*.parquet")
                   if not p.name.startswith("."))  # not a pack being written (.tmp-*)
    study = book_files("saliency_study")  # the chapters' findings are computed there
    return {"library": _sha_files(lib, REPO_ROOT), "study": _sha_files(study, REPO_ROOT),
            "book": _sha_files(book, REPO_ROOT), "data": _sha_files(data, REPO_ROOT),
            "sweep": sweep,
            "packs": _sha_files(packs, REPO_ROOT),
            "official": [str(off)] + [f"{p.relative_to(off)}:{p.stat().st_size}" for p in official]}


def _key(source: str, parameters: Mapping, fingerprint: Mapping) -> str:
    blob = json.dumps({"source": source, "parameters": dict(parameters), "inputs": fingerprint,
                       "python": sys.executable, "format": 1}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _stage_sources(book_dir: Path, stage: Path) -> Path:
    """Copy the book's sources (not its outputs) to ``stage/book``."""
    dst = stage / "book"
    dst.mkdir(parents=True, exist_ok=True)
    for pattern in BOOK_SOURCES:
        for src in book_dir.glob(pattern):
            target = dst / src.name
            if src.is_dir():
                shutil.copytree(src, target, dirs_exist_ok=True)
            else:
                shutil.copy2(src, target)
    return dst


def _execute_chapter(py: Path, *, ipynb_dir: Path, chapters_dir: Path, failed_dir: Path, profile: str,
                     parameters: Mapping, results_dir, kernel: str, fingerprint: Mapping, force: bool,
                     timeout: float | None, log: Callable[[str], None], page_game: str | None = None) -> dict:
    """Execute one chapter (``page_game``: its page for that game, see :func:`~saliency_book.builder.pages.game_page`)."""
    import jupytext
    import nbformat
    import papermill as pm

    name = py.stem if page_game is None else f"{py.stem}-{page_game}"
    source = py.read_text()
    nb = jupytext.reads(source, fmt="py:percent")
    if page_game is not None:
        nb = game_page(nb, page_game)
        parameters = {**parameters, "game": page_game}
        source = nbformat.writes(nb)
    ipynb = ipynb_dir / f"{name}.ipynb"
    write_if_changed(ipynb, nbformat.writes(nb) + "\n")
    declared = pm.inspect_notebook(str(ipynb))
    if not declared:
        raise ChapterError(f"{py} has no cell tagged 'parameters'; every chapter needs one (profile, …)")
    wanted = {"profile": profile, **({"results_dir": str(results_dir)} if results_dir is not None else {}), **parameters}
    params = {k: v for k, v in wanted.items() if k in declared}
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        log(f"[book] {name}: ignoring parameters it does not declare: {', '.join(unknown)}")
    key = _key(source, params, fingerprint)
    out = chapters_dir / f"{name}.ipynb"
    if out.is_file() and not force:
        old = nbformat.read(out, as_version=4).metadata.get(_META_KEY, {})
        if old.get("key") == key:
            log(f"[book] {name}: up to date (executed {old.get('executed')}, {old.get('seconds', 0):.1f} s), not re-executed")
            return {"path": str(out), "executed": False, "seconds": 0.0}
    log(f"[book] {name}: executing with {params} …")
    tmp = failed_dir.parent / ".exec" / f"{name}.ipynb"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    try:
        pm.execute_notebook(str(ipynb), str(tmp), parameters=params, kernel_name=kernel, cwd=str(REPO_ROOT),
                            progress_bar=False, request_save_on_cell_execute=False, execution_timeout=timeout)
    except pm.PapermillExecutionError as e:
        failed_dir.mkdir(parents=True, exist_ok=True)
        kept = failed_dir / f"{name}.ipynb"
        if tmp.is_file():
            shutil.move(str(tmp), kept)
        raise ChapterError(f"chapter {name} failed in cell {e.exec_count}: {e.ename}: {e.evalue} "
                           f"(executed notebook kept at {kept})", kept) from e
    seconds = time.perf_counter() - t0
    done = _for_the_book(nbformat.read(tmp, as_version=4))
    done.metadata[_META_KEY] = {"key": key, "profile": profile, "parameters": params, "seconds": round(seconds, 1),
                                "executed": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(done, tmp)
    os.replace(tmp, out)
    log(f"[book] {name}: executed in {seconds:.1f} s")
    return {"path": str(out), "executed": True, "seconds": seconds}


def _for_the_book(nb):
    """Adjust an executed chapter for rendering: papermill's injected-parameters cell is removed (the
    configuration cell shows the effective values), and a figure caption is dropped from a cell that
    produced no image (e.g. a note that an input is missing)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.setdefault("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
        fig = cell.metadata.get("mystnb", {}).get("figure")
        images = any(k.startswith("image/") for o in cell.get("outputs", []) for k in o.get("data", {}))
        if fig is not None and not images:
            del cell.metadata["mystnb"]["figure"]
    return nb


# -- the pipeline -------------------------------------------------------------------------------

@contextmanager
def _timed(result: BookBuild, step: str, log: Callable[[str], None], what: str | None = None):
    """Time one step of the build into ``result.timings[step]`` and log it."""
    t0 = time.perf_counter()
    yield
    result.timings[step] = time.perf_counter() - t0
    log(f"[book] {what or step}: {result.timings[step]:.1f} s")


def build_book(profile: str = "quick", *, only: str | Sequence[str] | None = None, executor: str = "local",
               parameters: Mapping | None = None, book_dir: str | os.PathLike = "book",
               notebooks_dir: str | os.PathLike = "notebooks", build_dir: str | os.PathLike | None = None,
               results_dir: str | os.PathLike | None = None, force: bool = False, html: bool = True,
               kernel_name: str = "python3", timeout: float | None = 4 * 3600, ray_address: str | None = None,
               sweep: bool = True, games: Sequence[str] | None = None, log: Callable[[str], None] | None = None,
               sources: Sequence[str | os.PathLike] | None = None, inputs: Mapping | None = None) -> BookBuild:
    """Execute the chapters with papermill and build the HTML book.

    Parameters
    ----------
    profile : {"quick", "full", "tiny"}
        Execution profile passed to every chapter (:mod:`saliency_study.profiles`).
    only : str or list of str, optional
        Execute only these chapters (``"01_agents"`` or ``"01_agents.py"``); the others keep their
        executed notebooks (one that has none is executed too, since the HTML needs it).
    executor, ray_address : str
        Where the study's sweep runs before the chapters read its stored results (``ray``: an existing
        cluster at ``ray_address``, default ``$RAY_ADDRESS`` or a local Ray).
    sweep : bool
        Run the sweep step (False: chapters compute what they miss themselves, locally).
    parameters : mapping, optional
        Extra parameters for every chapter that declares them (e.g. ``{"game": "MsPacman"}``).
    games : list of str, optional
        Further games, each with its sweep and a page per chapter of
        :data:`~saliency_book.builder.pages.PER_GAME_CHAPTERS`; default the profile's.
    book_dir, notebooks_dir, build_dir : path
        Book sources, chapter sources, and where to build (default in place; else the book sources are
        copied to ``build_dir/book`` and the chapters and HTML go under it).
    results_dir : path, optional
        Passed to chapters as their ``results_dir`` parameter (default: theirs, ``data/results``).
    force, html : bool
        Execute chapters even when their inputs are unchanged; build the HTML (False: execute only).
    kernel_name, timeout, log
        Jupyter kernel (it must run this interpreter, :func:`resolve_kernel`), seconds a cell may run,
        progress messages (default: stderr).
    sources, inputs
        The chapter sources (default: :func:`list_notebooks` of ``notebooks_dir``), in the book's order;
        further inputs of every chapter's up-to-date check, e.g. the explained agent's weights hash
        (``saliency-study report``, :mod:`saliency_book.report`).

    Raises
    ------
    ChapterError
        A chapter raised; the message names the cell and the kept notebook.
    RuntimeError
        The kernel runs another interpreter, the HTML build fails, or a page loads an external or
        missing resource.
    """
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    if profile not in PROFILE_NAMES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles are: {', '.join(PROFILE_NAMES)}")
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; valid executors are: {', '.join(EXECUTORS)}")
    t_start = time.perf_counter()
    src_book = repo_path(book_dir)
    sources = list_notebooks(notebooks_dir) if sources is None else [repo_path(p) for p in sources]
    if not sources:
        raise FileNotFoundError(f"no chapter sources (*.py) in {repo_path(notebooks_dir)}")
    names = {p.stem for p in sources}
    selected = None
    if only:
        selected = {Path(o).stem for o in ([only] if isinstance(only, str) else only)}
        missing = sorted(selected - names)
        if missing:
            raise ValueError(f"unknown chapter(s) {missing}; chapters are: {', '.join(sorted(names))}")
    if build_dir is None:
        bdir, ipynb_dir = src_book, repo_path(notebooks_dir)
    else:
        bdir = _stage_sources(src_book, Path(build_dir))
        ipynb_dir = Path(build_dir) / "notebooks"
    chapters_dir, out_dir = bdir / "chapters", bdir / "_build"
    result = BookBuild(profile=profile, html_dir=None)

    with _timed(result, "assets", log):
        install_assets(bdir)
    all_games = book_games(profile, parameters, games)
    digests: dict[str, str] = {}  # game → digest of its sweep table: what that game's pages read
    if sweep:
        from saliency_study.study import study_results

        with _timed(result, "sweep", log, f"sweep ({executor}, {', '.join(all_games)})"):
            for game in all_games:
                digests[game] = _table_digest([study_results(profile, game, executor=executor, ray_address=ray_address,
                                                             results_dir=results_dir or RESULTS_DIR, progress=True)])
    kernel = resolve_kernel(kernel_name)
    log(f"[book] kernel {kernel!r} runs {sys.executable}")
    fingerprint = {**_inputs_fingerprint(results_dir or RESULTS_DIR), **({"extra": dict(inputs)} if inputs else {})}
    pages: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    for py in sources:
        pages[py.stem] = [f"{py.stem}-{g}" for g in page_games(py.stem, all_games)]
        for page_game in [None, *page_games(py.stem, all_games)]:
            name = py.stem if page_game is None else f"{py.stem}-{page_game}"
            out = chapters_dir / f"{name}.ipynb"
            if selected is not None and py.stem not in selected and out.is_file():
                log(f"[book] {name}: skipped (--only), keeping {out}")
                continue
            result.chapters[name] = _execute_chapter(
                py, ipynb_dir=ipynb_dir, chapters_dir=chapters_dir, failed_dir=out_dir / "failed", profile=profile,
                parameters=dict(parameters or {}), results_dir=results_dir, kernel=kernel,
                fingerprint={**fingerprint, "sweep": digests.get(page_game or all_games[0])},
                force=force or (selected is not None and py.stem in selected), timeout=timeout, log=log,
                page_game=page_game)
    result.timings["chapters"] = time.perf_counter() - t0
    log(f"[book] chapters: {result.timings['chapters']:.1f} s")

    if html:
        with _timed(result, "html", log, f"html -> {out_dir / 'html'}"):
            cmd = [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())",
                   "build", str(bdir), "--builder", "html", "--warningiserror", "--nitpick", "--keep-going", "--quiet"]
            if any(pages.values()):  # the game pages join the table of contents under their chapter
                cmd += ["--toc", str(toc_with_game_pages(bdir / "_toc.yml", pages, out_dir / "_toc.games.yml"))]
            proc = subprocess.run(cmd, cwd=str(bdir), capture_output=True, text=True)
            if proc.returncode != 0:
                tail = (proc.stdout + proc.stderr).strip()[-6000:]
                raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}):\n{tail}")
            result.html_dir = out_dir / "html"
        with _timed(result, "check", log, "offline check: every <script>/<link>/<img> of every page is a local file"):
            if problems := check_offline(result.html_dir):
                raise RuntimeError("the HTML is not self-contained:\n" + "\n".join(problems[:50]))
    result.timings["total"] = time.perf_counter() - t_start
    log(f"[book] total: {result.timings['total']:.1f} s (profile {profile})")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "timings.json").write_text(json.dumps(
        {"profile": profile, "timings_s": {k: round(v, 1) for k, v in result.timings.items()},
         "chapters": {k: {"executed": v["executed"], "seconds": round(v["seconds"], 1)} for k, v in result.chapters.items()},
         "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}, indent=2) + "\n")
    return result


# -- command line -------------------------------------------------------------------------------

def _param(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(value)
    except json.JSONDecodeError:
        pass
    if key == "game":  # checked before any work, in any case
        from saliency_lib.cli.checks import game_name

        value = game_name(str(value))
    return key, value


def _games(text: str) -> str:
    """``--games G1,G2`` (or ``none``), each game checked in any case; returned as the canonical list."""
    from saliency_lib.cli.checks import game_name

    names = [g.strip() for g in text.split(",") if g.strip()]
    return ",".join(g if g == "none" else game_name(g) for g in names)


def run_book(args: argparse.Namespace) -> int:
    """Entry point of ``saliency-study book``."""
    if getattr(args, "assets_only", False):
        print(install_assets(repo_path("book")))
        return 0
    try:
        games = None if args.games is None else [g.strip() for g in args.games.split(",") if g.strip() and g.strip() != "none"]
        b = build_book(args.profile, only=args.only, executor=args.executor, parameters=dict(args.param or []),
                       force=args.force, html=not args.no_html, ray_address=args.ray_address, games=games)
    except ChapterError as e:
        print(f"saliency-study book: {e}", file=sys.stderr)
        return 1
    if b.html_dir is None:
        return 0
    print(b.html_dir / "index.html")
    if getattr(args, "check", False):
        from saliency_book.builder.browser import check_book

        shots = repo_path("book") / "_build" / "screenshots"
        first = next(iter(b.chapters), None)
        screenshots = {"intro.html": "landing.png", **({f"chapters/{first}.html": f"full:chapter-{first}.png"} if first else {})}
        problems = [f"{r.page}: {p}" for r in check_book(b.html_dir, screenshots=screenshots, screenshots_dir=shots)
                    for p in r.problems]
        for p in problems:
            print(f"saliency-study book: {p}", file=sys.stderr)
        print(f"[book] browser check: {'OK' if not problems else f'{len(problems)} problems'}; screenshots in {shots}",
              file=sys.stderr)
        return 1 if problems else 0
    return 0


def add_book_parser(subparsers, func: Callable | None = None) -> argparse.ArgumentParser:
    """Add ``book`` to the ``saliency-study`` sub-commands (``func`` defaults to :func:`run_book`)."""
    p = subparsers.add_parser("book", help="execute the chapters (papermill) and build the HTML book (Jupyter Book)",
                              description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--profile", choices=PROFILE_NAMES, default="quick", help="execution profile (default: quick)")
    p.add_argument("--only", action="append", metavar="NOTEBOOK", help="execute only this chapter (repeatable), e.g. 01_agents")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="where the study's sweep runs before the chapters (default: local)")
    p.add_argument("--ray-address", default=None,
                   help="with --executor ray: an existing cluster (default $RAY_ADDRESS or a local Ray)")
    p.add_argument("--param", "-p", action="append", type=_param, metavar="KEY=VALUE",
                   help="extra chapter parameter, JSON-parsed when possible (repeatable), e.g. -p game=MsPacman")
    p.add_argument("--games", type=_games, default=None, metavar="G1,G2",
                   help="the further games, each with its sweep and a page per game chapter; replaces the "
                        "profile's (none, except full: the other benchmark games); 'none' for none")
    p.add_argument("--force", action="store_true", help="execute chapters even if their inputs are unchanged")
    p.add_argument("--no-html", action="store_true", help="execute the chapters only")
    p.add_argument("--check", action="store_true",
                   help="then load every page in headless Chromium (saliency_book.builder.browser) and save screenshots")
    p.add_argument("--assets-only", action="store_true", help="only fetch the offline JavaScript into book/_offline")
    p.set_defaults(func=func or run_book)
    return p
