"""Agent networks, the common agent interface and checkpoint loading."""

from .adapters import load_cleanrl, load_sb3, states_from_obs, states_to_obs, wrap_agent
from .base import ActorCriticAgent, Agent, QAgent
from .checkpoint import advantage_stream_agent, build_agent, load_agent, save_agent
from .dqn import AdvantageStream, DQNConfig, DQNNet
from .mask_a3c import VARIANTS, MaskA3CConfig, MaskA3CNet
from .official import OFFICIAL_GAMES, fetch_official, load_official

__all__ = [
    "Agent", "QAgent", "ActorCriticAgent", "DQNConfig", "DQNNet", "MaskA3CConfig", "MaskA3CNet", "VARIANTS",
    "AdvantageStream", "advantage_stream_agent", "build_agent", "load_agent", "save_agent", "load_official", "fetch_official", "OFFICIAL_GAMES",
    "wrap_agent", "load_sb3", "load_cleanrl", "states_from_obs", "states_to_obs",
]
