"""Trainers: double/dueling DQN (Huber preset) and synchronous Mask-A3C actor-critic (Itaya preset)."""

from .dqn import DQNArgs, train_dqn

__all__ = ["DQNArgs", "train_dqn"]
