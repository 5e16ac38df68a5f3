"""A control for the sanity checks: smoothed noise with the spatial statistics of real maps.

Binder et al. (2023) show that a map of pure noise passes the cascading randomisation test:
the test asks whether the map *changes* when the weights are randomised, and fresh noise always
changes. :class:`NoiseMap` is such a map, made to look like a real one: it has the value
distribution and the spatial smoothness (power spectrum) of a set of reference maps (a real
method's maps on the study's states), so that a similarity measure cannot tell it apart by
its texture, and it depends on the agent only through a seed.

Stages (an amplitude-adjusted Fourier-transform surrogate, Theiler et al. 1992):

1. :meth:`MapStatistics.from_maps`: the root-mean-square amplitude spectrum of the reference
   maps (each minus its mean) and the quantiles of their pooled values;
2. per state, white Gaussian noise from a generator seeded with ``(seed, digest of the
   agent's weights, digest of the state)``, filtered by that amplitude spectrum (so its
   expected power spectrum, hence its autocorrelation, is the references');
3. the filtered field's ranks mapped onto the reference quantiles, so its values follow the
   references' distribution.

With ``weight_dependent=True`` (default) any change of the weights, as in every level of the
cascade, draws new noise, as a real explainer's output would change: this is the noise that
passes the cascade. ``weight_dependent=False`` draws the same noise for every model (it then
fails the cascade, like :class:`RandomMap`, whose draw depends on the seed alone). The map
never depends on what the agent computes, so it is an explainer in form only.

References
----------
.. [1] Binder, A., Weber, L., Lapuschkin, S., Montavon, G., Müller, K.-R., & Samek, W. (2023).
   Shortcomings of top-down randomization-based sanity checks for evaluations of deep neural
   network explanations. CVPR.
.. [2] Theiler, J., Eubank, S., Longtin, A., Galdrikian, B., & Farmer, J. D. (1992). Testing for
   nonlinearity in time series: the method of surrogate data. Physica D 58, 77–94.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch

from ..agents.base import Agent
from ..validation import check_int
from ._base import Explainer, ExplainResult

__all__ = ["MapStatistics", "NoiseMap", "noise_like"]

#: Quantiles kept of the reference values.
_N_QUANTILES = 1001


@dataclass(frozen=True, repr=False)
class MapStatistics:
    """The spatial statistics that :class:`NoiseMap` copies.

    Attributes
    ----------
    amplitude : ndarray, shape (H, W)
        Root-mean-square ``|FFT(map − mean(map))|`` over the reference maps.
    quantiles : ndarray, shape (1001,)
        Quantiles 0, 0.001, …, 1 of the reference maps' pooled values.
    n_maps : int
        How many reference maps they come from.
    """

    amplitude: np.ndarray
    quantiles: np.ndarray
    n_maps: int

    @classmethod
    def from_maps(cls, maps) -> MapStatistics:
        """Statistics of reference maps ``(N, H, W)`` (array, tensor or :class:`Attribution`)."""
        if hasattr(maps, "maps"):
            maps = maps.maps
        if isinstance(maps, torch.Tensor):
            maps = maps.detach().cpu().numpy()
        a = np.asarray(maps, dtype=np.float64)
        if a.ndim == 2:
            a = a[None]
        if a.ndim != 3 or a.shape[0] == 0 or min(a.shape[1:]) < 2:
            raise ValueError(f"maps must be a non-empty (N, H, W) stack of reference maps, got shape {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError("maps contain NaN or infinite values")
        centred = a - a.mean(axis=(1, 2), keepdims=True)
        amp = np.sqrt((np.abs(np.fft.fft2(centred)) ** 2).mean(axis=0))
        q = np.quantile(a.reshape(-1), np.linspace(0.0, 1.0, _N_QUANTILES))
        for arr in (amp, q):
            arr.setflags(write=False)
        return cls(amp, q, int(a.shape[0]))

    @property
    def shape(self) -> tuple[int, int]:
        """The ``(H, W)`` shape of the reference maps."""
        return tuple(self.amplitude.shape)

    def __repr__(self) -> str:
        return (f"MapStatistics(shape={self.shape}, n_maps={self.n_maps}, "
                f"range=[{self.quantiles[0]:.4g}, {self.quantiles[-1]:.4g}])")


def noise_like(stats: MapStatistics, rng: np.random.Generator) -> np.ndarray:
    """One ``(H, W)`` noise map with ``stats``' power spectrum and value distribution (module stages 2–3)."""
    h, w = stats.shape
    field = np.fft.ifft2(np.fft.fft2(rng.standard_normal((h, w))) * stats.amplitude).real
    ranks = np.empty(h * w)
    ranks[np.argsort(field.reshape(-1), kind="stable")] = np.arange(h * w)
    levels = np.linspace(0.0, 1.0, stats.quantiles.size)
    return np.interp(ranks / max(h * w - 1, 1), levels, stats.quantiles).reshape(h, w)


