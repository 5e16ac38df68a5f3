"""The game's objects in every stacked frame of a state, from the emulator's RAM (OCAtari).

OCAtari (Delfosse et al. 2023) reads each object's class and box from the Atari RAM ("RAM
extraction mode"). This module calls its per-game readers, ``init_objects(game, hud)`` and
``detect_objects_ram(objects, ram, game, hud)`` of ``ocatari.ram.extract_ram_info``, and turns
their result into plain records mapped onto the study's preprocessed frames.

Stages, for one state recorded with ``collect_states(..., rams=True)``:

1. **RAM.** ``StateSet.rams[i]`` holds, for each of the ``K`` stacked frames, the RAM after
   each of the two raw frames that the environment max-pooled into it
   (:class:`saliency_lib.envs.RecordRam`).
2. **Detection.** For each raw frame, OCAtari's reader runs on the RAM **as int64**: OCAtari
   2.2.1 does its arithmetic on the RAM's own uint8 values, which NumPy 2 keeps in uint8, so
   Space Invaders' bullet rows wrap around and Ms. Pac-Man's score raises ``OverflowError``
   (under NumPy 1.26, for which OCAtari pins ``numpy<2``, the same expressions were promoted).
   ``tests/lib/test_objects_extraction.py`` compares this with OCAtari run as released under
   NumPy 1.26 on fixed trajectories of the four games.
3. **Settling.** The readers keep state between calls: an object that appears is created at its
   class's default position and only moved to the RAM's position at the next call (Ms.
   Pac-Man's ghosts), and a bullet's visibility is decided from its previous position (Space
   Invaders). OCAtari's own environment, which calls the reader once per raw frame, shows such
   an object at the wrong place, or hides it, for one frame. Here every raw frame gets fresh
   objects and the reader runs **on the same RAM until its objects stop changing** (two or three
   reads), so each object is where the RAM puts it, whatever came before (this also makes a
   state's objects independent of the states before it).
   Deliberate deviation: Space Invaders' shields, which OCAtari hides from the moment the
   aliens reach them until a full new wave, are shown whenever the aliens are low enough
   *in this frame* only.
4. **Union over the pooled pair.** An object (OCAtari's slot) found in both raw frames gets the
   union of its two boxes, as the max-pooled frame shows it at both places.
5. **Mapping.** Each raw box is mapped onto the preset's preprocessed frame
   (:func:`saliency_lib.objects.geometry.map_box`); an object outside the Mask-A3C crop has no box there.

HUD objects (score, lives, …) are kept and flagged ``hud=True``; only visible objects count.

References
----------
.. [1] Delfosse, Q., Blüml, J., Gregori, B., Sztwiertnia, S., & Kersting, K. (2023).
   OCAtari: Object-centric Atari 2600 reinforcement learning environments. arXiv:2306.08649.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..games import game_info
from .geometry import PRESET_SHAPES, box_mask, map_box

__all__ = ["OBJECT_GAMES", "SceneObject", "FrameObject", "StateObjects", "RamObjectReader", "objects_from_ram",
           "frame_objects", "state_objects", "objects_table", "ocatari_version"]

#: The games whose objects the study reads (Huber et al.'s four).
OBJECT_GAMES = ("Breakout", "MsPacman", "SpaceInvaders", "Frostbite")

_INSTALL = ("OCAtari is needed to read the game's objects: install it without its numpy<2 pin, "
            "e.g. `pip install --no-deps ocatari==2.2.1 && pip install pygame==2.6.1 termcolor==3.3.0` "
            "(or the project's 'objects' extra)")


def _ocatari():
    """``ocatari.ram.extract_ram_info``, imported quietly, or an error that says how to install it."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # OCAtari imports pygame, which greets on import
    try:
        with warnings.catch_warnings():  # its sources hold invalid escape sequences (SyntaxWarning on first compile)
            warnings.simplefilter("ignore")
            from ocatari.ram import extract_ram_info
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(f"{_INSTALL} ({e})") from e
    return extract_ram_info


def ocatari_version() -> str:
    """The installed OCAtari version (for records of provenance)."""
    from importlib.metadata import version

    _ocatari()
    return version("ocatari")


