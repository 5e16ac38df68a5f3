"""Agent networks, the common agent interface and the loaders of every agent format.

==============  ==========================================================================
module          holds
==============  ==========================================================================
``base``        :class:`Agent`, :class:`QAgent`, :class:`ActorCriticAgent`; state validation
``dqn``         :class:`DQNNet` (Huber's DQN), :class:`AdvantageStream`
``mask_a3c``    :class:`MaskA3CNet` (Itaya's Mask-A3C)
``loading``     :func:`load_agent`: one entry point for every spec below
``checkpoint``  our format (safetensors + ``meta.json``): :func:`save_agent`, ``load_checkpoint``
``official``    the official Mask-A3C checkpoints (``official:<Game>``)
``sb3``         Stable-Baselines3 ``.zip`` files (``sb3:[<Game>:]<model.zip>``)
``cleanrl``     CleanRL ``.cleanrl_model`` files (``cleanrl:[<Game>:]<file>``)
``keras``       Keras HDF5 Q-networks, e.g. Huber et al.'s (``keras:[<Game>:]<file.h5>``)
``foreign``     what ``sb3`` and ``cleanrl`` share: :func:`states_from_obs`, game and tensor reading
``wrap``        :func:`wrap_agent`: any ``torch.nn.Module``
``_weights``    sha256 of files and weights, strict state-dict loading (used by all loaders)
==============  ==========================================================================
"""

from .base import ActorCriticAgent, Agent, QAgent
from .checkpoint import advantage_stream_agent, build_agent, save_agent
from .cleanrl import load_cleanrl
from .dqn import AdvantageStream, DQNConfig, DQNNet
from .foreign import states_from_obs, states_to_obs
from .keras import load_keras
from .loading import load_agent
from .mask_a3c import VARIANTS, MaskA3CConfig, MaskA3CNet
from .official import OFFICIAL_GAMES, fetch_official, load_official
from .sb3 import load_sb3
from .wrap import wrap_agent

__all__ = [
    "Agent", "QAgent", "ActorCriticAgent", "DQNConfig", "DQNNet", "MaskA3CConfig", "MaskA3CNet", "VARIANTS",
    "AdvantageStream", "advantage_stream_agent", "build_agent", "load_agent", "save_agent", "load_official", "fetch_official",
    "OFFICIAL_GAMES", "wrap_agent", "load_sb3", "load_cleanrl", "load_keras", "states_from_obs", "states_to_obs",
]
