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
# The chapter then turns to the whole study: how far the library goes below the cost of a
# method's forward passes, and how the study's units spread over worker processes and a
# Ray cluster.
#
# The numbers come from five benchmark scripts in `benchmarks/`. They ran on the study's
# CPU and wrote their results to `data/benchmarks/`. The chapter reads these files and
# does not re-run the benchmarks, because they take long. It only times one map per method
# on the study's own agents, as a spot check on the machine that executes it. All the work
# is done by `saliency_book.ch6_runtime` and `saliency_book.ch6_scaleout`.

# %% [markdown]
# ## Parameters
#
# Papermill replaces the next cell's values, for instance
# `papermill notebooks/06_runtime.ipynb out.ipynb -p benchmarks_dir my_benchmarks`.

# %% tags=["parameters"]
game = "Breakout"  # game of the spot check on the study's agents
profile = "quick"  # "tiny", "quick" or "full": size of the spot check
benchmarks_dir = "data/benchmarks"  # explainers.json, training.json, envs.json, study_cost.json, scaleout.json
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
    training_summary,
    training_table,
)

from saliency_book.ch6_spot import spot_check, spot_summary
from saliency_book.ch6_scaleout import (
    before_after_summary,
    before_after_table,
    mask_a3c_local_summary,
    mask_a3c_local_table,
    executor_table,
    overhead_table,
    projection_assumptions,
    projection_table,
    provenance,
    scaleout_summary,
    shipped_table,
    study_before_after_table,
)

