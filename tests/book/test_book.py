"""The book: its pipeline pieces, a tiny-profile build through the same code as
``make book``, and every page loaded in headless Chromium.

The build goes to a temporary directory (sources copied, results in a temporary
``results_dir``), so the test leaves ``book/chapters`` and ``data/results`` alone.
Screenshots go to ``book/_build/screenshots/``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import nbformat
import pandas as pd
import pytest

import saliency_book.builder.builder as bk
import saliency_book.builder.offline as offline
import saliency_book.builder.pages as pages
from saliency_book.ch1_agents import AgentsChapter
from saliency_study.cache import cached_json, cached_table
from saliency_study.catalog import record_study_agent, study_agent
from saliency_study.paths import REPO_ROOT
from saliency_study.profiles import PROFILES, profile_settings

SCREENSHOTS = REPO_ROOT / "book" / "_build" / "screenshots"


# -- pieces ------------------------------------------------------------------------------------

def test_profiles_share_their_settings_and_reject_unknown_ones():
    keys = {name: set(p.settings()) for name, p in PROFILES.items()}
    assert keys["tiny"] == keys["quick"] == keys["full"]
    assert profile_settings("tiny", episodes=None)["episodes"] == PROFILES["tiny"].episodes
    assert profile_settings("tiny", episodes=7)["episodes"] == 7
    with pytest.raises(ValueError, match="unknown profile 'fast'"):
        profile_settings("fast")
    with pytest.raises(ValueError, match="unknown profile settings"):
        profile_settings("quick", n_stats=3)


def test_chapter_config_accepts_papermill_strings():
    from saliency_book.ch2_gallery import GalleryChapter
    from saliency_book.ch7_explorer import ExplorerChapter
    from saliency_book.config import ChapterConfig

    cfg = AgentsChapter(train="true", frames=2e6, profile="tiny", agent="None", seed="3")
    assert cfg.train is True and cfg.frames == 2_000_000 and cfg.agent is None and cfg.seed == 3
    assert cfg.settings["train_frames"] == 2_000_000 and AgentsChapter(frames="None").frames is None
    assert "profile `tiny`:** `episodes=1`" in cfg._repr_markdown_()
    with pytest.raises(ValueError, match="train must be True or False"):
        AgentsChapter(train="maybe")
    with pytest.raises(ValueError, match="frames must be an integer >= 1"):
        AgentsChapter(frames=-5)
    with pytest.raises(ValueError, match="unknown game"):
        AgentsChapter(game="Tetris")
    for config in (AgentsChapter, GalleryChapter, ExplorerChapter):  # one base, one message
        assert issubclass(config, ChapterConfig)
        with pytest.raises(ValueError, match="seed must be an integer >= 0, got -1"):
            config(seed="-1")


def test_kernel_runs_this_interpreter():
    from jupyter_client.manager import KernelManager

    assert bk.resolve_kernel("python3") == "python3"
    assert KernelManager(kernel_name="python3").format_kernel_cmd()[0] == sys.executable
    with pytest.raises(RuntimeError, match="no Jupyter kernel"):
        bk.resolve_kernel("no-such-kernel")


def test_check_offline_flags_external_and_missing_resources(tmp_path):
    (tmp_path / "ok.css").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text(
        '<link rel="stylesheet" href="../ok.css?v=1"><script src="https://cdn.example.org/x.js"></script>'
        '<img src="missing.png"><img src="data:image/png;base64,AAAA"><a href="https://example.org">fine</a>')
    problems = offline.check_offline(tmp_path)
    assert len(problems) == 2, problems
    assert "external URL https://cdn.example.org/x.js" in problems[0]
    assert "missing.png, which does not exist" in problems[1]


def test_executed_chapter_is_adjusted_for_the_book():
    nb = nbformat.v4.new_notebook()
    injected = nbformat.v4.new_code_cell("profile = 'tiny'", metadata={"tags": ["injected-parameters"]})
    note = nbformat.v4.new_code_cell("f()", metadata={"mystnb": {"figure": {"caption": "A figure"}}})
    note.outputs = [nbformat.v4.new_output("execute_result", {"text/markdown": "missing input"})]
    fig = nbformat.v4.new_code_cell("g()", metadata={"mystnb": {"figure": {"caption": "B figure"}}})
    fig.outputs = [nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo="})]
    nb.cells = [injected, note, fig]
    out = bk._for_the_book(nb)
    assert "remove-cell" in out.cells[0].metadata["tags"]
    assert "figure" not in out.cells[1].metadata["mystnb"]
    assert out.cells[2].metadata["mystnb"]["figure"]["caption"] == "B figure"


def test_results_are_cached_by_config(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return pd.DataFrame({"x": [1, 2]})

    a = cached_table("t", {"n": 2}, compute, results_dir=tmp_path)
    b = cached_table("t", {"n": 2}, compute, results_dir=tmp_path)
    c = cached_table("t", {"n": 3}, compute, results_dir=tmp_path)
    assert len(calls) == 2 and a.equals(b) and b.attrs["cached"] and not c.attrs["cached"]
    from saliency_lib.versions import environment_versions

    assert json.loads((Path(a.attrs["cache"]) / "config.json").read_text()) == {"n": 2, "_versions": environment_versions()}
    value = {"scores": [1.0, 2.0], "mean": 1.5}
    assert cached_json("e", {"k": 1}, lambda: value, results_dir=tmp_path) == value
    assert cached_json("e", {"k": 1}, lambda: 1 / 0, results_dir=tmp_path) == value


def _fake_agent(agents_dir: Path, name: str, game: str, frames: int = 1_000_000) -> Path:
    d = agents_dir / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"algo": "dqn", "game": game, "preset": "dqn", "frames": frames, "seed": 0,
                                             "arch": "DQNNet", "config": {}, "sha256": "0" * 64}))
    return d


def test_all_scores_and_the_beats_random_counts(tmp_path):
    from saliency_book.ch1_agents import all_scores, show_scores
    from saliency_book.common import Note
    from saliency_study.scores import beats_random

    agents = tmp_path / "agents"
    cfg = AgentsChapter(agents_dir=str(agents))
    assert isinstance(all_scores(cfg), Note) and beats_random(all_scores(cfg)) == {"scored": 0, "judged": 0, "beat": 0}
    _fake_agent(agents, "dqn-Breakout-s0", "Breakout")
    _fake_agent(agents, "dqn-MsPacman-s0", "MsPacman")
    pd.DataFrame({"agent": ["dqn-Breakout-s0", "dqn-MsPacman-s0"], "episodes": [10, 10], "mean": [17.0, 614.6],
                  "std": [1.0, 5.0]}).to_csv(agents / "scores.csv", index=False)
    t = all_scores(cfg)
    assert list(t["game"]) == ["Breakout", "MsPacman"]
    assert beats_random(t) == {"scored": 2, "judged": 2, "beat": 1}  # Breakout 10.0×, MsPacman 2.0×
    assert beats_random(t, factor=2.0)["beat"] == 2
    pong = t.assign(agent="dqn-Pong-s0", game="Pong", random=-20.7).iloc[:1]
    assert beats_random(pong) == {"scored": 1, "judged": 0, "beat": 0}  # a ratio to a negative score means nothing
    html = show_scores(t, "caption").to_html()
    assert "× random" in html and "10.0" in html and "DQN 10M (NEC)" in html


def test_study_agent_prefers_the_recorded_one(tmp_path):
    agents, results = tmp_path / "agents", tmp_path / "results"
    shipped = _fake_agent(agents, "dqn-Breakout-s1", "Breakout")
    _fake_agent(agents, "dqn-Breakout-s0", "Breakout")
    assert study_agent("Breakout", results_dir=results, agents_dir=agents).endswith("dqn-Breakout-s0")
    assert study_agent("MsPacman", results_dir=results, agents_dir=agents) is None
    record_study_agent("Breakout", shipped, results_dir=results)
    assert study_agent("Breakout", results_dir=results, agents_dir=agents).endswith("dqn-Breakout-s1")
    (shipped / "meta.json").unlink()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert study_agent("Breakout", results_dir=results, agents_dir=agents).endswith("dqn-Breakout-s0")
    assert any("no longer exists" in str(x.message) for x in w)


def test_book_command_line():
    import argparse

    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    bk.add_book_parser(sub)
    assert p.parse_args(["book"]).games is None
    assert p.parse_args(["book", "--games", "MsPacman,Frostbite"]).games == "MsPacman,Frostbite"
    a = p.parse_args(["book", "--profile", "tiny", "--only", "01_agents", "-p", "game=MsPacman", "-p", "n_states=3"])
    assert a.profile == "tiny" and a.only == ["01_agents"] and dict(a.param) == {"game": "MsPacman", "n_states": 3}
    assert a.executor == "local" and a.func is bk.run_book
    from saliency_lib.sweep import EXECUTORS

    assert bk.EXECUTORS == EXECUTORS
    with pytest.raises(ValueError, match="unknown executor"):
        bk.build_book("tiny", executor="slurm")
    with pytest.raises(ValueError, match="unknown chapter"):
        bk.build_book("tiny", only="99_nothing", html=False)


def test_book_games_put_the_books_game_first():
    from saliency_lib.games import HUBER_GAMES

    assert pages.book_games("tiny") == ["Breakout"] and pages.book_games("quick", {"game": "MsPacman"}) == ["MsPacman"]
    assert pages.book_games("full") == list(HUBER_GAMES)
    assert pages.book_games("full", {"game": "Frostbite"}) == ["Frostbite", "Breakout", "MsPacman", "SpaceInvaders"]
    assert pages.book_games("quick", games=["Pong", "Breakout"]) == ["Breakout", "Pong"]
    with pytest.raises(ValueError, match="unknown game"):
        pages.book_games("quick", games=["Tetris"])
    assert pages.page_games("04_degradation", ["Breakout", "Frostbite", "MsPacman"]) == ["Frostbite", "MsPacman"]
    assert pages.page_games("05_mask_attention", ["Breakout", "Frostbite", "MsPacman"]) == ["MsPacman"]
    assert pages.page_games("06_runtime", ["Breakout", "MsPacman"]) == []


def test_game_page_retitles_and_relabels():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("(chapter-x)=\n# Input degradation\n\nSee {numref}`fig-x-curves` and {ref}`chapter-y`."),
        nbformat.v4.new_code_cell("f()", metadata={"mystnb": {"figure": {"name": "fig-x-curves", "caption": "c"}}}),
        nbformat.v4.new_markdown_cell("# Not the title\n{ref}`chapter-x` and fig-x-curves-2"),
        nbformat.v4.new_code_cell("every_game()", metadata={"tags": ["all-games"]}),
    ])
    page = pages.game_page(nb, "MsPacman")
    assert len(page.cells) == 3 and len(nb.cells) == 4  # the all-games cell stays on the main page
    assert page.cells[0].source == ("(chapter-x-mspacman)=\n# Input degradation: MsPacman\n\n"
                                    "See {numref}`fig-x-curves-mspacman` and {ref}`chapter-y`.")
    assert page.cells[1].metadata["mystnb"]["figure"]["name"] == "fig-x-curves-mspacman"
    assert page.cells[2].source == "# Not the title\n{ref}`chapter-x-mspacman` and fig-x-curves-2"
    assert nb.cells[0].source.startswith("(chapter-x)=")  # the original is untouched


def test_toc_lists_game_pages_under_their_chapter(tmp_path):
    import yaml

    toc = yaml.safe_load(pages.toc_with_game_pages(REPO_ROOT / "book" / "_toc.yml",
                                                   {"04_degradation": ["04_degradation-MsPacman"]},
                                                 tmp_path / "toc.yml").read_text())
    chapters = [c for part in toc["parts"] for c in part["chapters"]]
    deg = next(c for c in chapters if c["file"] == "chapters/04_degradation")
    assert deg["sections"] == [{"file": "chapters/04_degradation-MsPacman"}]
    assert sum("sections" in c for c in chapters) == 1


# -- the tiny build ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory):
    d = tmp_path_factory.mktemp("book")
    log = []
    # Frostbite has no official checkpoint: its pages are cheap, but they go through the
    # same code path as the full profile's pages for every benchmark game
    b = bk.build_book("tiny", build_dir=d, results_dir=d / "results", games=GAME_PAGES, log=log.append)
    print("\n".join(log))
    return b, d


GAME_PAGES = ("Frostbite",)


def _pages() -> list[str]:
    """Every chapter page of the tiny build: the chapters, then their Frostbite pages."""
    names = [p.stem for p in bk.list_notebooks()]
    return names + [f"{n}-{g}" for n in names for g in GAME_PAGES if pages.PER_GAME_CHAPTERS.get(n) == "all"]


@pytest.mark.slow
def test_tiny_book_builds_offline(tiny_book):
    b, d = tiny_book
    html = b.html_dir
    assert (html / "index.html").is_file() and (html / "intro.html").is_file()
    chapters = set(_pages())
    assert set(b.chapters) == chapters and all(c["executed"] for c in b.chapters.values())
    assert "05_mask_attention-Frostbite" not in chapters  # no official Mask-A3C checkpoint for Frostbite
    for name in chapters:
        assert (html / "chapters" / f"{name}.html").is_file()
        nb = nbformat.read(d / "book" / "chapters" / f"{name}.ipynb", as_version=4)
        params = nb.metadata["saliency_study"]["parameters"]
        # the claims page computes nothing (it reads the stored study): it alone takes no profile
        assert params["profile"] == "tiny" if name != "00_claims" else "profile" not in params, (name, params)
        assert nb.metadata["saliency_study"]["parameters"].get("game", "Breakout") == (name.partition("-")[2] or "Breakout")
    page = (html / "chapters" / "04_degradation-Frostbite.html").read_text()
    assert "Input degradation: Frostbite" in page
    assert 'href="04_degradation-Frostbite.html"' in (html / "chapters" / "04_degradation.html").read_text()  # in the TOC
    assert offline.check_offline(html) == []
    intro = (html / "intro.html").read_text()
    assert 'src="_static/../vendor/mathjax/es5/tex-mml-chtml.js' in intro and "cdn.jsdelivr" not in intro
    assert "require.js" not in intro  # the widget scripts only go to pages with widgets
    chapter = (html / "chapters" / "01_agents.html").read_text()
    if "application/vnd.jupyter.widget-state+json" in chapter:
        for js in ("vendor/requirejs/require.js", "vendor/widgets-paths.js", "vendor/html-manager/embed-amd.js"):
            assert f'src="../_static/../{js}' in chapter
    for page in html.rglob("*.html"):
        text = page.read_text()
        assert "cdnjs.cloudflare" not in text and "unpkg.com" not in text, page
    assert set(b.timings) >= {"assets", "chapters", "html", "total"}
    assert json.loads((d / "book" / "_build" / "timings.json").read_text())["profile"] == "tiny"


@pytest.mark.slow
def test_rebuild_executes_only_what_changed(tiny_book):
    _, d = tiny_book
    b = bk.build_book("tiny", build_dir=d, results_dir=d / "results", html=False, log=lambda m: None)
    assert not any(c["executed"] for c in b.chapters.values())


@pytest.mark.slow
def test_papermill_reruns_a_chapter_with_other_parameters(tiny_book, tmp_path):
    _, d = tiny_book
    out = tmp_path / "out.ipynb"
    cmd = [sys.executable, "-m", "papermill", str(d / "notebooks" / "01_agents.ipynb"), str(out), "--no-progress-bar",
           "-p", "game", "MsPacman", "-p", "profile", "tiny", "-p", "train", "true", "-p", "frames", "4000",
           "-p", "results_dir", str(tmp_path / "results")]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    nb = nbformat.read(out, as_version=4)
    text = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "game='MsPacman'" in text and "trained in this chapter" in text
    record = json.loads((tmp_path / "results" / "_local" / "study_agents.json").read_text())
    assert (Path(record["MsPacman"]["path"]) / "model.safetensors").is_file()


@pytest.fixture(scope="module")
def chromium():
    from saliency_book.builder.browser import ChromiumMissing, ensure_chromium

    try:
        return ensure_chromium(install=True)  # apt-get install when missing and root
    except ChromiumMissing as e:
        pytest.skip(f"Chromium is missing and cannot be installed without root: {e}")


def expected_outputs(ipynb: Path) -> dict:
    """What an executed chapter should show: image outputs, HTML tables, widget views, errors."""
    n = {"images": 0, "tables": 0, "widgets": 0, "errors": 0}
    for out in (o for cell in json.loads(ipynb.read_text())["cells"] for o in cell.get("outputs", [])):
        data = out.get("data", {})
        if out["output_type"] == "error":
            n["errors"] += 1
        elif "application/vnd.jupyter.widget-view+json" in data:
            n["widgets"] += 1
        elif any(k.startswith("image/") for k in data):
            n["images"] += 1
        elif "<table" in "".join(data.get("text/html", "")):
            n["tables"] += 1
    return n


@pytest.mark.slow
def test_every_page_renders_in_chromium(tiny_book, chromium):
    from saliency_book.builder.browser import check_book
    from saliency_study.catalog import official_available

    b, d = tiny_book
    shots = {"intro.html": "landing.png", "chapters/01_agents.html": "full:chapter-01_agents.png"}
    reports = check_book(b.html_dir, screenshots=shots, screenshots_dir=SCREENSHOTS, chromium=chromium)
    by_page = {r.page: r for r in reports}
    assert {"intro.html", "reproduce.html", "references.html", "chapters/01_agents.html"} <= set(by_page)
    for r in reports:
        assert r.problems == [], (r.page, r.problems)
    assert by_page["intro.html"].probe["mathjax"] > 0  # the equation was typeset by the local MathJax
    for name in _pages():
        probe = by_page[f"chapters/{name}.html"].probe
        want = expected_outputs(d / "book" / "chapters" / f"{name}.ipynb")
        assert want["errors"] == 0
        shown = [i for i in probe["images"] if i["main"] and i["ok"] and not i["widget"]]
        assert len(shown) >= want["images"], (name, want, probe)
        assert probe["tables"] >= want["tables"], (name, want, probe)
        assert probe["widgets_rendered"] >= want["widgets"], (name, want, probe)
        assert not probe["tracebacks"]
    ch1 = by_page["chapters/01_agents.html"].probe
    if official_available("Breakout", logs=True):  # the official section has a GIF, two figures and a table
        assert len([i for i in ch1["images"] if i["main"] and i["ok"]]) >= 3 and ch1["tables"] >= 2
        assert ch1["widgets_rendered"] >= 1
    for name in ("landing.png", "chapter-01_agents.png"):
        assert (SCREENSHOTS / name).stat().st_size > 10_000


def test_chapter_fingerprint_follows_the_sweep_table():
    """A chapter is re-executed when the sweep step's result table changes, not otherwise."""
    from saliency_book.builder.builder import _inputs_fingerprint, _table_digest

    t = pd.DataFrame({"agent": ["a", "a"], "method": ["occlusion", "rise"], "value": [0.5, 0.25]})
    same = _table_digest([t.copy()])
    assert _table_digest([t]) == same and _table_digest([t, pd.DataFrame()]) == same  # a game without units
    assert _table_digest([t.assign(value=[0.5, 0.26])]) != same
    assert _table_digest([t.iloc[::-1]]) != same and _table_digest([t.astype({"value": "float32"})]) != same
    fp = _inputs_fingerprint(REPO_ROOT / "data" / "results", sweep=same)
    changed = {**fp, "sweep": _table_digest([t.assign(value=[0.5, 0.26])])}
    assert bk._key("src", {"game": "Breakout"}, fp) != bk._key("src", {"game": "Breakout"}, changed)


