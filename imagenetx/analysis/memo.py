"""Keep the last few results of an expensive computation, keyed by what it
depends on, for the App: it sends the same panel event several times at
once and users switch back and forth between settings."""

import threading
from collections import OrderedDict
from typing import Callable, Hashable

#: how many results :func:`memoized` keeps
SIZE = 16
_RESULTS: "OrderedDict[Hashable, object]" = OrderedDict()
_LOCK = threading.Lock()


def memoized(key: Hashable, compute: Callable[[], object]):
    """``compute()``, or its result for the same ``key`` computed before.

    Computations run one at a time, so a request that repeats one in
    progress waits for it and reuses its result instead of computing again.
    Treat the result as read-only: later calls share it.
    """
    with _LOCK:
        if key in _RESULTS:
            _RESULTS.move_to_end(key)
            return _RESULTS[key]
        result = compute()
        _RESULTS[key] = result
        while len(_RESULTS) > SIZE:
            _RESULTS.popitem(last=False)
        return result
