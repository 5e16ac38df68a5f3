"""Keras HDF5 Q-networks as agents (``keras:[<Game>:]PATH.h5``, :mod:`saliency_lib.agents.keras`).

Three sources of truth:

* files written by real Keras (Keras 3 on its torch backend, no TensorFlow): the loaded
  agent's Q-values must equal Keras' own forward pass;
* a file written with h5py in the Keras 2 layout of Huber et al.'s models (the authors'
  converter's layer names, ``model_weights/<layer>/<layer>/kernel:0``, bytes attributes),
  checked against a channels-last network built here by hand (NHWC patches, TF-SAME
  padding, H-W-C flatten) that shares no code with the loader;
* every bad layout is refused with a message that names what the file holds.
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

h5py = pytest.importorskip("h5py")

from saliency_lib.agents import QAgent, load_agent, load_keras, save_agent  # noqa: E402
from saliency_lib.agents.dqn import DQNNet  # noqa: E402
from saliency_lib.agents.keras import keras_game_from_path, read_keras_h5  # noqa: E402
from saliency_lib.explainers import get_explainer  # noqa: E402

# Keras 3's torch backend calls np.array(tensor) in a way numpy 2 warns about; not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")

ATOL = 1e-5
#: The authors' converter names its layers after the baselines TF variables (reference notes §1.3).
K2_NAMES = ("input_1", "deepq/q_func/convnet/Conv", "deepq/q_func/convnet/Conv_1", "deepq/q_func/convnet/Conv_2", "flatten_1",
            "deepq/q_func/action_value/fully_connected", "deepq/q_func/action_value/fully_connected_1")


def _states(n: int, seed: int = 0) -> torch.Tensor:
    """``n`` states of the ``dqn`` preset: frames of k / 255 with a few black and white pixels."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, (n, 4, 84, 84), generator=g).float() / 255
    x[:, :, :10, :10] = 0.0
    x[:, :, -5:, -5:] = 1.0
    return x


# -- files written by Keras 3 ---------------------------------------------------------------
@pytest.fixture(scope="module")
def keras_lib():
    if "keras" not in sys.modules:
        os.environ["KERAS_BACKEND"] = "torch"  # before the first import; Keras 3 then needs no TensorFlow
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "torch":
        pytest.skip(f"keras was imported with the {keras.backend.backend()!r} backend; these tests use the torch backend")
    return keras


def _keras_model(keras, *, padding: str, hidden: int, n_actions: int, functional: bool, seed: int):
    """The paper's network in Keras, with random (non-zero) biases so that their mapping is tested too."""
    keras.utils.set_random_seed(seed)
    L = keras.layers

    def init(i):
        return {"kernel_initializer": keras.initializers.GlorotUniform(seed=seed + i),
                "bias_initializer": keras.initializers.RandomUniform(-0.1, 0.1, seed=seed + 10 + i)}

    body = [L.Conv2D(32, 8, strides=4, padding=padding, activation="relu", name="conv_a", **init(0)),
            L.Conv2D(64, 4, strides=2, padding=padding, activation="relu", name="conv_b", **init(1)),
            L.Conv2D(64, 3, strides=1, padding=padding, activation="relu", name="conv_c", **init(2)),
            L.Flatten(name="flatten"),
            L.Dense(hidden, activation="relu", name="fc_1", **init(3)),
            L.Dense(n_actions, name="fc_2", **init(4))]
    if not functional:
        return keras.Sequential([keras.Input((84, 84, 4)), *body])
    inputs = keras.Input((84, 84, 4), name="frames")
    x = inputs
    for layer in body:
        x = layer(x)
    return keras.Model(inputs, x)


