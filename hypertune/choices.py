"""The names a user chooses from: formats, tokenizers, optimizers, losses, oracle methods, ...

Each tuple is the one definition of its names; the module that implements the choice imports it from here
(``tuners.mert.OPTIMIZERS`` is :data:`MERT_OPTIMIZERS`), and where a module keeps a mapping from these
names to what they mean (``metrics.bleu.REF_LENGTHS``, the format registry) a test checks that its keys
are exactly these. Where code is typed by a choice, the choice is a ``Literal`` type here and its tuple is
read from it (:data:`Plateau`, :data:`PLATEAUS`). The module imports only :mod:`typing`, so that the command
line can offer every choice in ``hypertune COMMAND --help`` without loading numpy, scipy or numba (issue:
start-up under 0.2 s).
"""

from __future__ import annotations

from typing import Literal, get_args

# ---------------------------------------------------------------------- inputs and outputs
#: Graph formats (``formats.registry.FORMATS`` has exactly these keys; its order is the sniffing order).
GRAPH_FORMATS = (
    "cdec-json",
    "htk-slf",
    "hypertune",
    "hypertune-cache",
    "jsonl",
    "moses-extractor",
    "moses-hypergraph",
    "moses-nbest",
    "moses-searchgraph",
    "openfst",
    "plf",
    "zmert",
)
#: Weights formats ``--out-format`` writes (``formats.weights``).
WEIGHTS_FORMATS = ("cdec", "moses", "moses-ini", "kbmira-dense", "json", "zmert")

#: The environment variable naming a default folder for the native input cache (``--cache`` overrides it).
CACHE_ENVIRONMENT = "HYPERTUNE_CACHE"

# ---------------------------------------------------------------------- metrics
#: Metrics by name (``metrics.METRICS`` maps them to constructors; interpolations combine them).
METRICS = ("bleu", "ibm-bleu", "bleu+1", "linear-bleu", "chrf", "chrf++", "ter", "wer", "per", "cder")
#: The BLEU metrics among them: those the BLEU options (``--tokenize``, ``--smooth``, ``--max-order``, ...) apply to,
#: alone or in an interpolation.
BLEU_METRICS = ("bleu", "ibm-bleu", "bleu+1")
#: sacrebleu's default BLEU tokenizer (``sacrebleu.BLEU.TOKENIZER_DEFAULT``), ``hypertune bleu``'s default.
DEFAULT_TOKENIZER = "13a"
#: Tokenizers of :class:`hypertune.metrics.Tokenizer` (the last five need optional sacrebleu extras).
TOKENIZERS = ("13a", "none", "intl", "zh", "char", "ja-mecab", "ko-mecab", "spm", "flores101", "flores200")
#: BLEU's reference-length rules (``metrics.bleu.REF_LENGTHS`` maps them to kernel codes).
REF_LENGTHS = ("closest", "shortest", "average", "ibm")
#: BLEU smoothing methods (``metrics.bleu.SMOOTHING`` holds each one's default parameter).
SMOOTHING = ("none", "exp", "floor", "add-k", "plus1", "moses", "nakov")
#: Sentence gains: how hope/fear search, MIRA, the losses and the oracles score one hypothesis
#: (``metrics.gains.GAINS`` has exactly these keys, in this order).
GAINS = ("background", "bleu+1", "linear", "moses", "nakov")

