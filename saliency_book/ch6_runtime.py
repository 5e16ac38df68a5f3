"""Chapter 6 (Run-time): what each saliency map costs, and how fast the trainers and environments run.

The chapter's notebook (``notebooks/06_runtime.py``) only calls these functions. It
reads the committed benchmark results in ``data/benchmarks/`` and does not re-run the
benchmarks (they take long on the study's 2-core CPU):

* ``explainers.json``, written by ``benchmarks/explainers.py``: ms per map of every
  method, the forward-pass floor, Captum and the ``lime`` package, bf16;
* ``training.json``, written by ``benchmarks/training.py``: trainer throughput against a
  CleanRL-style loop;
* ``envs.json``, written by ``benchmarks/envs.py``: vectorised-environment throughput;
* ``study_cost.json`` and ``scaleout.json``: the study's cost below the naive floor and spread
  over workers, shown by :mod:`saliency_book.ch6_scaleout`.

* :class:`RuntimeChapter`: the chapter's frozen configuration.
* :func:`load_benchmarks`: the JSON files (a missing file becomes ``None``).
* :func:`explainer_table`, :func:`comparison_table`, :func:`bf16_table`,
  :func:`training_table`, :func:`envs_table`, :func:`machine_table`: tidy tables,
  each with a ``style_…`` function that captions and formats it (:func:`style_table`).
* :func:`cost_figure` and :func:`cost_summary`: the figure and the sentence on what costs what.
* :mod:`saliency_book.ch6_spot`: one timed map per method on the study's own agents, on the
  machine that executes the chapter.

Functions whose input is missing return a :class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import Note, join_words
from saliency_lib.explainers import BF16_DEFAULTS, METHOD_LABELS
from saliency_lib.games import game_info
from saliency_study.catalog import rel_path
from saliency_study.paths import RESULTS_DIR, repo_path
from saliency_study.profiles import get_profile, profile_settings

__all__ = [
    "RuntimeChapter", "Benchmarks", "BENCHMARKS_DIR", "PAPER_SECONDS", "PAPER_SOURCE", "CAPTUM_EQUIVALENT",
    "load_benchmarks", "missing_benchmark", "method_family", "explainer_table", "cost_summary", "comparison_table", "bf16_table", "training_table",
    "envs_table", "machine_table", "regenerate_commands",
    "hardware_note", "paper_summary", "comparison_summary", "bf16_summary", "training_summary", "envs_summary",
]

BENCHMARKS_DIR = "data/benchmarks"
"""Committed benchmark results, relative to the repository root."""

PAPER_SECONDS = MappingProxyType({
    "occlusion": 2.80, "ns_original": 2.62, "sarfa": 3.00, "rise": 1.54,
    "lime_quickshift": 2.75, "lime_felzenszwalb": 1.71, "lime_slic": 2.08,
})
"""Seconds per map that Huber et al.'s parameter search recorded for the chosen parameters.

Source: the official result file ``final_parameters_results.csv`` (Ms. Pac-Man agent, the
10 HIGHLIGHTS states of the search, one state per call), as listed in the project's
reference notes (``reference-huber2021.md`` §4 "Hyper-parameter search" and §6.3
"Run-time"). The search timed Noise Sensitivity with blur and the original score,
hence ``ns_original``; the other variants and the non-perturbation methods were not timed.
"""
PAPER_SOURCE = ("Huber et al.'s official result file final_parameters_results.csv (Ms. Pac-Man parameter search, "
                "chosen parameters; reference notes §4 and §6.3)")

CAPTUM_EQUIVALENT = MappingProxyType({
    "occlusion": "captum.attr.Occlusion vs occlusion",
    "lime_slic": "captum.attr.Lime vs lime_slic",
})
"""Method → key of its Captum equivalent in ``explainers.json``'s ``comparisons``."""



_FAMILY = {"mask_policy": "attention mask", "mask_value": "attention mask", "gradient": "gradient",
           "integrated_gradients": "gradient", "gradcam": "gradient", "random": "chance reference"}
FAMILY_COLOURS = {"perturbation": "tab:blue", "gradient": "tab:green", "attention mask": "tab:purple",
                   "chance reference": "0.6"}


def method_family(name: str) -> str:
    """``perturbation``, ``gradient``, ``attention mask`` or ``chance reference``."""
    return _FAMILY.get(name, "perturbation")


