# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# (chapter-runtime)=
# # Run-time
#
# A saliency map is only useful if we can afford to compute it for many states.
# {cite:t}`huber2022benchmarking` chose each method's parameters under a time budget, so
# run-time shaped their benchmark. This chapter asks what one map of each method costs with
# `saliency_lib`, where that cost comes from, and how it compares with Captum, the `lime`
# package and the times Huber et al. recorded. It ends with the speed of the code that
# trains the agents: the trainers and the vectorised Atari environments.
#
# The numbers come from three benchmark scripts in `benchmarks/`. They ran once, on the
# study's CPU, and wrote their results to `data/benchmarks/`. The chapter reads these
# files and does not re-run the benchmarks, because they take long. It only times one map
# per method on the study's own agents, as a spot check on the machine that executes it.
# All the work is done by `saliency_book.ch6_runtime`.

# %% [markdown]
# ## Parameters
#
# Papermill replaces the next cell's values, for instance
# `papermill notebooks/06_runtime.ipynb out.ipynb -p benchmarks_dir my_benchmarks`.

# %% tags=["parameters"]
game = "Breakout"  # game of the spot check on the study's agents
profile = "quick"  # "tiny", "quick" or "full": size of the spot check
benchmarks_dir = "data/benchmarks"  # explainers.json, training.json, envs.json
results_dir = "data/results"  # cache of the spot check, relative to the repository
seed = 0  # seed of the game whose states the spot check times

# %% [markdown]
# The parameters become the chapter's frozen configuration. The profile decides how many
# methods and states the spot check times.

# %%
from IPython.display import Markdown

from saliency_book.ch6_runtime import (

    RuntimeChapter,

    bf16_summary,

    bf16_table,

    comparison_summary,

    comparison_table,

    cost_summary,

    envs_summary,

    envs_table,

    explainer_table,

    hardware_note,

    load_benchmarks,

    machine_table,

    paper_summary,

    regenerate_commands,

    spot_check,

    spot_summary,

    training_summary,

    training_table,

)

from saliency_book.ch6_figures import (

    cost_figure,

    style_bf16,

    style_comparisons,

    style_envs,

    style_explainer_table,

    style_machine,

    style_spot_check,

    style_training,

)

cfg = RuntimeChapter(game=game, profile=profile, benchmarks_dir=benchmarks_dir,
                     results_dir=results_dir, seed=seed)
cfg

# %% [markdown]
# ## Where the numbers come from
#
# Each benchmark file records the machine it ran on. The table lists what they recorded.

# %%
bench = load_benchmarks(cfg.benchmarks_dir)
caption = "Where the committed benchmarks ran, as recorded in their JSON files (NA: not recorded)."
style_machine(machine_table(bench), caption)

# %% [markdown]
# These commands rewrite the three files with the settings recorded in them. Run them
# on an idle machine for less noisy numbers; the chapter picks up the new files.

# %%
Markdown(regenerate_commands(bench))

# %% [markdown]
# ## The cost of one map
#
# The explainer benchmark explains one Ms. Pac-Man state per call. It uses a Nature-DQN
# network with **random weights**, the architecture of the study's DQN agents. A network's
# cost does not depend on its weights, so no trained agent is needed here. Every method
# runs with its default parameters, the final parameters of Huber et al. For each method, the
# benchmark times our implementation against its **floor**: the same number of forward
# passes of the bare network, in one large batch at the best chunk size. The ratio of the
# two is the method's **overhead**, the time spent on anything but the network:
# building perturbations, segmenting, fitting the surrogate model.

# %%
table = explainer_table(bench)
caption = ("Cost of one saliency map (benchmark: random-weight DQN, one Ms. Pac-Man state, 1 CPU thread). "
           "Huber et al.: seconds per map recorded by their parameter search on their own hardware; "
           "NA: no equivalent or no recorded time.")
style_explainer_table(table, caption)

