"""A video of one game as played, with Mask-A3C's attention masks overlaid (``evaluate --gif``)."""

from __future__ import annotations

import numpy as np

from .agents.base import Agent
from .games import mask_a3c_crop
from .play import Episode, play_episode
from .video import VideoWriter, check_video_path
from .viz import labelled_panels, mask_to_frame, overlay

__all__ = ["write_gif"]


def write_gif(agent: Agent, path: str, *, seed: int = 0, max_steps: int = 1500, every: int = 2, fps: int = 15,
              display: str = "mask") -> Episode:
    """Write a GIF (or, for a ``.mp4`` path, an MP4) of one game. Mask-A3C agents get their policy and value masks overlaid.

    The file is written by :class:`saliency_lib.video.VideoWriter`, the writer of the
    saliency videos; ``path`` must end in ``.gif`` or ``.mp4``.

    Masks are upsampled back through the crop as in the official visualiser and
    shown with one colour scale per branch (min-max over the episode, as the official code).
    Each panel is titled (the frame, the policy mask, the value mask) and the colour scale
    of the overlays is drawn below them.
    ``display="mask"`` shows the mask M used in the forward pass; ``display="sig5"`` shows
    the official visualisation's sigmoid(5·z), whose contrast is much higher.
    """
    if display not in ("mask", "sig5"):
        raise ValueError(f"display must be 'mask' or 'sig5', got {display!r}")
    check_video_path(path)  # before the game is played
    ep = play_episode(agent, seed=seed, record=True, max_steps=max_steps, sig5=display == "sig5")
    crop = mask_a3c_crop(agent.game) if agent.preset == "mask_a3c" else None
    norms = {}
    for n, ms in ep.masks.items():
        arr = np.stack(ms)
        norms[n] = (float(arr.min()), float(arr.max()))
    # every panel is titled and the overlays' colour scale is drawn under them, as in the book's figures
    what = "sigmoid(5z)" if display == "sig5" else "mask"
    titles = {"policy_mask": f"policy {what}", "value_mask": f"value {what}"}
    with VideoWriter(path, fps=fps) as writer:  # the writer of saliency videos: MP4 or GIF by the suffix
        for t in range(0, len(ep.frames), every):
            rgb = ep.frames[t]
            panels = [(f"{agent.game}, step {t}", rgb)]
            for n, ms in ep.masks.items():
                lo, hi = norms[n]
                m = (ms[t] - lo) / (hi - lo + 1e-12)
                heat, inside = mask_to_frame(m, crop)
                panels.append((titles.get(n, n), overlay(rgb, heat, where=inside)))
            writer.append(labelled_panels(panels, cmap="inferno" if ep.masks else None, scale_labels=("game min", "game max")))
    return ep
