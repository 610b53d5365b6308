"""A failure ends in a place and a reproducer: the smallest sublayer that reproduces it, and a
plain-Paddle script that a Paddle developer runs alone (the harness runs it once and records
whether it reproduced).

The descent's logic is checked on planted trees (a predicate that knows where the planted failure
is, over trees of every shape) for its answer and its sub-export budget; the real thing runs real
Paddle on planted models: a consistency failure three levels down, and (Paddle 3.3.x) the oneDNN
interpolate error, each ending in a layer path and a verified reproducer of that piece alone.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from harness.cell.rootcause.descent import FINE_LIMIT, Trial, budget, descend
from harness.cell.anatomy.pieces import Call

from .conftest import load_record, run_harness, stages_by_name
from .conftest import CHROMIUM, chromium


def _tree(rng: random.Random, depth: int, fanout: int) -> Dict[str, Call]:
    """A random tree of called sublayers: every node has 0..fanout children down to ``depth``."""
    calls = {"": Call("", None, -1)}

    def grow(path: str, level: int) -> None:
        if level == depth:
            return
        for i in range(rng.randint(0 if path else 1, fanout)):
            child = f"{path}.{i}" if path else str(i)
            calls[child] = Call(child, None, len(calls))
            calls[path].children.append(child)
            grow(child, level + 1)

    grow("", 0)
    for path in sorted(calls, key=lambda p: -p.count(".") if p else 1):
        calls[path].leaves = max(1, sum(calls[c].leaves for c in calls[path].children))
    return calls


def _tree_with_a_parent_of(rng: random.Random, depth: int, fanout: int, children: int):
    """A random tree and one of its nodes with at least ``children`` children."""
    parents: List[str] = []
    while not parents:
        calls = _tree(rng, depth=depth, fanout=fanout)
        parents = [p for p, c in calls.items() if len(c.children) >= children]
    return calls, rng.choice(parents)


def _inside(member: str, path: str) -> bool:
    return member == "" or path == member or path.startswith(member + ".")


@pytest.mark.parametrize("seed", range(200))
def test_the_descent_finds_the_planted_layer_within_its_budget(seed):
    rng = random.Random(seed)
    calls = _tree(rng, depth=rng.randint(1, 5), fanout=rng.randint(1, 7))
    culprit = rng.choice(sorted(calls))
    asked: List[List[str]] = []

    def reproduces(members: List[str]) -> Trial:
        asked.append(members)
        return Trial(members=members, reproduces=any(_inside(m, culprit) for m in members))

    found = descend(calls, reproduces)
    assert found.node == culprit and found.members == [culprit]
    depth = culprit.count(".") + 2 if culprit else 1  # layers on the path, the model included
    assert found.depth == depth
    halving = [t for t in found.trials if not t.finer]
    assert len(halving) <= budget(calls[""].leaves, depth), (len(halving), calls[""].leaves, depth)
    assert found.fine_trials == len(asked) - len(halving) <= FINE_LIMIT
    # The answer's own sublayers were each tried alone (none reproduces) unless the budget ran out.
    kids = calls[culprit].children
    if kids and found.fine_trials < FINE_LIMIT:
        assert all([k] in asked for k in kids), (kids, asked)


@pytest.mark.parametrize("seed", range(20))
def test_a_failure_that_needs_two_sublayers_together_is_not_pinned_on_either(seed):
    """A fusion across siblings: only a piece holding both (or their parent) reproduces."""
    calls, parent = _tree_with_a_parent_of(random.Random(1000 + seed), depth=4, fanout=5, children=2)
    pair = random.Random(seed).sample(calls[parent].children, 2)

    def reproduces(members: List[str]) -> Trial:
        held = {p for p in pair if any(_inside(m, p) for m in members)}
        return Trial(members=members, reproduces=len(held) == 2)

    found = descend(calls, reproduces)
    assert found.node == parent
    assert set(pair) <= {c for m in found.members for c in ([m] if m != parent else calls[parent].children)}
    assert "together" in found.why or "no one of its" in found.why, found.why
    if found.fine_trials < FINE_LIMIT:  # ddmin goes down to the pair itself
        whole = sorted(pair) == sorted(calls[parent].children)
        assert found.members == [parent] if whole else sorted(found.members) == sorted(pair), (found, pair)


@pytest.mark.parametrize("seed", range(60))
def test_a_piece_that_cannot_be_exported_alone_is_looked_into_and_never_taken_as_clean(seed):
    """Real sublayers sometimes cannot be exported alone (an argument the capture cannot carry):
    such a piece says nothing; the answer is always the culprit or a layer that holds it."""
    rng = random.Random(5000 + seed)
    calls = _tree(rng, depth=rng.randint(2, 5), fanout=rng.randint(2, 6))
    culprit = rng.choice(sorted(calls))
    blocked = set(rng.sample(sorted(p for p in calls if p), k=min(3, len(calls) - 1)))

    def reproduces(members: List[str]) -> Trial:
        if any(_inside(b, m) or _inside(m, b) for m in members for b in blocked):
            return Trial(members=members, reproduces=False, untestable=True, note="could not be exported alone")
        return Trial(members=members, reproduces=any(_inside(m, culprit) for m in members))

    found = descend(calls, reproduces)
    assert _inside(found.node, culprit), (found.node, culprit, blocked)
    if found.node != culprit:
        assert "could not be tested alone" in found.why, found.why


@pytest.mark.parametrize("seed", range(40))
def test_a_sublayer_that_reproduces_only_alone_is_found_by_going_finer_than_halves(seed):
    """A sibling masks the culprit (a piece holding both raises otherwise, as a second cause does):
    neither half of the parent reproduces, each member alone is tried, and the culprit is found."""
    calls, parent = _tree_with_a_parent_of(random.Random(9000 + seed), depth=3, fanout=6, children=3)
    culprit, masker = random.Random(seed).sample(calls[parent].children, 2)

    def reproduces(members: List[str]) -> Trial:
        holds = any(_inside(m, culprit) for m in members)
        if holds and masker in members:  # the culprit's sibling beside it in a piece
            return Trial(members=members, reproduces=False, note="raises otherwise")
        return Trial(members=members, reproduces=holds)

    found = descend(calls, reproduces)
    assert found.node == culprit, (found.node, culprit, masker, found.why)


@pytest.mark.parametrize("seed", range(40))
def test_a_failure_inside_a_member_that_raises_another_cause_first_is_found_inside_it(seed):
    """``masker``'s own ops raise another cause first: every piece that holds them is masked (says
    nothing). The culprit below it is found by going inside ``masker``, which the answer names."""
    calls, masker = _tree_with_a_parent_of(random.Random(13000 + seed), depth=4, fanout=4, children=2)
    below = [p for p in calls if p.startswith(masker + ".")] if masker else [p for p in calls if p]
    culprit = random.Random(seed).choice(sorted(below))

    def reproduces(members: List[str]) -> Trial:
        if any(_inside(m, masker) for m in members):  # the piece holds the masker's own ops
            return Trial(members=members, reproduces=False, masked="the other cause")
        return Trial(members=members, reproduces=any(_inside(m, culprit) for m in members))

    found = descend(calls, reproduces)
    answer = next(t for t in found.trials if t.members == found.members)
    assert answer.reproduces and not answer.masked, found  # the answer is a piece that reproduced
    assert any(_inside(m, culprit) for m in found.members), found
    if masker:  # the root's own piece is never tried: a masker below it is gone into
        assert masker in found.unmasked and all(m.startswith(masker + ".") for m in found.members), found
    assert found.depth == (found.node.count(".") + 2 if found.node else 1), found


@pytest.mark.parametrize("seed", range(40))
def test_a_layers_own_op_is_asked_before_any_finer_group_and_ends_the_descent_there(seed):
    """The failure is an op of ``owner``'s own forward (no sublayer holds it): no half of its
    sublayers reproduces, its own op is asked and reproduces, and no finer trial is spent. Where
    no own op reproduces (the probe finds nothing), the finer search runs as before."""
    calls, owner = _tree_with_a_parent_of(random.Random(17000 + seed), depth=4, fanout=6, children=3)
    probed: List[str] = []

    def reproduces(members: List[str]) -> Trial:  # only a piece holding the owner itself holds its own ops
        return Trial(members=members, reproduces=any(_inside(m, owner) and not m.startswith(owner + ".")
                                                     for m in members))

    def own_op(node: str):
        probed.append(node)
        return {"op": "pd_op.planted"} if node == owner else None

    found = descend(calls, reproduces, own_op=own_op)
    assert found.node == owner and found.members == [owner], (found.node, owner)
    assert found.own_op == {"op": "pd_op.planted"} and probed[-1] == owner
    assert found.fine_trials == 0 and "its own forward" in found.why and "pd_op.planted" in found.why, found.why
    nothing = descend(calls, reproduces, own_op=lambda node: None)
    assert nothing.node == owner and nothing.own_op is None and "its own forward" not in nothing.why
    assert nothing.fine_trials > 0


def _run(write_matrix, tmp_path, models, session):
    matrix = write_matrix(models)
    run_harness("run", "--matrix", str(matrix), "--session", session, "--results", str(tmp_path / "r"))
    return tmp_path / "r" / "default"


def test_a_consistency_failure_three_levels_down_is_triaged_localized_and_reproduced(write_matrix, tmp_path,
                                                                                     paddle_version):
    results = _run(write_matrix, tmp_path, {"deep": "tests.factories:deep_python_state"}, "cpu_fp32")
    record = load_record(results, f"cpu_fp32/{paddle_version}/normal/deep")
    assert stages_by_name(record)["baseline"]["status"] == "fail"
    analysis = record["analysis"]
    assert analysis["triage"]["outcome"] == "export"
    reduce = analysis["reduce"]
    assert reduce["stage"] == "baseline" and reduce["outcome"] == "localized"
    assert reduce["path"] == "backbone.stages.1.blocks.1" and reduce["layer"] == "CountingBlock"
    # The path: the model, backbone, stages.1, blocks.1.
    assert reduce["depth"] == 4 and reduce["sub_exports"] <= reduce["budget"] == budget(reduce["leaves"], 4)
    # Every piece that reproduced holds the planted block; every piece that did not, does not.
    for trial in reduce["trials"]:
        holds = any(_inside(m, "backbone.stages.1.blocks.1") for m in trial["members"])
        assert trial["reproduces"] is holds, trial
    repro = analysis["reproducer"]
    assert repro["program"] == "piece" and repro["path"] == reduce["path"]
    assert repro["verified"] is True and repro["last_line"] == "MISMATCH: reproduced"
    readme = (Path(repro["folder"]) / "README.md").read_text()
    assert "`backbone.stages.1.blocks.1` (CountingBlock)" in readme
    alone = subprocess.run([sys.executable, repro["script"]], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert alone.returncode == 1 and "MISMATCH: reproduced" in alone.stdout
    report = run_harness("report", "--results", str(tmp_path / "r"))
    assert "layer backbone.stages.1.blocks.1 (CountingBlock)" in report.stdout
    assert "triage: export" in report.stdout
    if CHROMIUM:  # what a person sees in the HTML report, from the rendered DOM
        dom = chromium("--dump-dom", (tmp_path / "r" / "default" / "report.html").as_uri())
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert '<code class="layer">backbone.stages.1.blocks.1 (CountingBlock)</code>' in dom.stdout
        assert f'<code class="reproducer">{repro["script"]}</code> (verified)' in dom.stdout


def test_the_onednn_interpolate_error_is_localized_searched_and_reproduced(write_matrix, tmp_path, paddle_version):
    """A conv and F.interpolate(scale_factor=2) in the ``decoder`` sublayer: measured on 3.3.1,
    oneDNN raises on it with no op named in Paddle's message."""
    if not paddle_version.startswith("3.3"):
        pytest.skip("measured on Paddle 3.3.x")
    results = _run(write_matrix, tmp_path, {"interp": "tests.factories:conv_interpolate",
                                            "neck": "tests.factories:neck_interpolate"}, "cpu_onednn_fp32")
    # The same op in a neck's own forward after four branch convs: no half of the branches reproduces,
    # the neck's own op is asked before any finer group of them, and the descent ends there.
    neck = load_record(results, f"cpu_onednn_fp32/{paddle_version}/normal/neck")["analysis"]["reduce"]
    assert neck["path"] == "neck" and neck["op"] == "pd_op.bilinear_interp" and neck["outcome"] == "isolated", neck
    assert neck["finer_exports"] == 0 and "its own forward" in neck["why_here"], neck
    assert neck["isolation"]["rules"]["own_ops_of"] >= 1 and neck["isolation"]["runs"] <= 2, neck["isolation"]
    record = load_record(results, f"cpu_onednn_fp32/{paddle_version}/normal/interp")
    words = "ConvertPirAttribute2RuntimeAttribute not support [pir::ArrayAttribute<pir::DoubleAttribute>]"
    stage = stages_by_name(record)["onednn_fp32"]
    assert stage["status"] == "error" and words in stage["message"]
    assert stage["evidence"]["passes"], "the build's passes are kept when the run raises"
    analysis = record["analysis"]
    reduce = analysis["reduce"]
    assert reduce["path"] == "decoder" and reduce["layer"] == "Upsample"
    assert reduce["op"] == "pd_op.bilinear_interp", reduce
    # The op alone, with its attribute: one one-op run, the message's attribute kind ranking it first.
    assert reduce["outcome"] == "isolated" and "[2.0, 2.0], 'bilinear'" in reduce["op_call"], reduce
    # Written as the public call the model's forward made (the reproducer's form): one program, no _C_ops.
    assert reduce["isolation"]["runs"] == 1, reduce["isolation"]
    assert reduce["isolation"]["tried"][0]["form"] == "the public API the model called"
    assert reduce["op_api"] == ["paddle.nn.functional.interpolate(float32[2, 8, 16, 16], scale_factor=2, mode='bilinear')"]
    assert reduce["op_api_reproduces"] is True
    assert reduce["halving_exports"] <= reduce["budget"]
    bisect = analysis["bisect"]
    assert bisect["predicate"] == "raises the same cause"
    assert bisect["culprits"] == ["onednn_placement_pass"], bisect
    assert bisect["verdict"] == "onednn_fp32 raises when pass onednn_placement_pass runs"
    # The oneDNN op list is measured before it is searched: under PIR it changes nothing.
    exclude = analysis["exclude"]
    assert exclude["honoured"] is False and exclude["outcome"] == "knob ignored"
    assert exclude["evidence"]["onednn_ops_ran"], exclude  # read from a run: oneDNN kernels ran regardless
    repro = analysis["reproducer"]
    assert repro["program"] == "piece" and repro["verified"] is True and repro["exit"] != 0
    script = Path(repro["script"])
    text = script.read_text()
    assert "import harness" not in text and "from harness" not in text
    assert "config.enable_mkldnn()" in text and "config.set_optimization_level(3)" in text
    # The reproducer is that one op: the script builds its program itself, no params file beside it.
    assert "paddle.nn.functional.interpolate(in0, scale_factor=2, mode='bilinear')" in text
    assert "_C_ops" not in text and not list(script.parent.glob("*.pdiparams"))
    # Beside it, the op in source (Paddle's public API alone: it runs at any release), verified here.
    source = repro["source"]
    assert source["verified"] is True and source["program"] == "ops", source
    assert source["what"] == "pd_op.bilinear_interp, as the model called it", source
    code = Path(source["script"]).read_text()
    assert "paddle.nn.functional.interpolate(in0, scale_factor=2, mode='bilinear')" in code and "import tests" not in code
    readme = (script.parent / "README.md").read_text()
    assert f"Paddle {paddle_version}" in readme and "isa " in readme and words in readme and "`decoder`" in readme
    alone = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert alone.returncode != 0 and words in alone.stderr
    report = run_harness("report", "--results", str(tmp_path / "r"))
    line = next(ln for ln in report.stdout.splitlines() if words in ln and "[C" in ln)
    assert "layer decoder (Upsample)" in line and "op pd_op.bilinear_interp" in line
    assert "raises when pass onednn_placement_pass runs" in line and f"{script} (verified)" in line