# -- configuration ---------------------------------------------------------------------------

@dataclass(frozen=True)
class RuntimeChapter:
    """Configuration of chapter 6; every field is a parameter of the notebook."""

    game: str = "Breakout"
    """Game of the spot check on the study's agents (the benchmarks use their own fixed setting)."""
    profile: str = "quick"
    """Execution profile: ``tiny``, ``quick`` or ``full``; it sizes the spot check (:attr:`~saliency_study.profiles.Profile.runtime_methods`, ``runtime_states``)."""
    benchmarks_dir: str = BENCHMARKS_DIR
    """Directory of ``explainers.json``, ``training.json`` and ``envs.json``."""
    results_dir: str = RESULTS_DIR
    """Cache of the spot check (relative paths are under the repository root)."""
    seed: int = 0
    """Seed of the game whose states the spot check times."""
    spot: dict = field(init=False, repr=False, compare=False)
    """The profile's spot-check settings."""

    def __post_init__(self):
        game_info(self.game)
        profile_settings(self.profile)  # validates the name
        if isinstance(self.seed, float) and self.seed.is_integer():
            object.__setattr__(self, "seed", int(self.seed))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"seed must be an integer, got {self.seed!r}")
        for name in ("benchmarks_dir", "results_dir"):
            if not isinstance(getattr(self, name), (str, os.PathLike)) or not str(getattr(self, name)):
                raise TypeError(f"{name} must be a non-empty path, got {getattr(self, name)!r}")
        prof = get_profile(self.profile)
        object.__setattr__(self, "spot", {"methods": prof.runtime_methods, "states": prof.runtime_states})

    def _repr_markdown_(self) -> str:
        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self) if f.name != "spot")
        methods = self.spot["methods"] or "every benchmarked method and the attention masks"
        return (f"**Parameters:** {params}.\n\n**Spot check of the profile `{self.profile}`:** methods: {methods}; "
                f"states per method: {self.spot['states']}.\n")


# -- loading ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Benchmarks:
    """The committed benchmark results; a missing file is ``None``."""

    directory: Path
    explainers: dict | None
    training: dict | None
    envs: dict | None
    study_cost: dict | None = None
    scaleout: dict | None = None
    bf16: dict | None = None


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON ({e}); regenerate it with the command in benchmarks/") from e


def load_benchmarks(benchmarks_dir: str | os.PathLike = BENCHMARKS_DIR) -> Benchmarks:
    """Read ``explainers.json``, ``training.json``, ``envs.json``, ``study_cost.json``, ``scaleout.json`` and
    ``bf16_decision.json``.

    Raises
    ------
    ValueError
        A file exists but is not valid JSON, or ``explainers.json`` lacks ``methods``.
    """
    d = repo_path(benchmarks_dir)
    b = Benchmarks(d, *(_read_json(d / f"{name}.json") for name in ("explainers", "training", "envs", "study_cost", "scaleout", "bf16_decision")))
    if b.explainers is not None and not isinstance(b.explainers.get("methods"), dict):
        raise ValueError(f"{d / 'explainers.json'} has no 'methods' mapping; regenerate it with benchmarks/explainers.py")
    return b


def missing_benchmark(what: str, b: Benchmarks, script: str) -> Note:
    """The warning that ``what`` is missing from the benchmarks directory, with the command that writes it."""
    return Note(f"No `{what}` in `{rel_path(b.directory)}`. Run `python benchmarks/{script} --json "
                f"{rel_path(b.directory)}/{what}` to measure it.", kind="warning", title="Benchmark missing")


# -- the explainer benchmark --------------------------------------------------------------------

