"""scripts/run_full_study.sh covers the full profile's games and the seeds, the DQN agents first,
and rejects bad arguments."""

import subprocess
from pathlib import Path

import pytest

from saliency_lib.games import HUBER_GAMES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "run_full_study.sh"


@pytest.mark.parametrize("queues", [[], ["2"]])
def test_dry_run_lists_every_game_the_dqn_agents_first_and_the_seeds(queues):
    out = subprocess.run(["bash", str(SCRIPT), *queues, "--dry-run"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert all(line.startswith("would run: saliency-study run --profile full") for line in out)
    assert any(line.endswith("--profile full --seeds") for line in out)
    sweeps = [line.split("--games ")[1].split() for line in out if "--games" in line]
    dqn = {w[0]: i for i, w in enumerate(sweeps) if w[1:] == ["--agents", f"data/agents/dqn-{w[0]}-s0"]}
    whole = {w[0]: i for i, w in enumerate(sweeps) if len(w) == 1}
    assert sorted(dqn) == sorted(whole) == sorted(HUBER_GAMES)  # the full profile's games: Huber et al.'s four
    assert len(sweeps) == 2 * len(HUBER_GAMES)
    for game in HUBER_GAMES:  # a game's DQN agent before the sweep of its other agents
        assert dqn[game] < whole[game]
    if not queues:  # one queue: all four DQN agents before any Mask-A3C agent
        assert max(dqn.values()) < min(whole.values())


def test_bad_argument_is_refused():
    res = subprocess.run(["bash", str(SCRIPT), "3"], capture_output=True, text=True)
    assert res.returncode == 2 and "usage:" in res.stderr
