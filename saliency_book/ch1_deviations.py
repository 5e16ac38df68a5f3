"""Chapter 1: where this study deviates from Huber et al. and Itaya et al. Two tables, one home each.

* :data:`TRAINING`: how our shipped agents were trained, setting by setting, against the
  reference notes of the two papers (``reference-huber2021.md`` §1.3–§1.4 for the DQN
  agents, ``reference-itaya2021.md`` §2 for the actor-critic agents). Our side of each
  row is *read from the shipped agents' metadata* (``data/agents/*/meta.json``: ``config``,
  ``train_args``, ``improvements``, ``frames``), so the table follows the agents: a
  retrained agent changes its row, and a setting that comes to match the paper moves
  from the deviations to the list of settings checked and found equal.
* :data:`METHODS`: deliberate deviations and additions of the explainers and metrics. Each
  row names the docstring that documents it (``homes``) with a phrase of that docstring,
  which ``tests/test_ch1_deviations.py`` checks, so the table cannot outlive the code it
  describes. Rows that depend on the execution profile (explained states, explainer
  parameters) are generated from :mod:`saliency_study.profiles`.

:func:`training_table`, :func:`matching_sentence` and :func:`methods_table` build what
the notebook shows; :func:`style_deviations` formats a table.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from saliency_book.common import describe_params
from saliency_lib.explainers import method_label
from saliency_study.catalog import shipped_agents
from saliency_study.paths import AGENTS_DIR, repo_path
from saliency_study.profiles import sweep_sizes

__all__ = ["Setting", "Paper", "TRAINING", "MethodDeviation", "METHODS", "agent_metas", "compare_training",
           "training_table", "matching_sentence", "methods_table", "style_deviations"]

HUBER = "Huber et al."
ITAYA = "Itaya et al."

DIFFERS = object()
"""``Setting.reference`` of a setting that differs by design (no value of ours could equal the paper's)."""


@dataclass(frozen=True)
class Setting:
    """One training setting: the paper's value (prose, with its section of the reference notes) and how to read ours."""

    name: str
    theirs: str
    """The paper's value as the reference notes state it, with their section (``§1.4``) and provenance tag."""
    read: Callable[[dict], Any]
    """Our value, read from a shipped agent's ``meta.json`` (a dict)."""
    reference: Any = DIFFERS
    """The paper's value in ``read``'s terms; ours deviates when ``read(meta) != reference``."""
    show: Callable[[Any], str] = str
    """Our value as table text."""
    why: str | Callable[[dict], str] = ""
    """Why we deviate and what we expect it to change (shown only for deviations); a callable gets the
    first shipped agent's ``meta.json``, so numbers of ours in the text are read, not typed."""


@dataclass(frozen=True)
class Paper:
    """The settings of the agents of one paper, and which shipped agents they are compared with."""

    paper: str
    agents: str
    """What the rows describe, for the table."""
    algos: tuple[str, ...]
    """``algo`` values in ``meta.json`` of our agents of this kind."""
    settings: tuple[Setting, ...]


def _args(meta: dict) -> dict:
    return meta.get("train_args") or {}


def _config(meta: dict) -> dict:
    return meta.get("config") or {}


def _mframes(frames) -> str:
    return f"{frames / 1e6:.3g} M"


def _a3c_update_lr(meta: dict) -> float:
    """The learning rate of one synchronous update: recorded in ``meta.json`` or recomputed from the trainer's args."""
    if meta.get("update_lr") is not None:
        return float(meta["update_lr"])
    from saliency_lib.train.a2c import A2CArgs

    return A2CArgs(**_args(meta)).update_lr


_DQN = Paper(HUBER, "DQN agents", ("dqn",), (
    Setting("Training code",
            "OpenAI baselines `deepq` at commit 9ee399f, with the in-game reward (§1.4)",
            lambda m: m.get("source", "?").split(" (")[0],
            why="Our own vectorised trainer: baselines needs TensorFlow 1, and our frame budget had to fit two "
                "CPU cores. The rows below are what it does differently."),
    Setting("Training frames",
            "≈ 20 M: the model files' \"5M\" read as 5 M agent steps (inferred, §1.4)",
            lambda m: int(m["frames"]), reference=20_000_000, show=_mframes,
            why="The CPU budget. Our agents are less trained than theirs; their scores (score table) and their maps "
                "belong to agents that have learned less."),
    Setting("Replay sampling",
            "prioritised, α = 0.6 (baselines' Atari default, §1.4)",
            lambda m: "prioritised" if any("priorit" in i for i in m.get("improvements", [])) else "uniform",
            reference="prioritised",
            why="The sum-tree costs more wall-clock per frame on two CPU cores than it saves in samples at our budget. "
                "Expected: slower learning per frame, partly offset by the 3-step returns."),
    Setting("Return",
            "1-step: baselines' `deepq` has no n-step option (none among the §1.4 defaults)",
            lambda m: int(_args(m).get("n_step", 1)), reference=1, show=lambda n: f"{n}-step",
            why="n-step returns propagate reward faster (Rainbow); with uniform replay and half the frames they "
                "speed up early learning. The targets are slightly more on-policy."),
    Setting("Learning rate",
            "1e-4 (Adam, §1.4)",
            lambda m: float(_args(m)["lr"]), reference=1e-4,
            show=lambda lr: f"{lr:.3g}",
            why="Rainbow's Adam setting (6.25e-5, ε 1.5e-4), tuned with n-step returns and large replay buffers."),
    Setting("Replay buffer",
            "10 000 transitions (§1.4)",
            lambda m: int(_args(m)["buffer_size"]), reference=10_000, show=lambda n: f"{n:,} transitions",
            why=lambda m: ("10 000 transitions are about 11 minutes of play; a larger buffer decorrelates the "
                           "minibatches. The replay stores one 84×84 frame per transition, so "
                           f"{_args(m)['buffer_size']:,} take about {_args(m)['buffer_size'] * 84 * 84 / 1e9:.1f} GB.")),
    Setting("Learning starts",
            "after 10 000 transitions (§1.4)",
            lambda m: int(_args(m)["learning_starts"]), reference=10_000, show=lambda n: f"after {n:,} transitions",
            why=lambda m: (f"A fuller buffer at the first update. {4 * _args(m)['learning_starts'] / m['frames']:.1%} "
                           "of training: no expected effect.")),
    Setting("Gradient steps",
            "one per 4 agent steps (§1.4; the batch size is not stated there)",
            lambda m: (int(_args(m)["train_freq"]), int(_args(m)["batch_size"])), reference=4,
            show=lambda v: f"one of {v[1]} transitions per {v[0]} agent steps ({v[1] / v[0]:g} replayed per step)",
            why=lambda m: (f"Gradient steps bound the wall-clock on two cores: {_args(m)['train_freq'] / 4:g}× fewer, "
                           "larger steps. Expected: slower learning per frame.")),
    Setting("Target network copy",
            "every 1 000 agent steps (§1.4)",
            lambda m: int(_args(m)["target_update"]), reference=1_000, show=lambda n: f"every {n:,} agent steps",
            why=lambda m: (f"Counted in gradient steps, {_args(m)['target_update'] // _args(m)['train_freq']:,} "
                           "updates between copies (theirs: 250).")),
    Setting("Environments",
            "1 (baselines' `deepq` steps a single environment; inferred)",
            lambda m: int(_args(m).get("num_envs", 1)), reference=1, show=lambda n: f"{n}, stepped together",
            why="ale-py's C++ vector environment steps them at once. Consecutive transitions come from different "
                "games; no effect on the explained states, which come from the evaluation protocol."),
    Setting("Conv padding",
            "TF 'SAME': 21×21 → 11×11 → 11×11 maps (§1.3)",
            lambda m: _config(m).get("padding", "valid"), reference="same",
            show=lambda p: "TF 'SAME'" if p == "same" else "VALID (Nature DQN): 20×20 → 9×9 → 7×7 maps",
            why="Trains twice as fast here. Border pixels fall into fewer conv1 windows, so perturbations at the "
                "screen's edge may move the output less than in their networks."),
    Setting("Hidden units",
            "256 (baselines' default; inferred, §1.3, open question §10)",
            lambda m: int(_config(m)["hidden"]), reference=256,
            why="Nature DQN's 512. More capacity in the layer the sanity checks randomise second."),
    Setting("Explained output",
            "the Keras model's single output; if trained dueling, only the un-centred advantage stream was "
            "exported (§1.3, open question)",
            lambda m: bool(_config(m).get("dueling", False)), reference=False,
            show=lambda d: "Q = V + A − mean(A) of the dueling head" if d else "a single-stream Q",
            why="Q is what a dueling agent acts on. The argmax is the same, but Q-ratio and advantage curves are "
                "not; chapter 4 also explains the advantage stream alone to bound the difference."),
    Setting("Precision",
            "float32 (TensorFlow's default; not stated)",
            lambda m: _args(m).get("precision", "fp32"), reference="fp32",
            show=lambda p: "bf16 autocast in training; weights, optimiser and loss float32" if p == "bf16" else p,
            why="1.35× faster training on this CPU; tests check that loss and gradient direction agree with "
                "float32. The agents are saved and explained in float32."),
    Setting("Exploration", "ε from 1 to 0.01 over the first 10 % (§1.4)",
            lambda m: (_args(m).get("eps_start"), _args(m).get("eps_end"), _args(m).get("eps_fraction")),
            reference=(1.0, 0.01, 0.1), show=lambda e: f"ε from {e[0]:g} to {e[1]:g} over the first {e[2]:.0%}"),
    Setting("Optimiser", "Adam (§1.4)", lambda m: _args(m).get("optimizer"), reference="adam"),
    Setting("Discount", "γ = 0.99 (§1.4)", lambda m: _args(m).get("gamma"), reference=0.99),
    Setting("Double Q", "yes (§1.4)", lambda m: bool(_args(m).get("double")), reference=True),
    Setting("Dueling training", "yes (§1.4)", lambda m: bool(_args(m).get("dueling")), reference=True),
    Setting("Reward", "in-game reward ÷ the game's minimum reward (§1.4)",
            lambda m: _args(m).get("reward"), reference="scale"),
    Setting("Preprocessing", "frame skip 4, max of the last 2 frames, gray 84×84 (INTER_AREA), stack of 4 (§1.2)",
            lambda m: m.get("preset"), reference="dqn"),
))

_A3C = Paper(ITAYA, "actor-critic agents", ("a3c-sync",), (
    Setting("Training scheme",
            "asynchronous (Hogwild) A3C: worker processes share one model and one Adam (§2.2); 10 workers in "
            "`start_train.sh`, not recorded for the released runs (§2.3)",
            lambda m: int(_args(m)["num_envs"]),
            show=lambda n: f"synchronous: {n} environments in one process, their A3C losses summed into one update",
            why=lambda m: (f"{_args(m)['num_envs']} worker processes would share two cores; one batched forward pass "
                           "uses them better. No stale gradients, but one optimiser step per update of all "
                           "environments instead of one per worker rollout.")),
    Setting("Training frames",
            "≈ 4.4e8 for the released runs (1.1e8 agent steps, §2.3)",
            lambda m: int(m["frames"]), reference=440_000_000, show=_mframes,
            why=lambda m: (f"The CPU budget: {440_000_000 / m['frames']:.0f}× fewer frames. Chapter 5 sets our "
                           "Breakout agents beside the released checkpoint.")),
    Setting("Learning rate",
            "1e-4 per worker update of one 20-step rollout (§2.2)",
            _a3c_update_lr, reference=1e-4, show=lambda lr: f"{lr:.3g} per update of all environments' rollouts",
            why="The square-root scaling rule for Adam (1e-4 × √16) makes up for the fewer optimiser steps. A 2 M-frame "
                "Breakout pilot with 16 environments decided it: at 1e-4 three greedy games averaged 4.0 points, at "
                "4e-4 45.0."),
    Setting("Optimiser steps",
            "one per rollout of one worker: every 80 frames (20 steps × 4, §2.1–§2.2)",
            lambda m: 4 * int(_args(m)["num_steps"]) * int(_args(m)["num_envs"]), reference=80,
            show=lambda f: f"one every {f:,} frames",
            why="Follows from the synchronous scheme; the larger learning rate compensates in part."),
    Setting("Precision",
            "float32 (PyTorch's default; not stated)",
            lambda m: _args(m).get("precision", "fp32"), reference="fp32",
            show=lambda p: "bf16 autocast in training; weights, ConvLSTM cell state, optimiser and loss float32"
            if p == "bf16" else p,
            why="1.4× faster training on this CPU; a test checks each layer's gradient direction against float32."),
    Setting("Runs", "one run (seed 23) of the double-mask variant per game (§0.2, §2.2)",
            lambda m: (_config(m).get("variant") or m.get("variant"), int(m.get("seed", 0))),
            show=lambda v: f"{v[0]}, seed {v[1]}",
            why="We also train the no-mask A3C to compare with. One seed per variant cannot separate a variant's "
                "effect from seed noise."),
    Setting("Rollout", "20 steps (§2.1)", lambda m: _args(m).get("num_steps"), reference=20),
    Setting("Discount and GAE λ", "γ = 0.99, λ = 1.0 (§2.1)",
            lambda m: (_args(m).get("gamma"), _args(m).get("gae_lambda")), reference=(0.99, 1.0)),
    Setting("Loss weights", "entropy 0.01, value 0.5 (§2.1)",
            lambda m: (_args(m).get("entropy_coef"), _args(m).get("value_coef")), reference=(0.01, 0.5)),
    Setting("Adam", "ε = 1e-3, AMSGrad (§2.2)",
            lambda m: (_args(m).get("adam_eps"), bool(_args(m).get("amsgrad"))), reference=(1e-3, True)),
    Setting("ConvLSTM", "yes, in every released run (§1.4)", lambda m: bool(_config(m).get("convlstm")), reference=True),
    Setting("Evaluation game cap", "10 000 agent steps (§1.1)", lambda m: _args(m).get("eval_max_steps"),
            reference=10_000),
))

TRAINING: tuple[Paper, ...] = (_DQN, _A3C)
"""The training settings of our agents against the papers': the one home of the agents' deviations."""


def agent_metas(agents_dir: str | os.PathLike = AGENTS_DIR) -> dict[str, dict]:
    """Agent directory name → its ``meta.json``, for every shipped agent."""
    return {row.agent: json.loads((repo_path(row.path) / "meta.json").read_text())
            for row in shipped_agents(agents_dir).itertuples()}


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return abs(float(a) - float(b)) <= 1e-12 * max(1.0, abs(float(b)))
        except (TypeError, ValueError):
            return False
    return a == b


def compare_training(metas: dict[str, dict]) -> pd.DataFrame:
    """Every setting of :data:`TRAINING` for the given agents' metadata.

    Returns
    -------
    pandas.DataFrame
        One row per paper and setting: ``paper, agents, setting, theirs, ours, why,
        deviates, n_agents``. ``ours`` is one value when all agents of the kind agree,
        else each value with the agents that have it. ``deviates`` is True when any
        agent's value differs from the paper's (always for settings that differ by design).
        Papers with no shipped agent of their kind are left out.
    """
    rows = []
    for paper in TRAINING:
        ms = {name: m for name, m in metas.items() if m.get("algo") in paper.algos}
        if not ms:
            continue
        for s in paper.settings:
            values = {name: s.read(m) for name, m in ms.items()}
            shown: dict[str, list[str]] = {}
            for name, v in values.items():
                shown.setdefault(s.show(v), []).append(name)
            ours = next(iter(shown)) if len(shown) == 1 else "; ".join(f"{t} ({', '.join(n)})" for t, n in shown.items())
            deviates = s.reference is DIFFERS or any(not _same(v, s.reference) for v in values.values())
            why = s.why(next(iter(ms.values()))) if callable(s.why) else s.why
            rows.append({"paper": paper.paper, "agents": paper.agents, "setting": s.name, "theirs": s.theirs,
                         "ours": ours, "why": why, "deviates": deviates, "n_agents": len(ms)})
    return pd.DataFrame(rows, columns=["paper", "agents", "setting", "theirs", "ours", "why", "deviates", "n_agents"])


def training_table(agents_dir: str | os.PathLike = AGENTS_DIR) -> pd.DataFrame:
    """The deviations of our shipped agents' training from the papers' (:func:`compare_training` rows that deviate)."""
    t = compare_training(agent_metas(agents_dir))
    return t[t["deviates"]].reset_index(drop=True)


def matching_sentence(agents_dir: str | os.PathLike = AGENTS_DIR) -> str:
    """Markdown: the settings checked and found equal to the papers', one bullet per paper (from :data:`TRAINING`)."""
    t = compare_training(agent_metas(agents_dir))
    if t.empty:
        return "No agent is shipped, so there is nothing to compare."
    lines = []
    for (paper, agents), g in t[~t["deviates"]].groupby(["paper", "agents"], sort=False):
        same = "; ".join(f"**{r.setting}** {r.theirs}" for r in g.itertuples())
        lines.append(f"* Our {agents} train as {paper}'s in {len(g)} settings: {same}.")
    if not lines:
        return "No training setting of our agents matches the papers'."
    return "\n".join(lines)


# -- explainers and metrics -------------------------------------------------------------------

@dataclass(frozen=True)
class MethodDeviation:
    """A deliberate deviation (or addition) of an explainer or metric from the paper's."""

    component: str
    kind: str
    """``"changed"`` (the paper does it otherwise) or ``"added"`` (the paper has no counterpart)."""
    theirs: str
    """The paper's way, with its section of the reference notes."""
    ours: str | Callable[[str], str | None]
    """Ours; a callable takes the execution profile's name (None: no deviation in that profile)."""
    why: str
    homes: tuple[tuple[str, str | None], ...]
    """``(dotted path, phrase)``: the object whose docstring documents it and a phrase of that docstring
    (checked by the tests); phrase None: the row is generated from that object itself."""


def _states(profile: str) -> str:
    dqn, mask = sweep_sizes(profile, "dqn").n_states, sweep_sizes(profile, "mask_a3c").n_states
    return (f"profile `{profile}`: DQN agents, the first {dqn} states of the agent's greedy game from the same "
            f"fixed start; Mask-A3C agents, {mask} states of one greedy game")


def _params(profile: str) -> str | None:
    parts = []
    for kind, who in (("dqn", "DQN agents"), ("mask_a3c", "Mask-A3C agents")):
        params = sweep_sizes(profile, kind).params
        if params:
            parts.append(f"{who}: {describe_params(dict(params), label=method_label)}")
    if not parts:
        return None
    full = "" if any(sweep_sizes("full", k).params for k in ("dqn", "mask_a3c")) else " Profile `full`: all at the paper's."
    return f"coarser in profile `{profile}`: " + "; ".join(parts) + ". Every other method at the paper's." + full


METHODS: tuple[MethodDeviation, ...] = (
    MethodDeviation(
        "Explained states", "changed", "997 states per game: steps 4–1000 of their agent's fixed-start game (§2.1)",
        _states, "The profile sets how many. The trajectories are those of the explained agents, not of the "
        "paper's, so no state is one of the paper's.",
        (("saliency_study.profiles", "997 states of the fixed-start trajectory"),
         ("saliency_study.profiles.PROFILES", None))),
    MethodDeviation(
        "Explainer parameters", "changed", "the final parameters, the same for all games (§3)", _params,
        "A Mask-A3C forward pass (80×80 convolutions and a ConvLSTM) costs many DQN passes here.",
        (("saliency_study.profiles.PROFILES", None),)),
    MethodDeviation(
        "RISE masks", "changed", "drawn from NumPy's global RNG, once per explainer (§3.4)",
        "drawn from a `torch.Generator` seeded by `seed`; same distribution, other draws; still reused for every state",
        "Reproducible without global state. Maps differ from a run of the paper's code by Monte-Carlo noise only.",
        (("saliency_lib.explainers.rise.RISE", "torch.Generator"),)),
    MethodDeviation(
        "LIME samples", "changed", "NumPy's global RNG; predictions in batches of 10 (§3.5)",
        "a fresh `torch.Generator` per state, seeded by `seed`; all samples evaluated in large batches",
        "A state's map no longer depends on the other states of the batch. Monte-Carlo noise only.",
        (("saliency_lib.explainers.lime.Lime", "fresh"),)),
    MethodDeviation(
        "LIME-SLIC segmentation", "changed", "scikit-image 0.17 (§1.1, pinned libraries)",
        "scikit-image ≥ 0.19, whose SLIC implementation changed",
        "0.17 does not install on current Python. Superpixels may differ slightly (not verified).",
        (("saliency_lib.explainers.lime.Lime", "Later releases changed SLIC's implementation"),)),
    MethodDeviation(
        "Resizing coarse maps and masks", "changed",
        "cv2 bilinear (Occlusion), PIL bilinear (NS, SARFA), scikit-image order 1 (RISE) (§3, §9)",
        "PyTorch bilinear interpolation and separable matrix products, batched",
        "One batched implementation. Equal to the originals to float32 rounding (tested).",
        (("saliency_lib.explainers.occlusion.Occlusion", "equals OpenCV"),
         ("saliency_lib.explainers.rise.RISE", "tested against scikit-image"))),
    MethodDeviation(
        "Sanity check: output level of a dueling agent", "changed", "fc_2, the single output layer (§5)",
        "both heads of the dueling network (value and advantage) together",
        "Our DQN agents are dueling (agents' table). Randomising one head alone would leave half the output trained.",
        (("saliency_lib.metrics.randomisation", "both heads if dueling"),)),
    MethodDeviation(
        "Sanity check on Mask-A3C", "added", "DQN agents only (§5)",
        "heads → attention 1×1 convs → ConvLSTM → conv3 → conv2 → conv1, cumulatively",
        "Extends the test to the actor-critic agents, from the output down.",
        (("saliency_lib.metrics.randomisation", "attention 1×1 convs"),)),
    MethodDeviation(
        "Similarity: SSIM", "added", "SSIM of the flattened 1-D maps (§5)",
        "the paper's 1-D SSIM, and the image SSIM beside it (`ssim_2d`)",
        "The 1-D SSIM ignores vertical structure; the 2-D one shows what an image SSIM says.",
        (("saliency_lib.metrics.similarity", "ssim_2d"),)),
    MethodDeviation(
        "Similarity: Spearman outside the shared tie", "added", "Spearman over all pixels (§5)",
        "the same, and over the pixels outside the block where both maps sit at their largest tie (`spearman_untied`)",
        "A black plateau shared by the trained and the random map can carry the rank correlation alone; chapter 3 "
        "tests on every state whether it does.",
        (("saliency_lib.metrics.similarity", "spearman_untied"),)),
    MethodDeviation(
        "Insertion AUC", "added", "the mean of the 85 step values (§6)",
        "the same (`<measure>_auc`), and the trapezoid rule over the fraction of changed pixels (`_auc_trapz`)",
        "The trapezoid gives the endpoints half weight; the chapters rank on the paper's mean.",
        (("saliency_lib.metrics.insertion_deletion", "auc_trapz"),)),
    MethodDeviation(
        "Deletion", "added", "not used (§6)", "deletion with the same substrates and measures (Petsiuk et al.)",
        "Insertion's counterpart in Petsiuk et al.: it checks the same ranking from the intact state.",
        (("saliency_lib.metrics.insertion_deletion.Deletion", "not part of Huber et al."),)),
    MethodDeviation(
        "Blur substrate", "added", "black and random substrates (§6)", "also each frame blurred with σ = 5 pixels",
        "Black and uniform noise lie off the data for the standardised Mask-A3C input; a blur stays on its scale.",
        (("saliency_lib.metrics.insertion_deletion", "blurred with a Gaussian"),)),
    MethodDeviation(
        "Substrates of Mask-A3C agents", "changed", "DQN inputs in [0, 1] only (§6)",
        "\"black\" is 0, which is the running mean of the standardised input, not black; U[0, 1) noise is off its scale",
        "One code path for every agent. Read the Mask-A3C rows of the black and random substrates with this in mind.",
        (("saliency_lib.metrics.insertion_deletion.make_substrate", "0 is the running mean"),)),
    MethodDeviation(
        "Measures of actor-critic agents", "added", "Q-ratio and advantage of Q-networks (§6)",
        "the policy probability π(a) and the state value V",
        "Actor-critic agents have no Q-values; these two play the same roles.",
        (("saliency_lib.metrics.insertion_deletion", "softmax(logits_t)[a]"),)),
    MethodDeviation(
        "Mask-attention maps", "changed",
        f"{ITAYA}'s visualiser: sigmoid(5·z), min-max normalised over the episode (Itaya §4.1)",
        "the mask M = sigmoid(z) that the network multiplies in, per state, not normalised",
        "The metrics judge what the network uses; the display variant exaggerates the contrast (Itaya §5, item 4).",
        (("saliency_lib.explainers.mask_attention.MaskAttention", "the mask the network actually multiplies"),)),
    MethodDeviation(
        "Gradient baselines", "added", "perturbation methods only (§3)",
        "gradient, Integrated Gradients and Grad-CAM through Captum",
        "Cheap reference points, as in the Mask-A3C comparison.",
        (("saliency_lib.explainers.gradient.Gradient", "Not one of Huber et al.'s methods"),)),
)
"""Deliberate deviations and additions of the explainers and metrics: the one home of that table."""


def methods_table(profile: str = "quick") -> pd.DataFrame:
    """:data:`METHODS` as a table for ``profile`` (rows that do not deviate in it are left out)."""
    rows = []
    for d in METHODS:
        ours = d.ours(profile) if callable(d.ours) else d.ours
        if ours is None:
            continue
        rows.append({"component": d.component, "kind": d.kind, "theirs": d.theirs, "ours": ours, "why": d.why,
                     "documented in": ", ".join(f"`{path}`" for path, _ in d.homes)})
    return pd.DataFrame(rows, columns=["component", "kind", "theirs", "ours", "why", "documented in"])


def style_deviations(table: pd.DataFrame, caption: str):
    """A deviations table (:func:`training_table` or :func:`methods_table`) as a captioned Styler."""
    if "paper" in table.columns:
        t = pd.DataFrame({"Agents": [f"Our {a} vs {p}" for p, a in zip(table["paper"], table["agents"])],
                          "Setting": table["setting"], "Theirs (reference notes §)": table["theirs"],
                          "Ours (shipped agents' meta.json)": table["ours"], "Why / expected effect": table["why"]})
    else:
        t = table.rename(columns={"component": "Explainer or metric", "kind": "Kind",
                                  "theirs": "Huber et al. / Itaya et al. (reference notes §)", "ours": "Ours",
                                  "why": "Why / expected effect", "documented in": "Documented in"})
    # The cells hold Markdown-style `code`; the Styler writes raw HTML, so make it <code> (after escaping the text).
    t = t.map(lambda v: re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(str(v), quote=False)))
    return (t.style.hide(axis="index").set_caption(caption)
            .set_table_styles([{"selector": "td, th", "props": "text-align: left; vertical-align: top;"}]))
