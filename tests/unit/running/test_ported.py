"""A script written without what an older release lacks (``running/ported.py``): the release's words
read, the script's source edited, the edit kept only where the cause reproduces at its own release.
The real runs (Paddle 2.6.2 lacking, 3.3.1 reproducing) are in ``tests/test_crossversion.py``; here
each release's answer is given."""

import ast
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from harness.running.ported import Lack, LackKind, Porting, lacking, without
from harness.shared.releases import ReleaseRun, ReleaseSpan, RunOutcome, SpanOutcome

R, N, B = RunOutcome.REPRODUCED, RunOutcome.NOT_REPRODUCED, RunOutcome.NOT_BUILT

SCRIPT = '''from __future__ import annotations
import paddle
import paddle.nn.functional as F
from paddle.distributed.flex_checkpoint import checkpoint as ckpt, other
from paddle.nn.functional import flashmask_attention

fused = F.flashmask_attention  # bound at import, read on another path


class Net(paddle.nn.Layer):
    def forward(self, x):
        if x.shape[0] > 99:
            return F.flashmask_attention(x, x, x)
        y = F.pad(x, [1, 1],
                  pad_from_left_axis=False)
        return paddle.nn.functional.pad(y, [0, 1], mode="constant", pad_from_left_axis=False)
'''


@pytest.mark.parametrize("line, lack", [
    ("AttributeError: module 'paddle.nn.functional' has no attribute 'flashmask_attention'. Did you mean: 'x'?",
     Lack(LackKind.ATTRIBUTE, "paddle.nn.functional", "flashmask_attention")),
    ("the minimized script: TypeError: pad() got an unexpected keyword argument 'pad_from_left_axis'",
     Lack(LackKind.KEYWORD, "pad", "pad_from_left_axis")),
    ("ImportError: cannot import name 'flashmask_attention' from 'paddle.nn.functional' (/x/functional/__init__.py)",
     Lack(LackKind.IMPORTED, "paddle.nn.functional", "flashmask_attention")),
    ("ModuleNotFoundError: No module named 'paddle.distributed.flex_checkpoint'",
     Lack(LackKind.MODULE, "paddle.distributed.flex_checkpoint", "")),
])
def test_what_a_release_lacks_is_read_from_its_words(line, lack):
    assert lacking(line) == lack


@pytest.mark.parametrize("line", [
    "AttributeError: module 'ppdet.modeling' has no attribute 'x'",  # a suite's: not Paddle's to port
    "ModuleNotFoundError: No module named 'safetensors'",
    "RuntimeError: (NotFound) Cannot find x in scope",
])
def test_words_of_anything_else_say_no_lack(line):
    assert lacking(line) is None


def test_an_attribute_is_read_as_none_by_the_scripts_own_alias_or_its_statements_left_out():
    lack = Lack(LackKind.ATTRIBUTE, "paddle.nn.functional", "flashmask_attention")
    as_none = without(SCRIPT, (lack,), (0,))
    assert "fused = None  #" in as_none and "return None(x, x, x)" in as_none
    assert "from paddle.nn.functional import flashmask_attention" in as_none  # an import is another lack
    left_out = without(SCRIPT, (lack,), (1,))
    assert "fused" not in left_out.split("class Net")[0].replace("# bound", "")
    assert "flashmask_attention(x" not in left_out and "        if x.shape[0] > 99:\n            pass\n" in left_out
    ast.parse(left_out)


def test_a_keyword_is_dropped_from_every_call_of_that_function_only():
    text = without(SCRIPT, (Lack(LackKind.KEYWORD, "pad", "pad_from_left_axis"),), (0,))
    assert "pad_from_left_axis" not in text
    assert "y = F.pad(x, [1, 1])" in text and "paddle.nn.functional.pad(y, [0, 1], mode='constant')" in text
    assert "F.flashmask_attention(x, x, x)" in text  # another function's call untouched
    # A class's constructor: its calls by the class's name.
    init = without("import paddle\nc = paddle.nn.Conv2D(1, 2, 3, bias=False)\n",
                   (Lack(LackKind.KEYWORD, "Conv2D.__init__", "bias"),), (0,))
    assert init == "import paddle\nc = paddle.nn.Conv2D(1, 2, 3)\n"


def test_an_imported_name_and_a_module_are_bound_to_none_where_they_were_imported():
    text = without(SCRIPT, (Lack(LackKind.IMPORTED, "paddle.nn.functional", "flashmask_attention"),
                            Lack(LackKind.MODULE, "paddle.distributed.flex_checkpoint", "")), (0, 0))
    assert "flashmask_attention = None\n" in text
    assert "ckpt = None; other = None\n" in text
    assert "import paddle.nn.functional as F" in text
    assert without("import paddle\nimport paddle.incubate.x as xx, os\n",
                   (Lack(LackKind.MODULE, "paddle.incubate.x", ""),), (0,)) == "import paddle\nimport os; xx = None\n"


def test_a_script_that_names_none_of_it_is_not_written():
    assert without("import paddle\nprint(paddle.ones([1]))\n",
                   (Lack(LackKind.ATTRIBUTE, "paddle.nn.functional", "flashmask_attention"),), (0,)) is None


