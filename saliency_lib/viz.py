"""Overlays of saliency maps and attention masks on raw Atari frames."""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["colorize", "overlay", "mask_to_frame", "map84_to_frame", "side_by_side", "labelled_panels"]


def colorize(values: np.ndarray, cmap: str = "inferno") -> np.ndarray:
    """Map values in [0, 1] to RGB uint8 with a perceptually uniform matplotlib colormap."""
    import matplotlib

    rgba = matplotlib.colormaps[cmap](np.clip(values, 0.0, 1.0))
    return (rgba[..., :3] * 255).astype(np.uint8)


def overlay(rgb: np.ndarray, heat01: np.ndarray, *, alpha: float = 0.7, cmap: str = "inferno",
            where: np.ndarray | None = None) -> np.ndarray:
    """Blend a [0, 1] heat map (same H×W as ``rgb``) onto a frame.

    The blend weight is ``alpha · heat``, so unimportant regions keep the game's own
    pixels and important ones take the colormap's bright end.
    """
    heat = np.clip(heat01, 0.0, 1.0)
    w = (alpha * heat)[..., None]
    out = rgb.astype(np.float32) * (1 - w) + colorize(heat, cmap).astype(np.float32) * w
    if where is not None:
        out = np.where(where[..., None], out, rgb)
    return out.clip(0, 255).astype(np.uint8)


def mask_to_frame(mask10: np.ndarray, crop: tuple[int, int, int],
                  frame_hw: tuple[int, int] = (210, 160)) -> tuple[np.ndarray, np.ndarray]:
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
    """Frames of any widths side by side, top-aligned, separated by white gaps ``gap`` pixels wide."""
    h = max(f.shape[0] for f in frames)
    parts = []
    for i, f in enumerate(frames):
        pad = np.zeros((h, f.shape[1], 3), np.uint8)
        pad[: f.shape[0]] = f
        parts.append(pad)
        if i < len(frames) - 1:
            parts.append(np.full((h, gap, 3), 255, np.uint8))
    return np.concatenate(parts, axis=1)


def _text(img: np.ndarray, text: str, x: int, y: int, *, scale: float = 0.4, color=(255, 255, 255)) -> None:
    cv2.putText(img, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, scale, color, 1, cv2.LINE_AA)


def labelled_panels(panels: list[tuple[str, np.ndarray]], *, cmap: str | None = "inferno",
                    scale_labels: tuple[str, str] = ("low", "high"), gap: int = 4, title_height: int = 16,
                    bar_height: int = 10) -> np.ndarray:
    """Frames side by side, each under its title, with the colour scale of the overlays below them.

    Parameters
    ----------
    panels : list of (title, RGB uint8 image)
        E.g. ``[("frame", rgb), ("policy mask", ...), ("value mask", ...)]``.
    cmap : str or None
        Colormap of the overlays; ``None`` draws no colour scale.
    scale_labels : (str, str)
        Text at the low and the high end of the scale (e.g. the normalisation used).

    Returns
    -------
    numpy.ndarray
        One RGB uint8 image.
    """
    if not panels:
        raise ValueError("labelled_panels needs at least one panel")
    body = side_by_side(*[img for _, img in panels], gap=gap)
    width = body.shape[1]
    head = np.zeros((title_height, width, 3), np.uint8)
    x = 0
    for title, img in panels:
        _text(head, title, x + 3, title_height - 4)
        x += img.shape[1] + gap
    parts = [head, body]
    if cmap is not None:
        lo, hi = scale_labels
        # room for the longer end label, measured in the font it is drawn in
        text_w = 8 + max(cv2.getTextSize(t, cv2.FONT_HERSHEY_SIMPLEX, 0.35, 1)[0][0] for t in (lo, hi))
        bar = np.zeros((bar_height + 6, width, 3), np.uint8)
        _text(bar, lo, 3, bar_height + 2, scale=0.35)
        x0, x1 = text_w, max(text_w + 10, width - text_w)
        bar[3:3 + bar_height, x0:x1] = colorize(np.linspace(0.0, 1.0, x1 - x0))[None, :, :]
        _text(bar, hi, x1 + 4, bar_height + 2, scale=0.35)
        parts.append(bar)
    return np.concatenate(parts, axis=0)