@pytest.fixture(scope="module")
def keras_files(keras_lib, tmp_path_factory):
    """Two models saved by Keras 3 as .h5, named like the authors' files, with Keras' Q-values on 20 states.

    Breakout: Sequential, TF 'same' padding, 256 hidden units (the paper's network);
    SpaceInvaders: Functional, 'valid' padding, 512 hidden units.
    """
    keras = keras_lib
    root = tmp_path_factory.mktemp("keras3")
    states = _states(20)
    x = states.permute(0, 2, 3, 1).numpy()  # our states → Keras' channels-last input
    out = {}
    for game, fname, kw in (("Breakout", "BreakoutIngame_5M.h5",
                             dict(padding="same", hidden=256, n_actions=4, functional=False, seed=1)),
                            ("SpaceInvaders", "SpaceInvadersIngame_5M.h5",
                             dict(padding="valid", hidden=512, n_actions=6, functional=True, seed=2))):
        model = _keras_model(keras, **kw)
        q = np.asarray(keras.ops.convert_to_numpy(model(x, training=False)))
        path = root / fname
        model.save(path)
        out[game] = (path, q, kw)
    return states, out


@pytest.mark.slow  # importing Keras takes 20-40 s here
@pytest.mark.parametrize("game", ["Breakout", "SpaceInvaders"])
def test_keras3_file_q_values_equal_keras(keras_files, game):
    states, files = keras_files
    path, q_keras, kw = files[game]
    agent = load_agent(f"keras:{path}")  # the game is read from the file name
    assert isinstance(agent, QAgent) and isinstance(agent.net, DQNNet) and agent.game == game and agent.preset == "dqn"
    with torch.no_grad():
        q = agent(states)["q"].numpy()
    assert q.shape == (20, kw["n_actions"])
    assert np.abs(q - q_keras).max() <= ATOL, np.abs(q - q_keras).max()
    assert (q.argmax(1) == q_keras.argmax(1)).all()
    arch = agent.meta["architecture"]
    assert arch["padding"] == kw["padding"] and arch["padding_from"] == "model_config"
    assert arch["hidden"] == kw["hidden"] and arch["dueling"] is False and arch["n_actions"] == kw["n_actions"]
    assert [lay["kind"] for lay in arch["layers"]] == [*("InputLayer",) * kw["functional"], "Conv2D", "Conv2D", "Conv2D",
                                                       "Flatten", "Dense", "Dense"]
    assert [lay.get("strides") for lay in arch["layers"] if lay["kind"] == "Conv2D"] == [[4, 4], [2, 2], [1, 1]]
    assert agent.meta["keras_version"].startswith("3.") and agent.meta["backend"] == "torch"
    assert agent.meta["source"] == f"keras:{path}" and len(agent.meta["sha256"]) == 64
    assert [name for name, _ in agent.layer_groups()] == ["output", "fc", "conv3", "conv2", "conv1"]


@pytest.mark.slow  # importing Keras takes 20-40 s here
def test_keras3_agent_is_explained_end_to_end_and_saved(keras_files, tmp_path):
    states, files = keras_files
    agent = load_agent(f"keras:Breakout:{files['Breakout'][0]}")
    att = get_explainer("occlusion", agent).attribute(states[:2])
    assert att.maps.shape == (2, 84, 84) and torch.isfinite(att.maps).all() and att.maps.abs().sum() > 0
    assert torch.equal(att.target, agent.act(states[:2]))
    again = load_agent(save_agent(agent, tmp_path / "huber-Breakout"))  # converted once to our checkpoint format
    with torch.no_grad():
        assert torch.equal(again(states)["q"], agent(states)["q"])
    assert again.meta["architecture"] == agent.meta["architecture"]


@pytest.mark.slow  # importing Keras takes 20-40 s here
def test_study_plans_a_keras_agent(keras_files, tmp_path, capsys):
    """``saliency-study run --agents keras:Breakout:PATH --profile full`` plans its units (``--status`` computes nothing).

    The ``run`` command's own parser and function, without the commands that other packages add.
    """
    import argparse

    from saliency_study.commands.run import add_run_parser

    parser = argparse.ArgumentParser()
    add_run_parser(parser.add_subparsers(dest="command"))
    spec = f"keras:Breakout:{keras_files[1]['Breakout'][0]}"
    args = parser.parse_args(["run", "--profile", "full", "--games", "Breakout", "--status", "--agents", spec,
                              "--results-dir", str(tmp_path)])
    assert args.func(args) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    (row,) = got["agents"]
    assert row["agent"] == spec and row["game"] == "Breakout" and row["n_states"] == 997
    assert row["units_total"] > 0 and row["units_done"] == 0


