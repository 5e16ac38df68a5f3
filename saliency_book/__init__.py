"""The book's code: one module per chapter, shared helpers, and the book builder.

This package sits on top of :mod:`saliency_lib` and is never imported by it.

* ``chN_*.py``: the code behind chapter N (``notebooks/0N_*.py``). The chapters
  narrate and call these functions; a chapter module imports from the library and
  from :mod:`.common`, never from another chapter.
* :mod:`.common`: what several chapters share (notes, agents, maps on frames, figures).
* :mod:`.build`: ``saliency-study book`` (papermill + Jupyter Book), the offline
  JavaScript assets and the headless-browser check of the rendered pages.

Heavy modules are imported lazily, so ``saliency-study book`` starts without torch.
"""
