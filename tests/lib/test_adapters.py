"""Bring-your-own-agent adapters: SB3 and CleanRL files built here with the real libraries.

The SB3 models are trained for a few hundred steps on ``BreakoutNoFrameskip-v4``
(``make_atari_env`` + ``VecFrameStack(4)``) and saved; our adapters must reproduce
SB3's own Q-values, logits, values and greedy actions on the same observations.
CleanRL's networks are rebuilt from its published ``dqn_atari.py``/``ppo_atari.py``
(the ``cleanrl`` package on PyPI is an old, unimportable release) and saved with
``torch.save(state_dict)``, as the scripts do.
"""

from __future__ import annotations

import json
import zipfile

import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.atari_wrappers import (
    ClipRewardEnv,
    EpisodicLifeEnv,
    FireResetEnv,
    MaxAndSkipEnv,
    NoopResetEnv,
)
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack
from torch import nn

from saliency_lib.agents import ActorCriticAgent, QAgent, load_agent, states_from_obs, states_to_obs, wrap_agent
from saliency_lib.agents._weights import sha256_file
from saliency_lib.agents.cleanrl import load_cleanrl
from saliency_lib.agents.foreign import infer_game
from saliency_lib.agents.sb3 import load_sb3
from saliency_lib.envs import make_env

ATOL = 1e-5
ENV_ID = "BreakoutNoFrameskip-v4"


@pytest.fixture(scope="module", autouse=True)
def _sb3_logs_in_tmp(tmp_path_factory):
    """SB3's ``learn`` creates a log folder, by default a new ``$TMPDIR/SB3-<time>`` per call."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))
        yield


# -- fixtures: real SB3 models and observations -----------------------------------------
def _sb3_env(seed: int = 0):
    return VecFrameStack(make_atari_env(ENV_ID, n_envs=1, seed=seed), n_stack=4)


def _zoo_path(root, algo: str):
    """RL-Zoo layout: <algo>/<env_id>_1/<env_id>.zip (the game is read from the path)."""
    d = root / algo / f"{ENV_ID}_1"
    d.mkdir(parents=True)
    return d / f"{ENV_ID}.zip"


@pytest.fixture(scope="module")
def sb3_obs() -> np.ndarray:
    """16 VecFrameStack observations (N, 84, 84, 4) uint8 from random play."""
    env = _sb3_env(seed=1)
    rng = np.random.default_rng(1)
    obs, out = env.reset(), []
    for t in range(64):
        obs, *_ = env.step([int(rng.integers(4))])
        if t % 4 == 3:
            out.append(obs[0])
    env.close()
    return np.stack(out)


@pytest.fixture(scope="module")
def sb3_dqn(tmp_path_factory):
    env = _sb3_env()
    model = DQN("CnnPolicy", env, buffer_size=1000, learning_starts=100, seed=0, device="cpu")
    model.learn(300)
    path = _zoo_path(tmp_path_factory.mktemp("zoo"), "dqn")
    model.save(path)
    env.close()
    return model, path


@pytest.fixture(scope="module")
def sb3_ppo(tmp_path_factory):
    env = _sb3_env()
    model = PPO("CnnPolicy", env, n_steps=64, batch_size=64, n_epochs=2, seed=0, device="cpu")
    model.learn(128)
    path = _zoo_path(tmp_path_factory.mktemp("zoo"), "ppo")
    model.save(path)
    env.close()
    return model, path


def _sb3_tensor(model, obs) -> torch.Tensor:
    """SB3's own preprocessing of ``obs`` (transpose to CHW, float), made contiguous.

    ``obs_to_tensor`` returns a channels-last *view*; convolutions on it round
    differently (~1e-6 relative), which shows only for ``normalize_images=False``
    models whose activations reach 1e2. The values are the same.
    """
    return model.policy.obs_to_tensor(obs)[0].contiguous()


def _sb3_logits_values(model, obs):
    obs_t = _sb3_tensor(model, obs)
    with torch.no_grad():
        dist = model.policy.get_distribution(obs_t).distribution
        return dist.logits, dist.probs, model.policy.predict_values(obs_t)[:, 0]


# -- observation mapping ---------------------------------------------------------------------
def test_our_dqn_preset_states_equal_sb3_observations_over_255():
    """Same seed, same actions: our 'dqn' preset (train mode) gives SB3's VecFrameStack obs, transposed, /255."""
    venv, env = _sb3_env(seed=0), make_env("Breakout", "dqn", mode="train")
    sb3, (ours, _) = venv.reset(), env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        torch.testing.assert_close(states_from_obs(sb3, layout="NHWC")[0], torch.as_tensor(ours), rtol=0, atol=0)
        a = int(rng.integers(4))
        sb3, *_ = venv.step([a])
        ours, *_ = env.step(a)
    venv.close()
    env.close()


