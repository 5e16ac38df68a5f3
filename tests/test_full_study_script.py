"""scripts/run_full_study.sh covers the full profile's games and the seeds, and rejects bad arguments."""

import subprocess
from pathlib import Path

from saliency_lib.games import HUBER_GAMES

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "run_full_study.sh"


def test_dry_run_lists_every_game_of_the_full_profile_and_the_seeds():
    out = subprocess.run(["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True, check=True).stdout.splitlines()
    games = [line.split("--games ")[1] for line in out if "--games" in line]
    assert sorted(games) == sorted(HUBER_GAMES)  # the full profile's games: Huber et al.'s four
    assert any(line.endswith("--profile full --seeds") for line in out)
    assert all(line.startswith("would run: saliency-study run --profile full") for line in out)


def test_bad_argument_is_refused():
    res = subprocess.run(["bash", str(SCRIPT), "3"], capture_output=True, text=True)
    assert res.returncode == 2 and "usage:" in res.stderr
