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
# The numbers come from the benchmark scripts in `benchmarks/`. They ran on the study's
# CPU and wrote their results to `data/benchmarks/`. The chapter reads these files and
# does not re-run the benchmarks, because they take long. It only times one map per method
# on the study's own agents, as a spot check on the machine that executes it. All the work
# is done by `saliency_book.ch6_runtime` and `saliency_book.ch6_scaleout`; numbers in the
# text are computed in the cells and glued into it.

# %% [markdown]
# ## Parameters
#
# Papermill replaces the next cell's values, for instance
# `papermill notebooks/06_runtime.ipynb out.ipynb -p benchmarks_dir my_benchmarks`.

# %% tags=["parameters"]
game = "Breakout"  # game of the spot check on the study's agents
profile = "quick"  # "tiny", "quick" or "full": size of the spot check
benchmarks_dir = "data/benchmarks"  # explainers.json, training.json, envs.json, study_cost.json, scaleout.json, ...
results_dir = "data/results"  # cache of the spot check, relative to the repository
seed = 0  # seed of the game whose states the spot check times

# %% [markdown]
# The parameters become the chapter's frozen configuration. The profile decides how many
# methods and states the spot check times.

# %%
from myst_nb import glue

from saliency_book.ch6_figures import (
    show_before_after,
    show_before_after_figure,
    show_bf16,
    show_comparisons,
    show_cost,
    show_envs,
    show_executors,
    show_explainers,
    show_machine,
    show_mask_a3c_local,
    show_overhead,
    show_projection,
    show_projection_inputs,
    show_scaleout,
    show_shipped,
    show_spot_check,
    show_study_before_after,
    show_training,
    show_video,
)
from saliency_book.ch6_runtime import RuntimeChapter, bf16_numbers, regenerate_commands, spot_check, tabulate
from saliency_book.ch6_scaleout import projection_inputs, provenance
from saliency_book.common import join_words
from saliency_study.runtime import (
    bf16_table,
    comparison_table,
    cost_numbers,
    envs_table,
    explainer_table,
    load_benchmarks,
    machine_table,
    spot_numbers,
    table_numbers,
    training_table,
    video_table,
)
from saliency_study.scaleout import (
    before_after_numbers,
    before_after_table,
    executor_table,
    mask_a3c_local_table,
    overhead_table,
    projection_table,
    row_costs,
    scaleout_numbers,
    shipped_table,
    study_before_after_table,
)


def glue_all(values: dict) -> None:
    """Glue each named value, as a plain Python value, for the text (a list of names as "a, b and c")."""
    for name, value in values.items():
        value = join_words(value) if isinstance(value, list) else value
        glue(name, value.item() if hasattr(value, "item") else value, display=False)


cfg = RuntimeChapter(game=game, profile=profile, benchmarks_dir=benchmarks_dir, results_dir=results_dir, seed=seed)
cfg

# %% [markdown]
# ## Where the numbers come from
#
# Each benchmark file records the machine it ran on. The table lists what they recorded.

# %%
bench = load_benchmarks(cfg.benchmarks_dir)
caption = "Where the committed benchmarks ran, as recorded in their JSON files (NA: not recorded)."
show_machine(tabulate(machine_table, bench), caption)

# %% [markdown]
# These commands rewrite the files with the settings recorded in them. Run them
# on an idle machine for less noisy numbers; the chapter picks up the new files.

# %%
regenerate_commands(bench)

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
table = tabulate(explainer_table, bench)
glue_all(cost_numbers(table))
caption = ("Cost of one saliency map (benchmark: random-weight DQN, one Ms. Pac-Man state, 1 CPU thread). "
           "Huber et al.: seconds per map recorded by their parameter search on their own hardware; "
           "NA: no equivalent or no recorded time.")
