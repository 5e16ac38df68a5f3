"""One explainer configuration on several networks that share their lower layers.

The randomisation cascade (:class:`~saliency_lib.metrics.RandomisationTest`)
explains the same states with the trained network and with copies whose top
layers are re-initialised. For a deterministic perturbation set (Occlusion,
Noise Sensitivity, SARFA, RISE with its shared masks, LIME with its shared
samples) every copy sees the same perturbed inputs, and the layers below its
randomised ones compute exactly what the trained network computes. So each
chunk of perturbed inputs runs through the trunk once; every network continues
from the cached activation at its *cut*, the first stage whose parameters differ
from the first network's (found by comparing parameters, so an ``independent``
order or any other set of copies is handled as well).

:class:`StagedForward` does this for full forward passes of
:class:`~saliency_lib.agents.DQNNet` (stages conv1, conv2, conv3, fc, head) and
:class:`~saliency_lib.agents.MaskA3CNet` (conv1, conv2, conv3, ConvLSTM with
the recurrent state of each row held as given, heads). Memory: one chunk's
activations at every stage, ``batch_size ×`` about 22 k values for the DQN and
``batch_size ×`` about 110 k values for Mask-A3C (32·40·40 + 32·20·20 + 64·10·10
+ 64·10·10 …) on top of the chunk's inputs; nothing is kept across chunks.

:class:`SharedReadouts` lets explainers bound to those networks pick up their
readouts from one joint computation (:meth:`Explainer.attribute_many`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..agents.base import ActorCriticAgent, Agent, QAgent
from ..agents.dqn import AdvantageStream, DQNNet
from ..agents.mask_a3c import MaskA3CNet, max_pool2

__all__ = ["StagedForward", "SharedReadouts", "staged_support", "staged_forward", "forward_all"]

Stage = tuple[list[torch.Tensor], Callable]


def _params(*mods: nn.Module | None) -> list[torch.Tensor]:
    return [p for m in mods if m is not None for p in m.parameters()]


def _dqn_stages(agent: Agent) -> list[Stage] | str:
    if not isinstance(agent, QAgent) or type(agent).forward is not QAgent.forward:
        return f"{type(agent).__name__} is not a plain QAgent"
    net = agent.net
    if type(net) is AdvantageStream:
        core, head, head_mods = net.dueling, net.head, [net.dueling.out_adv]
    elif isinstance(net, DQNNet):
        core, head = net, net.head
        head_mods = [getattr(net, n, None) for n in ("out", "out_value", "out_adv")]
    else:
        return f"{type(net).__name__} is not a DQNNet"
    for meth in ("features", "head", "forward"):
        if getattr(type(core), meth) is not getattr(DQNNet, meth):
            return f"{type(core).__name__}.{meth} overrides DQNNet's"
    same = core.config.padding == "same"

    def s1(x, hidden):
        h = F.relu(core.conv1(x))
        return F.pad(h, (1, 2, 1, 2)) if same else h

    def s4(h, hidden):
        q = head(h)
        return {"q": q, "advantage": q - q.mean(dim=1, keepdim=True), "features": h}

    return [
        (_params(core.conv1), s1),
        (_params(core.conv2), lambda h, hidden: F.relu(core.conv2(h))),
        (_params(core.conv3), lambda h, hidden: F.relu(core.conv3(h))),
        (_params(core.fc), lambda h, hidden: F.relu(core.fc(h.flatten(1)))),
        (_params(*head_mods), s4),
    ]


def _mask_a3c_stages(agent: Agent) -> list[Stage] | str:
    if not isinstance(agent, ActorCriticAgent) or type(agent).forward is not ActorCriticAgent.forward:
        return f"{type(agent).__name__} is not a plain ActorCriticAgent"
    net = agent.net
    if (not isinstance(net, MaskA3CNet) or type(net).forward is not MaskA3CNet.forward
            or type(net).trunk is not MaskA3CNet.trunk or type(net).heads is not MaskA3CNet.heads):
        return f"{type(net).__name__} is not a MaskA3CNet"
    cfg = net.config

    def block(conv):  # MaskA3CNet.trunk's conv → pool → ReLU
        return lambda x, hidden: F.relu(max_pool2(conv(x)))

    def lstm(x, hidden):
        if hidden is None:
            hidden = net.initial_hidden(x.shape[0], x.device)
        h, c = net.convlstm1.forward_shared(x, hidden)  # the rows of one state share the recurrent half of the gates
        return h, (h, c)

    def heads(state, hidden):  # MaskA3CNet.heads after the trunk, then ActorCriticAgent.forward's probs
        feat, new_hidden = state if cfg.convlstm else (state, None)
        out = net.heads(feat, new_hidden)
        out["probs"] = torch.softmax(out["logits"], dim=1)
        return out

    stages = [(_params(net.conv1), block(net.conv1)), (_params(net.conv2), block(net.conv2)),
              (_params(net.conv3), block(net.conv3))]
    if cfg.convlstm:
        stages.append((_params(net.convlstm1), lstm))
    head_mods = [net.a_conv, net.c_conv, getattr(net, "att_conv_a1", None), getattr(net, "att_conv_c1", None), net.actor_linear,
                 net.critic_linear]
    stages.append((_params(*head_mods), heads))
    return stages


def _stages(agent: Agent) -> list[Stage] | str:
    net = agent.net
    if any(m._forward_hooks or m._forward_pre_hooks for m in net.modules()):
        return "the network has forward hooks"
    if isinstance(net, MaskA3CNet):
        return _mask_a3c_stages(agent)
    return _dqn_stages(agent)


def staged_support(agent: Agent) -> str | None:
    """``None`` if :class:`StagedForward` supports ``agent``, else the reason it does not."""
    got = _stages(agent)
    return got if isinstance(got, str) else None


def stage_cuts(stage_lists: Sequence[list[Stage]]) -> list[int]:
    """For each network, the first stage whose parameters differ from the first network's."""
    base = stage_lists[0]
    cuts = [0]
    for st in stage_lists[1:]:
        cut = len(base)
        if len(st) != len(base):
            cut = 0
        else:
            for i, ((pa, _), (pb, _)) in enumerate(zip(base, st)):
                if len(pa) != len(pb) or any(p is not q and (p.shape != q.shape or not torch.equal(p, q))
                                             for p, q in zip(pa, pb)):
                    cut = i
                    break
        cuts.append(cut)
    return cuts


