"""Loops: `scan` builds a `Scan` Op whose body is an inner graph (see op.py).

basic.py is the builder with PyTensor's semantics, op.py the Op, run.py the loop
over the body compiled once (loop.c: its steps in C), gradient.py backpropagation
through time and the forward-mode loop, rewriting.py the loop rewrites, unroll.py
short loops written out step by step (for teaching).
"""

from workbench.core.scan import rewriting as rewriting  # (registers the loop rewrites)
from workbench.core.scan.basic import Until, foldl, foldr, map, reduce, scan, until
from workbench.core.scan.op import Scan, ScanError, ScanInfo
from workbench.core.scan.unroll import unroll

__all__ = ["Scan", "ScanError", "ScanInfo", "Until", "foldl", "foldr", "map", "reduce", "scan",
           "unroll", "until"]
