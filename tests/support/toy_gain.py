"""A toy gain written as CONTRIBUTING.md's recipe says (its function, one registry line, its name in
``choices.GAINS``), for tests/metrics/test_gain_recipe.py: a hypothesis's clipped unigram precision ``m1 / c1`` (0 when
empty), scored in Python -- it has no compiled kernel, so it scores k-best lists and refuses lattices and forests."""

from __future__ import annotations

import numpy as np


def unigram_precision(stats: np.ndarray, order: int) -> np.ndarray:
    """``m1 / c1`` of every row of BLEU statistics ``m1 c1 ... mN cN reflen``."""
    return np.divide(stats[:, 0], stats[:, 1], out=np.zeros(stats.shape[0]), where=stats[:, 1] > 0)