def _check_game(game: str) -> str:
    game_info(game)
    if game not in OBJECT_GAMES:
        raise ValueError(f"objects are read for {', '.join(OBJECT_GAMES)}; got game {game!r}")
    return game


@dataclass(frozen=True)
class SceneObject:
    """One object that OCAtari finds in one raw frame.

    Attributes
    ----------
    cls : str
        OCAtari's class name (``"Ball"``, ``"Player"``, ``"Ghost"``, ``"PlayerScore"``, …).
    slot : int
        Index in OCAtari's object list: the same slot is the same object from frame to frame.
    x, y, w, h : int
        Box in the raw 210×160 frame: columns ``x … x + w − 1``, rows ``y … y + h − 1``.
    hud : bool
        Part of the heads-up display (score, lives), not of the play.
    """

    cls: str
    slot: int
    x: int
    y: int
    w: int
    h: int
    hud: bool

    @property
    def box(self) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` with exclusive ends."""
        return self.x, self.y, self.x + self.w, self.y + self.h


class RamObjectReader:
    """OCAtari's RAM reader for one game, called one RAM at a time, keeping OCAtari's state.

    :meth:`read` is what OCAtari's own environment does after every emulator step, with the RAM
    passed as int64 (see the module notes); :func:`objects_from_ram` builds on it.

    Parameters
    ----------
    game : str
        One of :data:`OBJECT_GAMES`.
    hud : bool, optional
        Include the HUD objects (default True).
    """

    def __init__(self, game: str, *, hud: bool = True):
        self.game = _check_game(game)
        self.hud = bool(hud)
        self._ext = _ocatari()
        self.reset()

    def reset(self) -> None:
        """Fresh objects, as OCAtari's ``reset``."""
        self._objects = self._ext.init_objects(self.game, self.hud)

    def read(self, ram) -> list[SceneObject]:
        """Update the objects from one RAM (128 values in 0…255) and return the visible ones, in slot order."""
        r = np.asarray(ram)
        if r.shape != (128,) or not np.issubdtype(r.dtype, np.integer) or r.min() < 0 or r.max() > 255:
            raise ValueError(f"ram must be 128 integers in [0, 255] (one Atari RAM), got shape {r.shape}, dtype {r.dtype}")
        self._ext.detect_objects_ram(self._objects, r.astype(np.int64), self.game, self.hud)
        return self._visible()

    def _state(self) -> tuple:
        """Every slot's type, position, size and visibility: what the next read depends on."""
        return tuple((type(o).__name__, tuple(int(v) for v in o.xywh), bool(o.visible)) for o in self._objects)

    def _visible(self) -> list[SceneObject]:
        out = []
        for slot, o in enumerate(self._objects):
            if o and o.visible:
                x, y, w, h = (int(round(float(v))) for v in o.xywh)
                out.append(SceneObject(o.category, slot, x, y, w, h, bool(o.hud)))
        return out


#: Reads of one RAM after which :func:`objects_from_ram` gives up waiting for the objects to settle.
_MAX_READS = 8


def objects_from_ram(game: str, ram, *, hud: bool = True) -> list[SceneObject]:
    """The visible objects of one raw frame from its RAM alone (module notes, stage 3).

    A fresh reader reads the same RAM until its state, hidden slots included, repeats (a Space
    Invaders bullet needs three reads: its empty slot first learns the position, the next read
    finds it visible and creates the bullet, the third places it). Where the reader then
    alternates between states instead of settling (Space Invaders clips a bullet at row 195
    from the height it had before, so near the bottom its height flips between 7 and 10), each
    object gets the union of its boxes over the cycle.

    Raises
    ------
    RuntimeError
        If the reader's state has not repeated after 8 reads.
    """
    reader = RamObjectReader(game, hud=hud)
    states, reads = [], []
    for _ in range(_MAX_READS):
        objs = reader.read(ram)
        st = reader._state()
        if st in states:
            cycle = reads[states.index(st):]
            if len(cycle) == 1:
                return cycle[0]
            merged: dict[int, SceneObject] = {}
            for read in cycle:
                for o in read:
                    p = merged.get(o.slot)
                    merged[o.slot] = o if p is None or p.cls != o.cls else _union(p, o)
            return [merged[k] for k in sorted(merged)]
        states.append(st)
        reads.append(objs)
    raise RuntimeError(f"OCAtari's {game} objects did not settle after {_MAX_READS} reads of the same RAM")


def _union(a: SceneObject, b: SceneObject) -> SceneObject:
    x0, y0 = min(a.x, b.x), min(a.y, b.y)
    x1, y1 = max(a.x + a.w, b.x + b.w), max(a.y + a.h, b.y + b.h)
    return SceneObject(a.cls, a.slot, x0, y0, x1 - x0, y1 - y0, a.hud)


def frame_objects(game: str, rams, *, hud: bool = True) -> list[SceneObject]:
    """The objects of one stacked frame from the RAMs of its max-pooled raw frames (stage 4).

    Parameters
    ----------
    rams : array_like, shape (R, 128)
        One RAM per raw frame (R = 2 for the pooled pair); a row of ``-1`` (the zero frame
        after a reset) gives no objects.
    """
    rams = np.asarray(rams)
    if rams.ndim != 2 or rams.shape[1] != 128:
        raise ValueError(f"rams must have shape (R, 128), one RAM per raw frame, got {rams.shape}")
    merged: dict[int, SceneObject] = {}
    for ram in rams:
        if (ram < 0).all():
            continue
        for o in objects_from_ram(game, ram, hud=hud):
            prev = merged.get(o.slot)
            merged[o.slot] = o if prev is None or prev.cls != o.cls else _union(prev, o)
    return [merged[s] for s in sorted(merged)]


@dataclass(frozen=True)
class FrameObject:
    """An object of one stacked frame of a state, with its box on the preprocessed frame.

    Attributes
    ----------
    frame : int
        Index in the state's frame stack (``K − 1`` is the newest frame).
    obj : SceneObject
        Class, slot, raw box and HUD flag.
    box : tuple of int or None
        ``(x0, y0, x1, y1)`` on the preprocessed frame (exclusive ends); ``None`` where the
        preset's crop drops the object.
    """

    frame: int
    obj: SceneObject
    box: tuple[int, int, int, int] | None

    @property
    def cls(self) -> str:
        """OCAtari's class name of the object (``"Ball"``, ``"Player"`` …)."""
        return self.obj.cls

    @property
    def hud(self) -> bool:
        """Whether the object is part of the heads-up display (score, lives), not of the play."""
        return self.obj.hud

    @property
    def slot(self) -> int:
        """Index in OCAtari's object list: the same slot is the same object from frame to frame."""
        return self.obj.slot


@dataclass(frozen=True)
class StateObjects:
    """The objects of every stacked frame of one state.

    Attributes
    ----------
    game, preset : str
    n_frames : int
        ``K``: frames in the state's stack.
    objects : tuple of FrameObject
        Ordered by frame, then slot.
    empty_frames : tuple of int
        Frames of the stack that are the zero frames of a reset (no game behind them).
    """

    game: str
    preset: str
    n_frames: int
    objects: tuple[FrameObject, ...]
    empty_frames: tuple[int, ...] = ()

    @property
    def shape(self) -> tuple[int, int]:
        """Height and width of the preprocessed frame."""
        return PRESET_SHAPES[self.preset]

    def select(self, *, hud: bool | None = None, cls: str | None = None, frames=None) -> list[FrameObject]:
        """The objects with a box that match: ``hud`` (None: both), class ``cls``, frame indices ``frames`` (None: all)."""
        keep = None if frames is None else {int(f) for f in np.atleast_1d(frames)}
        return [o for o in self.objects if o.box is not None and (hud is None or o.hud == hud)
                and (cls is None or o.cls == cls) and (keep is None or o.frame in keep)]

    def mask(self, *, hud: bool | None = None, cls: str | None = None, frames=None) -> np.ndarray:
        """Boolean ``(H, W)`` mask of the union of the selected objects' boxes over the selected frames."""
        return box_mask([o.box for o in self.select(hud=hud, cls=cls, frames=frames)], self.shape)

    def classes(self, *, hud: bool | None = None) -> list[str]:
        """The classes present (with a box), sorted."""
        return sorted({o.cls for o in self.select(hud=hud)})

    def slots(self, *, hud: bool | None = None) -> list[int]:
        """The slots present (with a box in some frame), sorted: one per distinct object."""
        return sorted({o.slot for o in self.select(hud=hud)})


def _rams_of(states) -> np.ndarray:
    rams = getattr(states, "rams", None)
    if rams is None:
        raise ValueError("the StateSet has no RAM; collect it with collect_states(..., rams=True) "
                         "(or collect_spread_states(..., rams=True))")
    return np.asarray(rams)


def state_objects(states, *, hud: bool = True, progress: bool = False) -> list[StateObjects]:
    """The objects of every state of a :class:`~saliency_lib.states.StateSet` recorded with ``rams=True``.

    Parameters
    ----------
    states : StateSet
        Its ``game`` must be one of :data:`OBJECT_GAMES` and its ``preset`` ``"dqn"`` or ``"mask_a3c"``.
    hud : bool, optional
        Include the HUD objects (default True; they carry ``hud=True``).
    progress : bool, optional
        Show a tqdm bar.

    Returns
    -------
    list of StateObjects
        One per state, in order.

    Raises
    ------
    ValueError
        If the set has no RAM, or its game or preset has no object reader.
    """
    game = _check_game(states.game)
    if states.preset not in PRESET_SHAPES:
        raise ValueError(f"unknown preset {states.preset!r}; valid presets are: {', '.join(PRESET_SHAPES)}")
    rams = _rams_of(states)
    if rams.ndim != 4 or rams.shape[2:] != (2, 128) or rams.shape[0] != len(states):
        raise ValueError(f"StateSet.rams must have shape (N, K, 2, 128) with N = {len(states)}, got {rams.shape}")
    it = range(len(states))
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc=f"objects {game}")
    out = []
    seen: dict[bytes, list[SceneObject]] = {}  # consecutive states share 3 of their 4 frames: read each once
    for i in it:
        objs = []
        for k in range(rams.shape[1]):
            key = rams[i, k].tobytes()
            if key not in seen:
                seen[key] = frame_objects(game, rams[i, k], hud=hud)
            for o in seen[key]:
                objs.append(FrameObject(k, o, map_box(o.box, states.preset, game)))
        empty = tuple(k for k in range(rams.shape[1]) if (rams[i, k] < 0).all())
        out.append(StateObjects(game, states.preset, int(rams.shape[1]), tuple(objs), empty))
    return out


def objects_table(objects: list[StateObjects], *, state_ids=None):
    """A long table of the objects: one row per (state, frame, object).

    Columns: ``state, frame, slot, cls, hud, raw_x0, raw_y0, raw_x1, raw_y1, x0, y0, x1, y1``
    (the last four NA where the preset's crop drops the object). It can be stored beside a
    sweep's units, so that figures read the boxes without replaying the games.
    """
    import pandas as pd

    ids = np.arange(len(objects)) if state_ids is None else np.asarray(state_ids).reshape(-1)
    if len(ids) != len(objects):
        raise ValueError(f"state_ids must hold one id per state ({len(objects)}), got {len(ids)}")
    rows = []
    for sid, so in zip(ids, objects):
        for fo in so.objects:
            bx = fo.box if fo.box is not None else (pd.NA,) * 4
            rows.append({"state": int(sid), "frame": fo.frame, "slot": fo.slot, "cls": fo.cls, "hud": fo.hud,
                         **dict(zip(("raw_x0", "raw_y0", "raw_x1", "raw_y1"), fo.obj.box)),
                         **dict(zip(("x0", "y0", "x1", "y1"), bx))})
    cols = ["state", "frame", "slot", "cls", "hud", "raw_x0", "raw_y0", "raw_x1", "raw_y1", "x0", "y0", "x1", "y1"]
    df = pd.DataFrame(rows, columns=cols)
    for c in ("x0", "y0", "x1", "y1"):
        df[c] = df[c].astype("Int64")
    return df
