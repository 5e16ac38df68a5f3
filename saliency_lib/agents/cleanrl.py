"""CleanRL models as agents: :func:`load_cleanrl` (``load_agent("cleanrl:PATH")``).

Reads the ``.cleanrl_model`` state dicts of CleanRL's ``dqn_atari.py`` (``QNetwork``)
and ``ppo_atari.py`` (``Agent``) with ``torch.load(weights_only=True)``
(:func:`saliency_lib.agents.foreign.load_tensors`: tensors and containers only, no
code from the file runs), detects the script from the parameter names, and rebuilds
the network in plain torch with the same names, loaded strictly.

How CleanRL's observations map onto our states (``states = obs / 255``), and how its
Atari wrappers differ from ours: :mod:`saliency_lib.agents.foreign`.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from ._weights import load_state_strict, sha256_file
from .base import ActorCriticAgent, Agent, QAgent
from .foreign import FRAMES, check_action_count, check_game, load_tensors

__all__ = ["load_cleanrl", "CleanRLQNetwork", "CleanRLActorCritic"]


def _cleanrl_trunk(n_flatten: int = 3136, features_dim: int = 512) -> list[nn.Module]:
    return [
        nn.Conv2d(FRAMES, 32, 8, stride=4), nn.ReLU(),
        nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(n_flatten, features_dim), nn.ReLU(),
    ]


class CleanRLQNetwork(nn.Module):
    """CleanRL ``dqn_atari.py`` ``QNetwork``: ``network.0 … network.9``, without the ``/255``.

    CleanRL's ``forward`` is ``network(x / 255.0)`` on uint8-valued observations; our
    states already are ``obs / 255``, so they enter ``network`` unchanged.
    """

    def __init__(self, n_actions: int, features_dim: int = 512):
        super().__init__()
        self.network = nn.Sequential(*_cleanrl_trunk(features_dim=features_dim), nn.Linear(features_dim, n_actions))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate-layer activations ``(N, features_dim)``: ``network[:-1]``."""
        return self.network[:-1](x)

    def head(self, h: torch.Tensor) -> torch.Tensor:
        """Q-values ``(N, n_actions)`` from the penultimate-layer activations ``h``."""
        return self.network[-1](h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Q-values ``(N, n_actions)`` of states ``x``."""
        return self.network(x)

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """Layer groups from the output down, for cascading randomisation."""
        n = self.network
        return [("output", [n[9]]), ("fc", [n[7]]), ("conv3", [n[4]]), ("conv2", [n[2]]), ("conv1", [n[0]])]


class CleanRLActorCritic(nn.Module):
    """CleanRL ``ppo_atari.py`` ``Agent``: shared ``network`` trunk, ``actor`` and ``critic``.

    Returns ``logits = actor(h)``, ``value = critic(h)[:, 0]`` and ``features = h``
    for ``h = network(states)`` (CleanRL's ``x / 255.0`` is our state).
    """

    def __init__(self, n_actions: int, features_dim: int = 512):
        super().__init__()
        self.network = nn.Sequential(*_cleanrl_trunk(features_dim=features_dim))
        self.actor = nn.Linear(features_dim, n_actions)
        self.critic = nn.Linear(features_dim, 1)

    def forward(self, x: torch.Tensor, hidden=None) -> dict[str, torch.Tensor]:
        """``logits``, ``value`` and ``features`` of states ``x`` (``hidden`` is ignored: no recurrence)."""
        h = self.network(x)
        return {"logits": self.actor(h), "value": self.critic(h)[:, 0], "features": h}

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """Layer groups from the output down (actor and critic together), for cascading randomisation."""
        n = self.network
        return [("output", [self.actor, self.critic]), ("fc", [n[7]]), ("conv3", [n[4]]), ("conv2", [n[2]]), ("conv1", [n[0]])]


# -- CleanRL --------------------------------------------------------------------------------
_CLEANRL_TRUNK = {f"network.{i}.{p}" for i in (0, 2, 4, 7) for p in ("weight", "bias")}
_CLEANRLLAYOUTS = {
    "dqn_atari": _CLEANRL_TRUNK | {"network.9.weight", "network.9.bias"},
    "ppo_atari": _CLEANRL_TRUNK | {"actor.weight", "actor.bias", "critic.weight", "critic.bias"},
}


def load_cleanrl(path: str | os.PathLike, *, game: str | None = None, device: str | torch.device = "cpu") -> Agent:
    """An agent from a CleanRL ``.cleanrl_model`` (``dqn_atari.py`` or ``ppo_atari.py``).

    Parameters
    ----------
    path : str or path
        The state dict saved by ``torch.save(model.state_dict(), path)``.
    game : str, optional
        The game. Default: read from the path by :func:`~saliency_lib.agents.foreign.infer_game` (CleanRL's run
        directories are named ``<env_id>__<exp_name>__<seed>__<time>``).
    device : str or torch.device, optional

    Returns
    -------
    QAgent or ActorCriticAgent
        Preset ``"dqn"``; ``dqn_atari`` → :class:`QAgent` (:class:`CleanRLQNetwork`),
        ``ppo_atari`` → :class:`ActorCriticAgent` (:class:`CleanRLActorCritic`). The
        script is detected from the parameter names.

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        Not a tensors-only state dict, or parameter names of neither script.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no CleanRL model at {str(path)!r}: expected the .cleanrl_model state dict saved by "
                                "dqn_atari.py or ppo_atari.py")
    state = load_tensors(path, str(path))
    keys = set(state)
    script = next((s for s, layout in _CLEANRLLAYOUTS.items() if keys == layout), None)
    if script is None:
        hint = " (a C51 model: c51_atari is not supported)" if "atoms" in keys else ""
        raise ValueError(
            f"{path} matches neither CleanRL dqn_atari.py (network.0/2/4/7/9) nor ppo_atari.py (network.0/2/4/7, actor, critic)"
            f"{hint}; its parameters are: {', '.join(sorted(keys))}"
        )
    if script == "dqn_atari":
        n_actions, features_dim = map(int, state["network.9.weight"].shape)
        net: nn.Module = CleanRLQNetwork(n_actions, features_dim)
        agent_cls, policy = QAgent, "QNetwork"
    else:
        n_actions, features_dim = map(int, state["actor.weight"].shape)
        net = CleanRLActorCritic(n_actions, features_dim)
        agent_cls, policy = ActorCriticAgent, "Agent"
    load_state_strict(net, state, source=str(path))
    game = check_game(game, path)
    check_action_count(game, n_actions, str(path))
    meta = {
        "source": f"cleanrl:{path}",
        "checkpoint": str(path),
        "sha256": sha256_file(path),
        "library": "cleanrl",
        "algorithm": script,
        "policy": policy,
        "n_actions": n_actions,
        "preprocessing": "CleanRL Atari wrappers + FrameStack(4); states = obs / 255 (see saliency_lib.agents.foreign)",
    }
    return agent_cls(net, game=game, preset="dqn", n_actions=n_actions, meta=meta).to(device)
