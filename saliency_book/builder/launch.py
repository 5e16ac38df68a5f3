"""The chapters' launch buttons (Binder, Colab) open files that exist in the repository.

A Sphinx extension (listed in ``book/_config.yml``), and the paths the browser check expects.

sphinx-book-theme links a notebook page to ``<path_to_book>/<page>.ipynb`` on the repository's
branch, but our chapter pages are executed notebooks in the git-ignored ``book/chapters/``. Run after
the theme's ``add_launch_buttons``, :func:`retarget` points the buttons at files that exist:

* **Binder** (and JupyterHub): the chapter's jupytext source ``notebooks/<chapter>.py`` on the
  repository's branch; Binder builds the locked ``environment.yml``. A game page
  (``01_agents-MsPacman``) opens its chapter's source.
* **Colab** opens only ``.ipynb`` files from GitHub: the executed page as published,
  ``_sources/chapters/<page>.ipynb`` on the ``gh-pages`` branch that ``make publish`` writes.

The repository is ``repository.url`` in ``book/_config.yml``, the one line a fork changes.
"""

from __future__ import annotations

import re
from pathlib import Path

#: Where the chapters' jupytext sources are, relative to the repository root.
SOURCES_DIR = "notebooks"
#: The folder of the executed chapter pages, relative to the book.
CHAPTERS_DIR = "chapters"
#: The branch ``make publish`` writes the HTML to (and Colab opens the executed notebooks from).
PAGES_BRANCH = "gh-pages"


def launch_paths(page: str) -> dict[str, str] | None:
    """The files the launch buttons of a chapter page (``"chapters/01_agents-MsPacman"``, ``.html`` or not) open.

    ``source`` (``notebooks/01_agents.py``, in the repository: Binder) and ``executed``
    (``_sources/chapters/01_agents-MsPacman.ipynb``, in the published HTML on :data:`PAGES_BRANCH`: Colab);
    ``None`` for a page that is not a chapter.
    """
    name = page.removesuffix(".html")
    folder, _, stem = name.rpartition("/")
    if folder != CHAPTERS_DIR or not stem:
        return None
    chapter = stem.partition("-")[0]  # game pages are <chapter>-<Game>
    return {"source": f"{SOURCES_DIR}/{chapter}.py", "executed": f"_sources/{CHAPTERS_DIR}/{stem}.ipynb"}


def retarget(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """``html-page-context`` handler: rewrite the launch buttons of a chapter page (see the module)."""
    paths = launch_paths(pagename)
    if paths is None:
        return
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            url = button.get("url", "")
            if "urlpath=" in url:  # Binder, JupyterHub: ...?urlpath=<tree|lab/tree>/<path>
                button["url"] = re.sub(r"(urlpath=(?:lab/)?tree/).*$", lambda m: m.group(1) + paths["source"], url)
            elif "/github/" in url and "/blob/" in url:  # Colab: .../github/<org>/<repo>/blob/<branch>/<path>
                button["url"] = re.sub(r"/blob/.*$", f"/blob/{PAGES_BRANCH}/{paths['executed']}", url)


def launch_problems(page: str, links: list[dict], html_dir: str | Path | None = None,
                    repo_root: str | Path | None = None) -> list[str]:
    """What is wrong with the launch buttons of the rendered page ``page`` (empty: nothing).

    ``links`` are the page's launch links as the browser shows them (``{"text": "Binder", "href": ...}``);
    with ``html_dir`` and ``repo_root``, the executed notebook and the chapter's source must exist there.
    """
    paths = launch_paths(page)
    if paths is None:
        return []
    problems = []
    by_text = {link["text"].strip(): link["href"] for link in links}
    for text, want in (("Binder", f"tree/{paths['source']}"), ("Colab", f"/blob/{PAGES_BRANCH}/{paths['executed']}")):
        href = by_text.get(text)
        if href is None:
            problems.append(f"no {text} launch button (launch links: {sorted(by_text)})")
        elif not href.endswith(want):
            problems.append(f"the {text} button opens {href}, not the chapter's notebook {want}")
    if html_dir is not None and not (Path(html_dir) / paths["executed"]).is_file():
        problems.append(f"{paths['executed']}, which the Colab button opens once published, is not in the HTML")
    if repo_root is not None and not (Path(repo_root) / paths["source"]).is_file():
        problems.append(f"{paths['source']}, which the Binder button opens, is not in the repository")
    return problems


def setup(app):
    # after sphinx-book-theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", retarget, priority=510)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
