"""saliency_lib: a reproducible study of perturbation saliency and mask attention for Atari agents."""

__version__ = "0.1.0"
