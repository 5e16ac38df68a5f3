"""Saliency videos: one greedy game with a method's map over every frame, and the writer behind them.

Three layers, each usable on its own:

* :class:`VideoWriter` writes RGB frames to an MP4 (H.264 through ``imageio-ffmpeg``,
  whose wheel ships its own ffmpeg binary) or an animated GIF (Pillow), chosen by the
  file's suffix (:data:`VIDEO_SUFFIXES`). It streams: an MP4 holds no frame in memory,
  a GIF holds each frame as an 8-bit palette image until it is closed. The file appears
  under its name only when the writer closes without an error.
* :func:`saliency_frame` composes one frame of the video: the game frame with the map
  overlaid (left), the agent's output as a bar chart with the chosen action highlighted
  (right), titles above and the colour scale below (:func:`saliency_lib.viz.labelled_panels`).
* :func:`write_saliency_video` plays greedy games in the evaluation environment of
  :mod:`saliency_lib.play` (protocol ``"greedy"``) and explains the states it sees in
  chunks, one :meth:`~saliency_lib.explainers.Explainer.attribute` call per chunk, as the
  sweep explains its units: the explainers' fast paths (incremental inference, batched
  forward passes) apply. It measures the maps per second of those calls.

Colour scale
------------
Each map is min-max scaled over its own frame: the colour scale runs from the frame's
least to its most salient pixel. Perturbation maps of different states differ by orders
of magnitude, so one scale for the whole game would leave most frames dark; a constant
map (no pixel more salient than another) leaves the frame as it is. This differs from
:func:`saliency_lib.game_video.write_gif`, which keeps the official Mask-A3C visualiser's
scale over the whole game for the masks.
"""

from __future__ import annotations

import difflib
import inspect
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cv2
import numpy as np
import torch

from .agents.base import Agent
from .validation import check_float, check_int
from .viz import labelled_panels, map84_to_frame, mask_to_frame, overlay

__all__ = [
    "VIDEO_SUFFIXES", "VideoWriter", "check_video_path", "map_heat", "action_chart", "saliency_frame",
    "check_method", "video_explainer", "action_names", "VideoSummary", "write_saliency_video",
]

#: File suffixes :class:`VideoWriter` writes, and the format each one gets.
VIDEO_SUFFIXES = {".mp4": "MP4 (H.264, yuv420p)", ".gif": "animated GIF"}
#: MP4 frames are padded (black, bottom and right) to a multiple of this, so ffmpeg never resamples them.
_MACRO_BLOCK = 16
#: Colours of the bar chart (RGB): the chosen action's bar, the other bars, the axis and the text.
CHOSEN_RGB = (255, 160, 0)
OTHER_RGB = (120, 120, 120)
_AXIS_RGB = (200, 200, 200)
_TEXT_RGB = (255, 255, 255)


