"""Localisation: whether a saliency map puts its weight on the game's objects.

Each measure compares one map ``s`` (``H × W``) with a boolean mask ``M`` of object pixels
(the union of object boxes, :meth:`saliency_lib.objects.StateObjects.mask`):

* **relevance mass** (Arras et al. 2022): the share of the map's positive mass inside the
  mask, ``Σ_M s⁺ / Σ s⁺`` with ``s⁺ = max(s − b, 0)`` above a baseline ``b`` (below);
* **relevance rank** (Arras et al. 2022): the share of the ``k`` highest-ranked pixels that lie
  in the mask, with ``k = |M|``;
* **pointing game** (Zhang et al. 2018): whether the map's maximum lies in the mask.

**Baseline of the mass** (deliberate choice). The maps of the study carry arbitrary offsets:
Occlusion and Noise Sensitivity score ``1 − f_a(I′)`` as Huber et al., which differs from the
change ``f_a(I) − f_a(I′)`` by the constant ``1 − f_a(I)`` (a Breakout Q-value near 2 makes every
pixel negative), and LIME's weights are signed. Rank and pointing do not see an offset; the
mass does. By default (``baseline="median"``) the mass is counted above the map's median, the
level of its typical pixel: for Occlusion that is the no-change level of the background, so
``s⁺`` is the drop that hiding a pixel causes, and the measure becomes invariant to adding a
constant or scaling the map, like the other two. ``baseline="zero"`` is the literal positive
part (Arras et al., Quantus), ``baseline="min"`` the mass above the map's minimum.

**Chance level.** A map whose pixels are exchangeable (i.i.d. noise, which knows nothing of the
objects) scores, in expectation, exactly the mask's area fraction ``|M| / (H W)`` on all three:
every pixel is equally likely to be among the top ``k`` or to be the maximum, and every pixel
has the same expected share ``E[s⁺_i / Σ s⁺]`` of the positive mass (for every baseline above,
each a symmetric function of the pixels). :func:`chance_level`
returns it; a test checks that uniform random maps sit at it.

**Ties** (deliberate deviation from Quantus 0.6, which breaks them by sort order). Maps of grid
methods (Occlusion, Noise Sensitivity, mask attention) hold plateaus of equal values, so the
top ``k`` or the maximum is often not one set of pixels. Here a tie is counted by its expected
value under a random order: the ``j`` top-``k`` places left at the tied value are shared in
proportion to the tied pixels inside the mask, and the pointing game scores the share of the
maximising pixels that lie in the mask (1 or 0 for a unique maximum). A constant map therefore
scores chance on rank and pointing, and never depends on pixel order. Without ties the measures
equal Quantus's ``RelevanceRankAccuracy`` and ``PointingGame`` (``normalise=False``,
``abs=False``); relevance mass with ``baseline="zero"`` equals ``RelevanceMassAccuracy`` on
non-negative maps (``tests/lib/test_metrics_localisation.py`` checks all three).

An empty mask, or a map without positive mass (relevance mass), gives NaN.

References
----------
.. [1] Arras, L., Osman, A., & Samek, W. (2022). CLEVR-XAI: A benchmark dataset for the ground
   truth evaluation of neural network explanations. Information Fusion 81, 14–40.
.. [2] Zhang, J., Bargal, S. A., Lin, Z., Brandt, J., Shen, X., & Sclaroff, S. (2018).
   Top-down neural attention by excitation backprop. IJCV 126, 1084–1102.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["LOCALISATION_MEASURES", "BASELINES", "positive_part", "relevance_mass", "relevance_rank", "pointing_game",
           "chance_level", "localisation_scores", "object_masks", "localisation_table"]

#: The measures, in the order of the tables.
LOCALISATION_MEASURES = ("relevance_mass", "relevance_rank", "pointing_game")
#: Levels above which relevance mass counts a map's mass (module notes).
BASELINES = ("median", "zero", "min")


def _check(saliency, mask) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(saliency, dtype=np.float64)
    m = np.asarray(mask)
    if s.ndim != 2:
        raise ValueError(f"saliency must be one (H, W) map, got shape {s.shape}")
    if m.shape != s.shape:
        raise ValueError(f"mask must have the map's shape {s.shape}, got {m.shape}")
    if m.dtype != bool:
        raise TypeError(f"mask must be a boolean array (True on object pixels), got dtype {m.dtype}")
    if not np.isfinite(s).all():
        raise ValueError("saliency contains NaN or infinite values; check the explainer")
    return s, m


def chance_level(mask) -> float:
    """The score of a map that knows nothing of the objects: the mask's area fraction."""
    m = np.asarray(mask)
    if m.dtype != bool:
        raise TypeError(f"mask must be a boolean array, got dtype {m.dtype}")
    return float(m.mean()) if m.size else float("nan")


def positive_part(saliency, *, baseline: str = "median") -> np.ndarray:
    """``max(s − b, 0)`` with ``b`` the map's median, zero or minimum (module notes)."""
    s = np.asarray(saliency, dtype=np.float64)
    if baseline not in BASELINES:
        raise ValueError(f"unknown baseline {baseline!r}; valid baselines are: {', '.join(BASELINES)}")
    b = {"median": np.median, "min": np.min}.get(baseline, lambda _: 0.0)(s)
    return np.clip(s - b, 0.0, None)


