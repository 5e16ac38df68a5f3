"""Double, dueling DQN for the ``dqn`` preset (Huber et al. 2021, §1.4), CleanRL style.

All hyper-parameters live in :class:`DQNArgs`. Each improvement over the
baselines-era DQN is a switch and is recorded in the agent's metadata:
n-step returns (``n_step``), Adam (``optimizer``), and the double and dueling heads.
Prioritised replay is not implemented: on this 2-core CPU its sum-tree costs
more wall-clock per frame than it saves in samples at our budget (see the book).

Environments: ale-py's C++ vector env (``AtariVectorEnv``), whose grayscale
84×84 INTER_AREA frames, max-pool over the last two raw frames, zero-initialised
stack of 4, 1–30 NOOP starts and FIRE reset equal the ``dqn`` preset pixel for
pixel. Episodic life is applied on our side: a life loss ends the bootstrap but not
the game. In FIRE-reset games the step after a life loss presses FIRE
(``fire_after_life_loss``), as baselines' FireResetEnv does after its soft reset;
the forced transition is stored like any other, which off-policy Q-learning allows.

Rewards: Huber's in-game reward divided by the game's minimum reward (default)
or sign clipping (``reward="clip"``).

Resuming: ``--resume`` restores the network, target, optimiser, RNG states and
counters from ``OUT/state.pt``. The replay buffer is not saved; it is refilled
(``learning_starts`` transitions) before learning continues.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ..agents import DQNConfig, DQNNet, QAgent, save_agent
from ..games import game_info
from .common import (
    CSVLog,
    RunArgs,
    check_resume_args,
    load_state,
    rng_state,
    save_state,
    seed_everything,
    set_rng_state,
)
from .replay import FrameReplay

__all__ = ["DQNArgs", "train_dqn", "make_dqn_vec_env", "td_loss"]


@dataclass(frozen=True)
class DQNArgs(RunArgs):
    """Hyper-parameters of the DQN trainer (one agent step = 4 frames).

    The run settings of :class:`~saliency_lib.train.common.RunArgs`, then the algorithm's. The
    shipped DQN agents were trained in bf16; no fp32 run of the same length was made.
    """

    # Algorithm specific arguments

    num_envs: int = 8
    """Environments stepped together."""
    buffer_size: int = 400_000
    """Replay capacity in transitions (one 84×84 frame each)."""
    batch_size: int = 64
    """Minibatch size."""
    train_freq: int = 16
    """Agent steps (over all envs) per gradient step: 4 replayed samples per step, half of
    Nature DQN's 8, because gradient steps are the cost that bounds us on 2 CPU cores."""
    learning_starts: int = 20_000
    """Transitions collected before learning starts (and after a resume)."""
    gamma: float = 0.99
    """Discount."""
    n_step: int = 3
    """n-step return (1 = plain DQN)."""
    optimizer: str = "adam"
    """'adam' (lr 6.25e-5, eps 1.5e-4 as Rainbow) or 'rmsprop'."""
    lr: float = 6.25e-5
    """Learning rate."""
    adam_eps: float = 1.5e-4
    """Adam epsilon."""
    target_update: int = 8_000
    """Agent steps between target-network copies."""
    eps_start: float = 1.0
    """Initial exploration rate."""
    eps_end: float = 0.01
    """Final exploration rate."""
    eps_fraction: float = 0.1
    """Fraction of training over which epsilon decays linearly."""
    double: bool = True
    """Double-DQN targets."""
    dueling: bool = True
    """Dueling head."""
    reward: str = "scale"
    """'scale' (reward / game's minimum reward, Huber) or 'clip'."""
    grad_clip: float = 10.0
    """Gradient-norm clip."""
    fire_after_life_loss: bool = True
    """In FIRE-reset games, press FIRE on the step after a life loss, as baselines' FireResetEnv
    does. Q-learning is off-policy, so the forced action is stored like any other."""

    def __post_init__(self):
        super().__post_init__()
        if self.optimizer not in ("adam", "rmsprop"):
            raise ValueError(f"optimizer must be 'adam' or 'rmsprop', got {self.optimizer!r}")
        if self.reward not in ("scale", "clip"):
            raise ValueError(f"reward must be 'scale' or 'clip', got {self.reward!r}")
        if self.num_envs <= 0 or self.n_step < 1:
            raise ValueError("num_envs and n_step must be positive")


def make_dqn_vec_env(game: str, num_envs: int, seed: int):
    """ale-py's vector env with the ``dqn`` preset's frame processing (rewards raw)."""
    from ale_py.vector_env import AtariVectorEnv

    info = game_info(game)
    import re

    rom = re.sub(r"(?<!^)(?=[A-Z])", "_", game).lower()
    env = AtariVectorEnv(
        rom, num_envs, frameskip=4, maxpool=True, grayscale=True, img_height=84, img_width=84, stack_num=4,
        noop_max=30, episodic_life=False, reward_clipping=False, use_fire_reset=info.fire_reset,
        repeat_action_probability=0.0, max_num_frames_per_episode=108_000,
    )
    return env


