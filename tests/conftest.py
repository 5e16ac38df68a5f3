"""Shared fixtures. Tests run on 1 torch thread; official checkpoints come from MASK_A3C_OFFICIAL_DIR."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

import saliency_study.paths  # noqa: E402,F401  (the study's copy of the official checkpoints is the default)

sys.path.insert(0, str(Path(__file__).parent))  # toy_models
torch.set_num_threads(1)


def _official_dir() -> Path | None:
    from saliency_lib.agents.official import official_dir

    d = official_dir()
    return d if (d / "trained_models").is_dir() or any(d.glob("*.dat")) else None


@pytest.fixture(scope="session")
def official_available() -> Path:
    """The official checkpoints; skipped when absent unless SALIENCY_REQUIRE_OFFICIAL=1 (CI)."""
    d = _official_dir()
    if d is None:
        if os.environ.get("SALIENCY_REQUIRE_OFFICIAL") == "1":
            pytest.fail("official Mask-A3C checkpoints are required (SALIENCY_REQUIRE_OFFICIAL=1) but missing; "
                        "run make fetch-official")
        pytest.skip("official Mask-A3C checkpoints not fetched (make fetch-official)")
    return d


@pytest.fixture(scope="module")
def agent_dir(tmp_path_factory):
    """A saved random-weight Breakout DQN agent (the sweep and store tests' agent), one per test module."""
    from saliency_lib.agents import DQNConfig, DQNNet, QAgent, save_agent

    torch.manual_seed(0)
    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    d = tmp_path_factory.mktemp("agent") / "dqn-Breakout-toy"
    save_agent(agent, d)
    return str(d)
