"""The chapters' launch buttons point at files that exist: the source for Binder, the published notebook for Colab."""

from __future__ import annotations

from pathlib import Path

import yaml

from saliency_book.builder.launch import PAGES_BRANCH, launch_paths, launch_problems, retarget

ROOT = Path(__file__).resolve().parents[2]
BINDER = "https://mybinder.org/v2/gh/org/repo/main?urlpath=tree/book/chapters/01_agents-MsPacman.ipynb"
COLAB = "https://colab.research.google.com/github/org/repo/blob/main/book/chapters/01_agents-MsPacman.ipynb"


def test_launch_paths():
    assert launch_paths("chapters/01_agents") == {"source": "notebooks/01_agents.py",
                                                  "executed": "_sources/chapters/01_agents.ipynb"}
    assert launch_paths("chapters/04_degradation-Frostbite.html") == {
        "source": "notebooks/04_degradation.py", "executed": "_sources/chapters/04_degradation-Frostbite.ipynb"}
    assert launch_paths("intro") is None and launch_paths("reproduce.html") is None
    for src in ROOT.glob("notebooks/*.py"):  # every chapter's source is where Binder looks
        assert (ROOT / launch_paths(f"chapters/{src.stem}")["source"]) == src


def _context(binder=BINDER, colab=COLAB):
    buttons = [{"text": "Binder", "url": binder}, {"text": "Colab", "url": colab}]
    return {"header_buttons": [{"label": "download-buttons", "buttons": [{"url": "x.ipynb"}]},
                               {"label": "launch-buttons", "buttons": buttons}]}


def test_retarget_rewrites_the_theme_links():
    ctx = _context()
    retarget(None, "chapters/01_agents-MsPacman", "page.html", ctx, None)
    binder, colab = (b["url"] for b in ctx["header_buttons"][1]["buttons"])
    assert binder == "https://mybinder.org/v2/gh/org/repo/main?urlpath=tree/notebooks/01_agents.py"
    assert colab == ("https://colab.research.google.com/github/org/repo/blob/"
                     f"{PAGES_BRANCH}/_sources/chapters/01_agents-MsPacman.ipynb")
    assert ctx["header_buttons"][0]["buttons"] == [{"url": "x.ipynb"}]  # other buttons untouched
    lab = _context(binder=BINDER.replace("urlpath=tree", "urlpath=lab/tree"))
    retarget(None, "chapters/01_agents-MsPacman", "page.html", lab, None)
    assert lab["header_buttons"][1]["buttons"][0]["url"].endswith("urlpath=lab/tree/notebooks/01_agents.py")
    other = _context()
    retarget(None, "intro", "page.html", other, None)
    assert other == _context()


def test_launch_problems(tmp_path):
    ctx = _context()
    retarget(None, "chapters/01_agents-MsPacman", "page.html", ctx, None)
    links = [{"text": b["text"], "href": b["url"]} for b in ctx["header_buttons"][1]["buttons"]]
    page = "chapters/01_agents-MsPacman.html"
    assert launch_problems(page, links) == []
    assert launch_problems("intro.html", []) == []
    assert launch_problems(page, links[:1]) == ["no Colab launch button (launch links: ['Binder'])"]
    wrong = [{"text": "Binder", "href": BINDER}, links[1]]
    assert "not the chapter's notebook tree/notebooks/01_agents.py" in launch_problems(page, wrong)[0]
    # the files the links name must exist: the published notebook and the source
    (tmp_path / "notebooks").mkdir()
    assert len(launch_problems(page, links, html_dir=tmp_path, repo_root=tmp_path)) == 2
    (tmp_path / "_sources" / "chapters").mkdir(parents=True)
    (tmp_path / "_sources" / "chapters" / "01_agents-MsPacman.ipynb").write_text("{}")
    (tmp_path / "notebooks" / "01_agents.py").write_text("")
    assert launch_problems(page, links, html_dir=tmp_path, repo_root=tmp_path) == []


def test_book_config_has_one_repository_and_both_launchers():
    cfg = yaml.safe_load((ROOT / "book" / "_config.yml").read_text())
    assert cfg["repository"]["url"].startswith("https://github.com/")
    assert cfg["repository"]["branch"] == "main"
    assert cfg["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
    assert cfg["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert "saliency_book.builder.launch" in cfg["sphinx"]["config"]["extensions"]
    assert cfg["repository"]["url"] not in (ROOT / "CITATION.cff").read_text()  # one setting only
