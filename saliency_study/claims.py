"""The claims of the two papers, and ours, each with its verdict and what it rests on.

In the form of a reproducibility report: one row per claim, with the paper's number, ours, a
verdict and the games, agents, states and effective sample size behind it. Every row is computed
from the committed study (packed units only, nothing recomputed); a claim the study has not
reached says "not tested". The rules that turn many comparisons into one verdict are stated here,
before the numbers:

* a claim made of per-cell comparisons (:func:`saliency_study.paper.compare_per_game`) is
  **reproduced** when at least :data:`AGREE_SHARE` of its judged cells are reproduced, **differs**
  when at least :data:`DIFFER_SHARE` of them differ, and **inconclusive** otherwise;
* a claim about the order of methods is **reproduced** when the rank correlation with the paper's
  order is positive and significant (one-sided, 5 %) in at least :data:`AGREE_SHARE` of its settings,
  **differs** when it is not positive in at least half of them, and **inconclusive** otherwise;
* a claim of ours **holds** or **does not hold** by the rule stated in its row.

No verdict rests on an effective sample size below :data:`~saliency_study.evidence.MIN_ESS`: such
cells are "withheld" and left out of the shares (and a claim with no judged cell is "withheld").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from saliency_lib.games import HUBER_GAMES

from . import paper as huber
from .paths import RESULTS_DIR

__all__ = ["Claim", "AGREE_SHARE", "DIFFER_SHARE", "claims", "claims_table", "cached_claims", "SECTIONS", "JSON_FIELDS"]

JSON_FIELDS = ("id", "claim", "source", "verdict", "games", "agents", "n_states", "ess", "paper_value", "our_value",
               "section", "basis")
"""The fields of each row of ``saliency-study claims --json``."""
CODE = ("saliency_study/claims.py", "saliency_study/paper.py", "saliency_study/evidence.py",
        "saliency_study/substrates.py", "saliency_study/variants.py", "saliency_study/degradation.py",
        "saliency_lib/metrics/equivalence.py",
        "saliency_lib/metrics/dependence.py")
"""The code the claims are computed by: part of the cache key of :func:`cached_claims`."""

AGREE_SHARE = 0.75
"""Share of a claim's judged comparisons that must agree for the claim to be reproduced."""
DIFFER_SHARE = 0.25
"""Share of a claim's judged comparisons that, differing, make the claim differ."""
PAPER_METHODS = ("occlusion", "ns_original", "sarfa", "rise", "lime_felzenszwalb", "lime_quickshift", "lime_slic",
                 "random")
"""The methods of Huber et al.'s insertion tables (their NS is our ``ns_original``)."""
SECTIONS = {"sanity": "chapters/03_sanity", "insertion": "chapters/04_degradation",
            "masks": "chapters/05_mask_attention", "agents": "chapters/01_agents"}
"""The book page of each kind of claim (the claims page links there)."""


@dataclass(frozen=True)
class Claim:
    """One row of the claims table."""

    id: str
    claim: str
    """The claim in one line."""
    source: str
    """``huber2021``, ``itaya2021`` or ``ours``."""
    verdict: str
    """reproduced / differs / inconclusive / withheld / not tested (ours: holds / does not hold)."""
    paper_value: str | None
    our_value: str | None
    games: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    n_states: int = 0
    """States behind the verdict (summed over games and agents)."""
    ess: float | None = None
    """The smallest effective sample size of a judged comparison (None where none applies)."""
    section: str = ""
    basis: str = ""
    """What the verdict rests on, in a few words (the rule, the counts)."""

    def as_dict(self) -> dict:
        return asdict(self)


def _share_verdict(verdicts: pd.Series) -> str:
    judged = verdicts[verdicts.isin(["reproduced", "differs", "inconclusive"])]
    if judged.empty:
        return "withheld" if (verdicts == "withheld").any() else "not tested"
    if (judged == "reproduced").mean() >= AGREE_SHARE:
        return "reproduced"
    if (judged == "differs").mean() >= DIFFER_SHARE:
        return "differs"
    return "inconclusive"


