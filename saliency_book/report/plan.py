"""What a report explains, checked before anything runs: :func:`plan_report` gives a :class:`ReportPlan`.

Every bad input raises ``ValueError`` or ``FileNotFoundError`` with one line that names the
input, what was given and what is allowed: an agent spec of an unknown scheme or a file that
is not a model, a missing file, a game the spec contradicts or whose action set the agent's
outputs do not fit, a method that is not the study's or does not apply to the agent, a state
count below one. A network that the fast paths do not support is not an error: the plan
records why (:attr:`ReportPlan.full_passes`), and the report says that it runs with full
forward passes.

The plan writes the agent's spec in one canonical form, ``<scheme>:<Game>:<absolute path>``
for a file, the repository-relative path for a checkpoint directory inside the repository
(the study's spelling) and the absolute path for one outside. The spec keys the sweep's
units, so the same agent named twice finds its units stored.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from saliency_study.paths import REPO_ROOT, RESULTS_DIR, repo_path

__all__ = ["ReportPlan", "plan_report", "canonical_spec", "report_methods", "check_report_options", "FILE_SCHEMES"]

FILE_SCHEMES = ("sb3", "cleanrl", "keras")
"""Spec schemes that name a model file, optionally with the game: ``<scheme>:[<Game>:]<path>``."""
EXECUTORS = ("local", "processes", "ray")
_SPECS = ("a checkpoint directory, official:<Game>, sb3:[<Game>:]<model.zip>, cleanrl:[<Game>:]<file.cleanrl_model>, "
          "keras:[<Game>:]<file.h5> or advstream:<dueling DQN spec>")


@dataclass(frozen=True)
class ReportPlan:
    """A checked report: the agent in its canonical spec and everything the chapters are run with."""

    spec: str
    """The agent, in the canonical spelling (see the module notes)."""
    game: str
    preset: str
    profile: str
    n_states: int | None
    """States per agent of the sweep and the gallery; None: the profile's."""
    methods: tuple[str, ...] | None
    """The study's methods to run; None: every applicable one (each chapter's own set)."""
    seed: int
    executor: str
    results_dir: str
    out: Path
    sha256: str | None
    """Hash of the agent's weights (a changed file at the same path re-executes the chapters)."""
    full_passes: str | None
    """Why the explainers run with full forward passes on this network; None where the fast paths apply."""

    @property
    def parameters(self) -> dict:
        """The chapters' papermill parameters (each chapter takes those it declares)."""
        return {"agent": self.spec, "game": self.game, "methods": ",".join(self.methods) if self.methods else None,
                "n_states": self.n_states, "executor": self.executor, "seed": self.seed}


def _is_path(spec: str) -> bool:
    return ":" not in spec or os.path.exists(spec)


def _same_game(given: str | None, found: str, what: str) -> None:
    if given is not None and given != found:
        raise ValueError(f"--game {given} contradicts the agent: {what} plays {found}; drop --game or name {found}")


def canonical_spec(agent: str, game: str | None = None) -> str:
    """``agent`` with the game written in (``--game``) and its path made absolute, before loading.

    Raises
    ------
    FileNotFoundError
        The file or directory the spec names does not exist.
    ValueError
        The spec names another game than ``game``.
    """
    if not isinstance(agent, str) or not agent.strip():
        raise ValueError(f"agent must be a spec: {_SPECS}; got {agent!r}")
    if _is_path(agent):
        p = Path(agent).expanduser().resolve()
        if not p.exists() and repo_path(agent).exists():  # the study's relative paths, from anywhere
            p = repo_path(agent).resolve()
        if not p.exists():
            raise FileNotFoundError(f"no agent at {agent!r}: expected {_SPECS}")
        return p.relative_to(REPO_ROOT).as_posix() if p.is_relative_to(REPO_ROOT) else str(p)
    scheme, _, rest = agent.partition(":")
    if scheme == "advstream":
        return f"advstream:{canonical_spec(rest, game)}"
    if scheme == "official":
        _same_game(game, rest, agent)
        return agent
    if scheme not in FILE_SCHEMES:
        return agent  # load_agent names the valid schemes
    named, sep, path = rest.partition(":")
    if not sep or os.path.exists(rest):
        named, path = None, rest
    if named is not None and game is not None and named != game:
        raise ValueError(f"--game {game} contradicts the spec {agent!r}, which names {named}; drop one of them")
    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise FileNotFoundError(f"no {scheme} model file at {path!r} (spec {agent!r})")
    g = named or game
    return f"{scheme}:{g}:{p}" if g else f"{scheme}:{p}"


