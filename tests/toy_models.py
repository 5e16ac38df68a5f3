"""Tiny agents with known answers, shared by the explainer and metric tests.

``PatchQNet`` looks only at one rectangular patch of the 84×84 input: every correct
saliency method must put its mass there. ``TwoHeadNet`` has two outputs watching two
different patches. ``LinearQNet`` is linear in the input, so RISE's expectation is analytic.
"""

from __future__ import annotations

import torch
from torch import nn

from saliency_lib.agents import QAgent

PATCH = (slice(30, 42), slice(50, 62))  # rows, cols of the watched patch (12×12)
PATCH_B = (slice(60, 72), slice(10, 22))


class PatchQNet(nn.Module):
    """Q-values from a small conv → fc stack that reads only ``PATCH`` of all 4 frames."""

    def __init__(self, n_actions: int = 4, patch=PATCH, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.patch = patch
        self.conv1 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 12 * 12, 32)
        self.out = nn.Linear(32, n_actions)
        for p in self.parameters():
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * (1.0 / max(1, p[0].numel()) ** 0.5))

    def features(self, x):
        r, c = self.patch
        z = torch.relu(self.conv1(x[:, :, r, c]))
        return torch.relu(self.fc(z.flatten(1)))

    def head(self, h):
        return self.out(h)

    def forward(self, x):
        return self.head(self.features(x))

    def layer_groups(self):
        return [("output", [self.out]), ("fc", [self.fc]), ("conv1", [self.conv1])]


class TwoHeadNet(nn.Module):
    """Action 0 reads ``PATCH``, action 1 reads ``PATCH_B`` (brightness-weighted sums)."""

    def __init__(self):
        super().__init__()
        w = torch.zeros(2, 4, 84, 84)
        w[0][:, PATCH[0], PATCH[1]] = 1.0
        w[1][:, PATCH_B[0], PATCH_B[1]] = 1.0
        self.register_buffer("w", w)
        self.lin = nn.Linear(2, 2)
        with torch.no_grad():
            self.lin.weight.copy_(torch.eye(2))
            self.lin.bias.zero_()

    def forward(self, x):
        s = torch.einsum("nchw,achw->na", x, self.w) / 576.0  # mean brightness of the patch
        return self.lin(torch.tanh(s))

    def layer_groups(self):
        return [("output", [self.lin])]


class LinearQNet(nn.Module):
    """Q = W·x + b with a fixed random W (for analytic RISE)."""

    def __init__(self, n_actions: int = 3, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("w", torch.randn(n_actions, 4, 84, 84, generator=g) / 100)
        self.b = nn.Parameter(torch.zeros(n_actions))

    def forward(self, x):
        return torch.einsum("nchw,achw->na", x, self.w) + self.b


def as_agent(net: nn.Module, n_actions: int) -> QAgent:
    return QAgent(net, game="Breakout", preset="dqn", n_actions=n_actions, meta={"source": "tests"})


def random_states(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 4, 84, 84, generator=g)
