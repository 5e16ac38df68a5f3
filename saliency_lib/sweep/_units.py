"""Units of work: what one unit of the study computes.

A **unit** is (agent, game, method, experiment, substrate, chunk of states): it
explains those states with the method and scores the maps with the experiment's
metric, giving rows of the tidy results table (:mod:`saliency_lib.results`).
Everything a unit computes is determined by the unit itself: its state ids, the
metric's seed (per-state random streams are keyed by the state id) and a torch
seed derived from the unit's key. No result depends on which worker runs a unit
or in which order, so every executor (:mod:`.executors`) gives bit-identical tables.

Every unit runs with one torch thread: the same reductions in every executor.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .._io import atomic_write
from ..explainers import default_precision
from ..games import EPISODE_STEP_CAP
from ..metrics.insertion_deletion import SUBSTRATES
from ..results import EXPERIMENTS, canonical_json, config_hash
from ._store import states_dir
from ._verify import quarantine, stamp

__all__ = [
    "EXPERIMENTS", "SUBSTRATES", "METRIC_OPTIONS", "RANDOM_BASELINE", "SANITY_SIMILARITIES", "STATE_SELECTIONS", "Unit",
    "SweepSpec", "applicable", "state_config", "state_index", "stored_state_index", "study_states", "spec_states",
    "one_thread", "plan_units", "compute_unit", "maps_key", "check_states_file",
]

STATE_SELECTIONS = ("first", "distinct", "spread")
"""How a sweep picks its states from the agent's greedy play from the fixed start: ``"first"``, the
first ``n_states`` (Huber et al.'s trajectory, over as many games as it takes); ``"distinct"``, the
first ``n_states`` distinct ones, later games starting with random actions
(:func:`saliency_lib.states.collect_states` with ``distinct=True``); ``"spread"``,
``n_states`` evenly spaced over one whole game of at most ``episode_cap`` agent steps
(:func:`saliency_lib.states.collect_spread_states`)."""

RANDOM_BASELINE = "random"
"""Method name of the uniform-random map baseline (insertion/deletion only)."""
SANITY_SIMILARITIES = ("spearman", "ssim", "ssim_2d", "hog_pearson", "spearman_untied")
"""The sweep's similarity measures: the paper's three, the image SSIM and the Spearman similarity outside the
shared tied block (a test of whether identical black frames drive a similarity). Units stored before ``spearman_untied`` joined
keep their keys and lack its rows."""
METRIC_OPTIONS = {
    # sanity: Huber et al.'s cascading randomisation with Glorot-uniform weights (reference §5), every layer group
    "order": "cascading", "init": "glorot", "similarities": list(SANITY_SIMILARITIES), "levels": None,
    # insertion / deletion (reference §6): one row of pixels per step, blur substrate σ = 5 px
    "pixels_per_step": 84, "blur_sigma": 5.0,
}
"""The study's metric options. A sweep may change them (``SweepSpec.metric``); a unit records only what differs."""
_OPTIONS_OF = {"sanity": ("order", "init", "similarities", "levels"), "degradation": ("pixels_per_step", "blur_sigma")}


@dataclass(frozen=True)
class Unit:
    """One unit of work; its :attr:`key` names its result file."""

    experiment: str
    """``"sanity"`` or ``"degradation"`` (insertion and/or deletion on each substrate, one map per state)."""
    agent: str
    game: str
    method: str
    degradation: tuple[tuple[str, str], ...]
    """(mode, substrate) pairs of a degradation unit, e.g. ``(("insertion", "black"),)``; empty for sanity."""
    states: tuple[int, ...]
    state_config: str
    """Canonical JSON of the state set: agent, weights hash, n, seed (and the selection, unless ``"first"``)."""
    params: str
    """Canonical JSON of the explainer's parameters (defaults: ``{}``)."""
    seed: int
    batch_size: int | None = None
    """Network rows per forward call; ``None``: the agent's own :attr:`~saliency_lib.agents.Agent.inference_batch`."""
    metric: str = ""
    """Canonical JSON of the metric's options that differ from the study's (see :data:`METRIC_OPTIONS`);
    empty for the study's own units."""

    @property
    def precision(self) -> str | None:
        """The precision of the unit's maps; ``None`` for the random baseline.

        Its parameters' ``precision`` (the plan writes a default other than ``"fp32"`` there), else
        ``"fp32"``.
        """
        return None if self.method == RANDOM_BASELINE else json.loads(self.params).get("precision", "fp32")

    @property
    def key(self) -> str:
        d = asdict(self)
        # the rows per forward call change the speed; the numbers at most in their last bits (Noise
        # Sensitivity's fc product over the full conv3 window rounds differently for 128 and 256 rows), so
        # a unit computed with another batch size is the same unit
        d.pop("batch_size")
        if not d["metric"]:  # the study's metric: the keys of the units stored before the option existed
            d.pop("metric")
        return config_hash(d)

    @property
    def torch_seed(self) -> int:
        return int(self.key, 16) % (2**31 - 1)


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep covers: every (agent, method, experiment, substrate) on ``n_states`` states."""

    agents: tuple[str, ...]
    methods: tuple[str, ...]
    experiments: tuple[str, ...] = EXPERIMENTS
    substrates: tuple[str, ...] = SUBSTRATES
    n_states: int = 20
    chunk: int = 10
    seed: int = 0
    state_seed: int = 0
    params: dict = field(default_factory=dict)
    """Explainer parameters per method, e.g. ``{"rise": {"n_masks": 1000}}``."""
    degradation_only: tuple[str, ...] = ()
    """Methods explained for the insertion/deletion units only (e.g. the §6.2 ablation of Huber et al.:
    gray occlusion and blurred SARFA, which the paper judges by insertion alone)."""
    batch_size: int | None = None
    """Network rows per forward call; ``None``: each agent's :attr:`~saliency_lib.agents.Agent.inference_batch`."""
    metric: dict = field(default_factory=dict)
    """Metric options that differ from the study's (keys of :data:`METRIC_OPTIONS`), e.g. ``{"levels": 2}``."""
    random_baseline: bool = True
    """Add the uniform-random map to the degradation units (the paper's ``rnd_baseline``)."""
    state_selection: str = "first"
    """Which states of the greedy play: one of :data:`STATE_SELECTIONS`."""
    episode_cap: int = EPISODE_STEP_CAP
    """Agent-step cap of the game that ``"spread"`` spreads the states over (unused by ``"first"``)."""

    def __post_init__(self):
        bad = sorted(set(self.experiments) - set(EXPERIMENTS))
        if bad:
            raise ValueError(f"unknown experiments {bad}; valid experiments are: {', '.join(EXPERIMENTS)}")
        bad = sorted(set(self.substrates) - set(SUBSTRATES))
        if bad:
            raise ValueError(f"unknown substrates {bad}; valid substrates are: {', '.join(SUBSTRATES)}")
        from ..explainers import EXPLAINERS, check_explainer_params

        bad = sorted((set(self.methods) | set(self.degradation_only)) - set(EXPLAINERS))
        if bad:
            import difflib

            close = difflib.get_close_matches(bad[0], list(EXPLAINERS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown methods {bad}{hint}; valid methods are: {', '.join(EXPLAINERS)}")
        if not isinstance(self.params, dict):
            raise TypeError(f"params must map method names to parameter dicts, got {type(self.params).__name__}")
        for method, p in self.params.items():  # before any work: an unknown parameter would fail in the first unit
            if method not in EXPLAINERS:
                raise ValueError(f"params name the unknown method {method!r}; valid methods are: {', '.join(EXPLAINERS)}")
            check_explainer_params(method, p, what="params: ")
        if self.state_selection not in STATE_SELECTIONS:
            raise ValueError(f"unknown state_selection {self.state_selection!r}; valid selections are: "
                             f"{', '.join(STATE_SELECTIONS)}")
        for name in ("n_states", "chunk", "batch_size", "episode_cap"):
            v = getattr(self, name)
            if v is None and name == "batch_size":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not self.agents:
            raise ValueError("a sweep needs at least one agent")
        bad = sorted(set(self.metric) - set(METRIC_OPTIONS))
        if bad:
            raise ValueError(f"unknown metric options {bad}; valid options are: {', '.join(METRIC_OPTIONS)}")


def applicable(method: str, agent) -> bool:
    """Whether ``method`` can explain ``agent`` (mask attention needs a Mask-A3C agent with masks)."""
    if method.startswith("mask_"):
        return getattr(agent.net, "config", None) is not None and getattr(agent.net.config, "variant", "none") in (
            ("policy", "double") if method == "mask_policy" else ("value", "double"))
    return True


def state_config(agent_spec: str, agent, n: int, seed: int, selection: str = "first",
                 episode_cap: int = EPISODE_STEP_CAP) -> dict:
    """What determines a sweep's state set; it goes into every unit key (but see :func:`plan_units`).

    The ``"first"`` selection records no selection at all, so the keys of the units stored
    before there was a choice stay valid.
    """
    cfg = {"agent": str(agent_spec), "weights": agent.meta.get("sha256"), "n": int(n), "seed": int(seed)}
    if selection != "first":
        if selection not in STATE_SELECTIONS:
            raise ValueError(f"unknown state selection {selection!r}; valid selections are: {', '.join(STATE_SELECTIONS)}")
        cfg.update(selection=selection)
        if selection == "spread":
            cfg.update(episode_cap=int(episode_cap))
    return cfg


def _index_path(results_dir, cfg: dict) -> Path:
    return states_dir(results_dir) / f"states-{config_hash(cfg)}.json"


def state_index(states) -> dict:
    """What a plan needs to know of a state set without loading it.

    Its size, how many of its states are distinct (:func:`~saliency_lib.states.duplicate_states`) and, for a ``"distinct"``
    selection, ``first_change`` (the states before it are those of the plain ``"first"``
    selection), ``skipped`` and ``games``. :func:`study_states` adds ``plain_repeats``: how many of
    the plain trajectory's first ``n`` states repeat an earlier one.
    """
    from ..states import duplicate_states

    index = {"n": len(states), "distinct_states": int((duplicate_states(states) < 0).sum())}
    if states.meta.get("selection") == "distinct":
        index |= {k: int(states.meta[k]) for k in ("first_change", "skipped", "games")}
    return index


def study_states(agent_spec: str, n: int, *, seed: int = 0, results_dir, agent=None, progress: bool = False,
                 selection: str = "first", episode_cap: int = EPISODE_STEP_CAP):
    """The ``n`` states of the agent's greedy play from the fixed start that ``selection`` picks (cached).

    ``"first"``: the first ``n`` states; ``"spread"``: ``n`` states evenly spaced over one whole
    game of at most ``episode_cap`` agent steps (:data:`STATE_SELECTIONS`).

    Returns ``(StateSet, state_config)``. The set holds the raw frames too, for figures.
    """
    from ..agents import load_agent
    from ..states import collect_spread_states, collect_states

    agent = agent if agent is not None else load_agent(agent_spec)
    cfg = state_config(agent_spec, agent, n, seed, selection, episode_cap)
    path = states_dir(results_dir) / f"states-{config_hash(cfg)}.pt"
    if path.exists():
        seen = stamp(path)
        states, reason = _read_states(path, cfg)
        if reason is not None:
            # a damaged cache is moved aside (with a warning naming it) and collected again
            quarantine(path, f"{reason}; collecting the states again", results_dir=results_dir, seen=seen)
    if not path.exists():
        with one_thread():
            if selection == "spread":
                states = collect_spread_states(agent, n, seed=seed, max_steps=episode_cap, frames=True, progress=progress)
            else:
                states = collect_states(agent, n, seed=seed, frames=True, progress=progress, distinct=selection == "distinct")
        states.meta["state_config"] = cfg  # what the file's name hashes, so that a read can check it
        states.save(path)
    index = _index_path(results_dir, cfg)
    if not index.exists():  # small, and kept beside the results: planning reads it instead of the states
        record = state_index(states)
        if selection == "distinct":  # disclose what the plain trajectory would have repeated
            from ..states import duplicate_states

            with one_thread():
                plain = collect_states(agent, n, seed=seed)
            record["plain_repeats"] = int((duplicate_states(plain) >= 0).sum())
        text = json.dumps(record, sort_keys=True) + "\n"
        atomic_write(index, lambda tmp: Path(tmp).write_text(text))
    return states, cfg


def stored_state_index(spec_agent: str, agent, spec: SweepSpec, *, results_dir) -> dict | None:
    """The index of a spec's state set (:func:`state_index`) if its states were ever collected, else None."""
    cfg = state_config(spec_agent, agent, spec.n_states, spec.state_seed, spec.state_selection, spec.episode_cap)
    path = _index_path(results_dir, cfg)
    return json.loads(path.read_text()) if path.is_file() else None


def _read_states(path, cfg: dict | None = None):
    """``(StateSet, None)`` for a sound cached state set, else ``(None, reason)``.

    Sound: it loads with the tensors-only unpickler; its arrays agree in length; it holds
    ``cfg["n"]`` states; the configuration it records (sets cached before it was recorded
    have none) hashes to its file name and equals ``cfg``.
    """
    from ..states import StateSet

    try:
        states = StateSet.load(path)
    except Exception as e:  # noqa: BLE001 - whatever a damaged file raises (UnpicklingError, RuntimeError, EOFError …)
        return None, f"unreadable state set: {type(e).__name__}: {' '.join(str(e).split())[:200]}"
    n = len(states)
    lengths = {"actions": len(states.actions), "steps": len(states.steps), "episode": len(states.episode),
               **{f"outputs[{k}]": len(v) for k, v in states.outputs.items()},
               **({} if states.hidden is None else {f"hidden[{i}]": len(h) for i, h in enumerate(states.hidden)})}
    bad = {k: v for k, v in lengths.items() if v != n}
    if states.states.dim() != 4 or bad:
        return None, f"garbled state set: {n} states but {bad or 'states not of shape (N, C, H, W)'}"
    recorded = states.meta.get("state_config")
    if recorded is not None and Path(path).stem != f"states-{config_hash(recorded)}":
        return None, "holds the states of another configuration than its name says"
    if cfg is not None and (n != int(cfg["n"]) or (recorded is not None and recorded != json.loads(canonical_json(cfg)))):
        return None, f"holds {n} states of {recorded or 'an unrecorded configuration'}, not the {cfg['n']} of {cfg}"
    return states, None


def check_states_file(path) -> str | None:
    """Why a cached state set (``states-<hash>.pt``) is damaged, or None (:func:`_read_states`)."""
    return _read_states(path)[1]


def spec_states(spec: SweepSpec, agent_spec: str | None = None, *, results_dir, agent=None,
                progress: bool = False):
    """:func:`study_states` of one agent of ``spec`` (default its first): the states its units explain."""
    return study_states(spec.agents[0] if agent_spec is None else agent_spec, spec.n_states, seed=spec.state_seed,
                        results_dir=results_dir, agent=agent, progress=progress, selection=spec.state_selection,
                        episode_cap=spec.episode_cap)


class one_thread:
    """Run a block with one torch thread and one BLAS/OpenMP thread.

    Every executor then does the same floating-point reductions (Ray workers default to one BLAS
    thread, a local process not).
    """

    def __enter__(self):
        from threadpoolctl import threadpool_limits

        self.n = torch.get_num_threads()
        torch.set_num_threads(1)
        self.limits = threadpool_limits(1)

    def __exit__(self, *exc):
        self.limits.restore_original_limits()
        torch.set_num_threads(self.n)


def plan_units(spec: SweepSpec, *, results_dir, progress: bool = False,
               states: bool = True) -> tuple[list[Unit], dict]:
    """The units of ``spec`` and a context ``{state_config_json: (agent_spec, agent, states)}``.

    With ``states=False`` the states are neither collected nor loaded (the context holds
    ``None`` for them): a unit's key needs only the state set's configuration and, for a
    distinct selection, the stored index's ``first_change``, so planning alone computes nothing
    (``saliency-study run --status``).
    """
    from ..agents import load_agent

    units, context = [], {}
    for spec_agent in spec.agents:
        agent = load_agent(spec_agent)
        distinct = spec.state_selection == "distinct"
        index = None if states else stored_state_index(spec_agent, agent, spec, results_dir=results_dir)
        if states:
            sset, scfg = spec_states(spec, spec_agent, results_dir=results_dir, agent=agent, progress=progress)
            index = stored_state_index(spec_agent, agent, spec, results_dir=results_dir)
        else:
            sset, scfg = None, state_config(spec_agent, agent, spec.n_states, spec.state_seed, spec.state_selection,
                                            spec.episode_cap)
        skey = canonical_json(scfg)
        # Up to its first_change a distinct set holds the plain trajectory's states: the units of those
        # chunks are the plain selection's units, keys included, so they are computed once for both.
        plain_key = canonical_json(state_config(spec_agent, agent, spec.n_states, spec.state_seed)) if distinct else skey
        # A distinct set never collected here has no first_change yet: planning alone collects
        # nothing, so its units are counted under the distinct key only (none of them is stored).
        first_change = index["first_change"] if distinct and index else 0
        context[skey] = context[plain_key] = (spec_agent, agent, sset)
        chunks = [tuple(range(i, min(i + spec.chunk, spec.n_states))) for i in range(0, spec.n_states, spec.chunk)]
        methods = [m for m in spec.methods if applicable(m, agent)]
        # one degradation unit per method and chunk: its maps are computed once for every (mode, substrate)
        degradation = tuple((m, s) for m in ("insertion", "deletion") if m in spec.experiments for s in spec.substrates)
        # the random map is a method of the sanity units only when asked for; the degradation units add it
        kinds = [("sanity", (), methods)] if "sanity" in spec.experiments else []
        if degradation:
            extra = [m for m in spec.degradation_only if applicable(m, agent)]
            kinds.append(("degradation", degradation,
                          list(dict.fromkeys([*methods, *extra, RANDOM_BASELINE] if spec.random_baseline
                                             else [*methods, *extra]))))
        metric = {k: v for k, v in json.loads(canonical_json(spec.metric)).items() if METRIC_OPTIONS[k] != v}
        for experiment, pairs, names in kinds:
            for method in names:
                params = dict(spec.params.get(method, {}))
                if method != RANDOM_BASELINE and "precision" not in params and default_precision(method, agent) != "fp32":
                    params["precision"] = default_precision(method, agent)  # a bf16 default enters the key
                params = canonical_json(params)
                for ch in chunks:
                    options = {k: v for k, v in metric.items() if k in _OPTIONS_OF[experiment]}
                    units.append(Unit(experiment, spec_agent, agent.game, method, pairs, ch,
                                      plain_key if ch[-1] < first_change else skey, params,
                                      spec.seed, spec.batch_size, canonical_json(options) if options else ""))
    return units, context


def _hidden(states, ids):
    if states.hidden is None:
        return None
    idx = torch.as_tensor(ids)
    return tuple(h[idx] for h in states.hidden)


def maps_key(unit: Unit) -> tuple:
    """What a unit's original-model maps depend on.

    The sanity and the degradation unit of the same agent, method, parameters, states and batch
    size explain the same maps.
    """
    return (unit.agent, unit.method, unit.params, unit.states, unit.state_config, unit.batch_size)


def compute_unit(unit: Unit, agent, states, *, maps_cache: MutableMapping | None = None) -> pd.DataFrame:
    """The rows of ``unit`` for the loaded ``agent`` and its full ``states`` set.

    ``maps_cache`` (optional) carries the original model's maps from a sanity unit to the
    degradation unit of the same :func:`maps_key`: a sanity unit puts them there, a
    degradation unit takes them out instead of explaining the states again. The maps are the
    same bit for bit (``tests/study/test_maps_reuse.py``), so the rows do not depend on the cache.
    """
    from ..explainers import get_explainer
    from ..metrics import Deletion, Insertion, RandomisationTest
    from ..metrics.insertion_deletion import random_saliency

    ids = list(unit.states)
    x, hid, tgt = states.states[ids], _hidden(states, ids), states.actions[ids]
    params = dict(json.loads(unit.params))
    options = {**METRIC_OPTIONS, **(json.loads(unit.metric) if unit.metric else {})}
    with one_thread():
        torch.manual_seed(unit.torch_seed)
        if unit.experiment == "sanity":
            params.setdefault("batch_size", unit.batch_size)
            explainer = get_explainer(unit.method, agent, **params)
            test = RandomisationTest(order=options["order"], init=options["init"], similarities=tuple(options["similarities"]),
                                    levels=options["levels"], seed=unit.seed)
            keep = None if maps_cache is None else (lambda m: maps_cache.__setitem__(maps_key(unit), m))
            rows = test.evaluate(agent, x, explainer=explainer, hidden=hid, target=tgt, state_ids=ids,
                                 method=unit.method, agent_name=unit.agent, on_maps=keep)
        else:
            if unit.method == RANDOM_BASELINE:
                maps = random_saliency(len(ids), tuple(x.shape[2:]), seed=unit.seed, state_ids=ids)
            else:
                params.setdefault("batch_size", unit.batch_size)
                explainer = get_explainer(unit.method, agent, **params)
                maps = None if maps_cache is None else maps_cache.pop(maps_key(unit), None)
                if maps is None:
                    maps = explainer.attribute(x, target=tgt, hidden=hid).maps
            parts = []
            for mode, substrate in unit.degradation:
                metric = (Insertion if mode == "insertion" else Deletion)(
                    substrate=substrate, batch_size=unit.batch_size, seed=unit.seed,
                    pixels_per_step=options["pixels_per_step"], blur_sigma=options["blur_sigma"])
                parts.append(metric.evaluate(agent, x, saliency=maps, hidden=hid, target=tgt, state_ids=ids,
                                             method=unit.method, agent_name=unit.agent))
            rows = pd.concat(parts, ignore_index=True)
    precision = None if unit.method == RANDOM_BASELINE else explainer.precision
    return rows.assign(config_hash=unit.key, precision=pd.array([precision] * len(rows), dtype="string"))
