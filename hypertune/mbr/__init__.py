"""Minimum Bayes risk decision rules (docs/mbr.md).

* k-best MBR over lists and samples, with a sentence metric or given utility matrices (Kumar & Byrne 2004):
  :mod:`hypertune.mbr.kbest`;
* lattice MBR with Tromble et al.'s (2008) linear BLEU: :mod:`hypertune.mbr.lattice`;
* consensus decoding over forests (DeNero et al. 2009): :mod:`hypertune.mbr.consensus`.
"""

from hypertune.mbr.consensus import ConsensusChoice, consensus, consensus_corpus
from hypertune.mbr.kbest import KbestLists, MbrDecision, MbrOptions, kbest_lists, mbr_decide, posteriors
from hypertune.mbr.lattice import LatticeChoice, LatticeMbrResult, lattice_mbr, lattice_mbr_corpus, ngram_posteriors

__all__ = ["ConsensusChoice", "KbestLists", "LatticeChoice", "LatticeMbrResult", "MbrDecision", "MbrOptions",
           "consensus", "consensus_corpus", "kbest_lists", "lattice_mbr", "lattice_mbr_corpus", "mbr_decide",
           "ngram_posteriors", "posteriors"]  # fmt: skip