def test_a_piece_that_passes_its_input_through_is_built_and_tested(write_matrix, tmp_path, paddle_version):
    """``tap`` returns its input beside its result: the piece returns each tensor once (no input as
    an output), so Paddle builds it, and the failure inside it is localized there, not left at the model."""
    results = _run(write_matrix, tmp_path, {"tap": "tests.factories:passes_its_input_through"}, "cpu_fp32")
    reduce = load_record(results, f"cpu_fp32/{paddle_version}/normal/tap")["analysis"]["reduce"]
    assert not any(t["untestable"] for t in reduce["trials"]), reduce["trials"]
    assert reduce["outcome"] != "whole model" and reduce["path"].startswith("tap"), reduce
    source = (results / f"cpu_fp32/{paddle_version}/normal/tap/reduction/piece1/piece.py").read_text()
    assert "o0 = self.members[0](" in source and "return [" in source
    # Once the record is written, the trials it does not name keep their script and log, not their
    # programs and arrays (``running.prune``); every file the record names is still there.
    work = results / f"cpu_fp32/{paddle_version}/normal/tap"
    text = (results / f"cpu_fp32/{paddle_version}/normal/tap.json").read_text()
    trials = [p for p in (work / "reduction").iterdir() if p.is_dir()]
    unnamed = [p for p in trials if f"/reduction/{p.name}/" not in text]
    assert unnamed and all(not list(p.glob("*.pdiparams")) and list(p.glob("*.py")) for p in unnamed), trials
    for named in re.findall(r'"(cpu_fp32/[^"]+/reduction/[^"]+)"', text):
        assert (results / named).exists(), named


