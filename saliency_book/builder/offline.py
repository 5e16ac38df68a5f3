"""The offline check of the built book: every page loads only files that the build folder holds."""

from __future__ import annotations

import os
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["check_offline"]


class _Refs(HTMLParser):
    ATTRS = {"script": ("src",), "link": ("href",), "img": ("src",), "iframe": ("src",), "source": ("src", "srcset"),
             "video": ("src", "poster"), "audio": ("src",), "embed": ("src",), "object": ("data",)}

    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for attr in self.ATTRS.get(tag, ()):
            if a.get(attr):
                self.refs.append((tag, a[attr]))


def check_offline(html_dir: str | os.PathLike) -> list[str]:
    """Problems with the resources that the pages of ``html_dir`` load.

    For every ``*.html`` page, each ``src``/``href`` of ``script``, ``link``, ``img``,
    ``iframe``, ``source``, ``video``, ``audio``, ``embed`` and ``object`` must be a
    relative URL (or ``data:``) that names an existing file. Hyperlinks (``<a>``) may
    point anywhere. Returns one message per problem; empty means offline-clean.
    """
    html_dir = Path(html_dir)
    problems = []
    for page in sorted(html_dir.rglob("*.html")):
        if "_static" in page.relative_to(html_dir).parts:  # theme assets, e.g. webpack templates
            continue
        parser = _Refs()
        parser.feed(page.read_text(errors="replace"))
        rel_page = page.relative_to(html_dir).as_posix()
        for tag, url in parser.refs:
            if url.startswith(("data:", "blob:", "#")):
                continue
            parts = urlsplit(url)
            if parts.scheme or url.startswith("//"):
                problems.append(f"{rel_page}: <{tag}> loads the external URL {url}")
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file():
                problems.append(f"{rel_page}: <{tag}> refers to {url}, which does not exist")
            elif not target.is_relative_to(html_dir.resolve()):
                problems.append(f"{rel_page}: <{tag}> refers to {url}, outside the HTML folder")
    return problems
