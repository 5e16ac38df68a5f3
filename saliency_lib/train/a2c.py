"""Synchronous actor-critic trainer for :class:`~saliency_lib.agents.MaskA3CNet` (Itaya et al. 2021, §2).

The loss and hyper-parameters are the official ones: rollouts of 20 steps, γ = 0.99,
GAE λ = 1.0, value weight 0.5 on Σ ½(R − V)², entropy 0.01, losses summed over
steps, rewards clipped to [−1, 1] in training, Adam (eps 1e-3, amsgrad; lr 1e-4 per
worker update, scaled for the batched update, see below), no gradient clipping,
sampled actions, ConvLSTM state detached between rollouts and zeroed at every life loss.

Deviation from the paper (documented in the book): instead of asynchronous Hogwild
workers, ``num_envs`` environments are stepped in one batch and the per-environment
A3C losses are summed into one update. On 2 CPU cores, one process with a batched
forward pass replaces 16 worker processes sharing two cores. One update therefore carries
the gradients that ``num_envs`` workers would have applied one after another,
without their staleness, and there are ``num_envs`` times fewer optimiser steps per
frame. To make up for the fewer steps, the learning rate of a batched update is the
official 1e-4 times √num_envs (:attr:`A2CArgs.update_lr`; a measured pilot is quoted there).

Environments: ale-py's C++ vector env in RGB (frame skip 4 with max over the last
two raw frames, 1–30 NOOP starts, FIRE reset, a 40 000-frame cap), followed by our
crop, RGB-mean gray, two-stage resize and per-environment running normalisation
(:func:`saliency_lib.envs.process_mask_a3c_frame`). Life loss is detected from the
lives counter and ends the return and the ConvLSTM state. In FIRE-reset games the next
step presses FIRE (``fire_after_life_loss``), as the official soft reset does inside
``reset``: that forced step is masked out of the loss (it is not the policy's decision)
and the ConvLSTM state is zeroed again after it, so the policy's first decision of the
new life starts from the served ball and a fresh state, as in the official code.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ..agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet, save_agent
from ..agents.mask_a3c import VARIANTS
from ..envs import process_mask_a3c_frame
from ..games import game_info, mask_a3c_crop
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

__all__ = ["A2CArgs", "train_a2c", "rollout_step", "a3c_targets", "a3c_loss", "RunningNorm"]


@dataclass(frozen=True)
class A2CArgs(RunArgs):
    """Hyper-parameters of the synchronous Mask-A3C trainer (one agent step = 4 frames).

    The run settings of :class:`~saliency_lib.train.common.RunArgs`, then the algorithm's. In bf16
    the ConvLSTM's cell state, the log-probabilities and the values stay float32.
    """

    # Algorithm specific arguments

    variant: str = "double"
    """Mask variant: none (A3C), policy, value or double (Mask-A3C)."""
    num_envs: int = 16
    """Environments stepped together (the 'workers')."""
    num_steps: int = 20
    """Rollout length."""
    gamma: float = 0.99
    """Discount."""
    gae_lambda: float = 1.0
    """GAE λ ('tau')."""
    value_coef: float = 0.5
    """Weight of Σ ½(R − V)²."""
    entropy_coef: float = 0.01
    """Entropy bonus."""
    lr: float = 1e-4
    """Adam learning rate of one official worker update (20 steps of one environment)."""
    lr_scaling: str = "sqrt"
    """How the learning rate of one synchronous update grows with ``num_envs``: ``"sqrt"``
    (``lr·√num_envs``, 4e-4 for 16 environments) or ``"none"`` (``lr``). See :attr:`update_lr`."""
    adam_eps: float = 1e-3
    """Adam epsilon (official: 1e-3)."""
    amsgrad: bool = True
    """AMSGrad."""
    convlstm: bool = True
    """ConvLSTM backbone."""
    fire_after_life_loss: bool = True
    """In FIRE-reset games, press FIRE on the step after a life loss (the official soft reset),
    masked out of the loss. Without it a Breakout agent must learn to serve after each life."""

    def __post_init__(self):
        super().__post_init__()
        if self.lr_scaling not in ("sqrt", "none"):
            raise ValueError(f"lr_scaling must be 'sqrt' or 'none', got {self.lr_scaling!r}")
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}; valid variants are: {', '.join(VARIANTS)}")
        if self.num_envs <= 0 or self.num_steps <= 0:
            raise ValueError("num_envs and num_steps must be positive")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")

    @property
    def update_lr(self) -> float:
        """Learning rate of one synchronous update of ``num_envs`` environments.

        Official A3C workers each take an Adam step per 20-step rollout of one environment;
        one synchronous update sums ``num_envs`` such rollouts into a single step. Adam's
        step size does not grow with the gradient, so at the official lr the weights would
        move up to ``num_envs`` times less per frame. ``"sqrt"`` applies the square-root
        scaling rule for adaptive optimisers (Malladi et al. 2022). Measured in a 2 M-frame
        Breakout pilot of Mask-A3C with 16 environments (``data/benchmarks/a2c_lr_pilot``):
        at lr 1e-4 the last 100 training games averaged 4.4 and three greedy games 4.0; at
        4e-4, 14.0 and 45.0 (the official run's test games at 1.5–2 M frames: 17.0).
        """
        return self.lr * (self.num_envs ** 0.5 if self.lr_scaling == "sqrt" else 1.0)


def rollout_step(net: MaskA3CNet, obs: torch.Tensor, hidden, autocast) -> dict[str, torch.Tensor]:
    """One forward pass of the rollout under ``autocast``, with logits, value and recurrent state in float32.

    The ConvLSTM cell state is kept in float32 across steps: only the convolutions run
    in bf16, so rounding does not accumulate along the 20-step rollout.
    """
    with autocast:
        o = net(obs, hidden)
    out = {k: v.float() for k, v in o.items() if torch.is_tensor(v)}
    out["hidden"] = None if o["hidden"] is None else tuple(h.float() for h in o["hidden"])
    return out


def a3c_targets(rewards: np.ndarray | torch.Tensor, values, dones, bootstrap, gamma: float, lam: float):
    """Discounted returns and GAE advantages of one rollout.

    Parameters
    ----------
    rewards, values, dones : array (T, N)
        Rewards r_t, values V(s_t) (detached) and whether step t ended the life/game.
    bootstrap : array (N,)
        V(s_T) of the state after the rollout (used where the last step is not done).

    Returns
    -------
    returns : (T, N)  R_t = r_t + γ R_{t+1} (0 after a done)
    advantages : (T, N)  GAE(γ, λ) on the detached values
    """
    rewards, values, dones, bootstrap = (torch.as_tensor(a, dtype=torch.float32) for a in (rewards, values, dones, bootstrap))
    T = rewards.shape[0]
    returns = torch.zeros_like(rewards)
    adv = torch.zeros_like(rewards)
    R = bootstrap.clone()
    gae = torch.zeros_like(bootstrap)
    next_v = bootstrap.clone()
    for t in reversed(range(T)):
        live = 1.0 - dones[t]
        R = rewards[t] + gamma * R * live
        delta = rewards[t] + gamma * next_v * live - values[t]
        gae = delta + gamma * lam * gae * live
        returns[t], adv[t] = R, gae
        next_v = values[t]
    return returns, adv


def a3c_loss(logps, values, entropies, rewards, dones, valid, bootstrap, args: A2CArgs):
    """The official A3C loss of a (T, N) rollout, summed over steps and environments.

    L = Σ_t [−log π(a_t|s_t)·Â_t − β·H_t] + c_v·Σ_t ½(R_t − V(s_t))², with Â from GAE(γ, λ)
    on detached values. ``valid`` masks steps that carry no decision (the autoreset step).
    """
    rets, adv = a3c_targets(rewards, values.detach(), dones, bootstrap, args.gamma, args.gae_lambda)
    value_loss = (0.5 * (rets - values).pow(2) * valid).sum()
    ent = (entropies * valid).sum()
    policy_loss = -(logps * adv * valid).sum() - args.entropy_coef * ent
    loss = policy_loss + args.value_coef * value_loss
    n = max(1.0, float(valid.sum()))
    return loss, {"entropy": ent.item() / n, "value_loss": value_loss.item()}


class RunningNorm:
    """Per-environment running frame normalisation (α = 0.9999, bias-corrected), vectorised."""

    def __init__(self, n: int, alpha: float = 0.9999):
        self.alpha = alpha
        self.mean = np.zeros(n)
        self.std = np.zeros(n)
        self.count = np.zeros(n)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The normalised frames ``x`` ``(N, 1, H, W)``, one running normalisation per environment, updated first."""
        a = self.alpha
        self.count += 1
        self.mean = self.mean * a + x.mean(axis=(1, 2, 3)) * (1 - a)
        self.std = self.std * a + x.std(axis=(1, 2, 3)) * (1 - a)
        corr = 1 - a**self.count
        m, s = self.mean / corr, self.std / corr
        return ((x - m[:, None, None, None]) / (s[:, None, None, None] + 1e-8)).astype(np.float32)

    def state(self) -> str:
        """The running statistics as JSON, for a checkpoint (:meth:`load` reads it back)."""
        return json.dumps({"mean": self.mean.tolist(), "std": self.std.tolist(), "count": self.count.tolist()})

    def load(self, s: str) -> None:
        """Restore the running statistics from :meth:`state`'s JSON ``s``."""
        d = json.loads(s)
        self.mean, self.std, self.count = (np.array(d[k]) for k in ("mean", "std", "count"))


def make_a3c_vec_env(game: str, num_envs: int):
    from ale_py.vector_env import AtariVectorEnv

    rom = re.sub(r"(?<!^)(?=[A-Z])", "_", game).lower()
    return AtariVectorEnv(
        rom, num_envs, frameskip=4, maxpool=True, grayscale=False, img_height=210, img_width=160, stack_num=1,
        noop_max=30, episodic_life=False, reward_clipping=False, use_fire_reset=True,
        repeat_action_probability=0.0, max_num_frames_per_episode=40_000,
    )


def train_a2c(args: A2CArgs, out: str | Path, *, resume: bool = False, progress: bool = True) -> ActorCriticAgent:
    """Train (or resume) a Mask-A3C-family agent; writes ``out/agent`` and logs."""
    from ..play import evaluate

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)
    state_path = out / "state.pt"
    if resume and not state_path.exists():
        raise FileNotFoundError(f"--resume given but {state_path} does not exist")
    seed_everything(args.seed)
    env = make_a3c_vec_env(args.game, args.num_envs)
    n_actions = int(env.single_action_space.n)
    net = MaskA3CNet(MaskA3CConfig(n_actions=n_actions, variant=args.variant, convlstm=args.convlstm))
    # channels-last conv weights (MaskA3CNet builds them so): 1.5-2.5x faster updates here than the standard layout
    agent = ActorCriticAgent(net, game=args.game, preset="mask_a3c", n_actions=n_actions)
    opt = torch.optim.Adam(net.parameters(), lr=args.update_lr, eps=args.adam_eps, amsgrad=args.amsgrad,
                           fused=True)  # one kernel; same numbers
    norm = RunningNorm(args.num_envs)
    rng = np.random.default_rng(args.seed)
    c = {"step": 0, "updates": 0, "episodes": 0, "next_eval": args.eval_every}
    if resume:
        st = load_state(state_path)
        saved = json.loads(st["args"])
        saved.setdefault("lr_scaling", "none")  # runs from before lr_scaling existed used lr as it was
        check_resume_args(saved, asdict(args), out)
        net.load_state_dict(st["net"])
        opt.load_state_dict(st["opt"])
        for group in opt.param_groups:  # the optimiser's state holds the lr it was saved with
            group["lr"] = args.update_lr
        c.update(json.loads(st["counters"]))
        norm.load(st["norm"])
        set_rng_state(st["rng"], rng)
    crop = mask_a3c_crop(args.game)
    log = CSVLog(out / "train_log.csv", ["step", "frames", "time", "episode_score", "loss", "entropy", "value_loss", "fps"],
                 resume, c["step"])
    evlog = CSVLog(out / "eval_log.csv", ["step", "frames", "eval_mean", "eval_std", "eval_scores"], resume, c["step"])
    (out / "args.json").write_text(json.dumps(asdict(args), indent=2))

    rgb, info = env.reset(seed=args.seed + c["step"])
    obs = torch.from_numpy(norm(process_mask_a3c_frame(rgb[:, 0] if rgb.ndim == 5 else rgb, crop)))
    lives = info["lives"].copy()
    hidden = net.initial_hidden(args.num_envs) if args.convlstm else None
    after_done = np.zeros(args.num_envs, bool)
    game_score = np.zeros(args.num_envs)
    recent: deque = deque(maxlen=100)
    total_steps = args.frames // 4
    t0, step0, last_ckpt = time.time(), c["step"], time.time()
    seconds0 = float(c.get("seconds", 0.0))  # training time before this process (0 for checkpoints without it)
    stats = {"loss": float("nan"), "entropy": float("nan"), "value_loss": float("nan")}
    fire_game = bool(game_info(args.game).fire_reset and args.fire_after_life_loss)
    force_fire = np.zeros(args.num_envs, bool)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")
    bar = tqdm(total=args.frames, initial=c["step"] * 4, unit="frame", unit_scale=True, disable=not progress,
               desc=f"a3c-{args.variant} {args.game}")
    while c["step"] < total_steps:
        logps, values, ents, rews, dones, valid = [], [], [], [], [], []
        for _ in range(args.num_steps):
            o = rollout_step(net, obs, hidden, autocast)
            dist = torch.distributions.Categorical(logits=o["logits"])
            action = dist.sample()
            act = action.numpy().copy()
            act[force_fire] = 1  # FIRE: the soft reset after a life loss
            rgb, r, term, trunc, info = env.step(act)
            c["step"] += args.num_envs  # before logging, as in the DQN trainer
            bar.update(4 * args.num_envs)
            game_over = term | trunc
            life_lost = info["lives"] < lives
            lives = info["lives"].copy()
            done = (game_over | life_lost) & ~after_done
            logps.append(dist.log_prob(action))
            values.append(o["value"])
            ents.append(dist.entropy())
            rews.append(torch.from_numpy(np.clip(r, -1.0, 1.0).astype(np.float32)))
            dones.append(torch.from_numpy(done.astype(np.float32)))
            # no decision: the step after a game over (the autoreset) and a forced FIRE
            valid.append(torch.from_numpy((~after_done & ~force_fire).astype(np.float32)))
            game_score += np.where(after_done, 0.0, r)
            for e in np.flatnonzero(game_over & ~after_done):
                recent.append(game_score[e])
                log.write(step=c["step"], frames=c["step"] * 4, time=round(seconds0 + time.time() - t0, 1),
                          episode_score=game_score[e])
                c["episodes"] += 1
                game_score[e] = 0.0
            forced_now = force_fire
            force_fire = life_lost & ~game_over & fire_game
            after_done = game_over & ~after_done
            obs = torch.from_numpy(norm(process_mask_a3c_frame(rgb[:, 0] if rgb.ndim == 5 else rgb, crop)))
            if hidden is not None:
                keep = torch.from_numpy((~(done | after_done | forced_now)).astype(np.float32))[:, None, None, None]
                hidden = tuple(h * keep for h in o["hidden"])
        with torch.no_grad():
            boot = rollout_step(net, obs, hidden, autocast)["value"]
        loss, parts = a3c_loss(torch.stack(logps), torch.stack(values), torch.stack(ents), torch.stack(rews), torch.stack(dones),
                               torch.stack(valid), boot, args)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        c["updates"] += 1
        if hidden is not None:
            hidden = tuple(h.detach() for h in hidden)
        stats = {"loss": loss.item(), **parts}

        if args.eval_episodes > 0 and (c["step"] * 4 >= c["next_eval"] or c["step"] >= total_steps):
            c["next_eval"] += args.eval_every
            r = evaluate(agent, args.eval_episodes, seed=args.seed + 1000, max_steps=args.eval_max_steps, progress=False)
            evlog.write(step=c["step"], frames=c["step"] * 4, eval_mean=r["mean"], eval_std=r["std"],
                        eval_scores=json.dumps(r["scores"]))
        if time.time() - last_ckpt > 60 * args.checkpoint_minutes or c["step"] >= total_steps:
            fps = 4 * (c["step"] - step0) / (time.time() - t0)
            c["seconds"] = round(seconds0 + time.time() - t0, 1)
            log.write(step=c["step"], frames=c["step"] * 4, time=round(seconds0 + time.time() - t0, 1), fps=round(fps), **stats)
            save_state(state_path, {"net": net.state_dict(), "opt": opt.state_dict(), "counters": json.dumps(c),
                                    "norm": norm.state(), "rng": rng_state(rng),
                                    "args": json.dumps(asdict(args), sort_keys=True)})
            last_ckpt = time.time()
        if recent:
            bar.set_postfix(ret=f"{np.mean(recent):.1f}", ent=f"{stats['entropy']:.2f}", refresh=False)
    bar.close()
    env.close()
    meta = {"algo": "a3c-sync", "variant": args.variant, "frames": c["step"] * 4, "seed": args.seed, "train_args": asdict(args),
            "update_lr": args.update_lr, "source": f"saliency_lib.train.a2c ({out})"}
    save_agent(agent, out / "agent", **meta)
    return agent