def test_chapter_fingerprint_follows_the_packs_and_the_books_helpers(tmp_path):
    """Committing a compacted game (a new pack) or changing a chapter's helper module re-executes the chapters;
    loose units of a run in progress do not."""
    from saliency_book.builder.builder import _inputs_fingerprint

    res = tmp_path / "results"
    (res / "sweep" / "packs" / "sanity").mkdir(parents=True)
    (res / "sweep" / "sanity").mkdir(parents=True)
    before = _inputs_fingerprint(res)
    (res / "sweep" / "sanity" / "loose.parquet").write_bytes(b"loose")
    assert _inputs_fingerprint(res) == before
    (res / "sweep" / "packs" / "sanity" / "dqn-Breakout-s0-x.parquet").write_bytes(b"pack")
    after = _inputs_fingerprint(res)
    assert after["packs"] != before["packs"] and bk._key("s", {}, after) != bk._key("s", {}, before)
    assert set(after) >= {"library", "study", "book", "data", "sweep", "packs", "official"}
    assert "saliency_book/ch1_agents.py" in {p.relative_to(REPO_ROOT).as_posix() for p in bk.book_files()}
    study = {p.relative_to(REPO_ROOT).as_posix() for p in bk.book_files("saliency_study")}
    assert {"saliency_study/data/deviations.yaml", "saliency_study/variants.py"} <= study  # the chapters' computations