# %% [markdown]
# The gradient methods run a backward pass after each forward pass, but their floor counts
# forward passes only. Their overhead is therefore not comparable with that of the
# perturbation methods.
#
# **Huber et al.'s times.** The reference notes of this project do not reproduce the
# paper's own run-time table (its `times_*.npy` files are binary). The column shows the
# seconds per map that the official parameter search recorded for the chosen parameters
# on the Ms. Pac-Man agent. They are listed in the notes' §4 ("Hyper-parameter search")
# and §6.3 ("Run-time"), from the official result file `final_parameters_results.csv`.
# The official `parameter_search/parameter_test.py` times only the computation of the
# map, not the insertion metric. The search timed Noise Sensitivity with blur and the
# original score, which is our `ns_original`. It did not time NS chosen action, NS black,
# the gradient methods or the random map; those cells say NA.

# %%
paper_summary(table)

# %% [markdown]
# Read this ratio with care: it mixes several differences. The authors' hardware is not
# documented (their requirements pin `tensorflow-gpu`, so a GPU may have been used). Their
# code used Keras and TensorFlow 1.15, and it predicted one perturbed state per call (LIME:
# a few per call). Ours batches all perturbations of a state.

# %%
hardware_note(bench)

# %% [markdown]
# ## What costs what
#
# The figure shows the same times on a log scale. The black tick on each bar is the
# method's floor, and the red diamond is Huber et al.'s time.

# %% mystnb={"figure": {"caption": "Milliseconds per map for each method (log scale; random-weight DQN, one Ms. Pac-Man state, one CPU thread). Bars: our implementation, coloured by family; black ticks: the floor (the same number of forward passes of the bare network); red diamonds: seconds per map recorded by Huber et al.'s parameter search on their hardware, converted to ms.", "name": "fig-runtime-cost"}}
cost_figure(table, bench)

# %% [markdown]
# The next sentences are formatted from the benchmark's numbers.

# %%
Markdown(cost_summary(table))

# %% [markdown]
# A perturbation method's cost is its number of forward passes: occlusion and SARFA
# perturb every patch, Noise Sensitivity every grid point, RISE and LIME every sample.
# The parameters that Huber et al. chose under their time budget therefore fix the cost.
# Halving the patch size of occlusion, for instance, roughly quadruples its cost.
#
# ## Against Captum and the `lime` package
#
# The benchmark ran the same computations with Captum {cite}`kokhlikyan2020captum` and
# with the `lime` package {cite}`ribeiro2016why` in the same run. Each was measured at its
# best batch setting. For LIME, all three received our SLIC segmentation, so they differ
# only in sampling, batching and fitting. The batch size of 10 is the one Huber et al.'s
# code used with the `lime` package.

# %%
comparisons = comparison_table(bench)
caption = ("Captum and the lime package against our implementation, same benchmark run. "
           "Ratio: their time ÷ ours. Floor bound: their time ÷ our method's floor, the largest "
           "speed-up that any implementation of the same forward passes could reach.")
style_comparisons(comparisons, caption)

# %%
comparison_summary(comparisons)

# %% [markdown]
# KernelSHAP is not LIME: it weights and solves differently. It is listed because it is
# Captum's other surrogate method on the same segments and samples.
#
# ## bf16: faster, but not for every method
#
# Modern CPUs can run the network in bfloat16. That cuts the time per forward pass, but it
# rounds the scores, and methods that rank small differences between scores can lose
# their ranking. The benchmark measured the speed-up on the random-weight DQN. It measured
# the agreement with float32 maps (Spearman's ρ) on a trained agent, the official Mask-A3C
# Breakout agent, where the scores carry meaning.

# %%
precision = bf16_table(bench)
caption = ("bf16 against float32 for the perturbation methods. Speed-up and ρ (one state): random-weight DQN; "
           "min ρ: lowest Spearman correlation over the trained agent's states (official Mask-A3C Breakout); "
           "offered: whether the library accepts precision='bf16' for the method today.")
