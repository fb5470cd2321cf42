"""Hostile input for the readers added since the first fuzz pass (issue 24): nccl-tests tables (calibrate link),
kernel CSVs (calibrate kernels), serving request traces in CSV and JSONL and length histograms (serve --trace,
--lengths), and projects carrying quotes, a system, training and serving parts (analyze PROJECT). Each mutated
file goes through the command line: exit 0 with finite numbers, or exit 2 with ONE line naming the problem,
never a traceback. The counts of inputs tried and rejected are printed with ``-s`` (test_zz_print_counts)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_hostile_input import FUZZ, JSON, ROOT, _mutate

from explorer.__main__ import main
from explorer.core.hardware.catalog_files import load_shipped_devices
from explorer.core.session.project import Project
from explorer.core.session.serving_choice import ServingChoice
from explorer.core.session.state import State, SystemChoice
from explorer.core.workload.templates import get_template

COUNTS: Counter = Counter()
NCCL = (ROOT / "tests" / "fixtures" / "nccl" / "mi300x-8gpu-all_reduce_perf.txt").read_text()
CELL = st.one_of(st.sampled_from(["", " ", "nan", "inf", "-inf", "-1", "0", "1e999", "1e-320", "-0", "1,5",
                                  "12.5 us", "3 kg", "=1+1", '"', "\n", "\t", "x" * 300, "9" * 40, "{}", "[]"]),
                 st.text(max_size=12))


def _run(capsys, kind: str, args: list[str]) -> dict | None:
    """Run the CLI; exit 0 gives its JSON (checked finite where a number), exit 2 one line; else it fails."""
    COUNTS[f"{kind} tried"] += 1
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hwexplorer: error: "), err
        COUNTS[f"{kind} rejected"] += 1
        return None
    assert code == 0, (code, err)
    doc = json.loads(out)
    _finite(doc)
    return doc


def _finite(node) -> None:
    if isinstance(node, float):  # an unknown is null; NaN or an infinity would be a number that is not one
        assert math.isfinite(node), node
    elif isinstance(node, dict):
        for v in node.values():
            _finite(v)
    elif isinstance(node, list):
        for v in node:
            _finite(v)


def _text_mutation(data, lines: list[str], sep: str | None) -> str:
    """One random change of a text table: a cell, a whole line, a line removed or repeated, or the text cut."""
    lines = list(lines)
    how = data.draw(st.sampled_from(["cell", "line", "drop", "repeat", "truncate", "insert"]))
    i = data.draw(st.integers(0, len(lines) - 1))
    if how == "cell":
        cells = lines[i].split(sep) if sep else lines[i].split()
        cells[data.draw(st.integers(0, len(cells) - 1))] = data.draw(CELL)
        lines[i] = (sep or "  ").join(cells)
    elif how == "line":
        lines[i] = data.draw(CELL)
    elif how == "drop":
        del lines[i]
    elif how == "repeat":
        lines.insert(i, lines[i])
    elif how == "insert":
        lines.insert(i, data.draw(st.text(max_size=40)))
    text = "\n".join(lines) + "\n"
    if how == "truncate":
        text = text[:data.draw(st.integers(0, len(text)))]
    return text


# ---------------------------------------------------------------------------------------- nccl-tests tables
NCCL_LINES = NCCL.splitlines()


@FUZZ
@given(data=st.data())
def test_fuzz_nccl_tests_tables(tmp_path, capsys, data):
    path = tmp_path / "all_reduce_perf.txt"
    path.write_text(_text_mutation(data, NCCL_LINES, None))
    _run(capsys, "nccl-tests", ["calibrate", "link", path, "--system", "nvidia-dgx-h100", "--json"])


# ---------------------------------------------------------------------------------------------- kernel CSV
KERNELS = ["kind,m,n,k,batch,bytes,time,op",
           "gemm,4096,4096,4096,1,,1.1 ms,square",
           "gemm,8192,8192,8192,1,,8.4 ms,big",
           "gemm,1024,1024,1024,8,,0.35 ms,batched",
           "gemm,512,4096,4096,1,,0.21 ms,skinny",
           "elementwise,,,,,2 GiB,0.75 ms,copy",
           "elementwise,,,,,256 MiB,0.1 ms,copy",
           "elementwise,,,,,64 MiB,30 us,copy"]


@FUZZ
@given(data=st.data())
def test_fuzz_kernel_csvs(tmp_path, capsys, data):
    path = tmp_path / "kernels.csv"
    path.write_text(_text_mutation(data, KERNELS, ","))
    _run(capsys, "kernel csv", ["calibrate", "kernels", path, "--device", "nvidia-h100-sxm5", "--json"])


# ----------------------------------------------------------------------------- serving traces and histograms
TRACE = ["arrival_time,input_tokens,output_tokens", "0.0,512,128", "0.25,1024,64", "0.5,128,256", "1.0,2048,32"]
HISTOGRAM = ["input,output", "512,128", "1024,64", "128,256"]
SERVE = ["serve", "gpt2", "--device", "nvidia-h100-sxm5", "--json"]


@FUZZ
@given(data=st.data(), which=st.sampled_from(["trace", "lengths"]))
def test_fuzz_serving_csvs(tmp_path, capsys, data, which):
    path = tmp_path / f"{which}.csv"
    path.write_text(_text_mutation(data, TRACE if which == "trace" else HISTOGRAM, ","))
    _run(capsys, f"serving {which} csv", [*SERVE, f"--{which}", path])


def _jsonl(rows: list[str]) -> list[dict]:
    header = rows[0].split(",")
    return [dict(zip(header, (float(c) for c in r.split(",")), strict=True)) for r in rows[1:]]


@FUZZ
@given(data=st.data(), which=st.sampled_from(["trace", "lengths"]))
def test_fuzz_serving_jsonl(tmp_path, capsys, data, which):
    docs = _jsonl(TRACE if which == "trace" else HISTOGRAM)
    row, key = data.draw(st.integers(0, len(docs) - 1)), data.draw(st.sampled_from(sorted(docs[0])))
    docs[row][key] = data.draw(st.one_of(JSON, st.integers(-5, 10**7), st.floats(-1, 1e7), st.sampled_from(
        ["12", "1e3", " 7 ", "0x10", "5 s"])))  # wrong types, and numbers a reader may or may not take
    if data.draw(st.booleans()):  # a line that is not an object, or not JSON
        docs.insert(data.draw(st.integers(0, len(docs))), data.draw(JSON))
    path = tmp_path / f"{which}.jsonl"
    path.write_text("\n".join(json.dumps(d, allow_nan=True) for d in docs) + "\n")
    _run(capsys, f"serving {which} jsonl", [*SERVE, f"--{which}", path])


# ------------------------------------------------------------- projects with quotes, system, training, serving
def _project_doc() -> dict:
    from explorer.core.analysis.quotes import set_quote

    state = State(model=get_template("gpt2").build(), device_ids=("nvidia-h100-sxm5", "nvidia-a100-sxm4-80gb"))
    req = set_quote(state.requirements, "nvidia-h100-sxm5", price=25000.0, source="a quote, 2026-11-27")
    req = set_quote(req, "nvidia-a100-sxm4-80gb", cloud_price=1.8, source="a rental, 2026-11-27")
    state = dataclasses.replace(state, requirements=req, system=SystemChoice(system_ids=("nvidia-dgx-h100",)),
                                serving=ServingChoice())
    return Project.of_state(state).to_dict()


PROJECT = _project_doc()


@FUZZ
@given(data=st.data())
def test_fuzz_projects_with_quotes_and_parts(tmp_path, capsys, data):
    path = tmp_path / "p.hwproj"
    path.write_text(json.dumps(_mutate(PROJECT, data), allow_nan=True))
    _run(capsys, "project (quotes, parts)", ["analyze", path, "--device", "nvidia-h100-sxm5", "--json"])


@pytest.mark.parametrize("kind", ["nccl", "kernels", "trace csv", "lengths csv", "trace jsonl", "lengths jsonl",
                                  "project"])
def test_the_unmutated_documents_are_accepted(tmp_path, capsys, kind):
    """Each fuzz test starts from a document its command accepts, so a rejection is the mutation's doing."""
    which = "trace" if kind.startswith("trace") else "lengths"
    rows = TRACE if which == "trace" else HISTOGRAM
    files = {"nccl": ("a.txt", NCCL, ["calibrate", "link", "{}", "--system", "nvidia-dgx-h100", "--json"]),
             "kernels": ("k.csv", "\n".join(KERNELS), ["calibrate", "kernels", "{}", "--device", "nvidia-h100-sxm5",
                                                        "--json"]),
             "project": ("p.hwproj", json.dumps(PROJECT), ["analyze", "{}", "--device", "nvidia-h100-sxm5", "--json"])}
    if kind.endswith("csv"):
        files[kind] = ("f.csv", "\n".join(rows), [*SERVE, f"--{which}", "{}"])
    elif kind.endswith("jsonl"):
        files[kind] = ("f.jsonl", "\n".join(json.dumps(d) for d in _jsonl(rows)), [*SERVE, f"--{which}", "{}"])
    name, text, args = files[kind]
    path = tmp_path / name
    path.write_text(text + "\n")
    assert _run(capsys, "unmutated", [str(path) if a == "{}" else a for a in args]) is not None


