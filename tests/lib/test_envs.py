import numpy as np
import pytest

from saliency_lib.envs import make_env, obs_shape, process_mask_a3c_frame, raw_frame
from saliency_lib.games import game_info, mask_a3c_crop


@pytest.mark.parametrize("preset,mode", [("dqn", "eval"), ("dqn", "train"), ("mask_a3c", "eval"), ("mask_a3c", "train")])
def test_shapes_dtypes_ranges(preset, mode):
    env = make_env("Breakout", preset, mode=mode)
    obs, _ = env.reset(seed=0)
    assert obs.shape == obs_shape(preset) and obs.dtype == np.float32
    for _ in range(30):
        obs, r, term, trunc, info = env.step(env.action_space.sample())
    assert obs.shape == obs_shape(preset) and obs.dtype == np.float32
    if preset == "dqn":
        assert obs.min() >= 0.0 and obs.max() <= 1.0 and obs.max() > 0.1
    else:  # running normalisation: roughly zero-mean, unit-std frames
        assert abs(float(obs.mean())) < 2.0 and 0.1 < float(obs.std()) < 10.0
    assert raw_frame(env).shape == (210, 160, 3)


def test_dqn_stack_starts_with_zeros_and_shifts():
    env = make_env("Breakout", "dqn", mode="eval")
    obs, _ = env.reset(seed=0)
    assert np.all(obs[:3] == 0) and obs[3].max() > 0  # zeros, newest frame last
    obs2, *_ = env.step(0)
    np.testing.assert_array_equal(obs2[2], obs[3])


def test_same_seed_same_frames():
    def run(seed):
        env = make_env("MsPacman", "dqn", mode="train")
        obs, _ = env.reset(seed=seed)
        out = [obs]
        rng = np.random.default_rng(0)
        for _ in range(50):
            obs, *_ = env.step(int(rng.integers(env.action_space.n)))
            out.append(obs)
        return np.stack(out)

    a, b = run(3), run(3)
    np.testing.assert_array_equal(a, b)


def test_fixed_start_protocol_is_deterministic_and_full():
    frames = []
    for _ in range(2):
        env = make_env("MsPacman", "dqn", mode="eval", fixed_start=True)
        obs, _ = env.reset(seed=123)
        frames.append(obs)
        # after the 4 fill steps every slot of the stack holds a real frame
        assert all(obs[i].max() > 0 for i in range(4))
    np.testing.assert_array_equal(frames[0], frames[1])
    # Pac-Man's fixed start: 250 + 1 NOOPs in reset, then 200 raw NOOPs, then 4 fill steps of 4 frames
    env = make_env("MsPacman", "dqn", mode="eval", fixed_start=True)
    env.reset(seed=0)
    assert env.unwrapped.ale.getEpisodeFrameNumber() == 250 + 1 + 200 + 16


def test_fixed_start_breakout_fill_action_is_fire():
    info = game_info("Breakout")
    assert info.fill_action == 1 and info.fixed_start_noops == 1 and info.fire_reset


def test_train_mode_episodic_life_and_reward_scaling():
    env = make_env("MsPacman", "dqn", mode="train")
    env.reset(seed=0)
    rewards, lives_before = [], env.unwrapped.ale.lives()
    for _ in range(3000):
        _, r, term, trunc, _ = env.step(env.action_space.sample())
        rewards.append(r)
        if term:
            break
    assert term and env.unwrapped.ale.lives() == lives_before - 1  # a life loss ends the training episode
    nz = [r for r in rewards if r]
    assert nz and all(float(r).is_integer() for r in nz)  # Pac-Man rewards / 10 are integers (1 per pellet)


def test_mask_a3c_eval_flags_life_loss_and_plays_on():
    env = make_env("Breakout", "mask_a3c", mode="eval")
    env.reset(seed=0)
    flagged = False
    for _ in range(2000):
        _, _, term, trunc, info = env.step(env.action_space.sample())
        flagged |= info["life_lost"]
        if term or trunc:
            break
    assert flagged and term and env.unwrapped.ale.lives() == 0


