"""``--attention naive|fused`` and ``--lm-head all|last`` on analyze, plan and report (docs/cli.md), and the same two
settings as session assumptions (the project file, the results they invalidate)."""

import json
from dataclasses import replace

import pytest

from explorer.__main__ import main
from explorer.core.session.project import Project
from explorer.core.session.results import Results
from explorer.core.session.state import Assumptions, State
from explorer.core.workload.templates import get_template


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def analyze_json(capsys, *extra):
    code, out, err = run(capsys, "analyze", "llama2-7b", "-d", "nvidia-h100-sxm5", "--phase", "prefill",
                         "--seq-len", 1024, "--json", *extra)
    assert code == 0, err
    data = json.loads(out)
    return data, {x["name"]: x for x in data["results"][0]["layers"]}


def test_json_names_the_settings_and_their_defaults(capsys):
    """The defaults: naive attention, and the LM head on each sequence's last position (what serving engines
    compute, issue 17): 4096 x 32000 MACs; ``--lm-head all`` computes all 1024 positions' logits."""
    data, layers = analyze_json(capsys)
    assert data["assumptions"]["attention"] == "naive" and data["assumptions"]["lm_head"] == "last"
    assert layers["layers.attn.softmax"]["bytes"] == 2 * 2 * 32 * 1024 * 1025 / 2  # the scores in and out, fp16
    assert layers["lm_head"]["macs"] == 4096 * 32000
    data, layers = analyze_json(capsys, "--lm-head", "all")
    assert data["assumptions"]["lm_head"] == "all"
    assert layers["lm_head"]["macs"] == 1024 * 4096 * 32000
    code, out, _ = run(capsys, "analyze", "llama2-7b", "-d", "nvidia-h100-sxm5", "--phase", "prefill", "--lm-head",
                       "all")
    assert code == 0 and out.splitlines()[0].endswith(", LM head on every position)")


def test_fused_attention_and_the_last_position_head(capsys):
    """Llama-2-7B prefill of 1024 tokens on the catalog H100: fused attention moves no scores (the softmax row moves
    nothing, the FLOPs stay); the LM head computes one position per sequence."""
    naive, naive_layers = analyze_json(capsys)
    data, layers = analyze_json(capsys, "--attention", "fused", "--lm-head", "last")
    assert data["assumptions"]["attention"] == "fused" and data["assumptions"]["lm_head"] == "last"
    assert layers["layers.attn.softmax"]["bytes"] == 0
    assert layers["layers.attn.softmax"]["flops"] == naive_layers["layers.attn.softmax"]["flops"]
    assert layers["layers.attn.scores"]["bytes"] == 2 * (1024 * 4096 + 1024 * 4096)  # Q and K once
    assert layers["lm_head"]["macs"] == 4096 * 32000
    assert data["results"][0]["totals"]["time_s"] < naive["results"][0]["totals"]["time_s"]
    code, out, _ = run(capsys, "analyze", "llama2-7b", "-d", "nvidia-h100-sxm5", "--attention", "fused")
    assert code == 0 and "fused attention" in out.splitlines()[0]


@pytest.mark.parametrize("option, value", [("--attention", "flash"), ("--lm-head", "first")])
def test_unknown_settings_are_refused(capsys, option, value):
    with pytest.raises(SystemExit):
        main(["analyze", "gpt2", "-d", "nvidia-h100-sxm5", option, value])
    assert "invalid choice" in capsys.readouterr().err


def test_plan_and_report_take_the_settings(capsys, tmp_path):
    code, _, err = run(capsys, "plan", "llama2-7b", "-d", "nvidia-h100-sxm5", "--target", "100 tokens/s",
                         "--attention", "fused", "--lm-head", "last")
    assert code == 0, err
    out_file = tmp_path / "r.html"
    code, _, err = run(capsys, "report", "llama2-7b", "-d", "nvidia-h100-sxm5", "--attention", "fused", "--lm-head",
                       "last", "--out", out_file)
    assert code == 0, err
    assert "fused attention (FlashAttention)" in out_file.read_text()


def test_assumptions_carry_the_settings_and_old_files_read():
    a = Assumptions(attention="fused", lm_head="last")
    assert Assumptions.from_dict(a.to_dict()) == a
    assert a.context.attention == "fused" and a.context.lm_head == "last"
    old = Assumptions().to_dict()
    del old["attention"], old["lm_head"]
    assert Assumptions.from_dict(old) == Assumptions()  # the value's own defaults: naive, last
    for field, value in (("attention", "flash"), ("lm_head", "first")):
        with pytest.raises(ValueError, match=f"assumptions.{field}: expected"):
            Assumptions.from_dict({field: value})
    with pytest.raises(ValueError):
        State(assumptions=Assumptions(attention="flash"))


def test_a_new_setting_re_evaluates_the_analysis(h100):
    state = State(model=get_template("gpt2").build(), device_ids=("h100",))
    r = Results(state, [h100])
    before = r.analysis
    for change in ({"attention": "fused"}, {"lm_head": "all"}):
        state = state.with_(assumptions=replace(state.assumptions, **change))
        r = r.successor(state, [h100])
        assert r.analysis is not before and r.analysis.ctx.attention == state.assumptions.attention
        assert r.computed == ["evaluation", "analysis"]
        before = r.analysis
    # the report's bundle of a CLI analysis keeps the settings
    again = Results.of_analysis(before, Assumptions())
    assert again.state.assumptions.attention == "fused" and again.state.assumptions.lm_head == "all"


def test_a_project_file_without_the_lm_head_keeps_every_position():
    """The LM head's default became ``last`` after ``lm_head`` was added within project format 2; a file without it
    was written when prefill computed every position, so it opens as ``all`` (docs/project-file.md). Saving always
    writes the field, so a project saved now reopens with the value it had."""
    project = Project.of_state(State(model=get_template("gpt2").build()))
    data = project.to_dict()
    assert data["format"] == 9 and data["assumptions"]["lm_head"] == "last"
    assert Project.from_dict(json.loads(project.dumps()), "new.hwproj").assumptions == project.assumptions
    del data["assumptions"]["attention"], data["assumptions"]["lm_head"]  # as written before the settings existed
    v2 = {k: v for k, v in data.items() if k != "system"} | {"format": 2}
    old = Project.from_dict(v2, "old.hwproj").assumptions
    assert old.lm_head == "all" and old.attention == "naive"
    v1 = {k: v for k, v in data.items() if k not in ("trace", "requirements", "system")} | {"format": 1}
    assert Project.from_dict(v1, "v1.hwproj").assumptions.lm_head == "all"
