import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from saliency_lib.agents import load_agent
from saliency_lib.train import (
    A2CArgs,
    DQNArgs,
    FrameReplay,
    a3c_loss,
    a3c_targets,
    nstep_targets,
    rollout_step,
    td_loss,
)


def test_nstep_targets_by_hand():
    g = 0.9
    r = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    d = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0]], bool)
    ret, disc = nstep_targets(r, d, g)
    np.testing.assert_allclose(ret, [1 + 0.9 * 2 + 0.81 * 3, 1 + 0.9 * 2, 0.0], rtol=1e-6)
    np.testing.assert_allclose(disc, [0.729, 0.0, 0.0], rtol=1e-6)


def test_a3c_targets_by_hand():
    g, lam = 0.5, 1.0
    rewards = torch.tensor([[1.0], [0.0], [2.0]])
    values = torch.tensor([[0.5], [1.0], [0.25]])
    dones = torch.tensor([[0.0], [0.0], [0.0]])
    boot = torch.tensor([4.0])
    rets, adv = a3c_targets(rewards, values, dones, boot, g, lam)
    # R2 = 2 + .5*4 = 4; R1 = 0 + .5*4 = 2; R0 = 1 + .5*2 = 2
    torch.testing.assert_close(rets[:, 0], torch.tensor([2.0, 2.0, 4.0]))
    torch.testing.assert_close(adv[:, 0], rets[:, 0] - values[:, 0])  # λ = 1: n-step return minus V
    # a done at step 1 cuts the bootstrap; λ = 0.5 by hand
    dones = torch.tensor([[0.0], [1.0], [0.0]])
    rets, adv = a3c_targets(rewards, values, dones, boot, g, 0.5)
    torch.testing.assert_close(rets[:, 0], torch.tensor([1.0, 0.0, 4.0]))
    d2 = 2 + 0.5 * 4 - 0.25
    d1 = 0 - 1.0
    d0 = 1 + 0.5 * 1.0 - 0.5
    torch.testing.assert_close(adv[:, 0], torch.tensor([d0 + 0.25 * d1, d1, d2]))


def test_replay_stacks_share_frames_and_zero_before_a_game():
    rb = FrameReplay(64, 1, frame_shape=(2, 2), n_step=1, gamma=0.5, seed=0)
    for t in range(10):
        first = t in (0, 5)
        rb.add(np.full((1, 2, 2), t + 1, np.uint8), np.array([t]), np.array([float(t)]), np.array([t == 4]), np.array([first]),
               np.array([t != 4]))
    s = rb._stack(np.array([0]), np.array([6]))[0]
    np.testing.assert_array_equal(s[:, 0, 0], [0, 0, 6, 7])  # frames before the game starting at t=5 are zeroed
    s = rb._stack(np.array([0]), np.array([3]))[0]
    np.testing.assert_array_equal(s[:, 0, 0], [1, 2, 3, 4])
    obs, a, ret, disc, nxt = rb.sample(200)
    assert not (a == 4).any()  # the step after the end of a game is never a start
    assert len(rb) == 10


@pytest.mark.parametrize("bf16", [False, True])
def test_td_loss_learns_a_bandit(bf16):
    """Contextual bandit: action = brightness of the left vs right half. The greedy policy becomes optimal,
    also with the trainer's bf16 autocast."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 16), nn.ReLU(), nn.Linear(16, 2))
    target = nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    for _ in range(600):
        x = torch.rand(64, 2, 4, 4)
        best = (x[:, 0].mean((1, 2)) > x[:, 1].mean((1, 2))).long()
        a = torch.randint(0, 2, (64,))
        r = (a == best).float()
        target.load_state_dict(net.state_dict())
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, _ = td_loss(net, target, x, a, r, torch.zeros(64), x, double=True)
        assert loss.dtype == torch.float32
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    x = torch.rand(500, 2, 4, 4)
    best = (x[:, 0].mean((1, 2)) > x[:, 1].mean((1, 2))).long()
    assert np.mean(losses[-50:]) < 0.5 * np.mean(losses[:50])
    assert (net(x).argmax(1) == best).float().mean() > 0.9


def test_bf16_td_gradient_agrees_with_fp32():
    """The DQN trainer's bf16 autocast: same loss and gradient direction as float32 on a Nature CNN."""
    from saliency_lib.agents import DQNConfig, DQNNet

    torch.manual_seed(0)
    net, target = DQNNet(DQNConfig(n_actions=4)), DQNNet(DQNConfig(n_actions=4))
    obs, nxt = torch.rand(64, 4, 84, 84), torch.rand(64, 4, 84, 84)
    a, r, d = torch.randint(0, 4, (64,)), torch.rand(64), torch.full((64,), 0.97)
    grads, losses = [], []
    for bf16 in (False, True):
        net.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, _ = td_loss(net, target, obs, a, r, d, nxt)
        loss.backward()
        losses.append(loss.item())
        grads.append(torch.cat([p.grad.flatten() for p in net.parameters()]))
    assert losses[1] == pytest.approx(losses[0], rel=0.05)
    assert torch.nn.functional.cosine_similarity(grads[0], grads[1], dim=0) > 0.99