def _to_input(frames: torch.Tensor) -> torch.Tensor:
    """uint8 stacks → float [0, 1] in channels_last (permuting the uint8 copy first is cheaper)."""
    return frames.contiguous(memory_format=torch.channels_last).float().mul_(1.0 / 255.0)


def td_loss(net, target, obs, actions, returns, discounts, next_obs, *, double: bool = True):
    """Huber loss of Q(s, a) against the n-step (double-)DQN target; returns (loss, Q(s, a))."""
    # .float(): under bf16 autocast the targets and the loss are still formed in float32
    with torch.no_grad():
        tq = target(next_obs).float()
        a_next = net(next_obs).argmax(1, keepdim=True) if double else tq.argmax(1, keepdim=True)
        y = returns + discounts * tq.gather(1, a_next)[:, 0]
    qa = net(obs).float().gather(1, actions[:, None])[:, 0]
    return F.smooth_l1_loss(qa, y), qa


def _epsilon(args: DQNArgs, step: int, total: int) -> float:
    frac = min(1.0, step / max(1, args.eps_fraction * total))
    return args.eps_start + frac * (args.eps_end - args.eps_start)


def _make_agent(args: DQNArgs, n_actions: int) -> QAgent:
    cfg = DQNConfig(n_actions=n_actions, dueling=args.dueling)
    return QAgent(DQNNet(cfg), game=args.game, preset="dqn", n_actions=n_actions)