def explainer_table(b: Benchmarks) -> pd.DataFrame | Note:
    """One row per benchmarked method: its cost, its floor, Captum and Huber et al. beside it.

    Returns
    -------
    pandas.DataFrame or Note
        Columns ``method, label, family, forward_passes, ms, chunk, floor_ms, overhead,
        overhead_target, ms_per_pass, captum, captum_ms, captum_speedup, paper_s,
        paper_over_ours``. ``overhead`` is ms ÷ floor_ms (the same number of forward
        passes of the bare network at its best chunk size); ``captum_speedup`` is the
        Captum equivalent's ms ÷ ours; ``paper_over_ours`` is Huber et al.'s time ÷ ours.
        NaN where there is no equivalent or no published time.
    """
    if b.explainers is None:
        return missing_benchmark("explainers.json", b, "explainers.py")
    comps = b.explainers.get("comparisons", {})
    rows = []
    for name, r in b.explainers["methods"].items():
        cap = comps.get(CAPTUM_EQUIVALENT.get(name, ""))
        paper = PAPER_SECONDS.get(name)
        rows.append({
            "method": name, "label": METHOD_LABELS.get(name, name), "family": method_family(name),
            "forward_passes": int(r["forward_passes"]), "ms": float(r["ms"]), "chunk": r.get("chunk"),
            "floor_ms": r.get("floor_ms", np.nan), "overhead": r.get("overhead_ratio", np.nan),
            "overhead_target": r.get("target_overhead", np.nan), "ms_per_pass": float(r["ms"]) / int(r["forward_passes"]),
            "captum": CAPTUM_EQUIVALENT[name].split(" vs ")[0] if cap else None,
            "captum_ms": cap["ms"] if cap else np.nan, "captum_speedup": cap["ms"] / r["ms"] if cap else np.nan,
            "paper_s": paper if paper is not None else np.nan,
            "paper_over_ours": 1e3 * paper / r["ms"] if paper is not None else np.nan,
        })
    return pd.DataFrame(rows)


def _largest_gap(ms: pd.Series) -> float:
    """The boundary between cheap and expensive methods: the largest ratio between neighbours in cost."""
    s = ms.sort_values().to_numpy()
    if len(s) < 2:
        return float(s[-1]) if len(s) else 0.0
    i = int(np.argmax(s[1:] / s[:-1]))
    return float(s[i])