def test_states_from_obs_layouts_and_inverse(sb3_obs):
    x = states_from_obs(sb3_obs, layout="NHWC")
    assert x.dtype == torch.float32 and x.shape == (16, 4, 84, 84)
    # channel 3 of our state is SB3's newest frame (last axis), scaled by 1/255
    torch.testing.assert_close(x[:, 3], torch.as_tensor(sb3_obs[..., 3]).float() / 255, rtol=0, atol=0)
    torch.testing.assert_close(states_from_obs(sb3_obs.transpose(0, 3, 1, 2), layout="NCHW"), x, rtol=0, atol=0)
    np.testing.assert_array_equal(states_to_obs(x, layout="NHWC"), sb3_obs)
    with pytest.raises(ValueError, match="layout must be one of NHWC, NCHW"):
        states_from_obs(sb3_obs, layout="HWC")
    with pytest.raises(TypeError, match="must be uint8"):
        states_from_obs(sb3_obs.astype(np.float32), layout="NHWC")
    with pytest.raises(ValueError, match=r"layout 'NCHW' must have shape \(N, 4, 84, 84\)"):
        states_from_obs(sb3_obs, layout="NCHW")


# -- SB3 -------------------------------------------------------------------------------------
def test_sb3_dqn_q_values_and_actions_equal_sb3(sb3_dqn, sb3_obs):
    model, path = sb3_dqn
    agent = load_agent(f"sb3:{path}")
    assert isinstance(agent, QAgent) and agent.game == "Breakout" and agent.preset == "dqn" and agent.n_actions == 4
    x = states_from_obs(sb3_obs, layout="NHWC")
    with torch.no_grad():
        ref = model.q_net(_sb3_tensor(model, sb3_obs))
        out = agent(x)
    torch.testing.assert_close(out["q"], ref, rtol=0, atol=ATOL)
    assert out["features"].shape == (16, 512)
    sb3_actions, _ = model.predict(sb3_obs, deterministic=True)
    np.testing.assert_array_equal(agent.act(x).numpy(), sb3_actions)
    meta = agent.meta
    assert meta["source"] == f"sb3:{path}" and meta["algorithm"] == "DQN"
    assert meta["policy"] == "stable_baselines3.dqn.policies.CnnPolicy"
    assert meta["sha256"] == sha256_file(path) and meta["library_version"] and meta["num_timesteps"] == 300
    assert meta["system_info"]["PyTorch"].startswith(torch.__version__.split("+")[0])