from saliency_book.ch6_figures import (
    before_after_figure,
    cost_figure,
    scaleout_figure,
    style_before_after,
    style_bf16,
    style_mask_a3c_local,
    style_comparisons,
    style_envs,
    style_executors,
    style_explainer_table,
    style_machine,
    style_overhead,
    style_projection,
    style_shipped,
    style_spot_check,
    style_study_before_after,
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
# These commands rewrite the files with the settings recorded in them. Run them
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
# ## bf16: where it keeps the maps, and whether it pays
#
# Modern CPUs can run the network in bfloat16. That cuts the arithmetic of a forward pass,
# but it rounds the scores, and methods that rank small differences between scores can lose
# their ranking. The decision is made on trained agents, where the scores carry meaning:
# each of our four DQN agents and the official Mask-A3C Breakout agent, on 20 states spread
# over the first 1000 steps of its greedy game. A method may use bf16 only if every bf16
# map keeps a Spearman correlation of at least 0.99 with its float32 map, on every state of
# every agent, and only by default if it is also faster than the float32 default (for the
# local methods that default is the exact incremental engine, which runs in float32 only).

# %%
precision = bf16_table(bench)
caption = ("The bf16 decision table (benchmarks/bf16_decision.py). min ρ: the lowest Spearman correlation of a bf16 "
           "map with its float32 map over every state of every agent of the kind; bf16 speed-up: the smallest over "
           "those agents, CPU time per map against the library's float32 default; offered: whether the library "
           "accepts precision='bf16' for the method.")
style_bf16(precision, caption)

# %%
bf16_summary(precision)

# %% [markdown]
# A bf16 default needs both: maps that keep their ranking, and a gain in time. Where the table
# shows both, the library runs bf16 unless told otherwise (`precision="fp32"`); everywhere
# else float32 stays the default. Every result row records the precision its map was made in
# (the `precision` column), so that a stored table says how it was computed and a rerun
# reproduces it bit for bit.
#
# ## Below the naive floor
#
# A perturbation method that evaluates N perturbed inputs seems bound to cost N forward
# passes. We call the time of these passes through the bare network, in one batch, the
# method's **naive floor**. Two exact shortcuts go below it. First, occlusion, SARFA and
# Noise Sensitivity change only a small window of the input, so only a small window of each
# convolution's output changes; the library recomputes only those windows (**incremental
# inference**). Second, in the sanity check's cascade the layers below the randomised ones
# are unchanged, so their activations on the perturbed inputs are computed once and reused
# at every level (**activation reuse**). Neither changes a map beyond float rounding.
#
# `benchmarks/study_cost.py` measures both on the shipped Breakout DQN agent and real
# states, in CPU time of one thread. The "before" is the naive floor, the "after" the
# library's default path. Captum and the `lime` package stand beside them where they
# implement the same method, timed in the same run on the same agent, states and targets
# (each at its best batch setting), so every ratio in the table is one of a single run. The
# caption says which run that is.

# %%
before_after = before_after_table(bench)
runs = provenance(bench)
caption = ("Per perturbation method: the naive floor (before) and the fast path (after), ms per map; floor ÷ fast is "
           "the speed-up; max map diff: the largest difference between fast and naive maps after min-max "
           "normalisation. Captum and lime: ms per map in the run that timed them, and ÷ our method's naive floor in that run. "
           "NA: no equivalent.")
style_before_after(before_after, caption, runs)

# %% mystnb={"figure": {"caption": "Before and after, per perturbation method. Left: the naive floor (grey) and the fast path (blue), milliseconds per map on a log scale; Captum (orange triangles) and the lime package (green squares). Right: every time as a multiple of our naive floor measured in the same run; the dashed line is the floor.", "name": "fig-runtime-before-after"}}
before_after_figure(before_after, bench)

# %% [markdown]
# For the study as a whole, the benchmark times the sanity check's cascade (the original
# network and its five randomised levels, every method of the study), the insertion and
# deletion curves, and projects the core hours of the paper-scale study from them.

# %%
study_cost = study_before_after_table(bench)
caption = ("The study before and after the speed-ups, from study_cost.json: per state for the cascade and the "
           "curves, and the projected core hours of the paper-scale study (4 DQN agents × 997 states and the "
           "Mask-A3C states). Run: date and commit of the part's measurement.")
style_study_before_after(study_cost, caption)

# %%
Markdown(before_after_summary(before_after, study_cost))

# %% [markdown]
# The Mask-A3C network (conv1 → max-pool → conv2 → max-pool → conv3 → max-pool → ConvLSTM →
# heads) gets the same treatment. A max-pool is not linear, so the engine carries each
# convolution's change in delta form and applies the pooling and the ReLU to the values of
# the window; the ConvLSTM's gates change only through the input half of their weights,
# because the recurrent state is the same for every perturbation of a state. Its forward
# pass costs many DQN passes, so these factors decide most of the study's hours.

# %%
a3c_local = mask_a3c_local_table(bench)
caption = ("The local methods on a Mask-A3C network (official layout), at the paper's parameters, one state "
           "(study_cost.json, projection part): ms per forward pass of the naive path and of incremental inference, "
           "alone and per network when the cascade's six networks run at once (against the naive cascade's full "
           "pass); max map diff after min-max normalisation.")
style_mask_a3c_local(a3c_local, caption)

# %%
Markdown(mask_a3c_local_summary(a3c_local, bench))

# %% [markdown]
# ## Spreading the study over workers
#
# The study is a sweep of independent **units**: one method, one experiment, one chunk of
# states. `run_sweep` computes them in this process (`local`), in worker processes
# (`processes`) or as Ray tasks (`ray`), and every executor gives the same table.
# `benchmarks/scaleout.py` runs one small real sweep of the shipped Breakout DQN agent (cheap
# parameters, about a second per unit) under each executor with one and two workers, each
# time in a fresh results directory, and records what the machine was doing meanwhile.

# %%
executors = executor_table(bench)
caption = ("Units of a small real sweep per minute, per executor and number of workers. Whole sweep: start-up "
           "included; steady: between the first and the last finished unit; efficiency: the steady rate ÷ (workers × "
           "the local rate); same table: the executor's result table equals the local one.")
style_executors(executors, caption)

# %% [markdown]
# Each configuration ran once, one after the other, while other jobs shared the machine
# (next paragraph). Their load moves the rates by tens of percent from one configuration to
# the next, so an efficiency above 100 % is noise, not a gain, and the 2-worker efficiencies
# include the competition for the cores.

# %%
Markdown(f"**The machine.** {(bench.scaleout or {}).get('shared_machine', 'Not recorded.')}")

# %% [markdown]
# Ray's cost per task is small next to a unit of the study, which takes minutes at the
# paper's parameters. What each task ships matters more: the agent and the state set go to
# each worker once, a unit's arguments are a few hundred bytes, and its result frame grows
# with its states.

# %%
overhead = overhead_table(bench)
caption = "Ray's overhead per task, measured on this machine with 2 workers (empty tasks and tasks shaped like the sweep's)."
style_overhead(overhead, caption)

# %%
caption = ("What the sweep's tasks ship, pickled: the measured units, and scaled to the full study's units "
           "(25 states per DQN unit, 997 states per agent).")
style_shipped(shipped_table(bench), caption)

# %% [markdown]
# **The full study.** The projection takes the core hours of the paper-scale study after
# the speed-ups from `study_cost.json` and spreads them over the cores at the efficiency
# measured here. The driver, which stores every finished unit itself, is a second bound:
# with many workers it can become the slowest part. The projection is recomputed from both
# committed files whenever the chapter runs, so a new run of either benchmark changes it.
# Its assumptions follow the table.

# %%
proj = projection_table(bench)
caption = ("Projected wall-clock hours of the paper-scale study. Compute: core hours ÷ (cores × efficiency); "
           "driver: the driver's time to store every row (a lower bound on its own); start-ups: one per agent's "
           "sweep; upper bound: plus the largest unit once per sweep.")
style_projection(proj, caption)

# %% mystnb={"figure": {"caption": "Left: units per minute of the measured sweep per executor, with one and two workers (bars: steady rate; black ticks: whole sweep with start-up; dashed: workers × the local rate). Right: the projected wall-clock hours of the paper-scale study, from its projected core hours and the measured efficiency, to the upper bound.", "name": "fig-runtime-scaleout"}}
scaleout_figure(executors, proj)

# %%
Markdown(projection_assumptions(bench))

# %%
Markdown(scaleout_summary(executors, overhead, proj))

# %% [markdown]
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
# * Incremental inference and activation reuse take the local perturbation methods and the
#   sanity cascade below their naive floor, with the same maps; the tables above give the
#   measured factors and the core hours they save.
# * The study's units spread over worker processes or Ray with little overhead per task;
#   the projection turns the measured core hours into wall-clock hours on this machine and
#   on a 64-core cluster.
# * The trainers step their environments in ale-py's C++ vector environment. The last two
#   tables compare their throughput with a CleanRL-style loop and with other backends.