show_explainers(table, caption)

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
#
# Where Huber et al. recorded a time, their map took {glue:text}`paper_min:.1f`
# ({glue:text}`paper_min_label`) to {glue:text}`paper_max:.1f` ({glue:text}`paper_max_label`)
# times as long as ours; they recorded none for {glue:text}`paper_none`. Read this ratio with
# care: it mixes several differences. The authors' hardware is not documented (their
# requirements pin `tensorflow-gpu`, so a GPU may have been used). Their code used Keras
# and TensorFlow 1.15, and it predicted one perturbed state per call (LIME: a few per
# call). Ours batches all perturbations of a state. The first table gives the machine,
# threads and load of our run: other processes competed for the CPUs, so single times are
# noisy, and the ratios measured back to back within one round are more reliable than the
# absolute times.
#
# ## What costs what
#
# The figure shows the same times on a log scale. The black tick on each bar is the
# method's floor, and the red diamond is Huber et al.'s time.

# %% mystnb={"figure": {"caption": "Milliseconds per map for each method (log scale; random-weight DQN, one Ms. Pac-Man state, one CPU thread). Bars: our implementation, coloured by family; black ticks: the floor (the same number of forward passes of the bare network); red diamonds: seconds per map recorded by Huber et al.'s parameter search on their hardware, converted to ms.", "name": "fig-runtime-cost"}}
show_cost(table, bench)

# %% [markdown]
# The gradient methods, the attention masks and the random map need at most
# {glue:text}`cheap_passes:,.0f` forward passes per map. The perturbation methods need
# {glue:text}`pert_passes_min:,.0f` to {glue:text}`pert_passes_max:,.0f` and cost
# {glue:text}`pert_ms_min:,.0f` to {glue:text}`pert_ms_max:,.0f` ms per map. Each takes
# {glue:text}`pert_overhead_min:.2f` to {glue:text}`pert_overhead_max:.2f` times the time of
# its forward passes alone ({glue:text}`pert_ms_per_pass_min:.2f` to
# {glue:text}`pert_ms_per_pass_max:.2f` ms per pass), so its cost is essentially its number
# of forward passes. The most expensive, {glue:text}`dear_label`, costs
# {glue:text}`dear_over_cheap:,.0f` times as much as the cheapest real explanation,
# {glue:text}`cheap_label`.
#
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
comparisons = tabulate(comparison_table, bench)
glue_all(table_numbers(comparisons, "cmp", "name", ["ratio", "floor_bound"],
                       keys=["captum_occlusion", "captum_lime", "captum_kernelshap", "lime_package"]))
caption = ("Captum and the lime package against our implementation, same benchmark run. "
           "Ratio: their time ÷ ours. Floor bound: their time ÷ our method's floor, the largest "
           "speed-up that any implementation of the same forward passes could reach.")
show_comparisons(comparisons, caption)

# %% [markdown]
# Captum's Occlusion takes {glue:text}`cmp_captum_occlusion_ratio:.2f` times as long as
# ours, Captum's Lime {glue:text}`cmp_captum_lime_ratio:.2f` times, Captum's KernelShap
# {glue:text}`cmp_captum_kernelshap_ratio:.2f` times and the lime package
# {glue:text}`cmp_lime_package_ratio:.2f` times. No implementation that evaluates the same
# forward passes as our LIME can be more than {glue:text}`cmp_lime_package_floor_bound:.1f`
# times as fast as the lime package on this network: that is the lime package's time
# divided by the floor, the bare forward passes alone.
#
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
precision = tabulate(bf16_table, bench)
glue_all(bf16_numbers(precision))
caption = ("The bf16 decision table (benchmarks/bf16_decision.py). min ρ: the lowest Spearman correlation of a bf16 "
           "map with its float32 map over every state of every agent of the kind; bf16 speed-up: the smallest over "
           "those agents, CPU time per map against the library's float32 default; offered: whether the library "
           "accepts precision='bf16' for the method.")
show_bf16(precision, caption)

# %% [markdown]
# On {glue:text}`bf16_agents` trained agents, {glue:text}`bf16_states` states each, the
# bf16 maps kept a Spearman correlation of at least 0.99 with the float32 maps on every
# state for {glue:text}`bf16_kept`, and not for {glue:text}`bf16_not_kept`. Methods for
# which bf16 was faster than the float32 default: {glue:text}`bf16_faster`. The library's
# bf16 defaults: {glue:text}`bf16_defaults`. Are these exactly the methods that both kept
# their maps and were faster? {glue:text}`bf16_defaults_match`. The table's last column says
# for which methods the library accepts `precision="bf16"` at all.
#
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
# caption says which run that is. The table shows every further number the benchmark
# records per method under its own name.