def test_sb3_ppo_logits_values_and_actions_equal_sb3(sb3_ppo, sb3_obs):
    model, path = sb3_ppo
    agent = load_agent(f"sb3:Breakout:{path}")
    assert isinstance(agent, ActorCriticAgent) and agent.meta["algorithm"] == "PPO"
    x = states_from_obs(sb3_obs, layout="NHWC")
    logits, probs, values = _sb3_logits_values(model, sb3_obs)
    with torch.no_grad():
        out = agent(x)
    # SB3's Categorical stores normalised logits (log-probabilities)
    torch.testing.assert_close(torch.log_softmax(out["logits"], 1), logits, rtol=0, atol=ATOL)
    torch.testing.assert_close(out["probs"], probs, rtol=0, atol=ATOL)
    torch.testing.assert_close(out["value"], values, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(agent.act(x).numpy(), model.predict(sb3_obs, deterministic=True)[0])
    assert agent.meta["policy"] == "stable_baselines3.common.policies.ActorCriticCnnPolicy"


def test_sb3_a2c_and_custom_policy_kwargs(tmp_path, sb3_obs):
    """A2C; PPO with its own value trunk, an mlp_extractor and normalize_images=False (input ×255)."""
    env = _sb3_env()
    a2c = A2C("CnnPolicy", env, n_steps=5, seed=0, device="cpu")
    a2c.learn(20)
    kwargs = dict(net_arch=dict(pi=[64], vf=[32]), activation_fn=nn.ReLU, share_features_extractor=False, normalize_images=False)
    ppo = PPO("CnnPolicy", env, n_steps=64, batch_size=64, seed=0, device="cpu", policy_kwargs=kwargs)
    dqn = DQN("CnnPolicy", env, buffer_size=100, seed=0, device="cpu", policy_kwargs=dict(net_arch=[64]))
    env.close()
    x = states_from_obs(sb3_obs, layout="NHWC")
    for name, model in (("a2c", a2c), ("ppo_custom", ppo)):
        model.save(tmp_path / f"{name}.zip")
        agent = load_sb3(tmp_path / f"{name}.zip", game="Breakout")
        logits, _, values = _sb3_logits_values(model, sb3_obs)
        with torch.no_grad():
            out = agent(x)
        torch.testing.assert_close(torch.log_softmax(out["logits"], 1), logits, rtol=0, atol=ATOL)
        torch.testing.assert_close(out["value"], values, rtol=0, atol=ATOL)
    assert agent.meta["input_scale"] == 255.0 and agent.net.vf_features_extractor is not None
    assert load_sb3(tmp_path / "a2c.zip", game="Breakout").meta["algorithm"] == "A2C"
    dqn.save(tmp_path / "dqn_arch.zip")
    agent = load_sb3(tmp_path / "dqn_arch.zip", game="Breakout")
    with torch.no_grad():
        torch.testing.assert_close(agent(x)["q"], dqn.q_net(_sb3_tensor(dqn, sb3_obs)), rtol=0, atol=ATOL)
    assert agent(x)["features"].shape == (16, 64)


def test_sb3_qrdqn_q_is_mean_of_quantiles(tmp_path, sb3_obs):
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = _sb3_env()
    model = sb3_contrib.QRDQN("CnnPolicy", env, buffer_size=1000, learning_starts=50, seed=0, device="cpu")
    model.learn(100)
    env.close()
    model.save(tmp_path / "qrdqn.zip")
    agent = load_sb3(tmp_path / "qrdqn.zip", game="Breakout")
    x = states_from_obs(sb3_obs, layout="NHWC")
    with torch.no_grad():
        ref = model.quantile_net(_sb3_tensor(model, sb3_obs)).mean(dim=1)
        torch.testing.assert_close(agent(x)["q"], ref, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(agent.act(x).numpy(), model.predict(sb3_obs, deterministic=True)[0])
    assert agent.meta["algorithm"] == "QR-DQN" and agent.meta["n_quantiles"] == 200


def test_sb3_layer_groups_cover_the_network(sb3_dqn, sb3_ppo):
    q, ac = load_sb3(sb3_dqn[1]), load_sb3(sb3_ppo[1])
    assert [n for n, _ in q.layer_groups()] == ["output", "fc", "conv3", "conv2", "conv1"]
    assert [n for n, _ in ac.layer_groups()] == ["output", "fc", "conv3", "conv2", "conv1"]
    assert dict(ac.layer_groups())["output"] == [ac.net.action_net, ac.net.value_net]


# -- SB3: bad files ------------------------------------------------------------------------
def _rewrite_zip(src, dst, **members):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            if name in members:
                if members[name] is not None:
                    zout.writestr(name, members[name])
            else:
                zout.writestr(name, zin.read(name))


def test_sb3_bad_files_give_clear_errors(tmp_path, sb3_dqn):
    path = sb3_dqn[1]
    with pytest.raises(FileNotFoundError, match="no Stable-Baselines3 model at"):
        load_agent(f"sb3:{tmp_path / 'missing.zip'}")
    junk = tmp_path / "BreakoutNoFrameskip-v4.zip"
    junk.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(ValueError, match="is not a zip archive"):
        load_agent(f"sb3:{junk}")
    _rewrite_zip(path, tmp_path / "no_policy.zip", **{"policy.pth": None})
    with pytest.raises(ValueError, match=r"zip without policy\.pth; it is not a Stable-Baselines3 model"):
        load_sb3(tmp_path / "no_policy.zip", game="Breakout")
    _rewrite_zip(path, tmp_path / "bad_policy.zip", **{"policy.pth": b"not a tensor file"})
    with pytest.raises(ValueError, match=r"policy\.pth is not a tensors-only PyTorch state dict"):
        load_sb3(tmp_path / "bad_policy.zip", game="Breakout")
    _rewrite_zip(path, tmp_path / "bad_data.zip", data=b"\x80\x04 pickle, not JSON")
    with pytest.raises(ValueError, match="'data' member is not JSON"):
        load_sb3(tmp_path / "bad_data.zip", game="Breakout")


def test_sb3_refuses_other_shapes_policies_and_algorithms(tmp_path, sb3_dqn):
    path = sb3_dqn[1]
    data = json.loads(zipfile.ZipFile(path).read("data"))
    data["observation_space"]["_shape"] = [1, 84, 84]
    _rewrite_zip(path, tmp_path / "shape.zip", data=json.dumps(data))
    with pytest.raises(ValueError, match=r"observation shape \(1, 84, 84\) does not match the 'dqn' preset"):
        load_sb3(tmp_path / "shape.zip", game="Breakout")
    DQN("MlpPolicy", "CartPole-v1", buffer_size=100, device="cpu").save(tmp_path / "mlp.zip")
    with pytest.raises(ValueError, match=r"policy stable_baselines3\.dqn\.policies\.DQNPolicy \(DQN\) is not supported"):
        load_sb3(tmp_path / "mlp.zip", game="Breakout")
    from stable_baselines3 import SAC

    SAC("MlpPolicy", "Pendulum-v1", buffer_size=100, device="cpu").save(tmp_path / "sac.zip")
    with pytest.raises(ValueError, match=r"\(SAC\) is not supported; supported: DQN, PPO and A2C"):
        load_sb3(tmp_path / "sac.zip", game="Breakout")


def test_game_is_read_from_the_path_or_named(tmp_path, sb3_dqn):
    assert infer_game("rl-trained-agents/dqn/BreakoutNoFrameskip-v4_1/BreakoutNoFrameskip-v4.zip") == "Breakout"
    assert infer_game("cleanrl/ALE/Pong-v5__ppo_atari__1__1700000000/ppo_atari.cleanrl_model") == "Pong"
    plain = tmp_path / "model.zip"
    plain.write_bytes(sb3_dqn[1].read_bytes())
    with pytest.raises(ValueError, match="cannot tell the game of .* name the game explicitly, e.g. 'sb3:Breakout:PATH'"):
        load_agent(f"sb3:{plain}")
    assert load_agent(f"sb3:Breakout:{plain}").game == "Breakout"
    with pytest.raises(ValueError, match="has 4 actions but SpaceInvaders's minimal action set has 6"):
        load_agent(f"sb3:SpaceInvaders:{plain}")
    with pytest.raises(ValueError, match="unknown game 'Tetris'; valid values are"):
        load_sb3(plain, game="Tetris")


# -- CleanRL ---------------------------------------------------------------------------------
# The network definitions of CleanRL's dqn_atari.py and ppo_atari.py (vwxyzjn/cleanrl, MIT).
class CleanRLQNetwork(nn.Module):
    def __init__(self, n_actions):
        super().__init__()
        self.network = nn.Sequential(
            nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
            nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(), nn.Flatten(), nn.Linear(3136, 512), nn.ReLU(),
            nn.Linear(512, n_actions),
        )

    def forward(self, x):
        return self.network(x / 255.0)


def layer_init(layer, std=2**0.5, bias_const=0.0):  # CleanRL: std=np.sqrt(2)
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class CleanRLAgent(nn.Module):
    def __init__(self, n_actions):
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(4, 32, 8, stride=4)), nn.ReLU(), layer_init(nn.Conv2d(32, 64, 4, stride=2)), nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)), nn.ReLU(), nn.Flatten(),
            layer_init(nn.Linear(64 * 7 * 7, 512)), nn.ReLU(),
        )
        self.actor = layer_init(nn.Linear(512, n_actions), std=0.01)
        self.critic = layer_init(nn.Linear(512, 1), std=1)

    def get_value(self, x):
        return self.critic(self.network(x / 255.0))

    def get_action_and_value(self, x, action=None):
        hidden = self.network(x / 255.0)
        logits = self.actor(hidden)
        probs = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden)