def _counts(verdicts: pd.Series) -> str:
    c = verdicts.value_counts()
    parts = [f"{c.get(k, 0)} {k}" for k in ("reproduced", "inconclusive", "differs", "withheld") if c.get(k, 0)]
    return ", ".join(parts) or "none run"


def _cells(table: pd.DataFrame) -> dict:
    run = table[table["verdict"] != huber.NOT_RUN]
    judged = run[run["verdict"] != "withheld"]
    return {"games": list(dict.fromkeys(run["game"])), "agents": [], "n_states": int(run.groupby("game")["n"].max().sum()),
            "ess": float(judged["n_eff"].min()) if len(judged) else None}


def _range(values, digits: int = 2) -> str:
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if not v.size:
        return "–"
    lo, hi = v.min(), v.max()
    return f"{lo:.{digits}f}" if np.isclose(lo, hi) else f"{lo:.{digits}f} to {hi:.{digits}f}"


# -- Huber et al.: sanity checks --------------------------------------------------------------------

def _sanity(rows: pd.DataFrame) -> pd.DataFrame:
    p = huber.paper_sanity()
    return huber.compare_per_game(rows, p, ("method", "level", "measure"))


def _ns_claims(cmp: pd.DataFrame) -> list[Claim]:
    out = []
    for method, text, cid in (("ns_original", "Noise Sensitivity (original) stays similar when only the output layer is "
                               "randomised (it fails the check): its Spearman similarity is the paper's", "ns-original"),
                              ("ns_chosen", "Noise Sensitivity with the chosen-action fix changes when only the output "
                               "layer is randomised: its Spearman similarity is the paper's", "ns-chosen")):
        t = cmp[(cmp["method"] == method) & (cmp["level"] == 1) & (cmp["measure"] == "spearman")]
        run = t[t["verdict"] != huber.NOT_RUN]
        out.append(Claim(cid, text, "huber2021", _share_verdict(t["verdict"]), f"Spearman {_range(t['paper'])}",
                         f"Spearman {_range(run['mean'])}" if len(run) else None, section=SECTIONS["sanity"],
                         basis=f"per game, ±0.10: {_counts(run['verdict'])}", **_cells(t)))
    return out


def _cascade_claims(cmp: pd.DataFrame) -> list[Claim]:
    out = []
    for game in HUBER_GAMES:
        t = cmp[cmp["game"] == game]
        run = t[t["verdict"] != huber.NOT_RUN]
        full = run[(run["level"] == 5) & (run["measure"] == "spearman")]
        rho = full[["paper", "mean"]].corr(method="spearman").iloc[0, 1] if len(full) >= 3 else np.nan
        ours = (f"{(run['verdict'] == 'reproduced').sum()} of {len(run)} cells within ±0.10; method order after full "
                f"randomisation ρ = {rho:.2f}") if len(run) else None
        out.append(Claim(f"sanity-{game}", f"{game}: the cascade's similarities (every method, layer and measure) are "
                         "those of the paper", "huber2021", _share_verdict(t["verdict"]),
                         f"{len(t)} cells (9 methods × 5 levels × 3 measures)", ours, section=SECTIONS["sanity"],
                         basis=_counts(run["verdict"]), **_cells(t)))
    return out


# -- Huber et al.: insertion ------------------------------------------------------------------------

def _insertion(rows: pd.DataFrame) -> pd.DataFrame:
    t = rows[(rows["experiment"] == "insertion") & rows["step"].isna() & rows["measure"].isin(["q_ratio_auc", "advantage_auc"])]
    return t.assign(measure=t["measure"].str.removesuffix("_auc"))