def _names(rows: pd.DataFrame) -> str:
    parts = [f"{r.label} ({r.ms:,.{1 if r.ms < 10 else 0}f} ms)" for r in rows.itertuples()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def cost_summary(table: pd.DataFrame | Note) -> str | Note:
    """Sentences on what costs what, formatted from the benchmark's numbers (Markdown).

    The methods are split where the cost jumps most between neighbours in cost; the
    sentences name both groups with their ms per map and forward passes, the range of
    the perturbation methods' overhead over their floor, and the ratio of the most
    expensive method to the cheapest one that is not the random map.
    """
    if isinstance(table, Note):
        return table
    t = table.sort_values("ms")
    cut = _largest_gap(t["ms"])
    cheap, dear = t[t["ms"] <= cut], t[t["ms"] > cut]
    out = [f"The cheap methods are {_names(cheap)}: they need at most {cheap['forward_passes'].max():,} "
           f"forward passes per map."]
    if not dear.empty:
        out.append(f"All the others cost {dear['ms'].min():,.0f} to {dear['ms'].max():,.0f} ms per map, because they need "
                   f"{dear['forward_passes'].min():,} to {dear['forward_passes'].max():,} forward passes.")
    pert = t[t["family"] == "perturbation"].dropna(subset=["overhead"])
    if not pert.empty:
        out.append(f"Each perturbation method takes {pert['overhead'].min():.2f} to {pert['overhead'].max():.2f} times "
                   f"the time of its forward passes alone, so its cost is essentially its number of forward passes "
                   f"({pert['ms_per_pass'].min():.2f} to {pert['ms_per_pass'].max():.2f} ms per pass).")
    ref = t[t["family"] != "chance reference"]
    if len(ref) >= 2:
        hi, lo = ref.iloc[-1], ref.iloc[0]
        out.append(f"The most expensive, {hi['label']}, costs {hi['ms'] / lo['ms']:,.0f} times as much as the cheapest "
                   f"real explanation, {lo['label']}.")
    return " ".join(out)


# -- comparisons, precision -------------------------------------------------------------------------

_COMPARISON_LABELS = {
    "captum.attr.Occlusion vs occlusion": ("captum.attr.Occlusion", "Captum's Occlusion", "occlusion"),
    "captum.attr.Lime vs lime_slic": ("captum.attr.Lime (ridge, LIME kernel, our SLIC segments)", "Captum's Lime",
                                      "lime_slic"),
    "captum.attr.KernelShap vs lime_slic": ("captum.attr.KernelShap (our SLIC segments)", "Captum's KernelShap",
                                            "lime_slic"),
    "lime.lime_image vs lime_slic": ("lime package: LimeImageExplainer (our SLIC segments)", "the lime package",
                                     "lime_slic"),
}


def _setting(c: dict) -> str:
    for key, name in (("perturbations_per_eval", "perturbations_per_eval"), ("batch_size", "batch_size")):
        if key in c:
            others = ", ".join(f"{k}: {v:,.0f} ms" for k, v in c.get("ms_per_setting", {}).items() if str(k) != str(c[key]))
            return f"{name}={c[key]}" + (f" ({others})" if others else "")
    return ""


def comparison_table(b: Benchmarks) -> pd.DataFrame | Note:
    """Captum and the ``lime`` package against our method, measured in the same benchmark run.

    Columns ``key, theirs, short, ours, their_ms, setting, our_ms, ratio, floor_bound``: ``ratio`` is
    their ms ÷ ours, ``floor_bound`` their ms ÷ the floor of our method (the largest
    speed-up any implementation of the same forward passes could reach).
    """
    if b.explainers is None:
        return missing_benchmark("explainers.json", b, "explainers.py")
    rows = []
    for key, c in b.explainers.get("comparisons", {}).items():
        theirs, short, ours = _COMPARISON_LABELS.get(key, (key.split(" vs ")[0],) * 2 + (key.split(" vs ")[-1],))
        r = b.explainers["methods"].get(ours)
        if r is None:
            continue
        rows.append({"key": key, "theirs": theirs, "short": short, "ours": METHOD_LABELS.get(ours, ours), "their_ms": c["ms"], "setting": _setting(c),
                     "our_ms": r["ms"], "ratio": c["ms"] / r["ms"],
                     "floor_bound": c["ms"] / r["floor_ms"] if r.get("floor_ms") else np.nan})
    if not rows:
        return Note("The benchmark recorded no comparison with Captum or the lime package (it was run with `--quick`?).",
                    title="No comparisons")
    return pd.DataFrame(rows)


def _library_offers_bf16(name: str) -> bool | None:
    """Whether :func:`get_explainer` accepts ``precision="bf16"`` for ``name`` (None: not for a DQN agent)."""
    from saliency_lib.agents import DQNConfig, DQNNet, QAgent
    from saliency_lib.explainers import get_explainer

    agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
    try:
        get_explainer(name, agent, precision="bf16")
    except ValueError as e:
        return False if "precision='bf16'" in str(e) else None
    return True


def bf16_table(b: Benchmarks) -> pd.DataFrame | Note:
    """The bf16 decision table: per agent kind and perturbation method, bf16 against float32 maps.

    From ``bf16_decision.json`` (``benchmarks/bf16_decision.py``: 20 states spread over the first
    1000 greedy steps of each trained agent, the four DQN agents and the official Mask-A3C
    Breakout agent). Columns ``kind, method, label, agents, states, min_spearman, bf16_speedup,
    precision, reason, offered``: the lowest Spearman correlation of a bf16 map with its float32
    map over every state of every agent of the kind, the smallest bf16 speed-up over those agents
    (CPU time per map against the library's float32 default), the decision and why, and whether
    :func:`~saliency_lib.explainers.get_explainer` accepts ``precision="bf16"`` for the method.
    """
    if b.bf16 is None:
        return missing_benchmark("bf16_decision.json", b, "bf16_decision.py")
    rows = []
    for kind, methods in b.bf16.get("decision", {}).items():
        for name, d in methods.items():
            rows.append({"kind": kind, "method": name, "label": METHOD_LABELS.get(name, name), "agents": len(d["agents"]),
                         "states": d["states_per_agent"], "min_spearman": d["min_spearman"],
                         "bf16_speedup": d["min_bf16_speedup"], "precision": d["precision"], "reason": d["reason"],
                         "offered": {True: "yes", False: "no", None: None}[_library_offers_bf16(name)]})
    if not rows:
        return Note("The bf16 benchmark recorded no decision.", title="No bf16 results")
    return pd.DataFrame(rows)


# -- training and environments ---------------------------------------------------------------------

def training_table(b: Benchmarks) -> pd.DataFrame | Note:
    """Agent steps and frames per second of our trainers and of a CleanRL-style DQN loop.

    Columns ``key, run, setting, phrase, steps_per_s, frames_per_s, vs_cleanrl`` (steps per second ÷
    the CleanRL-style loop's). The settings are those recorded in the file (``settings``); a file
    written before they were recorded gets the trainers' current defaults
    (:class:`~saliency_lib.train.DQNArgs`, :class:`~saliency_lib.train.A2CArgs`), marked "(defaults
    now)".
    """
    if b.training is None:
        return missing_benchmark("training.json", b, "training.py")
    from saliency_lib.train import A2CArgs, DQNArgs

    d, a = DQNArgs(), A2CArgs()
    now = {"ours_dqn_default": vars(d), "ours_dqn_matched": {**vars(d), "batch_size": 32, "train_freq": 4},
           "ours_dqn_fp32": {**vars(d), "precision": "fp32"}, "ours_a2c_double": vars(a),
           "ours_a2c_double_fp32": {**vars(a), "precision": "fp32"}}
    recorded = b.training.get("settings", {})

    def setting(key: str) -> str:
        s, mark = (recorded[key], "") if key in recorded else (now[key], " (defaults now)")
        if key.startswith("ours_a2c"):
            return f"{s['num_envs']} envs, {s['num_steps']}-step rollouts, precision={s['precision']!r}{mark}"
        return f"{s['num_envs']} envs, batch {s['batch_size']} every {s['train_freq']} steps, precision={s['precision']!r}{mark}"

    settings = {  # run → (label, setting, phrase for the summary)
        "ours_dqn_default": ("Our DQN trainer, defaults", setting("ours_dqn_default"), "our DQN trainer with its defaults"),
        "ours_dqn_matched": ("Our DQN trainer, CleanRL's replay ratio", setting("ours_dqn_matched"),
                             "our DQN trainer with CleanRL's replay ratio"),
        "cleanrl_style_dqn": ("CleanRL-style DQN loop (benchmarks/cleanrl_style_dqn.py)",
                              "1 env, full obs and next-obs in replay, batch 32 every 4 steps", "the CleanRL-style loop"),
        "ours_dqn_fp32": ("Our DQN trainer, defaults in float32", setting("ours_dqn_fp32"), "our DQN trainer in float32"),
        "ours_a2c_double": ("Our Mask-A2C trainer (double masks)", setting("ours_a2c_double"),
                            "our Mask-A2C trainer (another algorithm and network, for scale only)"),
        "ours_a2c_double_fp32": ("Our Mask-A2C trainer (double masks) in float32", setting("ours_a2c_double_fp32"),
                                 "our Mask-A2C trainer in float32"),
    }
    sps = b.training["agent_steps_per_s"]
    base = sps.get("cleanrl_style_dqn")
    rows = [{"key": k, "run": settings.get(k, (k,))[0], "setting": settings.get(k, (k, ""))[1],
             "phrase": settings.get(k, (k, "", k))[2], "steps_per_s": v,
             "frames_per_s": b.training.get("frames_per_s", {}).get(k, 4 * v), "vs_cleanrl": v / base if base else np.nan}
            for k, v in sps.items()]
    return pd.DataFrame(rows)


_ENV_LABELS = {  # backend → (label, used by, short name)
    "gymnasium_sync_ours": ("gymnasium SyncVectorEnv over our make_env wrappers", "", "gymnasium's SyncVectorEnv"),
    "gymnasium_async_ours": ("gymnasium AsyncVectorEnv over our make_env wrappers", "", "gymnasium's AsyncVectorEnv"),
    "ale_vector_gray84": ("ale-py AtariVectorEnv, grayscale 84×84 (equal to the dqn preset)", "DQN trainer",
                          "ale-py's AtariVectorEnv in grayscale"),
    "ale_vector_rgb": ("ale-py AtariVectorEnv, RGB 210×160 (mask_a3c preset)", "Mask-A2C trainer",
                       "ale-py's AtariVectorEnv in RGB"),
    "envpool_gray84": ("envpool, grayscale 84×84", "", "envpool"),
}


def envs_table(b: Benchmarks) -> pd.DataFrame | Note:
    """Agent steps per second of each vectorised-environment backend (random actions, Breakout).

    Columns ``backend, used_by, short, steps_per_s, vs_sync, note``; a backend that could not run
    has NaN and the reason in ``note``.
    """
    if b.envs is None:
        return missing_benchmark("envs.json", b, "envs.py")
    sps = b.envs["agent_steps_per_s"]
    base = sps.get("gymnasium_sync_ours")
    rows = []
    for k, v in sps.items():
        label, used, short = _ENV_LABELS.get(k, (k, "", k))
        ok = isinstance(v, (int, float))
        rows.append({"backend": label, "used_by": used, "short": short, "steps_per_s": v if ok else np.nan,
                     "vs_sync": v / base if ok and isinstance(base, (int, float)) else np.nan, "note": "" if ok else str(v)})
    return pd.DataFrame(rows)


def machine_table(b: Benchmarks) -> pd.DataFrame | Note:
    """Where and how each benchmark ran, as recorded in its JSON."""
    rows = []
    if b.explainers is not None:
        m = b.explainers.get("machine", {})
        load = m.get("load_average_at_start", [None])[0], m.get("load_average_at_end", [None])[0]
        versions = ", ".join(f"{k} {m[k]}" for k in ("python", "torch", "captum", "lime", "scikit_image", "numpy") if k in m)
        rows.append({"benchmark": "explainers.json", "date": m.get("date", "")[:10], "cpu": m.get("cpu"),
                     "cpus": m.get("logical_cpus"), "threads": m.get("torch_threads"),
                     "load": " → ".join(f"{x:.1f}" for x in load if x is not None), "versions": versions})
    if b.training is not None:
        la = b.training.get("load_avg_at_end")
        rows.append({"benchmark": "training.json", "date": "", "cpu": None, "cpus": b.training.get("cpu_count"),
                     "threads": b.training.get("torch_threads"), "load": f"{la[0]:.1f} (end)" if la else "",
                     "versions": f"game {b.training.get('game')}, {b.training.get('timed_steps'):,} timed steps"})
    if b.envs is not None:
        la = b.envs.get("load_avg")
        rows.append({"benchmark": "envs.json", "date": "", "cpu": b.envs.get("machine"), "cpus": b.envs.get("cpu_count"),
                     "threads": None, "load": f"{la[0]:.1f}" if la else "", "versions": f"{b.envs.get('num_envs')} envs"})
    for name, doc in (("study_cost.json", b.study_cost), ("scaleout.json", b.scaleout)):
        if doc is None:
            continue
        m = doc.get("machine", {})
        load = m.get("load_average", [None])[0], m.get("load_average_at_end", [None])[0]
        rows.append({"benchmark": name, "date": m.get("date", "")[:10], "cpu": m.get("cpu"), "cpus": m.get("logical_cpus"),
                     "threads": m.get("torch_threads"), "load": " → ".join(f"{x:.1f}" for x in load if x is not None),
                     "versions": ", ".join(f"{k} {m[k]}" for k in ("python", "torch", "ray", "numpy", "commit") if m.get(k))})
    if not rows:
        return Note(f"No benchmark results in `{rel_path(b.directory)}`.", kind="warning", title="No benchmarks")
    return pd.DataFrame(rows)


def regenerate_commands(b: Benchmarks) -> str:
    """Shell commands that rewrite the benchmark JSON files with the settings recorded in them (Markdown)."""
    d = rel_path(b.directory)
    ex = [f"python benchmarks/explainers.py --json {d}/explainers.json"]
    if b.explainers is not None:
        m = re.search(r"median of (\d+) rounds", b.explainers.get("setting", {}).get("statistic", ""))
        if m:
            ex.append(f"--repeats {m.group(1)}")
        states = b.explainers.get("bf16_agreement", {}).get("states")
        if states:
            ex.append(f"--bf16-states {states}")
    tr = [f"python benchmarks/training.py --json {d}/training.json"]
    if b.training is not None:
        tr += [f"--steps {b.training['timed_steps']}", f"--learning-starts {b.training['learning_starts']}",
               f"--game {b.training['game']}"]
    en = [f"python benchmarks/envs.py --json {d}/envs.json"]
    if b.envs is not None:
        en.append(f"--num-envs {b.envs['num_envs']}")
    cost = [f"python benchmarks/study_cost.py --json {d}/study_cost.json"]
    if b.study_cost is not None:
        s = b.study_cost.get("setting", {})
        cost += [f"--{flag} {s[key]}" for flag, key in (("states", "states_per_call"), ("map-states", "map_states"),
                                                         ("repeats", "repeats"), ("cascade-states", "cascade_states"))
                 if isinstance(s.get(key), int)]
    scale = [f"python benchmarks/scaleout.py --json {d}/scaleout.json"]
    lines = [c[0] + (" \\\n    " + " ".join(c[1:]) if len(c) > 1 else "") for c in (ex, tr, en, cost, scale)]
    return "```bash\n" + "\n".join(lines) + "\n```\n"


# -- sentences formatted from the numbers ---------------------------------------------------------

def _md(text: str):
    from IPython.display import Markdown

    return Markdown(text)


def hardware_note(b: Benchmarks):
    """Where the explainer benchmark ran, from its recorded machine info (Markdown, or a Note)."""
    if b.explainers is None:
        return missing_benchmark("explainers.json", b, "explainers.py")
    m, s = b.explainers.get("machine", {}), b.explainers.get("setting", {})
    load = [x for x in (m.get("load_average_at_start", [None])[0], m.get("load_average_at_end", [None])[0]) if x is not None]
    cuda = {True: "CUDA available but not used", False: "no CUDA"}.get(m.get("cuda"), "CUDA not recorded")
    text = (f"The explainer benchmark ran on {m.get('date', 'an unrecorded date')[:10]} with "
            f"{m.get('torch_threads', '?')} torch thread{'' if m.get('torch_threads') == 1 else 's'} on a machine with {m.get('logical_cpus', '?')} logical CPUs "
            f"({m.get('cpu', 'CPU not recorded')}; {cuda}) and torch {m.get('torch', '?')}.")
    if load:
        text += (f" The one-minute load average was {' at the start and '.join(f'{x:.1f}' for x in load)}"
                 f"{' at the end' if len(load) == 2 else ''}: other processes competed for the CPUs, so single "
                 "times are noisy, and the ratios measured back to back within one round are more reliable "
                 "than the absolute times.")
    if s.get("statistic"):
        text += f" Statistic: {s['statistic']}."
    return _md(text)


def paper_summary(table: pd.DataFrame | Note):
    """How our times compare with Huber et al.'s recorded seconds per map (Markdown, or a Note)."""
    if isinstance(table, Note):
        return table
    t = table.dropna(subset=["paper_over_ours"])
    if t.empty:
        return _md("None of the benchmarked methods has a time recorded by Huber et al.")
    lo, hi = t.loc[t["paper_over_ours"].idxmin()], t.loc[t["paper_over_ours"].idxmax()]
    na = table.loc[table["paper_s"].isna(), "label"].tolist()
    text = (f"Where Huber et al. recorded a time, their map took {lo['paper_over_ours']:.1f} ({lo['label']}) to "
            f"{hi['paper_over_ours']:.1f} ({hi['label']}) times as long as ours.")
    if na:
        text += f" They recorded no time for {join_words(na)} (NA in the table)."
    return _md(text)


def comparison_summary(table: pd.DataFrame | Note):
    """Which implementation is faster, and the floor bound of the lime package (Markdown, or a Note)."""
    if isinstance(table, Note):
        return table
    faster = table[table["ratio"] > 1]
    slower = table[table["ratio"] <= 1]
    parts = []
    if not faster.empty:
        parts.append("Our implementation is faster than " + join_words(
            [f"{r.short} (which takes {r.ratio:.1f} times as long)" for r in faster.itertuples()]) + ".")
    if not slower.empty:
        parts.append("It is not faster than " + join_words(
            [f"{r.short} (which takes {r.ratio:.2f} times as long)" for r in slower.itertuples()]) + ".")
    lp = table[table["key"].str.startswith("lime.")]
    if not lp.empty:
        r = lp.iloc[0]
        parts.append(f"No implementation that evaluates the same forward passes as our {r['ours']} can be more than "
                     f"{r['floor_bound']:.1f} times as fast as the lime package on this network: that is the lime "
                     "package's time divided by the floor, the bare forward passes alone.")
    return _md(" ".join(parts))


def bf16_summary(table: pd.DataFrame | Note):
    """Where bf16 keeps the maps, where it is faster, and whether the library's offer matches (Markdown, or a Note)."""
    if isinstance(table, Note):
        return table
    keeps = table.groupby("method")["min_spearman"].min() >= 0.99
    keep = [METHOD_LABELS.get(m, m) for m in keeps[keeps].index]
    drop = [METHOD_LABELS.get(m, m) for m in keeps[~keeps].index]
    n = int(table["agents"].sum() / table["method"].nunique())
    text = (f"On {n} trained agents, {int(table['states'].iloc[0])} states each, the bf16 maps kept a Spearman "
            f"correlation of at least 0.99 with the float32 maps on every state for {join_words(keep) if keep else 'no method'}"
            f"{'' if not drop else ', and not for ' + join_words(drop)}.")
    faster = table[table["bf16_speedup"] > 1]
    kinds = {"dqn": "the DQN agents", "mask_a3c": "the Mask-A3C agent"}
    if faster.empty:
        text += " bf16 was faster than the float32 default for no method on this CPU, so float32 stays the default everywhere."
    else:
        where = [f"{r.label} on {kinds.get(r.kind, r.kind)} (×{r.bf16_speedup:.2f})" for r in faster.itertuples()]
        text += (f" It was faster than the float32 default only for {join_words(where)}; everywhere else it was slower "
                 "(the local methods run float32 through the exact incremental engine).")
    both = {(r.kind, r.method) for r in faster.itertuples() if keeps.get(r.method, False)}
    defaults = [f"{METHOD_LABELS.get(m, m)} on {kinds.get(k, k)}" for k, m in sorted(BF16_DEFAULTS)]
    if both != set(BF16_DEFAULTS):
        text += f" The library's bf16 defaults ({join_words(defaults) if defaults else 'none'}) differ from the measurement."
    elif defaults:
        text += f" bf16 is the library's default exactly where it kept the maps and was faster: {join_words(defaults)}."
    offered = table.dropna(subset=["offered"]).groupby("method")["offered"].first() == "yes"
    mismatch = [METHOD_LABELS.get(m, m) for m in offered.index if bool(offered[m]) != bool(keeps.get(m, False))]
    text += (" The library offers `precision=\"bf16\"` exactly for the methods that kept their maps on every agent."
             if not mismatch else f" The library's offer differs from the measurement for {join_words(mismatch)}.")
    return _md(text)


def training_summary(table: pd.DataFrame | Note):
    """Our trainers' throughput relative to the CleanRL-style loop (Markdown, or a Note)."""
    if isinstance(table, Note):
        return table
    t = table[(table["key"] != "cleanrl_style_dqn") & ~table["key"].str.endswith("_fp32")].dropna(subset=["vs_cleanrl"])
    if t.empty:
        return _md("The benchmark has no CleanRL-style reference run.")
    items = [f"{r.phrase} {'runs ' if i == 0 else ''}{r.vs_cleanrl:.2f} times as fast" for i, r in enumerate(t.itertuples())]
    text = f"Against the CleanRL-style loop, {join_words(items)}, in agent steps per second."
    sps = table.set_index("key")["steps_per_s"]
    pairs = (("DQN", "ours_dqn_default", "ours_dqn_fp32"), ("Mask-A2C", "ours_a2c_double", "ours_a2c_double_fp32"))
    gains = [f"the {name} trainer {sps[k] / sps[k32]:.2f} times" for name, k, k32 in pairs if k in sps and k32 in sps]
    if gains:
        text += f" bf16 autocast makes {join_words(gains)} as fast as float32."
    return _md(text)


def envs_summary(table: pd.DataFrame | Note):
    """The fastest backend and where the trainers' backends stand (Markdown, or a Note)."""
    if isinstance(table, Note):
        return table
    t = table.dropna(subset=["steps_per_s"])
    best = t.loc[t["steps_per_s"].idxmax()]
    text = f"The fastest backend is {best['short']}, with {best['steps_per_s']:,.0f} agent steps per second."
    used = t[t["used_by"] != ""]
    if not used.empty:
        items = [f"{'the backend' if i == 0 else 'that'} of the {r.used_by} {'runs ' if i == 0 else ''}{r.vs_sync:.2f} times"
                 for i, r in enumerate(used.itertuples())]
        text += f" {join_words(items)[0].upper()}{join_words(items)[1:]} as fast as gymnasium's SyncVectorEnv."
    missing = table[table["steps_per_s"].isna()]
    if not missing.empty:
        text += " Not measured: " + join_words([f"{r.short} ({r.note})" for r in missing.itertuples()]) + "."
    return _md(text)
