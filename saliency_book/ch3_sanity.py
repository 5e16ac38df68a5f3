"""Chapter 3 (Sanity checks): cascading parameter randomisation of the study's agents.

The chapter's notebook (``notebooks/03_sanity.py``) only calls these functions. The
similarities come from the study's sweep (:mod:`saliency_study.study`, experiment
``"sanity"``); this module summarises, plots and judges them.

* :class:`SanityChapter`: the chapter's frozen configuration.
* :func:`chapter_results`: a :class:`SanityResults` with everything below for the
  chapter's two agents (the study's DQN agent and the official Mask-A3C agent).
* :func:`sanity_results`: the sanity rows of the study's table for one agent (the
  same units as :func:`~saliency_study.study.study_results`, without the
  insertion and deletion units).
* :func:`layer_summary`, :func:`reference_summary`: mean and bootstrap CI per
  (agent, method, level, measure), and of the random-map reference rows.
* :func:`curves_figure`, :func:`ns_figure`: similarity after each cascade level.
* :func:`~saliency_book.ch3_ns_example.ns_example`, :func:`ns_example_figure`: the Noise
  Sensitivity maps of one state for the original, the output-randomised and the fully
  randomised model, computed and cached.
* :func:`verdict`, :func:`verdict_table`, :func:`verdict_rules`: whether each method's
  map depends on the parameters, judged on the Spearman CI after full randomisation.
* :func:`ns_summary`, :func:`discussion`: the generated text. Huber et al.'s numbers beside
  ours, per game, are in :mod:`saliency_book.ch3_paper`.

Every CI is a moving-block bootstrap over the states in trajectory order
(:func:`saliency_lib.metrics.summarise`), reported with the effective sample size, and no
verdict is printed from fewer than :data:`~saliency_study.evidence.MIN_STATES` states.

A missing agent gives a :class:`~saliency_book.common.Note` instead of an exception.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType

import numpy as np
import pandas as pd

from saliency_book.common import (
    METHODS,
    ExplainedAgent,
    Note,
    chapter_agents,
    load,
    method_names,
)
from saliency_lib.explainers import method_label
from saliency_lib.games import game_info
from saliency_study.evidence import MIN_STATES, TOO_FEW, enough_states, too_few
from saliency_study.paths import RESULTS_DIR
from saliency_study.profiles import profile_settings

__all__ = [
    "model_at", "MEASURES", "MEASURE_LABELS", "NS_METHODS", "THRESHOLD", "CONFIDENCE", "MIN_STATES",
    "SanityChapter", "SanityResults", "chapter_agents", "chapter_results", "sweep_specs", "sanity_results",
    "layer_summary", "reference_summary", "level_labels", "verdict", "verdict_table",
    "verdict_rules", "layer_groups_table", "sweep_note",
    "ns_summary", "discussion",
]

MEASURES = ("spearman", "ssim", "hog_pearson")
"""The paper's three similarity measures (reference §5), in display order."""
MEASURE_LABELS = MappingProxyType({
    "spearman": "Spearman rank correlation", "ssim": "SSIM (1-D, as Huber et al.)",
    "hog_pearson": "Pearson correlation of HOG features", "ssim_2d": "SSIM (2-D)"})
NS_METHODS = ("ns_original", "ns_chosen")
"""Noise Sensitivity as Greydanus et al. defined it, and Huber et al.'s chosen-action fix."""
THRESHOLD = 0.5
"""Default verdict threshold on the Spearman similarity after full randomisation (see :func:`verdict`)."""
CONFIDENCE = 0.95
"""Level of the moving-block bootstrap confidence intervals."""

