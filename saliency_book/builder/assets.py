"""Offline JavaScript of the book: MathJax, RequireJS and the ipywidgets HTML manager.

The rendered book must load nothing from the internet. :func:`fetch_assets` runs ``npm pack`` for
pinned package versions into a cache (once: ``$SALIENCY_BOOK_ASSETS`` or ``.cache/book-assets/``),
checks each tarball against its npm integrity hash and extracts it. :func:`install_assets` copies
the files the pages need into ``book/_offline/vendor/``, which Sphinx copies to the root of the HTML
(``html_extra_path``). ``book/_config.yml`` points ``mathjax_path`` (pages with mathematics) and
myst-nb's ``nb_ipywidgets_js`` (pages with widgets: ``requirejs/require.js``, ``widgets-paths.js``
and ``html-manager/embed-amd.js``) at ``../vendor/…``: Sphinx resolves them against ``_static/``, so a
page in ``chapters/`` loads ``../_static/../vendor/…``, that is ``vendor/…`` at the root, and only
the pages that use a file load it.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from saliency_study.paths import REPO_ROOT

__all__ = ["Asset", "ASSETS", "assets_cache", "fetch_assets", "install_assets", "VENDOR", "WIDGETS_PATHS_JS"]

VENDOR = "vendor"
"""Folder of the assets inside ``_offline/`` and thus inside the HTML root."""


WIDGETS_PATHS_JS = """\
// Written by saliency_book.builder.assets. embed-amd.js defines several named RequireJS
// modules (@jupyter-widgets/base, controls, ...); each finds its font files relative to
// its own module URL, which by default is <page folder>/@jupyter-widgets/. Map every
// module to vendor/html-manager/ (next to this file), where the fonts are.
(function () {
  var dir = document.currentScript.src.replace(/[^/]*$/, "") + "html-manager/";
  var names = ["base", "base7", "controls", "controls7", "html-manager"];
  var paths = {"@jupyter-widgets/html-manager/dist": dir.slice(0, -1)};
  names.forEach(function (n) { paths["@jupyter-widgets/" + n] = dir + n; });
  require.config({paths: paths});
})();
"""


@dataclass(frozen=True)
class Asset:
    """One npm package: its pinned spec, npm integrity, and which files the book uses."""

    name: str
    spec: str
    integrity: str
    include: tuple[str, ...]
    """fnmatch patterns of package files (relative to ``package/``) to install."""
    strip: str = ""
    """Prefix removed from the installed paths (e.g. ``dist/``)."""

    @property
    def tarball(self) -> str:
        pkg, _, version = self.spec.rpartition("@")
        return f"{pkg.lstrip('@').replace('/', '-')}-{version}.tgz"


ASSETS: tuple[Asset, ...] = (
    Asset(
        "mathjax", "mathjax@3.2.2",
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        ("LICENSE", "es5/tex-mml-chtml.js", "es5/core.js", "es5/loader.js", "es5/startup.js", "es5/input/*",
         "es5/output/chtml.js", "es5/output/chtml/*", "es5/ui/*", "es5/a11y/*", "es5/sre/*", "es5/adaptors/*"),
    ),
    Asset(
        "requirejs", "requirejs@2.3.8",
        "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        ("require.js", "package.json"),
    ),
    Asset(
        "html-manager", "@jupyter-widgets/html-manager@1.0.15",
        "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        ("dist/embed-amd.js", "dist/*.woff2", "dist/*.woff", "dist/*.ttf", "dist/*.eot", "dist/*.svg",
         "dist/embed.js.LICENSE.txt", "package.json"),
        strip="dist/",
    ),
)


def assets_cache() -> Path:
    """``$SALIENCY_BOOK_ASSETS``, else ``<repository>/.cache/book-assets``."""
    env = os.environ.get("SALIENCY_BOOK_ASSETS")
    return Path(env).expanduser() if env else REPO_ROOT / ".cache" / "book-assets"


def _integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def _npm_pack(asset: Asset, cache: Path, npm: str) -> Path:
    exe = shutil.which(npm)
    if exe is None:
        raise RuntimeError(
            f"npm ({npm!r}) not found, and the cache {cache} lacks {asset.tarball}; install Node.js/npm "
            f"(e.g. apt-get install npm) or copy the tarball there (npm pack {asset.spec})"
        )
    proc = subprocess.run([exe, "pack", asset.spec, "--json", "--pack-destination", str(cache)],
                          capture_output=True, text=True, timeout=600, cwd=cache)
    if proc.returncode != 0:
        raise RuntimeError(f"npm pack {asset.spec} failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    info = json.loads(proc.stdout)[0]
    return cache / info["filename"]


def fetch_assets(cache: str | os.PathLike | None = None, *, npm: str = "npm") -> dict[str, Path]:
    """Fetch (once) and extract the pinned packages; returns name → extracted ``package/`` folder.

    Raises
    ------
    RuntimeError
        npm is missing or fails and the cache lacks a tarball.
    ValueError
        A tarball does not match its pinned integrity hash.
    """
    cache = Path(cache) if cache else assets_cache()
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for asset in ASSETS:
        tgz = cache / asset.tarball
        if not tgz.is_file() or _integrity(tgz) != asset.integrity:
            tgz = _npm_pack(asset, cache, npm)
        got = _integrity(tgz)
        if got != asset.integrity:
            tgz.unlink()
            raise ValueError(f"{tgz.name} from npm has integrity {got[:24]}…, expected {asset.integrity[:24]}… "
                             f"for {asset.spec}; the registry served a different file")
        dest = cache / tgz.name.removesuffix(".tgz")
        stamp = dest / ".integrity"
        if not (stamp.is_file() and stamp.read_text() == asset.integrity):
            shutil.rmtree(dest, ignore_errors=True)
            with tarfile.open(tgz) as tf:
                kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tf.extractall(dest, **kw)
            stamp.write_text(asset.integrity)
        out[asset.name] = dest / "package"
    return out


def _selected(asset: Asset, root: Path):
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root).as_posix()
        if f.is_file() and any(fnmatch.fnmatchcase(rel, pat) for pat in asset.include):
            yield f, rel.removeprefix(asset.strip)


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (and its folder) unless the file already holds it, so its date shows real changes."""
    if not (path.is_file() and path.read_text() == text):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def install_assets(book_dir: str | os.PathLike, cache: str | os.PathLike | None = None, *, npm: str = "npm") -> Path:
    """Copy the assets into ``<book_dir>/_offline/vendor/`` (unchanged files are skipped).

    Returns the ``_offline`` folder (Sphinx's ``html_extra_path``). Also writes
    ``vendor/ASSETS.json`` with each package's version, integrity and files.
    """
    packages = fetch_assets(cache, npm=npm)
    offline = Path(book_dir) / "_offline"
    vendor = offline / VENDOR
    manifest = {}
    for asset in ASSETS:
        root = packages[asset.name]
        files = []
        for src, rel in _selected(asset, root):
            dst = vendor / asset.name / rel
            if not (dst.is_file() and dst.stat().st_size == src.stat().st_size and dst.stat().st_mtime >= src.stat().st_mtime):
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
            files.append(rel)
        if not files:
            raise RuntimeError(f"no file of {asset.spec} matched {asset.include}; the package layout changed")
        license_ = json.loads((root / "package.json").read_text()).get("license", "")
        manifest[asset.name] = {"spec": asset.spec, "integrity": asset.integrity, "license": license_, "files": len(files)}
    write_if_changed(vendor / "widgets-paths.js", WIDGETS_PATHS_JS)
    write_if_changed(vendor / "ASSETS.json", json.dumps(manifest, indent=2) + "\n")
    return offline
