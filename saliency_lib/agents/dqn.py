"""Nature-CNN Q-network in the layout of Huber et al. (2021), with an optional dueling head."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["DQNConfig", "DQNNet", "AdvantageStream"]


@dataclass(frozen=True)
class DQNConfig:
    """Architecture of :class:`DQNNet`.

    Attributes
    ----------
    n_actions : int
        Size of the minimal action set.
    in_frames : int
        Stacked frames (channels) of the 84×84 input.
    hidden : int
        Width of the fully connected layer (Mnih et al. 2015: 512; Huber's Keras models: 256).
    padding : {"valid", "same"}
        ``"valid"`` is the Nature-DQN layout (20×20 → 9×9 → 7×7 maps), the default:
        it trains twice as fast here as ``"same"``, which reproduces the TF-SAME padding
        of the paper's Keras models (21×21 → 11×11 → 11×11) for loading such weights.
    dueling : bool
        Dueling head (V + A − mean A) on top of the shared fc layer.
    """

    n_actions: int
    in_frames: int = 4
    hidden: int = 512
    padding: str = "valid"
    dueling: bool = True

    def __post_init__(self):
        if self.padding not in ("same", "valid"):
            raise ValueError(f"padding must be 'same' or 'valid', got {self.padding!r}")
        if self.n_actions < 1 or self.hidden < 1 or self.in_frames < 1:
            raise ValueError(f"n_actions, hidden and in_frames must be positive, got {asdict(self)}")


class DQNNet(nn.Module):
    """Q-network: conv1 (32, 8×8/4) → conv2 (64, 4×4/2) → conv3 (64, 3×3/1) → fc → output.

    Input ``(N, in_frames, 84, 84)`` float in [0, 1]; output Q-values ``(N, n_actions)``.

    Notes
    -----
    The dueling variant keeps a single shared ``fc`` layer and puts two linear
    heads on it (``out_value`` and ``out_adv``). This keeps the paper's five-layer
    cascade (output → fc → conv3 → conv2 → conv1) for the sanity checks and the
    checkpoint under 10 MB.
    """

    def __init__(self, config: DQNConfig):
        super().__init__()
        self.config = config
        same = config.padding == "same"
        self.conv1 = nn.Conv2d(config.in_frames, 32, 8, stride=4, padding=2 if same else 0)
        self.conv2 = nn.Conv2d(32, 64, 4, stride=2)
        self.conv3 = nn.Conv2d(64, 64, 3, stride=1, padding=1 if same else 0)
        side = 11 if same else 7
        self.fc = nn.Linear(64 * side * side, config.hidden)
        if config.dueling:
            self.out_value = nn.Linear(config.hidden, 1)
            self.out_adv = nn.Linear(config.hidden, config.n_actions)
        else:
            self.out = nn.Linear(config.hidden, config.n_actions)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate-layer activations ``(N, hidden)``."""
        x = F.relu(self.conv1(x))
        if self.config.padding == "same":  # TF-SAME for 4×4/2 on 21×21: 1 before, 2 after
            x = F.pad(x, (1, 2, 1, 2))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        return F.relu(self.fc(x.flatten(1)))

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """Q-values ``(N, n_actions)`` from the penultimate-layer activations ``h`` (dueling: V + A − mean A)."""
        if self.config.dueling:
            adv = self.out_adv(h)
            return self.out_value(h) + adv - adv.mean(dim=1, keepdim=True)
        return self.out(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q-values ``(N, n_actions)`` of states ``x``."""
        return self.head(self.features(x))

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """Layers from the output down, for cascading randomisation."""
        out = [self.out_value, self.out_adv] if self.config.dueling else [self.out]
        return [("output", out), ("fc", [self.fc]), ("conv3", [self.conv3]), ("conv2", [self.conv2]), ("conv1", [self.conv1])]


class AdvantageStream(nn.Module):
    """The advantage stream of a dueling :class:`DQNNet`, read as a single-stream Q-network.

    Its output is the un-centred advantage ``out_adv(fc)``, without the value stream. Huber
    et al.'s Keras agents may have been exported this way: their converter builds the
    dueling graph but saves only the action stream (reference notes §1.3, an open question).
    Explaining and degrading this output shows how much the paper's numbers can depend on
    that choice. The greedy action is unchanged, since V and the mean advantage are the same
    for every action.

    The wrapped network's parameters are shared, not copied.
    """

    def __init__(self, net: DQNNet):
        super().__init__()
        if not isinstance(net, DQNNet) or not net.config.dueling:
            raise ValueError("AdvantageStream needs a dueling DQNNet (a network with out_value and out_adv heads)")
        self.dueling = net
        self.config = net.config

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate-layer activations ``(N, hidden)`` of the dueling network."""
        return self.dueling.features(x)

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """The un-centred advantages ``out_adv(h)`` ``(N, n_actions)``, read as Q-values."""
        return self.dueling.out_adv(h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The un-centred advantages of states ``x``, read as Q-values ``(N, n_actions)``."""
        return self.head(self.features(x))

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """As the dueling network's, minus the value head, which no longer reaches the output."""
        groups = self.dueling.layer_groups()
        return [("output", [self.dueling.out_adv]), *groups[1:]]