def _digest(arrays) -> int:
    h = hashlib.blake2b(digest_size=8)
    for t in arrays:
        h.update(np.ascontiguousarray(t.detach().cpu().float().numpy()).tobytes())
    return int.from_bytes(h.digest(), "little")


class NoiseMap(Explainer):
    """Smoothed noise with the statistics of real maps: the noise control of the sanity checks.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent (for the input size, the recorded target and, with ``weight_dependent``, the seed).
    statistics : MapStatistics
        The statistics to copy, e.g. ``MapStatistics.from_maps(Occlusion(agent).attribute(states))``;
        their shape must be the agent's frame size.
    seed : int, optional
        Default 0.
    weight_dependent : bool, optional
        Draw new noise whenever the agent's weights change (default True; module notes).
    batch_size, precision
        Accepted for a uniform interface; unused (``precision`` must be ``"fp32"``).

    Notes
    -----
    Forward passes: 1 per state, to record the greedy action as ``target``. The map of a state
    depends on the seed, the state's values and (with ``weight_dependent``) the weights, not on
    its position in the batch.
    """

    name = "noise_map"
    label = "Noise map (control)"
    supported_outputs = ()
    _uses_clean_readout = False
    reference = "Binder et al. 2023 (CVPR), noise passes the cascading randomisation test"

    def __init__(self, agent: Agent, *, statistics: MapStatistics, seed: int = 0, weight_dependent: bool = True,
                 batch_size: int | None = None, precision: str | None = None):
        super().__init__(agent, batch_size=batch_size, precision=precision)
        if not isinstance(statistics, MapStatistics):
            raise TypeError(f"statistics must be a MapStatistics (MapStatistics.from_maps(reference_maps)), "
                            f"got {type(statistics).__name__}")
        if statistics.shape != self._hw:
            raise ValueError(f"statistics are of maps of shape {statistics.shape}, the agent's frames are {self._hw}; "
                             "take them from maps of this agent's preset")
        if not isinstance(weight_dependent, (bool, np.bool_)):
            raise ValueError(f"weight_dependent must be True or False, got {weight_dependent!r}")
        self.statistics = statistics
        self.seed = check_int("seed", seed, minimum=0)
        self.weight_dependent = bool(weight_dependent)
        self._init_kwargs.pop("output")
        self._remember(statistics=statistics, seed=self.seed, weight_dependent=self.weight_dependent)

    def _resolve_output(self, output):
        return "none"

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        net = self.agent.net
        weights = _digest([*net.parameters(), *net.buffers()]) if self.weight_dependent else 0
        maps = [noise_like(self.statistics, np.random.default_rng([self.seed, weights, _digest([row])])) for row in x]
        return ExplainResult(torch.as_tensor(np.stack(maps), dtype=torch.float32, device=x.device), 0)