@pytest.fixture(scope="module")
def cleanrl_obs() -> np.ndarray:
    """Observations (N, 4, 84, 84) uint8 of CleanRL's Atari env (gymnasium 1.x names of its wrappers)."""
    env = gym.make(ENV_ID)
    env = FireResetEnv(EpisodicLifeEnv(MaxAndSkipEnv(NoopResetEnv(env, noop_max=30), skip=4)))
    env = ClipRewardEnv(env)
    env = gym.wrappers.FrameStackObservation(gym.wrappers.GrayscaleObservation(gym.wrappers.ResizeObservation(env, (84, 84))), 4)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(8):
        obs, *_ = env.step(int(rng.integers(4)))
        out.append(np.asarray(obs))
    env.close()
    return np.stack(out)


def _cleanrl_file(root, script, net):
    d = root / f"{ENV_ID}__{script}__1__1700000000"
    d.mkdir()
    path = d / f"{script}.cleanrl_model"
    torch.save(net.state_dict(), path)
    return path


def test_cleanrl_dqn_atari_equals_qnetwork(tmp_path, cleanrl_obs):
    torch.manual_seed(0)
    net = CleanRLQNetwork(4)
    path = _cleanrl_file(tmp_path, "dqn_atari", net)
    agent = load_agent(f"cleanrl:{path}")
    assert isinstance(agent, QAgent) and agent.game == "Breakout"
    with torch.no_grad():
        ref = net(torch.Tensor(cleanrl_obs))
        out = agent(states_from_obs(cleanrl_obs, layout="NCHW"))
    torch.testing.assert_close(out["q"], ref, rtol=0, atol=ATOL)
    np.testing.assert_array_equal(out["q"].argmax(1).numpy(), ref.argmax(1).numpy())
    assert agent.meta["algorithm"] == "dqn_atari" and agent.meta["policy"] == "QNetwork"
    assert agent.meta["source"] == f"cleanrl:{path}" and agent.meta["sha256"] == sha256_file(path)


