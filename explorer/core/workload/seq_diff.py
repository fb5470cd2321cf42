"""Where two long tuples differ, found with tuple comparisons in C.

An edit of a 10,000-layer model keeps every layer object but the ones it changed (and a patched work table keeps
the other layers' status objects), so the common prefix and suffix of the old and new tuples are found by
comparing slices: CPython's tuple comparison takes an identical object as equal without calling its ``__eq__``,
about 5 ns an item, against ~50 ns an item for a Python-level loop or ``map(operator.is_, ...)``. Items that are
equal but not identical count as the same (what a hash or a shown value depends on). Qt-free, pure.
"""

from __future__ import annotations


def common_prefix(a: tuple, b: tuple, k: int | None = None) -> int:
    """How many of the first ``k`` (default: all that both have) items of ``a`` and ``b`` are equal."""
    k = min(len(a), len(b)) if k is None else k
    if a[:k] == b[:k]:
        return k
    lo, hi = 0, k  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def common_suffix(a: tuple, b: tuple, k: int | None = None) -> int:
    """How many of the last ``k`` (default: all that both have) items of ``a`` and ``b`` are equal."""
    n, m = len(a), len(b)
    k = min(n, m) if k is None else k
    if a[n - k:] == b[m - k:]:
        return k
    lo, hi = 0, k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[n - mid:n - lo] == b[m - mid:m - lo]:
            lo = mid
        else:
            hi = mid
    return lo


def changed_span(old: tuple, new: tuple) -> tuple[int, int, int]:
    """``(start, stop_new, stop_old)``: ``new[start:stop_new]`` replaced ``old[start:stop_old]``, and the items before
    ``start`` and from the stops on are equal, in order (the longest common prefix, then the longest common suffix
    of what is left)."""
    prefix = common_prefix(old, new)
    suffix = common_suffix(old, new, min(len(old), len(new)) - prefix)
    return prefix, len(new) - suffix, len(old) - suffix
