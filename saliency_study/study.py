"""The study's sweeps: which units each profile and game plan, and the table the chapters read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from saliency_lib.sweep import (
    SweepSpec,
    compact,
    plan_units,
    run_sweep,
    stored_bytes,
    stored_keys,
    stored_state_index,
    stored_versions,
)

from .catalog import ABLATION_METHODS, SEED_METHODS, STUDY_METHODS, shipped_agents, study_agents
from .paths import RESULTS_DIR, repo_path
from .profiles import get_profile

__all__ = ["profile_specs", "seed_specs", "study_units", "study_results", "study_status", "study_versions", "study_compact"]


def profile_specs(profile: str, game: str, *, agents: Sequence[str] | None = None, seed: int = 0,
                  results_dir=RESULTS_DIR, n_states: int | None = None,
                  methods: Sequence[str] | None = None) -> list[SweepSpec]:
    """The sweeps of one game in ``profile``: one spec per agent (sizes differ by agent kind).

    ``n_states`` replaces the profile's state count of every agent, and ``methods`` keeps only these of
    the study's methods (and of its §6.2 ablation): a chapter's or report's own sweep
    (``saliency-study report --states N --methods …``); its units are the study's units where they coincide.
    """
    results_dir = repo_path(results_dir)
    from saliency_lib.agents import load_agent

    prof = get_profile(profile)
    if agents is None:
        own = [a for a in prof.actor_critic_agents if Path(a, "meta.json").is_file() and load_agent(a).game == game]
        agents = [*study_agents(game, results_dir=results_dir), *own]
    specs = []
    for a in agents:
        preset = load_agent(a).preset
        n, chunk, params = prof.sweep_size(preset)
        if a in prof.actor_critic_agents and prof.actor_critic_states:
            n = prof.actor_critic_states
        # the paper's §6.2 ablation on its kind of agent, the DQN
        ablation = ABLATION_METHODS if preset != "mask_a3c" else ()
        keep = STUDY_METHODS if methods is None else tuple(m for m in STUDY_METHODS if m in set(methods))
        if methods is not None:
            ablation = tuple(m for m in ablation if m in set(methods))
        specs.append(SweepSpec(agents=(a,), methods=keep, n_states=n if n_states is None else n_states, chunk=chunk,
                               seed=seed, params={m: dict(p) for m, p in params.items()},
                               state_selection=prof.selection(preset), episode_cap=prof.episode_cap(),
                               degradation_only=ablation))
    return specs


def seed_specs(profile: str = "full", game: str = "Breakout", *, agents_dir="data/agents", seed: int = 0) -> list[SweepSpec]:
    """The sweeps of every shipped masked Mask-A3C agent of ``game``, one per agent (any seed or variant).

    The masks and :data:`~.catalog.SEED_METHODS` on ``profile``'s actor-critic state count
    (:attr:`~.profiles.Profile.actor_critic_states`, else its ``mask_a3c`` size), spread over a
    greedy game as the profile's Mask-A3C sweep, with the sanity cascade and insertion/deletion:
    what chapter 5 needs to ask whether the masks' ranks hold across seeds.
    """
    prof = get_profile(profile)
    table = shipped_agents(agents_dir)
    masked = (table[(table["game"] == game) & table["variant"].isin(["policy", "value", "double"])]
              .sort_values(["variant", "seed"]))
    n, chunk, params = prof.sweep_size("mask_a3c")
    n = prof.actor_critic_states or n
    return [SweepSpec(agents=(str(Path(agents_dir, a)),), methods=SEED_METHODS, n_states=n, chunk=chunk, seed=seed,
                      params={m: dict(p) for m, p in params.items() if m in SEED_METHODS},
                      state_selection=prof.selection("mask_a3c"), episode_cap=prof.episode_cap())
            for a in masked["agent"]]


def study_results(profile: str, games: str | Sequence[str], *, executor: str = "local", results_dir=RESULTS_DIR,
                  agents: Sequence[str] | None = None, seed: int = 0, progress: bool = False, **kw) -> pd.DataFrame:
    """The study's result table for ``games`` in ``profile``: computes only what is not stored.

    This is what ``saliency-study run`` and the book's build run, and what the chapters read;
    all three plan the same units, so a chapter after a run finds everything stored.
    """
    results_dir = repo_path(results_dir)
    games = [games] if isinstance(games, str) else list(games)
    tables = [run_sweep(spec, executor=executor, results_dir=results_dir, progress=progress, **kw).table
              for g in games for spec in profile_specs(profile, g, agents=agents, seed=seed, results_dir=results_dir)]
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def study_status(profile: str, games: Sequence[str], *, agents: Sequence[str] | None = None, seed: int = 0,
                 results_dir=RESULTS_DIR, specs: Sequence[SweepSpec] | None = None) -> dict:
    """How far the study of ``profile`` is, per agent and game, computing nothing.

    Returns ``{"profile", "results_dir", "agents": [{"agent", "game", "n_states", "distinct_states",
    "units_done", "units_total", "bytes"}...], "units_done", "units_total", "bytes"}``; ``bytes`` is the
    size on disk of the agent's stored units: its loose unit files and its packs.
    ``distinct_states`` counts the states that are not a repeat of an earlier one
    (:func:`saliency_lib.states.duplicate_states`), from the state set's stored index; None where
    the states were never collected here.
    """
    results_dir = repo_path(results_dir)
    if specs is None:
        specs = [sp for game in games for sp in profile_specs(profile, game, agents=agents, seed=seed, results_dir=results_dir)]
    rows = []
    for spec in specs:
        units, context = plan_units(spec, results_dir=results_dir, states=False)
        done = stored_keys(units, results_dir=results_dir)
        _, agent, _ = next(iter(context.values()))
        index = stored_state_index(spec.agents[0], agent, spec, results_dir=results_dir) or {}
        rows.append({"agent": spec.agents[0], "game": agent.game, "n_states": spec.n_states,
                     "distinct_states": index.get("distinct_states"), "units_done": len(done), "units_total": len(units),
                     "bytes": stored_bytes(units, results_dir=results_dir)})
    return {"profile": profile, "results_dir": str(results_dir), "agents": rows,
            "units_done": sum(r["units_done"] for r in rows), "units_total": sum(r["units_total"] for r in rows),
            "bytes": sum(r["bytes"] for r in rows)}


def study_units(profile: str, games: Sequence[str], *, agents: Sequence[str] | None = None, seed: int = 0,
                results_dir=RESULTS_DIR) -> list:
    """Every unit of ``profile`` for ``games``, planned without collecting any state."""
    results_dir = repo_path(results_dir)
    return [u for game in games
            for spec in profile_specs(profile, game, agents=agents, seed=seed, results_dir=results_dir)
            for u in plan_units(spec, results_dir=results_dir, states=False)[0]]


def study_versions(profile: str, games: Sequence[str], *, agents: Sequence[str] | None = None, seed: int = 0,
                   results_dir=RESULTS_DIR) -> dict:
    """Which package versions made the stored units of ``profile`` (:func:`~.store.stored_versions`), computing nothing."""
    results_dir = repo_path(results_dir)
    units = study_units(profile, games, agents=agents, seed=seed, results_dir=results_dir)
    return stored_versions(units, results_dir=results_dir)


def study_compact(profile: str, games: Sequence[str], *, agents: Sequence[str] | None = None, seed: int = 0,
                  results_dir=RESULTS_DIR) -> dict:
    """Pack the loose units of ``profile`` for ``games`` into one file per agent and experiment
    (:func:`~.store.compact`), computing nothing."""
    results_dir = repo_path(results_dir)
    return compact(study_units(profile, games, agents=agents, seed=seed, results_dir=results_dir),
                   results_dir=results_dir)