def report_methods(agent, methods: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """The study's methods of ``methods`` (names, or one comma-separated string) checked against ``agent``.

    None stays None (every applicable method). Raises ``ValueError`` for a name that is not one of the
    study's methods or one that cannot explain ``agent`` (a mask method on an agent without that mask).
    """
    from saliency_lib.sweep import applicable
    from saliency_study.catalog import ABLATION_METHODS, STUDY_METHODS

    if methods is None:
        return None
    names = [n.strip() for n in (methods.split(",") if isinstance(methods, str) else
                                 [x for m in methods for x in str(m).split(",")]) if n.strip()]
    valid = (*STUDY_METHODS, *ABLATION_METHODS)
    bad = [n for n in names if n not in valid]
    if bad or not names:
        raise ValueError(f"--methods must name the study's methods, got {bad or methods!r}; valid: {', '.join(valid)}")
    inapplicable = [n for n in names if not applicable(n, agent)]
    if inapplicable:
        raise ValueError(f"--methods {', '.join(inapplicable)} cannot explain this agent ({type(agent).__name__}, "
                         f"{agent.game}): a mask method needs a Mask-A3C agent with that mask; choose others")
    return tuple(dict.fromkeys(names))


def check_report_options(*, profile: str, executor: str, states: int | None, seed: int, out: str | os.PathLike,
                         game: str | None) -> None:
    """The options that need no agent: each bad one raises a one-line ``ValueError``."""
    from saliency_lib.games import game_info
    from saliency_lib.validation import check_choice, check_int
    from saliency_study.profiles import PROFILE_NAMES

    check_choice("--profile", profile, PROFILE_NAMES)
    check_choice("--executor", executor, EXECUTORS)
    if states is not None:
        check_int("--states", states, minimum=1, hint="; pass the number of states per agent, e.g. 3")
    check_int("--seed", seed, minimum=0)
    if game is not None:
        game_info(game)
    if Path(out).expanduser().exists() and not Path(out).expanduser().is_dir():
        raise ValueError(f"--out {str(out)!r} is a file; pass a folder for the report")


def _load(spec: str):
    """The agent of ``spec``; any failure to read it becomes a one-line ``ValueError`` (a missing file stays
    ``FileNotFoundError``)."""
    from saliency_lib.agents import load_agent

    try:
        return load_agent(spec)
    except (FileNotFoundError, ValueError):
        raise
    except (OSError, KeyError, TypeError, RuntimeError, EOFError) as e:
        raise ValueError(f"cannot read the agent {spec!r}: {type(e).__name__}: {e}") from e


def plan_report(agent: str, *, out: str | os.PathLike, game: str | None = None, states: int | None = None,
                methods: str | Sequence[str] | None = None, profile: str = "quick", executor: str = "local",
                seed: int = 0, results_dir: str | os.PathLike = RESULTS_DIR) -> ReportPlan:
    """Check a report's inputs and load the agent once; see the module notes for the errors.

    Parameters
    ----------
    agent : str
        Any spec :func:`saliency_lib.agents.load_agent` accepts.
    out : path
        The report's folder (created by the build; it must not be a file).
    game : str, optional
        The game, where the spec does not say it (a spec that names another game is an error).
    states : int, optional
        States per agent (default: the profile's).
    methods : str or list of str, optional
        The study's methods to run (default: every applicable one).
    profile, executor, seed, results_dir
        The execution profile, where missing sweep units run, the seed, and the result store.
    """
    check_report_options(profile=profile, executor=executor, states=states, seed=seed, out=out, game=game)
    spec = canonical_spec(agent, game)
    loaded = _load(spec)
    if spec.partition(":")[0] in FILE_SCHEMES and spec.count(":") == 1:  # the loader read the game from the path
        spec = f"{spec.partition(':')[0]}:{loaded.game}:{spec.partition(':')[2]}"
    _same_game(game, loaded.game, spec)
    from saliency_study.cost import full_pass_reason

    return ReportPlan(spec=spec, game=loaded.game, preset=loaded.preset, profile=profile,
                      n_states=states, methods=report_methods(loaded, methods), seed=seed, executor=executor,
                      results_dir=str(repo_path(results_dir)), out=Path(out).expanduser().resolve(),
                      sha256=loaded.meta.get("sha256") or loaded.meta.get("weights_sha256"),
                      full_passes=full_pass_reason(loaded))