# %%
before_after = tabulate(before_after_table, bench)
caption = ("Per perturbation method: the naive floor (before) and the fast path (after), ms per map; floor ÷ fast is "
           "the speed-up; max map diff: the largest difference between fast and naive maps after min-max "
           "normalisation. Captum and lime: ms per map in the run that timed them, and ÷ our method's naive floor in "
           "that run. NA: no equivalent.")
show_before_after(before_after, caption, provenance(bench))

# %% mystnb={"figure": {"caption": "Before and after, per perturbation method. Left: the naive floor (grey) and the fast path (blue), milliseconds per map on a log scale; Captum (orange triangles) and the lime package (green squares). Right: every time as a multiple of our naive floor measured in the same run; the dashed line is the floor.", "name": "fig-runtime-before-after"}}
show_before_after_figure(before_after, bench)

# %% [markdown]
# For the study as a whole, the benchmark times the sanity check's cascade (the original
# network and its five randomised levels, every method of the study), the insertion and
# deletion curves, and projects the core hours of the paper-scale study from them.

# %%
study_cost = tabulate(study_before_after_table, bench)
glue_all(before_after_numbers(before_after, study_cost))
glue_all(table_numbers(before_after, "ba", "method", ["captum_x_floor", "captum_x_ours", "lime_x_floor", "lime_x_ours"],
                       keys=["occlusion", "lime_slic"]))
caption = ("The study before and after the speed-ups, from study_cost.json: per state for the cascade and the "
           "curves, and the projected core hours of the paper-scale study (4 DQN agents × 997 states and the "
           "Mask-A3C states; further rows: other core-hour projections the file records). Run: date and commit "
           "of the part's measurement.")
show_study_before_after(study_cost, caption)

# %% [markdown]
# With incremental inference, {glue:text}`inc_methods` run
# {glue:text}`inc_speedup_min:.1f` to {glue:text}`inc_speedup_max:.1f` times as fast as
# their naive floor, with maps that differ from the naive ones by at most
# {glue:text}`inc_max_diff:.1e` after min-max normalisation. {glue:text}`full_methods` have
# no incremental path: they take {glue:text}`full_ratio_min:.2f` to
# {glue:text}`full_ratio_max:.2f` times their floor and gain only in the cascade. Captum's
# Occlusion took {glue:text}`ba_occlusion_captum_x_floor:.1f` times the floor
# ({glue:text}`ba_occlusion_captum_x_ours:.1f` times as long as our fast path, paired in the
# same run), and the lime package {glue:text}`ba_lime_slic_lime_x_floor:.1f` times the floor
# of LIME ({glue:text}`ba_lime_slic_lime_x_ours:.1f` times ours). For the whole study, the
# cascade runs {glue:text}`study_0_speedup:.2f` times as fast ({glue:text}`study_0_before:,.0f`
# → {glue:text}`study_0_after:,.0f` ms per state), the curves {glue:text}`study_1_speedup:.2f`
# times ({glue:text}`study_1_before:,.0f` → {glue:text}`study_1_after:,.0f` ms per state),
# and the paper-scale study {glue:text}`study_2_speedup:.2f` times
# ({glue:text}`study_2_before:,.0f` → {glue:text}`study_2_after:,.0f` core hours).
#
# The Mask-A3C network (conv1 → max-pool → conv2 → max-pool → conv3 → max-pool → ConvLSTM →
# heads) gets the same treatment. A max-pool is not linear, so the engine carries each
# convolution's change in delta form and applies the pooling and the ReLU to the values of
# the window; the ConvLSTM's gates change only through the input half of their weights,
# because the recurrent state is the same for every perturbation of a state. Its forward
# pass costs many DQN passes, so these factors decide most of the study's hours.