def test_cleanrl_ppo_atari_equals_agent(tmp_path, cleanrl_obs):
    torch.manual_seed(0)
    net = CleanRLAgent(4)
    path = _cleanrl_file(tmp_path, "ppo_atari", net)
    agent = load_cleanrl(path)
    assert isinstance(agent, ActorCriticAgent) and agent.meta["algorithm"] == "ppo_atari"
    x = torch.Tensor(cleanrl_obs)
    with torch.no_grad():
        hidden = net.network(x / 255.0)
        logits, value = net.actor(hidden), net.get_value(x)[:, 0]
        _, logprob, _, _ = net.get_action_and_value(x, logits.argmax(1))
        out = agent(states_from_obs(cleanrl_obs, layout="NCHW"))
    torch.testing.assert_close(out["logits"], logits, rtol=0, atol=ATOL)
    torch.testing.assert_close(out["value"], value, rtol=0, atol=ATOL)
    torch.testing.assert_close(out["probs"].max(1).values.log(), logprob, rtol=0, atol=ATOL)


def test_cleanrl_bad_files_give_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no CleanRL model at"):
        load_cleanrl(tmp_path / "missing.cleanrl_model", game="Breakout")
    junk = tmp_path / "junk.cleanrl_model"
    junk.write_bytes(np.random.default_rng(0).bytes(1000))
    with pytest.raises(ValueError, match="is not a tensors-only PyTorch state dict"):
        load_cleanrl(junk, game="Breakout")
    whole = tmp_path / "module.cleanrl_model"
    torch.save(CleanRLQNetwork(4), whole)  # a pickled module, not a state dict: refused, never executed
    with pytest.raises(ValueError, match="is not a tensors-only PyTorch state dict"):
        load_cleanrl(whole, game="Breakout")
    other = tmp_path / "c51.cleanrl_model"
    torch.save({"network.0.weight": torch.zeros(1), "atoms": torch.zeros(51)}, other)
    with pytest.raises(ValueError, match=r"matches neither CleanRL dqn_atari\.py .* \(a C51 model"):
        load_cleanrl(other, game="Breakout")