style_bf16(precision, caption)

# %%
bf16_summary(precision)

# %% [markdown]
# The two ρ columns can disagree. The scores of a random-weight network carry no meaning,
# so the library's choice rests on the trained agent. float32 stays the default everywhere
# in this book.
#
# ## The study's own agents
#
# The benchmark network is the DQN architecture. The Mask-A3C agents have another network:
# a ConvLSTM with attention branches on 80×80 inputs. The spot check shows what a forward
# pass of each agent costs. It times one map per method on the agents of the chapter's
# game: the study's DQN agent if it has been trained, and the official Mask-A3C agent if it
# has been fetched. Each state is timed once, from a greedy game, on whatever machine
# executes this chapter. The result is cached in the results directory.

# %%
spot = spot_check(cfg, bench)
caption = (f"Spot check on the study's agents for {cfg.game}: one map per method (median over "
           f"{cfg.spot['states']} state(s), timed once each, 1 thread), next to the benchmark's time on the "
           "random-weight DQN. NA: the method does not apply to the agent or was not benchmarked.")
style_spot_check(spot, caption)

# %%
spot_summary(spot)

# %% [markdown]
# These times come from a single run without warm-up, so they show the order of magnitude
# only. The number of forward passes depends on the input size (84×84 for DQN, 80×80 for
# Mask-A3C), and the cost of each pass depends on the network.
#
# ## Training throughput
#
# The study's CPU also trained the DQN agents, so the trainers were written for speed.
# `benchmarks/training.py` measures agent steps per second (one agent step is four frames)
# on Breakout with one torch thread, after a warm-up that fills the replay buffer. The
# reference is a single-file DQN loop in the style of CleanRL {cite}`huang2022cleanrl`
# (`benchmarks/cleanrl_style_dqn.py`).

# %%
training = training_table(bench)
caption = ("Training throughput on the study's CPU (Breakout, 1 torch thread): agent steps and frames per "
           "second, and the ratio to the CleanRL-style loop. Settings: the trainers' defaults.")
style_training(training, caption)

# %%
training_summary(training)

# %% [markdown]
# The row with CleanRL's replay ratio is the fair comparison: it does the same learning
# work per agent step as the CleanRL-style loop. What differs is how the loop is built: our
# trainer steps several environments together in C++, and its replay buffer stores each
# frame once instead of full stacks of observation and next observation. The default
# setting learns less often per agent step, with larger batches, so it does less work per
# step.
#
# ## Vectorised environments
#
# The environments are the other half of the training loop. `benchmarks/envs.py` steps
# several Breakout environments (their number is in the first table) with random actions
# through each backend.

# %%
envs = envs_table(bench)
caption = ("Vectorised Atari environments: agent steps per second with random actions (Breakout), "
           "and the ratio to gymnasium's SyncVectorEnv. Used by: the trainer that uses the backend.")
style_envs(envs, caption)

# %%
envs_summary(envs)

# %% [markdown]
# The trainers use ale-py's C++ vector environment. Its grayscale 84×84 frames equal the
# `dqn` preset pixel for pixel (the test suite checks this). The Python wrappers remain
# the reference implementation for evaluation and for collecting states.
#
# ## Summary
#
# * A perturbation map costs about as much as its forward passes. The methods differ in
#   cost mainly by how many perturbed inputs they evaluate, which their parameters fix.
# * Gradient methods and the attention masks need far fewer passes. They are the cheap end
#   of the scale.
# * The times Huber et al. recorded and ours differ in hardware, framework and batching.
#   Only the same-run comparisons with Captum and the `lime` package isolate the
#   implementation.
# * bf16 is offered only for the methods whose maps kept their ranking on a trained agent.
# * The trainers step their environments in ale-py's C++ vector environment. The last two
#   tables compare their throughput with a CleanRL-style loop and with other backends.