# %%
a3c_local = tabulate(mask_a3c_local_table, bench)
glue_all(row_costs(bench))
caption = ("The local methods on a Mask-A3C network (official layout), at the paper's parameters, one state "
           "(study_cost.json, projection part): ms per forward pass of the naive path and of incremental inference, "
           "alone and per network when the cascade's six networks run at once (against the naive cascade's full "
           "pass); max map diff after min-max normalisation.")
show_mask_a3c_local(a3c_local, caption)

# %% [markdown]
# A full Mask-A3C pass costs {glue:text}`a3c_row_ms:.2f` ms per row in the network's
# inference batch, {glue:text}`a3c_over_dqn:.0f` times a DQN pass
# ({glue:text}`dqn_row_ms:.2f` ms, from Occlusion's naive floor), so the table's speed-ups
# decide most of the Mask-A3C hours.
#
# No accelerator machine was available to this project for these measurements: every
# number in this chapter is CPU time, and the chapter gives no GPU figure. The engines are
# device-agnostic torch code, and their exactness tests (`tests/lib/test_incremental*.py`)
# run on the CPU.
#
# ## Spreading the study over workers
#
# The study is a sweep of independent **units**: one method, one experiment, one chunk of
# states. `run_sweep` computes them in this process (`local`), in worker processes
# (`processes`) or as Ray tasks (`ray`), and every executor gives the same table.
# `benchmarks/scaleout.py` runs one small real sweep of the shipped Breakout DQN agent (cheap
# parameters, about a second per unit) under each executor with one and two workers, each
# time in a fresh results directory, and records what the machine was doing meanwhile.

# %%
executors = tabulate(executor_table, bench)
caption = ("Units of a small real sweep per minute, per executor and number of workers. Whole sweep: start-up "
           "included; steady: between the first and the last finished unit; efficiency: the steady rate ÷ (workers × "
           "the local rate); same table: the executor's result table equals the local one.")
show_executors(executors, caption)

# %% [markdown]
# Each configuration ran once, one after the other, while other jobs shared the machine
# (next paragraph). Their load moves the rates by tens of percent from one configuration to
# the next, so an efficiency above 100 % is noise, not a gain, and the 2-worker efficiencies
# include the competition for the cores.

# %%
glue_all({"shared_machine": (bench.scaleout or {}).get("shared_machine", "Not recorded.")})

# %% [markdown]
# **The machine.** {glue:text}`shared_machine`
#
# Ray's cost per task is small next to a unit of the study, which takes minutes at the
# paper's parameters. What each task ships matters more: the agent and the state set go to
# each worker once, a unit's arguments are a few hundred bytes, and its result frame grows
# with its states.

# %%
overhead = tabulate(overhead_table, bench)
caption = "Ray's overhead per task, measured on this machine with 2 workers (empty tasks and tasks shaped like the sweep's)."
show_overhead(overhead, caption)

# %%
caption = ("What the sweep's tasks ship, pickled: the measured units, and scaled to the full study's units "
           "(25 states per DQN unit, 997 states per agent).")
show_shipped(tabulate(shipped_table, bench), caption)

# %% [markdown]
# **The full study.** The projection takes the core hours of the paper-scale study after
# the speed-ups from `study_cost.json` and spreads them over the cores at the efficiency
# measured here. The driver, which stores every finished unit itself, is a second bound:
# with many workers it can become the slowest part. The projection is recomputed from both
# committed files whenever the chapter runs, so a new run of either benchmark changes it.
# Its inputs and assumptions follow the figure.

# %%
proj = tabulate(projection_table, bench)
glue_all(scaleout_numbers(executors, overhead, proj))
caption = ("Projected wall-clock hours of the paper-scale study. Compute: core hours ÷ (cores × efficiency); "
           "driver: the driver's time to store every row (a lower bound on its own); start-ups: one per agent's "
           "sweep; upper bound: plus the largest unit once per sweep.")
show_projection(proj, caption)

# %% mystnb={"figure": {"caption": "Left: units per minute of the measured sweep per executor, with one and two workers (bars: steady rate; black ticks: whole sweep with start-up; dashed: workers × the local rate). Right: the projected wall-clock hours of the paper-scale study, from its projected core hours and the measured efficiency, to the upper bound.", "name": "fig-runtime-scaleout"}}
show_scaleout(executors, proj)