def test_bf16_a3c_rollout_gradient_agrees_with_fp32():
    """The actor-critic trainer's bf16 rollout: float32 outputs and cell state, and the loss and
    gradient of a 6-step ConvLSTM rollout agree with float32."""
    from saliency_lib.agents import MaskA3CConfig, MaskA3CNet

    torch.manual_seed(0)
    net = MaskA3CNet(MaskA3CConfig(n_actions=4, variant="double"))
    x = torch.randn(6, 5, 1, 80, 80)
    actions = torch.randint(0, 4, (6, 5))
    rewards = (torch.rand(6, 5) < 0.2).float()
    dones, valid = torch.zeros(6, 5), torch.ones(6, 5)
    dones[3, 1] = 1.0
    grads, losses = [], []
    for bf16 in (False, True):
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
        net.zero_grad()
        hidden, logps, values, ents = net.initial_hidden(5), [], [], []
        for t in range(6):
            o = rollout_step(net, x[t], hidden, autocast)
            with torch.no_grad(), autocast:  # the cell state stays float32 inside the net, not only after the cast
                assert net(x[t], hidden)["hidden"][1].dtype == torch.float32
            dist = torch.distributions.Categorical(logits=o["logits"])
            logps.append(dist.log_prob(actions[t]))
            values.append(o["value"])
            ents.append(dist.entropy())
            hidden = o["hidden"]
        boot = rollout_step(net, x[-1], hidden, autocast)["value"].detach()
        loss, _ = a3c_loss(torch.stack(logps), torch.stack(values), torch.stack(ents), rewards, dones, valid, boot, A2CArgs())
        loss.backward()
        losses.append(loss.item())
        grads.append({n: p.grad.clone() for n, p in net.named_parameters() if p.grad is not None})
    assert losses[1] == pytest.approx(losses[0], rel=0.05)
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 10
    cos = {n: torch.nn.functional.cosine_similarity(grads[0][n].flatten(), grads[1][n].flatten(), dim=0).item()
           for n in grads[0]}
    assert min(cos.values()) > 0.98, cos  # every layer, not only the largest ones


def test_a3c_loss_learns_a_bandit():
    torch.manual_seed(0)
    net = nn.Linear(4, 3)  # logits from a one-hot context; the best arm is context % 3
    val = nn.Linear(4, 1)
    opt = torch.optim.Adam(list(net.parameters()) + list(val.parameters()), lr=1e-2, eps=1e-3, amsgrad=True)
    args = A2CArgs()
    for _ in range(400):
        ctx = torch.randint(0, 4, (8,))
        x = nn.functional.one_hot(ctx, 4).float()
        dist = torch.distributions.Categorical(logits=net(x))
        a = dist.sample()
        r = (a == ctx % 3).float()
        loss, _ = a3c_loss(dist.log_prob(a)[None], val(x)[:, 0][None], dist.entropy()[None], r[None], torch.ones(1, 8),
                           torch.ones(1, 8), torch.zeros(8), args)
        opt.zero_grad()
        loss.backward()
        opt.step()
    greedy = net(torch.eye(4)).argmax(1)
    assert (greedy == torch.arange(4) % 3).all()


