"""Replay memory for vectorised Atari DQN with frames shared between overlapping stacks.

Each of the ``num_envs`` streams keeps a ring of single 84×84 uint8 frames (the
newest frame of every observation) with its action, reward, terminal flag and a
``first`` flag for the first observation of a game. A stack of 4 is rebuilt from
4 consecutive frames, with the frames before the start of a game zeroed, exactly
as the environment's stack starts with zeros. Memory is therefore one frame per
transition (≈7 KB) instead of eight.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["FrameReplay", "nstep_targets"]


def nstep_targets(rewards: np.ndarray, terminals: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Discounted n-step reward sums and bootstrap discounts.

    Parameters
    ----------
    rewards, terminals : ndarray, shape (B, n)
        Rewards r_t … r_{t+n-1} and whether each step ended the (life) episode.
    gamma : float

    Returns
    -------
    returns : ndarray (B,)
        Σ_k γ^k r_{t+k}, stopping after the first terminal step.
    discount : ndarray (B,)
        γ^n if no step was terminal, else 0 (no bootstrap).
    """
    b, n = rewards.shape
    alive = np.ones(b, np.float32)
    ret = np.zeros(b, np.float32)
    for k in range(n):
        ret += alive * (gamma**k) * rewards[:, k]
        alive = alive * (1.0 - terminals[:, k].astype(np.float32))
    return ret, alive * gamma**n


class FrameReplay:
    """Ring buffer of ``capacity`` transitions split over ``num_envs`` streams."""

    def __init__(self, capacity: int, num_envs: int, *, frame_shape=(84, 84), stack: int = 4, n_step: int = 1,
                 gamma: float = 0.99, seed: int = 0):
        if capacity < num_envs * (stack + n_step + 1):
            raise ValueError(f"capacity {capacity} is too small for {num_envs} envs")
        self.cap = capacity // num_envs
        self.num_envs, self.stack, self.n_step, self.gamma = num_envs, stack, n_step, gamma
        self.frames = np.zeros((num_envs, self.cap, *frame_shape), np.uint8)
        self.actions = np.zeros((num_envs, self.cap), np.int64)
        self.rewards = np.zeros((num_envs, self.cap), np.float32)
        self.terminal = np.zeros((num_envs, self.cap), bool)
        self.first = np.zeros((num_envs, self.cap), bool)
        self.valid = np.zeros((num_envs, self.cap), bool)  # a transition starts here
        self.t = 0  # steps written per stream
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return min(self.t, self.cap) * self.num_envs

    def add(self, newest_frames: np.ndarray, actions: np.ndarray, rewards: np.ndarray, terminals: np.ndarray, firsts: np.ndarray,
            valid: np.ndarray) -> None:
        """Write one vector step: the newest frame of each observation and what followed it."""
        i = self.t % self.cap
        self.frames[:, i] = newest_frames
        self.actions[:, i] = actions
        self.rewards[:, i] = rewards
        self.terminal[:, i] = terminals
        self.first[:, i] = firsts
        self.valid[:, i] = valid
        self.t += 1

    def _stack(self, env: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Observations at (env, idx) as (B, stack, H, W) uint8."""
        k = self.stack
        offs = np.arange(-(k - 1), 1)
        pos = (idx[:, None] + offs[None]) % self.cap  # (B, k)
        out = self.frames[env[:, None], pos]
        firsts = self.first[env[:, None], pos]  # first[j]: frame j starts a game
        # frame j (< newest) is from an earlier game if any later frame up to the newest starts one
        later_first = np.flip(np.cumsum(np.flip(firsts[:, 1:], 1), 1), 1) > 0
        out[:, :-1][later_first] = 0
        return out

    def sample(self, batch: int, device="cpu"):
        """Sample ``batch`` n-step transitions: (obs, action, return, discount, next_obs)."""
        n, k = self.n_step, self.stack
        filled = min(self.t, self.cap)
        if filled < k + n + 1:
            raise ValueError("not enough transitions in the replay buffer to sample")
        lo = self.t - filled + k - 1  # oldest index whose stack is complete
        hi = self.t - n - 1  # newest index whose n-step successor exists
        envs, idxs, got = [], [], 0
        while got < batch:  # rejection sampling of valid starts (> 95 % are valid)
            e = self.rng.integers(0, self.num_envs, 2 * batch)
            i = self.rng.integers(lo, hi + 1, 2 * batch)
            ok = self.valid[e, i % self.cap]
            envs.append(e[ok])
            idxs.append(i[ok])
            got += int(ok.sum())
        e = np.concatenate(envs)[:batch]
        i = np.concatenate(idxs)[:batch]
        steps = (i[:, None] + np.arange(n)[None]) % self.cap
        ret, disc = nstep_targets(self.rewards[e[:, None], steps], self.terminal[e[:, None], steps], self.gamma)
        obs = self._stack(e, i % self.cap)
        nxt = self._stack(e, (i + n) % self.cap)
        t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
        return t(obs), t(self.actions[e, i % self.cap]), t(ret), t(disc.astype(np.float32)), t(nxt)
