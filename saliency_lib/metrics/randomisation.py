"""Sanity check: cascading model-parameter randomisation (Adebayo et al. 2018; Huber et al. §5).

Stages of :class:`RandomisationTest`:

1. Explain each state with the original agent, for the explained action ``a``
   (default: the original agent's greedy action).
2. Copy the agent (:meth:`Agent.clone`) and re-initialise its layer groups
   **top-down and cumulatively** in the order of :meth:`Agent.layer_groups`:

   * :class:`~saliency_lib.agents.DQNNet`: output (both heads if dueling) → fc →
     conv3 → conv2 → conv1 (the paper's fc_2 → fc_1 → conv_3 → conv_2 → conv_1);
   * :class:`~saliency_lib.agents.MaskA3CNet`: heads (actor and critic linear
     layers and the branch 1×1 convs) → attention 1×1 convs → ConvLSTM → conv3 →
     conv2 → conv1.

   Level ``k`` has the first ``k`` groups randomised (``order="independent"``:
   only group ``k``). Weights are re-drawn Glorot-uniform with zero biases
   (``init="glorot"``, the Keras initialisers of the paper) or by each layer's
   own ``reset_parameters`` (``init="default"``), from a generator seeded by
   ``(seed, level)``.
3. Explain each state with every randomised model **for the original action
   ``a``**, holding a recurrent agent's hidden state fixed. The explainer is
   rebuilt on the randomised model with the same configuration; stochastic
   explainers share their random draws (RISE: the same masks).
4. Compare each randomised map with the original map with the measures of
   :mod:`saliency_lib.metrics.similarity` (min-max normalisation, max over the
   map and its inverse).
5. Reference rows compare the original map with a uniform-random and a
   Gaussian-random map (``layer`` ``"random_uniform"`` / ``"random_gaussian"``,
   ``level`` NA). Level 0 (``layer="original"``) compares the original map with
   itself: 1 by construction, NaN for a constant map; it anchors the plots.

Constant maps give NaN and are flagged in the ``constant_map`` column; one
warning per call reports how many there were.

**Activation reuse** (``reuse=True``, the default). The layers below the
randomised ones are unchanged, and a deterministic perturbation set (Occlusion,
Noise Sensitivity, SARFA, RISE with its shared masks, LIME with its shared
samples) gives every model the same perturbed inputs. The original model and all
randomised ones are therefore explained together
(:meth:`~saliency_lib.explainers.Explainer.attribute_many`): each chunk of
perturbed inputs is built once and runs once through the layers that all models
share; each model continues from the cached activation at the first layer where
its parameters differ (found by comparing parameters, so ``order="independent"``
works too). With incremental inference (Occlusion, NS and SARFA on a
:class:`~saliency_lib.agents.DQNNet`) the window deltas below that layer are
shared as well. For :class:`~saliency_lib.agents.MaskA3CNet` the shared stages
are conv1 → conv2 → conv3 → ConvLSTM, with each row's recurrent state as given.
The maps, and so the similarity table, are those of separate runs up to float
rounding.

Memory of the reuse: all randomised copies are alive at once (one copy of the
parameters per level, ~7 MB per DQN copy); the activation cache holds only the
current chunk: ``batch_size ×`` (every stage's activation of the first model),
about 22 k values per row for the DQN (~22 MB at 256 rows) and 110 k for
Mask-A3C; incremental inference instead keeps, per model, the clean activations
of the call's states (~22 k values per state) and a channels-last copy of its
weights (7 MB). Nothing is kept between chunks or calls.

References
----------
.. [1] Adebayo et al. (2018). Sanity checks for saliency maps. NeurIPS.
.. [2] Huber, Limmer & André (2022). Front. Artif. Intell. 5:903875, reference §5.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..agents.base import Agent
from ..explainers import Explainer
from ..validation import check_choice
from ._common import as_hidden, as_maps, as_state_ids, as_states, as_targets, explain, state_rng
from .similarity import SIMILARITIES, ConstantMapWarning, is_constant, similarities_to

__all__ = ["INITS", "ORDERS", "ORIGINAL", "REFERENCE_LAYERS", "randomise_modules", "randomised_models", "rebuild_explainer",
           "RandomisationTest"]

INITS = ("glorot", "default")
ORDERS = ("cascading", "independent")
#: ``layer`` label of the un-randomised rows (level 0).
ORIGINAL = "original"
#: ``layer`` labels of the random-map reference rows.
REFERENCE_LAYERS = ("random_uniform", "random_gaussian")


def _level_seed(seed: int, level: int) -> int:
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(level)]).generate_state(1, dtype=np.uint64)[0] >> 1)


@torch.no_grad()
def randomise_modules(modules: Sequence[nn.Module], *, init: str = "glorot", seed: int = 0) -> int:
    """Re-initialise the parameters of ``modules`` in place.

    Parameters
    ----------
    modules : sequence of nn.Module
    init : {"glorot", "default"}
        ``"glorot"``: every weight with two or more dimensions Glorot/Xavier
        uniform (fans as Keras' ``glorot_uniform``), every bias zero, other
        parameters by their module's ``reset_parameters``. ``"default"``: each
        module's own ``reset_parameters`` (PyTorch's default initialisation).
    seed : int
        All draws come from generators seeded with ``seed``.

    Returns
    -------
    int
        Number of re-initialised parameter tensors.

    Raises
    ------
    ValueError
        For an unknown ``init`` or modules without parameters.
    """
    check_choice("init", init, INITS)
    gen = torch.Generator().manual_seed(int(seed))
    count = 0
    for top in modules:
        for m in top.modules():
            params = dict(m.named_parameters(recurse=False))
            if not params:
                continue
            if init == "default" or any(p.dim() < 2 and name != "bias" for name, p in params.items()):
                if not hasattr(m, "reset_parameters"):
                    raise ValueError(f"{type(m).__name__} has no reset_parameters(); use init='glorot'")
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=gen)))
                    m.reset_parameters()
                if init == "default":
                    count += len(params)
                    continue
            for name, p in params.items():
                if name == "bias":
                    p.zero_()
                elif p.dim() >= 2:
                    cpu = torch.empty(p.shape, dtype=p.dtype)
                    nn.init.xavier_uniform_(cpu, generator=gen)
                    p.copy_(cpu)
                count += 1
    if count == 0:
        raise ValueError("the layer group has no parameters to randomise")
    return count


def randomised_models(agent: Agent, *, order: str = "cascading", init: str = "glorot", seed: int = 0,
                      levels: int | None = None) -> Iterator[tuple[int, str, Agent]]:
    """Yield ``(level, layer_name, randomised_agent)`` for each level, from the output layer down.

    Parameters
    ----------
    agent : Agent
        Left unchanged; randomisation happens on clones.
    order : {"cascading", "independent"}
        Cumulative top-down (level ``k`` = groups 1…k randomised) or one group
        at a time.
    init : {"glorot", "default"}
        See :func:`randomise_modules`.
    seed : int
        Level ``k`` draws from a generator seeded by ``(seed, k)``, so the
        randomised weights of a level do not depend on which levels run.
    levels : int, optional
        Only the first ``levels`` groups (default: all). ``levels=1`` randomises
        the output layer(s) only.

    Yields
    ------
    level : int
    layer_name : str
        Name of the group randomised at this level (the deepest so far).
    randomised_agent : Agent
        A fresh copy; the caller may keep it.
    """
    check_choice("order", order, ORDERS)
    groups = agent.layer_groups()
    if levels is not None:
        if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not 1 <= levels <= len(groups):
            raise ValueError(f"levels must be an integer in [1, {len(groups)}] (groups: {[g for g, _ in groups]}), "
                             f"got {levels!r}")
        groups = groups[:levels]
    current = agent.clone()
    for k, (name, _) in enumerate(groups, start=1):
        model = current if order == "cascading" else agent.clone()
        modules = dict(model.layer_groups())[name]
        randomise_modules(modules, init=init, seed=_level_seed(seed, k))
        yield k, name, model.clone()


def rebuild_explainer(explainer, agent: Agent):
    """The same explainer configuration bound to another agent.

    ``explainer`` may be a factory ``agent -> explainer`` (a function, or an
    explainer class, called with default parameters), or an explainer
    object. Objects are rebuilt, in this order of preference, by their
    ``for_agent(agent)`` method (:meth:`saliency_lib.explainers.Explainer.for_agent`:
    same parameters, same seed, shared RISE masks), ``rebind(agent)`` or
    ``with_agent(agent)``, or by a shallow copy whose ``agent`` attribute is
    replaced (so shared random draws stay shared).
    """
    if isinstance(explainer, type):  # a class is a factory: Occlusion(agent) with default parameters
        return explainer(agent)
    for meth in ("for_agent", "rebind", "with_agent"):
        if hasattr(explainer, meth):
            return getattr(explainer, meth)(agent)
    if hasattr(explainer, "attribute"):
        new = copy.copy(explainer)
        for attr in ("agent", "model"):
            if hasattr(new, attr):
                setattr(new, attr, agent)
                return new
        raise TypeError(f"cannot rebind {type(explainer).__name__} to another agent: "
                        "it has no rebind()/with_agent() and no 'agent' attribute")
    if callable(explainer):
        return explainer(agent)
    raise TypeError(f"explainer must be an explainer object or a factory agent -> explainer, got {type(explainer).__name__}")


class RandomisationTest:
    """Cascading model-parameter randomisation test.

    Configure in the constructor, evaluate with :meth:`evaluate`.

    Parameters
    ----------
    order : {"cascading", "independent"}, optional
        Cascade (default) or one layer group at a time.
    init : {"glorot", "default"}, optional
        Re-initialisation (default ``"glorot"``: Glorot-uniform weights, zero biases).
    similarities : sequence of str, optional
        Names in :data:`~saliency_lib.metrics.similarity.SIMILARITIES`; default
        the paper's ``("spearman", "ssim", "hog_pearson")`` plus ``"ssim_2d"``.
    levels : int, optional
        Number of cascade levels (default: all groups). ``1`` = output layer(s).
    seed : int, optional
        Seed of the re-initialisation and of the random reference maps.
    reference_rows : bool, optional
        Add the uniform- and Gaussian-random reference rows (default True).
    sign_invariant : bool, optional
        Max over the map and its inverse (default True, as the paper).
    reuse : bool, optional
        Explain all models together, computing the layers they share once per
        chunk of perturbed inputs (default True; see the module notes). Applies to
        the library's explainers passed as an object or class; a factory function
        is called once per model. ``False`` explains model after model. Not part of
        :attr:`config`: the table does not depend on it.

    Notes
    -----
    Scores are similarities: *lower* is better (a map that depends on the
    parameters changes when they are randomised), so ``higher_is_better`` is
    False.
    """

    name = "randomisation"
    higher_is_better = False
    reference = "Adebayo et al. 2018; Huber et al. 2022, reference §5"

    def __init__(
        self,
        *,
        order: str = "cascading",
        init: str = "glorot",
        similarities: Sequence[str] = ("spearman", "ssim", "ssim_2d", "hog_pearson"),
        levels: int | None = None,
        seed: int = 0,
        reference_rows: bool = True,
        sign_invariant: bool = True,
        reuse: bool = True,
    ):
        check_choice("order", order, ORDERS)
        check_choice("init", init, INITS)
        if isinstance(similarities, str):
            similarities = (similarities,)
        similarities = tuple(similarities)
        if not similarities:
            raise ValueError(f"similarities must name at least one measure of: {', '.join(SIMILARITIES)}")
        for s in similarities:
            check_choice("similarity", s, tuple(SIMILARITIES))
        if levels is not None and (isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 1):
            raise ValueError(f"levels must be a positive integer or None (all layer groups), got {levels!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        self.order, self.init, self.similarities = order, init, similarities
        self.levels = None if levels is None else int(levels)
        self.seed = int(seed)
        self.reference_rows = bool(reference_rows)
        self.sign_invariant = bool(sign_invariant)
        if not isinstance(reuse, (bool, np.bool_)):
            raise ValueError(f"reuse must be True or False, got {reuse!r}")
        self.reuse = bool(reuse)

    @property
    def config(self) -> dict:
        """The constructor arguments (for cache keys)."""
        return {
            "metric": self.name, "order": self.order, "init": self.init, "similarities": list(self.similarities),
            "levels": self.levels, "seed": self.seed, "reference_rows": self.reference_rows,
            "sign_invariant": self.sign_invariant,
        }

    def __repr__(self) -> str:
        return f"RandomisationTest({', '.join(f'{k}={v!r}' for k, v in self.config.items() if k != 'metric')})"

    def maps(self, agent: Agent, states, *, explainer, hidden=None,
             target=None) -> tuple[np.ndarray, list[tuple[int, str, np.ndarray]]]:
        """Original maps and the maps of every randomised model.

        Returns
        -------
        original : ndarray, shape (N, H, W)
        randomised : list of (level, layer_name, ndarray (N, H, W))
        """
        x = as_states(agent, states)
        hidden = as_hidden(agent, hidden, x.shape[0])
        n = x.shape[0]
        tgt = self._targets(agent, x, hidden, target)
        t = torch.as_tensor(tgt)
        bound = hasattr(explainer, "attribute") and not isinstance(explainer, type)
        orig_exp = explainer if bound and getattr(explainer, "agent", agent) is agent else rebuild_explainer(explainer, agent)
        if self.reuse and isinstance(orig_exp, Explainer) and (bound or isinstance(explainer, type)):
            models = list(randomised_models(agent, order=self.order, init=self.init, seed=self.seed, levels=self.levels))
            with torch.no_grad():
                atts = orig_exp.attribute_many([agent, *(m for _, _, m in models)], x, target=t, hidden=hidden)
            hw = tuple(x.shape[2:])
            original = as_maps(atts[0], n, hw, "original maps")
            return original, [(level, name, as_maps(a, n, hw, f"maps of level {level}"))
                              for (level, name, _), a in zip(models, atts[1:])]
        original = as_maps(explain(orig_exp, x, target=t, hidden=hidden), n, tuple(x.shape[2:]), "original maps")
        out = []
        for level, name, model in randomised_models(agent, order=self.order, init=self.init, seed=self.seed, levels=self.levels):
            exp = rebuild_explainer(explainer, model)
            m = as_maps(explain(exp, x, target=t, hidden=hidden), n, tuple(x.shape[2:]), f"maps of level {level}")
            out.append((level, name, m))
        return original, out

    @torch.no_grad()
    def _targets(self, agent, x, hidden, target) -> np.ndarray:
        tgt = as_targets(target, x.shape[0], agent.n_actions)
        if tgt is None:
            tgt = agent(x, hidden)[agent.default_output].argmax(1).cpu().numpy()
        return tgt

    def compare(self, original: np.ndarray, randomised: list[tuple[int, str, np.ndarray]], *, state_ids=None,
                target=None) -> pd.DataFrame:
        """Similarity rows (without agent/method labels) for precomputed maps."""
        original = np.asarray(original, dtype=np.float64)
        n = original.shape[0]
        ids = as_state_ids(state_ids, n)
        tgt = np.full(n, -1) if target is None else np.asarray(target).reshape(-1)
        rows: list[dict] = []
        n_const = 0

        for i in range(n):
            # every comparison of state i shares its original map: one call shares its work (ranks, HOG)
            pairs = [(0, ORIGINAL, original[i])] + [(level, layer, maps[i]) for level, layer, maps in randomised]
            if self.reference_rows:
                uni = state_rng(self.seed, ids[i], stream=2).random(original.shape[1:])
                gau = state_rng(self.seed, ids[i], stream=3).standard_normal(original.shape[1:])
                pairs += [(pd.NA, REFERENCE_LAYERS[0], uni), (pd.NA, REFERENCE_LAYERS[1], gau)]
            values = similarities_to(original[i], [b for _, _, b in pairs], self.similarities, sign_invariant=self.sign_invariant)
            const_a = is_constant(original[i])
            for (level, layer, b), vals in zip(pairs, values):
                const = const_a or is_constant(b)
                n_const += const
                for s, v in zip(self.similarities, vals):
                    rows.append({"state": int(ids[i]), "level": level, "layer": layer, "measure": s, "value": float(v),
                                 "target": int(tgt[i]) if tgt[i] >= 0 else pd.NA, "constant_map": const,
                                 "higher_is_better": False})
        if n_const:
            warnings.warn(f"{n_const} map comparisons involved a constant map; their similarities are NaN (constant_map=True)",
                          ConstantMapWarning, stacklevel=3)
        return pd.DataFrame(rows)

    def evaluate(
        self,
        agent: Agent,
        states,
        *,
        explainer,
        hidden=None,
        target=None,
        state_ids=None,
        method: str = "unknown",
        agent_name: str | None = None,
        on_maps: Callable[[np.ndarray], None] | None = None,
    ) -> pd.DataFrame:
        """Run the test and return a tidy table.

        Parameters
        ----------
        agent : Agent
            The trained agent (left unchanged).
        states : Tensor, shape (N, C, H, W)
        explainer : explainer object or callable
            An object with ``attribute(states, target=, hidden=)`` (rebuilt on
            every randomised model by :func:`rebuild_explainer`), or a factory
            ``agent -> explainer``.
        hidden : tuple of Tensor, optional
            Recurrent state per state (first axis N), held fixed for every model.
        target : int or array_like of int, optional
            Explained action per state; default the original agent's greedy action.
            Every randomised model explains this same action.
        state_ids : array_like of int, optional
            Values of the ``state`` column (default ``0 … N-1``); they also seed
            the random reference maps.
        method, agent_name : str
            Labels of the ``method`` and ``agent`` columns.
        on_maps : callable, optional
            Called with the original model's maps ``(N, H, W)`` (float64) once they are
            computed, e.g. to hand them to the insertion/deletion of the same states
            (the sweep's local executor does).

        Returns
        -------
        pandas.DataFrame
            Tidy rows (:mod:`saliency_lib.results` schema, ``experiment="sanity"``):
            one per state, level (or reference layer) and similarity measure;
            ``precision`` is the explainer object's (NA for a factory).

        Warns
        -----
        ConstantMapWarning
            Once, if any compared map was constant.
        """
        from ..results import to_table

        x = as_states(agent, states)

        hidden = as_hidden(agent, hidden, x.shape[0])
        tgt = self._targets(agent, x, hidden, target)
        original, randomised = self.maps(agent, x, explainer=explainer, hidden=hidden, target=tgt)
        if on_maps is not None:
            on_maps(original)
        df = self.compare(original, randomised, state_ids=state_ids, target=tgt)
        return to_table(df, experiment="sanity", agent=agent_name or agent.meta.get("source", type(agent.net).__name__),
                        game=agent.game, method=method, seed=self.seed, precision=getattr(explainer, "precision", pd.NA))