def test_args_validation():
    with pytest.raises(ValueError, match="unknown game"):
        DQNArgs(game="Pacman")
    with pytest.raises(ValueError, match="optimizer"):
        DQNArgs(optimizer="sgd")
    with pytest.raises(ValueError, match="precision"):
        DQNArgs(precision="fp16")
    with pytest.raises(ValueError, match="unknown variant"):
        A2CArgs(variant="triple")
    with pytest.raises(ValueError, match="precision"):
        A2CArgs(precision="fp16")
    with pytest.raises(ValueError, match="lr_scaling"):
        A2CArgs(lr_scaling="linear")
    with pytest.raises(ValueError, match="lr must be positive"):
        A2CArgs(lr=0.0)


def test_a2c_update_lr_scales_the_official_worker_lr():
    assert A2CArgs().lr == 1e-4 and A2CArgs().update_lr == pytest.approx(4e-4)  # 16 environments
    assert A2CArgs(num_envs=4).update_lr == pytest.approx(2e-4)
    assert A2CArgs(lr_scaling="none").update_lr == 1e-4


def _train_cmd(algo, out, frames, extra=()):
    return [sys.executable, "-m", "saliency_lib", "train", algo, "--game", "Breakout", "--frames", str(frames), "--out", str(out),
            "--eval-every", "100000000", "--eval-episodes", "1", "--eval-max-steps", "50", "--checkpoint-minutes", "0.01",
            "--no-progress", *extra]


