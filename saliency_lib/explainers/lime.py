"""LIME on superpixels (Ribeiro et al. 2016), as in Huber et al. (2021).

Two layers, as in Captum: :class:`Lime` takes any segmentation callable; the
subclasses :class:`LimeSLIC`, :class:`LimeQuickshift` and :class:`LimeFelzenszwalb`
bind scikit-image segmentations with the paper's final parameters. The
segmentation functions and :func:`lime_weights` are module-level and testable
on their own.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import torch

from ..agents.base import Agent
from ..validation import check_float, check_int
from ._base import ExplainResult
from ._masks import lime_design
from ._perturbation import PerturbationExplainer

__all__ = [
    "Lime",
    "Segmentation",
    "SEGMENTATIONS",
    "slic_segments",
    "quickshift_segments",
    "felzenszwalb_segments",
    "lime_kernel",
    "lime_weights",
]


# -- segmentations (input: one state as an (H, W, C) float array) ------------------------
def slic_segments(image: np.ndarray, *, n_segments: int = 200, compactness: float = 10.0, sigma: float = 0.25) -> np.ndarray:
    """SLIC superpixels of an ``(H, W, C)`` state (``skimage.segmentation.slic``, labels from 0).

    All ``C`` stacked frames are the feature channels (``channel_axis=-1``); no Lab
    conversion (it applies to 3-channel images only).
    """
    from skimage.segmentation import slic

    if image.shape[-1] == 1:
        return slic(image[..., 0], n_segments=n_segments, compactness=compactness, sigma=sigma, start_label=0, channel_axis=None)
    return slic(image, n_segments=n_segments, compactness=compactness, sigma=sigma, start_label=0, channel_axis=-1)


def quickshift_segments(image: np.ndarray, *, kernel_size: float = 1, max_dist: float = 2.0, ratio: float = 0.0) -> np.ndarray:
    """Quickshift superpixels of an ``(H, W, C)`` state, ``convert2lab=False``.

    scikit-image ≥ 0.19 accepts any number of channels when ``convert2lab=False``
    (tested with 4); a single channel is passed as ``(H, W, 1)``. Tie-breaking noise
    uses scikit-image's default seed 42, as the paper's scikit-image 0.17.
    """
    from skimage.segmentation import quickshift

    return quickshift(image, ratio=ratio, kernel_size=kernel_size, max_dist=max_dist, convert2lab=False, channel_axis=-1)


def felzenszwalb_segments(image: np.ndarray, *, scale: float = 21.0, sigma: float = 0.5, min_size: int = 4) -> np.ndarray:
    """Felzenszwalb superpixels of an ``(H, W, C)`` state (Euclidean distance over the channels).

    scikit-image warns that a 4-channel image "may not be intended"; that is
    exactly the paper's use, so the warning is silenced.
    """
    from skimage.segmentation import felzenszwalb

    if image.shape[-1] == 1:
        return felzenszwalb(image[..., 0], scale=scale, sigma=sigma, min_size=min_size, channel_axis=None)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*third dimension.*", category=RuntimeWarning)
        return felzenszwalb(image, scale=scale, sigma=sigma, min_size=min_size, channel_axis=-1)


# -- the local surrogate --------------------------------------------------------------------
def lime_kernel(design: torch.Tensor, kernel_width: float = 0.25) -> torch.Tensor:
    """LIME's sample weights: ``sqrt(exp(−d² / width²))`` with ``d`` the cosine distance to all-ones.

    For a binary row with ``k`` of ``F`` ones, ``d = 1 − sqrt(k / F)`` (1 for an
    all-zero row), which is ``sklearn.metrics.pairwise_distances(metric="cosine")``
    to the all-ones row as lime computes it.
    """
    design = torch.as_tensor(design, dtype=torch.float64)
    d = 1.0 - torch.sqrt(design.sum(dim=1) / design.shape[1])
    return torch.sqrt(torch.exp(-(d**2) / kernel_width**2))


def lime_weights(design, y, *, kernel_width: float = 0.25, alpha: float = 1.0) -> torch.Tensor:
    """Superpixel weights: the kernel-weighted ridge regression of lime, in float64.

    This is the estimator of ``lime_base.LimeBase.explain_instance_with_data`` with
    lime's defaults for images (all features kept, ``model_regressor=None``):
    ``sklearn.linear_model.Ridge(alpha, fit_intercept=True)`` fitted with
    ``sample_weight = lime_kernel(design)``. It is solved here with the same
    algebra as scikit-learn's Cholesky solver (weighted centring, rows scaled by
    the square root of the weights, ``(XᵀX + αI) w = Xᵀy``) in PyTorch, which
    follows ``torch.set_num_threads`` and avoids an oversubscribed BLAS thread
    pool; ``tests/lib/test_explainers_crosscheck.py`` checks it against scikit-learn.

    Parameters
    ----------
    design : array-like
        ``(S, F)`` binary samples, row 0 all ones.
    y : array-like
        ``(S,)`` explained output of each sample.
    kernel_width, alpha : float
        Kernel width and ridge penalty.

    Returns
    -------
    torch.Tensor
        ``(F,)`` float64 regression coefficients.
    """
    x = torch.as_tensor(design, dtype=torch.float64)
    y = torch.as_tensor(y, dtype=torch.float64)
    sw = lime_kernel(x, kernel_width)
    x_off = (sw @ x) / sw.sum()
    y_off = (sw @ y) / sw.sum()
    root = sw.sqrt()
    xs = (x - x_off) * root[:, None]
    ys = (y - y_off) * root
    gram = xs.T @ xs
    gram.diagonal().add_(alpha)
    return torch.linalg.solve(gram, xs.T @ ys)


@dataclass(frozen=True)
class Segmentation:
    """One of LIME's named segmentations: its function, the paper's parameters and sample count."""

    function: Callable[..., np.ndarray]
    defaults: Mapping[str, float]
    """The paper's parameters of the segmentation (Huber et al. §3.5)."""
    checks: Mapping[str, Callable[[str, object], object]]
    """A validator per parameter: ``check(name, value)`` returns the value or raises ValueError."""
    n_samples: int
    """The paper's number of samples with this segmentation."""
    label: str
    bf16_validated: bool
    """Whether bf16 maps kept Spearman >= 0.99 with float32 maps on every trained agent
    (data/benchmarks/bf16_decision.json): not so for Felzenszwalb (0.979 on a DQN agent)."""


