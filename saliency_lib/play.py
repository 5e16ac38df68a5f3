"""Playing and scoring agents with the evaluation protocols of both papers."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from .agents.base import Agent
from .envs import make_env, raw_frame
from .games import mask_a3c_crop
from .viz import mask_to_frame, overlay, side_by_side

__all__ = ["Episode", "play_episode", "evaluate", "write_gif"]


@dataclass
class Episode:
    """One played game."""

    score: float
    steps: int
    frames: list = field(default_factory=list)  # raw RGB frames, when recorded
    masks: dict = field(default_factory=dict)  # name -> list of (10, 10) arrays, when recorded


def _env_for(agent: Agent, first: bool):
    if agent.preset == "dqn":
        # Huber's protocol: the fixed start; later games of the same run start with 1..30 NOOPs.
        return make_env(agent.game, "dqn", mode="eval", fixed_start=True, noop_max=1 if first else 30)
    return make_env(agent.game, "mask_a3c", mode="eval")


@torch.no_grad()
def play_episode(agent: Agent, *, seed: int, first: bool = True, record: bool = False, max_steps: int | None = None, sig5: bool = False) -> Episode:
    """Play one full game greedily and return its raw score.

    ``dqn`` agents use Huber's evaluation wrapper with the fixed start (``first``) or
    1..30 NOOPs; ``mask_a3c`` agents use Itaya's wrappers, with the ConvLSTM state zeroed
    at every life loss.
    """
    env = _env_for(agent, first)
    obs, _ = env.reset(seed=seed)
    hidden = agent.initial_hidden(1)
    ep = Episode(0.0, 0)
    names = [n for n in ("policy_mask", "value_mask") if n in agent.outputs] if record else []
    for n in names:
        ep.masks[n] = []
    while True:
        x = torch.as_tensor(obs, device=agent.device)[None]
        out = agent.forward(x, hidden)
        action = int(out[agent.default_output].argmax(1)[0])
        if record:
            ep.frames.append(raw_frame(env).copy())
            for n in names:
                m = torch.sigmoid(5 * out[n.replace("_mask", "_att")]) if sig5 else out[n]
                ep.masks[n].append(m[0].cpu().numpy())
        hidden = out.get("hidden")
        obs, r, term, trunc, info = env.step(action)
        ep.score += float(r)
        ep.steps += 1
        if info.get("life_lost") and hidden is not None:
            hidden = agent.initial_hidden(1)
        if term or trunc or (max_steps and ep.steps >= max_steps):
            break
    env.close()
    return ep


def evaluate(agent: Agent, episodes: int = 10, seed: int = 0, *, max_steps: int | None = None, progress: bool = True) -> dict:
    """Scores of ``episodes`` greedy games: per-episode list, mean, std and agent steps."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    scores, steps = [], 0
    for i in tqdm(range(episodes), desc=f"evaluate {agent.game}", disable=not progress):
        ep = play_episode(agent, seed=seed + i, first=i == 0, max_steps=max_steps)
        scores.append(ep.score)
        steps += ep.steps
    return {"scores": scores, "mean": float(np.mean(scores)), "std": float(np.std(scores)), "steps": steps, "frames": 4 * steps}


def write_gif(agent: Agent, path: str, *, seed: int = 0, max_steps: int = 1500, every: int = 2, fps: int = 15, display: str = "mask") -> Episode:
    """Write a GIF of one game. Mask-A3C agents get their policy and value masks overlaid.

    Masks are upsampled back through the crop as in the official visualiser and
    shown with one colour scale per branch (min-max over the episode, as the official code).
    ``display="mask"`` shows the mask M used in the forward pass; ``display="sig5"`` shows
    the official visualisation's sigmoid(5·z), whose contrast is much higher.
    """
    if display not in ("mask", "sig5"):
        raise ValueError(f"display must be 'mask' or 'sig5', got {display!r}")
    import imageio.v2 as imageio

    ep = play_episode(agent, seed=seed, record=True, max_steps=max_steps, sig5=display == "sig5")
    crop = mask_a3c_crop(agent.game) if agent.preset == "mask_a3c" else None
    norms = {}
    for n, ms in ep.masks.items():
        arr = np.stack(ms)
        norms[n] = (float(arr.min()), float(arr.max()))
    out = []
    for t in range(0, len(ep.frames), every):
        rgb = ep.frames[t]
        panels = [rgb]
        for n, ms in ep.masks.items():
            lo, hi = norms[n]
            m = (ms[t] - lo) / (hi - lo + 1e-12)
            heat, inside = mask_to_frame(m, crop)
            panels.append(overlay(rgb, heat, where=inside))
        out.append(side_by_side(*panels))
    imageio.mimsave(path, out, duration=1000 / fps, loop=0)
    return ep