def test_mask_a3c_frame_processing_matches_hand_computation():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (210, 160, 3), dtype=np.uint8)
    crop = mask_a3c_crop("SpaceInvaders")
    assert crop == (8, 36, 94)
    x = process_mask_a3c_frame(rgb, crop)
    assert x.shape == (1, 80, 80) and x.dtype == np.float32
    import cv2

    gray = rgb[8:196].astype(np.float32).mean(-1) / 255.0
    ref = cv2.resize(cv2.resize(gray, (80, 94)), (80, 80))
    np.testing.assert_allclose(x[0], ref, atol=1e-6)
    assert mask_a3c_crop("FishingDerby") == mask_a3c_crop("Breakout") == (34, 34, 80)  # Default


def test_vector_env_frames_equal_the_preset():
    """ale-py's vector env (used for training) gives the dqn preset's frames pixel for pixel."""
    import cv2
    from ale_py.vector_env import AtariVectorEnv

    kw = dict(noop_max=30, episodic_life=False, reward_clipping=False, use_fire_reset=False)
    a = AtariVectorEnv("breakout", 1, grayscale=False, img_height=210, img_width=160, stack_num=1, **kw)
    b = AtariVectorEnv("breakout", 1, **kw)
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(60):
        act = rng.integers(0, 4, 1)
        oa, *_ = a.step(act)
        ob, *_ = b.step(act)
        rgb = np.ascontiguousarray(oa[0, 0] if oa.ndim == 5 else oa[0])
        ours = cv2.resize(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), (84, 84), interpolation=cv2.INTER_AREA)
        np.testing.assert_array_equal(ours, ob[0, -1])


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(game="Pacman"), "unknown game 'Pacman'; valid games are: .*MsPacman"),
        (dict(game="Breakout", preset="ppo"), "unknown preset 'ppo'; valid values are: dqn, mask_a3c"),
        (dict(game="Breakout", mode="test"), "unknown mode 'test'"),
        (dict(game="Breakout", preset="mask_a3c", fixed_start=True), "fixed_start"),
    ],
)
def test_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_env(**kwargs)


@pytest.mark.parametrize("preset", ["dqn", "mask_a3c"])
def test_sticky_actions_reach_the_emulator_through_the_wrappers(preset):
    """Sticky actions are ALE's own (per raw frame), seeded by reset(seed), and change the game."""
    def run(p, seed=5):
        kw = dict(fixed_start=True) if preset == "dqn" else {}
        env = make_env("Breakout", preset, mode="eval", repeat_action_probability=p, **kw)
        assert env.unwrapped.ale.getFloat("repeat_action_probability") == pytest.approx(p)
        obs, _ = env.reset(seed=seed)
        out = [obs]
        for t in range(120):  # alternate LEFT and RIGHT every step: a sticky frame keeps the other one
            obs, *_ = env.step(2 + t % 2)
            out.append(obs)
        return np.stack(out)

    greedy, sticky = run(0.0), run(0.25)
    np.testing.assert_array_equal(sticky, run(0.25))  # the same seed plays the same sticky game
    np.testing.assert_array_equal(greedy, run(0.0))
    assert not np.array_equal(greedy, sticky)
    assert not np.array_equal(sticky, run(0.25, seed=6))  # another seed, other sticky frames
    with pytest.raises(ValueError, match="repeat_action_probability"):
        make_env("Breakout", preset, repeat_action_probability=1.0)


def test_rgb_mean_gray_is_numpys_float32_mean_bit_for_bit():
    from saliency_lib.envs import rgb_mean_gray

    rng = np.random.default_rng(1)
    for shape in [(210, 160, 3), (16, 210, 160, 3), (3, 5, 3)]:
        rgb = rng.integers(0, 256, shape, dtype=np.uint8)
        rgb.reshape(-1, 3)[:4] = [[255, 255, 255], [0, 0, 0], [255, 254, 253], [1, 0, 0]]  # the extremes and 1/3
        crop = rgb[..., 1:, :, :] if rgb.ndim > 3 else rgb[1:]  # a strided view, as the trainer passes
        assert np.array_equal(rgb_mean_gray(crop), crop.mean(axis=-1, dtype=np.float32))
        assert np.array_equal(rgb_mean_gray(crop) / 255.0, crop.mean(axis=-1, dtype=np.float32) / 255.0)
    with pytest.raises(ValueError, match="RGB"):
        rgb_mean_gray(np.zeros((4, 4), dtype=np.uint8))