class StagedForward:
    """Forward passes of several networks on the same rows, sharing the stages below each cut.

    Parameters
    ----------
    agents : sequence of Agent
        Networks of one supported kind (:func:`staged_support`) and one architecture.

    Calling it with a chunk of rows (and the recurrent state of each row) returns
    one output dict per agent, as ``agent(rows, hidden)`` would (float rounding aside).
    """

    def __init__(self, agents: Sequence[Agent]):
        got = [_stages(a) for a in agents]
        bad = next((g for g in got if isinstance(g, str)), None)
        if bad is not None:
            raise TypeError(f"StagedForward does not support this agent: {bad}")
        if len({type(a.net) for a in agents}) != 1 or len({getattr(a.net, "config", None) for a in agents}) != 1:
            raise ValueError("all agents must share one architecture")
        self.agents = list(agents)
        self.stages = got
        self.cuts = stage_cuts(got)

    def __call__(self, rows: torch.Tensor, hidden=None) -> list[dict[str, torch.Tensor]]:
        acts = [rows]  # the first network's input of every stage
        stages0 = self.stages[0]
        for _, fn in stages0:
            acts.append(fn(acts[-1], hidden))
        outs = []
        for a, stages in enumerate(self.stages):
            cut = self.cuts[a]
            if a == 0 or cut >= len(stages):  # the first network, or one with the same parameters
                outs.append(acts[-1])
                continue
            h = acts[cut]
            for _, fn in stages[cut:]:
                h = fn(h, hidden)
            outs.append(h)
        return outs


def staged_forward(agents: Sequence[Agent]) -> StagedForward | None:
    """A :class:`StagedForward` for several agents of one supported architecture, else ``None``.

    One Mask-A3C agent gets one too: its ConvLSTM stage computes the recurrent half of its gates
    once per run of rows that share a recurrent state.
    """
    if ((len(agents) < 2 and not (agents and isinstance(agents[0].net, MaskA3CNet)))
            or any(staged_support(a) is not None for a in agents)):
        return None
    try:
        return StagedForward(agents)
    except ValueError:  # different architectures
        return None


def forward_all(agents: Sequence[Agent], staged: StagedForward | None, rows: torch.Tensor,
                hidden) -> list[dict[str, torch.Tensor]]:
    """Outputs of every agent on ``rows``: through ``staged`` if given, else one full pass each."""
    if staged is not None:
        return staged(rows, hidden)
    return [a(rows, hidden) for a in agents]


class SharedReadouts:
    """Readouts of one explainer configuration bound to several agents, computed jointly.

    :meth:`Explainer.attribute_many` binds one explainer per agent and gives them
    this object. The first explainer's readout call computes the readouts of every
    agent (``compute()`` returns one tensor per agent); the others pick theirs up
    by call number, so each explainer must make the same sequence of readout
    calls (they do: the calls depend only on the states and the configuration).
    """

    def __init__(self, explainers: Sequence):
        self.explainers = list(explainers)
        self.agents = [e.agent for e in self.explainers]
        self._calls = [0] * len(self.explainers)
        self._results: dict[int, list] = {}

    def position(self, explainer) -> int:
        for i, e in enumerate(self.explainers):
            if e is explainer:
                return i
        raise ValueError("explainer is not part of this shared computation")

    def get(self, explainer, compute: Callable[[], list[torch.Tensor]]) -> torch.Tensor:
        j = self.position(explainer)
        call = self._calls[j]
        self._calls[j] += 1
        if call not in self._results:
            self._results[call] = [*compute(), len(self.explainers)]  # readouts, then how many are still to be picked up
        entry = self._results[call]
        out = entry[j]
        entry[-1] -= 1
        if entry[-1] == 0:
            del self._results[call]
        return out
