"""Gradient baselines through Captum: vanilla gradient, Integrated Gradients and Grad-CAM.

Captum is an optional dependency (``pip install saliency-lib[captum]``); it is
imported when a gradient method is constructed.
"""

from __future__ import annotations

import torch
from torch import nn

from ..agents.base import Agent
from ..validation import check_choice, check_float, check_int
from ._base import Explainer, ExplainResult
from ._masks import bilinear_resize

__all__ = ["Gradient", "IntegratedGradients", "GradCAM", "CHANNEL_REDUCTIONS"]

#: How the per-channel (stacked-frame) attributions become one map.
CHANNEL_REDUCTIONS = ("sum_abs", "max_abs", "sum")


def _captum_attr():
    try:
        import captum.attr as attr
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("the gradient explainers need Captum; install it with: pip install saliency-lib[captum]") from e
    return attr


class _CaptumExplainer(Explainer):
    """Shared plumbing: the forward function Captum differentiates, targets and channel reduction."""

    supported_outputs = ("q", "advantage", "logits", "probs", "value")
    _uses_clean_readout = False

    def __init__(self, agent, *, output, batch_size, precision):
        super().__init__(agent, output=output, batch_size=batch_size, precision=precision)
        self._attr = _captum_attr()

    def _forward_fn(self, x: torch.Tensor, *hidden: torch.Tensor) -> torch.Tensor:
        return self._readout(self._forward(x, tuple(hidden) if hidden else None))

    def _captum_target(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(actions) if self.output == "value" else actions

    @staticmethod
    def _extra_args(hidden, rows: slice):
        return None if hidden is None else tuple(h[rows] for h in hidden)

    def _reduce(self, attr: torch.Tensor) -> torch.Tensor:
        if self.channel_reduce == "sum_abs":
            return attr.abs().sum(dim=1)
        if self.channel_reduce == "max_abs":
            return attr.abs().amax(dim=1)
        return attr.sum(dim=1)

    def _init_reduce(self, channel_reduce: str) -> None:
        self.channel_reduce = check_choice("channel_reduce", channel_reduce, CHANNEL_REDUCTIONS)
        self._remember(channel_reduce=self.channel_reduce)


class Gradient(_CaptumExplainer):
    """Vanilla gradient saliency (Simonyan et al. 2014) via ``captum.attr.Saliency``.

    Stages:

    1. ``∂f_a / ∂I`` for every pixel of every stacked frame (one forward and one
       backward pass per state, states in chunks of ``batch_size``).
    2. Reduce the frame axis: ``channel_reduce="sum_abs"`` (default) sums the
       absolute gradients over the frames; ``"max_abs"`` takes their maximum
       (Simonyan's choice for colour channels); ``"sum"`` keeps the sign.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent to explain.
    channel_reduce : {"sum_abs", "max_abs", "sum"}, optional
        Default ``"sum_abs"``.
    output : str, optional
        The explained scalar (default: ``q`` or ``logits``). ``all`` has no gradient.
    batch_size, precision
        See :class:`~saliency_lib.explainers.Explainer` (``precision``: ``"fp32"`` only).

    Notes
    -----
    Not one of Huber et al.'s methods; a baseline. Forward passes: 1 clean + 1 per state.

    References
    ----------
    .. [1] Simonyan, K., Vedaldi, A., & Zisserman, A. (2014). Deep inside
       convolutional networks: visualising image classification models and
       saliency maps. ICLR workshop.
    """

    name = "gradient"
    label = "Gradient"
    reference = "Simonyan et al. 2014 (ICLR workshop)"

    def __init__(self, agent: Agent, *, channel_reduce: str = "sum_abs", output: str | None = None, batch_size: int | None = None,
                 precision: str | None = None):
        super().__init__(agent, output=output, batch_size=batch_size, precision=precision)
        self._init_reduce(channel_reduce)

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        method = self._attr.Saliency(self._forward_fn)
        target = self._captum_target(actions)
        parts = []
        for s in range(0, len(x), batch_size):
            rows = slice(s, s + batch_size)
            inp = x[rows].detach().requires_grad_()
            a = method.attribute(inp, target=target[rows], abs=False, additional_forward_args=self._extra_args(hidden, rows))
            parts.append(self._reduce(a.detach()))
        return ExplainResult(torch.cat(parts), 1)


class IntegratedGradients(_CaptumExplainer):
    """Integrated Gradients (Sundararajan et al. 2017) via ``captum.attr.IntegratedGradients``.

    Stages:

    1. ``(I − I₀) ⊙ ∫₀¹ ∂f_a(I₀ + α(I − I₀)) / ∂I dα`` with the black baseline
       ``I₀ = baseline`` (default 0), approximated with ``n_steps`` Gauss-Legendre
       points (Captum's default rule); ``batch_size`` rows per forward call.
    2. Reduce the frame axis as :class:`Gradient` (default: sum of absolute values).

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent to explain.
    n_steps : int, optional
        Integration points (default 50).
    baseline : float, optional
        Constant baseline image (default 0.0, black, as Occlusion and RISE).
    channel_reduce : {"sum_abs", "max_abs", "sum"}, optional
        Default ``"sum_abs"``; ``"sum"`` keeps completeness (the map sums to
        ``f(I) − f(I₀)`` up to the integration error).
    output : str, optional
        The explained scalar (default: ``q`` or ``logits``).
    batch_size, precision
        See :class:`~saliency_lib.explainers.Explainer` (``precision``: ``"fp32"`` only).

    Notes
    -----
    Not one of Huber et al.'s methods; a baseline. Captum adds the partial sums of
    each chunk of integration steps, so maps for different ``batch_size`` agree to
    float32 rounding, not bit for bit. Forward passes: 1 clean + ``n_steps`` per state.

    References
    ----------
    .. [1] Sundararajan, M., Taly, A., & Yan, Q. (2017). Axiomatic attribution for
       deep networks. ICML.
    """

    name = "integrated_gradients"
    label = "Integrated Gradients"
    reference = "Sundararajan et al. 2017 (ICML)"

    def __init__(
        self,
        agent: Agent,
        *,
        n_steps: int = 50,
        baseline: float = 0.0,
        channel_reduce: str = "sum_abs",
        output: str | None = None,
        batch_size: int | None = None,
        precision: str | None = None,
    ):
        super().__init__(agent, output=output, batch_size=batch_size, precision=precision)
        self.n_steps = check_int("n_steps", n_steps, minimum=1)
        self.baseline = check_float("baseline", baseline)
        self._remember(n_steps=self.n_steps, baseline=self.baseline)
        self._init_reduce(channel_reduce)

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        method = self._attr.IntegratedGradients(self._forward_fn)
        target = self._captum_target(actions)
        parts = []
        for s in range(0, len(x), batch_size):
            rows = slice(s, s + batch_size)
            a = method.attribute(
                x[rows], baselines=self.baseline, target=target[rows], additional_forward_args=self._extra_args(hidden, rows),
                n_steps=self.n_steps, internal_batch_size=batch_size,
            )
            parts.append(self._reduce(a.detach()))
        return ExplainResult(torch.cat(parts), self.n_steps)


class GradCAM(_CaptumExplainer):
    """Grad-CAM (Selvaraju et al. 2017) via ``captum.attr.LayerGradCam``.

    Stages:

    1. Activations ``A`` of a convolutional ``layer`` and the gradients of ``f_a``
       with respect to them; channel weights = spatial mean of the gradients.
    2. ``ReLU(Σ_k w_k A_k)`` on the layer's grid (``Attribution.coarse``).
    3. Bilinear upsampling to the input.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent to explain.
    layer : str, optional
        Dotted name of the module inside ``agent.net`` (e.g. ``"conv3"``). Default:
        ``conv3`` if the network has one (the last convolution of
        :class:`~saliency_lib.agents.DQNNet` and the last backbone convolution of
        :class:`~saliency_lib.agents.MaskA3CNet`), else the last ``nn.Conv2d``.
    output : str, optional
        The explained scalar (default: ``q`` or ``logits``).
    batch_size, precision
        See :class:`~saliency_lib.explainers.Explainer` (``precision``: ``"fp32"`` only).

    Notes
    -----
    The layer output is taken before the following ReLU (Captum's convention when
    a convolution module is given). Not one of Huber et al.'s methods; a baseline.
    Forward passes: 1 clean + 1 per state.

    References
    ----------
    .. [1] Selvaraju, R. R., Cogswell, M., Das, A., Vedantam, R., Parikh, D., &
       Batra, D. (2017). Grad-CAM: Visual explanations from deep networks via
       gradient-based localization. ICCV.
    """

    name = "gradcam"
    label = "Grad-CAM"
    reference = "Selvaraju et al. 2017 (ICCV)"

    def __init__(self, agent: Agent, *, layer: str | None = None, output: str | None = None, batch_size: int | None = None,
                 precision: str | None = None):
        super().__init__(agent, output=output, batch_size=batch_size, precision=precision)
        self.layer_name, self.layer = self._find_layer(layer)
        self._remember(layer=self.layer_name)

    def _find_layer(self, layer: str | None) -> tuple[str, nn.Module]:
        net = self.agent.net
        convs = [(n, m) for n, m in net.named_modules() if isinstance(m, nn.Conv2d)]
        if layer is None:
            if isinstance(getattr(net, "conv3", None), nn.Conv2d):
                return "conv3", net.conv3
            if not convs:
                raise ValueError(f"Grad-CAM needs a convolutional layer, but {type(net).__name__} has no nn.Conv2d; "
                                 "pass layer= the name of a module with a spatial output")
            return convs[-1]
        if not isinstance(layer, str):
            raise ValueError(f"layer must be the dotted name of a module of {type(net).__name__}, got {layer!r}")
        try:
            return layer, net.get_submodule(layer)
        except AttributeError:
            names = ", ".join(n for n, _ in convs) or "none"
            raise ValueError(f"unknown layer {layer!r} in {type(net).__name__}; its convolutional layers are: {names}") from None

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        method = self._attr.LayerGradCam(self._forward_fn, self.layer)
        target = self._captum_target(actions)
        parts = []
        for s in range(0, len(x), batch_size):
            rows = slice(s, s + batch_size)
            a = method.attribute(x[rows], target=target[rows], additional_forward_args=self._extra_args(hidden, rows),
                                 relu_attributions=True)
            parts.append(a.detach()[:, 0])
        coarse = torch.cat(parts)
        return ExplainResult(bilinear_resize(coarse, self._hw), 1, coarse=coarse)
