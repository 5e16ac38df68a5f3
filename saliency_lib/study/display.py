"""Small display objects that chapters show instead of a result that cannot be computed."""

from __future__ import annotations

__all__ = ["Note"]


class Note:
    """A short message rendered as an admonition in the book (and as text elsewhere).

    Study functions return a ``Note`` instead of a table or figure when an input is
    missing (no trained agent yet, official checkpoints not fetched), so chapters
    need no branches and still say clearly what is missing and how to get it.
    """

    def __init__(self, text: str, *, kind: str = "note", title: str | None = None):
        if kind not in ("note", "warning", "important", "tip"):
            raise ValueError(f"kind must be 'note', 'warning', 'important' or 'tip', got {kind!r}")
        self.text, self.kind, self.title = text, kind, title or kind.capitalize()

    def __bool__(self) -> bool:  # a Note stands for a missing result
        return False

    def __repr__(self) -> str:
        return f"{self.title}: {self.text}"

    def _repr_markdown_(self) -> str:
        # Markdown only (no HTML repr): myst-nb renders it as a MyST admonition.
        return f"```{{admonition}} {self.title}\n:class: {self.kind}\n\n{self.text}\n```\n"
