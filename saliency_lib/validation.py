"""Argument checks shared by the explainers, the metrics and the experiments.

Every check raises :class:`ValueError` (or :class:`TypeError` for a wrong type)
with a message that names the parameter, the value received and what is allowed.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

__all__ = ["check_int", "check_float", "check_choice", "check_bool"]


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None, hint: str = "") -> int:
    """Return ``value`` as an ``int`` in ``[minimum, maximum]`` or raise ``ValueError``."""
    lo = f" >= {minimum}" if minimum is not None else ""
    hi = f" and <= {maximum}" if maximum is not None else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer{lo}{hi}, got {value!r}{hint}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be an integer{lo}{hi}, got {value}{hint}")
    return value


def check_float(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    hint: str = "",
) -> float:
    """Return ``value`` as a finite ``float`` inside the given interval or raise ``ValueError``.

    ``low_open``/``high_open`` exclude the bound, so ``low=0, high=1, low_open=True``
    means the interval (0, 1].
    """
    left = "(" if low_open or low is None else "["
    right = ")" if high_open or high is None else "]"
    interval = f" in {left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number{interval}, got {value!r}{hint}")
    value = float(value)
    bad = value != value or value in (float("inf"), float("-inf"))
    if low is not None:
        bad = bad or value < low or (low_open and value == low)
    if high is not None:
        bad = bad or value > high or (high_open and value == high)
    if bad:
        raise ValueError(f"{name} must be a real number{interval}, got {value}{hint}")
    return value


def check_choice(name: str, value: Any, allowed: Iterable[str], *, hint: str = "") -> str:
    """Return ``value`` if it is one of ``allowed`` or raise ``ValueError`` listing them."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; valid values are: {', '.join(map(repr, allowed))}{hint}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a ``bool`` or raise ``ValueError``."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value
