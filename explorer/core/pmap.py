"""One map of a function over many items: in this process, over local processes, or on a Dask distributed cluster,
with the same results in the same order whichever runs it.

``parallel_map(fn, shared, items, workers=N, cluster=ADDRESS)`` returns ``[fn(shared, item) for item in items]``:

* ``workers`` <= 1 (or a single item): in this process, a plain loop;
* ``workers`` > 1: a :class:`concurrent.futures.ProcessPoolExecutor` of that many processes; ``shared`` is pickled
  once per worker process (its initializer), each task carries only its item;
* ``cluster`` (``tcp://host:8786``): a ``dask.distributed.Client`` on that scheduler; ``shared`` is scattered to
  every worker once (``broadcast=True``) and ``client.map`` runs the same ``fn`` over the items. The workers
  must import ``fn``'s module (the same ``hardware-explorer`` installed on them). Dask is an optional extra
  (``pip install 'hardware-explorer[cluster]'``), imported only here and only when a cluster is given.

``fn`` must be a module-level function (picklable by reference) and deterministic in ``(shared, item)``: a
random draw takes its seed from the item, never from the process, so every executor gives the same results.
Results come back in the order of ``items`` whatever order they finish in; ``progress(done, total)`` is called
as they finish.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, ProcessPoolExecutor, as_completed
from typing import Any

CONNECT_TIMEOUT_S = 10.0  # how long to wait for a Dask scheduler before giving up
EXTRA = "pip install 'hardware-explorer[cluster]'"


class PoolError(ValueError):
    """The executor cannot run the map: a bad worker count, no dask installed, a scheduler not reachable. The
    message names the option (``--workers``, ``--cluster``) and is one line."""


def default_workers() -> int:
    """The CPUs this process may use (its affinity where the platform tells it), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return max(os.cpu_count() or 1, 1)


def check_workers(workers: int | None) -> int:
    """``workers`` as a count >= 1 (None: :func:`default_workers`); else PoolError naming --workers."""
    if workers is None:
        return default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise PoolError(f"--workers: must be a whole number >= 1, got {workers!r}")
    return workers


def parallel_map(fn: Callable[[Any, Any], Any], shared: Any, items: Sequence[Any], workers: int | None = 1,
                 cluster: str | None = None, progress: Callable[[int, int], None] | None = None,
                 timeout_s: float | None = None) -> list:
    """``[fn(shared, item) for item in items]`` on the executor chosen (module docstring)."""
    items = list(items)
    if cluster:
        return _dask_map(fn, shared, items, cluster, progress, CONNECT_TIMEOUT_S if timeout_s is None else timeout_s)
    workers = min(check_workers(workers), max(len(items), 1))
    if workers <= 1:
        out = []
        for k, item in enumerate(items):
            out.append(fn(shared, item))
            if progress:
                progress(k + 1, len(items))
        return out
    return _process_map(fn, shared, items, workers, progress)


# -- local processes: ``shared`` installed once per worker by the pool's initializer

_SHARED: Any = None


def _install(shared: Any) -> None:
    global _SHARED
    _SHARED = shared


def _call_installed(fn: Callable[[Any, Any], Any], item: Any) -> Any:
    return fn(_SHARED, item)


def _context():
    """fork where it is safe (POSIX, no other thread running: the workers start at once and import nothing),
    spawn otherwise (a fork beside running threads can copy a held lock)."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _process_map(fn, shared, items, workers, progress) -> list:
    out: list = [None] * len(items)
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_install,
                             initargs=(shared,)) as pool:
        futures = {pool.submit(_call_installed, fn, item): k for k, item in enumerate(items)}
        for done, f in enumerate(as_completed(futures), 1):
            out[futures[f]] = f.result()
            if progress:
                progress(done, len(items))
    return out


# -- a Dask distributed cluster

def _dask_map(fn, shared, items, address: str, progress, timeout_s: float) -> list:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise PoolError(f"--cluster: needs dask.distributed, an optional extra: {EXTRA}") from None
    try:
        client = Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise PoolError(f"--cluster: cannot reach a Dask scheduler at {address!r} ({_one_line(exc)})") from None
    with client:
        try:
            [handle] = client.scatter([shared], broadcast=True, hash=False)
            futures = client.map(fn, [handle] * len(items), items, pure=False)
            index = {f.key: k for k, f in enumerate(futures)}
            out: list = [None] * len(items)
            for done, f in enumerate(dask_completed(futures, loop=client.loop), 1):
                out[index[f.key]] = f.result()
                if progress:
                    progress(done, len(items))
        except ImportError as exc:  # a worker without this package (or another version of it)
            raise PoolError(f"--cluster: a worker at {address!r} cannot import {exc.name or 'the task'}: install "
                            "the same hardware-explorer on every worker") from None
        except (OSError, TimeoutError, CancelledError) as exc:  # the scheduler or a worker went away
            raise PoolError(f"--cluster: the Dask cluster at {address!r} failed ({_one_line(exc)})") from None
        except Exception as exc:
            if type(exc).__name__ != "KilledWorker":
                raise
            raise PoolError(f"--cluster: a Dask worker died running a task ({_one_line(exc)})") from None
        return out


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
