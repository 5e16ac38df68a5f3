"""A straightforward single-file DQN loop in the style of CleanRL's ``dqn_atari.py``.

Written for ``benchmarks/training.py`` as the speed reference: one environment
(our ``dqn`` preset in training mode), a replay buffer that stores the full uint8
observation and next observation of every transition, the Nature CNN, Adam, batch 32
every 4 steps, a target network, linear epsilon decay. Not used for any result.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class QNetwork(nn.Module):
    def __init__(self, n_actions: int):
        super().__init__()
        self.network = nn.Sequential(
            nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(), nn.Linear(512, n_actions),
        )

    def forward(self, x):
        return self.network(x / 255.0)


def run(game: str = "Breakout", total_steps: int = 10_000, learning_starts: int = 2_000, buffer_size: int = 100_000,
        seed: int = 0):
    from saliency_lib.envs import make_env

    env = make_env(game, "dqn", mode="train")
    n_actions = env.action_space.n
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    q, target = QNetwork(n_actions), QNetwork(n_actions)
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-4)
    size = min(buffer_size, total_steps)
    obs_buf = np.zeros((size, 4, 84, 84), np.uint8)
    next_buf = np.zeros((size, 4, 84, 84), np.uint8)
    act_buf = np.zeros(size, np.int64)
    rew_buf = np.zeros(size, np.float32)
    done_buf = np.zeros(size, np.float32)
    obs, _ = env.reset(seed=seed)
    obs = (obs * 255).astype(np.uint8)
    ptr = full = 0
    for step in range(total_steps):
        eps = max(0.01, 1.0 - step / (0.1 * total_steps))
        if rng.random() < eps:
            a = int(rng.integers(n_actions))
        else:
            with torch.no_grad():
                a = int(q(torch.from_numpy(obs[None]).float()).argmax())
        nxt, r, term, trunc, _ = env.step(a)
        nxt = (nxt * 255).astype(np.uint8)
        obs_buf[ptr], next_buf[ptr], act_buf[ptr], rew_buf[ptr], done_buf[ptr] = obs, nxt, a, r, float(term)
        ptr = (ptr + 1) % size
        full = max(full, ptr)
        obs = nxt
        if term or trunc:
            obs, _ = env.reset()
            obs = (obs * 255).astype(np.uint8)
        if step > learning_starts and step % 4 == 0:
            idx = rng.integers(0, full, 32)
            with torch.no_grad():
                y = (torch.from_numpy(rew_buf[idx]) + 0.99 * target(torch.from_numpy(next_buf[idx]).float()).max(1).values
                     * (1 - torch.from_numpy(done_buf[idx])))
            qa = q(torch.from_numpy(obs_buf[idx]).float()).gather(1, torch.from_numpy(act_buf[idx])[:, None])[:, 0]
            loss = F.mse_loss(qa, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 1000 == 0:
                target.load_state_dict(q.state_dict())
    env.close()
