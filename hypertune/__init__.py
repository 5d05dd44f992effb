"""hypertune: tune SMT weights on k-best lists, lattices and hypergraphs with semiring algorithms."""

__version__ = "0.1.0"
