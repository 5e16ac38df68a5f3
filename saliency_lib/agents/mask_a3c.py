"""Mask-Attention actor-critic network of Itaya et al. (2021), in the official layout.

Backbone: conv1 (1→32, 5×5, pad 2) → max-pool 2 → ReLU → conv2 (32→32, 3×3) → pool → ReLU →
conv3 (32→64, 3×3) → pool → ReLU → ConvLSTM (64→64, 3×3, gates i, f, o, g) → F (64×10×10).
Each branch b ∈ {policy, value}: G_b = ReLU(conv1×1(F) → 32 ch); mask M_b = sigmoid(conv1×1(F) → 1 ch);
head Linear(flatten(G_b ⊙ M_b)). Variants put masks on no branch ("none", plain A3C),
"policy", "value" or both ("double").

Parameter names match the released checkpoints (``conv1``, ``convlstm1.conv``, ``att_conv_a1``,
``a_conv``, ``actor_linear``, ``att_conv_c1``, ``c_conv``, ``critic_linear`` …), so the official
``*.dat`` state dicts load directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["max_pool2", "MaskA3CConfig", "MaskA3CNet", "ConvLSTMCell", "VARIANTS", "VARIANT_NAMES"]

VARIANTS = ("none", "policy", "value", "double")
VARIANT_NAMES = MappingProxyType({"none": "A3C (no mask)", "policy": "policy-mask A3C", "value": "value-mask A3C",
                                  "double": "Mask-A3C (both masks)"})
"""What the book, the score tables and the generated sentences call each variant (Itaya et al.'s
A3C, Policy Mask A3C, Value Mask A3C and Mask A3C), in the order of :data:`VARIANTS`."""


@dataclass(frozen=True)
class MaskA3CConfig:
    """Architecture of :class:`MaskA3CNet`.

    Attributes
    ----------
    n_actions : int
        Size of the minimal action set.
    variant : {"none", "policy", "value", "double"}
        Which branches carry a mask ("none" = the repository's plain A3C).
    convlstm : bool
        Use the ConvLSTM (all released runs do).
    """

    n_actions: int
    variant: str = "double"
    convlstm: bool = True

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown variant {self.variant!r}; valid variants are: {', '.join(VARIANTS)}")
        if self.n_actions < 1:
            raise ValueError(f"n_actions must be positive, got {self.n_actions}")

    @property
    def policy_mask(self) -> bool:
        """Whether the policy branch carries an attention mask."""
        return self.variant in ("policy", "double")

    @property
    def value_mask(self) -> bool:
        """Whether the value branch carries an attention mask."""
        return self.variant in ("value", "double")


class ConvLSTMCell(nn.Module):
    """One conv over concat[x, h] → 4·hidden channels, split as i, f, o, g; no peepholes."""

    def __init__(self, in_ch: int = 64, hidden: int = 64, kernel: int = 3):
        super().__init__()
        self.hidden = hidden
        self.conv = nn.Conv2d(in_ch + hidden, 4 * hidden, kernel, padding=kernel // 2)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        """The new state ``(h, c)`` after input ``x``, from the previous state ``state = (h, c)``."""
        h, c = state
        return self._update(self.conv(torch.cat([x, h], dim=1)), c)

    def _update(self, gates: torch.Tensor, c: torch.Tensor):
        i, f, o, g = torch.split(gates, self.hidden, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c

    def forward_shared(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        """:meth:`forward`, with the recurrent half of the gate conv computed once per run of equal rows of ``h``.

        The perturbed copies of one state share its recurrent state, so ``conv([x, h])`` splits
        into ``conv_x(x) + conv_h(h)`` and the second term (half of the cell's multiply-adds) is
        evaluated once per run of consecutive equal rows and broadcast. The same values as
        :meth:`forward` up to float rounding (the two halves are summed in another order);
        without repeated rows it is :meth:`forward`. For inference: explainers and metrics.
        """
        h, c = state
        n = h.shape[0]
        first = torch.ones(n, dtype=torch.bool, device=h.device)
        if n > 1:
            first[1:] = (h[1:] != h[:-1]).flatten(1).any(1)
        runs = int(first.sum())
        if runs == n:
            return self.forward(x, state)
        cin = x.shape[1]
        w, pad = self.conv.weight, self.conv.padding
        gh = F.conv2d(h[first], w[:, cin:], self.conv.bias, padding=pad)
        gates = F.conv2d(x, w[:, :cin], None, padding=pad) + gh[torch.cumsum(first, 0) - 1]
        return self._update(gates, c)



def max_pool2(x: torch.Tensor) -> torch.Tensor:
    """2×2 max-pooling, computed in channels-last layout; the result keeps the input's layout.

    The same values as ``F.max_pool2d(x, 2)`` (a maximum does no arithmetic), but PyTorch's
    CPU kernel for the standard layout was measured about 14× slower on (1, 32, 80, 80). On the
    official Breakout network, batched forward passes without gradients took 6.9–8.7 instead of
    8.9–11.8 ms per row (batches of 16 and 256, one busy core).

    A channels-last input (the trainer's network, batched play) gives a channels-last result:
    converting it back to the standard layout, and the next convolution converting it forward
    again, cost two copies per pooling, each way. Without them the trainer's backward pass took
    1.13–1.17 instead of 1.28–1.48 s per update (16 environments × 20 steps, bf16, one thread),
    with losses and gradients bit for bit the same (the convolutions run channels-last either
    way, because the trainer's weights are). A standard-layout input still gives a standard
    result, so inference on loaded agents is unchanged.
    """
    y = F.max_pool2d(x.contiguous(memory_format=torch.channels_last), 2)
    if x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        return y
    return y.contiguous()


class MaskA3CNet(nn.Module):
    """Actor-critic with mask attention. ``forward`` returns a dict of named outputs.

    Input ``(N, 1, 80, 80)`` normalised frames and the recurrent state ``(h, c)``, each
    ``(N, 64, 10, 10)`` (zeros when ``None``). Outputs: ``logits`` (N, A), ``value`` (N,),
    ``hidden`` (h', c'), and for masked branches ``policy_mask`` / ``value_mask`` (N, 10, 10)
    with their pre-sigmoid logits ``policy_att`` / ``value_att``.
    """

    #: Rows per forward call for explainers and metrics (:attr:`Agent.inference_batch`). The
    #: 80×80 activations of conv1 (32 channels) make a large batch spill out of the CPU caches:
    #: on one thread a forward pass cost 1.9 ms per row in batches of 16 against 3.8 ms in
    #: batches of 256 (official Breakout network, standard layout; both cores shared with
    #: training runs), and 1.39 against 2.68 ms in the channels-last layout the network now uses.
    inference_batch = 16

    def __init__(self, config: MaskA3CConfig):
        super().__init__()
        self.config = config
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        if config.convlstm:
            self.convlstm1 = ConvLSTMCell(64, 64, 3)
        self.a_conv = nn.Conv2d(64, 32, 1)
        self.c_conv = nn.Conv2d(64, 32, 1)
        if config.policy_mask:
            self.att_conv_a1 = nn.Conv2d(64, 1, 1)
        if config.value_mask:
            self.att_conv_c1 = nn.Conv2d(64, 1, 1)
        self.actor_linear = nn.Linear(3200, config.n_actions)
        self.critic_linear = nn.Linear(3200, 1)
        self.reset_parameters()
        # Channels-last conv weights, so that every forward pass runs in that layout (loading a state
        # dict copies into these tensors and keeps it). One thread, no gradient: 1.39 instead of
        # 2.68 ms per row in batches of 16 and 2.68 instead of 4.85 in batches of 256; RISE on 3
        # states of a3c-Breakout-double-s0 took 4.8 instead of 11.4 s. The outputs differ from
        # the standard layout's by float rounding (1e-7 here). The initial values are drawn before
        # the conversion, so a seed gives the same network as before.
        self.to(memory_format=torch.channels_last)

    def reset_parameters(self) -> None:
        """The official initialisation (Itaya et al. §1.5)."""
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                w = m.weight
                fan_in = w[0].numel()
                fan_out = w.shape[0] * (w[0, 0].numel() if w.dim() == 4 else 1)
                bound = math.sqrt(6.0 / (fan_in + fan_out))
                with torch.no_grad():
                    w.uniform_(-bound, bound)
                    if isinstance(m, nn.Conv2d):
                        w.mul_(math.sqrt(2.0))  # ReLU gain; conv biases keep PyTorch's default
                    else:
                        m.bias.zero_()
        with torch.no_grad():
            for lin, norm in ((self.actor_linear, 0.01), (self.critic_linear, 1.0)):
                w = torch.randn_like(lin.weight)
                lin.weight.copy_(w * norm / w.norm(dim=1, keepdim=True))
                lin.bias.zero_()

    def initial_hidden(self, n: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
        """The zero state ``(h, c)`` of the ConvLSTM for ``n`` states, each ``(n, 64, 10, 10)``."""
        z = torch.zeros(n, 64, 10, 10, device=device)
        return z, z.clone()

    def trunk(self, x: torch.Tensor, hidden=None):
        """The shared trunk: three conv + max-pool + ReLU stages, then the ConvLSTM if the net has one.

        Returns the features ``(N, 64, 10, 10)`` and the new recurrent state ``(h, c)`` (``None`` without
        a ConvLSTM; a ``hidden`` of ``None`` starts from the zero state).
        """
        x = F.relu(max_pool2(self.conv1(x)))
        x = F.relu(max_pool2(self.conv2(x)))
        x = F.relu(max_pool2(self.conv3(x)))
        if not self.config.convlstm:
            return x, None
        if hidden is None:
            hidden = self.initial_hidden(x.shape[0], x.device)
        h, c = self.convlstm1(x, hidden)
        return h, (h, c)

    def forward(self, x: torch.Tensor, hidden=None) -> dict[str, torch.Tensor]:
        """The outputs of the network on states ``x``: the trunk, then :meth:`heads`."""
        return self.heads(*self.trunk(x, hidden))

    def heads(self, feat: torch.Tensor, new_hidden=None) -> dict[str, torch.Tensor]:
        """Everything after the trunk: the branch convs, the masks, the policy and value heads.

        Public so that a staged forward pass (the randomisation cascade) can reuse the trunk's
        output and run only this part, with the same code as :meth:`forward`.
        """
        out: dict = {"hidden": new_hidden}
        ga = F.relu(self.a_conv(feat))
        gc = F.relu(self.c_conv(feat))
        if self.config.policy_mask:
            z = self.att_conv_a1(feat)
            m = torch.sigmoid(z)
            ga = ga * m
            out["policy_att"], out["policy_mask"] = z[:, 0], m[:, 0]
        if self.config.value_mask:
            z = self.att_conv_c1(feat)
            m = torch.sigmoid(z)
            gc = gc * m
            out["value_att"], out["value_mask"] = z[:, 0], m[:, 0]
        ga, gc = ga.flatten(1), gc.flatten(1)
        out["logits"] = self.actor_linear(ga)
        out["value"] = self.critic_linear(gc)[:, 0]
        out["features"] = torch.cat([ga, gc], dim=1)
        return out

    def layer_groups(self) -> list[tuple[str, list[nn.Module]]]:
        """Layers from the output down: heads → attention convs → ConvLSTM → conv3 → conv2 → conv1.

        The branch 1×1 convs (``a_conv``, ``c_conv``) belong to the heads.
        """
        att = [m for n in ("att_conv_a1", "att_conv_c1") if (m := getattr(self, n, None)) is not None]
        groups = [("heads", [self.actor_linear, self.critic_linear, self.a_conv, self.c_conv])]
        if att:
            groups.append(("attention", att))
        if self.config.convlstm:
            groups.append(("convlstm", [self.convlstm1.conv]))
        groups += [("conv3", [self.conv3]), ("conv2", [self.conv2]), ("conv1", [self.conv1])]
        return groups
