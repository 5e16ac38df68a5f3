"""The game's objects as ground truth for saliency maps.

* :mod:`.extraction`: OCAtari's RAM reader on every stacked frame of a state
  (:func:`state_objects`), boxes mapped onto the preprocessed frames (:mod:`.geometry`);
* :mod:`.interventions`: remove one object from a state and measure the agent's change;
  object faithfulness of a map;
* :mod:`.report`: localisation and object faithfulness of several methods on one agent
  (:func:`objects_report`).

The localisation measures live in :mod:`saliency_lib.metrics.localisation`.
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
from .interventions import REDUCTIONS, object_effects, object_faithfulness, object_mass, remove_object
from .report import objects_report

__all__ = [
    "OBJECT_GAMES", "SceneObject", "FrameObject", "StateObjects", "RamObjectReader", "objects_from_ram", "frame_objects",
    "state_objects", "objects_table", "ocatari_version", "PRESET_SHAPES", "RAW_SHAPE", "axis_support", "box_mask", "map_box",
    "remove_object", "object_effects", "object_mass", "object_faithfulness", "REDUCTIONS", "objects_report",
]
