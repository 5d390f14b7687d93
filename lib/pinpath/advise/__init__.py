"""``pinpath advise``: given an application's transfer trace, replay its pattern on this node
under every policy and say which runtime setting or code change pays, with break-evens (issue 22).

parse (the trace) -> pattern (buffers, classes, regions; a data set) -> replay (ONE function, the
engine) -> predict (totals, regions, steps, break-evens, intervals) -> advice -> report (pages).
"""

from .parse import FORMATS, Trace, read_trace
from .pattern import Pattern, pattern, write_dataset
from .replay import replay

__all__ = ["FORMATS", "Trace", "read_trace", "Pattern", "pattern", "write_dataset", "replay"]
