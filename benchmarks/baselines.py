"""The independent implementations our explainers are timed against: Captum and the ``lime`` package.

Shared by ``benchmarks/explainers.py`` (one state, a random network) and
``benchmarks/study_cost.py`` (the shipped agent, real states, the same run as the
naive floor and the fast path). Each function returns a zero-argument callable that
computes one attribution per state of ``x`` at one setting (Captum's
``perturbations_per_eval`` or the ``lime`` package's ``batch_size``); the scripts
time it with their own clocks.

The settings match ours: Captum's Occlusion slides a ``4×2×2`` window with stride
``(4, 2, 2)`` and a black baseline (Huber et al.'s 2×2 patches across the four
frames, the same 1764 perturbations plus the clean pass); ``captum.attr.Lime``,
``captum.attr.KernelShap`` and ``lime.lime_image`` take our SLIC segmentation and our
number of samples, so they pay the same forward passes as ``lime_slic``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

#: Captum's ``perturbations_per_eval`` tried (the best is reported) and the ``lime`` package's batch sizes
#: (10 is its default and the paper's setting).
CAPTUM_CHUNKS = (64, 128, 256, 512)
LIME_BATCHES = (10, 256)


def _targets(target: int | Sequence[int], n: int) -> list[int]:
    return [int(target)] * n if isinstance(target, int) else [int(t) for t in target]


def captum_occlusion(agent, x: torch.Tensor, target, ppe: int) -> Callable[[], None]:
    """``captum.attr.Occlusion`` on the Q-values, 2×2 patches across the frames, black baseline."""
    from captum.attr import Occlusion

    occ = Occlusion(lambda inp: agent(inp)["q"])
    tg = _targets(target, x.shape[0])

    def run() -> None:
        with torch.no_grad():
            occ.attribute(x, sliding_window_shapes=(x.shape[1], 2, 2), strides=(x.shape[1], 2, 2), baselines=0.0,
                          target=tg, perturbations_per_eval=ppe)
    return run


def _lime_similarity(original_input, perturbed_input, perturbed_interpretable_input, **kwargs):
    """LIME's kernel on the binary interpretable sample (cosine distance to all-ones, width 0.25)."""
    z = perturbed_interpretable_input.float()
    d = 1.0 - torch.sqrt(z.sum() / z.numel())
    return torch.sqrt(torch.exp(-(d**2) / 0.25**2))


def captum_surrogate(kind: str, agent, x: torch.Tensor, target, segments: torch.Tensor, n_samples: int,
                     ppe: int) -> Callable[[], None]:
    """``captum.attr.Lime`` (ridge, LIME's kernel) or ``captum.attr.KernelShap`` with our segments as ``feature_mask``.

    ``segments`` is ``(N, H, W)``, one segmentation per state; Captum explains one state per call
    (its feature mask and samples are per input), so the callable loops over the states.
    """
    from captum._utils.models.linear_model import SkLearnRidge
    from captum.attr import KernelShap, Lime

    fwd = lambda inp: agent(inp)["q"]  # noqa: E731
    if kind == "Lime":
        m = Lime(fwd, interpretable_model=SkLearnRidge(alpha=1.0), similarity_func=_lime_similarity)
    elif kind == "KernelShap":
        m = KernelShap(fwd)
    else:
        raise ValueError(f"unknown Captum surrogate {kind!r}; expected 'Lime' or 'KernelShap'")
    tg = _targets(target, x.shape[0])
    masks = [segments[i][None, None].expand(1, x.shape[1], -1, -1).contiguous() for i in range(x.shape[0])]

    def run() -> None:
        with torch.no_grad():
            for i in range(x.shape[0]):
                m.attribute(x[i: i + 1], baselines=0.0, target=tg[i], feature_mask=masks[i], n_samples=n_samples,
                            perturbations_per_eval=ppe)
    return run


def lime_package(agent, x: torch.Tensor, target, segments: np.ndarray, n_samples: int, batch_size: int) -> Callable[[], None]:
    """``lime.lime_image.LimeImageExplainer`` with our segmentation (``(N, H, W)``) and a black hide colour."""
    from lime import lime_image
    from lime.lime_image import LimeImageExplainer

    # lime 0.2.0.1 wraps its sampling loop in a tqdm bar with no switch to turn it off; drop the bar only
    lime_image.tqdm = lambda iterable, *args, **kwargs: iterable
    tg = _targets(target, x.shape[0])
    imgs = [x[i].permute(1, 2, 0).double().numpy() for i in range(x.shape[0])]

    def classifier(batch: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return agent(torch.as_tensor(batch, dtype=torch.float32).permute(0, 3, 1, 2))["q"].numpy()

    def run() -> None:
        for img, t, seg in zip(imgs, tg, segments):
            LimeImageExplainer(random_state=0).explain_instance(
                img, classifier, labels=(t,), top_labels=None, hide_color=0, num_samples=n_samples,
                batch_size=batch_size, segmentation_fn=lambda _, seg=seg: seg)
    return run
