"""Links calibrate like kernels: the nccl-tests reader and the alpha-beta fit (docs/calibration.md, "Links")."""

from pathlib import Path

import numpy as np
import pytest

from explorer.core.hardware.system_file import load_system_file
from explorer.core.importers import ImporterError, load
from explorer.core.importers.nccl_tests import NcclTestsError, read_nccl_tests
from explorer.core.parallel.collectives import bus_bandwidth, collective_time
from explorer.core.parallel.link_fit import fit_link, level_domain

FIXTURE = Path(__file__).parents[2] / "fixtures" / "nccl" / "mi300x-8gpu-all_reduce_perf.txt"
MI300X = Path(__file__).parents[3] / "catalog" / "systems" / "amd-instinct-mi300x-platform.yaml"
HEADER = """# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""


def test_the_published_mi300x_table_is_read_as_printed():
    """hisohara/ai-scripts, training/01_rccl-smoketest/README.md at 9acb273b (tests/fixtures/nccl/README.md):
    rccl-tests all_reduce_perf on 8 MI300X, 8 B .. 8 GiB."""
    imported = load(FIXTURE)
    t = imported.value
    assert (imported.importer, imported.kind, t.op, t.ranks, t.dtype) == (
        "nccl_tests", "collectives", "all_reduce", 8, "float")
    assert t.size.size == 31 and t.size[0] == 8 and t.size[-1] == 8 * 2**30
    assert t.time[-1] == pytest.approx(47617e-6) and t.busbw[-1] == pytest.approx(315.69e9)
    big = t.size >= 2**20  # printed with 4+ significant digits: our bus bandwidth equals the file's
    np.testing.assert_allclose(bus_bandwidth("all_reduce", t.size[big], 8, t.time[big]), t.busbw[big], rtol=2e-3)


def test_the_fit_reproduces_the_published_bus_bandwidth_above_1_mib():
    """Alpha-beta ring fit of the table's messages of 1 MiB and more: the bus bandwidth curve within 10 % on
    average (7.1 %), the large messages (64 MiB and up) each within 6 %. The model cannot follow NCCL's slow ramp
    between 8 and 32 MiB (protocol and channel changes): 13 %, 21 % and 10.5 % there; asserted so it is seen."""
    t = load(FIXTURE).value
    fit = fit_link(t.op, t.size, t.time, t.ranks, min_size=2**20)
    assert fit.size.size == 14
    assert fit.mape_above == pytest.approx(0.0711, abs=0.001) and fit.mape_above < 0.10
    assert np.all(np.abs(fit.error[fit.size >= 64 * 2**20]) < 0.06)
    assert fit.max_error_above == pytest.approx(0.206, abs=0.002)
    assert fit.bandwidth == pytest.approx(297.8e9, rel=0.002)  # 66 % of the platform's stated 448 GB/s per direction
    assert fit.alpha == pytest.approx(1.84e-6, rel=0.01)
    assert fit.at_bound == ()
    # the residuals are the printed bus bandwidth's: predicted / measured - 1
    np.testing.assert_allclose(fit.busbw_predicted / fit.busbw_measured - 1, fit.error)


def test_the_soft_join_follows_the_ramp_within_10_percent_at_every_size_above_1_mib():
    """The same table, ``join='soft'``: latency and bandwidth terms joined as (L**s + W**s)**(1/s) with s fitted.
    Every message of 1 MiB and more within 10 % (worst +7.3 % at 16 MiB, was +20.6 %); MAPE 2.1 % (was 7.1 %).
    Per size, alpha-beta -> soft (%): 1 MiB -10.9 -> +1.8, 2 MiB -3.6 -> -2.4, 4 MiB +5.2 -> -2.7,
    8 MiB +13.0 -> +0.3, 16 MiB +20.6 -> +7.3, 32 MiB +10.5 -> +1.1, 64 MiB +3.0 -> -2.1, 128 MiB -1.7 -> -3.2,
    256 MiB -3.9 -> -2.5, 512 MiB -4.8 -> -1.2, 1 GiB -5.4 -> -0.2, 2 GiB -5.6 -> +0.8, 4 GiB -5.6 -> +1.5,
    8 GiB -5.7 -> +2.0."""
    t = load(FIXTURE).value
    before = fit_link(t.op, t.size, t.time, t.ranks, min_size=2**20)
    fit = fit_link(t.op, t.size, t.time, t.ranks, min_size=2**20, join="soft")
    assert np.all(np.abs(fit.error) < 0.10) and fit.max_error_above == pytest.approx(0.073, abs=0.002)
    assert fit.mape_above == pytest.approx(0.021, abs=0.001)
    sixteen = fit.size == 16 * 2**20
    assert before.error[sixteen][0] == pytest.approx(0.206, abs=0.002) and fit.error[sixteen][0] < 0.08
    assert fit.sharpness == pytest.approx(0.607, abs=0.005) and fit.join == "soft" and before.sharpness == 1.0
    assert fit.bandwidth == pytest.approx(325.6e9, rel=0.003) and fit.alpha == pytest.approx(0.909e-6, rel=0.02)
    np.testing.assert_allclose(fit.predicted, collective_time("all_reduce", fit.size, 8, fit.bandwidth, fit.alpha,
                                                              "ring", fit.sharpness))
    with pytest.raises(ValueError, match="join: expected one of sum, soft"):
        fit_link(t.op, t.size, t.time, t.ranks, join="max")


def test_a_soft_table_gives_its_sharpness_back():
    sizes = 2.0 ** np.arange(10, 34)
    times = collective_time("all_reduce", sizes, 8, 200e9, 2e-6, "ring", 0.5)
    fit = fit_link("all_reduce", sizes, times, 8, join="soft")
    assert (fit.bandwidth, fit.alpha, fit.sharpness) == pytest.approx((200e9, 2e-6, 0.5), rel=1e-4)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"])
@pytest.mark.parametrize("p", [2, 8, 16])
def test_a_table_made_by_the_model_gives_its_parameters_back(op, p):
    sizes = 2.0 ** np.arange(10, 34, 2)
    times = collective_time(op, sizes, p, 123e9, 4.5e-6)
    fit = fit_link(op, sizes, times, p)
    assert fit.bandwidth == pytest.approx(123e9, rel=1e-5) and fit.alpha == pytest.approx(4.5e-6, rel=1e-4)
    assert fit.mape < 1e-5


def test_min_size_leaves_small_messages_out():
    sizes = 2.0 ** np.arange(10, 30)
    times = collective_time("all_gather", sizes, 8, 50e9, 2e-6)
    fit = fit_link("all_gather", sizes, times, 8, min_size=2**20)
    assert fit.size.min() == 2**20 and fit.size.size == 10
    with pytest.raises(ValueError, match="size: a fit needs at least 3"):
        fit_link("all_gather", sizes, times, 8, min_size=2**29)


def _write(tmp_path, text, name="run.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _rows(op_redop="sum", p=8, factor=None):
    factor = factor if factor is not None else 2 * (p - 1) / p
    out = []
    for size in (1 << 20, 1 << 24, 1 << 28):
        t_us = 10 + size / 100e3
        alg = size / t_us / 1e3
        out.append(f"{size:>12} {size // 4:>12}  float  {op_redop}  -1  {t_us:.2f}  {alg:.2f}  {alg * factor:.2f}  0"
                   f"  {t_us:.2f}  {alg:.2f}  {alg * factor:.2f}  0")
    return "\n".join(out) + "\n"


def test_ranks_come_from_the_ratio_when_the_file_lists_none(tmp_path):
    table, warnings = read_nccl_tests(_write(tmp_path, HEADER + _rows()))
    assert (table.op, table.ranks) == ("all_reduce", 8) and "ranks: 8, told from busbw / algbw" in warnings[0]
    table, _ = read_nccl_tests(_write(tmp_path, HEADER + _rows(factor=7 / 8)))
    assert (table.op, table.ranks) == ("reduce_scatter", 8)


def test_all_gather_and_all_to_all_need_their_name(tmp_path):
    body = HEADER + _rows("none", factor=7 / 8)
    with pytest.raises(NcclTestsError, match="op: the file does not say which collective"):
        read_nccl_tests(_write(tmp_path, body))
    assert read_nccl_tests(_write(tmp_path, body, "x_alltoall_perf.log"))[0].op == "all_to_all"
    assert read_nccl_tests(_write(tmp_path, "# Collective test starting: all_gather_perf\n" + body))[0].op == (
        "all_gather")
    assert read_nccl_tests(_write(tmp_path, body), op="all_gather")[0].op == "all_gather"


@pytest.mark.parametrize("text, match", [
    ("hello\n", "no nccl-tests table"),
    (HEADER + "   1048576   262144  float  sum  -1  12.0  1.0  1.75  0\n", "expected 13 columns"),
    (HEADER + _rows().replace(_rows().split()[5], "-3.0", 1), "time: expected a finite number >= 0"),
    (HEADER + _rows().replace(_rows().split()[5], "nan", 1), "time: expected a finite number"),
    (HEADER + _rows().splitlines()[0] + "\n", "a fit needs at least 3 rows"),
    (HEADER + _rows(factor=1.5), "op: busbw / algbw is 1.500"),
])
def test_hostile_tables_are_refused_with_one_line(tmp_path, text, match):
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=match) as info:
        read_nccl_tests(path, ranks=8)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_an_op_that_contradicts_the_file_is_refused(tmp_path):
    with pytest.raises(NcclTestsError, match="op: busbw / algbw is 1.750 in the file, but all_gather on 8 ranks"):
        read_nccl_tests(FIXTURE, op="all_gather")
    with pytest.raises(NcclTestsError, match="op: expected one of"):
        read_nccl_tests(FIXTURE, op="broadcast")


def test_binary_files_are_not_tables(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"\xff\xfe\x00" * 100)
    with pytest.raises(ValueError, match="x.txt: not UTF-8 text"):
        load(path, kind="collectives")  # found by its suffix (no other collectives format), refused by the reader
    with pytest.raises(ImporterError, match="cannot tell"):
        load(path)  # among every format, .txt is claimed by several: not guessed


def test_the_level_is_the_domain_holding_the_ranks():
    system = load_system_file(MI300X)
    assert level_domain(system, 8).scope == "scale_up"
    assert level_domain(system, 8, "scale-up").scope == "scale_up"
    with pytest.raises(ValueError, match="level: amd-instinct-mi300x-platform states no scale-out"):
        level_domain(system, 8, "scale-out")
    with pytest.raises(ValueError, match="ranks: 16 ranks do not fit"):
        level_domain(system, 16)
    with pytest.raises(ValueError, match="level: expected one of"):
        level_domain(system, 8, "rack")


# ------------------------------------------------------------------------------------- hostile tables
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LINES = FIXTURE.read_text().splitlines()
TOKENS = ["nan", "inf", "-1", "0", "1e400", "N/A", "abc", "\u2028", "#", "   ", "12.5", "99999999999999999999999"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_tables_load_finite_or_fail_on_one_line(tmp_path, data):
    """Published lines cut, dropped, duplicated, with cells replaced by hostile tokens: the reader returns a
    table of finite, positive sizes and times whose fit is finite, or refuses the file with one line."""
    lines = list(LINES)
    for _ in range(data.draw(st.integers(0, 6))):
        i = data.draw(st.integers(0, len(lines) - 1))
        action = data.draw(st.sampled_from(["drop", "dup", "cell", "cut"]))
        if action == "drop" and len(lines) > 1:
            del lines[i]
        elif action == "dup":
            lines.insert(i, lines[i])
        elif action == "cut":
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
        else:
            cells = lines[i].split()
            if cells:
                cells[data.draw(st.integers(0, len(cells) - 1))] = data.draw(st.sampled_from(TOKENS))
                lines[i] = "  ".join(cells)
    path = tmp_path / "fuzz_all_reduce_perf.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        table, _ = read_nccl_tests(path, ranks=8)
    except ValueError as exc:
        assert "\n" not in str(exc).strip() and str(path) in str(exc)
        return
    assert np.all(np.isfinite(table.size)) and np.all(table.size > 0)
    assert np.all(np.isfinite(table.time)) and np.all(table.time > 0)
    fit = fit_link(table.op, table.size, table.time, table.ranks)
    assert np.isfinite(fit.alpha) and np.isfinite(fit.bandwidth) and fit.bandwidth > 0