class _Releases:
    """Each release's answer to a script, by what the script holds: a release "lacks" a text."""

    def __init__(self, lacks: Dict[str, List[Tuple[str, str]]], own_needs: str = ""):
        self.lacks, self.own_needs = lacks, own_needs
        self.asked: List[Tuple[str, str]] = []

    def __call__(self, version: str, script: Path) -> Tuple[RunOutcome, str]:
        text = "".join(ln for ln in script.read_text().splitlines(True) if not ln.startswith("#"))  # as Python reads it
        self.asked.append((version, script.name))
        if version == "3.3.1":
            return (R, "ValueError: the cause") if self.own_needs in text else (RunOutcome.OTHER, "NameError: x")
        for needle, words in self.lacks.get(version, []):
            if needle in text:
                return B, words
        return N, "not reproduced"


def test_a_release_is_asked_again_round_by_round_each_script_verified_at_its_own_release(tmp_path):
    script = tmp_path / "source_repro.py"
    script.write_text(SCRIPT)
    releases = _Releases({"2.6.2": [
        ("F.flashmask_attention", "AttributeError: module 'paddle.nn.functional' has no attribute 'flashmask_attention'"),
        ("pad_from_left_axis", "TypeError: pad() got an unexpected keyword argument 'pad_from_left_axis'")]},
        own_needs="F.pad(")
    porting = Porting("3.3.1", releases, lambda line: None)
    first = releases("2.6.2", script)
    said, line = porting.answer("2.6.2", script, first)
    assert said is N
    assert line == ("not reproduced [written without `paddle.nn.functional.flashmask_attention`, `pad_from_left_axis=` "
                    "in calls of `pad`: absent at 2.6.2, reproducing at 3.3.1 without]")
    verified = [name for version, name in releases.asked if version == "3.3.1"]
    assert len(verified) == 2 and all(".without-" in n for n in verified)  # each round's script, at its own release
    kept = sorted(p.name for p in tmp_path.glob("*.without-*.py"))
    assert len(kept) == 2 and (tmp_path / kept[0]).read_text().startswith("# Written without ")
    # Asked again (the boundary's confirmation): nothing is written or verified twice.
    porting.answer("2.6.2", script, first)
    assert [v for v, _ in releases.asked].count("3.3.1") == 2


def test_a_script_that_does_not_reproduce_without_the_name_keeps_the_releases_answer_with_why(tmp_path):
    script = tmp_path / "source_repro.py"
    script.write_text(SCRIPT)
    words = "AttributeError: module 'paddle.nn.functional' has no attribute 'flashmask_attention'"
    releases = _Releases({"3.2.2": [("F.flashmask_attention", words)]}, own_needs="F.flashmask_attention")
    said, line = Porting("3.3.1", releases, lambda line: None).answer("3.2.2", script, (B, words))
    assert said is B and line.startswith(words)
    assert "it does not reproduce at 3.3.1 (other: NameError: x)" in line
    assert not list(tmp_path.glob("*.without-*.py"))


def test_the_span_says_which_releases_were_asked_written_without_what():
    ported = ("not reproduced [written without `paddle.nn.functional.flashmask_attention`: absent at 2.6.2, "
              "reproducing at 3.3.1 without]")
    span = ReleaseSpan(SpanOutcome.FOUND, "c", "s.py", ("2.6.2", "3.0.0", "3.3.1"),
                       (ReleaseRun("2.6.2", N, ported, 3), ReleaseRun("3.0.0", R, "x", 3)), "3.0.0", "2.6.2",
                       newest="3.3.1")
    assert span.exact
    assert span.words() == ("first bad 3.0.0, last good 2.6.2, still at 3.3.1 (asked 2.6.2 written without "
                            "`paddle.nn.functional.flashmask_attention`)")


def test_each_lack_keeps_the_way_it_was_taken_out_the_last_tries_both(tmp_path):
    script = tmp_path / "source_repro.py"
    script.write_text("import paddle\nimport paddle.nn.functional as F\na = F.flashmask_attention\nb = F.newer.dcp\n")

    class Own(_Releases):
        def __call__(self, version, script):
            text = script.read_text()
            if version == "3.3.1" and "None.dcp" in text:  # read as None, the attribute after it fails
                self.asked.append((version, script.name))
                return B, "AttributeError: 'NoneType' object has no attribute 'dcp'"
            return super().__call__(version, script)

    releases = Own({"2.6.2": [
        ("F.flashmask_attention", "AttributeError: module 'paddle.nn.functional' has no attribute 'flashmask_attention'"),
        ("F.newer", "AttributeError: module 'paddle.nn.functional' has no attribute 'newer'")]}, own_needs="import")
    said, line = Porting("3.3.1", releases, lambda line: None).answer("2.6.2", script, releases("2.6.2", script))
    assert said is N, line
    written = [p.read_text() for p in tmp_path.glob("*.without-*.py")]
    assert len(written) == 2  # round 1 (its one lack), round 2 (both)
    text = next(t for t in written if "newer" in t.splitlines()[0])
    assert "a = None\n" in text and "b =" not in text and text.endswith("pass\n")
    assert text.startswith("# Written without `paddle.nn.functional.flashmask_attention` read as None, "
                           "`paddle.nn.functional.newer` its statements left out: Paddle 2.6.2 lacks them.")