@pytest.mark.slow
@pytest.mark.parametrize("algo,extra", [
    ("dqn", ["--learning-starts", "400", "--buffer-size", "4000", "--num-envs", "4"]),
    ("a3c", ["--num-envs", "4", "--num-steps", "5"]),
])
def test_smoke_kill_and_resume(tmp_path, algo, extra):
    frames = 8000
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    p = subprocess.Popen(_train_cmd(algo, tmp_path, frames, extra), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    state = tmp_path / "state.pt"
    deadline = time.time() + 240
    while time.time() < deadline and p.poll() is None:
        if state.exists():
            counters = json.loads(torch.load(state, weights_only=True)["counters"])
            if counters["step"] >= 500:
                break
        time.sleep(0.2)
    assert p.poll() is None, p.stderr.read().decode()[-2000:]
    p.send_signal(signal.SIGKILL)
    p.wait()
    killed_at = json.loads(torch.load(state, weights_only=True)["counters"])
    assert 0 < killed_at["step"] < frames // 4
    r = subprocess.run(_train_cmd(algo, tmp_path, frames, [*extra, "--resume"]), env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    done = json.loads(torch.load(state, weights_only=True)["counters"])
    assert done["step"] >= frames // 4 and done["step"] < frames // 4 + 4 * 20
    assert done["episodes"] >= killed_at["episodes"]
    for name in ("train_log.csv", "eval_log.csv"):  # the killed run's rows after its checkpoint were dropped
        assert pd.read_csv(tmp_path / name)["step"].is_monotonic_increasing
    # the time column counts training time across the kill: it goes on from the checkpoint's
    times = pd.read_csv(tmp_path / "train_log.csv")["time"].dropna()
    assert times.is_monotonic_increasing and done["seconds"] >= killed_at["seconds"] > 0
    agent = load_agent(tmp_path / "agent")
    assert agent.meta["frames"] == done["step"] * 4
    if algo == "a3c":  # 4 environments: the official 1e-4 times √4, in the optimiser and the metadata
        lr = torch.load(state, weights_only=True)["opt"]["param_groups"][0]["lr"]
        assert lr == pytest.approx(2e-4) and agent.meta["update_lr"] == pytest.approx(2e-4)
    # resuming with other hyper-parameters is refused
    r = subprocess.run(_train_cmd(algo, tmp_path, frames, [*extra[:-2], "--seed", "5", "--resume"]), env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and "arguments differ" in r.stderr
    if algo == "a3c":  # a run saved before lr_scaling existed trained with lr as given: it resumes as "none" only
        st = torch.load(state, weights_only=True)
        args = json.loads(st["args"])
        del args["lr_scaling"]
        torch.save({**st, "args": json.dumps(args)}, state)
        r = subprocess.run(_train_cmd(algo, tmp_path, frames, [*extra, "--resume"]), env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode != 0 and "'lr_scaling': ('none', 'sqrt')" in r.stderr


def test_resumed_log_drops_rows_after_the_checkpoint(tmp_path):
    from saliency_lib.train.common import CSVLog, drop_replayed_rows

    path = tmp_path / "log.csv"
    log = CSVLog(path, ["step", "score"], resume=False)
    for step in (10, 20, 30, 40):
        log.write(step=step, score=step / 10)
    CSVLog(path, ["step", "score"], resume=True, upto_step=25).write(step=32, score=9.0)
    assert pd.read_csv(path).to_dict("list") == {"step": [10, 20, 32], "score": [1.0, 2.0, 9.0]}
    CSVLog(path, ["step", "score"], resume=True)  # no checkpoint step: appends, keeps everything
    assert len(pd.read_csv(path)) == 3
    # logs of runs resumed before the truncation existed: the replayed rows are dropped when read
    old = pd.DataFrame({"step": [10, 20, 30, 40, 50, 35, 45, 60, 55, 70]})
    assert drop_replayed_rows(old)["step"].tolist() == [10, 20, 30, 35, 45, 55, 70]
    # games of several environments end on the same step: ties are not replays ...
    ties = pd.DataFrame({"step": [8, 8, 16, 24, 24, 32, 40, 24, 24, 32], "episode_score": range(10)})
    assert drop_replayed_rows(ties)["episode_score"].tolist() == [0, 1, 2, 7, 8, 9]
    assert drop_replayed_rows(ties.iloc[:7])["episode_score"].tolist() == list(range(7))
    # ... but in the evaluation log (one row per step) a repeated step is, and the later row stays
    evals = pd.DataFrame({"step": [100, 200, 300, 300, 400], "eval_mean": [1.0, 2.0, 3.0, 3.5, 4.0]})
    assert drop_replayed_rows(evals)["eval_mean"].tolist() == [1.0, 2.0, 3.5, 4.0]


def test_ship_agent_copies_scores_and_plots(tmp_path):
    import pandas as pd

    from saliency_lib.agents import DQNConfig, DQNNet, QAgent, save_agent
    from saliency_study.shipping import ship_agent

    run = tmp_path / "run"
    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4, meta={"algo": "dqn", "seed": 0})
    save_agent(agent, run / "agent", frames=1000)
    (run / "train_log.csv").write_text("step,frames,time,episode_score,loss,q_mean,epsilon,fps\n"
                                       "10,40,1,2.0,,,1,\n20,80,2,3.0,,,1,\n")
    (run / "eval_log.csv").write_text("step,frames,eval_mean,eval_std,eval_scores\n20,80,1.0,0.0,[1.0]\n")
    row = ship_agent(run, tmp_path / "agents" / "dqn-Breakout-s0", episodes=1, sticky_episodes=2, progress=False)
    dest = tmp_path / "agents" / "dqn-Breakout-s0"
    assert (dest / "model.safetensors").exists() and (dest / "learning_curve.png").stat().st_size > 1000
    table = pd.read_csv(tmp_path / "agents" / "scores.csv")
    # one row per protocol: the papers' greedy games and the sticky-action games
    assert list(zip(table["agent"], table["protocol"], table["episodes"])) == [("dqn-Breakout-s0", "sticky", 2),
                                                                               ("dqn-Breakout-s0", "greedy", 1)]
    assert (table["random_score"] == 1.7).all() and table["distinct_games"][1] == 1 and 1 <= table["distinct_games"][0] <= 2
    assert row["episodes"] == 1 and row["protocol"] == "greedy" and load_agent(dest).meta["eval_episodes"] == 1
    # a DQN agent is set beside Nature DQN at 10 M frames unless a score is given
    assert (table["published"] == 36.8).all() and "Pritzel et al. (2017)" in table["published_source"][1]
    ship_agent(run, dest, episodes=1, sticky_episodes=0, published=12.5, published_source="a test", progress=False)
    table = pd.read_csv(tmp_path / "agents" / "scores.csv")
    greedy = table[table["protocol"] == "greedy"].iloc[0]
    assert len(table) == 2 and greedy["published"] == 12.5 and greedy["published_source"] == "a test"
