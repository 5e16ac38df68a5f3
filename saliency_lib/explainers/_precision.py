"""Arithmetic precision of the explainers' forward passes, and where bf16 is the default.

The decision comes from ``benchmarks/bf16_decision.py`` (``data/benchmarks/bf16_decision.json``):
per method and agent kind (the agent's preset), bf16 is *offered* where its maps kept
Spearman ≥ 0.99 with the float32 maps on every state of every trained agent
(:attr:`~saliency_lib.explainers.Explainer.bf16_validated`), and is the *default* only where,
in addition, it was faster than the float32 default on every agent of the kind. Each result
row records the precision its map was computed in (column ``precision`` of
:data:`saliency_lib.results.SCHEMA`).
"""

from __future__ import annotations

__all__ = ["PRECISIONS", "BF16_DEFAULTS", "default_precision"]

PRECISIONS = ("fp32", "bf16")

#: (agent kind, method) pairs whose default is bf16: none. bf16 kept the maps of RISE and LIME
#: (SLIC, quickshift; and Felzenszwalb on Mask-A3C) but was slower than the float32 default on this
#: CPU for every method, ×0.13–0.91 (RISE on Mask-A3C ×0.79, once the float32 path computed the
#: ConvLSTM's recurrent half once per state; it had been ×1.36 before).
BF16_DEFAULTS: frozenset[tuple[str, str]] = frozenset()


def default_precision(method: str, agent) -> str:
    """The default precision of ``method`` (a registry name) on ``agent`` (by its preset)."""
    return "bf16" if (getattr(agent, "preset", None), method) in BF16_DEFAULTS else "fp32"