def test_a_consistency_failure_gets_a_reproducer_that_compares_with_dygraph(write_matrix, tmp_path, paddle_version):
    results = _run(write_matrix, tmp_path, {"stateful": "tests.factories:python_state",
                                            "clean": "tests.factories:clean"}, "cpu_fp32")
    record = load_record(results, f"cpu_fp32/{paddle_version}/normal/stateful")
    assert stages_by_name(record)["baseline"]["status"] == "fail"
    # Triage: Paddle's own executor (jit.load) runs the saved program as the predictor does, and
    # neither computes what the Python forward computes: the export is where it broke.
    triage = record["analysis"]["triage"]
    assert triage["outcome"] == "export", triage
    assert triage["executor_vs_dygraph"]["agree"] is False and triage["executor_vs_predictor"]["agree"] is True
    # The count is read in the model's own forward, outside every sublayer: no piece smaller than
    # the model reproduces, and the reproducer is the whole model.
    reduce = record["analysis"]["reduce"]
    assert reduce["outcome"] == "whole model" and reduce["path"] == "" and "piece" not in reduce
    assert all(not t["reproduces"] for t in reduce["trials"]) and reduce["sub_exports"] <= reduce["budget"]
    repro = record["analysis"]["reproducer"]
    assert repro["stage"] == "baseline" and repro["program"] == "model" and repro["verified"] is True
    assert repro["last_line"] == "MISMATCH: reproduced"
    assert (Path(repro["script"]).parent / "expected.npz").exists()
    # A cell that passes pays nothing: no reproducer, no analysis.
    clean = load_record(results, f"cpu_fp32/{paddle_version}/normal/clean")
    assert clean["verdict"]["status"] == "pass" and not clean["analysis"]
    assert not (results / f"cpu_fp32/{paddle_version}/normal/clean/reproducer").exists()