def _order_claims(aucs: pd.DataFrame) -> list[Claim]:
    from scipy.stats import spearmanr

    p = huber.paper_insertion("main")
    out = []
    for sub in ("black", "random"):
        settings = []
        for game in HUBER_GAMES:
            for measure in ("q_ratio", "advantage"):
                ours = aucs[(aucs["game"] == game) & (aucs["substrate"] == sub) & (aucs["measure"] == measure)
                            & aucs["method"].isin(PAPER_METHODS)].groupby("method")["value"].mean()
                theirs = p[(p["game"] == game) & (p["substrate"] == sub) & (p["measure"] == measure)].set_index("method")["mean"]
                common = ours.index.intersection(theirs.index)
                if len(common) < 3:
                    continue
                r = spearmanr(theirs[common], ours[common], alternative="greater")
                settings.append({"game": game, "rho": float(r.statistic), "p": float(r.pvalue),
                                 "n": int(aucs[(aucs["game"] == game) & (aucs["substrate"] == sub)]
                                          .groupby("method")["state"].nunique().min())})
        s = pd.DataFrame(settings, columns=["game", "rho", "p", "n"])
        sig = int(((s["rho"] > 0) & (s["p"] < 0.05)).sum())
        if s.empty:
            verdict = "not tested"
        elif sig >= AGREE_SHARE * len(s):
            verdict = "reproduced"
        elif (s["rho"] <= 0).sum() >= 0.5 * len(s):
            verdict = "differs"
        else:
            verdict = "inconclusive"
        games = list(dict.fromkeys(s["game"]))
        out.append(Claim(f"insertion-order-{sub}", f"{sub.capitalize()} substrate: the methods' mean insertion AUCs "
                         "keep the paper's order (Q-ratio and advantage)", "huber2021", verdict,
                         "8 methods × 2 measures × 4 games",
                         f"significant in {sig} of {len(s)} settings, ρ {_range(s['rho'])}" if len(s) else None,
                         games=games, n_states=int(s.groupby("game")["n"].max().sum()) if len(s) else 0,
                         section=SECTIONS["insertion"], basis="one-sided Spearman test per game and measure, 5 %"))
    return out


def _cell_claim(aucs: pd.DataFrame) -> Claim:
    p = huber.paper_insertion("main")
    t = huber.compare_per_game(aucs[aucs["method"].isin(PAPER_METHODS)], p[p["method"].isin(PAPER_METHODS)],
                               ("substrate", "measure", "method"))
    run = t[t["verdict"] != huber.NOT_RUN]
    return Claim("insertion-auc", "Each method's mean insertion AUC (per game, substrate and measure) is the paper's",
                 "huber2021", _share_verdict(t["verdict"]), f"{len(t)} cells",
                 f"{(run['verdict'] == 'reproduced').sum()} of {len(run)} cells within 0.25 SD" if len(run) else None,
                 section=SECTIONS["insertion"], basis=_counts(run["verdict"]), **_cells(t))


def _ablation_claim(aucs: pd.DataFrame) -> Claim:
    """Huber et al.'s §6.2: gray occlusion and blurred SARFA move the AUCs; does ours move the same way?"""
    from .degradation import ablation_table

    r = ablation_table(aucs)
    if r.empty:
        return Claim("ablation", "§6.2: gray occlusion and blurred SARFA change the insertion AUCs as in the paper",
                     "huber2021", "not tested", "32 changes", None, section=SECTIONS["insertion"])
    agree = np.sign(r["change"]) == np.sign(r["paper_change"])
    sig = r["direction"] != "not significant"
    share = float(agree[sig].mean()) if sig.any() else np.nan
    verdict = ("reproduced" if share >= AGREE_SHARE else "differs" if share < 0.5 else "inconclusive") if sig.any() \
        else "inconclusive"
    return Claim("ablation", "§6.2: gray occlusion and blurred SARFA change the insertion AUCs in the paper's "
                 "direction", "huber2021", verdict, f"{len(r)} changes (method × game × substrate × measure)",
                 f"same direction in {int(agree.sum())} of {len(r)}; in {int(agree[sig].sum())} of our {int(sig.sum())} "
                 "significant changes", games=list(dict.fromkeys(r["game"])),
                 n_states=int(r.groupby("game")["n"].max().sum()), section=SECTIONS["insertion"],
                 basis="paired test per setting on the same states (ESS t), 5 %")