# %%
show_projection_inputs(tabulate(projection_inputs, bench), "The projection's inputs, read from the committed files, and the "
                       "assumptions benchmarks/scaleout.py recorded.")

# %% [markdown]
# In one process, the sweep ran {glue:text}`local_rate:.1f` units per minute. With 2
# workers, the processes executor reached {glue:text}`processes_rate:.1f`
# ({glue:text}`processes_efficiency:.0%` of twice the local rate) and Ray
# {glue:text}`ray_rate:.1f` ({glue:text}`ray_efficiency:.0%`). An empty Ray task costs
# {glue:text}`noop_ms:.2f` ms, negligible next to a unit of the study. Per unit of the
# measured sweep, Ray's time minus the local executor's was {glue:text}`per_unit_diff_s:+.2f` s:
# the other jobs on the machine move the times more than Ray's overhead does. The full study would take {glue:text}`processes_2_wall:,.1f` to
# {glue:text}`processes_2_upper:,.1f` hours on 2 cores with processes,
# {glue:text}`ray_2_wall:,.1f` to {glue:text}`ray_2_upper:,.1f` hours on 2 cores with Ray,
# and {glue:text}`ray_64_wall:,.1f` to {glue:text}`ray_64_upper:,.1f` hours on a 64-core
# Ray cluster, where the workers' compute takes {glue:text}`ray_64_compute:,.2f` hours and
# the driver's storing of every row {glue:text}`ray_64_driver:,.2f` hours: whichever is
# longer bounds the wall time.
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
glue_all(spot_numbers(spot))
glue_all({"spot_states": cfg.spot["states"]})
caption = (f"Spot check on the study's agents for {cfg.game}: one map per method (median over "
           f"{cfg.spot['states']} state(s), timed once each, 1 thread), next to the benchmark's time on the "
           "random-weight DQN. NA: the method does not apply to the agent or was not benchmarked.")
show_spot_check(spot, caption)

# %% [markdown]
# Over the methods with at least 100 forward passes, a map of the study's DQN agent costs a
# median {glue:text}`spot_dqn_ms_per_pass:.2f` ms per forward pass here,
# {glue:text}`spot_dqn_ratio:.1f` times the benchmark network's
# {glue:text}`spot_dqn_bench_ms_per_pass:.2f` ms, and one of the official Mask-A3C agent
# {glue:text}`spot_mask_a3c_ms_per_pass:.2f` ms, {glue:text}`spot_mask_a3c_ratio:.1f` times
# the benchmark network's (nan: the profile timed only methods with few passes, or the agent
# is missing). These times come from a single run of {glue:text}`spot_states` state(s)
# without warm-up, so they show the order of magnitude only. The number of forward passes
# depends on the input size (84×84 for DQN, 80×80 for Mask-A3C), and the cost of each pass
# depends on the network.
#
# ## Training throughput
#
# The study's CPU also trained the DQN agents, so the trainers were written for speed.
# `benchmarks/training.py` measures agent steps per second (one agent step is four frames)
# on Breakout with one torch thread, after a warm-up that fills the replay buffer. The
# reference is a single-file DQN loop in the style of CleanRL {cite}`huang2022cleanrl`
# (`benchmarks/cleanrl_style_dqn.py`).

# %%
training = tabulate(training_table, bench)
glue_all(table_numbers(training, "train", "key", ["vs_cleanrl", "steps_per_s"],
                       keys=["ours_dqn_default", "ours_dqn_matched", "ours_dqn_fp32", "ours_a2c_double",
                             "ours_a2c_double_fp32"]))
caption = ("Training throughput on the study's CPU (Breakout, 1 torch thread): agent steps and frames per "
           "second, and the ratio to the CleanRL-style loop. Settings: the trainers' defaults.")
show_training(training, caption)