def train_dqn(args: DQNArgs, out: str | Path, *, resume: bool = False, progress: bool = True) -> QAgent:
    """Train (or resume) a DQN agent; returns it and writes ``out/agent`` plus logs."""
    from ..play import evaluate

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    state_path = out / "state.pt"
    if resume and not state_path.exists():
        raise FileNotFoundError(f"--resume given but {state_path} does not exist")
    seed_everything(args.seed)
    env = make_dqn_vec_env(args.game, args.num_envs, args.seed)
    n_actions = int(env.single_action_space.n)
    agent = _make_agent(args, n_actions)
    net: DQNNet = agent.net.to(memory_format=torch.channels_last)  # 1.3-1.5x faster updates here, same numbers
    target = DQNNet(net.config).to(memory_format=torch.channels_last)
    target.load_state_dict(net.state_dict())
    if args.optimizer == "adam":
        # fused: one kernel over all parameters; 6x faster than the CPU default per step here, same numbers to 1e-8
        opt = torch.optim.Adam(net.parameters(), lr=args.lr, eps=args.adam_eps, fused=True)
    else:
        opt = torch.optim.RMSprop(net.parameters(), lr=args.lr, alpha=0.95, eps=0.01, centered=True, foreach=True)
    rng = np.random.default_rng(args.seed)
    c = {"step": 0, "updates": 0, "episodes": 0, "next_eval": args.eval_every, "best_eval": -1e18}
    if resume:
        st = load_state(state_path)
        check_resume_args(json.loads(st["args"]), asdict(args), out)
        net.load_state_dict(st["net"])
        target.load_state_dict(st["target"])
        opt.load_state_dict(st["opt"])
        c.update(json.loads(st["counters"]))
        set_rng_state(st["rng"], rng)
    total_steps = args.frames // 4
    replay = FrameReplay(args.buffer_size, args.num_envs, n_step=args.n_step, gamma=args.gamma, seed=args.seed + c["step"])
    log = CSVLog(out / "train_log.csv", ["step", "frames", "time", "episode_score", "loss", "q_mean", "epsilon", "fps"], resume,
                 c["step"])
    evlog = CSVLog(out / "eval_log.csv", ["step", "frames", "eval_mean", "eval_std", "eval_scores"], resume, c["step"])
    (out / "args.json").write_text(json.dumps(asdict(args), indent=2))
    info = game_info(args.game)
    divisor = None if args.reward == "clip" else info.min_reward

    obs, env_info = env.reset(seed=args.seed + c["step"])
    lives = env_info["lives"].copy()
    first = np.ones(args.num_envs, bool)
    after_done = np.zeros(args.num_envs, bool)
    game_score = np.zeros(args.num_envs)
    recent: deque = deque(maxlen=100)
    last_ckpt, t0, step0 = time.time(), time.time(), c["step"]
    seconds0 = float(c.get("seconds", 0.0))  # training time before this process (0 for checkpoints without it)
    since_resume, updates_due = 0, 0.0
    fire_game = bool(info.fire_reset and args.fire_after_life_loss)
    force_fire = np.zeros(args.num_envs, bool)
    loss_v = q_v = float("nan")
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")
    bar = tqdm(total=args.frames, initial=c["step"] * 4, unit="frame", unit_scale=True, disable=not progress,
               desc=f"dqn {args.game}")
    while c["step"] < total_steps:
        eps = _epsilon(args, c["step"], total_steps)
        with torch.no_grad(), autocast:
            q = net(torch.from_numpy(obs).float().div_(255.0)).float()
        actions = q.argmax(1).numpy()
        explore = rng.random(args.num_envs) < eps
        actions[explore] = rng.integers(0, n_actions, int(explore.sum()))
        actions[force_fire] = 1
        nobs, rew, term, trunc, env_info = env.step(actions)
        # counted before logging: a game that ends in this step is logged with the steps that
        # include it, so a checkpoint at step S never precedes rows logged at S (see CSVLog)
        c["step"] += args.num_envs
        since_resume += args.num_envs
        bar.update(4 * args.num_envs)
        life_lost = env_info["lives"] < lives
        force_fire = life_lost & ~(term | trunc) & fire_game
        lives = env_info["lives"].copy()
        done = term | trunc
        learn_r = np.clip(rew, -1, 1) if divisor is None else rew / divisor
        replay.add(obs[:, -1], actions, learn_r, done | life_lost, first, ~after_done)
        game_score += np.where(after_done, 0.0, rew)
        for e in np.flatnonzero(done & ~after_done):
            recent.append(game_score[e])
            log.write(step=c["step"], frames=c["step"] * 4, time=round(seconds0 + time.time() - t0, 1),
                      episode_score=game_score[e], epsilon=round(eps, 4))
            c["episodes"] += 1
            game_score[e] = 0.0
        first = after_done.copy()  # the observation after an autoreset step starts a game
        after_done = done & ~after_done
        obs = nobs

        if len(replay) >= args.learning_starts and since_resume >= args.learning_starts:
            updates_due += args.num_envs / args.train_freq
            while updates_due >= 1:
                updates_due -= 1
                o, a, ret, disc, nx = replay.sample(args.batch_size)
                o = _to_input(o)
                nx = _to_input(nx)
                with autocast:
                    loss, qa = td_loss(net, target, o, a, ret, disc, nx, double=args.double)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), args.grad_clip)
                opt.step()
                c["updates"] += 1
                loss_v, q_v = loss.item(), qa.detach().mean().item()
            if c["step"] // args.target_update != (c["step"] - args.num_envs) // args.target_update:
                target.load_state_dict(net.state_dict())

        if args.eval_episodes > 0 and (c["step"] * 4 >= c["next_eval"] or c["step"] >= total_steps):
            c["next_eval"] += args.eval_every
            r = evaluate(agent, args.eval_episodes, seed=args.seed + 1000, max_steps=args.eval_max_steps, progress=False)
            evlog.write(step=c["step"], frames=c["step"] * 4, eval_mean=r["mean"], eval_std=r["std"],
                        eval_scores=json.dumps(r["scores"]))
            c["best_eval"] = max(c["best_eval"], r["mean"])
        if time.time() - last_ckpt > 60 * args.checkpoint_minutes or c["step"] >= total_steps:
            fps = 4 * (c["step"] - step0) / (time.time() - t0)
            c["seconds"] = round(seconds0 + time.time() - t0, 1)
            log.write(step=c["step"], frames=c["step"] * 4, time=round(seconds0 + time.time() - t0, 1), loss=loss_v, q_mean=q_v,
                      epsilon=round(eps, 4), fps=round(fps))
            save_state(state_path, {"net": net.state_dict(), "target": target.state_dict(), "opt": opt.state_dict(),
                                    "counters": json.dumps(c), "rng": rng_state(rng),
                                    "args": json.dumps(asdict(args), sort_keys=True)})
            last_ckpt = time.time()
        if recent:
            bar.set_postfix(ret=f"{np.mean(recent):.1f}", eps=f"{eps:.2f}", loss=f"{loss_v:.3f}", refresh=False)
    bar.close()
    env.close()
    meta = {
        "algo": "dqn", "frames": c["step"] * 4, "seed": args.seed, "train_args": asdict(args),
        "improvements": [n for n, on in (("double", args.double), ("dueling", args.dueling),
                                         (f"n_step={args.n_step}", args.n_step > 1),
                                          ("adam", args.optimizer == "adam"), ("bf16_autocast", args.precision == "bf16")) if on],
        "source": f"saliency_lib.train.dqn ({out})",
    }
    save_agent(agent, out / "agent", **meta)
    return agent
