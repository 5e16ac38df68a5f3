"""The game's objects as ground truth for saliency maps.

* :mod:`.extraction`: OCAtari's RAM reader on every stacked frame of a state
  (:func:`state_objects`), boxes mapped onto the preprocessed frames (:mod:`.geometry`);
* :mod:`.interventions`: remove one object from a state and measure the agent's change.
"""

from .extraction import (
    OBJECT_GAMES,
    FrameObject,
    RamObjectReader,
    SceneObject,
    StateObjects,
    frame_objects,
    objects_from_ram,
    objects_table,
    ocatari_version,
    state_objects,
)
from .geometry import PRESET_SHAPES, RAW_SHAPE, axis_support, box_mask, map_box

__all__ = [
    "OBJECT_GAMES", "SceneObject", "FrameObject", "StateObjects", "RamObjectReader", "objects_from_ram", "frame_objects",
    "state_objects", "objects_table", "ocatari_version", "PRESET_SHAPES", "RAW_SHAPE", "axis_support", "box_mask", "map_box",
]