def relevance_mass(saliency, mask, *, baseline: str = "median") -> float:
    """Share of the map's positive mass inside the mask, ``Σ_M s⁺ / Σ s⁺`` (NaN: empty mask or no positive mass).

    ``baseline``: the level above which mass counts, ``"median"`` (default), ``"zero"`` or ``"min"``.
    """
    s, m = _check(saliency, mask)
    pos = positive_part(s, baseline=baseline)
    total = pos.sum()
    if not m.any() or total <= 0:
        return float("nan")
    return float(pos[m].sum() / total)


def relevance_rank(saliency, mask) -> float:
    """Share of the top ``k = |M|`` pixels inside the mask, ties counted by expectation (module notes)."""
    s, m = _check(saliency, mask)
    k = int(m.sum())
    if k == 0:
        return float("nan")
    flat, fm = s.reshape(-1), m.reshape(-1)
    t = np.partition(flat, flat.size - k)[flat.size - k]  # the k-th largest value
    above = flat > t
    tied = flat == t
    places = k - int(above.sum())  # top-k places left for the pixels at the threshold value
    inside = int((above & fm).sum()) + places * (int((tied & fm).sum()) / int(tied.sum()))
    return float(inside / k)


def pointing_game(saliency, mask) -> float:
    """Whether the map's maximum lies in the mask: the share of the maximising pixels inside it (NaN: empty mask)."""
    s, m = _check(saliency, mask)
    if not m.any():
        return float("nan")
    top = s == s.max()
    return float((top & m).sum() / top.sum())


def localisation_scores(saliency, mask, *, baseline: str = "median") -> dict[str, float]:
    """All three measures and the chance level of one map and mask."""
    s, m = _check(saliency, mask)
    return {"relevance_mass": relevance_mass(s, m, baseline=baseline), "relevance_rank": relevance_rank(s, m),
            "pointing_game": pointing_game(s, m), "chance": chance_level(m)}


def object_masks(objects, *, frames=None, classes: bool = True) -> dict[str, np.ndarray]:
    """The masks that the tables score against, for one state's objects.

    Parameters
    ----------
    objects : saliency_lib.objects.StateObjects
    frames : int or sequence of int, optional
        Stacked frames whose boxes count (default: all; the map explains the whole stack).
    classes : bool, optional
        Also one mask per class.

    Returns
    -------
    dict of str to ndarray (H, W) bool
        ``"all"``: every object, the HUD included; ``"no_hud"``: the objects of play;
        ``"hud"``: the HUD alone; ``"cls:<Class>"``: the objects of one class.
    """
    out = {"all": objects.mask(frames=frames), "no_hud": objects.mask(hud=False, frames=frames),
           "hud": objects.mask(hud=True, frames=frames)}
    if classes:
        for c in objects.classes():
            out[f"cls:{c}"] = objects.mask(cls=c, frames=frames)
    return out


def localisation_table(maps, objects: Sequence, *, state_ids=None, frames=None, classes: bool = True,
                       method: str | None = None, baseline: str = "median") -> pd.DataFrame:
    """Localisation of ``N`` maps against their states' objects, as a tidy table.

    Parameters
    ----------
    maps : array_like or Tensor, shape (N, H, W), or an Attribution
    objects : sequence of saliency_lib.objects.StateObjects
        One per map, for the same preprocessing (their ``shape`` must be ``(H, W)``).
    state_ids : array_like of int, optional
        Values of the ``state`` column (default ``0 … N-1``).
    frames, classes
        See :func:`object_masks`.
    method : str, optional
        Value of a ``method`` column (omitted when None).
    baseline : {"median", "zero", "min"}, optional
        Of relevance mass (module notes).

    Returns
    -------
    pandas.DataFrame
        One row per (state, group, measure): ``state, group, measure, value, chance, area``
        (``area``: pixels in the mask), plus ``method``. A group without pixels in a state
        gives no rows for that state.
    """
    from ._common import as_maps, as_state_ids

    n = len(objects)
    if n == 0:
        raise ValueError("objects is empty; pass one StateObjects per map")
    hw = tuple(objects[0].shape)
    a = as_maps(maps, n, hw, "maps")
    ids = as_state_ids(state_ids, n)
    rows = []
    for i, so in enumerate(objects):
        if tuple(so.shape) != hw:
            raise ValueError(f"objects[{i}] are for frames of shape {so.shape}, the maps are {hw}")
        for group, m in object_masks(so, frames=frames, classes=classes).items():
            if not m.any():
                continue
            sc = localisation_scores(a[i], m, baseline=baseline)
            for measure in LOCALISATION_MEASURES:
                rows.append({"state": int(ids[i]), "group": group, "measure": measure, "value": sc[measure],
                             "chance": sc["chance"], "area": int(m.sum())})
    df = pd.DataFrame(rows, columns=["state", "group", "measure", "value", "chance", "area"])
    if method is not None:
        df.insert(0, "method", method)
    return df
