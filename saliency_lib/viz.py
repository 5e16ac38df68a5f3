"""Overlays of saliency maps and attention masks on raw Atari frames."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["colorize", "overlay", "mask_to_frame", "map84_to_frame", "side_by_side"]


def colorize(values: np.ndarray, cmap: str = "inferno") -> np.ndarray:
    """Map values in [0, 1] to RGB uint8 with a perceptually uniform matplotlib colormap."""
    import matplotlib

    rgba = matplotlib.colormaps[cmap](np.clip(values, 0.0, 1.0))
    return (rgba[..., :3] * 255).astype(np.uint8)


def overlay(rgb: np.ndarray, heat01: np.ndarray, *, alpha: float = 0.5, cmap: str = "inferno", where: np.ndarray | None = None) -> np.ndarray:
    """Blend a [0, 1] heat map (same H×W as ``rgb``) onto a frame."""
    heat = colorize(heat01, cmap).astype(np.float32)
    out = rgb.astype(np.float32) * (1 - alpha) + heat * alpha
    if where is not None:
        out = np.where(where[..., None], out, rgb)
    return out.clip(0, 255).astype(np.uint8)


def mask_to_frame(mask10: np.ndarray, crop: tuple[int, int, int], frame_hw: tuple[int, int] = (210, 160)) -> tuple[np.ndarray, np.ndarray]:
    """Upsample a 10×10 Mask-A3C mask back through the crop, as the official visualiser.

    Bilinear resize to 80 × ``dimension2``, then to 160 × (160 − crop1 + crop2), pasted at
    rows ``[crop1, crop2 + 160)`` of a zero canvas. Returns the canvas and a boolean
    array that is True inside the crop.
    """
    c1, c2, dim2 = crop
    m = cv2.resize(mask10.astype(np.float32), (80, dim2), interpolation=cv2.INTER_LINEAR)
    m = cv2.resize(m, (160, 160 - c1 + c2), interpolation=cv2.INTER_LINEAR)
    canvas = np.zeros(frame_hw, np.float32)
    inside = np.zeros(frame_hw, bool)
    rows = slice(c1, min(c2 + 160, frame_hw[0]))
    canvas[rows] = m[: rows.stop - rows.start]
    inside[rows] = True
    return canvas, inside


def map84_to_frame(map84: np.ndarray, frame_hw: tuple[int, int] = (210, 160)) -> np.ndarray:
    """Resize an 84×84 saliency map (dqn preset) to the raw frame."""
    return cv2.resize(map84.astype(np.float32), (frame_hw[1], frame_hw[0]), interpolation=cv2.INTER_LINEAR)


def side_by_side(*frames: np.ndarray, gap: int = 4) -> np.ndarray:
    h = max(f.shape[0] for f in frames)
    parts = []
    for i, f in enumerate(frames):
        pad = np.zeros((h, f.shape[1], 3), np.uint8)
        pad[: f.shape[0]] = f
        parts.append(pad)
        if i < len(frames) - 1:
            parts.append(np.full((h, gap, 3), 255, np.uint8))
    return np.concatenate(parts, axis=1)