# ---------------------------------------------------------------------- tuners
#: MERT's search over directions (``tuners.mert``).
MertOptimizer = Literal["auto", "coordinate", "cyclic", "powell", "random-directions", "random-search", "grid"]
MERT_OPTIMIZERS: tuple[MertOptimizer, ...] = get_args(MertOptimizer)
#: MERT's plateau handling of a line search's error surface (Cer et al. 2008; ``tuners.linesearch``).
Plateau = Literal["none", "average", "minimum"]
PLATEAUS: tuple[Plateau, ...] = get_args(Plateau)
#: How a tuner finishes the weights it writes (``tuners.finishing``): divided by their L1 norm, or as found.
NORMALIZATIONS = ("l1", "none")
#: The help line of every tuning command's ``--normalize`` (docs/cli.md, "The weights a tuning command writes").
NORMALIZE_HELP = "l1: divide all written weights (kept --init ones too) by their L1 norm (default); none: as found"
#: How MERT computes a lattice's or forest's envelope (``tuners.mert``).
Envelope = Literal["probing", "semiring"]
ENVELOPES: tuple[Envelope, ...] = get_args(Envelope)
#: What batch MIRA searches (``tuners.mira``): chosen from the inputs (auto), k-best lists, or lattices and forests.
MIRA_MODES = ("auto", "nbest", "hypergraph")
#: How hope and fear are searched in a lattice or forest: Moses's approximate forest search, or exact n-gram
#: intersection (linear BLEU only; ``tuners.hope_fear``).
HopeFearSearch = Literal["approximate", "exact"]
HOPE_FEAR_SEARCHES: tuple[HopeFearSearch, ...] = get_args(HopeFearSearch)
#: Minimum-risk objectives (``tuners.objectives``).
RISK_OBJECTIVES = ("xbleu", "risk", "linear-bleu")
#: Batch losses over k-best candidates (``tuners.losses``).
LOSSES = ("pro", "pl", "ranking", "mse", "softmax")
#: How PRO and ranking accept sampled pairs: Moses's threshold or cdec's sigmoid (``tuners.losses``).
ACCEPTANCES = ("threshold", "sigmoid")
#: The sentence gains of ``train --gain-smooth``: plus1 is the gain bleu+1 (``metrics.gains.SMOOTHED_GAINS``).
GAIN_SMOOTHINGS = ("plus1", "moses", "nakov")
#: Batch optimizers of ``train`` (``tuners.train``).
TRAIN_OPTIMIZERS = ("auto", "lbfgs", "owlqn")
#: Losses over hope, fear and oracle derivations, optimized online (``tuners.online``).
STRUCTURED_LOSSES = ("perceptron", "latent-svm", "ramp", "softmax-margin", "costmargin")
#: Online optimizers (``tuners.online``).
ONLINE_OPTIMIZERS = ("perceptron", "pa", "arow", "sgd", "adagrad")
#: What the perceptron and latent-SVM losses move towards: the oracle or the hope (``tuners.online``).
ONLINE_TARGETS = ("oracle", "hope")
#: How SGD and AdaGrad apply an L1 penalty (``tuners.online``).
L1_METHODS = ("fobos", "cumulative")
#: BLEU oracle searches; the last is the corpus oracle (``tuners.oracle``).
ORACLE_METHODS = ("kbest", "linear", "partial", "exact", "corpus")
#: The default budget of the exact oracle's branch and bound: partial derivations expanded per graph.
ORACLE_MAX_EXPANSIONS = 1_000_000
#: How the corpus oracle visits sentences (``tuners.oracle``).
CORPUS_ORACLE_VARIANTS = ("best-switch", "sentence-order")

# ---------------------------------------------------------------------- the tuning loop
#: What the tuning loop keeps from one iteration's decoder output to the next (``loop.loop``).
ACCUMULATE = ("nbest", "lattice", "none")
#: `tune --return`: the weights of the best dev decoding (default) or of the last one.
LOOP_RETURNS = ("best", "last")

# ---------------------------------------------------------------------- minimum Bayes risk decoding
#: `hypertune mbr --method`: the decision rules (``mbr.kbest``, ``mbr.lattice``, ``mbr.consensus``).
MBR_METHODS = ("kbest", "lattice", "consensus")
#: Lattice MBR's n-gram posteriors: exact at-least-once probabilities, or expected counts (``mbr.lattice``).
MBR_POSTERIORS = ("exact", "expected-counts")
