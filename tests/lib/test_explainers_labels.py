"""Display labels: each explainer carries its own, presets included."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet, QAgent
from saliency_lib.explainers import EXPLAINERS, METHOD_LABELS, Explainer, get_explainer, method_label

EXPECTED = {
    "occlusion": "Occlusion", "occlusion_gray": "Occlusion (gray)", "sarfa_blur": "SARFA (blur)", "ns_original": "NS original",
    "ns_chosen": "NS chosen action", "ns_black": "NS black", "sarfa": "SARFA", "rise": "RISE", "lime_slic": "LIME (SLIC)",
    "lime_quickshift": "LIME (quickshift)", "lime_felzenszwalb": "LIME (Felzenszwalb)", "gradient": "Gradient",
    "integrated_gradients": "Integrated Gradients", "gradcam": "Grad-CAM", "random": "Random", "mask_policy": "Policy mask",
    "mask_value": "Value mask", "noise_sensitivity": "Noise Sensitivity",
}


class _Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 2, 8, stride=4)
        self.out = nn.Linear(2 * 20 * 20, 3)

    def forward(self, x):
        return self.out(torch.relu(self.conv(x)).flatten(1))


def test_every_registered_method_has_its_label():
    assert dict(METHOD_LABELS) == EXPECTED
    assert sorted(METHOD_LABELS) == sorted(EXPLAINERS)
    assert all(method_label(n) == label for n, label in EXPECTED.items())


def test_labels_are_read_only():
    with pytest.raises(TypeError):
        METHOD_LABELS["occlusion"] = "x"  # type: ignore[index]


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError,
                       match=r"unknown explainer 'nope'; valid names are: occlusion, occlusion_gray, noise_sensitivity"):
        method_label("nope")


def test_preset_labels_belong_to_presets_of_their_class():
    """``labels`` keys are registry names of presets of the class that declares them."""
    for ctor in EXPLAINERS.values():
        cls = ctor.func
        assert issubclass(cls, Explainer) and isinstance(cls.label, str) and cls.label != Explainer.label
        for key in cls.labels:
            assert key in EXPLAINERS and EXPLAINERS[key].func is cls, (cls.__name__, key)


@pytest.mark.parametrize("name", list(EXPLAINERS))
def test_instance_label_follows_its_method_name(name):
    torch.manual_seed(0)
    if name.startswith("mask_"):
        agent = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)
    else:
        agent = QAgent(_Conv(), game="Breakout", preset="dqn", n_actions=3)
    explainer = get_explainer(name, agent)
    assert explainer.method_label == METHOD_LABELS[explainer.method_name]
    if name != "noise_sensitivity":  # the general entry builds the default variant, "ns_original"
        assert explainer.method_label == METHOD_LABELS[name]


def test_the_labels_are_exported_from_the_package():
    import saliency_lib.explainers as ex

    assert {"METHOD_LABELS", "method_label"} <= set(ex.__all__)


def test_the_section_6_2_ablation_presets_name_themselves():
    """Gray occlusion and blurred SARFA (Huber et al. §6.2) are presets with their own names; the preset
    parameter is fixed, and the same configuration built from the class carries the same name and maps."""
    from saliency_lib.explainers import SARFA, Occlusion

    agent = QAgent(_Conv(), game="Breakout", preset="dqn", n_actions=3)
    x = torch.rand(2, 4, 84, 84)
    gray, blur = get_explainer("occlusion_gray", agent, patch=12), get_explainer("sarfa_blur", agent, stride=12)
    assert (gray.method_name, gray.colour, blur.method_name, blur.perturbation) == ("occlusion_gray", 0.5, "sarfa_blur", "blur")
    assert get_explainer("occlusion", agent).method_name == "occlusion" and get_explainer("sarfa", agent).method_name == "sarfa"
    assert torch.equal(gray.attribute(x).maps, Occlusion(agent, patch=12, colour=0.5).attribute(x).maps)
    assert torch.equal(blur.attribute(x).maps, SARFA(agent, stride=12, perturbation="blur").attribute(x).maps)
    assert gray.attribute(x).method == "occlusion_gray"
    with pytest.raises(ValueError, match="fixes colour=0.5"):
        get_explainer("occlusion_gray", agent, colour=0.0)