# -- a Keras 2 file written with h5py ---------------------------------------------------------
def _known_weights(n_actions: int = 4, hidden: int = 256, padding: str = "same",
                   seed: int = 3) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    side = 11 if padding == "same" else 7
    shapes = [(8, 8, 4, 32), (4, 4, 32, 64), (3, 3, 64, 64), (side * side * 64, hidden), (hidden, n_actions)]
    out = {}
    for name, shape in zip(K2_NAMES[1:4] + K2_NAMES[5:], shapes):
        fan_in = int(np.prod(shape[:-1]))
        out[name] = ((rng.standard_normal(shape) * math.sqrt(2 / fan_in)).astype(np.float32),
                     (0.1 * rng.standard_normal(shape[-1])).astype(np.float32))
    return out


def _k2_layer_config(name: str, kernel: np.ndarray | None, padding: str) -> tuple[str, dict]:
    if name.startswith("input"):
        return "InputLayer", {"batch_input_shape": [None, 84, 84, 4], "dtype": "float32", "sparse": False, "name": name}
    if name.startswith("flatten"):
        return "Flatten", {"name": name, "trainable": True, "data_format": "channels_last"}
    if kernel is None:  # a layer the test names itself (its class comes from ``classes``)
        return "Layer", {"name": name, "trainable": True}
    if kernel.ndim == 4:
        k, s = kernel.shape[0], {8: 4, 4: 2, 3: 1}[kernel.shape[0]]
        return "Conv2D", {"name": name, "trainable": True, "filters": int(kernel.shape[3]), "kernel_size": [k, k],
                          "strides": [s, s], "padding": padding, "data_format": "channels_last", "dilation_rate": [1, 1],
                          "activation": "relu", "use_bias": True}
    return "Dense", {"name": name, "trainable": True, "units": int(kernel.shape[1]),
                     "activation": "relu" if name.endswith("fully_connected") else "linear", "use_bias": True}


def write_keras2_h5(path, weights: dict, *, names=K2_NAMES, padding: str = "same", config: bool = True,
                    weights_only: bool = False, classes: dict | None = None, overrides: dict | None = None,
                    extra_weights: dict | None = None) -> None:
    """A Keras 2.2.4 HDF5 model as Keras 2 writes it: bytes attributes, weight datasets at ``<layer>/<layer>/kernel:0``.

    ``weights`` maps layer names to (kernel, bias); weightless layers are the other ``names``.
    ``classes`` and ``overrides`` change a layer's class name or config; ``extra_weights`` maps a
    layer name to other named weights (e.g. a BatchNormalization's).
    """
    classes, overrides, extra_weights = classes or {}, overrides or {}, extra_weights or {}
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = np.bytes_("2.2.4")
        f.attrs["backend"] = np.bytes_("tensorflow")
        layers_cfg, prev = [], None
        for name in names:
            cls, cfg = _k2_layer_config(name, weights[name][0] if name in weights else None, padding)
            cfg.update(overrides.get(name, {}))
            layers_cfg.append({"name": name, "class_name": classes.get(name, cls), "config": cfg,
                               "inbound_nodes": [] if prev is None else [[[prev, 0, 0, {}]]]})
            prev = name
        if config and not weights_only:
            model = {"class_name": "Model", "config": {"name": "model_1", "layers": layers_cfg,
                                                       "input_layers": [[names[0], 0, 0]], "output_layers": [[names[-1], 0, 0]]}}
            f.attrs["model_config"] = np.bytes_(json.dumps(model))
        g = f if weights_only else f.create_group("model_weights")
        g.attrs["layer_names"] = np.array([n.encode("utf8") for n in names])
        g.attrs["backend"], g.attrs["keras_version"] = np.bytes_("tensorflow"), np.bytes_("2.2.4")
        for name in names:
            lg = g.create_group(name)
            arrays = dict(zip(("kernel", "bias"), weights[name])) if name in weights else {}
            arrays.update(extra_weights.get(name, {}))
            wnames = [f"{name}/{b}:0" for b in arrays]
            # Keras 2 stores an empty list as an empty float array
            lg.attrs["weight_names"] = np.array([w.encode("utf8") for w in wnames]) if wnames else np.array([])
            for wname, arr in zip(wnames, arrays.values()):
                lg.create_dataset(wname, data=arr)


