"""Shared fixtures. Tests run on 1 torch thread; official checkpoints come from MASK_A3C_OFFICIAL_DIR.

The tests live in ``lib/``, ``study/`` and ``book/``; the helper modules beside this file (``toy_models``,
``toy_study``, ``import_walk``, ``faults``) are importable from all three, since this folder is on ``sys.path``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

import saliency_study.paths  # noqa: E402,F401  (the study's copy of the official checkpoints is the default)

sys.path.insert(0, str(Path(__file__).parent))  # the helper modules, for every folder of tests
torch.set_num_threads(1)  # collection and module-scoped fixtures too; _one_thread keeps it per test


def _official_dir() -> Path | None:
    from saliency_lib.agents.official import official_dir

    d = official_dir()
    return d if (d / "trained_models").is_dir() or any(d.glob("*.dat")) else None


@pytest.fixture(autouse=True)
def _one_thread():
    """Every test on one torch thread; the count before the test comes back after it, so a command under test
    that sets its own (``--threads``) does not carry it into the next test."""
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


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
