"""The cyclic garbage collector paused while a history is read and judged.

The checker makes no reference cycles: what it frees, reference counting frees. Yet the
collector starts a pass every few hundred allocations, and each older-generation pass
walks every container the checker keeps (a transactional history's transactions above
all), for nothing. Pausing it makes the check of a transactional history about a tenth
faster and leaves memory as it is.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector for the block; re-enable it after (also on error)
    only if it was enabled before, so that nested blocks leave it as they found it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