def test_the_project_document_carries_what_is_fuzzed():
    assert PROJECT["requirements"]["price"] == {"nvidia-h100-sxm5": 25000.0}
    assert PROJECT["requirements"]["cloud_price"] == {"nvidia-a100-sxm4-80gb": 1.8}
    assert PROJECT["system"]["system_ids"] == ["nvidia-dgx-h100"]
    assert PROJECT["training"] and PROJECT["serving"]


@pytest.mark.parametrize("args, header, needle", [
    (["calibrate", "link", "--system", "nvidia-dgx-h100"], NCCL_LINES[0], "no nccl-tests table"),
    (["calibrate", "kernels", "--device", "nvidia-h100-sxm5"], KERNELS[0], "no kernels"),
    ([*SERVE, "--trace"], TRACE[0], "no rows"),
    ([*SERVE, "--lengths"], HISTOGRAM[0], "no rows"),
])
def test_a_file_with_only_a_header_is_one_line(tmp_path, capsys, args, header, needle):
    path = tmp_path / ("f.txt" if args[1] == "link" else "f.csv")
    path.write_text(header + "\n")
    args = [*args[:2], path, *args[2:]] if args[0] == "calibrate" else [*args, path]
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err, err


def test_zz_print_counts():
    print("\nfuzz counts (new readers):", dict(sorted(COUNTS.items())))
    assert load_shipped_devices()  # the devices the commands name are shipped


