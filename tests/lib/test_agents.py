import json

import numpy as np
import pytest
import torch

from saliency_lib.agents import (
    OFFICIAL_GAMES,
    ActorCriticAgent,
    DQNConfig,
    DQNNet,
    MaskA3CConfig,
    MaskA3CNet,
    QAgent,
    advantage_stream_agent,
    build_agent,
    load_agent,
    load_official,
    save_agent,
)
from saliency_lib.agents.official import official_path, read_legacy_state_dict


def _dqn_agent(dueling=True, seed=0):
    torch.manual_seed(seed)
    return QAgent(DQNNet(DQNConfig(n_actions=6, dueling=dueling)), game="SpaceInvaders", preset="dqn", n_actions=6)


@pytest.mark.parametrize("padding,side", [("valid", 7), ("same", 11)])
def test_dqn_shapes_and_named_outputs(padding, side):
    net = DQNNet(DQNConfig(n_actions=4, padding=padding))
    x = torch.rand(3, 4, 84, 84)
    assert net.fc.in_features == 64 * side * side
    agent = QAgent(net, game="Breakout", preset="dqn", n_actions=4)
    out = agent(x)
    assert out["q"].shape == (3, 4) and out["features"].shape == (3, net.config.hidden)
    torch.testing.assert_close(out["advantage"], out["q"] - out["q"].mean(1, keepdim=True))
    assert agent.act(x).shape == (3,)


def test_dueling_head_is_centred():
    net = DQNNet(DQNConfig(n_actions=5))
    h = torch.rand(2, net.config.hidden)
    q = net.head(h)
    torch.testing.assert_close(q.mean(1), net.out_value(h)[:, 0])


def test_forward_is_deterministic():
    agent = _dqn_agent()
    x = torch.rand(4, 4, 84, 84)
    torch.testing.assert_close(agent(x)["q"], agent(x)["q"], rtol=0, atol=0)
    net = MaskA3CNet(MaskA3CConfig(n_actions=4))
    y = torch.randn(2, 1, 80, 80)
    a, b = net(y), net(y)
    torch.testing.assert_close(a["logits"], b["logits"], rtol=0, atol=0)


@pytest.mark.parametrize("variant,n_params", [("double", 344_039), ("none", 344_039 - 2 * 65), ("policy", 344_039 - 65)])
def test_mask_a3c_parameter_count(variant, n_params):
    net = MaskA3CNet(MaskA3CConfig(n_actions=4, variant=variant))
    assert sum(p.numel() for p in net.parameters()) == n_params


def test_mask_a3c_outputs_and_mask_identity():
    net = MaskA3CNet(MaskA3CConfig(n_actions=4, variant="double"))
    agent = ActorCriticAgent(net, game="Breakout", preset="mask_a3c", n_actions=4)
    x = torch.randn(2, 1, 80, 80)
    out = agent(x, agent.initial_hidden(2))
    assert out["logits"].shape == (2, 4) and out["value"].shape == (2,)
    assert out["policy_mask"].shape == out["value_mask"].shape == (2, 10, 10)
    assert ((out["policy_mask"] > 0) & (out["policy_mask"] < 1)).all()
    assert out["hidden"][0].shape == (2, 64, 10, 10)
    torch.testing.assert_close(out["probs"].sum(1), torch.ones(2))
    # with M ≡ 1 the model equals the no-mask baseline on the same weights
    plain = MaskA3CNet(MaskA3CConfig(n_actions=4, variant="none"))
    plain.load_state_dict({k: v for k, v in net.state_dict().items() if not k.startswith("att_")})
    with torch.no_grad():
        for conv in (net.att_conv_a1, net.att_conv_c1):
            conv.weight.zero_()
            conv.bias.fill_(50.0)  # sigmoid(50) == 1 in float32
    torch.testing.assert_close(net(x)["logits"], plain(x)["logits"])
    assert set(agent.outputs) >= {"logits", "probs", "value", "policy_mask", "value_mask"}


