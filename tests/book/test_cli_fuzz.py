"""The command line refuses what it cannot do: a table of invalid invocations of every subcommand.

Each must exit with code 2 and print one line on stderr (no traceback) and leave the results
directory exactly as it was. They run in-process through :func:`saliency_lib.cli.main` (the
same code as the console script), and a few through a real ``python -m saliency_lib``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from saliency_lib.agents import DQNConfig, DQNNet, QAgent, save_agent
from saliency_lib.cli import main
from saliency_study.paths import RESULTS_DIR, repo_path


@pytest.fixture(scope="module")
def world(agent_dir, tmp_path_factory):
    """A results directory with content, a file, and agents whose meta.json is broken in one way each."""
    root = tmp_path_factory.mktemp("fuzz")
    res = root / "results"
    (res / "sweep" / "sanity").mkdir(parents=True)
    (res / "sweep" / "sanity" / "0123456789abcdef.parquet").write_bytes(b"not checked unless something ran")
    (res / "marker.txt").write_text("unchanged\n")
    (root / "a_file.txt").write_text("I am a file\n")
    good = Path(agent_dir)
    meta = json.loads((good / "meta.json").read_text())
    broken = {}
    for name, change in {
        "sha_number": lambda m: m.update(sha256=12345),
        "preset_contradicts": lambda m: m.update(preset="mask_a3c"),
        "game_misspelt": lambda m: m.update(game="Breakot"),
        "arch_unknown": lambda m: m.update(arch="DQNNett"),
        "config_type": lambda m: m["config"].update(n_actions="four"),
        "config_field": lambda m: m["config"].update(hiden=512),
        "preset_missing": lambda m: m.update(presset=m.pop("preset")),
    }.items():
        d = root / "agents" / name
        d.mkdir(parents=True)
        (d / "model.safetensors").write_bytes((good / "model.safetensors").read_bytes())
        m = json.loads(json.dumps(meta))
        change(m)
        (d / "meta.json").write_text(json.dumps(m))
        broken[name] = str(d)
    d = root / "agents" / "garbled"
    d.mkdir()
    (d / "model.safetensors").write_bytes((good / "model.safetensors").read_bytes())
    (d / "meta.json").write_text('{"arch": "DQNNet", "config": ')
    broken["garbled"] = str(d)
    d = root / "agents" / "no_weights"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps(meta))
    broken["no_weights"] = str(d)
    torch.manual_seed(0)  # weights that agree with their meta.json, but not with the game's 4 actions
    broken["actions"] = str(save_agent(QAgent(DQNNet(DQNConfig(n_actions=5)), game="Breakout", preset="dqn",
                                              n_actions=5), root / "agents" / "actions"))
    broken["frames"] = str(save_agent(QAgent(DQNNet(DQNConfig(n_actions=4, in_frames=2)), game="Breakout",
                                             preset="dqn", n_actions=4), root / "agents" / "frames"))
    (root / "run_without_agent").mkdir()
    shutil.copytree(good, root / "finished_run" / "agent")
    return {"root": root, "res": res, "file": root / "a_file.txt", "good": str(good), **broken}


def _tree(path: Path) -> str:
    """Hash of every file's path and bytes under ``path`` (directories included by name)."""
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        h.update(str(p.relative_to(path)).encode())
        if p.is_file():
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _stats(path: Path) -> list:
    """The repository's results: names, sizes and modification times (cheaper than hashing 30 MB per case)."""
    return sorted((str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*") if p.is_file())


# (argv with {placeholders}, what stderr must say). Every subcommand appears.
CASES = [
    # top level
    ("", "the following arguments are required: command"),
    ("nonsense", "invalid choice: 'nonsense'"),
    ("rnu --status", "did you mean 'run'?"),
    # run
    ("run --games Breakot --status --results-dir {res}", "did you mean 'Breakout'?"),
    ("run --games Pongg --results-dir {res}", "did you mean 'Pong'?"),
    ("run --agents {good} --n-states 0 --results-dir {res}", "--n-states: must be a positive integer, got 0"),
    ("run --agents {good} --chunk 0 --results-dir {res}", "--chunk: must be a positive integer, got 0"),
    ("run --agents {good} --n-states -3 --status --results-dir {res}", "must be a positive integer, got -3"),
    ("run --agents {good} --chunk two --results-dir {res}", "expected an integer, got 'two'"),
    ("run --agents {good} --workers 0 --results-dir {res}", "--workers: must be a positive integer"),
    ("run --agents {good} --seed -1 --results-dir {res}", "--seed: must be an integer >= 0"),
    ("run --agents {good} --methods gradient --params {unknown_param} --results-dir {res}",
     "explainer 'gradient' has no parameter 'n_masks'"),
    ("run --agents {good} --methods rise --params {misspelt_param} --results-dir {res}", "did you mean 'n_masks'?"),
    ("run --agents {good} --methods gradient --params {bad_json} --results-dir {res}", "not valid JSON"),
    ("run --agents {good} --methods gradient --params [1] --results-dir {res}", "expected a JSON object"),
    ("run --agents {good} --methods gradient --params {other_method} --results-dir {res}",
     "names the method 'rise', which the sweep does not run"),
    ("run --agents {good} --methods gradiant --results-dir {res}", "did you mean 'gradient'?"),
    ("run --agents {good} --methods gradient --results-dir {file}", "is a file, not a directory"),
    ("run --agents {good} --methods gradient --results-dir {file}/below", "cannot be created"),
    ("run --verify --results-dir {file}", "is a file, not a directory"),
    ("run --status --verify --results-dir {res}", "not allowed with argument"),
    ("run --methods gradient --results-dir {res}", "need --agents"),
    ("run --seeds --agents {good} --results-dir {res}", "--seeds plans the shipped Mask-A3C agents itself"),
    ("run --agents {good} --games MsPacman --status --results-dir {res}", "plays Breakout, which is not among --games"),
    ("run --agents {root}/missing_agent --status --results-dir {res}", "no agent checkpoint"),
    ("run --agents {sha_number} --status --results-dir {res}", "field 'sha256' must be a string"),
    ("run --executor dask --results-dir {res}", "invalid choice: 'dask'"),
    ("run --profile quik --results-dir {res}", "did you mean 'quick'?"),
    ("run --experiments sanitty --results-dir {res}", "did you mean 'sanity'?"),
    ("run --substrates gray --results-dir {res}", "invalid choice: 'gray'"),
    ("run --selection middle --results-dir {res}", "invalid choice: 'middle'"),
    # compact
    ("compact --games breakot --results-dir {res}", "did you mean 'Breakout'?"),
    ("compact --results-dir {file}", "is a file, not a directory"),
    ("compact --seed -2 --results-dir {res}", "--seed: must be an integer >= 0"),
    ("compact --profile huge --results-dir {res}", "invalid choice: 'huge'"),
    # evaluate (and every way a meta.json can be wrong)
    ("evaluate {root}/missing_agent --episodes 1", "no agent checkpoint"),
    ("evaluate official:Pong --episodes 1", "no official Mask-A3C checkpoint for 'Pong'"),
    ("evaluate {good} --episodes 0", "--episodes must be >= 1, got 0"),
    ("evaluate {good} --max-steps 0", "--max-steps must be >= 1, got 0"),
    ("evaluate {good} --threads 0", "--threads must be >= 1"),
    ("evaluate {good} --seed -5", "--seed must be >= 0"),
    ("evaluate {good} --protocol wobbly", "invalid choice: 'wobbly'"),
    ("evaluate {good} --gif {res}/play.txt", "unknown video suffix '.txt'"),
    ("evaluate {sha_number}", "field 'sha256' must be a string, got int 12345"),
    ("evaluate {preset_contradicts}", "preset 'mask_a3c' contradicts the architecture DQNNet"),
    ("evaluate {game_misspelt}", "unknown game 'Breakot'; did you mean 'Breakout'?"),
    ("evaluate {arch_unknown}", "unknown architecture 'DQNNett'; did you mean 'DQNNet'?"),
    ("evaluate {config_type}", "config field 'n_actions' must be of type int"),
    ("evaluate {config_field}", "unknown field 'hiden'; did you mean 'hidden'?"),
    ("evaluate {preset_missing}", "lacks the field 'preset' (it has 'presset'"),
    ("evaluate {garbled}", "is not valid JSON"),
    ("evaluate {no_weights}", "lacks model.safetensors"),
    ("evaluate {actions}", "Breakout's minimal action set has 4"),
    ("evaluate {frames}", "the network takes 2 input frames but preset 'dqn' gives 4"),
    # explain
    ("explain {good} --method occlusio --states 2 --out {res}/explain", "did you mean 'occlusion'?"),
    ("explain {good} --method occlusion --states 0 --out {res}/explain", "--states must be >= 1, got 0"),
    ("explain {good} --method occlusion --states 2 --batch-size 0 --out {res}/explain", "--batch-size must be >= 1"),
    ("explain {good} --method occlusion --states 2 --out {file}", "is a file, not a directory"),
    ("explain {root}/missing_agent --method occlusion --states 2 --out {res}/explain", "no agent checkpoint"),
    ("explain {good} --states 2 --out {res}/explain", "the following arguments are required: --method"),
    # sanity
    ("sanity {good} --methods nonsense --states 2 --out {res}", "unknown methods ['nonsense']"),
    ("sanity {good} --methods gradient --states 0 --out {res}", "--states must be >= 1, got 0"),
    ("sanity {good} --methods gradient --chunk 0 --out {res}", "--chunk must be >= 1, got 0"),
    ("sanity {good} --methods gradient --levels 0 --out {res}", "--levels must be >= 1, got 0"),
    ("sanity {good} --methods gradient --states 2 --params {bad_json} --out {res}", "--params must be a JSON object"),
    ("sanity {good} --methods gradient --states 2 --params {unknown_param} --out {res}",
     "explainer 'gradient' has no parameter 'n_masks'"),
    ("sanity {good} --methods gradient --states 2 --out {file}", "is a file, not a directory"),
    ("sanity {good} --methods gradient --similarities cosine --out {res}", "invalid choice: 'cosine'"),
    ("sanity {good} --methods gradient --levels 9 --states 2 --out {res}", "--levels 9 exceeds the agent's 5 layer groups"),
    ("sanity {preset_contradicts} --methods gradient --states 2 --out {res}", "contradicts the architecture"),
    # insertion
    ("insertion {good} --substrate gray --out {res}", "invalid choice: 'gray'"),
    ("insertion {good} --mode sideways --out {res}", "invalid choice: 'sideways'"),
    ("insertion {good} --pixels-per-step 0 --out {res}", "--pixels-per-step must be >= 1, got 0"),
    ("insertion {good} --blur-sigma 0 --out {res}", "--blur-sigma must be > 0"),
    ("insertion {good} --methods occlusion --params {occlusion_typo} --out {res}", "did you mean 'patch'?"),
    ("insertion {good} --state-seed -1 --out {res}", "--state-seed must be >= 0"),
    # train
    ("train dqn --game Pacman --out {res}/run", "unknown game 'Pacman'; did you mean 'MsPacman'?"),
    ("train dqn --frames 0 --out {res}/run", "--frames: must be a positive integer, got 0"),
    ("train dqn --lr nan --out {res}/run", "must be a finite number"),
    ("train dqn --double maybe --out {res}/run", "expected true or false, got 'maybe'"),
    ("train dqn --num-envs 0 --out {res}/run", "--num-envs: must be a positive integer"),
    ("train dqn --out {file}", "is a file, not a directory"),
    ("train dqn", "the following arguments are required: --out"),
    ("train", "the following arguments are required: algo"),
    ("train a3c --variant triple --out {res}/run", "unknown variant 'triple'"),
    ("train ppo --out {res}/run", "invalid choice: 'ppo'"),
    # video
    ("video {good} --method occlusio --out {res}/v.mp4", "did you mean 'occlusion'"),
    ("video {good} --method occlusion --out {res}/v.avi", "unknown video suffix '.avi'"),
    ("video {good} --method occlusion --out {res}/v.mp4 --max-steps 0", "--max-steps must be an integer >= 1"),
    ("video {good} --method occlusion --out {res}/v.mp4 --fps 0", "--fps must be a real number"),
    ("video {good} --method occlusion --out {res}/v.mp4 --episodes 0", "--episodes must be an integer >= 1"),
    # objects
    ("objects {good} --states 0", "--states: must be a positive integer"),
    ("objects {good} --methods occlusio", "did you mean 'occlusion'"),
    ("objects {good} --params {bad_json}", "not valid JSON"),
    ("objects {good} --methods rise --params {occlusion_typo}", "names the method 'occlusion'"),
    ("objects {good} --threads 0", "--threads: must be a positive integer"),
    # report
    ("report {good}", "the following arguments are required: --out"),
    ("report {root}/no_such_agent --out {res}/r", "no agent at"),
    ("report bogus:thing --out {res}/r", "unknown agent spec scheme 'bogus'"),
    ("report {good} --out {res}/r --states 0", "--states must be an integer >= 1"),
    ("report {good} --out {res}/r --methods occlusio", "--methods must name the study's methods"),
    ("report {good} --out {res}/r --profile huge", "invalid choice: 'huge'"),
    ("report {good} --out {res}/r --game Pong", "contradicts the agent"),
    # claims
    ("claims --profile huge", "invalid choice: 'huge'"),
    ("claims --results-dir {file}", "is a file, not a directory"),
    # fetch-official
    ("fetch-official --src {root}/no_such_copy --dest {res}/official", "does not exist"),
    ("fetch-official --dest {file}", "is a file, not a directory"),
    # ship
    ("ship {root}/no_such_run --dest {res}/agent", "is not a directory (it does not exist)"),
    ("ship {root}/run_without_agent --dest {res}/agent", "holds no finished agent"),
    ("ship {root}/finished_run", "the following arguments are required: --dest"),
    ("ship {root}/finished_run --dest {res}/agent --episodes 0", "--episodes: must be a positive integer"),
    ("ship {root}/finished_run --dest {file}", "is a file, not a directory"),
    # official-scores
    ("official-scores --games Breakot --out {res}/scores.csv", "did you mean 'Breakout'?"),
    ("official-scores --games Frostbite --out {res}/scores.csv", "unknown game with an official checkpoint 'Frostbite'"),
    ("official-scores --episodes 0 --out {res}/scores.csv", "--episodes: must be a positive integer"),
    ("official-scores --out {res}", "is a directory; pass a file name"),
    ("official-scores --threads 0 --out {res}/scores.csv", "--threads: must be a positive integer"),
    # book
    ("book --profile huge", "invalid choice: 'huge'"),
    ("book --games Breakot", "did you mean 'Breakout'?"),
    ("book -p game=Breakot", "did you mean 'Breakout'?"),
    ("book -p novalue", "expected KEY=VALUE"),
    ("book --only 99_nothing", "unknown chapter(s) ['99_nothing']"),
    ("book --executor dask", "invalid choice: 'dask'"),
]

_JSON = {"unknown_param": '{"gradient": {"n_masks": 3}}', "misspelt_param": '{"rise": {"n_mask": 3}}',
         "bad_json": "{bad", "other_method": '{"rise": {"n_masks": 3}}', "occlusion_typo": '{"occlusion": {"pach": 3}}'}


def _argv(template: str, world: dict) -> list[str]:
    values = {**{k: str(v) for k, v in world.items()}, **_JSON}
    return [part.format(**values) for part in template.split()]


def test_the_table_covers_every_subcommand_with_at_least_60_cases():
    from saliency_lib.cli import build_parser

    parser = build_parser()
    commands = set(next(a for a in parser._actions if a.dest == "command").choices)
    used = {t.split()[0] for t, _ in CASES if t}
    assert commands <= used, commands - used
    assert len(CASES) >= 60


@pytest.mark.parametrize("template,says", CASES, ids=[t or "(nothing)" for t, _ in CASES])
def test_an_invalid_invocation_exits_2_with_one_line(template, says, world, capsys):
    before, repo_before = _tree(world["res"]), _stats(repo_path(RESULTS_DIR))
    rc = main(_argv(template, world))
    out, err = capsys.readouterr()
    assert rc == 2, (rc, err[-2000:])
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and lines[0].startswith("saliency-study") and ": error: " in lines[0], lines[0]
    assert says in lines[0], lines[0]
    assert _tree(world["res"]) == before  # the results directory is unchanged
    assert _stats(repo_path(RESULTS_DIR)) == repo_before


def test_debug_shows_the_traceback(world):
    with pytest.raises(ValueError, match="field 'sha256' must be a string"):
        main(["evaluate", world["sha_number"], "--debug"])


@pytest.mark.slow
def test_the_console_entry_refuses_in_one_line(world):
    """Through a real interpreter: exit code 2, one line, no traceback, a suggestion."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cases = [("run --games Breakot --status --results-dir {res}", "did you mean 'Breakout'?"),
             ("run --agents {good} --methods gradient --params {unknown_param} --results-dir {res}",
              "has no parameter 'n_masks'"),
             ("evaluate {preset_contradicts}", "contradicts the architecture")]
    procs = [subprocess.Popen([sys.executable, "-m", "saliency_lib", *_argv(t, world)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for t, _ in cases]
    before = _tree(world["res"])
    for p, (_, says) in zip(procs, cases):
        _, err = p.communicate(timeout=600)
        assert p.returncode == 2, err[-2000:]
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and says in err, err
    assert _tree(world["res"]) == before