_positive = functools.partial(check_float, low=0.0, low_open=True)
_non_negative = functools.partial(check_float, low=0.0)

SEGMENTATIONS: Mapping[str, Segmentation] = MappingProxyType({
    "slic": Segmentation(slic_segments, MappingProxyType({"n_segments": 200, "compactness": 10.0, "sigma": 0.25}),
                         MappingProxyType({"n_segments": functools.partial(check_int, minimum=1), "compactness": _positive,
                                           "sigma": _non_negative}), 2000, "LIME (SLIC)", True),
    "quickshift": Segmentation(quickshift_segments, MappingProxyType({"kernel_size": 1.0, "max_dist": 2.0, "ratio": 0.0}),
                               MappingProxyType({"kernel_size": _positive, "max_dist": _positive,
                                                 "ratio": functools.partial(check_float, low=0.0, high=1.0)}),
                               1500, "LIME (quickshift)", True),
    "felzenszwalb": Segmentation(felzenszwalb_segments, MappingProxyType({"scale": 21.0, "sigma": 0.5, "min_size": 4}),
                                 MappingProxyType({"scale": _positive, "sigma": _non_negative,
                                                   "min_size": functools.partial(check_int, minimum=0)}),
                                 1000, "LIME (Felzenszwalb)", False),
})
"""LIME's three segmentations of Huber et al. (their registry presets are ``lime_<name>``)."""