# -- Itaya et al. ----------------------------------------------------------------------------------

def _score_claim() -> Claim:
    from saliency_lib.train.scores import read_scores

    from .paths import AGENT_SCORES_CSV, repo_path
    from .variants import compare_variants

    try:
        c = compare_variants(read_scores(repo_path(AGENT_SCORES_CSV)), protocol="sticky")
    except (FileNotFoundError, ValueError):
        return Claim("itaya-score", "Mask attention lets A3C achieve a higher score (Breakout)", "itaya2021",
                     "not tested", "higher", None, section=SECTIONS["masks"])
    from .variants import equivalent

    d = c.difference
    # "higher" is the claim; an interval inside the equivalence margin rules out an effect of the margin's
    # size, so the claim differs; no detectable difference is inconclusive, with what the design detects.
    verdict = {"higher": "reproduced", "lower": "differs", equivalent(): "differs"}.get(
        c.verdict, "inconclusive" if c.verdict else "withheld")
    seeds = f"{d['n_treatment']} and {d['n_baseline']} seeds"
    base = float(c.table.set_index("variant").loc["none", "mean"]) if "none" in set(c.table["variant"]) else np.nan
    mde = (f"; detects {d['mde']:.0f} ({d['mde'] / abs(base):.0%} of A3C's mean)"
           if np.isfinite(d.get("mde", np.nan)) and np.isfinite(base) and base else "")
    ours = (f"Mask-A3C − A3C {d['diff']:+.1f}, 95 % CI {d['ci_low']:+.1f} to {d['ci_high']:+.1f} (sticky, {seeds}{mde})"
            if np.isfinite(d["ci_low"]) else None)
    seeds_of = {v: [int(s) for s in row["seed_ids"]] for v, row in c.table.set_index("variant").iterrows()
                if v in ("none", "double")}
    return Claim("itaya-score", "Mask attention lets A3C achieve a higher score (Breakout, 10 M frames)", "itaya2021",
                 verdict, "higher (no number published for 10 M frames)", ours, games=["Breakout"],
                 agents=[f"a3c-Breakout-{v}-s{s}" for v, seeds in seeds_of.items() for s in seeds],
                 n_states=0, section=SECTIONS["masks"], basis=f"Welch t over training seeds: {c.verdict or c.reason}")


# -- ours -----------------------------------------------------------------------------------------

def _distinct_claim(results_dir) -> Claim:
    import json

    from .paths import repo_path

    found = []
    for f in sorted((repo_path(results_dir) / "sweep" / "states").glob("states-*.json")):
        idx = json.loads(f.read_text())
        if idx.get("first_change") is not None and idx["n"] >= 500:
            found.append(idx)
    repeats = [i["plain_repeats"] for i in found if "plain_repeats" in i]
    return Claim("distinct-states", "The greedy agent replays its first game after a game over, and still screens "
                 "repeat: the study explains distinct states only", "ours",
                 "holds" if found and all(i["distinct_states"] == i["n"] for i in found) else "not tested",
                 None, f"{len(found)} state sets of ≥ 500 states, all distinct" + (
                     f"; the plain trajectories repeated {', '.join(map(str, repeats))} of their states" if repeats else ""),
                 n_states=sum(i["n"] for i in found), section=SECTIONS["sanity"],
                 basis="exact duplicates of an earlier state (observation and recurrent state)")


def _substrate_claim(agents: dict[str, str], results_dir) -> Claim:
    from .substrates import substrate_scope

    t = pd.concat([substrate_scope(a, results_dir=results_dir) for a in agents.values()], ignore_index=True)
    rnd = t[t["substrate"] == "random"]
    worst = rnd.loc[rnd["median_ratio"].idxmax()]
    holds = worst["median_ratio"] >= 1
    return Claim("random-substrate-scope", "The random substrate lies outside what an agent has seen: on it alone "
                 "Q(a) can exceed the clean Q(a), and then random insertion cannot rank maps", "ours",
                 "holds" if holds else "does not hold", None,
                 f"Q(a) on noise / clean Q(a), median over states: {_range(rnd['median_ratio'])} "
                 f"({worst['game']} highest); black {_range(t.loc[t['substrate'] == 'black', 'median_ratio'])}",
                 games=list(dict.fromkeys(t["game"])), agents=list(agents.values()), n_states=int(rnd["n"].sum()),
                 section=SECTIONS["insertion"], basis="holds where the median ratio reaches 1 for some agent")