# one colour per method, shared by every figure; line style by family
COLORS = MappingProxyType({
    "occlusion": "tab:blue", "ns_original": "tab:red", "ns_chosen": "tab:orange", "ns_black": "tab:gray",
    "sarfa": "tab:green", "rise": "tab:purple", "lime_slic": "tab:brown", "lime_quickshift": "#8c6d31",
    "lime_felzenszwalb": "#e7969c", "gradient": "tab:pink",
    "integrated_gradients": "tab:olive", "gradcam": "tab:cyan", "mask_policy": "black", "mask_value": "0.55"})
GRADIENT_METHODS = frozenset({"gradient", "integrated_gradients", "gradcam"})


def ordered(methods) -> list[str]:
    """Distinct ``methods`` in the gallery's display order (unknown names last, alphabetically)."""
    rank = {m: i for i, m in enumerate(METHODS)}
    return sorted(dict.fromkeys(methods), key=lambda m: (rank.get(m, len(rank)), m))


# -- configuration ---------------------------------------------------------------------------

def _as_float(value, name: str, low: float, high: float) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"{name} must be a number in ({low}, {high}), got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not low < float(value) < high:
        raise ValueError(f"{name} must be a number in ({low}, {high}), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class SanityChapter:
    """Configuration of chapter 3; every field is a parameter of the notebook."""

    game: str = "Breakout"
    """Atari game of the chapter."""
    agent: str | None = None
    """Agent spec; None: the study's DQN agent. An ``official:<Game>`` spec replaces the Mask-A3C agent instead."""
    profile: str = "quick"
    """Execution profile: ``tiny``, ``quick`` or ``full`` (sizes: :class:`~saliency_study.profiles.Profile`)."""
    seed: int = 0
    """Seed of the sweep (re-initialisation, random reference maps) and of the bootstrap."""
    device: str = "cpu"
    """Torch device of the example maps (the sweep runs on the CPU)."""
    results_dir: str = RESULTS_DIR
    """Stored results (relative paths are under the repository root)."""
    executor: str = "local"
    """Executor of the sweep's missing units: ``local``, ``processes`` or ``ray``."""
    threshold: float = THRESHOLD
    """A method passes when the upper CI bound of its Spearman similarity after full randomisation is below this."""
    study_profile: str = "full"
    """Profile of the stored study that the per-game comparisons with the paper read (they compute nothing)."""
    settings: dict = field(init=False, repr=False, compare=False)
    """The profile's settings (validates the profile name)."""

    def __post_init__(self):
        from saliency_lib.sweep import EXECUTORS

        game_info(self.game)
        if self.agent in ("", "None"):
            object.__setattr__(self, "agent", None)
        if isinstance(self.seed, str) and self.seed.strip().lstrip("-").isdigit():
            object.__setattr__(self, "seed", int(self.seed))
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {self.executor!r}")
        object.__setattr__(self, "threshold", _as_float(self.threshold, "threshold", 0.0, 1.0))
        object.__setattr__(self, "settings", profile_settings(self.profile))
        profile_settings(self.study_profile)  # validates the name

    def _repr_markdown_(self) -> str:
        from saliency_study.profiles import get_profile

        params = ", ".join(f"`{f.name}={getattr(self, f.name)!r}`" for f in fields(self) if f.name != "settings")
        sizes = "; ".join(f"{'DQN' if kind == 'dqn' else 'Mask-A3C'} agents: {n} states"
                          for kind, (n, _, _) in get_profile(self.profile).sweep.items())
        return f"**Parameters:** {params}.\n\n**From the sweep's profile `{self.profile}`:** {sizes}.\n"


# -- results ---------------------------------------------------------------------------------

def sweep_specs(cfg: SanityChapter, spec: str, methods: Sequence[str] | None = None):
    """The study's sweep specs of agent ``spec`` in ``cfg.profile``, reduced to the sanity experiment.

    The units (and so the stored results) are those of
    :func:`~saliency_study.study.study_results`; ``methods`` keeps a subset.
    """
    from saliency_study.study import profile_specs

    out = []
    for s in profile_specs(cfg.profile, cfg.game, agents=[spec], seed=cfg.seed, results_dir=cfg.results_dir):
        keep = s.methods if methods is None else tuple(m for m in s.methods if m in set(methods))
        out.append(dataclasses.replace(s, experiments=("sanity",), methods=keep))
    return out


def sanity_results(cfg: SanityChapter, who: ExplainedAgent, *, methods: Sequence[str] | None = None
                   ) -> pd.DataFrame | Note:
    """The sanity-check rows of the study's table for one agent; units not stored yet are computed.

    Returns
    -------
    pandas.DataFrame or Note
        Tidy rows (:mod:`saliency_lib.results` schema) of ``experiment == "sanity"``;
        the agent's Note when it is missing.
    """
    from saliency_lib.sweep import run_sweep

    if not who:
        return who.note()
    tables = [run_sweep(s, executor=cfg.executor, results_dir=cfg.results_dir, progress=False).table
              for s in sweep_specs(cfg, who.spec, methods)]
    t = pd.concat(tables, ignore_index=True)
    return t[t["experiment"] == "sanity"].reset_index(drop=True)


def layer_summary(table: pd.DataFrame, *, measures: Sequence[str] = MEASURES, confidence: float = CONFIDENCE,
                  seed: int = 0) -> pd.DataFrame:
    """Mean, std and bootstrap CI of each (agent, method, level, layer, measure) over the states.

    Reference rows (random maps, ``level`` NA) are left out; see :func:`reference_summary`.
    """
    from saliency_lib.metrics import summarise

    t = table[table["level"].notna() & table["measure"].isin(measures)]
    s = summarise(t, by=["agent", "method", "level", "layer", "measure"], confidence=confidence, seed=seed)
    if len(s):
        s["level"] = s["level"].astype(int)
    return s


def reference_summary(table: pd.DataFrame, *, measures: Sequence[str] = MEASURES, confidence: float = CONFIDENCE,
                      seed: int = 0) -> pd.DataFrame:
    """Similarity of the original maps with the uniform- and Gaussian-random maps, per (agent, method, layer, measure)."""
    from saliency_lib.metrics import REFERENCE_LAYERS, summarise

    t = table[table["layer"].isin(REFERENCE_LAYERS) & table["measure"].isin(measures)]
    return summarise(t, by=["agent", "method", "layer", "measure"], confidence=confidence, seed=seed)


@dataclass
class SanityResults:
    """The chapter's results: per agent kind (``"dqn"``, ``"mask_a3c"``) its rows, summary and references.

    Every mapping holds a Note where the agent is missing. The methods produce the
    chapter's figures, tables and generated text.
    """

    cfg: SanityChapter
    agents: dict[str, ExplainedAgent]
    tables: dict[str, pd.DataFrame | Note]
    summaries: dict[str, pd.DataFrame | Note]
    refs: dict[str, pd.DataFrame | Note]

    def title(self, kind: str) -> str:
        """The agent's name in text, e.g. "official Mask-A3C agent"."""
        return self.agents[kind].label

    def by_title(self, what: dict[str, object]) -> dict[str, object]:
        """``what`` re-keyed by agent title, available agents only."""
        return {self.title(k): v for k, v in what.items() if self.agents[k]}

    def curves(self, kind: str, *, dpi: int = 100):
        """:func:`curves_figure` of one agent (its Note when it is missing)."""
        s = self.summaries[kind]
        if isinstance(s, Note):
            return s
        n = int(s.loc[s["level"] == 0, "n"].max()) if (s["level"] == 0).any() else 0
        who = self.agents[kind]
        from saliency_book.ch3_figures import curves_figure

        return curves_figure(s, self.refs[kind], f"{who.label[0].upper() + who.label[1:]}, {who.game}: cascading "
                             f"randomisation ({n} states)", dpi=dpi)

    def ns_curves(self, *, dpi: int = 100):
        """:func:`ns_figure` of every available agent."""
        from saliency_book.ch3_figures import ns_figure

        return ns_figure(self.by_title(self.summaries), dpi=dpi)

    def example(self, kind: str, *, state: int | None = None):
        """:func:`ns_example_figure` of :func:`ns_example` for one agent (its Note when it is missing)."""
        from saliency_book.ch3_figures import ns_example_figure
        from saliency_book.ch3_ns_example import ns_example

        return ns_example_figure(ns_example(self.cfg, self.agents[kind], self.tables[kind], state=state))

    def verdicts(self) -> pd.DataFrame | Note:
        """:func:`verdict_table` of every available agent, concatenated."""
        parts = [verdict_table(s, self.refs[k], threshold=self.cfg.threshold) for k, s in self.summaries.items()
                 if isinstance(s, pd.DataFrame) and len(s)]
        parts = [p for p in parts if len(p)]
        if not parts:
            return Note("No sanity-check results: no agent is available for this game.", kind="warning",
                        title="No results")
        return pd.concat(parts, ignore_index=True)

    def labels(self) -> dict[str, str]:
        """Agent spec → title."""
        return {a.spec: a.label for a in self.agents.values() if a}

    def ns_text(self):
        """:func:`ns_summary` of every available agent."""
        return ns_summary(self.by_title(self.summaries), profile=self.cfg.profile)

    def discussion(self, verdicts: pd.DataFrame | Note):
        """:func:`discussion` of ``verdicts`` (from :meth:`verdicts`)."""
        if isinstance(verdicts, Note):
            return verdicts
        labels = self.labels()
        per = {labels.get(a, a): g for a, g in verdicts.groupby("agent", sort=False)}
        return discussion(per, self.by_title(self.summaries), threshold=self.cfg.threshold, profile=self.cfg.profile)


def chapter_results(cfg: SanityChapter) -> SanityResults:
    """Sanity rows, summaries and random-map references of the chapter's two agents (DQN, Mask-A3C)."""
    dqn, mask = chapter_agents(cfg.game, cfg.agent, results_dir=cfg.results_dir)
    agents = {"dqn": dqn, "mask_a3c": mask}
    tables = {k: sanity_results(cfg, a) for k, a in agents.items()}
    summaries = {k: t if isinstance(t, Note) else layer_summary(t, seed=cfg.seed) for k, t in tables.items()}
    refs = {k: t if isinstance(t, Note) else reference_summary(t, seed=cfg.seed) for k, t in tables.items()}
    return SanityResults(cfg, agents, tables, summaries, refs)


def level_labels(summary: pd.DataFrame, agent: str | None = None) -> list[tuple[int, str]]:
    """``(level, tick label)`` of an agent's cascade: ``none``, the output group, then ``+ <group>`` …"""
    s = summary if agent is None else summary[summary["agent"] == agent]
    pairs = sorted(set(zip(s["level"].astype(int), s["layer"])))
    return [(lv, "none" if lv == 0 else name if lv == 1 else f"+ {name}") for lv, name in pairs]


def verdict(ci_low: float, ci_high: float, threshold: float = THRESHOLD, *, n: int | None = None,
            min_states: int = MIN_STATES) -> str:
    """``"passes"`` if the whole CI lies below ``threshold``, ``"fails"`` if it lies at or above it,
    ``"undecided"`` if it straddles it; ``"no data"`` without a CI (fewer than two finite values)
    and ``"too few states"`` when ``n`` (finite values behind the CI) is below ``min_states``
    (:data:`~saliency_study.evidence.MIN_STATES`)."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "no data"
    if n is not None and n < min_states:
        return TOO_FEW
    if ci_high < threshold:
        return "passes"
    if ci_low >= threshold:
        return "fails"
    return "undecided"


def verdict_table(summary: pd.DataFrame, refs: pd.DataFrame | None = None, *, threshold: float = THRESHOLD,
                  min_states: int = MIN_STATES) -> pd.DataFrame:
    """Per agent and method: every measure after full randomisation, and the verdict on Spearman.

    Returns
    -------
    pandas.DataFrame
        ``agent, method, level, layer, n, n_eff`` (effective sample size of the Spearman
        similarities), ``spearman, spearman_low, spearman_high, ssim…, hog_pearson…,
        random_spearman`` (mean Spearman similarity with a uniform-random map)
        and ``verdict`` (:func:`verdict` of the Spearman CI).
    """
    rows = []
    for agent in dict.fromkeys(summary["agent"]):
        for method in ordered(summary.loc[summary["agent"] == agent, "method"]):
            rows.append(_verdict_row(summary[(summary["agent"] == agent) & (summary["method"] == method)], refs))
    out = pd.DataFrame([r for r in rows if r])
    if out.empty:
        return out
    for m in ("spearman", "spearman_low", "spearman_high", "random_spearman", "n", "n_eff"):
        if m not in out.columns:
            out[m] = np.nan
    out["verdict"] = [verdict(lo, hi, threshold, n=None if pd.isna(n) else int(n), min_states=min_states)
                      for lo, hi, n in zip(out["spearman_low"], out["spearman_high"], out["n"])]
    return out


def _verdict_row(g: pd.DataFrame, refs: pd.DataFrame | None) -> dict:
    """One agent's and method's summary rows at its deepest level, flattened (empty dict: no rows)."""
    if g.empty:
        return {}
    agent, method = g["agent"].iloc[0], g["method"].iloc[0]
    top = g[g["level"] == g["level"].max()]
    row = {"agent": agent, "method": method, "level": int(top["level"].iloc[0]), "layer": top["layer"].iloc[0]}
    for _, r in top.iterrows():
        m = r["measure"]
        row.update({m: r["mean"], f"{m}_low": r["ci_low"], f"{m}_high": r["ci_high"]})
        if m == "spearman":
            row["n"] = int(r["n"])
            row["n_eff"] = float(r["n_eff"]) if "n_eff" in r else np.nan
    if refs is not None and len(refs):
        ref = refs[(refs["agent"] == agent) & (refs["method"] == method) & (refs["layer"] == "random_uniform")
                   & (refs["measure"] == "spearman")]
        row["random_spearman"] = float(ref["mean"].iloc[0]) if len(ref) else np.nan
    return row


def ci(mean, low, high) -> str:
    if not np.isfinite(mean):
        return "–"
    if not (np.isfinite(low) and np.isfinite(high)):
        return f"{mean:.2f}"
    return f"{mean:.2f} [{low:.2f}, {high:.2f}]"


def verdict_rules(threshold: float = THRESHOLD, min_states: int = MIN_STATES):
    """Markdown list of the verdict rules with the configured threshold (see :func:`verdict`)."""
    from IPython.display import Markdown

    return Markdown(
        f"* **passes** when the whole 95 % moving-block bootstrap confidence interval of the mean Spearman "
        f"similarity lies below "
        f"τ = {threshold:g};\n"
        f"* **fails** when the whole interval lies at or above τ;\n"
        f"* is **undecided** when the interval contains τ;\n"
        f"* has **{TOO_FEW}** for a verdict when fewer than {min_states} states have a finite similarity: "
        "consecutive states of one game are worth far fewer independent ones (the effective sample size, "
        "ESS, in the table), and an interval from a handful of them is little more than their range.")


# -- figures ---------------------------------------------------------------------------------


# -- the test's set-up -------------------------------------------------------------------------

def layer_groups_table(agents: Sequence[ExplainedAgent], device: str = "cpu") -> pd.DataFrame | Note:
    """The cascade of each available agent: level, layer group, its modules and parameter count."""
    rows = []
    for who in agents:
        if not who:
            continue
        agent = load(who.spec, device)
        names = {id(m): n for n, m in agent.net.named_modules()}
        for level, (group, modules) in enumerate(agent.layer_groups(), start=1):
            rows.append({"Agent": who.label, "Level": level, "Layer group": group,
                         "Modules": ", ".join(names.get(id(m), type(m).__name__) for m in modules),
                         "Parameters": sum(p.numel() for m in modules for p in m.parameters())})
    if not rows:
        return Note("No agent is available for this game.", kind="warning", title="No agents")
    return pd.DataFrame(rows)


def sweep_note(cfg: SanityChapter, agents: Sequence[ExplainedAgent]):
    """Markdown: how many states each agent's results cover and with which explainer parameters."""
    from IPython.display import Markdown

    from saliency_book.common import describe_params
    from saliency_study.profiles import sweep_sizes

    lines = []
    for who in agents:
        if not who:
            continue
        n, _, params = sweep_sizes(cfg.profile, load(who.spec, cfg.device).preset)
        changed = describe_params(params, label=method_label)
        how = (f"with coarser parameters than Huber et al.'s: {changed} (every other method as in the paper)"
               if params else "with Huber et al.'s final parameters")
        lines.append(f"* The **{who.label}** (`{who.spec}`): the first {n} states of its greedy game, {how}.")
    if not lines:
        return Note("No agent is available for this game.", kind="warning", title="No agents")
    return Markdown("\n".join(lines))


# -- the randomised models ----------------------------------------------------------------------

def model_at(agent, level: int, seed: int):
    """The sweep's model with the first ``level`` layer groups randomised (cascading, Glorot); 0: ``agent``."""
    from saliency_lib.metrics import randomised_models

    if level == 0:
        return agent
    return list(randomised_models(agent, order="cascading", init="glorot", seed=seed, levels=level))[-1][2]


# -- generated text ----------------------------------------------------------------------------

_TINY = "*These numbers come from the `tiny` profile (very few states, coarse parameters) and mean nothing.*"


def _row(s: pd.DataFrame, method: str, level: int, measure: str = "spearman") -> pd.Series | None:
    r = s[(s["method"] == method) & (s["level"] == level) & (s["measure"] == measure)]
    return r.iloc[0] if len(r) else None


def ns_summary(summaries: dict[str, pd.DataFrame | Note], *, profile: str = "quick"):
    """Markdown sentences on NS original against NS chosen after randomising the output layer(s), per agent.

    Whether Huber et al.'s finding is reproduced is only judged on at least
    :data:`~saliency_study.evidence.MIN_STATES` states.
    """
    from IPython.display import Markdown

    text = []
    for title, s in summaries.items():
        if isinstance(s, Note) or s.empty:
            continue
        o, c = _row(s, "ns_original", 1), _row(s, "ns_chosen", 1)
        if o is None or c is None:
            continue
        layer = o["layer"]
        sent = (f"For the {title}, randomising only the `{layer}` group leaves NS original at a mean Spearman "
                f"similarity of {ci(o['mean'], o['ci_low'], o['ci_high'])} to its original map, and NS chosen action "
                f"at {ci(c['mean'], c['ci_low'], c['ci_high'])} ({int(o['n'])} states, effective sample size "
                f"{o['n_eff']:.0f} and {c['n_eff']:.0f}).")
        if not enough_states(min(o["n"], c["n"])):
            sent += (f" These are {too_few(min(o['n'], c['n']))} on whether NS original stays more similar than NS "
                     f"chosen action, as Huber et al. found ({MIN_STATES} needed).")
        elif np.isfinite(o["ci_low"]) and np.isfinite(c["ci_high"]) and o["ci_low"] > c["ci_high"]:
            sent += (" NS original stays clearly more similar, and the confidence intervals do not overlap: "
                     "Huber et al.'s finding is reproduced here.")
        elif np.isfinite(c["ci_low"]) and np.isfinite(o["ci_high"]) and c["ci_low"] > o["ci_high"]:
            sent += " Here NS chosen action stays more similar, the opposite of Huber et al.'s finding."
        elif o["mean"] > c["mean"]:
            sent += (" NS original stays more similar on average, as Huber et al. found, but the confidence "
                     "intervals overlap, so these states do not settle the difference.")
        else:
            sent += " On these states NS original is not the more similar variant, unlike in Huber et al."
        text.append(sent)
    if not text:
        return Note("No Noise Sensitivity results to summarise.", title="No results")
    if profile == "tiny":
        text.append(_TINY)
    return Markdown("\n\n".join(text))


def discussion(verdicts: dict[str, pd.DataFrame], summaries: dict[str, pd.DataFrame | Note], *,
               threshold: float = THRESHOLD, profile: str = "quick"):
    """Markdown: verdicts per agent, the most and least parameter-dependent methods, maps the first level leaves unchanged."""
    from IPython.display import Markdown

    text = []
    for title, v in verdicts.items():
        if not isinstance(v, pd.DataFrame) or v.empty:
            continue
        groups = {k: list(v.loc[v["verdict"] == k, "method"])
                  for k in ("passes", "fails", "undecided", "no data", TOO_FEW)}
        layer = v["layer"].iloc[0]
        parts = [f"{len(groups['passes'])} of {len(v)} methods {'passes' if len(groups['passes']) == 1 else 'pass'} the test"
                 + (f" ({method_names(groups['passes'])})" if groups["passes"] else "")]
        if groups["fails"]:
            k = len(groups["fails"])
            parts.append(f"{k} fail{'s' if k == 1 else ''} ({method_names(groups['fails'])})")
        if groups["undecided"]:
            k = len(groups["undecided"])
            parts.append(f"{k} {'is' if k == 1 else 'are'} undecided ({method_names(groups['undecided'])})")
        if groups["no data"]:
            k = len(groups["no data"])
            parts.append(f"{k} {'has' if k == 1 else 'have'} too few finite values for a CI ({method_names(groups['no data'])})")
        if groups[TOO_FEW]:
            k = len(groups[TOO_FEW])
            n_few = int(v.loc[v["verdict"] == TOO_FEW, "n"].max())
            parts.append(f"{k} {'has' if k == 1 else 'have'} {too_few(n_few)} ({method_names(groups[TOO_FEW])}; "
                         f"{MIN_STATES} needed)")
        sent = (f"For the {title}, once every layer down to `{layer}` is randomised and with a Spearman "
                f"threshold of {threshold:.2f}, " + "; ".join(parts) + ".")
        ok = v.dropna(subset=["spearman"])
        if len(ok) >= 2:
            hi, lo = ok.loc[ok["spearman"].idxmax()], ok.loc[ok["spearman"].idxmin()]
            lead = " The map most similar" if enough_states(int(ok["n"].min())) else " By the means alone, the map most similar"
            sent += (f"{lead} to its original is that of **{method_label(hi['method'])}** "
                     f"(ρ = {hi['spearman']:.2f}), the least similar that of **{method_label(lo['method'])}** "
                     f"(ρ = {lo['spearman']:.2f}).")
        s = summaries.get(title)
        if isinstance(s, pd.DataFrame) and len(s):
            first = s[(s["level"] == 1) & (s["measure"] == "spearman")]
            same = first[first["ci_low"] >= 0.999]["method"].tolist()
            if same:
                sent += (f" Randomising the first group (`{first['layer'].iloc[0]}`) leaves the maps of "
                         f"{method_names(same)} unchanged (every state's ρ ≥ 0.999).")
                if any(m.startswith("mask_") for m in same):
                    sent += (" The Mask-A3C masks are computed before the heads, so no change of the heads can "
                             "reach them; the test of the masks starts at the attention layer.")
        text.append(sent)
    if not text:
        return Note("No sanity-check results to discuss.", title="No results")
    if profile == "tiny":
        text.append(_TINY)
    return Markdown("\n\n".join(text))