# ------------------------------------------------------------------------------- defects the fuzzing found
@pytest.mark.parametrize("rows", [["0.0,512,1"], ["2.5,512,10", "2.5,128,10"]], ids=["one request", "one instant"])
def test_a_trace_whose_arrivals_span_no_time_is_one_line(tmp_path, capsys, rows):
    """Found by test_fuzz_serving_csvs: a one-request trace (or all at one instant) has an infinite offered rate,
    (N - 1) / span, and serve --json died writing it (ValueError: Out of range float values)."""
    path = tmp_path / "t.csv"
    path.write_text("\n".join([TRACE[0], *rows]) + "\n")
    code = main([*SERVE, "--trace", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "every arrival is at" in err, err


def test_a_kernel_csv_cell_with_a_record_separator_stays_one_line(tmp_path, capsys):
    """Found by test_fuzz_kernel_csvs: a time cell '0\\x1e0' was quoted raw, and U+001E breaks the line."""
    path = tmp_path / "k.csv"
    path.write_text("kind,m,n,k,time\ngemm,64,64,64,0\x1e0\n")
    code = main(["calibrate", "kernels", str(path), "--device", "nvidia-h100-sxm5"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "0\\x1e0" in err, err


@pytest.mark.parametrize("args", [
    ["--input", "1" + "0" * 40], ["--output", "5-" + "9" * 30], ["--prefix-tokens", "1" + "0" * 20],
    ["--lengths", "{lengths}"], ["--trace", "{trace}"]])
def test_a_token_count_beyond_any_model_is_one_line(tmp_path, capsys, args):
    """Found by test_fuzz_serving_csvs: a length of 10^40 tokens made numpy's log10 fail on a Python int
    (TypeError traceback); lengths are now at most 10^9 tokens, from the command line or a file."""
    big = "9" * 40
    (tmp_path / "l.csv").write_text(f"input,output\n{big},5\n")
    (tmp_path / "t.csv").write_text(f"{TRACE[0]}\n0.0,512,128\n1.0,{big},5\n")
    args = [a.format(lengths=tmp_path / "l.csv", trace=tmp_path / "t.csv") for a in args]
    code = main([*SERVE, *args])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "1,000,000,000" in err, err