# -- wrap_agent ------------------------------------------------------------------------------
class _TupleActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.AvgPool2d(12), nn.Flatten(), nn.Linear(4 * 7 * 7, 8), nn.ReLU())
        self.pi, self.v = nn.Linear(8, 4), nn.Linear(8, 1)

    def forward(self, x):
        h = self.body(x)
        return self.pi(h), self.v(h)


def test_wrap_agent_q_module_and_cleanrl_scale():
    torch.manual_seed(0)
    net = CleanRLQNetwork(4)  # divides by 255 itself
    agent = wrap_agent(net, outputs="q", game="Breakout", input_scale=255.0)
    x = torch.randint(0, 256, (3, 4, 84, 84)).float() / 255
    with torch.no_grad():
        torch.testing.assert_close(agent(x)["q"], net(x * 255), rtol=0, atol=ATOL)
    assert isinstance(agent, QAgent) and agent.n_actions == 4 and agent.outputs == ("q", "advantage")
    assert agent.meta["source"] == "wrap_agent:CleanRLQNetwork" and len(agent.meta["weights_sha256"]) == 64
    with pytest.raises(TypeError, match="CleanRLQNetwork does not declare layer_groups"):
        agent.layer_groups()


def test_wrap_agent_tuple_and_dict_outputs():
    torch.manual_seed(0)
    net = _TupleActorCritic()
    agent = wrap_agent(net, outputs=("logits", "value"), game="Breakout", n_actions=4)
    x = torch.rand(5, 4, 84, 84)
    out = agent(x)
    assert isinstance(agent, ActorCriticAgent) and out["value"].shape == (5,) and out["logits"].shape == (5, 4)
    torch.testing.assert_close(out["probs"].sum(1), torch.ones(5))
    assert agent.outputs == ("logits", "probs", "value")

    class DictNet(_TupleActorCritic):
        def forward(self, x):
            h = self.body(x)
            return {"logits": self.pi(h), "value": self.v(h)[:, 0], "features": h, "extra": h}

    agent = wrap_agent(DictNet(), outputs=["logits", "value", "features"], game="Breakout")
    assert agent(x)["features"].shape == (5, 8)


