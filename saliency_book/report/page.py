"""What the report's front page (``notebooks/_agent_report.py``) computes and shows, for one agent.

* :func:`agent_table`: what the agent is, which output the explainers explain, whether the fast paths apply;
* :func:`agent_scores`: greedy and sticky-action scores (:func:`saliency_lib.play.evaluate`), cached;
* :func:`sanity_beside`: the agent's sanity-check verdict per method beside the study's agent of its kind
  (the stored paper-scale study) and Huber et al.'s mean, all once every layer is random;
* :func:`degradation_ranks`: the insertion and deletion rankings of the agent's maps (chapter 4's);
* :func:`episode_video`: a short greedy game with one method's map over every frame (:mod:`saliency_lib.video`), cached;
* :func:`run_configuration`: the parameters and the package versions of the run.

Nothing here computes a sweep unit: the report's sweep ran before the page (:mod:`.build`), and the
functions read its stored units; run alone, the page computes the missing ones as the chapters do.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass
from importlib import metadata

import numpy as np
import pandas as pd

from saliency_book.common import ExplainedAgent, Note, as_count, chapter_agents
from saliency_book.config import ChapterConfig, as_float
from saliency_book.maps import as_methods
from saliency_study.catalog import load_spec
from saliency_study.profiles import get_profile, profile_settings

__all__ = ["ReportPage", "agent_table", "agent_scores", "sanity_beside", "degradation_ranks", "episode_video",
           "run_configuration", "VIDEO_METHODS", "VIDEO_STEPS"]

VIDEO_METHODS = ("occlusion", "gradient", "mask_policy")
"""The video's method: the first of these the report runs (Occlusion, Huber et al.'s first method)."""
VIDEO_STEPS = 300
"""At most this many agent steps in the video, whatever the profile's GIF length."""


@dataclass(frozen=True)
class ReportPage(ChapterConfig):
    """The front page's configuration: the chapters' common fields (``agent`` is required), then the report's."""

    methods: tuple[str, ...] | None = None
    """The study's methods of the report (list or comma-separated string); None: every applicable one."""
    n_states: int | None = None
    """States per agent of the sweep; None: the profile's."""
    threshold: float = 0.5
    """Chapter 3's verdict threshold on the Spearman similarity after full randomisation."""
    study_profile: str = "full"
    """The stored study whose agent the verdicts stand beside (it computes nothing)."""

    USED = ("episodes", "eval_max_steps", "gif_steps")

    def __post_init__(self):
        super().__post_init__()
        if self.agent is None:
            raise ValueError("agent must name the agent of the report (a spec load_agent accepts), got None")
        object.__setattr__(self, "methods", as_methods(self.methods))
        object.__setattr__(self, "n_states", as_count(self.n_states, "n_states"))
        object.__setattr__(self, "threshold", as_float("threshold", self.threshold, low=0, high=1, low_open=True,
                                                       high_open=True))
        profile_settings(self.study_profile)  # validates the name

    @property
    def who(self) -> ExplainedAgent:
        """The report's agent in the slot chapter 3 gives it (DQN, or Mask-A3C for an ``official:`` spec)."""
        dqn, mask = chapter_agents(self.game, self.agent, results_dir=self.results_dir)
        return mask if str(self.agent).startswith("official:") else dqn


# -- the agent --------------------------------------------------------------------------------------

def agent_table(cfg: ReportPage) -> pd.DataFrame:
    """What the agent is (``property``, ``value``): spec, class, outputs, the output the explainers explain."""
    from saliency_lib.explainers import get_explainer
    from saliency_study.cost import full_pass_reason

    agent = load_spec(cfg.agent, cfg.device)
    meta = agent.meta
    why = full_pass_reason(agent)
    rows = {"spec": cfg.agent, "game": agent.game, "preprocessing preset": agent.preset,
            "agent class": f"{type(agent).__name__} ({agent.kind})", "network": type(agent.net).__name__,
            "actions": agent.n_actions, "outputs": ", ".join(agent.outputs),
            "explained by default": get_explainer("gradient", agent).output,
            "source": meta.get("source", "–"), "algorithm": meta.get("algorithm") or meta.get("algo") or "–",
            "training steps": meta.get("num_timesteps") or meta.get("frames") or "–",
            "weights sha256": str(meta.get("sha256") or meta.get("weights_sha256") or "–")[:16],
            "fast paths": "incremental inference" if why is None else f"full forward passes ({why})"}
    return pd.DataFrame({"property": list(rows), "value": [str(v) for v in rows.values()]})


