"""Agent networks, the common agent interface and checkpoint loading."""

from .base import ActorCriticAgent, Agent, QAgent
from .checkpoint import advantage_stream_agent, build_agent, save_agent
from .cleanrl import load_cleanrl
from .dqn import AdvantageStream, DQNConfig, DQNNet
from .foreign import states_from_obs, states_to_obs
from .loading import load_agent
from .mask_a3c import VARIANTS, MaskA3CConfig, MaskA3CNet
from .official import OFFICIAL_GAMES, fetch_official, load_official
from .sb3 import load_sb3
from .wrap import wrap_agent

__all__ = [
    "Agent", "QAgent", "ActorCriticAgent", "DQNConfig", "DQNNet", "MaskA3CConfig", "MaskA3CNet", "VARIANTS",
    "AdvantageStream", "advantage_stream_agent", "build_agent", "load_agent", "save_agent", "load_official", "fetch_official", "OFFICIAL_GAMES",
    "wrap_agent", "load_sb3", "load_cleanrl", "states_from_obs", "states_to_obs",
]
