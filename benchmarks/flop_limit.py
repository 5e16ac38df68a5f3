"""The exact FLOP limit of incremental inference for a local method's geometry, and its no-op share.

A local perturbation (Occlusion's patch, SARFA's and Noise Sensitivity's disks and blurred
windows) changes only some pixels. Through a :class:`~saliency_lib.agents.DQNNet` (conv1 8×8/4 →
conv2 4×4/2 → conv3 3×3/1 → fc → head) it changes exactly the conv1 outputs whose receptive field
holds a changed pixel, the conv2 outputs whose field holds a changed conv1 output, and so on; an
exact incremental pass computes those outputs and nothing else, plus the fc columns of the changed
conv3 positions and the whole head. :func:`flop_limit` counts those multiply-adds for every
perturbation of a method (from the network's layer shapes and padding, on the method's own pixel
index) and compares them with full passes:

``flop_limit_speedup = (1 + P) · F_full / (F_full + Σ_p F_p)``

with ``P`` perturbations, ``F_full`` the multiply-adds of one full pass and ``F_p`` those of
perturbation ``p``'s changed positions (the ``1`` and ``F_full`` are the clean pass that both paths
make). It is a property of the geometry alone: it counts every pixel of a perturbation as changed.
The data-dependent part of a speed-up, perturbations that change no pixel at all (a black patch on
pixels that are black in all four frames), is :func:`noop_share`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["layer_geometry", "full_pass_macs", "changed_positions", "perturbation_macs", "flop_limit", "noop_share"]


def layer_geometry(net) -> list[dict]:
    """Per conv layer of a :class:`~saliency_lib.agents.DQNNet` (or an ``AdvantageStream`` around one):
    kernel, stride, padding before it ``(top, bottom, left, right)`` (the ``same`` layout pads conv1 by 2
    and conv2's input by 1/2), in and out channels; the last entry is the fc layer and the head."""
    core = getattr(net, "dueling", net)
    same = core.config.padding == "same"
    pads = [(2, 2, 2, 2), (1, 2, 1, 2), (1, 1, 1, 1)] if same else [(0, 0, 0, 0)] * 3
    layers = []
    for conv, pad in zip((core.conv1, core.conv2, core.conv3), pads):
        layers.append({"kernel": conv.kernel_size[0], "stride": conv.stride[0], "pad": pad,
                       "in": conv.in_channels, "out": conv.out_channels})
    heads = [m for m in (getattr(core, n, None) for n in ("out", "out_value", "out_adv")) if m is not None]
    layers.append({"fc_in": core.fc.in_features, "hidden": core.fc.out_features,
                   "head": sum(m.in_features * m.out_features for m in heads)})
    return layers


def _maps(geometry, mask: torch.Tensor) -> list[torch.Tensor]:
    """Boolean maps ``(B, h, w)`` of the changed outputs of each conv layer, from changed pixels ``mask`` ``(B, H, W)``."""
    out, m = [], mask.float()[:, None]
    for lay in geometry[:-1]:
        top, bottom, left, right = lay["pad"]
        m = F.max_pool2d(F.pad(m, (left, right, top, bottom)), lay["kernel"], lay["stride"])  # any changed input in the field
        out.append(m[:, 0] > 0)
    return out


def full_pass_macs(geometry, image_hw: tuple[int, int]) -> int:
    """Multiply-adds of one full forward pass (convolutions, fc and head; biases and ReLUs not counted)."""
    maps = _maps(geometry, torch.ones(1, *image_hw, dtype=torch.bool))
    macs = sum(int(m.numel()) * lay["kernel"] ** 2 * lay["in"] * lay["out"] for m, lay in zip(maps, geometry))
    last = geometry[-1]
    return macs + last["fc_in"] * last["hidden"] + last["head"]


def changed_positions(geometry, index: torch.Tensor, image_hw: tuple[int, int]) -> torch.Tensor:
    """``(P, L)``: how many outputs of each conv layer perturbation ``p`` (flat pixel indices ``index[p]``) changes."""
    h, w = image_hw
    counts = []
    for s in range(0, index.shape[0], 512):
        part = index[s:s + 512]
        mask = torch.zeros(part.shape[0], h * w, dtype=torch.bool)
        mask.scatter_(1, part, True)
        counts.append(torch.stack([m.flatten(1).sum(1) for m in _maps(geometry, mask.view(-1, h, w))], 1))
    return torch.cat(counts)


def perturbation_macs(geometry, index: torch.Tensor, image_hw: tuple[int, int]) -> torch.Tensor:
    """``(P,)`` multiply-adds of an exact incremental pass for each perturbation: the changed outputs of
    each conv layer, the fc columns of the changed conv3 positions and the whole head."""
    counts = changed_positions(geometry, index, image_hw).double()
    per = torch.tensor([lay["kernel"] ** 2 * lay["in"] * lay["out"] for lay in geometry[:-1]], dtype=torch.float64)
    last = geometry[-1]
    c3 = geometry[-2]["out"]
    return counts @ per + counts[:, -1] * c3 * last["hidden"] + last["head"]


def flop_limit(net, index: torch.Tensor, image_hw: tuple[int, int]) -> dict:
    """The FLOP limit of a method with pixel index ``index`` ``(P, K)`` on ``net`` (see the module notes).

    Returns ``flop_limit_speedup``, ``full_pass_macs``, ``mean_perturbation_macs`` and the mean
    changed positions per conv layer (``mean_changed_positions``).
    """
    geometry = layer_geometry(net)
    full = full_pass_macs(geometry, image_hw)
    per = perturbation_macs(geometry, index.cpu(), image_hw)
    p = index.shape[0]
    counts = changed_positions(geometry, index.cpu(), image_hw).double().mean(0)
    return {"flop_limit_speedup": (1 + p) * full / (full + float(per.sum())), "full_pass_macs": full,
            "mean_perturbation_macs": float(per.mean()), "perturbations": p,
            "mean_changed_positions": [round(float(c), 3) for c in counts]}


def noop_share(x: torch.Tensor, index: torch.Tensor, colour: float = 0.0) -> torch.Tensor:
    """``(N,)`` share of the perturbations of each state ``x`` ``(N, C, H, W)`` that write ``colour`` only
    over pixels that have it in every frame already: they change nothing (exactly zero map value, no pass)."""
    same = (x == colour).all(1).flatten(1)  # (N, H·W)
    return same[:, index].all(2).float().mean(1)