def check_video_path(path: str | os.PathLike) -> Path:
    """Check that ``path`` has a video suffix and can be written; create its folder.

    Parameters
    ----------
    path : str or path-like
        The video to write: ``*.mp4`` or ``*.gif`` (:data:`VIDEO_SUFFIXES`).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        For another suffix, or a path whose folder cannot be created or written
        (checked by creating and removing a file there; an existing file is left as it is).
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        allowed = ", ".join(f"{s} ({what})" for s, what in VIDEO_SUFFIXES.items())
        what = f"unknown video suffix {p.suffix!r} of {str(p)!r}" if p.suffix else f"the video {str(p)!r} has no suffix"
        raise ValueError(f"{what}; the suffix chooses the format: {allowed}")
    if p.is_dir():
        raise ValueError(f"cannot write the video {str(p)!r}: it is a directory; give a file name ending in .mp4 or .gif")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=p.parent, prefix=f".probe-{p.name}.")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ValueError(f"cannot write the video {str(p)!r}: {e.strerror or e} ({e.filename or p.parent})") from None
    return p


class VideoWriter:
    """Write RGB frames to an MP4 or a GIF, chosen by the suffix of ``path``.

    Use it as a context manager; on an error inside the block no file is left behind
    (the frames go to a temporary file beside ``path``, moved over it on a clean close).

    Parameters
    ----------
    path : str or path-like
        ``*.mp4`` or ``*.gif`` (see :func:`check_video_path`).
    fps : float
        Frames per second (> 0). A GIF stores each frame's duration in hundredths of a
        second, so its rate is rounded to that.
    quality : float, optional
        MP4 only: imageio-ffmpeg's quality, 0 (worst) to 10 (best); default 7.

    Notes
    -----
    Every frame must have the first frame's shape. An MP4 frame is padded with black to
    a multiple of 16 pixels in each direction (H.264's macro-block) rather than resized.
    A GIF frame becomes an adaptive 256-colour palette image on arrival, which is what
    Pillow's GIF encoder does on saving; holding palette images (1 byte a pixel) keeps a
    long GIF's memory a third of RGB frames'. Pillow merges consecutive identical frames
    of a GIF into one longer frame; the videos here title every frame with its step, so
    no two are identical.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "noise.gif")
    >>> with VideoWriter(path, fps=10) as w:
    ...     for i in range(3):
    ...         w.append(np.full((8, 8, 3), 80 * i, np.uint8))
    >>> w.frames
    3
    """

    def __init__(self, path: str | os.PathLike, *, fps: float, quality: float = 7.0):
        self.path = check_video_path(path)
        self.fps = check_float("fps", fps, low=0.0, low_open=True, hint="; pass frames per second, e.g. 15")
        self.quality = check_float("quality", quality, low=0.0, high=10.0)
        self.format = self.path.suffix.lower()
        self.frames = 0
        self._shape: tuple[int, ...] | None = None
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".tmp-{self.path.name}.", suffix=self.format)
        os.close(fd)
        self._tmp = Path(tmp)
        self._gif: list = []
        self._mp4 = None
        self._closed = False

    # -- context manager -----------------------------------------------------------------
    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    # -- frames ---------------------------------------------------------------------------
    def append(self, frame: np.ndarray) -> None:
        """Add one frame: an ``(H, W, 3)`` uint8 RGB array, the same shape as the first."""
        if self._closed:
            raise ValueError(f"the video {str(self.path)!r} is closed; open a new VideoWriter to write more frames")
        frame = np.asarray(frame)
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError("a video frame must be an (H, W, 3) uint8 RGB array, "
                             f"got shape {frame.shape} and dtype {frame.dtype}")
        if self._shape is None:
            self._shape = frame.shape
            if self.format == ".mp4":
                self._open_mp4(frame.shape)
        elif frame.shape != self._shape:
            raise ValueError(f"every frame of a video must have the first frame's shape {self._shape}, got {frame.shape}")
        if self.format == ".mp4":
            h, w = frame.shape[:2]
            ph, pw = -h % _MACRO_BLOCK, -w % _MACRO_BLOCK
            if ph or pw:
                frame = np.pad(frame, ((0, ph), (0, pw), (0, 0)))
            self._mp4.send(np.ascontiguousarray(frame))
        else:
            from PIL import Image

            self._gif.append(Image.fromarray(frame).convert("P", palette=Image.Palette.ADAPTIVE))
        self.frames += 1

    def _open_mp4(self, shape: tuple[int, ...]) -> None:
        try:
            import imageio_ffmpeg
        except ImportError:  # pragma: no cover - a runtime dependency; the message says how to get it
            raise ValueError("writing MP4 needs the package imageio-ffmpeg: "
                             "pip install imageio-ffmpeg (or write a .gif)") from None
        h, w = shape[:2]
        size = (w + (-w % _MACRO_BLOCK), h + (-h % _MACRO_BLOCK))
        self._mp4 = imageio_ffmpeg.write_frames(str(self._tmp), size, fps=self.fps, quality=self.quality, codec="libx264",
                                               pix_fmt_in="rgb24", pix_fmt_out="yuv420p", macro_block_size=_MACRO_BLOCK,
                                               ffmpeg_log_level="error")
        self._mp4.send(None)  # starts ffmpeg

    def close(self) -> Path:
        """Finish the file and move it to ``path``; returns ``path``."""
        if self._closed:
            return self.path
        self._closed = True
        try:
            if self.frames == 0:
                raise ValueError(f"no frame was written to {str(self.path)!r}; a video needs at least one frame")
            if self.format == ".mp4":
                self._mp4.close()
            else:
                first, *rest = self._gif
                first.save(self._tmp, format="GIF", save_all=True, append_images=rest, duration=1000.0 / self.fps, loop=0)
                self._gif = []
            os.chmod(self._tmp, 0o644)
            os.replace(self._tmp, self.path)
        except BaseException:
            self._tmp.unlink(missing_ok=True)
            raise
        return self.path

    def abort(self) -> None:
        """Stop without writing ``path`` (the temporary file is removed)."""
        self._closed = True
        if self._mp4 is not None:
            try:
                self._mp4.close()
            except Exception:  # noqa: BLE001 - ffmpeg's own error does not matter when the video is dropped
                pass
        self._gif = []
        self._tmp.unlink(missing_ok=True)


# -- one frame of a saliency video -----------------------------------------------------------
def map_heat(map_: np.ndarray, *, preset: str, game: str,
             frame_hw: tuple[int, int] = (210, 160)) -> tuple[np.ndarray, np.ndarray | None]:
    """A saliency map as a [0, 1] heat map on the raw frame, and where it is defined.

    The map is min-max scaled over itself (a constant map gives zeros) and resized to the
    raw frame: a ``"dqn"`` map (84 × 84, the whole screen) bilinearly; a ``"mask_a3c"`` map
    (80 × 80, the game's crop) back through the crop as the official visualiser
    (:func:`saliency_lib.viz.mask_to_frame`).

    Returns
    -------
    heat : numpy.ndarray
        ``frame_hw`` float32 in [0, 1].
    where : numpy.ndarray or None
        Boolean ``frame_hw``: the rows the agent sees (``"mask_a3c"``); ``None`` for the whole frame.
    """
    m = np.asarray(map_, dtype=np.float32)
    lo, hi = float(m.min()), float(m.max())
    m = (m - lo) / (hi - lo) if hi > lo else np.zeros_like(m)
    if preset == "mask_a3c":
        from .games import mask_a3c_crop

        heat, inside = mask_to_frame(m, mask_a3c_crop(game), frame_hw)
        return np.clip(heat, 0.0, 1.0), inside
    return np.clip(map84_to_frame(m, frame_hw), 0.0, 1.0), None


def _text(img: np.ndarray, text: str, x: int, y: int, scale: float, color=_TEXT_RGB) -> None:
    cv2.putText(img, text, (int(x), int(y)), cv2.FONT_HERSHEY_SIMPLEX, scale, color, 1, cv2.LINE_AA)


def action_chart(values: Sequence[float], names: Sequence[str], chosen: int, *, height: int, width: int) -> np.ndarray:
    """The agent's output per action as horizontal bars, the chosen action's bar highlighted.

    One row per action, top to bottom in action order: the action's name, a bar from
    zero to the value (to the left for a negative value) and the value. The chosen
    action's bar and name are drawn in :data:`CHOSEN_RGB`, the others' bars in
    :data:`OTHER_RGB`; a vertical line marks zero when some value is negative.

    Parameters
    ----------
    values : sequence of float
        One value per action (Q-values or probabilities).
    names : sequence of str
        One name per action (ASCII: the ALE's action names).
    chosen : int
        Index of the action taken.
    height, width : int
        Size of the chart in pixels.

    Returns
    -------
    numpy.ndarray
        ``(height, width, 3)`` uint8 RGB.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    n = v.size
    if n == 0 or len(names) != n:
        raise ValueError(f"action_chart needs one name per value, got {n} values and {len(names)} names")
    if not 0 <= int(chosen) < n:
        raise ValueError(f"chosen must be an action index in [0, {n}), got {chosen}")
    img = np.zeros((int(height), int(width), 3), np.uint8)
    row_h = max(6, min(28, (height - 8) // n))
    font = max(0.3, min(0.45, row_h / 40))
    label_w = 6 + max(cv2.getTextSize(str(s), cv2.FONT_HERSHEY_SIMPLEX, font, 1)[0][0] for s in names)
    value_w = 6 + cv2.getTextSize("-00.00", cv2.FONT_HERSHEY_SIMPLEX, font, 1)[0][0]
    x_left, x_right = label_w + 2, max(label_w + 12, width - value_w)
    finite = v[np.isfinite(v)]
    lo = min(0.0, float(finite.min())) if finite.size else 0.0
    hi = max(0.0, float(finite.max())) if finite.size else 1.0
    span = hi - lo if hi > lo else 1.0
    x0 = x_left + int(round((0.0 - lo) / span * (x_right - x_left)))
    top = 4
    for k in range(n):
        y = top + k * row_h
        color = CHOSEN_RGB if k == chosen else OTHER_RGB
        _text(img, str(names[k]), 3, y + row_h - max(2, row_h // 4), font, CHOSEN_RGB if k == chosen else _TEXT_RGB)
        if np.isfinite(v[k]):
            xv = x_left + int(round((v[k] - lo) / span * (x_right - x_left)))
            a, b = sorted((x0, xv))
            pad = max(1, row_h // 6)
            img[y + pad:y + row_h - pad, a:max(b, a + 1)] = color
            _text(img, f"{v[k]:.2f}", x_right + 3, y + row_h - max(2, row_h // 4), font * 0.9, _TEXT_RGB)
    if lo < 0.0:
        img[top:top + n * row_h, x0] = _AXIS_RGB
    return img


def saliency_frame(frame: np.ndarray, heat: np.ndarray, values: Sequence[float], names: Sequence[str], chosen: int, *,
                   where: np.ndarray | None = None, title: str = "", output_label: str = "Q(s,a)", scale: int = 2,
                   chart_width: int | None = None) -> np.ndarray:
    """One frame of a saliency video.

    Parameters
    ----------
    frame : numpy.ndarray
        The raw RGB game frame ``(H, W, 3)`` uint8.
    heat : numpy.ndarray
        ``(H, W)`` heat in [0, 1] (:func:`map_heat`), blended over the frame with weight
        ``0.7 · heat`` (:func:`saliency_lib.viz.overlay`): where it is 0 the frame is unchanged.
    values, names, chosen
        The agent's output per action, the actions' names and the chosen action (:func:`action_chart`).
    where : numpy.ndarray, optional
        Boolean ``(H, W)``: overlay only there (the agent's crop).
    title : str
        Title above the game frame (ASCII), e.g. the game, the step and the chosen action.
    output_label : str
        Title above the chart (ASCII), e.g. ``"Q(s,a)"`` or ``"pi(a|s)"``.
    scale : int
        The game frame is enlarged this many times (nearest neighbour), so the pixels stay sharp.
    chart_width : int, optional
        Width of the chart (default ``100 · scale``).

    Returns
    -------
    numpy.ndarray
        ``(16 + H · scale + 16, W · scale + 4 + chart_width, 3)`` uint8 RGB: titles, the two
        panels, the colour scale ("frame min" to "frame max").
    """
    scale = check_int("scale", scale, minimum=1)
    shown = overlay(frame, heat, where=where)
    if scale > 1:
        shown = cv2.resize(shown, (frame.shape[1] * scale, frame.shape[0] * scale), interpolation=cv2.INTER_NEAREST)
    chart = action_chart(values, names, chosen, height=shown.shape[0], width=chart_width or 100 * scale)
    return labelled_panels([(title, shown), (output_label, chart)], scale_labels=("frame min", "frame max"))


# -- the explainer and the agent's outputs ---------------------------------------------------
def check_method(method: str) -> str:
    """``method`` if it is a name of :data:`saliency_lib.explainers.EXPLAINERS`, else a ``ValueError``.

    The error names the closest registered names and lists them all.
    """
    from .explainers import EXPLAINERS

    if method not in EXPLAINERS:
        close = difflib.get_close_matches(str(method), list(EXPLAINERS), n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        raise ValueError(f"unknown method {method!r}; {hint}valid methods: {', '.join(EXPLAINERS)}")
    return method


def video_explainer(agent: Agent, method: str, *, seed: int = 0, batch_size: int | None = None):
    """The registry's explainer ``method`` for ``agent``, with one clear error for each misuse.

    Stochastic methods get ``seed``. Raises ``ValueError`` for an unknown method (naming the
    closest registered ones) and for a mask method on an agent without that mask.
    """
    from .explainers import EXPLAINERS, get_explainer

    ctor = EXPLAINERS[check_method(method)]
    branch = ctor.keywords.get("branch")
    if branch is not None and f"{branch}_mask" not in agent.outputs:
        have = [o.removesuffix("_mask") for o in agent.outputs if o.endswith("_mask")]
        fix = f"this agent has the {' and '.join(have)} mask" if have else "only Mask-A3C agents with attention masks have them"
        raise ValueError(f"method {method!r} explains with the agent's {branch} attention mask, which {type(agent).__name__} "
                         f"({agent.game}, preset {agent.preset}) does not have; {fix}; choose another method")
    params: dict = {"batch_size": batch_size}
    if "seed" in inspect.signature(ctor.func).parameters:
        params["seed"] = seed
    return get_explainer(method, agent, **params)


def _shown_output(agent: Agent) -> tuple[str, str]:
    """The output drawn as bars (``q``, else ``probs``) and its title."""
    if "q" in agent.outputs:
        return "q", "Q(s,a)"
    return "probs", "pi(a|s)"  # actor-critics; _step takes the softmax of the action scores where "probs" is missing


def action_names(agent: Agent) -> tuple[str, ...]:
    """The ALE's names of the agent's actions (``"a0"``, … when the counts disagree)."""
    from .play import play_env

    env = play_env(agent, True)
    try:
        return _names_of(env, agent.n_actions)
    finally:
        env.close()


def _names_of(env, n_actions: int) -> tuple[str, ...]:
    names = tuple(env.unwrapped.get_action_meanings())
    return names if len(names) == n_actions else tuple(f"a{k}" for k in range(n_actions))


# -- a whole video ---------------------------------------------------------------------------
@dataclass
class VideoSummary:
    """What :func:`write_saliency_video` did and how fast."""

    path: str
    method: str
    game: str
    frames: int  # frames written = states explained
    episodes: int
    scores: list[float] = field(default_factory=list)  # raw score of each game (up to the step cap)
    lengths: list[int] = field(default_factory=list)  # agent steps of each game
    explain_seconds: float = 0.0  # time inside the explainer's attribute calls
    wall_seconds: float = 0.0  # the whole call: play, explain, draw and encode
    maps_per_second: float = 0.0  # frames / explain_seconds
    forward_passes: int = 0  # network rows evaluated per map, the clean pass included

    def to_dict(self) -> dict:
        """The summary as a plain dict, e.g. for a JSON line."""
        return asdict(self)

    def line(self) -> str:
        """One line for a terminal: the maps per second and the times."""
        return (f"{self.method} on {self.game}: {self.frames} maps in {self.explain_seconds:.1f} s, "
                f"{self.maps_per_second:.1f} maps/s ({self.wall_seconds:.1f} s in all, with play and encoding) -> {self.path}")


@torch.no_grad()
def _step(agent: Agent, obs, hidden, shown: str):
    x = torch.as_tensor(np.asarray(obs), dtype=torch.float32, device=agent.device)[None]
    out = agent(x, hidden)
    action = int(out[agent.default_output].argmax(1)[0])
    scores = out[shown] if shown in out else torch.softmax(out[agent.default_output].float(), dim=1)
    values = scores[0].float().cpu().numpy()
    return x[0], action, values, out.get("hidden")


def write_saliency_video(agent: Agent, method, path: str | os.PathLike, *, max_steps: int = 1000, seed: int = 0, fps: float = 15,
                         episodes: int = 1, chunk: int = 32, scale: int = 2, batch_size: int | None = None,
                         progress: bool = True) -> VideoSummary:
    """Play greedy games and write a video with ``method``'s map over every frame.

    Game ``i`` is played in the greedy evaluation environment of :mod:`saliency_lib.play`
    (the first from the fixed start, later ones after 1..30 NOOPs for ``"dqn"`` agents),
    reset with ``seed + i``, for at most ``max_steps`` agent steps; a recurrent agent's
    state is zeroed at each life loss, as in :func:`saliency_lib.play.play_episode`.
    Every state is explained, ``chunk`` states per ``attribute`` call, each for the action
    the agent takes there, with the recurrent state the agent had there.

    Parameters
    ----------
    agent : Agent
    method : str or Explainer
        A name of :data:`saliency_lib.explainers.EXPLAINERS` (stochastic methods get
        ``seed``), or an explainer built for ``agent``.
    path : str or path-like
        ``*.mp4`` or ``*.gif`` (:class:`VideoWriter`).
    max_steps : int
        Cap on agent steps per game (>= 1).
    seed : int
    fps : float
        Frames per second of the video (> 0).
    episodes : int
        Games, one after the other in the same video (>= 1).
    chunk : int
        States per ``attribute`` call (>= 1).
    scale : int
        Enlargement of the game frame (:func:`saliency_frame`).
    batch_size : int, optional
        Network rows per forward call of the explainer (default: the agent's).
    progress : bool
        A tqdm bar of explained states.

    Returns
    -------
    VideoSummary
        With the measured maps per second (maps over the time spent in ``attribute``).

    Raises
    ------
    ValueError
        For an invalid argument, an unknown method, a mask method on an agent without that
        mask, or a path that is not a writable ``.mp4``/``.gif``; checked before playing.
    """
    from tqdm.auto import tqdm

    from .envs import raw_frame
    from .explainers import Explainer
    from .play import play_env

    max_steps = check_int("max_steps", max_steps, minimum=1, hint="; pass the number of agent steps per game")
    episodes = check_int("episodes", episodes, minimum=1)
    chunk = check_int("chunk", chunk, minimum=1)
    scale = check_int("scale", scale, minimum=1)
    check_float("fps", fps, low=0.0, low_open=True, hint="; pass frames per second, e.g. 15")
    check_video_path(path)
    if isinstance(method, Explainer):
        if method.agent is not agent:
            raise ValueError("the explainer passed as method is bound to another agent; build it for this agent or pass its name")
        explainer = method
    else:
        explainer = video_explainer(agent, str(method), seed=seed, batch_size=batch_size)
    shown, label = _shown_output(agent)
    names: tuple[str, ...] = ()
    summary = VideoSummary(path=str(path), method=explainer.method_name, game=agent.game, frames=0, episodes=episodes)
    t_start = time.perf_counter()

    def flush(buf: list, writer: VideoWriter, game: int) -> None:
        x = torch.stack([b[0] for b in buf])
        actions = torch.tensor([b[1] for b in buf], dtype=torch.long, device=x.device)
        hid = None
        if buf[0][3] is not None:
            hid = tuple(torch.cat(h) for h in zip(*(b[3] for b in buf)))
        t0 = time.perf_counter()
        res = explainer.attribute(x, target=actions, hidden=hid)
        maps = res.maps.detach().cpu().numpy()
        summary.explain_seconds += time.perf_counter() - t0
        summary.forward_passes = int(res.forward_passes)
        for (_, action, values, _, rgb, t), m in zip(buf, maps):
            heat, where = map_heat(m, preset=agent.preset, game=agent.game, frame_hw=rgb.shape[:2])
            title = f"{agent.game} {'game ' + str(game + 1) + ' ' if episodes > 1 else ''}step {t}: {names[action]}"
            writer.append(saliency_frame(rgb, heat, values, names, action, where=where, title=title, output_label=label,
                                         scale=scale))
        summary.frames += len(buf)

    with VideoWriter(path, fps=fps) as writer, tqdm(total=max_steps * episodes, desc=f"video {explainer.method_name}", unit="map",
                                                      disable=not progress) as bar:
        for game in range(episodes):
            env = play_env(agent, game == 0)
            names = names or _names_of(env, agent.n_actions)
            try:
                obs, _ = env.reset(seed=seed + game)
                hidden = agent.initial_hidden(1)
                score, t, buf = 0.0, 0, []
                while True:
                    x, action, values, hidden_out = _step(agent, obs, hidden, shown)
                    buf.append((x, action, values, hidden, raw_frame(env).copy(), t))
                    hidden = hidden_out
                    obs, r, term, trunc, info = env.step(action)
                    score += float(r)
                    t += 1
                    if info.get("life_lost") and hidden is not None:
                        hidden = agent.initial_hidden(1)
                    done = bool(term or trunc) or t >= max_steps
                    if len(buf) == chunk or done:
                        flush(buf, writer, game)
                        bar.update(len(buf))
                        buf = []
                    if done:
                        break
            finally:
                env.close()
            summary.scores.append(score)
            summary.lengths.append(t)
        bar.total = summary.frames
        bar.refresh()
    summary.wall_seconds = time.perf_counter() - t_start
    summary.maps_per_second = summary.frames / max(summary.explain_seconds, 1e-9)
    return summary
