"""Where this study deviates from Huber et al. and Itaya et al.: ``data/deviations.yaml`` against our agents.

The data file holds both of chapter 1's tables and describes its fields. :func:`training_table` reads
our shipped agents' training settings from their ``meta.json`` by the expressions the file names and
checks each against the paper's value; :func:`methods_table` gives the explainers' and metrics'
deviations for a profile. Each deviation of the explainers and metrics names the docstring that
documents it (checked by ``tests/book/test_ch1_deviations.py``).
"""

from __future__ import annotations

import ast
import functools
import json
import math
import operator
import re
from pathlib import Path

import pandas as pd

from .catalog import shipped_agents
from .paths import AGENTS_DIR, repo_path
from .profiles import sweep_sizes

__all__ = ["DEVIATIONS", "deviations", "evaluate", "fill", "training_table", "methods_table"]

DEVIATIONS = Path(__file__).parent / "data" / "deviations.yaml"
"""The one home of chapter 1's deviation tables."""

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv}
_FUNCTIONS = {"before": lambda text, sep: str(text).split(sep)[0],
              "mentions": lambda items, part: any(part in str(i) for i in items or ())}
_FIELD = re.compile(r"\{([^{}:]+)(?::([^{}]*))?\}")


@functools.cache
def deviations() -> dict:
    """The parsed data file: ``{"training": [...], "methods": [...]}``."""
    import yaml

    return yaml.safe_load(DEVIATIONS.read_text())


def evaluate(expression: str, env: dict):
    """An expression of the data file over ``env`` (a missing key reads as None).

    Names, dotted keys into dicts, constants, ``+ - * / //``, ``or`` and the functions of
    ``_FUNCTIONS``; anything else raises ``ValueError``.
    """
    def ev(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Attribute):
            base = ev(node.value)
            return base.get(node.attr) if isinstance(base, dict) else None
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            return next((v for v in map(ev, node.values[:-1]) if v), None) or ev(node.values[-1])
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
                and not node.keywords):
            return _FUNCTIONS[node.func.id](*map(ev, node.args))
        raise ValueError(f"unsupported expression {ast.unparse(node)!r} in {DEVIATIONS.name}")

    return ev(ast.parse(expression.strip(), mode="eval").body)


def fill(template: str, env: dict) -> str | None:
    """``template`` with each ``{expression:format}`` field filled in; None when it is one field that is None."""
    m = _FIELD.fullmatch(template.strip())
    if m and evaluate(m.group(1), env) is None:
        return None
    return _FIELD.sub(lambda f: format(evaluate(f.group(1), env), f.group(2) or ""), template)


def _same(a, b) -> bool:
    numbers = all(isinstance(v, (int, float)) for v in (a, b))
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12) if numbers else a == b


def _ours(setting: dict, values: dict) -> str:
    show = setting.get("ours")
    if isinstance(show, dict):
        (value,) = values.values()
        return str(show.get(value, value))
    if show is None:
        return str(next(iter(values.values())) if len(values) == 1 else tuple(values.values()))
    return fill(show, values)


def training_table(agents_dir=AGENTS_DIR) -> pd.DataFrame:
    """Every training setting of the data file for the shipped agents of ``agents_dir``, one row per paper and setting.

    ``ours`` is one text when the paper's kind of agents agree, else each text with its agents; ``deviates``
    is True when any agent's value differs from the paper's (always without ``paper``). Papers with no agent
    of their kind are left out.
    """
    metas = {row.agent: json.loads((repo_path(row.path) / "meta.json").read_text())
             for row in shipped_agents(agents_dir).itertuples()}
    rows = []
    for group in deviations()["training"]:
        ms = {name: m for name, m in metas.items() if m.get("algo") in group["algos"]}
        for s in group["settings"] if ms else ():
            values = {name: {k: evaluate(e, m) for k, e in s["read"].items()} for name, m in ms.items()}
            shown: dict[str, list[str]] = {}
            for name, v in values.items():
                shown.setdefault(_ours(s, v), []).append(name)
            ours = next(iter(shown)) if len(shown) == 1 else "; ".join(f"{t} ({', '.join(n)})" for t, n in shown.items())
            paper, first = s.get("paper"), next(iter(ms))
            rows.append({"paper": group["paper"], "agents": group["agents"], "setting": s["setting"],
                         "theirs": s["theirs"], "ours": ours, "why": fill(s.get("why", ""), {**ms[first], **values[first]}),
                         "deviates": paper is None or any(not _same(v[k], p) for v in values.values() for k, p in paper.items()),
                         "n_agents": len(ms)})
    return pd.DataFrame(rows, columns=["paper", "agents", "setting", "theirs", "ours", "why", "deviates", "n_agents"])


def methods_table(profile: str = "quick", *, coarse: str | None = None) -> pd.DataFrame:
    """The explainers' and metrics' deviations for ``profile`` (rows that do not deviate in it are left out).

    ``coarse`` fills the data file's ``{coarse}`` field: the profile's coarser explainer parameters, worded by
    the caller (None: the profile has none, and a row that is only ``{coarse}`` is left out).
    """
    env = {"profile": profile, "dqn_states": sweep_sizes(profile, "dqn").n_states,
           "mask_states": sweep_sizes(profile, "mask_a3c").n_states, "coarse": coarse}
    rows = [{"component": d["component"], "kind": d["kind"], "theirs": d["theirs"], "ours": ours, "why": d["why"],
             "documented in": ", ".join(f"`{path}`" for path in d["documented in"])}
            for d in deviations()["methods"] if (ours := fill(d["ours"], env)) is not None]
    return pd.DataFrame(rows, columns=["component", "kind", "theirs", "ours", "why", "documented in"])
