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
# (chapter-claims)=
# # Claims: what held
#
# This page says in one table which claims of {cite:t}`huber2022benchmarking` and
# {cite:t}`itaya2021visual` the study reproduces, in the form of a reproducibility report: one row
# per claim, with the paper's number, ours, a verdict and what the verdict rests on. The rows of
# our own findings that go beyond the papers follow theirs. Every row is computed from the
# committed paper-scale study (packed results only; nothing is recomputed here).

# %% tags=["parameters"]
study_profile = "full"  # the stored study the claims are read from
results_dir = "data/results"  # stored results, relative to the repository

# %%
from myst_nb import glue

from saliency_book.claims_page import show_claims
from saliency_study.claims import AGREE_SHARE, DIFFER_SHARE, cached_claims
from saliency_study.evidence import INSERTION_MARGIN_SD, MIN_ESS, SIMILARITY_MARGIN

claims = cached_claims(profile=study_profile, results_dir=results_dir)
glue("n_claims", len(claims), display=False)
glue("n_reproduced", int(claims["verdict"].isin(["reproduced", "holds"]).sum()), display=False)
glue("similarity_margin", SIMILARITY_MARGIN, display=False)
glue("insertion_margin", INSERTION_MARGIN_SD, display=False)
glue("min_ess", int(MIN_ESS), display=False)
glue("agree_share", f"{AGREE_SHARE:.0%}", display=False)
glue("differ_share", f"{DIFFER_SHARE:.0%}", display=False)

# %% [markdown]
# ## How a verdict is reached
#
# A number of ours **reproduces** the paper's when their difference is equivalent to zero within a
# margin stated before any number was compared: ±{glue:text}`similarity_margin` for a sanity
# similarity (Spearman, SSIM, HOG correlation), and {glue:text}`insertion_margin` of the paper's
# per-state standard deviation for an insertion AUC, whose scales differ by two orders of magnitude
# between games and measures. The test is two one-sided tests at 5 %: the 90 % interval of the
# difference, with the paper's own sampling error from its standard deviation and count, must lie
# inside the margin. Outside it, the number **differs**; an interval that straddles a margin is
# **inconclusive**. Our states are consecutive states of a game, so their interval counts them by
# their effective sample size, and below {glue:text}`min_ess` effective states no verdict is given
# (**withheld**).
#
# A claim made of many such comparisons is reproduced when at least {glue:text}`agree_share` of its
# judged comparisons are, and differs when at least {glue:text}`differ_share` differ. A claim about
# the order of the methods is reproduced when the rank correlation with the paper's order is
# positive and significant in at least {glue:text}`agree_share` of its settings. The column
# "basis" of each row gives its counts; the chapter linked from the claim shows every comparison.

# %% [markdown]
# ## The claims
#
# {glue:text}`n_reproduced` of the {glue:text}`n_claims` claims hold or are reproduced.

# %%
show_claims(claims)

# %% [markdown]
# A claim "not tested" rests on results the committed study does not hold yet; `saliency-study run
# --profile full --status` says which. The same rows as JSON: `saliency-study claims --json`.