def _conv_nhwc_same(x: torch.Tensor, kernel: np.ndarray, bias: np.ndarray, stride: int) -> torch.Tensor:
    """TF-SAME convolution on channels-last input, by explicit patches (independent of torch's conv2d)."""
    k = kernel.shape[0]
    n_in = x.shape[1]
    n_out = math.ceil(n_in / stride)
    pad = max((n_out - 1) * stride + k - n_in, 0)
    x = F.pad(x, (0, 0, pad // 2, pad - pad // 2, pad // 2, pad - pad // 2))  # (C), W, H: the extra pixel goes after
    patches = x.unfold(1, k, stride).unfold(2, k, stride)  # (N, H', W', C, kh, kw)
    return torch.einsum("nhwcij,ijcd->nhwd", patches, torch.from_numpy(kernel).double()) + torch.from_numpy(bias).double()


def _reference_q(weights: dict, states: torch.Tensor) -> torch.Tensor:
    """The Keras network by hand, in float64: NHWC throughout, flatten in H, W, C order, Keras kernels as stored."""
    x = states.double().permute(0, 2, 3, 1)
    for name, stride in zip(K2_NAMES[1:4], (4, 2, 1)):
        x = torch.relu(_conv_nhwc_same(x, *weights[name], stride))
    assert x.shape[1:] == (11, 11, 64)
    h = x.reshape(len(x), -1)  # H, W, C order: what Keras' Flatten does on channels-last maps
    (k1, b1), (k2, b2) = (weights[n] for n in K2_NAMES[5:])
    h = torch.relu(h @ torch.from_numpy(k1).double() + torch.from_numpy(b1).double())
    return h @ torch.from_numpy(k2).double() + torch.from_numpy(b2).double()


@pytest.fixture(scope="module")
def k2_weights():
    return _known_weights()


def test_reference_network_is_tf_same():
    """The hand-built reference: output sides 21, 11, 11 for 84 input, and one pixel of padding after, not before, on conv2."""
    x = torch.zeros(1, 21, 21, 1, dtype=torch.float64)
    x[0, 20, 20, 0] = 1.0  # the last pixel: reached by the last window only through the padding after
    k = np.zeros((4, 4, 1, 1), np.float32)
    k[1, 1, 0, 0] = 1.0  # picks input (2i - 1 + 1, 2j - 1 + 1) = (2i, 2j): pad 1 before
    y = _conv_nhwc_same(x, k, np.zeros(1, np.float32), 2)
    assert y.shape == (1, 11, 11, 1) and y[0, 10, 10, 0] == 1.0 and y.sum() == 1.0


def test_keras2_file_q_values_equal_the_hand_built_network(tmp_path, k2_weights):
    path = tmp_path / "BreakoutIngame_5M.h5"
    write_keras2_h5(path, k2_weights)
    agent = load_agent(f"keras:{path}")
    states = _states(20, seed=5)
    with torch.no_grad():
        q = agent(states)["q"].double()
    ref = _reference_q(k2_weights, states)
    assert (q - ref).abs().max() <= ATOL, (q - ref).abs().max()
    assert torch.equal(q.argmax(1), ref.argmax(1)) and ref.std() > 0.1  # the outputs are not degenerate
    assert agent.meta["keras_version"] == "2.2.4" and agent.meta["backend"] == "tensorflow"
    arch = agent.meta["architecture"]
    assert [lay["name"] for lay in arch["layers"]] == list(K2_NAMES)
    assert arch["layers"][0]["input_shape"] == [84, 84, 4] and arch["padding"] == "same" and arch["hidden"] == 256
    conv = (8 * 8 * 4 + 1) * 32 + (4 * 4 * 32 + 1) * 64 + (3 * 3 * 64 + 1) * 64
    assert arch["n_params"] == conv + (7744 + 1) * 256 + 257 * 4 == 2_061_732  # the reference notes' 2.06 M + 257·|A|


def test_keras2_weights_only_file_reads_the_padding_from_the_fc_size(tmp_path, k2_weights):
    full, bare = tmp_path / "full" / "FrostbiteIngame_5M.h5", tmp_path / "bare" / "weights.h5"
    for p in (full, bare):
        p.parent.mkdir()
    weights = {**k2_weights, K2_NAMES[-1]: _known_weights(n_actions=18)[K2_NAMES[-1]]}
    write_keras2_h5(full, weights)
    write_keras2_h5(bare, weights, weights_only=True)
    a, b = load_agent(f"keras:{full}"), load_agent(f"keras:Frostbite:{bare}")
    assert a.game == b.game == "Frostbite" and a.n_actions == 18
    states = _states(3, seed=7)
    with torch.no_grad():
        assert torch.equal(a(states)["q"], b(states)["q"])
    arch = b.meta["architecture"]
    assert b.meta["file_format"].startswith("weights only") and b.meta["keras_version"] == "2.2.4"
    assert arch["padding"] == "same" and arch["padding_from"] == "size of the fc input"
    assert arch["strides_from"].startswith("assumed")


def test_read_keras_h5_returns_the_layers_in_file_order(tmp_path, k2_weights):
    path = tmp_path / "m.h5"
    write_keras2_h5(path, k2_weights)
    read = read_keras_h5(path)
    assert [n for n, _ in read["layers"]] == list(K2_NAMES)
    assert [sorted(w) for _, w in read["layers"]] == [[], *[["bias", "kernel"]] * 3, [], *[["bias", "kernel"]] * 2]
    np.testing.assert_array_equal(read["layers"][1][1]["kernel"], k2_weights[K2_NAMES[1]][0])
    assert read["model_config"]["class_name"] == "Model"


# -- refusals -----------------------------------------------------------------------------------
def _without(names, drop):
    return tuple(n for n in names if n != drop)


def test_a_missing_layer_is_refused_naming_what_was_found(tmp_path, k2_weights):
    path = tmp_path / "Breakout.h5"
    write_keras2_h5(path, k2_weights, names=_without(K2_NAMES, K2_NAMES[3]))
    with pytest.raises(ValueError, match=r"found 2 Conv2D and 2 Dense in this order: 'input_1' \(InputLayer\); "
                                         r"'deepq/q_func/convnet/Conv' \(Conv2D: kernel \(8, 8, 4, 32\)"):
        load_keras(path)
    # a layer listed in layer_names whose group is gone
    write_keras2_h5(path, k2_weights)
    with h5py.File(path, "a") as f:
        del f["model_weights/deepq/q_func/convnet/Conv_2"]
    with pytest.raises(ValueError, match=r"layer 'deepq/q_func/convnet/Conv_2' is listed in layer_names but has no group"):
        load_keras(path)
    # a weight listed in weight_names whose dataset is gone
    write_keras2_h5(path, k2_weights)
    with h5py.File(path, "a") as f:
        del f["model_weights/flatten_1"]
        f["model_weights"].create_group("flatten_1")
        del f["model_weights/deepq/q_func/convnet/Conv/deepq/q_func/convnet/Conv/bias:0"]
    with pytest.raises(ValueError,
                       match=r"weight 'deepq/q_func/convnet/Conv/bias:0' of layer 'deepq/q_func/convnet/Conv' is listed"):
        load_keras(path)


def test_a_wrong_kernel_shape_is_refused(tmp_path, k2_weights):
    path = tmp_path / "Breakout.h5"
    bad = dict(k2_weights)
    bad[K2_NAMES[1]] = (np.zeros((8, 8, 3, 32), np.float32), bad[K2_NAMES[1]][1])  # RGB input
    write_keras2_h5(path, bad)
    with pytest.raises(ValueError,
                       match=r"conv1 \('deepq/q_func/convnet/Conv'\) kernel \(kh, kw, in, out\) has shape \(8, 8, 3, 32\); "
                                         r"expected \(8, 8, 4, 32\)"):
        load_keras(path)
    bad = dict(k2_weights)
    bad[K2_NAMES[5]] = (np.zeros((5000, 256), np.float32), bad[K2_NAMES[5]][1])
    write_keras2_h5(path, bad)
    with pytest.raises(ValueError,
                       match=r"5000 inputs match neither 'same' padding \(7744 = 11·11·64\) nor 'valid' padding \(3136"):
        load_keras(path)
    bad = dict(k2_weights)
    bad[K2_NAMES[6]] = (np.zeros((128, 4), np.float32), bad[K2_NAMES[6]][1])
    write_keras2_h5(path, bad)
    with pytest.raises(ValueError, match=r"output \('deepq/q_func/action_value/fully_connected_1'\) kernel \(in, out\) has shape "
                                         r"\(128, 4\); expected \(256, 4\)"):
        load_keras(path)


def test_an_unknown_layer_kind_is_refused(tmp_path, k2_weights):
    path = tmp_path / "Breakout.h5"
    names = (*K2_NAMES[:2], "batch_normalization_1", *K2_NAMES[2:])
    bn = {k: np.ones(32, np.float32) for k in ("gamma", "beta", "moving_mean", "moving_variance")}
    write_keras2_h5(path, k2_weights, names=names, config=False, extra_weights={"batch_normalization_1": bn})
    with pytest.raises(ValueError,
                       match=r"layer 'batch_normalization_1' holds weights beta, gamma, moving_mean, moving_variance: "
                                         r"not a Conv2D or Dense layer"):
        load_keras(path)
    # a weightless layer of another kind, known from the model config: pooling, or a Lambda (whose code is never run)
    for cls in ("MaxPooling2D", "Lambda"):
        write_keras2_h5(path, k2_weights, names=(*K2_NAMES[:4], "extra_1", *K2_NAMES[4:]), classes={"extra_1": cls})
        with pytest.raises(ValueError,
                           match=rf"layer 'extra_1' is a {cls}.*this loader knows InputLayer, Conv2D, Flatten, Dense only"):
            load_keras(path)
    # a 3-D kernel
    write_keras2_h5(path, k2_weights, names=(*K2_NAMES, "conv1d_1"), config=False,
                    extra_weights={"conv1d_1": {"kernel": np.zeros((3, 4, 4), np.float32), "bias": np.zeros(4, np.float32)}})
    with pytest.raises(ValueError, match=r"layer 'conv1d_1' \(class unknown\) has a 3-D kernel \(3, 4, 4\)"):
        load_keras(path)


def test_a_dueling_model_and_config_mismatches_are_refused(tmp_path, k2_weights):
    path = tmp_path / "Breakout.h5"
    value = ("deepq/q_func/state_value/fully_connected", "deepq/q_func/state_value/fully_connected_1")
    w = {**k2_weights, value[0]: k2_weights[K2_NAMES[5]], value[1]: (np.zeros((256, 1), np.float32), np.zeros(1, np.float32))}
    write_keras2_h5(path, w, names=(*K2_NAMES, *value), config=False)
    with pytest.raises(ValueError, match=r"found 3 Conv2D and 4 Dense.*dueling model with a separate value stream"):
        load_keras(path)
    for override, msg in (({K2_NAMES[1]: {"strides": [2, 2]}},
                           r"conv1 'deepq/q_func/convnet/Conv' has strides \[2, 2\] \(expected 4\)"),
                          ({K2_NAMES[4]: {"data_format": "channels_first"}}, r"'flatten_1' has data_format 'channels_first'"),
                          ({K2_NAMES[3]: {"padding": "valid"}}, r"paddings \['same', 'same', 'valid'\]"),
                          ({K2_NAMES[6]: {"activation": "softmax"}}, r"output .* has activation 'softmax' \(expected 'linear'\)"),
                          ({K2_NAMES[0]: {"batch_input_shape": [None, 84, 84, 3]}},
                           r"'input_1' takes input shape \(84, 84, 3\)")):
        write_keras2_h5(path, k2_weights, overrides=override)
        with pytest.raises(ValueError, match=msg):
            load_keras(path)
    write_keras2_h5(path, k2_weights, padding="valid")  # the config says valid, the fc size says same
    with pytest.raises(ValueError, match=r"padding 'valid' but the fc input size fits 'same'"):
        load_keras(path)


def test_files_without_keras_weights_are_refused(tmp_path, k2_weights):
    path = tmp_path / "Breakout.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("q_values", data=np.zeros(3))
    with pytest.raises(ValueError,
                       match=r"holds no Keras weights: no 'model_weights' group and no 'layer_names' attribute "
                             r".*found: q_values"):
        load_keras(path)
    path.write_bytes(b"PK\x03\x04 a zip, not HDF5")
    with pytest.raises(ValueError, match=r"is not an HDF5 file"):
        load_keras(path)
    with pytest.raises(FileNotFoundError, match=r"no Keras model at"):
        load_keras(tmp_path / "missing.h5")
    write_keras2_h5(path, {**k2_weights, K2_NAMES[-1]: _known_weights(n_actions=6)[K2_NAMES[-1]]})
    with pytest.raises(ValueError, match=r"has 6 actions but Breakout's minimal action set has 4"):
        load_keras(path)


# -- specs and games ----------------------------------------------------------------------------
@pytest.mark.parametrize("name, game", [("BreakoutIngame_5M.h5", "Breakout"), ("MsPacman_5M_ingame_reward.h5", "MsPacman"),
                                        ("SpaceInvadersIngame_5M.h5", "SpaceInvaders"), ("FrostbiteIngame_5M.h5", "Frostbite"),
                                        ("Pong.h5", "Pong"), ("runs/SeaquestNoFrameskip-v4/model.h5", "Seaquest")])
def test_the_game_is_read_from_the_file_name(name, game):
    assert keras_game_from_path(f"/some/dir/{name}") == game


@pytest.mark.parametrize("name", ["model.h5", "Breakouts_5M.h5", "agents/MsPacman/model.h5", "Pacman_5M.h5"])
def test_a_file_name_without_a_game_is_refused(name):
    with pytest.raises(ValueError, match=r"cannot tell the game of .*name the game: 'keras:Breakout:PATH'"):
        keras_game_from_path(name)


def test_keras_specs_name_the_game_or_read_it(tmp_path, k2_weights):
    path = tmp_path / "model.h5"
    write_keras2_h5(path, {**k2_weights, K2_NAMES[-1]: _known_weights(n_actions=9)[K2_NAMES[-1]]})
    agent = load_agent(f"keras:MsPacman:{path}")
    assert agent.game == "MsPacman" and agent.n_actions == 9 and agent.meta["source"] == f"keras:{path}"
    with pytest.raises(ValueError, match=r"cannot tell the game of"):
        load_agent(f"keras:{path}")
    with pytest.raises(ValueError, match=r"unknown game 'Pacman'; valid values are: .*MsPacman"):
        load_agent(f"keras:Pacman:{path}")
    with pytest.raises(ValueError, match=r"unknown game 'Pacman'"):
        load_keras(path, game="Pacman")
    with pytest.raises(ValueError, match=r"keras:\[<Game>:\]<file.h5>"):
        load_agent("kears:model.h5")
