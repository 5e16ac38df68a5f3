"""Object interventions: remove one object from a state and measure how the agent's output moves.

This is faithfulness without a substrate: an insertion or deletion curve replaces pixels with a
black, blurred or random substrate, which the agent never saw in play; here the state stays a
game frame, with one object painted over by what lies behind it.

Removing object ``o`` (an OCAtari slot, :mod:`saliency_lib.objects.extraction`) from a state of
``K`` stacked frames:

1. In every frame ``k`` where ``o`` has a box ``B_k``, the pixels of ``B_k`` are replaced.
2. **Background from another frame.** If some other real frame ``j`` of the stack shows ``B_k``
   without ``o`` (``o`` absent from ``j``, or its box there disjoint from ``B_k``), the pixels of
   ``B_k`` are copied from the nearest such frame (ties: the older one). A moving object
   (ball, ghost, bullet) thus leaves what was behind it.
3. **The game's background colour.** Otherwise (``o`` covers ``B_k`` in every frame: bricks,
   pills, shields, a paddle at rest, and every object of a one-frame Mask-A3C state) ``B_k`` is
   filled with the most common value of frame ``k`` outside every object's box. On the study's
   states that is the colour behind the objects of play: black in Breakout and Space Invaders,
   the maze's corridors in Ms. Pac-Man, the water in Frostbite. (A local estimate, such as the
   ring of pixels around the box, fails where objects touch: around a middle row of Breakout's
   bricks only the grey side walls lie outside the other rows.)

Frames are never changed outside the object's boxes, and a box whose pixels already show the
background is left unchanged (tested). The agent's change is read for the explained action
``a`` (default the greedy action on the clean state): ``ΔQ(a) = Q(s)_a − Q(s')_a`` for a
Q-agent, ``Δπ(a) = π(a|s) − π(a|s')`` for an actor-critic (its recurrent state held fixed),
with whether the greedy action changes.

**Object faithfulness of a map** (:func:`object_faithfulness`). Per state, the Spearman rank
correlation between the map's saliency of each object and the size ``|Δ|`` of the object's
removal effect, over the state's objects (not HUD); with it, whether removing the object with
the most saliency changes the action, against the rate for an object drawn at random (the mean
over the state's objects, exactly). An object's saliency is the map's positive part (above the
map's median by default, as :mod:`saliency_lib.metrics.localisation`) **averaged** over the
object's pixels (its boxes in all frames). Deliberate choice: a sum would rank large objects
(a Breakout brick row, 144 × 6 raw pixels) above small ones (the ball, 2 × 4) for any map,
noise included, so a random map would score whenever large objects matter more; the mean is
the same for every object of a random map in expectation (``reduce="sum"`` gives the sum).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from .geometry import box_mask

__all__ = ["remove_object", "object_effects", "object_mass", "object_faithfulness", "REDUCTIONS"]


def _frames_of(objects, slot: int) -> dict[int, tuple[int, int, int, int]]:
    return {o.frame: o.box for o in objects.objects if o.slot == slot and o.box is not None}


def _disjoint(a, b) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def _background(frame: np.ndarray, others: np.ndarray) -> float:
    """The most common value of ``frame`` outside the object boxes ``others`` (the whole frame if they cover it)."""
    px = frame[~others] if not others.all() else frame.reshape(-1)
    values, counts = np.unique(px, return_counts=True)
    return float(values[np.argmax(counts)])  # ties: the smallest value


def remove_object(state, objects, slot: int):
    """The state with object ``slot`` painted over by its background (module notes, stages 1–3).

    Parameters
    ----------
    state : Tensor or ndarray, shape (K, H, W)
        One preprocessed state.
    objects : saliency_lib.objects.StateObjects
        Its objects (same preset: ``K`` frames of ``H × W``).
    slot : int
        The object to remove (``FrameObject.slot``).

    Returns
    -------
    Tensor or ndarray
        A copy of ``state`` (same type, dtype and device), changed inside the object's boxes only.

    Raises
    ------
    ValueError
        If the state's shape does not match the objects', or the object has no box in this state.
    """
    is_tensor = isinstance(state, torch.Tensor)
    x = state.detach().cpu().numpy() if is_tensor else np.asarray(state)
    if x.shape != (objects.n_frames, *objects.shape):
        raise ValueError(f"state must have shape {(objects.n_frames, *objects.shape)} (the objects' stack), got {x.shape}")
    boxes = _frames_of(objects, slot)
    if not boxes:
        raise ValueError(f"object slot {slot} has no box in this state; slots with boxes: {objects.slots()}")
    out = x.copy()
    real = [j for j in range(objects.n_frames) if j not in objects.empty_frames]
    for k, b in boxes.items():
        x0, y0, x1, y1 = b
        sources = [j for j in real if j != k and (j not in boxes or _disjoint(boxes[j], b))]
        if sources:
            j = min(sources, key=lambda j: (abs(j - k), j))
            out[k, y0:y1, x0:x1] = x[j, y0:y1, x0:x1]
        else:
            others = box_mask([o.box for o in objects.objects if o.frame == k], objects.shape)
            out[k, y0:y1, x0:x1] = _background(x[k], others)
    if is_tensor:
        return torch.as_tensor(out, dtype=state.dtype, device=state.device)
    return out.astype(x.dtype, copy=False)


def _readout(agent, out: dict) -> torch.Tensor:
    if agent.default_output == "q":
        return out["q"].float()
    if "probs" in out:
        return out["probs"].float()
    return torch.softmax(out[agent.default_output].float(), dim=1)


@torch.no_grad()
def object_effects(agent, states, objects: Sequence, *, hidden=None, target=None, hud: bool = False,
                   state_ids=None, batch_size: int | None = None, progress: bool = False) -> pd.DataFrame:
    """Remove each object of each state in turn and record the agent's change.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
    states : Tensor, shape (N, K, H, W)
    objects : sequence of StateObjects
        One per state.
    hidden : tuple of Tensor, optional
        Recurrent state per state (first axis N), held fixed.
    target : int or array_like of int, optional
        Explained action per state; default the greedy action on the clean state.
    hud : bool, optional
        Also remove HUD objects (default False: the objects of play only).
    state_ids : array_like of int, optional
        Values of the ``state`` column (default ``0 … N-1``).
    batch_size : int, optional
        Rows per forward pass (default ``agent.inference_batch``).
    progress : bool, optional
        Show a tqdm bar over the chunks.

    Returns
    -------
    pandas.DataFrame
        One row per (state, object): ``state, slot, cls, area`` (pixels of the object's boxes over
        all frames), ``target, output`` (``"q"`` or ``"probs"``), ``clean, removed`` (the output for
        the target), ``delta = clean − removed``, ``action_changed`` (the greedy action differs),
        ``unchanged`` (removal changed no pixel).
    """
    from ..metrics._common import as_state_ids, as_states, as_targets

    x = as_states(agent, states)
    n = x.shape[0]
    if len(objects) != n:
        raise ValueError(f"objects must hold one StateObjects per state ({n}), got {len(objects)}")
    ids = as_state_ids(state_ids, n)
    clean_out = agent(x, hidden)
    clean = _readout(agent, clean_out)
    greedy = clean_out[agent.default_output].argmax(1)
    tgt = as_targets(target, n, agent.n_actions)
    tgt = greedy.cpu().numpy() if tgt is None else tgt
    jobs = []  # (state index, slot, cls, area, removed state)
    for i, so in enumerate(objects):
        for slot in so.slots(hud=None if hud else False):
            sel = [o for o in so.objects if o.slot == slot and o.box is not None]
            area = int(box_mask([o.box for o in sel], so.shape).sum())
            jobs.append((i, slot, sel[0].cls, area))
    bs = int(batch_size or agent.inference_batch)
    rows = []
    chunks = range(0, len(jobs), bs)
    if progress:
        from tqdm.auto import tqdm

        chunks = tqdm(chunks, desc="object removal")
    for c in chunks:
        part = jobs[c:c + bs]
        idx = torch.as_tensor([j[0] for j in part], device=x.device)
        xr = torch.stack([remove_object(x[i], objects[i], slot) for i, slot, _, _ in part])
        out = agent(xr, agent.index_hidden(hidden, idx) if hidden is not None else None)
        y = _readout(agent, out)
        act = out[agent.default_output].argmax(1)
        same = (xr == x[idx]).flatten(1).all(1)
        for r, (i, slot, cls, area) in enumerate(part):
            a = int(tgt[i])
            c0, c1 = float(clean[i, a]), float(y[r, a])
            rows.append({"state": int(ids[i]), "slot": int(slot), "cls": cls, "area": area, "target": a,
                         "output": "q" if agent.default_output == "q" else "probs", "clean": c0, "removed": c1,
                         "delta": c0 - c1, "action_changed": bool(act[r] != greedy[i]), "unchanged": bool(same[r])})
    cols = ["state", "slot", "cls", "area", "target", "output", "clean", "removed", "delta", "action_changed", "unchanged"]
    return pd.DataFrame(rows, columns=cols)


#: How :func:`object_mass` reduces a map over an object's pixels.
REDUCTIONS = ("mean", "sum")


def object_mass(saliency, objects, slots: Sequence[int], *, baseline: str = "median", reduce: str = "mean") -> np.ndarray:
    """Saliency of one ``(H, W)`` map on each object: ``max(s − b, 0)`` over the union of its boxes in all frames.

    ``baseline`` ``b``: as :func:`saliency_lib.metrics.localisation.positive_part` (default the map's
    median). ``reduce``: ``"mean"`` (default) over the object's pixels, or their ``"sum"`` (module notes).
    """
    if reduce not in REDUCTIONS:
        raise ValueError(f"unknown reduce {reduce!r}; valid values are: {', '.join(REDUCTIONS)}")
    from ..metrics.localisation import positive_part

    s = np.asarray(saliency, dtype=np.float64)
    if s.shape != tuple(objects.shape):
        raise ValueError(f"saliency must have the frames' shape {objects.shape}, got {s.shape}")
    s = positive_part(s, baseline=baseline)
    out = np.empty(len(slots))
    for n, slot in enumerate(slots):
        px = s[box_mask(list(_frames_of(objects, slot).values()), objects.shape)]
        if px.size == 0:
            raise ValueError(f"object slot {slot} has no box in this state; slots with boxes: {objects.slots()}")
        out[n] = px.mean() if reduce == "mean" else px.sum()
    return out


def object_faithfulness(maps, objects: Sequence, effects: pd.DataFrame, *, state_ids=None,
                        min_objects: int = 3, baseline: str = "median", reduce: str = "mean") -> pd.DataFrame:
    """Per state, whether the map ranks the objects as their removal does.

    Parameters
    ----------
    maps : array_like or Tensor, shape (N, H, W), or an Attribution
    objects : sequence of StateObjects
        One per map.
    effects : pandas.DataFrame
        :func:`object_effects` of the same states (same ``state_ids``).
    state_ids : array_like of int, optional
        The ids of the maps' states, as in ``effects`` (default ``0 … N-1``).
    min_objects : int, optional
        Fewer objects give NaN correlation (default 3; two objects always correlate ±1).
    baseline : {"median", "zero", "min"}, optional
        Level above which a map's mass counts (:func:`object_mass`).
    reduce : {"mean", "sum"}, optional
        The map's saliency of an object: mean (default) or sum over its pixels (:func:`object_mass`).

    Returns
    -------
    pandas.DataFrame
        One row per state: ``state, n_objects, faithfulness`` (Spearman ρ between each object's
        mass and ``|delta|``; NaN when either is constant or there are too few objects),
        ``top_changes`` (whether removing the object with the most mass changes the action; a
        tie of top objects counts their mean), ``random_changes`` (the rate over all objects).
    """
    from scipy.stats import spearmanr

    from ..metrics._common import as_maps, as_state_ids

    n = len(objects)
    if n == 0:
        raise ValueError("objects is empty; pass one StateObjects per map")
    a = as_maps(maps, n, tuple(objects[0].shape), "maps")
    ids = as_state_ids(state_ids, n)
    rows = []
    for i, so in enumerate(objects):
        eff = effects[effects["state"] == int(ids[i])]
        if eff.empty:
            rows.append({"state": int(ids[i]), "n_objects": 0, "faithfulness": np.nan, "top_changes": np.nan,
                         "random_changes": np.nan})
            continue
        mass = object_mass(a[i], so, eff["slot"].tolist(), baseline=baseline, reduce=reduce)
        size = eff["delta"].abs().to_numpy()
        changed = eff["action_changed"].to_numpy(dtype=np.float64)
        rho = np.nan
        if len(eff) >= min_objects and np.ptp(mass) > 0 and np.ptp(size) > 0:
            rho = float(spearmanr(mass, size).statistic)
        top = mass == mass.max()
        rows.append({"state": int(ids[i]), "n_objects": len(eff), "faithfulness": rho,
                     "top_changes": float(changed[top].mean()), "random_changes": float(changed.mean())})
    return pd.DataFrame(rows, columns=["state", "n_objects", "faithfulness", "top_changes", "random_changes"])