# %% [markdown]
# Against the CleanRL-style loop, our DQN trainer with its defaults runs
# {glue:text}`train_ours_dqn_default_vs_cleanrl:.2f` times as fast in agent steps per
# second, and {glue:text}`train_ours_dqn_matched_vs_cleanrl:.2f` times as fast with
# CleanRL's replay ratio. The row with CleanRL's replay ratio is the fair comparison: it
# does the same learning work per agent step as the CleanRL-style loop. What differs is how
# the loop is built: our trainer steps several environments together in C++, and its replay
# buffer stores each frame once instead of full stacks of observation and next observation.
# The default setting learns less often per agent step, with larger batches, so it does less
# work per step. The float32 rows give bf16 autocast's share: compare
# {glue:text}`train_ours_dqn_default_steps_per_s:,.0f` with
# {glue:text}`train_ours_dqn_fp32_steps_per_s:,.0f` agent steps per second for DQN, and
# {glue:text}`train_ours_a2c_double_steps_per_s:,.0f` with
# {glue:text}`train_ours_a2c_double_fp32_steps_per_s:,.0f` for Mask-A2C.
#
# ## Vectorised environments
#
# The environments are the other half of the training loop. `benchmarks/envs.py` steps
# several Breakout environments (their number is in the first table) with random actions
# through each backend.

# %%
envs = tabulate(envs_table, bench)
glue_all(table_numbers(envs, "env", "key", ["vs_sync", "steps_per_s"],
                       keys=["ale_vector_gray84", "ale_vector_rgb", "envpool_gray84"]))
caption = ("Vectorised Atari environments: agent steps per second with random actions (Breakout), "
           "and the ratio to gymnasium's SyncVectorEnv. Used by: the trainer that uses the backend.")
show_envs(envs, caption)

# %% [markdown]
# The backend of the DQN trainer, ale-py's vector environment in grayscale, runs
# {glue:text}`env_ale_vector_gray84_vs_sync:.2f` times as fast as gymnasium's SyncVectorEnv
# ({glue:text}`env_ale_vector_gray84_steps_per_s:,.0f` agent steps per second), and that of
# the Mask-A2C trainer, in RGB, {glue:text}`env_ale_vector_rgb_vs_sync:.2f` times; envpool
# ran {glue:text}`env_envpool_gray84_steps_per_s:,.0f` (nan: not installed). The trainers use
# ale-py's C++ vector environment. Its grayscale 84×84 frames equal the `dqn` preset pixel
# for pixel (the test suite checks this). The Python wrappers remain the reference
# implementation for evaluation and for collecting states.
#
# ## The saliency video
#
# `saliency-study video` writes an MP4 of one greedy game with the saliency map of every
# frame beside it. `benchmarks/video.py` times a 200-step video of our Breakout DQN with
# Occlusion (the paper's parameters, incremental inference) and with the gradient, and of
# the official Mask-A3C agent with its policy mask, on one torch thread. Maps per second
# count the time spent in the explainer only; the video's wall time adds playing, drawing
# and encoding.

# %%
video = tabulate(video_table, bench)
glue_all(table_numbers(video, "video", "method", ["maps_per_second", "wall_seconds"],
                       keys=["occlusion", "gradient", "mask_policy"]))
caption = ("Speed of the saliency video (video_speed.json): maps per second in the explainer, and the seconds of "
           "the whole video (play, explain, draw, encode) and with loading the agent; a skipped run says why.")
show_video(video, caption)

# %% [markdown]
# Occlusion at the paper's parameters explains {glue:text}`video_occlusion_maps_per_second:.1f`
# frames per second, so its 200-step video takes {glue:text}`video_occlusion_wall_seconds:.0f` s;
# the gradient explains {glue:text}`video_gradient_maps_per_second:,.0f` frames per second and
# the policy mask {glue:text}`video_mask_policy_maps_per_second:,.0f`, where drawing and
# encoding take most of the video's time. The benchmark ran on the shared machine of the
# first table, so an idle core is faster.
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
# * The trainers step their environments in ale-py's C++ vector environment. The training
#   and environment tables compare their throughput with a CleanRL-style loop and with other
#   backends; the saliency video runs at the speed of its explainer.