def agent_scores(cfg: ReportPage) -> pd.DataFrame:
    """Greedy and sticky-action scores over the profile's games, each cached by weights hash and protocol.

    Columns ``protocol, games, distinct, mean, std, capped, random, human, normalised`` (human-normalised %).
    """
    import torch

    from saliency_lib.games import published_scores
    from saliency_lib.play import evaluate
    from saliency_study.cache import cached_json

    agent = load_spec(cfg.agent, cfg.device)
    s, pub = cfg.settings, published_scores(agent.game)
    rows = []
    for protocol in ("greedy", "sticky"):
        config = {"what": "report_scores", "agent": cfg.agent, "sha256": agent.meta.get("sha256"), "game": agent.game,
                  "preset": agent.preset, "protocol": protocol, "episodes": s["episodes"], "seed": cfg.seed,
                  "max_steps": s["eval_max_steps"]}

        def compute(protocol=protocol):
            torch.set_num_threads(1)
            r = evaluate(agent, s["episodes"], cfg.seed, protocol=protocol, max_steps=s["eval_max_steps"], progress=False)
            return {k: r[k] for k in ("scores", "mean", "std", "distinct_games", "capped", "steps")}

        r = cached_json("report_scores", config, compute, results_dir=cfg.results_dir)
        span = pub["human"] - pub["random"]
        rows.append({"protocol": protocol, "games": len(r["scores"]), "distinct": r["distinct_games"], "mean": r["mean"],
                     "std": r["std"], "capped": r["capped"], "random": pub["random"], "human": pub["human"],
                     "normalised": 100 * (r["mean"] - pub["random"]) / span if np.isfinite(span) and span else np.nan})
    return pd.DataFrame(rows)


# -- the sanity checks beside the study and the paper ---------------------------------------------------

def _study_spec(cfg: ReportPage, preset: str) -> str | None:
    """The study's agent of ``preset`` for the game: its DQN agent, or the official Mask-A3C agent."""
    from saliency_study.catalog import study_agent

    return study_agent(cfg.game, results_dir=cfg.results_dir) if preset == "dqn" else f"official:{cfg.game}"


def _deepest(rows: pd.DataFrame, seed: int) -> pd.DataFrame:
    """:func:`~saliency_study.sanity.layer_summary` of the Spearman rows at each method's deepest cascade level."""
    from saliency_study.sanity import layer_summary

    r = rows[(rows["measure"] == "spearman") & rows["level"].notna()]
    r = r.assign(level=r["level"].astype(int))
    return layer_summary(r[r["level"] == r.groupby("method")["level"].transform("max")], measures=("spearman",), seed=seed)


def sanity_beside(cfg: ReportPage) -> pd.DataFrame | Note:
    """Per method, once every layer is random: the agent's mean Spearman similarity [CI], states and verdict,
    beside the study's agent of its kind (``study_*``, the stored ``study_profile`` study of the game, none
    computed) and Huber et al.'s mean for the game (``paper``, DQN agents only; their five layer groups).

    The verdicts are chapter 3's (:func:`~saliency_study.sanity.verdict_table`, threshold ``cfg.threshold``).
    """
    from saliency_study import paper as huber
    from saliency_study.sanity import sanity_table, verdict_table

    who = cfg.who
    if not who:
        return who.note()
    rows = sanity_table(cfg.profile, cfg.game, who.spec, seed=cfg.seed, results_dir=cfg.results_dir,
                        executor=cfg.executor, methods=cfg.methods, n_states=cfg.n_states)
    preset = load_spec(cfg.agent, cfg.device).preset
    ours = verdict_table(_deepest(rows, cfg.seed), threshold=cfg.threshold)
    out = ours[["method", "spearman", "spearman_low", "spearman_high", "n", "verdict"]].rename(
        columns={"spearman": "yours", "spearman_low": "yours_low", "spearman_high": "yours_high"})
    study = _study_spec(cfg, preset)
    stored = huber.stored_rows(cfg.study_profile, [cfg.game], experiments=("sanity",), preset=preset, seed=cfg.seed,
                               results_dir=cfg.results_dir, packed_only=True) if study else pd.DataFrame()
    stored = (stored[(stored["agent"] == study) & (stored["measure"] == "spearman") & stored["level"].notna()]
              if len(stored) else stored)
    if len(stored):
        stored = stored[stored["method"].isin(out["method"])]
        theirs = verdict_table(_deepest(stored, cfg.seed), threshold=cfg.threshold)
        theirs = theirs[["method", "spearman", "spearman_low", "spearman_high", "n", "verdict"]].rename(columns={
            "spearman": "study", "spearman_low": "study_low", "spearman_high": "study_high", "n": "study_n",
            "verdict": "study_verdict"})
        out = out.merge(theirs, on="method", how="left")
    else:
        out = out.assign(study=np.nan, study_low=np.nan, study_high=np.nan, study_n=np.nan, study_verdict="not run")
    p = huber.paper_sanity([5])
    p = p[(p["game"] == cfg.game) & (p["measure"] == "spearman")].set_index("method")["mean"]
    out["paper"] = out["method"].map(p).astype(float) if preset == "dqn" else np.nan
    out.attrs.update(study=study or "none", study_profile=cfg.study_profile)
    return out.reset_index(drop=True)


