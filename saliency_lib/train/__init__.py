"""Trainers: double/dueling DQN (Huber preset) and synchronous Mask-A3C actor-critic (Itaya preset)."""

from .a2c import A2CArgs, a3c_loss, a3c_targets, rollout_step, train_a2c
from .dqn import DQNArgs, td_loss, train_dqn
from .replay import FrameReplay, nstep_targets

__all__ = ["DQNArgs", "train_dqn", "td_loss", "A2CArgs", "train_a2c", "a3c_loss", "a3c_targets", "rollout_step", "FrameReplay",
           "nstep_targets"]
