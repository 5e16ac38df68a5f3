"""The study: the code behind the book's chapters and the book pipeline.

Chapters (``notebooks/*.py``) narrate and call these functions; they hold no
algorithm code. :mod:`.book` converts, executes (papermill) and renders them
(Jupyter Book); :mod:`.assets` provides the offline JavaScript; :mod:`.browser`
checks the rendered pages in headless Chromium.

Heavy modules are imported lazily, so ``saliency-study book`` starts without torch.
"""

from __future__ import annotations

from .paths import REPO_ROOT, repo_path
from .profiles import PROFILES, profile_settings

__all__ = ["REPO_ROOT", "repo_path", "PROFILES", "profile_settings", "Note"]


def __getattr__(name):  # lazy re-exports
    if name == "Note":
        from .display import Note

        return Note
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
