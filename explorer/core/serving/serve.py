"""One serving question answered: the simulation of N requests over the replicas (a router in front), summarised
as a :class:`~.result.ServingResult`, beside the analytic estimate and the load curve."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from explorer.core.formats import TensorFormats
from explorer.core.hardware.device import Device
from explorer.core.hardware.system import System
from explorer.core.parallel.layout import Layout
from explorer.core.parallel.system_pass import Options
from explorer.core.workload.model import Model

from .analytic import LoadCurve, Setup, estimate, load_curve
from .memory import device_memory, system_memory
from .result import Latency, ServingResult, met_mask, slo_checks
from .simulate import Policy, SimRun, Speculative, cached_tokens, simulate_routed
from .stack import answers
from .surface import Grid, system_surface
from .surfaces import KeyedCache, device_surface, device_surfaces
from .workload import SLO, Requests, Workload


def grid_for(workload: Workload, policy: Policy, spec: Speculative | None = None, block_size: int = 16) -> Grid:
    """The surface's extent for a workload: contexts up to the longest request, prompts up to the largest step
    (a prefill step's token budget, a chunk plus the batch, a preempted request's recompute, a verification);
    a fixed workload's prompt (with and without its cached prefix) held exactly on the grid."""
    max_in, max_out = workload.max_lengths()
    lengths = workload.lengths
    if workload.trace is not None:
        min_in = int(workload.trace.input.min())
    elif lengths.kind == "histogram":
        min_in = min(i for i, _ in lengths.pairs)
    else:
        min_in = lengths.input[0]
    anchors: tuple[int, ...] = ()
    if workload.trace is None and lengths.kind == "fixed":
        n = lengths.input[0]
        cached = min((workload.prefix_tokens // block_size) * block_size, ((n - 1) // block_size) * block_size)
        anchors = (n, n - cached) if cached > 0 else (n,)
    longest = max(policy.max_batched_tokens, policy.chunk + policy.max_batch, max_in + max_out,
                  policy.max_batch * ((spec.k if spec else 0) + 1))
    prefills = min(policy.max_batch, max(1, policy.max_batched_tokens // max(min_in, 1)))
    return Grid(policy.max_batch, max_in + max_out, prefills, longest, anchors=anchors)


def device_setup(model: Model, device: Device, workload: Workload, policy: Policy | None = None,
                 precision: str = "fp16", formats: TensorFormats | None = None, utilization: float = 0.9,
                 block_size: int = 16, spec: Speculative | None = None, replicas: int = 1, idle_w: float = 0.0,
                 usd_per_s: float | None = None, time_model: str = "ideal") -> Setup:
    """A replica on one device: its step surface (:func:`device_surface`, its times under ``time_model``) and
    memory (:func:`device_memory`)."""
    policy = policy or Policy()
    g = grid_for(workload, policy, spec, block_size)
    step_tokens = policy.chunk if policy.chunked else policy.max_batched_tokens
    surface = device_surface(model, device, g, precision, formats, time_model=time_model)
    memory = device_memory(model, device, step_tokens, precision, formats, utilization, block_size)
    return Setup(surface, memory, policy, spec, replicas, *_power_price(device, idle_w, usd_per_s))


SETUPS = KeyedCache(64)  # one device's setup by (model, device, grid, policy, precision, formats, memory settings,
#                           time model)


def _setup_keys(model, devices, workload, policy, precision, formats, utilization, block_size, time_model="ideal"):
    g = grid_for(workload, policy, None, block_size)
    return g, [("setup", model, d, g, policy, precision, formats, utilization, block_size, time_model)
               for d in devices]


def device_setups(model: Model, devices, workload: Workload, policy: Policy | None = None,
                  precision: str = "fp16", formats: TensorFormats | None = None, utilization: float = 0.9,
                  block_size: int = 16, time_model: str = "ideal") -> tuple[Setup, ...]:
    """:func:`device_setup` on each device, kept by key (:data:`SETUPS`, the time model part of it); the ones not
    kept get their surfaces from one stacked pass (:func:`~.surfaces.device_surfaces`)."""
    policy = policy or Policy()
    g, keys = _setup_keys(model, devices, workload, policy, precision, formats, utilization, block_size, time_model)
    found = [SETUPS.peek(k) for k in keys]
    todo = [i for i, x in enumerate(found) if x is None]
    if todo:
        step_tokens = policy.chunk if policy.chunked else policy.max_batched_tokens
        made = device_surfaces(model, [devices[i] for i in todo], g, precision, formats, time_model=time_model)
        for i, surface in zip(todo, made):
            d = devices[i]
            found[i] = Setup(surface, device_memory(model, d, step_tokens, precision, formats, utilization,
                                                    block_size), policy, None, 1, *_power_price(d, 0.0, None))
            SETUPS.put(keys[i], found[i])
    return tuple(found)


def device_setups_ready(model: Model, devices, workload: Workload, policy: Policy | None = None,
                        precision: str = "fp16", formats: TensorFormats | None = None, utilization: float = 0.9,
                        block_size: int = 16, time_model: str = "ideal") -> bool:
    """Whether :func:`device_setups` would compute nothing (every setup is kept)."""
    _, keys = _setup_keys(model, devices, workload, policy or Policy(), precision, formats, utilization,
                          block_size, time_model)
    return all(SETUPS.peek(k) is not None for k in keys)


def system_setup(model: Model, system: System, device: Device, layout: Layout, workload: Workload,
                 policy: Policy | None = None, precision: str = "fp16", formats: TensorFormats | None = None,
                 utilization: float = 0.9, block_size: int = 16, spec: Speculative | None = None,
                 options: Options | None = None, idle_w: float = 0.0, usd_per_s: float | None = None,
                 time_model: str | None = None) -> Setup:
    """The layout's dp replicas, each tp x pp devices (:func:`system_surface`, :func:`system_memory`), timed by
    the system pass under ``options`` (its ``time_model``; ``time_model``, where given, replaces that one)."""
    policy = policy or Policy()
    if time_model is not None:
        options = replace(options or Options(), time_model=time_model)
    g = grid_for(workload, policy, spec, block_size)
    g = Grid(g.max_batch, g.max_context, g.max_prefill_batch, g.max_length, points=8, anchors=g.anchors)
    step_tokens = policy.chunk if policy.chunked else policy.max_batched_tokens
    surface = system_surface(model, system, device, layout, g, precision, formats, options)
    memory = system_memory(model, system, device, layout, step_tokens, precision, formats, utilization,
                           block_size, options)
    return Setup(surface, memory, policy, spec, layout.dp, *_power_price(device, idle_w, usd_per_s))


def _power_price(device: Device, idle_w: float, usd_per_s: float | None) -> tuple:
    """(busy power: the device's TDP, idle power, price per second: the one given, else the device's cloud
    price per hour from the catalog); None where unknown."""
    tdp = device.tdp.value if device.tdp is not None else None
    price = usd_per_s if usd_per_s is not None else (
        device.cloud_price.value if device.cloud_price is not None else None)
    return tdp, idle_w, price


def simulate_replicas(workload: Workload, setup: Setup, n: int, seed: int = 0, record: bool = False,
                      router: str = "round-robin",
                      progress=None) -> tuple[Requests, list[tuple[np.ndarray, SimRun]]]:
    """The requests and each replica's run (with the indices of the requests it served); ``progress``: called
    with the share of the requests routed so far (:func:`simulate_routed`)."""
    req = workload.requests(n, seed)
    cached = cached_tokens(req, workload.prefix_tokens, workload.prefix_hit_rate, setup.memory.block_size, seed)
    runs = simulate_routed(req, setup.surface, setup.memory, setup.policy, cached, setup.spec,
                           workload.prefix_tokens, record, setup.replicas, router, progress)
    return req, [(idx, run) for idx, run in runs if len(idx)]


def summarize(req: Requests, runs: list[tuple[np.ndarray, SimRun]], setup: Setup, slo: SLO,
              rate: float) -> ServingResult:
    n = len(req)
    ttft, tpot, e2e = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    steps = np.zeros(setup.policy.max_batch + 1)
    kv = busy = 0.0
    for idx, run in runs:
        ttft[idx], tpot[idx], e2e[idx] = run.ttft, run.tpot, run.e2e
        steps += run.steps_by_batch
        kv += run.kv_block_seconds / max(run.blocks, 1)
        busy += run.busy_s
    end = max(run.end_s for _, run in runs)
    duration = end - float(req.arrival[0])
    lat = Latency.of(ttft), Latency.of(tpot), Latency.of(e2e)
    ok = met_mask(slo, ttft, tpot, e2e)
    sizes = np.flatnonzero(steps)
    share = steps[sizes] / steps.sum() if steps.sum() else steps[sizes]
    # stable unless the queue kept growing: the last quarter's requests waited far longer than the first's
    q = n // 4
    stable = q < 25 or not np.nanmedian(ttft[-q:]) > 2 * np.nanmedian(ttft[:q]) + 0.05
    busy_share = busy / (duration * len(runs))
    energy, cost = setup.energy_and_cost(busy_share, float(req.output.sum()) / duration / len(runs))
    return ServingResult(
        method="simulation", rate=rate, replicas=setup.replicas, devices=setup.surface.devices,
        ttft=lat[0], tpot=lat[1], e2e=lat[2], request_throughput=n / duration,
        throughput=float(req.output.sum()) / duration, goodput=float(ok.sum()) / duration,
        slo=slo_checks(slo, *lat), kv_utilization=kv / (duration * len(runs)),
        mean_batch=float(sizes @ share) if len(sizes) else 0.0, stable=bool(stable),
        preemptions=sum(run.preemptions for _, run in runs), batch_sizes=sizes, batch_share=share,
        requests=n, duration_s=duration, busy_share=busy_share, energy_per_token=energy,
        cost_per_million=cost)


@dataclass(frozen=True, eq=False)
class ServingAnswer:
    """What ``hwexplorer serve`` prints: the estimate at the workload's rate, the load curve, and (when asked)
    the simulation at that rate with its schedule."""

    workload: Workload
    slo: SLO
    setup: Setup
    estimate: ServingResult
    curve: LoadCurve
    simulation: ServingResult | None = None
    runs: tuple = ()


def answer(workload: Workload, setup: Setup, slo: SLO, simulate_n: int = 0, seed: int = 0,
           record: bool = False, router: str = "round-robin", progress=None) -> ServingAnswer:
    est = estimate(workload, setup, slo)[0]
    curve = load_curve(workload, setup, slo)
    sim, runs = None, ()
    if simulate_n:
        req, run_list = simulate_replicas(workload, setup, simulate_n, seed, record, router, progress)
        sim = summarize(req, run_list, setup, slo, workload.mean_rate())
        runs = tuple(run_list)
    return ServingAnswer(workload, slo, setup, est, curve, sim, runs)


ANSWERS = KeyedCache(64)  # analytic answers by (workload, setup, service levels): a device checked again is free


def cached_answer(workload: Workload, setup: Setup, slo: SLO) -> ServingAnswer:
    """:func:`answer` (the analytic estimate and load curve, no simulation), kept by its inputs: the same setup
    object (the surfaces are cached, :mod:`.surfaces`), an equal workload and service levels."""
    key = ("answer", workload, setup, slo)
    try:
        hash(key)
    except TypeError:  # a workload with a trace: not kept
        return answer(workload, setup, slo)
    return ANSWERS.get(key, lambda: answer(workload, setup, slo))


def cached_answers(workload: Workload, setups, slo: SLO) -> tuple[ServingAnswer, ...]:
    """:func:`cached_answer` of each setup, those not kept computed together first (:func:`~.stack.answers`: one
    stacked capacity search and one stacked fixed point for the devices of one question; the same floats)."""
    try:
        todo = [s for s in setups if ANSWERS.peek(("answer", workload, s, slo)) is None]
    except TypeError:  # unhashable: nothing kept
        return tuple(answer(workload, s, slo) for s in setups)
    if len(todo) > 1:
        for s, (est, curve) in zip(todo, answers(workload, todo, slo)):
            ANSWERS.put(("answer", workload, s, slo), ServingAnswer(workload, slo, s, est, curve))
    return tuple(cached_answer(workload, s, slo) for s in setups)


def answers_ready(workload: Workload, setups, slo: SLO) -> bool:
    """Whether :func:`cached_answer` would compute nothing for any of ``setups``."""
    try:
        return all(ANSWERS.peek(("answer", workload, s, slo)) is not None for s in setups)
    except TypeError:  # unhashable: never kept
        return False