def show_sanity_beside(table: pd.DataFrame | Note, caption: str):
    """:func:`sanity_beside` as a captioned table, both verdict columns in the verdict colours."""
    from saliency_book.tables import VERDICT_STYLE, show_table

    if isinstance(table, Note):
        return table
    names = {"yours": "Your agent", "n": "States", "verdict": "Verdict", "study": "Study's agent",
             "study_n": "States (study)", "study_verdict": "Verdict (study)", "paper": "Huber et al."}
    s = show_table(table, caption, names=names, formats={"study_n": "{:.0f}"})

    def css(v) -> str:
        return next((style for k, style in VERDICT_STYLE.items() if str(v).startswith(k)), "")

    return s.map(css, subset=["Verdict (study)"])


# -- insertion and deletion -----------------------------------------------------------------------------

def degradation_ranks(cfg: ReportPage):
    """Chapter 4's rankings (:func:`~saliency_book.ch4_degradation.rankings`) of the agent's insertion and
    deletion AUCs, from the stored units of the report's sweep."""
    from saliency_book.ch4_degradation import DegradationChapter, degradation_results, rankings

    ch4 = DegradationChapter(game=cfg.game, agent=cfg.agent, profile=cfg.profile, seed=cfg.seed, device=cfg.device,
                             results_dir=cfg.results_dir, executor=cfg.executor, study_profile=cfg.study_profile,
                             methods=cfg.methods, n_states=cfg.n_states)
    results = degradation_results(ch4)
    if isinstance(results, Note):
        return results
    return rankings(results, confidence=ch4.confidence, n_resamples=ch4.n_resamples, seed=cfg.seed)


# -- the video --------------------------------------------------------------------------------------------

def episode_video(cfg: ReportPage):
    """A GIF of one greedy game (at most the profile's ``gif_steps`` and :data:`VIDEO_STEPS` agent steps) with the
    map of the first of :data:`VIDEO_METHODS` the report runs over every frame, the chosen action and the agent's
    Q-values or π beside it; cached under ``<results_dir>/_local/media``. Returns ``(Image, summary dict)``."""
    import torch
    from IPython.display import Image

    from saliency_lib.explainers import get_explainer
    from saliency_lib.results import config_hash
    from saliency_lib.sweep import applicable
    from saliency_lib.video import write_saliency_video
    from saliency_study.cache import MEDIA, cached_file, cached_json
    from saliency_study.paths import repo_path

    agent = load_spec(cfg.agent, cfg.device)
    method = next((m for m in VIDEO_METHODS if (cfg.methods is None or m in cfg.methods) and applicable(m, agent)),
                  None) or next(m for m in cfg.methods if applicable(m, agent))
    params = dict(get_profile(cfg.profile).example_params.get(method, {}))
    steps = min(cfg.settings["gif_steps"], VIDEO_STEPS)
    config = {"what": "report_video", "agent": cfg.agent, "sha256": agent.meta.get("sha256"), "method": method,
              "params": params, "steps": steps, "seed": cfg.seed}
    summary: dict = {}

    def make(path):
        torch.set_num_threads(1)
        explainer = get_explainer(method, agent, **params)
        s = write_saliency_video(agent, explainer, f"{path}.gif", max_steps=steps, seed=cfg.seed, fps=15, progress=False)
        summary.update(s.to_dict())
        os.replace(f"{path}.gif", path)  # the writer needs the suffix; the cache writes through a temporary name

    def compute() -> dict:
        # the video and its summary are made together: a video kept without its summary is made again
        (repo_path(cfg.results_dir) / MEDIA / f"report_video-{config_hash(config)}.gif").unlink(missing_ok=True)
        cached_file("report_video", config, ".gif", make, results_dir=cfg.results_dir)
        return {k: v for k, v in summary.items() if k != "path"}

    kept = cached_json("report_video", config, compute, results_dir=cfg.results_dir)
    gif = cached_file("report_video", config, ".gif", make, results_dir=cfg.results_dir)
    return Image(data=gif.read_bytes(), format="gif"), kept


# -- the run ---------------------------------------------------------------------------------------------

def run_configuration(cfg: ReportPage) -> pd.DataFrame:
    """The report's parameters, what the profile sets, and the versions of the packages that made it
    (``setting``, ``value``)."""
    from saliency_lib.versions import environment_versions

    rows = {"agent": cfg.agent, "game": cfg.game, "profile": cfg.profile, "seed": cfg.seed,
            "states per agent": cfg.n_states or f"the profile's ({get_profile(cfg.profile).sweep_size('dqn').n_states})",
            "methods": ", ".join(cfg.methods) if cfg.methods else "every applicable one",
            "executor": cfg.executor, "results": cfg.results_dir, "verdict threshold τ": cfg.threshold,
            "compared with the study": cfg.study_profile,
            **{f"profile: {k}": json.dumps(cfg.settings[k], default=dict) for k in ("episodes", "eval_max_steps", "gif_steps")},
            "python": f"{platform.python_version()} ({sys.executable})"}
    versions = environment_versions()
    for extra in ("stable-baselines3", "keras", "h5py", "pandas", "matplotlib"):
        try:
            versions.setdefault(extra, metadata.version(extra))
        except metadata.PackageNotFoundError:
            continue
    rows.update({f"package: {k}": v for k, v in versions.items()})
    return pd.DataFrame({"setting": list(rows), "value": [str(v) for v in rows.values()]})