# -- all of it ------------------------------------------------------------------------------------

def claims(*, profile: str = "full", results_dir=RESULTS_DIR) -> list[Claim]:
    """Every claim of the two papers that the study tests, and ours, from the committed study."""
    from .catalog import study_agent

    rows = huber.stored_rows(profile, HUBER_GAMES, experiments=("sanity", "insertion", "deletion"), preset="dqn",
                             results_dir=results_dir, packed_only=True)
    sanity = rows[rows["experiment"] == "sanity"]
    cmp = _sanity(sanity)
    aucs = _insertion(rows)
    # the agents whose study is stored (the substrate claim explains their states; none: nothing to compute)
    agents = {g: a for g in HUBER_GAMES if g in set(rows["game"]) and (a := study_agent(g, results_dir=results_dir))}
    out = [*_ns_claims(cmp), *_cascade_claims(cmp), *_order_claims(aucs), _cell_claim(aucs), _ablation_claim(aucs),
           _score_claim(), _distinct_claim(results_dir)]
    out.append(_substrate_claim(agents, results_dir) if agents else Claim(
        "random-substrate-scope", "The random substrate lies outside what an agent has seen", "ours", "not tested",
        None, None, section=SECTIONS["insertion"]))
    for c in out:  # which agents a Huber et al. claim rests on: the study's DQN agent of each game
        if c.source == "huber2021" and not c.agents:
            object.__setattr__(c, "agents", [agents[g] for g in c.games if g in agents])
    return out


def claims_table(items: list[Claim] | None = None, **kw) -> pd.DataFrame:
    """:func:`claims` as a table, one row per claim."""
    return pd.DataFrame([c.as_dict() for c in (items if items is not None else claims(**kw))])


def _inputs(results_dir) -> dict:
    """What the claims are computed from: the packs, the state indexes and the scores (names, sizes, hashes)."""
    import hashlib

    from .paths import AGENT_SCORES_CSV, repo_path

    root = repo_path(results_dir) / "sweep"
    # Each file is named relative to where it lives (the results may sit outside the repository,
    # as in the tiny test book), so the key is the same on every checkout.
    files = [(f, f.relative_to(root).as_posix())
             for f in sorted([*root.glob("packs/*/*.parquet"), *root.glob("states/states-*.json")])]
    files.append((repo_path(AGENT_SCORES_CSV), "agents/scores.csv"))
    h = hashlib.sha256()
    for f, name in files:
        if f.is_file() and not f.name.startswith("."):
            h.update(f"{name}:{f.stat().st_size}\n".encode())
            if f.suffix in (".json", ".csv"):
                h.update(f.read_bytes())
    code = hashlib.sha256(b"".join((repo_path(".") / f).read_bytes() for f in CODE)).hexdigest()
    return {"inputs": h.hexdigest(), "code": code}


def cached_claims(*, profile: str = "full", results_dir=RESULTS_DIR) -> pd.DataFrame:
    """:func:`claims_table`, cached by what it is computed from (:mod:`saliency_study.cache`): a
    commit that changes no pack, state index or score reads the cached table."""
    import json

    from .cache import cached_table

    config = {"what": "claims", "profile": profile, **_inputs(results_dir)}
    t = cached_table("claims", config, lambda: claims_table(profile=profile, results_dir=results_dir).assign(
        games=lambda d: d["games"].map(json.dumps), agents=lambda d: d["agents"].map(json.dumps)),
        results_dir=results_dir)
    return t.assign(games=t["games"].map(json.loads), agents=t["agents"].map(json.loads))