class Lime(PerturbationExplainer):
    """LIME on superpixels of a named segmentation (the paper's three) or of any segmentation function.

    Stages (Ribeiro et al. 2016, ``lime.lime_image``; Huber et al. 2021, §3.5):

    1. Segment each state (``segmentation``; a per-state loop), relabelled ``0 … F−1``.
    2. Draw ``n_samples`` uniform random binary vectors over the superpixels
       (row 0 all ones) from ``seed``.
    3. For every sample, set the "off" superpixels to ``hide_colour`` in all stacked
       frames and evaluate the explained scalar (batched forward passes).
    4. Fit a weighted ridge regression (``alpha``, with intercept) of the outputs on
       the binary vectors, weights ``sqrt(exp(−d² / kernel_width²))``, ``d`` the
       cosine distance to all-ones (:func:`lime_weights`).
    5. Each pixel gets its superpixel's coefficient (negative weights included:
       the paper's "ranked mask").

    The registry's ``lime_slic``, ``lime_quickshift`` and ``lime_felzenszwalb`` are this class with
    ``segmentation`` fixed; their defaults are the paper's.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent to explain.
    segmentation : {"slic", "quickshift", "felzenszwalb"} or callable, optional
        A named segmentation of :data:`SEGMENTATIONS` (default ``"slic"``), or a function mapping one
        state as an ``(H, W, C)`` float64 array to ``(H, W)`` integer labels.
    n_segments, compactness, sigma : optional
        SLIC's parameters (paper: 200, 10.0, 0.25; :func:`slic_segments`). ``sigma`` is also
        Felzenszwalb's pre-smoothing (paper: 0.5).
    kernel_size, max_dist, ratio : optional
        Quickshift's parameters (paper: 1, 2.0, 0.0; :func:`quickshift_segments`).
    scale, min_size : optional
        Felzenszwalb's parameters (paper: 21.0, 4; :func:`felzenszwalb_segments`).
    n_samples : int, optional
        Samples per state, row 0 included (default: the paper's for the segmentation, 2000 SLIC,
        1500 quickshift, 1000 Felzenszwalb; 1000 for a segmentation function).
    hide_colour : float, optional
        Value of hidden superpixels (default 0.0, black).
    kernel_width : float, optional
        Width of the exponential kernel (default 0.25, lime's default for images).
    alpha : float, optional
        Ridge regularisation (default 1.0, lime's default).
    seed : int, optional
        Seed of the samples (default 0).
    output : str, optional
        The explained scalar (default: ``q`` or ``logits``, the paper's raw Q-values).
    batch_size, precision
        See :class:`~saliency_lib.explainers.Explainer`.

    Raises
    ------
    ValueError
        An unknown segmentation, a parameter of another segmentation than the chosen one, or an
        invalid value.

    Notes
    -----
    * The paper's code draws the samples from NumPy's global RNG and predicts in
      batches of 10. Here every state's samples come from a fresh
      :class:`torch.Generator` seeded with ``seed``, drawn feature by feature, so a
      state's map does not depend on the other states of the batch; all states'
      perturbed inputs are evaluated in batches of ``batch_size``.
    * The regression is lime's ``Ridge(alpha=1, fit_intercept=True)`` with sample
      weights, solved with scikit-learn's algebra in PyTorch (:func:`lime_weights`;
      equal to scikit-learn to 1e-9 in the tests), which avoids a BLAS thread pool
      that oversubscribes busy CPUs.
    * ``num_features`` and ``positive_only`` of lime only shape its visual mask,
      not the weights, and have no counterpart here.
    * The segmentations run on the 4 stacked frames as channels. SLIC uses the scikit-image
      ≥ 0.19 interface (``channel_axis=-1``) with ``start_label=0`` as the paper's scikit-image
      0.17 (and lime) assumed; later releases changed SLIC's implementation, so superpixels may
      differ slightly from the paper's for the same parameters (not verified against 0.17).
      Quickshift runs with ``convert2lab=False`` as in the paper; Felzenszwalb segments the
      frames jointly (Euclidean distance over channels).
    * Forward passes: 1 clean + ``n_samples`` per state.

    References
    ----------
    .. [1] Ribeiro, M. T., Singh, S., & Guestrin, C. (2016). "Why should I trust
       you?": Explaining the predictions of any classifier. KDD.
    .. [2] Huber, T., Limmer, B., & André, E. (2022). Benchmarking perturbation-based
       saliency maps for explaining Atari agents. Frontiers in AI 5:903875.
    """

    name = "lime"
    label = "LIME"
    labels = MappingProxyType({f"lime_{k}": s.label for k, s in SEGMENTATIONS.items()})
    _uses_clean_readout = False
    supported_outputs = ("q", "advantage", "logits", "probs", "value")
    reference = "Ribeiro et al. 2016 (KDD); Huber et al. 2022 (Frontiers in AI 5:903875), §3.5"

    def __init__(
        self,
        agent: Agent,
        *,
        segmentation: str | Callable[[np.ndarray], np.ndarray] = "slic",
        n_segments: int | None = None,
        compactness: float | None = None,
        sigma: float | None = None,
        kernel_size: float | None = None,
        max_dist: float | None = None,
        ratio: float | None = None,
        scale: float | None = None,
        min_size: int | None = None,
        n_samples: int | None = None,
        hide_colour: float = 0.0,
        kernel_width: float = 0.25,
        alpha: float = 1.0,
        seed: int = 0,
        output: str | None = None,
        batch_size: int | None = None,
        precision: str | None = None,
    ):
        given = {k: v for k, v in dict(n_segments=n_segments, compactness=compactness, sigma=sigma,
                                        kernel_size=kernel_size, max_dist=max_dist, ratio=ratio, scale=scale,
                                        min_size=min_size).items() if v is not None}
        if isinstance(segmentation, str):
            if segmentation not in SEGMENTATIONS:
                raise ValueError(f"unknown segmentation {segmentation!r}; valid segmentations are: "
                                 f"{', '.join(SEGMENTATIONS)}, or a function of one (H, W, C) state")
            seg = SEGMENTATIONS[segmentation]
            foreign = sorted(set(given) - set(seg.defaults))
            if foreign:
                raise ValueError(f"{', '.join(foreign)} {'is not a parameter' if len(foreign) == 1 else 'are not parameters'} "
                                 f"of the {segmentation} segmentation; its parameters are: {', '.join(seg.defaults)}")
            params = {k: seg.checks[k](k, given.get(k, d)) for k, d in seg.defaults.items()}
            self._segment_fn = functools.partial(seg.function, **params)
            self._named = segmentation
            default_samples = seg.n_samples
        elif callable(segmentation):
            if given:
                raise ValueError(f"{', '.join(sorted(given))}: parameters of a named segmentation; a segmentation "
                                 "function takes its own parameters (functools.partial)")
            params, self._segment_fn, self._named, default_samples = {}, segmentation, None, 1000
        else:
            raise ValueError(f"segmentation must be one of {', '.join(SEGMENTATIONS)} or a callable mapping an "
                             f"(H, W, C) array to (H, W) labels, got {segmentation!r}")
        super().__init__(agent, output=output, batch_size=batch_size, precision=precision)
        self.segmentation = self._segment_fn
        self.n_samples = check_int("n_samples", default_samples if n_samples is None else n_samples, minimum=2,
                                   hint="; LIME needs the unperturbed sample and at least one perturbed one")
        self.hide_colour = check_float("hide_colour", hide_colour)
        self.kernel_width = check_float("kernel_width", kernel_width, low=0.0, low_open=True)
        self.alpha = check_float("alpha", alpha, low=0.0, low_open=True, hint="; alpha is the ridge penalty")
        self.seed = check_int("seed", seed, minimum=0)
        self._remember(n_samples=self.n_samples, hide_colour=self.hide_colour, kernel_width=self.kernel_width, alpha=self.alpha,
                       seed=self.seed, **params)
        if self._named is None:
            self._remember(segmentation=segmentation)
        else:  # rebuilt with the same segmentation (for_agent), not shown in the config: the method name says it
            self._init_kwargs["segmentation"] = self._named

    @property
    def method_name(self) -> str:
        """``"lime_<segmentation>"`` for a named segmentation, else ``"lime"``."""
        return "lime" if self._named is None else f"lime_{self._named}"

    def _bf16_ok(self) -> bool:
        return True if self._named is None else SEGMENTATIONS[self._named].bf16_validated

    def segment(self, states: torch.Tensor) -> torch.Tensor:
        """Superpixel labels ``(N, H, W)`` int64, relabelled ``0 … F_i − 1`` per state."""
        h, w = self._hw
        images = states.detach().permute(0, 2, 3, 1).to("cpu", torch.float64).numpy()
        out = []
        for img in images:  # scikit-image segments one image at a time
            seg = np.asarray(self.segmentation(img))
            if seg.shape != (h, w) or not np.issubdtype(seg.dtype, np.integer):
                raise ValueError(f"segmentation must return ({h}, {w}) integer labels, "
                                 f"got {seg.dtype} array of shape {seg.shape}")
            out.append(np.unique(seg, return_inverse=True)[1].reshape(h, w))
        return torch.as_tensor(np.stack(out), dtype=torch.long)

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        h, w = self._hw
        segments = self.segment(x)
        n_features = (segments.flatten(1).amax(dim=1) + 1).tolist()
        design = lime_design(self.n_samples, max(n_features), torch.Generator().manual_seed(self.seed))
        design_dev = design.to(x.device, x.dtype)
        seg_dev = segments.to(x.device)
        seg_flat = seg_dev.flatten(1)
        hide = self.hide_colour

        def make_rows(state_idx, pert_idx, rows):
            for i, run, perts in self._state_runs(state_idx, pert_idx):
                keep = design_dev[perts].index_select(1, seg_flat[i]).view(-1, 1, h, w)  # superpixel on/off → pixels
                torch.mul(x[i], keep, out=rows[run])
                if hide != 0.0:
                    rows[run].add_(hide * (1.0 - keep))
            return rows

        vec = self._perturbed_readouts(x, hidden, self.n_samples, make_rows, batch_size)
        y = self._select(vec, actions).double().cpu()  # (N, S)
        maps = torch.empty(len(x), h, w, dtype=torch.float32)
        for i, f in enumerate(n_features):  # one small ridge solve per state
            coef = lime_weights(design[:, :f], y[i], kernel_width=self.kernel_width, alpha=self.alpha)
            maps[i] = coef.float()[segments[i]]
        return ExplainResult(maps.to(x.device), self.n_samples, segments=seg_dev)
