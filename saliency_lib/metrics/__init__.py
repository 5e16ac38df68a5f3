"""Evaluation metrics for saliency maps: sanity checks, insertion/deletion, statistics.

Every metric is configured in its constructor and evaluated by
``evaluate(agent, states, ...)``, which returns a tidy table in the schema of
:mod:`saliency_lib.results`. Class metadata ``name``, ``higher_is_better`` and
``reference`` describe the score.
"""

from .dependence import (
    INTERVALS,
    block_bootstrap_ci,
    effective_sample_size,
    ess_t_ci,
    mean_ci,
    paired_block_test,
    pooled_block_ci,
)
from .equivalence import MIN_ESS, VERDICTS, Verdict, compare_with_reference, equivalence_verdict
from .insertion_deletion import MEASURES, SUBSTRATES, Deletion, Insertion, auc, make_substrate, random_saliency
from .randomisation import (
    INITS,
    ORDERS,
    ORIGINAL,
    REFERENCE_LAYERS,
    RandomisationTest,
    randomise_modules,
    randomised_models,
    rebuild_explainer,
)
from .similarity import (
    SIMILARITIES,
    ConstantMapWarning,
    hog_pearson,
    is_constant,
    largest_tie,
    normalise_map,
    similarity,
    spearman,
    spearman_untied,
    ssim,
    ssim_2d,
)
from .statistics import holm, paired_block_tests, paired_wilcoxon, ranking_table, summarise

__all__ = [
    "RandomisationTest", "randomised_models", "randomise_modules", "rebuild_explainer", "INITS", "ORDERS", "ORIGINAL",
    "REFERENCE_LAYERS", "Insertion", "Deletion", "SUBSTRATES", "MEASURES", "make_substrate", "random_saliency", "auc",
    "SIMILARITIES", "ConstantMapWarning", "similarity", "spearman", "ssim", "ssim_2d", "hog_pearson", "spearman_untied",
    "largest_tie", "normalise_map", "is_constant",
    "summarise", "holm", "paired_block_tests", "paired_wilcoxon", "ranking_table",
    "block_bootstrap_ci", "effective_sample_size", "paired_block_test", "pooled_block_ci",
    "INTERVALS", "ess_t_ci", "mean_ci",
    "VERDICTS", "MIN_ESS", "Verdict", "equivalence_verdict", "compare_with_reference",
]
