"""The report of an analysis with per-tensor formats names them, the compute precision, each device's fallback
and the peak each device was computed at."""

from pathlib import Path

from explorer.core.analysis.evaluate import evaluate
from explorer.core.formats import TensorFormats
from explorer.core.hardware.device_file import load_device_file
from explorer.core.session.workspace import Assumptions
from explorer.core.workload.templates import get_template
from explorer.report import build_report

CATALOG = Path(__file__).resolve().parents[2] / "catalog"


def test_the_report_names_the_formats_and_the_fallback():
    template = get_template("gpt2")
    devices = [load_device_file(CATALOG / f"{i}.yaml") for i in ("nvidia-h100-sxm5", "nvidia-b200")]
    fm = TensorFormats.of("fp16", weights="mxfp4", activations="mxfp4", kv_cache="fp8")
    a = evaluate(template.build(), devices, "fp16", template.context(batch=8, phase="decode"), formats=fm)
    data = build_report(a, Assumptions())
    assert data.workload.endswith("w mxfp4, a mxfp4, kv fp8, computing at FP4")
    rows = dict(data.assumptions)
    assert "4.25 bits" in rows["Tensor formats"] and "compute at fp4" in rows["Tensor formats"]
    assert "computes at fp8" in rows["Precision: NVIDIA H100 SXM5 80GB"]
    assert not any(k.startswith("Precision: NVIDIA B200") for k in rows)
    peaks = {(s.device, s.figure) for s in data.sources if s.figure.startswith("peak ")}
    assert ("NVIDIA H100 SXM5 80GB", "peak fp8") in peaks and ("NVIDIA B200 (HGX B200, SXM 180GB)", "peak fp4") in peaks


def test_a_plain_analysis_reports_as_before():
    template = get_template("gpt2")
    device = load_device_file(CATALOG / "nvidia-h100-sxm5.yaml")
    a = evaluate(template.build(), [device], "fp16", template.context(batch=8, phase="decode"))
    data = build_report(a, Assumptions())
    assert data.workload.endswith("FP16") and "Tensor formats" not in dict(data.assumptions)
