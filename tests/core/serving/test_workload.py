"""Workload readers: histogram and trace files (CSV, JSONL), and their one-line refusals."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.core.serving.workload import SLO, Lengths, Workload, WorkloadError, read_histogram, read_trace


def test_trace_csv_with_vllm_column_names_sorted_by_arrival(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_time,prompt_len,output_len\n1.5,10,3\n0.25,20,4\n")
    t = read_trace(p)
    assert t.arrival.tolist() == [0.25, 1.5] and t.input.tolist() == [20, 10] and t.output.tolist() == [4, 3]
    w = Workload(trace=t)
    assert w.mean_rate() == pytest.approx(1 / 1.25)
    assert w.requests(5).arrival.tolist() == [0.0, 1.25]


@pytest.mark.parametrize(("text", "needle"), [
    ("arrival_time,input_len,output_len\n0,10,x\n", "row 2: output: not a number"),
    ("arrival_time,input_len,output_len\n0,10,5\n-1,10,5\n", "row 3: arrival"),
    ("arrival_time,input_len,output_len\n0,10.5,5\n", "row 2: input: must be a whole number"),
    ("arrival_time,input_len\n0,10\n", "no output column"),
    ("", "empty file"),
])
def test_bad_trace_rows_name_row_and_field(tmp_path, text, needle):
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(WorkloadError) as e:
        read_trace(p)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_jsonl_bad_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"arrival": 0, "input": 3, "output": 2}\n{oops\n')
    with pytest.raises(WorkloadError, match="line 2: not JSON"):
        read_trace(p)


def test_histogram_draws_only_its_rows(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("input,output\n100,20\n300,60\n")
    lengths = read_histogram(p)
    assert lengths.means() == (200.0, 40.0)
    ins, outs = lengths.sample(1000, np.random.default_rng(0))
    assert set(zip(ins.tolist(), outs.tolist())) == {(100, 20), (300, 60)}


def test_poisson_and_constant_arrivals():
    w = Workload(rate=4.0, lengths=Lengths.fixed(8, 8))
    gaps = np.diff(w.requests(20000, seed=1).arrival)
    assert gaps.mean() == pytest.approx(0.25, rel=0.02) and gaps.std() == pytest.approx(0.25, rel=0.03)
    c = Workload(rate=4.0, arrival="constant", lengths=Lengths.fixed(8, 8)).requests(5).arrival
    np.testing.assert_allclose(c, [0, 0.25, 0.5, 0.75, 1.0])


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_rate_must_be_positive(bad):
    with pytest.raises(WorkloadError, match="--rate"):
        Workload(rate=bad)


def test_slo_percentiles():
    with pytest.raises(WorkloadError, match="--ttft-p95"):
        SLO(ttft=0.5, ttft_pct="p95")
    assert SLO(ttft=0.5, tpot=0.05).targets() == [("ttft", 0.5, "p90"), ("tpot", 0.05, "p90")]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("0123456789,.-\n e+abcinputoutarrivl_:{}\"[]")), max_size=200),
       suffix=st.sampled_from([".csv", ".jsonl"]))
def test_fuzz_trace_and_histogram_readers(tmp_path, text, suffix):
    """Any text either reads (every length >= 1, arrivals >= 0 and sorted) or is one WorkloadError line."""
    p = tmp_path / f"f{suffix}"
    p.write_text(text)
    for reader in (read_trace, read_histogram):
        try:
            out = reader(p)
        except WorkloadError as exc:
            assert "\n" not in str(exc)
            continue
        if reader is read_trace:
            assert np.all(out.input >= 1) and np.all(out.output >= 1) and np.all(np.diff(out.arrival) >= 0)
        else:
            assert all(i >= 1 and o >= 1 for i, o in out.pairs)


def test_deeply_nested_jsonl_is_one_line(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("[" * 100_000 + "\n")
    with pytest.raises(WorkloadError, match="line 1: nested too deeply"):
        read_trace(p)