def test_recurrent_state_changes_output():
    net = MaskA3CNet(MaskA3CConfig(n_actions=4))
    x = torch.randn(1, 1, 80, 80)
    h = net(x)["hidden"]
    assert not torch.allclose(net(x, h)["logits"], net(x)["logits"])


def test_save_load_roundtrip(tmp_path):
    agent = _dqn_agent()
    save_agent(agent, tmp_path / "a", frames=123, eval_score=4.5)
    back = load_agent(tmp_path / "a")
    x = torch.rand(2, 4, 84, 84)
    torch.testing.assert_close(agent(x)["q"], back(x)["q"], rtol=0, atol=0)
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    for key in ("game", "preset", "arch", "config", "frames", "eval_score", "library_version", "sha256"):
        assert key in meta
    assert back.meta["frames"] == 123
    assert load_agent(tmp_path / "a" / "model.safetensors").game == "SpaceInvaders"


def test_advantage_stream_agent(tmp_path):
    """``advstream:`` gives the raw ``out_adv`` head: no value stream, not centred, same greedy action."""
    agent = _dqn_agent()
    save_agent(agent, tmp_path / "a")
    adv = load_agent(f"advstream:{tmp_path / 'a'}")
    x = torch.rand(5, 4, 84, 84)
    with torch.no_grad():
        h = agent.net.features(x)
        torch.testing.assert_close(adv(x)["q"], agent.net.out_adv(h), rtol=0, atol=0)
        assert not torch.allclose(adv(x)["q"].mean(1), torch.zeros(5), atol=1e-3)  # un-centred
        # Q − mean Q is the centred advantage in both readings, so Huber's advantage measure agrees
        torch.testing.assert_close(adv(x)["advantage"], agent(x)["advantage"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(adv.act(x), agent.act(x), rtol=0, atol=0)
    assert adv.meta["output"] == "advantage_stream" and adv.meta["sha256"] == load_agent(tmp_path / "a").meta["sha256"]
    # the value head no longer reaches the output, so it is not a layer of the cascade
    groups = dict(adv.layer_groups())
    assert groups["output"] == [adv.net.dueling.out_adv] and list(groups) == ["output", "fc", "conv3", "conv2", "conv1"]
    with pytest.raises(ValueError, match="dueling DQN agent .* without a dueling head"):
        advantage_stream_agent(_dqn_agent(dueling=False))
    with pytest.raises(ValueError, match="needs a dueling DQN agent"):
        advantage_stream_agent(ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout",
                                                preset="mask_a3c", n_actions=4))
    with pytest.raises(TypeError, match="cannot save a AdvantageStream"):
        save_agent(adv, tmp_path / "b")


def test_corrupted_checkpoint_is_refused(tmp_path):
    save_agent(_dqn_agent(), tmp_path / "a")
    w = tmp_path / "a" / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[len(data) // 2] ^= 0xFF
    w.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupted"):
        load_agent(tmp_path / "a")


def test_truncated_checkpoint_is_refused(tmp_path):
    save_agent(_dqn_agent(), tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    w = tmp_path / "a" / "model.safetensors"
    w.write_bytes(w.read_bytes()[:1000])
    meta["sha256"] = __import__("hashlib").sha256(w.read_bytes()).hexdigest()  # even with a matching hash
    (tmp_path / "a" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        load_agent(tmp_path / "a")


def test_mismatched_checkpoint_is_refused(tmp_path):
    save_agent(_dqn_agent(), tmp_path / "a")
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    meta["config"]["n_actions"] = 9
    (tmp_path / "a" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="do not match DQNNet"):
        load_agent(tmp_path / "a")


def test_missing_checkpoint_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no agent checkpoint"):
        load_agent(tmp_path / "nothing")
    (tmp_path / "d").mkdir()
    with pytest.raises(FileNotFoundError, match="lacks model.safetensors"):
        load_agent(tmp_path / "d")
    with pytest.raises(ValueError, match="unknown agent spec scheme 'foo'"):
        load_agent("foo:bar")
    with pytest.raises(ValueError, match="unknown architecture"):
        build_agent("ResNet", {}, game="Breakout", preset="dqn")


def test_bad_states_give_clear_errors():
    agent = _dqn_agent()
    with pytest.raises(ValueError, match=r"states must have shape \(N, 4, 84, 84\)"):
        agent.act(torch.rand(4, 84, 84))
    with pytest.raises(TypeError, match="torch.Tensor"):
        agent.act([[0.0]])
    with pytest.raises(ValueError, match="unknown variant"):
        MaskA3CConfig(n_actions=4, variant="triple")
    with pytest.raises(ValueError, match="padding"):
        DQNConfig(n_actions=4, padding="full")


@pytest.mark.parametrize("game", OFFICIAL_GAMES)
def test_official_checkpoints_load_with_every_shape(official_available, game):
    path = official_path(game)
    state = read_legacy_state_dict(path)
    agent = load_official(game)
    own = agent.net.state_dict()
    assert set(state) == set(own)
    assert all(state[k].shape == own[k].shape for k in own)
    for k in own:
        torch.testing.assert_close(own[k], state[k])
    out = agent(torch.zeros(1, 1, 80, 80))
    assert out["logits"].shape == (1, agent.n_actions)


def test_official_loader_refuses_code_pickles(tmp_path, official_available):
    import pickle

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    bad = tmp_path / "trained_models"
    bad.mkdir()
    target = bad / "BreakoutNoFrameskip-v4_Mask-A3C-double+ConvLSTM_best.dat"
    with open(target, "wb") as f:
        pickle.dump({"conv1.weight": Evil()}, f)
    with pytest.raises(ValueError, match="tensors-only"):
        read_legacy_state_dict(target)
    with pytest.raises(ValueError, match="differs from the released file"):
        load_official("Breakout", tmp_path)


def test_official_unknown_game():
    with pytest.raises(ValueError, match="no official Mask-A3C checkpoint for 'Pong'"):
        load_official("Pong")


def test_official_logged_levels_match_the_reference(official_available):
    from saliency_lib.agents.official import official_logged_level

    assert round(official_logged_level("Breakout")["logged_mean"]) == 558
    assert round(official_logged_level("MsPacman")["logged_mean"]) == 4540
    assert round(official_logged_level("SpaceInvaders")["logged_mean"]) == 18734


def test_official_milestones_match_the_reference(official_available):
    """reference-itaya2021 §3.2's milestone table, every game and every point, to the unit."""
    from saliency_lib.agents.official import MILESTONE_STEPS, official_milestones

    reference = {  # 5M, 10M, 20M, 30M, 50M, 70M, 100M global steps
        "BeamRider": [5467, 12036, 18252, 20198, 24519, 26272, 27813],
        "Breakout": [178, 392, 436, 479, 489, 486, 553],
        "FishingDerby": [-53, 0, 24, 27, 35, 30, 31],
        "MsPacman": [976, 1544, 1651, 2129, 3735, 3100, 4392],
        "Seaquest": [807, 1380, 1854, 1873, 2128, 2765, 4591],
        "SpaceInvaders": [578, 759, 1497, 2835, 13088, 15324, 18959],
    }
    for game, want in reference.items():
        m = official_milestones(game)
        assert list(m["step"]) == list(MILESTONE_STEPS) and (m["frames"] == 4 * m["step"]).all()
        assert [round(x) for x in m["mean"]] == want, game
        assert (m["games"] > 0).all()


def _synthetic_official_log(directory, game="Breakout", steps=(0, 5, 10, 15, 20), scores=(100, 1, 2, 3, 4)):
    logs = directory / "logs"
    logs.mkdir(parents=True)
    rows = "\n".join(f"{s},00h 00m 00s,10,{r},0.0" for s, r in zip(steps, scores))
    (logs / f"{game}NoFrameskip-v4_Mask-A3C-double+ConvLSTM_test.csv").write_text(
        "global_step,time,episode length,reward_sum,reward_mean\n" + rows + "\n")
    return directory


def test_official_milestones_window_is_half_open_and_bad_inputs_are_refused(tmp_path):
    from saliency_lib.agents.official import official_milestones, official_test_log

    d = _synthetic_official_log(tmp_path / "off")
    log = official_test_log("Breakout", d)
    assert list(log["frames"]) == [0, 20, 40, 60, 80]  # 4 emulator frames per global step
    m = official_milestones("Breakout", d, steps=(10, 5, 100), half_window=5)
    # (5, 15]: the games at steps 10 and 15; (0, 10]: steps 5 and 10, the untrained game at step 0 left out
    assert list(m["mean"][:2]) == [2.5, 1.5] and list(m["games"]) == [2, 2, 0]
    assert np.isnan(m["mean"][2]) and list(m["frames"]) == [40, 20, 400]
    for kwargs, match in [({"steps": ()}, "steps is empty"), ({"steps": (-1.0,)}, "positive and finite"),
                          ({"steps": (float("nan"),)}, "positive and finite"), ({"half_window": 0}, "half_window"),
                          ({"half_window": float("inf")}, "half_window")]:
        with pytest.raises(ValueError, match=match):
            official_milestones("Breakout", d, **kwargs)
    with pytest.raises(ValueError, match="no official Mask-A3C log for 'Pong'"):
        official_milestones("Pong", d)
    with pytest.raises(FileNotFoundError, match="official test log"):
        official_milestones("MsPacman", d)


def test_fetch_official_copies_verifies_and_is_idempotent(tmp_path, official_available):
    import shutil

    from saliency_lib.agents.official import fetch_official

    done = fetch_official(tmp_path / "dest", official_available)
    assert len(done) == len(OFFICIAL_GAMES) and all(p.is_file() for p in done)
    mtimes = [p.stat().st_mtime_ns for p in done]
    assert [p.stat().st_mtime_ns for p in fetch_official(tmp_path / "dest", official_available)] == mtimes  # nothing re-copied
    # a tampered source is refused and leaves no file behind
    bad = tmp_path / "bad" / "trained_models"
    shutil.copytree(official_available / "trained_models", bad)
    victim = bad / "BreakoutNoFrameskip-v4_Mask-A3C-double+ConvLSTM_best.dat"
    victim.write_bytes(victim.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(ValueError, match="does not match its released sha256"):
        fetch_official(tmp_path / "dest2", tmp_path / "bad")
    assert not (tmp_path / "dest2" / "trained_models" / victim.name).exists()


def test_channels_last_pooling_equals_the_standard_one_in_values_and_gradients():
    import torch.nn.functional as F

    from saliency_lib.agents import mask_a3c

    x = torch.randn(3, 8, 20, 20, requires_grad=True)
    y = x.detach().clone().requires_grad_(True)
    a, b = mask_a3c.max_pool2(x), F.max_pool2d(y, 2)
    assert torch.equal(a, b) and a.is_contiguous()
    a.sum().backward()
    b.sum().backward()
    assert torch.equal(x.grad, y.grad)
    # a channels-last input keeps its layout (the trainer's network), with the same values and gradients
    z = x.detach().contiguous(memory_format=torch.channels_last).requires_grad_(True)
    c = mask_a3c.max_pool2(z)
    assert torch.equal(c, b) and c.is_contiguous(memory_format=torch.channels_last) and not c.is_contiguous()
    (c * torch.arange(c.numel()).view_as(b)).sum().backward()
    y.grad = None
    (F.max_pool2d(y, 2) * torch.arange(c.numel()).view_as(b)).sum().backward()
    assert torch.equal(z.grad, y.grad)


def test_a_channels_last_training_update_is_bit_for_bit_the_one_with_standard_layout_pooling(monkeypatch):
    """Keeping the trainer's channels-last layout through the pooling changes no loss and no gradient."""
    import torch.nn.functional as F

    from saliency_lib.agents import mask_a3c
    from saliency_lib.train.a2c import rollout_step

    torch.manual_seed(0)
    net = mask_a3c.MaskA3CNet(mask_a3c.MaskA3CConfig(n_actions=4, variant="double")).to(memory_format=torch.channels_last)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16)
    obs = [torch.rand(4, 1, 80, 80) for _ in range(3)]

    def update():
        net.zero_grad(set_to_none=True)
        hidden, total = net.initial_hidden(4), 0.0
        for x in obs:
            o = rollout_step(net, x, hidden, autocast)
            hidden, total = o["hidden"], total + o["value"].sum() + o["logits"].sum()
        total.backward()
        return total.detach(), [p.grad.clone() for p in net.parameters()]

    new = update()
    monkeypatch.setattr(mask_a3c, "max_pool2", lambda x: F.max_pool2d(x, 2).contiguous())
    old = update()
    assert torch.equal(new[0], old[0])
    assert all(torch.equal(a, b) for a, b in zip(new[1], old[1]))


def test_inference_batch_is_the_default_batch_of_explainers_and_metrics():
    """Mask-A3C networks ask for small batches (their activations spill out of the caches); the DQN keeps 256.
    An explicit batch_size wins, and an explainer re-bound to another agent takes that agent's default."""
    from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet
    from saliency_lib.agents.base import DEFAULT_BATCH
    from saliency_lib.explainers import get_explainer
    from saliency_lib.metrics import Insertion

    a3c = ActorCriticAgent(MaskA3CNet(MaskA3CConfig(n_actions=4)), game="Breakout", preset="mask_a3c", n_actions=4)
    dqn = load_agent("data/agents/dqn-Breakout-s0")
    assert a3c.inference_batch == MaskA3CNet.inference_batch == 16 and dqn.inference_batch == DEFAULT_BATCH == 256
    occ = get_explainer("occlusion", a3c, patch=8)
    assert occ.batch_size == 16 and occ.for_agent(dqn).batch_size == 256
    assert get_explainer("occlusion", a3c, patch=8, batch_size=7).for_agent(dqn).batch_size == 7
    assert Insertion().batch_size is None and Insertion(batch_size=5).batch_size == 5
    with pytest.raises(ValueError, match="batch_size"):
        get_explainer("occlusion", a3c, batch_size=0)


def test_mask_a3c_networks_run_channels_last_and_agree_with_the_standard_layout(tmp_path, monkeypatch):
    """MaskA3CNet builds channels-last conv weights (its fast layout), a loaded agent keeps them, and the
    outputs equal the standard layout's up to float rounding; the seed's initial values are unchanged."""
    import copy

    from saliency_lib.agents import ActorCriticAgent, MaskA3CConfig, MaskA3CNet, load_agent
    from saliency_lib.agents.checkpoint import save_agent

    torch.manual_seed(3)
    net = MaskA3CNet(MaskA3CConfig(n_actions=4, variant="double"))
    convs = [m.weight for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert all(w.is_contiguous(memory_format=torch.channels_last) for w in convs)
    assert not net.conv2.weight.is_contiguous()
    standard = copy.deepcopy(net).to(memory_format=torch.contiguous_format)
    assert standard.conv2.weight.is_contiguous()
    with monkeypatch.context() as m:  # built without the conversion: the same initial values, standard layout
        m.setattr(MaskA3CNet, "to", lambda self, *a, **k: self)
        torch.manual_seed(3)
        unconverted = MaskA3CNet(MaskA3CConfig(n_actions=4, variant="double"))
    assert unconverted.conv2.weight.is_contiguous()
    assert all(torch.equal(p, q) for p, q in zip(unconverted.parameters(), net.parameters()))
    x, hidden = torch.rand(5, 1, 80, 80), net.initial_hidden(5)
    with torch.no_grad():
        a, b = net(x, hidden), standard(x, hidden)
    for k in ("logits", "value", "policy_mask", "value_mask"):
        torch.testing.assert_close(a[k], b[k], rtol=1e-5, atol=1e-5)
    save_agent(ActorCriticAgent(net, game="Breakout", preset="mask_a3c", n_actions=4), tmp_path / "agent")
    loaded = load_agent(tmp_path / "agent")
    assert loaded.net.conv3.weight.is_contiguous(memory_format=torch.channels_last)
    assert all(torch.equal(p, q) for p, q in zip(loaded.net.parameters(), net.parameters()))