def test_wrap_agent_validates():
    net = _TupleActorCritic()
    with pytest.raises(ValueError, match="returned 2 values but outputs declares 1"):
        wrap_agent(net, outputs="logits", game="Breakout")
    with pytest.raises(ValueError, match=r"returned a dict with keys .* missing \['features'\]"):
        wrap_agent(_DictOnly(), outputs=("q", "features"), game="Breakout")
    with pytest.raises(ValueError, match="returned one tensor but outputs declares 2"):
        wrap_agent(CleanRLQNetwork(4), outputs=("logits", "value"), game="Breakout")
    with pytest.raises(ValueError, match=r"has 4 actions but n_actions=6"):
        wrap_agent(CleanRLQNetwork(4), outputs="q", game="Breakout", n_actions=6)
    with pytest.raises(ValueError, match=r"failed on a dummy batch of preset 'mask_a3c' states, shape \(2, 1, 80, 80\)"):
        wrap_agent(CleanRLQNetwork(4), outputs="q", game="Breakout", preset="mask_a3c")
    with pytest.raises(ValueError, match="unknown names \\['action'\\]; valid names: q, logits, value, features"):
        wrap_agent(net, outputs=("action",), game="Breakout")
    with pytest.raises(ValueError, match="exactly one of 'q' .* or 'logits'"):
        wrap_agent(net, outputs=("q", "logits"), game="Breakout")
    with pytest.raises(ValueError, match="'value' goes with 'logits'"):
        wrap_agent(net, outputs=("q", "value"), game="Breakout")
    with pytest.raises(ValueError, match="unknown preset 'atari'"):
        wrap_agent(net, outputs=("logits", "value"), game="Breakout", preset="atari")
    with pytest.raises(ValueError, match="unknown game 'Tetris'"):
        wrap_agent(net, outputs=("logits", "value"), game="Tetris")
    with pytest.raises(ValueError, match="input_scale must be a positive number"):
        wrap_agent(net, outputs=("logits", "value"), game="Breakout", input_scale=0)
    with pytest.raises(TypeError, match="module must be a torch.nn.Module, got function"):
        wrap_agent(lambda x: x, outputs="q", game="Breakout")


class _DictOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4 * 84 * 84, 3)

    def forward(self, x):
        return {"q": self.lin(x.flatten(1))}


# -- end to end: an SB3 agent through an explainer, a metric and the CLI ---------------------
def test_sb3_agent_through_explainer_and_insertion(sb3_dqn, sb3_ppo, sb3_obs):
    from saliency_lib.explainers import get_explainer
    from saliency_lib.metrics import Insertion

    x = states_from_obs(sb3_obs[:2], layout="NHWC")
    for _, path in (sb3_dqn, sb3_ppo):
        agent = load_agent(f"sb3:{path}")
        result = get_explainer("occlusion", agent, patch=12).attribute(x)
        assert result.maps.shape == (2, 84, 84) and torch.isfinite(result.maps).all()
        table = Insertion(pixels_per_step=84 * 12, store_outputs=False).evaluate(agent, x, saliency=result, method="occlusion")
        aucs = table[table["measure"].str.endswith("_auc")]
        assert len(aucs) == 2 * 2 and np.isfinite(aucs["value"].astype(float)).all()


def test_cli_evaluates_an_sb3_agent(sb3_dqn, capsys):
    from saliency_lib.cli import main

    assert main(["evaluate", f"sb3:{sb3_dqn[1]}", "--episodes", "1", "--max-steps", "40", "--quiet"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["game"] == "Breakout" and result["preset"] == "dqn" and result["steps"] == 40


def test_loading_never_unpickles_sb3_data(sb3_dqn, monkeypatch):
    """The cloudpickled fields of SB3's data JSON are never loaded."""
    import pickle

    def refuse(*args, **kwargs):
        raise AssertionError("pickle.loads called")

    monkeypatch.setattr(pickle, "loads", refuse)
    assert load_sb3(sb3_dqn[1]).n_actions == 4


def test_load_agent_in_a_fresh_process(sb3_dqn):
    """load_agent registers the ALE environments itself (nothing imported saliency_lib.envs before)."""
    import subprocess
    import sys

    code = f"from saliency_lib.agents import load_agent; print(load_agent({f'sb3:{sb3_dqn[1]}'!r}).game)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "Breakout"
