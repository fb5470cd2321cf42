"""The columns of a serving sweep (``hwexplorer sweep --rate``), in file order: (name, unit, meaning). Public: the
CSV/Parquet header and --json (docs/sweep.md, "Serving sweeps"). Kept apart from :mod:`.serving` so the file
readers and writers (:mod:`.table_io`) need no serving code."""

from __future__ import annotations

COLUMNS = (
    ("device", "", "device id (one replica on one device)"),
    ("precision", "", "numeric precision of the step surface"),
    ("max_batch", "sequences", "the engine's batch cap: sequences in a step (vLLM max_num_seqs)"),
    ("rate_per_s", "requests/s", "offered arrival rate"),
    ("method", "", "'simulation' (the discrete-event simulation) or 'analytic' (the estimate)"),
    ("requests", "requests", "requests simulated (0 for the analytic estimate)"),
    ("time_source", "", ("where the step times come from: 'spec' (the ideal model, or a device without a "
                         "calibration under --time-model calibrated), 'calibrated' or 'partly calibrated' "
                         "(docs/calibration.md)")),
    ("ttft_p50_ms", "ms", "time to first token, P50"),
    ("ttft_p90_ms", "ms", "time to first token, P90"),
    ("ttft_p99_ms", "ms", "time to first token, P99"),
    ("tpot_p50_ms", "ms", "time per output token after the first, P50"),
    ("tpot_p90_ms", "ms", "time per output token after the first, P90"),
    ("tpot_p99_ms", "ms", "time per output token after the first, P99"),
    ("e2e_p90_ms", "ms", "end-to-end latency of a request, P90"),
    ("throughput_per_device_tok_s", "tokens/s", "output tokens per second per device (input tokens not counted)"),
    ("request_throughput_per_s", "requests/s", "completed requests per second"),
    ("goodput_per_s", "requests/s", "completed requests per second that meet every service level given"),
    ("cost_per_million_tokens_usd", "USD per 10^6 tokens",
     "per million output tokens at the device's hourly price (--hourly-price, else the catalog's cloud price)"),
    ("energy_per_token_j", "J/token", ("per output token: the device at its TDP while a step runs, at "
                                      "--idle-power between steps")),
    ("mean_batch", "sequences", "mean sequences per decode step"),
    ("kv_utilization", "", "mean share of the KV-cache blocks in use, 0-1"),
    ("preemptions", "", "sequences preempted when the KV cache ran out (simulation only; 0 for the estimate)"),
    ("stable", "", "below capacity (false: the queue grows without bound)"),
    ("slo_met", "", "every service level given is met (true when none is given)"),
    ("fits", "", "the weights leave room for at least one KV-cache block"),
    ("pareto", "", "on the Pareto front (stable fitting points only)"),
)
NAMES = tuple(c[0] for c in COLUMNS)
TEXT = {"device", "precision", "method", "time_source"}
INTS = {"max_batch", "requests", "preemptions"}
BOOLS = {"stable", "slo_met", "fits", "pareto"}

#: The serving sweep's Pareto objectives, in column order, and whether each is minimized.
OBJECTIVES = (("ttft_p90_ms", True), ("tpot_p90_ms", True), ("throughput_per_device_tok_s", False),
              ("cost_per_million_tokens_usd", True), ("energy_per_token_j", True))
