"""The release bisection's logic (``running/releases.place``) on answers given per release: the
ends first, halves, skipped releases, confirmation and a flaky boundary, fixed_in. The script runs
are real processes in ``tests/test_crossversion.py``; here each release's answer is a table."""

from pathlib import Path
from typing import Dict, List

import pytest

from harness.running import releases
from harness.shared.releases import RunOutcome, SpanOutcome, outcome

R, N, B = RunOutcome.REPRODUCED, RunOutcome.NOT_REPRODUCED, RunOutcome.NOT_BUILT
SERVED = ["2.6.2", "3.0.0", "3.1.0", "3.1.1", "3.2.0", "3.2.1", "3.2.2", "3.3.0", "3.3.1"]


class _Home:
    version = "3.3.1"
    run = None


class _Cause:
    key = "words"
    numeric = False
    cause_words = "words"
    home = _Home()
    script = Path("source_repro.py")
    whole = None
    needs_suite = False
    larger_scripts: list = []


class _Table(releases.Bisection):
    """Answers from a table (a list per release: successive runs answer in turn)."""

    def __init__(self, table: Dict[str, List[RunOutcome]]):
        super().__init__(_Cause(), lambda v, suite=False: None, lambda line: None)
        self.table = {v: list(a) for v, a in table.items()}
        self.order: List[str] = []

    def run(self, version: str) -> RunOutcome:
        answers = self.table[version]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        self.order.append(version)
        self.answers.setdefault(version, []).append((answer, answer.value))
        return answer


def _place(table, own="3.3.1", confirm=3, served=SERVED):
    bisect = _Table(table)
    _Home.version = own
    span = releases.place(_Cause(), served, lambda v, suite=False: None, lambda line: None, confirm, bisect=bisect)
    return span, bisect


def _regression_at(first_bad: str) -> Dict[str, List[RunOutcome]]:
    return {v: [R if releases.version_order(v) >= releases.version_order(first_bad) else N] for v in SERVED}


@pytest.mark.parametrize("first_bad,last_good", [("3.3.0", "3.2.2"), ("3.0.0", "2.6.2"), ("3.1.1", "3.1.0")])
def test_the_boundary_is_found_with_the_ends_first_and_confirmed(first_bad, last_good):
    span, bisect = _place(_regression_at(first_bad))
    assert (span.outcome, span.first_bad, span.last_good, span.fixed_in) == (SpanOutcome.FOUND, first_bad, last_good, None)
    assert bisect.order[:2] == ["3.3.1", "2.6.2"]  # the ends first: its own release, then the oldest
    assert len(bisect.answers[first_bad]) == 3 and len(bisect.answers[last_good]) == 3
    assert len(set(bisect.order)) <= 6  # halving, not every release
    assert "first bad %s, last good %s, still at 3.3.1" % (first_bad, last_good) in span.words()


def test_a_release_that_cannot_run_the_script_is_skipped_for_its_neighbour():
    table = _regression_at("3.3.0")
    table["3.2.0"] = [B]  # an API missing there: says nothing
    table["2.6.2"] = [B]  # the oldest cannot run it: the next oldest is the good end
    span, bisect = _place(table)
    assert (span.first_bad, span.last_good) == ("3.3.0", "3.2.2")
    assert "3.0.0" in bisect.answers
    assert {t.version: t.outcome for t in span.tried}["2.6.2"] is B


def test_a_release_that_reproduced_once_is_bad_and_its_neighbour_asked_until_a_miss_is_unlikely():
    """A converter reading memory it never wrote shows its defect only on some runs: one reproduction at
    3.3.0 is the cause seen there; 3.2.2 is good only after 8 runs without it (at 1 in 3, a miss in 8
    runs is under 5%)."""
    table = _regression_at("3.3.0")
    table["3.3.0"] = [R, N, N]
    span, bisect = _place(table)
    assert (span.outcome, span.first_bad, span.last_good) == (SpanOutcome.FOUND, "3.3.0", "3.2.2")
    assert len(bisect.answers["3.2.2"]) == 8 and len(bisect.answers["3.3.0"]) == 3
    assert "3.3.0 reproduced in 1 of 3 runs; 3.2.2 in none of 8" in span.note and span.note in span.words()
    assert span.exact


def test_a_last_good_that_reproduces_on_a_further_run_moves_the_boundary_older():
    table = _regression_at("3.3.0")
    table["3.3.0"] = [N, R, N]  # its first answer says good: the halving passes it by
    table["3.2.2"] = [N, N, N, R, N]  # bad too, seen on its fourth run
    table["3.3.1"] = [R, N, R]
    span, bisect = _place(table)
    assert (span.first_bad, span.last_good) == ("3.2.2", "3.2.1")
    assert bisect.judged("3.3.0") is R and len(bisect.answers["3.2.1"]) >= 8


def test_a_cause_too_rare_at_the_first_bad_to_tell_the_last_good_is_a_flaky_boundary():
    table = _regression_at("3.3.0")
    table["3.3.0"] = [R, N, N, N, N, N] + [N] * 10
    span, _ = _place(table, confirm=6)  # seen once in 6: 17 runs needed, more than are asked
    assert span.outcome is SpanOutcome.FLAKY and not span.exact
    assert "too few to tell" in span.note and "flaky boundary" in span.words()


def test_in_every_release_and_not_at_its_own_release():
    span, _ = _place({v: [R] for v in SERVED})
    assert span.outcome is SpanOutcome.IN_EVERY_RELEASE and span.first_bad == "2.6.2" and span.last_good is None
    span, _ = _place({v: [N] for v in SERVED})
    assert span.outcome is SpanOutcome.NOT_AT_ITS_RELEASE


def test_releases_that_could_not_be_asked_are_said_never_folded_into_every_release():
    """PaddleX 3.7.2's model code calls ``paddle.nn.Conv2d`` (Paddle >= 3.2): below 3.2.0 the script is
    not built; at 2.6.2 it fails another way. The answer is 'first bad 3.2.0 or earlier', with each
    release that could not be asked and why."""
    table = {v: [R] for v in SERVED}
    for v in ("3.0.0", "3.1.0", "3.1.1"):
        table[v] = [B]
    table["2.6.2"] = [RunOutcome.OTHER]
    span, _ = _place(table)
    assert span.outcome is SpanOutcome.IN_EVERY_RELEASE and span.first_bad == "3.2.0", span
    said = span.words()
    assert said.startswith("first bad 3.2.0 or earlier: 4 older release(s) could not be asked"), said
    assert "3.0.0 not built" in said and "2.6.2 other" in said and "every release" not in said
    # Every release asked, and every one reproduced: that is "every release", and only that.
    span, _ = _place({v: [R] for v in SERVED})
    assert span.words().startswith("in every release asked (oldest 2.6.2)")
    # Nothing older could be asked at all: the cell's own release or earlier.
    table = {v: [B] for v in SERVED}
    table["3.3.1"] = [R]
    span, _ = _place(table)
    assert span.words().startswith("first bad 3.3.1 or earlier: 8 older release(s) could not be asked")


def test_a_newer_release_that_no_longer_reproduces_is_fixed_in():
    table = {v: [R if "3.2.0" <= v <= "3.2.2" else N] for v in SERVED}
    span, _ = _place(table, own="3.2.1")
    assert (span.first_bad, span.last_good, span.fixed_in, span.newest) == ("3.2.0", "3.1.1", "3.3.0", "3.3.1")
    assert span.words().endswith("fixed in 3.3.0")


def test_a_span_reads_back_as_it_was_written():
    span, _ = _place(_regression_at("3.3.0"))
    again = releases.ReleaseSpan.from_dict(span.to_dict())
    assert again == span


@pytest.mark.parametrize("exit_code,output,expected", [
    (1, "BUILT: Paddle 3.3.1, model.json\nNotImplementedError: ... words (at x.cc:1)", R),
    (0, "BUILT: Paddle 3.2.2, model.json\nran without error: not reproduced", N),
    (1, "Traceback\nImportError: cannot import name 'X'", B),  # before the program was exported
    (1, "BUILT: Paddle 2.6.2, model.pdmodel\nAttributeError: 'paddle.base.libpaddle.AnalysisConfig' object has no "
        "attribute 'set_optimization_level'", B),  # a Config call missing at that release
    (1, "BUILT: Paddle 3.0.0, model.json\nValueError: another error", RunOutcome.OTHER),
    (None, "", RunOutcome.OTHER),
])
def test_one_run_of_a_source_reproducer_says_one_of_five_things(exit_code, output, expected):
    assert outcome(exit_code, output, "words", numeric=False)[0] is expected


def test_a_run_with_no_failure_says_so_in_one_line_and_exits_0(tmp_path):
    from harness.shared.records import write_record
    from tests.conftest import as_record

    run = tmp_path / "default"
    write_record(run, as_record({"id": "cpu_fp32/3.3.1/normal/a", "verdict": {"status": "pass"}}))
    said: List[str] = []
    assert releases.run(run, releases.Options(tmp_path / "envs", "3.11"), say=said.append) == 0
    assert len(said) == 1 and "nothing to place: no failing cell among 1 records" in said[0], said
    assert not (tmp_path / "envs").exists()  # nothing made, the index not even asked


def test_a_releases_words_name_files_from_their_package_not_the_environment(tmp_path):
    import sys

    from harness.shared.releases import BUILT

    script = tmp_path / "source_repro.py"
    script.write_text(f"print({BUILT!r})\nraise SystemExit(\"ImportError: cannot import name 'swiglu' from "
                      f"'paddle.nn.functional' (/envs/pool-3.2.0-ab/lib/python3.11/site-packages/paddle/nn/"
                      f"functional/__init__.py)\")\n")
    said, line = releases.Bisection(_Cause(), lambda v, suite=False: None, lambda line: None)._ran(
        Path(sys.executable), script)
    assert line == "ImportError: cannot import name 'swiglu' from 'paddle.nn.functional' (paddle/nn/functional/__init__.py)"
    assert said is RunOutcome.OTHER


def test_a_releases_words_name_a_scratch_file_by_its_name():
    import tempfile

    from harness.shared.causes import shareable_words

    scratch = f"{tempfile.gettempdir()}/source-repro-zn0re0d_/model.json"
    said = shareable_words(f'Unable to read the model: "{scratch}" Please check that model format: ".json" is supported')
    assert said == 'Unable to read the model: "model.json" Please check that model format: ".json" is supported'


def test_a_runtimes_words_name_a_file_of_the_run_from_the_run_folder(tmp_path):
    """ONNX Runtime names the file it could not load by its absolute path: published, the path is the
    run folder's own (as reproducers are named), and a path outside the run is left as said."""
    from harness.shared.causes import run_words

    run = tmp_path / "results" / "zoo"
    said = f"Load model from {run}/cpu_ort_fp32/2.6.2/normal/seg/export/model.onnx failed: /usr/lib/x.so"
    assert run_words(said, run) == "Load model from cpu_ort_fp32/2.6.2/normal/seg/export/model.onnx failed: /usr/lib/x.so"
    assert str(tmp_path) not in run_words(said, run)


def test_a_release_s_answer_says_an_exit_status_as_one_and_a_signal_only_when_there_was_one():
    """paddle2onnx's abort caught by the script, which exits 255: reproduced, said with its own last
    line and "exit status 255" — never "died with signal 127" (255 read as 128 + a signal)."""
    words = "Failed to convert PaddlePaddle model: (Unimplemented) the <n>th elementwise MUST be ir::FloatAttribute"
    output = ("BUILT: Paddle 3.3.0, model.json\n[ERROR] Failed to convert PaddlePaddle model: (Unimplemented) "
              "the 0th elementwise MUST be ir::FloatAttribute")
    said, line = outcome(255, output, words, numeric=False)
    assert said is RunOutcome.REPRODUCED, line
    assert line.endswith("(exit status 255)") and "signal" not in line, line
    assert line.startswith("[ERROR] Failed to convert PaddlePaddle model"), line
    # A warning printed after the cause's words is not the answer's line (found on the zoo).
    _, line = outcome(255, output + "\n  warnings.warn(warning_message)", words, numeric=False)
    assert line.startswith("[ERROR] Failed to convert") and "warnings.warn" not in line, line
    other, line = outcome(3, "BUILT: Paddle 3.3.0, model.json\nValueError: another error", words, numeric=False)
    assert other is RunOutcome.OTHER and line == "ValueError: another error (exit status 3)", line
    raised, line = outcome(1, "BUILT: Paddle 3.3.0, model.json\nValueError: another error", words, numeric=False)
    assert line == "ValueError: another error", line  # Python's own status for what it raised: its words say it
    died, line = outcome(-11, "BUILT: Paddle 3.3.0, model.json\nSegmentation fault", "died with SIGSEGV", numeric=False)
    assert line.startswith("died with SIGSEGV"), line


def test_a_callee_s_error_said_through_its_c_function_reproduces_as_the_traceback_shows_it():
    """The cell says a C function's SystemError by its callee's error ("TypeError: only 0-dimensional
    arrays ... (in <built-in function expand>)": PaddleSpeech's FastSpeech2 in train mode at 3.3.1); a
    script's traceback shows the TypeError, then the SystemError that only says a callee raised."""
    from harness.shared.causes import cause_of

    words = cause_of("TypeError: only 0-dimensional arrays can be converted to Python scalars (in <function "
                     "_prod_dispatcher at 0x7f39fef00400>) (in <built-in function expand>)")
    output = ("BUILT: Paddle 3.3.1, model.json\nTraceback (most recent call last):\n"
              "TypeError: only 0-dimensional arrays can be converted to Python scalars\n\n"
              "The above exception was the direct cause of the following exception:\n\n"
              "SystemError: <built-in function expand> returned a result with an exception set")
    said, line = outcome(1, output, words, numeric=False)
    assert said is RunOutcome.REPRODUCED and line.startswith("TypeError: only 0-dimensional"), line
    other, _ = outcome(1, output.replace("only 0-dimensional arrays", "another thing"), words, numeric=False)
    assert other is RunOutcome.OTHER


def test_a_cause_met_alike_by_two_runtimes_is_asked_with_the_script_of_the_cell_that_made_it():
    """The OpenVINO cell took its reproducer from the ONNX Runtime cell that analysed their shared
    conversion: the cause's script is the ONNX Runtime cell's, and so is the environment it runs in."""
    from harness.running.releases import ReleaseCause

    from ...conftest import as_record

    made = {"status": "pass", "stage": "ort_convert", "script": "cpu_ort_fp32/3.3.1/normal/m/reproducer/repro.py"}
    ort = as_record({"id": "cpu_ort_fp32/3.3.1/normal/m", "cell": {"session": {"name": "cpu_ort_fp32", "backend": "ort"}},
                     "analysis": {"reproducer": made}})
    ov = as_record({"id": "cpu_openvino_fp32/3.3.1/normal/m",
                    "cell": {"session": {"name": "cpu_openvino_fp32", "backend": "openvino"}},
                    "analysis": {"reproducer": dict(made, stage="openvino_convert", reused_from=ort.id)}})
    assert ReleaseCause("k", False, [ov, ort]).home is ort
    assert ReleaseCause("k", False, [ov]).home is ov  # none of its own: the one there is


def test_a_minimized_script_that_says_nothing_at_another_release_is_followed_by_the_whole(tmp_path):
    """The minimizer keeps what the cause's own release needs: at another release the minimized
    script can stop on what it cut (Qwen2.5-VL's at 3.0.0: "NameError: name 'inspect' is not
    defined"). There the whole standalone script is asked and its answer is the release's; at the
    cause's own release the minimized script's answer stands alone."""
    import sys

    from harness.shared.releases import BUILT

    minimized, whole = tmp_path / "minimized.py", tmp_path / "whole.py"
    minimized.write_text("inspect.signature(print)\n")  # its import was cut: NameError before it builds
    whole.write_text(f"import inspect\ninspect.signature(print)\nprint({BUILT!r})\nraise SystemExit('ValueError: words')\n")

    class _Minimized(_Cause):
        script, home = minimized, type("_Own", (), {"version": "3.3.1", "run": None})()

    _Minimized.whole = whole
    said: List[str] = []
    bisect = releases.Bisection(_Minimized(), lambda v, suite=False: Path(sys.executable), said.append)
    assert bisect.run("3.0.0") is RunOutcome.REPRODUCED, said
    assert "the minimized script not built (NameError: name 'inspect' is not defined); the whole: " in said[-1], said
    assert bisect.run("3.3.1") is RunOutcome.NOT_BUILT, said  # its own release: the minimized script alone
    assert "the whole" not in said[-1], said


POOL_REFUSED = """import os, sys
import numpy as np
import paddle
import paddle.inference

class Pool(paddle.nn.Layer):
    def forward(self, x):
        return paddle.nn.functional.avg_pool2d(x, kernel_size=2, stride=2, padding="SAME", ceil_mode=True)

out = sys.argv[1]
paddle.jit.save(paddle.jit.to_static(Pool(), input_spec=[paddle.static.InputSpec([2, 3, 97, 97], "float32")],
                                     full_graph=True), os.path.join(out, "model"))
model = "model.json" if os.path.exists(os.path.join(out, "model.json")) else "model.pdmodel"
config = paddle.inference.Config(os.path.join(out, model), "")
config.enable_mkldnn()
predictor = paddle.inference.create_predictor(config)
handle = predictor.get_input_handle(predictor.get_input_names()[0])
handle.reshape([2, 3, 97, 97])
handle.copy_from_cpu(np.ones([2, 3, 97, 97], "float32"))
predictor.run()
"""


def test_onednn_says_why_it_refused_a_primitive_where_the_predictor_says_std_exception(tmp_path):
    """PP-ResNet50-vd's ``avg_pool2d(padding="SAME", ceil_mode=True)`` at 97x97 under oneDNN: 3.x's
    predictor raises only "RuntimeError: std::exception", 2.6.2 "could not create a descriptor for a
    pooling forward propagation primitive". With ``ONEDNN_VERBOSE=check`` oneDNN prints its own reason at
    both (measured at 2.6.2 and 3.3.1); here, at the tests' Paddle, that the reason is printed and read."""
    import os
    import subprocess
    import sys

    from harness.shared.releases import ONEDNN_CHECK, onednn_refusals

    (tmp_path / "pool.py").write_text(POOL_REFUSED)
    ran = subprocess.run([sys.executable, "pool.py", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300, env={**os.environ, **ONEDNN_CHECK})
    assert ran.returncode != 0, ran.stdout[-2000:]
    assert onednn_refusals(ran.stdout + ran.stderr) == [
        "oneDNN refused to create pooling: problem is not mathematically consistent"], (ran.stdout + ran.stderr)[-3000:]


def test_another_releases_words_for_the_same_onednn_refusal_reproduce_the_cause(tmp_path):
    """The cause's own release printed "std::exception" and oneDNN's refusal; an older release says
    oneDNN's message instead of "std::exception", with the same refusal: reproduced, said with both.
    A release refusing something else, or not failing, does not reproduce."""
    import sys

    from harness.shared.releases import BUILT

    def script(name: str, message: str, refusal: str, code: int = 1) -> Path:
        path = tmp_path / name
        path.write_text(f"print({BUILT!r})\nprint({refusal!r})\nraise SystemExit({message!r})\n" if code else
                        f"print({BUILT!r})\nprint({refusal!r})\n")
        return path

    pooling = "onednn_verbose,create:check,pooling,problem is not mathematically consistent,src/common/pooling.cpp:122"
    own = script("own.py", "RuntimeError: std::exception",
                 pooling.replace("onednn_verbose,", "onednn_verbose,v1,primitive,").replace(":122", ":123"))
    older = script("older.py", "RuntimeError: could not create a descriptor for a pooling forward propagation primitive",
                   pooling)
    other = script("other.py", "RuntimeError: could not create a convolution primitive",
                   "onednn_verbose,create:check,convolution,bad strides,src/common/convolution.cpp:50")

    class _Std(_Cause):
        cause_words = "RuntimeError: std::exception"
        home = type("_Own", (), {"version": "3.3.1", "run": None})()

    bisect = releases.Bisection(_Std(), lambda v, suite=False: Path(sys.executable), lambda line: None)
    said, line = bisect._ran(Path(sys.executable), own, "3.3.1")
    assert said is RunOutcome.REPRODUCED and line.endswith(
        "; oneDNN refused to create pooling: problem is not mathematically consistent"), line
    said, line = bisect._ran(Path(sys.executable), older, "2.6.2")
    assert said is RunOutcome.REPRODUCED, line
    assert line.startswith("oneDNN refused to create pooling: problem is not mathematically consistent, as at 3.3.1 ("), line
    assert "could not create a descriptor" in line
    assert bisect._ran(Path(sys.executable), other, "2.6.2")[0] is RunOutcome.OTHER


def test_a_span_is_exact_when_both_sides_were_asked():
    """Placed exactly: a confirmed boundary, or in every release with every older release answering;
    "first bad 3.0.0 or earlier" (2.6.2 could not run it) is not."""
    found, _ = _place(_regression_at("3.3.0"))
    assert found.exact and found.needs_suite is False
    everywhere, _ = _place({v: [R] for v in SERVED})
    assert everywhere.outcome is SpanOutcome.IN_EVERY_RELEASE and everywhere.exact
    table = {v: [R] for v in SERVED}
    table["2.6.2"] = [B]
    bounded, _ = _place(table)
    assert bounded.outcome is SpanOutcome.IN_EVERY_RELEASE and not bounded.exact
    assert bounded.words().startswith("first bad 3.0.0 or earlier: 1 older release(s) could not be asked")
    assert releases.ReleaseSpan.from_dict(found.to_dict()).needs_suite is False  # read back as written


def test_where_the_op_program_cannot_be_asked_the_larger_script_with_its_suite_written_in_is(tmp_path):
    """PP-LCNet's op-level reproducer is written in ``_C_ops`` (2.6.2: "must be OpResult") and its
    larger piece imports PaddleX, which installs from Paddle 3.0 only: 2.6.2 said nothing. The piece
    with the suite's source written in needs Paddle alone: verified at the cell's own release, it is
    asked there; where it does not reproduce, the suite's form is, as before."""
    import sys

    from harness.shared.releases import BUILT

    def script(name: str, body: str) -> Path:
        (tmp_path / name).write_text(body)
        return tmp_path / name

    reproduces = f"print({BUILT!r})\nraise SystemExit('ValueError: words')\n"
    smallest = script("smallest.py", "raise SystemExit(\"ValueError: depthwise_conv2d(): argument must be OpResult\")\n")
    alone, suite = script("alone.py", reproduces), script("suite.py", reproduces)

    class _Env:
        def suite_missing(self, version: str) -> str:
            return "" if version != "2.6.2" else "the paddlex family (paddlex==3.7.2) installs from Paddle 3.0.0 on"

        def __call__(self, version: str, suite: bool = False) -> Path:
            return Path(sys.executable)

    class _Op(_Cause):
        script, home = smallest, type("_Own", (), {"version": "3.3.1", "run": None})()
        larger_scripts = [(alone, False), (suite, True)]

    said: List[str] = []
    bisect = releases.Bisection(_Op(), _Env(), said.append)
    assert bisect.run("2.6.2") is RunOutcome.REPRODUCED, said
    assert any("the larger reproducer (its suite written in) at 3.3.1: reproduced" in line for line in said), said
    line = bisect.answers["2.6.2"][0][1]
    assert "the smallest reproducer not built" in line and "the larger: ValueError: words" in line, line
    assert bisect.larger_chosen == (alone, False)

    alone.write_text("raise SystemExit('ValueError: something else')\n")  # the written-in form does not reproduce
    said.clear()
    bisect = releases.Bisection(_Op(), _Env(), said.append)
    assert bisect.run("2.6.2") is RunOutcome.NO_ENVIRONMENT, said  # the suite's form, where the suite cannot be
    assert bisect.larger_chosen == (suite, True) and "the larger: the paddlex family" in bisect.answers["2.6.2"][0][1]


def test_two_failures_that_say_only_std_exception_are_not_one_cause():
    """PP-ResNet50-vd's oneDNN pooling refusal and LSTNet's reorder refusal both reach Python as
    "RuntimeError: std::exception": keyed by those words alone they were one cause, placed by one
    script. Words of no cause of their own are kept apart by what each script builds; words of their
    own still join cells into one cause."""
    from tests.conftest import as_record

    def record(model: str, what: str, words: str) -> "CellRecord":  # noqa: F821
        source = {"script": "s.py", "verified": True, "outcome": "reproduced", "cause_words": words, "what": what}
        return as_record({"id": f"cpu_onednn_fp32/3.3.1/normal/{model}", "verdict": {"status": "error"},
                          "analysis": {"reproducer": {"status": "pass", "stage": "onednn_fp32", "source": source}}})

    bare = [record("resnet", "pd_op.pool2d, as the model called it", "RuntimeError: std::exception"),
            record("lstnet", "pd_op.conv2d -> pd_op.add, as the model called them", "RuntimeError: std::exception")]
    causes, _ = releases.causes_of(bare)
    assert len(causes) == 2, [c.key for c in causes]
    worded = [record("a", "pd_op.pool2d", "ValueError: (InvalidArgument) words"),
              record("b", "pd_op.conv2d", "ValueError: (InvalidArgument) words")]
    causes, _ = releases.causes_of(worded)
    assert len(causes) == 1 and len(causes[0].records) == 2


def test_causes_the_report_counts_apart_are_placed_apart_though_their_words_are_one():
    """Every cell of a converter reading memory it never wrote says the same words: keyed by them
    alone, SMOKE's relu cause was placed by another model's pad3d script (and took its flaky answer).
    The report counts them as two causes by the ops their nodes came from: so does ``releases``,
    each placed by a script of its own cells."""
    from tests.conftest import as_record

    words = "paddle2onnx's output depends on memory it never wrote"

    def record(model: str, op: str) -> "CellRecord":  # noqa: F821
        message = (f"{words} (paddle2onnx 2.1.0; converted again with glibc's M_PERTURB filling fresh memory): "
                   f"node p2o.{op}.0 ({op.title()}, from pd_op.{op}) differs")
        source = {"script": f"{model}.py", "verified": True, "outcome": "reproduced", "cause_words": words,
                  "what": f"pd_op.{op}, as the model called it"}
        return as_record({"id": f"cpu_ort_fp32/3.3.1/normal/{model}", "verdict": {"status": "error"},
                          "stages": [{"name": "ort_convert", "status": "error", "message": message}],
                          "analysis": {"reproducer": {"status": "pass", "stage": "ort_convert", "source": source}}})

    causes, _ = releases.causes_of([record("hgnet", "pad3d"), record("smoke", "relu"), record("ocr", "pad3d")])
    assert sorted((c.home.id.rsplit("/", 1)[1], len(c.records)) for c in causes) == [("hgnet", 2), ("smoke", 1)]


def test_a_cause_placed_earlier_is_its_records_span_only_over_the_same_releases_and_confirmations():
    """``releases`` asks a cause again unless its home record holds a span of the same cause, over the
    very releases and confirmations asked now (the run of scripts: ``tests/test_crossversion.py``)."""
    import types

    from harness.shared.releases import ReleaseSpan

    span = ReleaseSpan(SpanOutcome.FOUND, "words", "source_repro.py", tuple(SERVED), (), "3.3.0", "3.2.2",
                       confirmations=3)
    cause = types.SimpleNamespace(key="words", home=types.SimpleNamespace(analysis=types.SimpleNamespace(releases=span)))
    assert releases.placed_earlier(cause, SERVED, 3) is span
    assert releases.placed_earlier(cause, SERVED[-1:], 3) is None  # other releases: another question
    assert releases.placed_earlier(cause, SERVED, 1) is None  # other confirmations
    other = types.SimpleNamespace(key="other words", home=cause.home)  # the record's span is another cause's
    assert releases.placed_earlier(other, SERVED, 3) is None
    unplaced = types.SimpleNamespace(key="words", home=types.SimpleNamespace(analysis=types.SimpleNamespace(releases=None)))
    assert releases.placed_earlier(unplaced, SERVED, 3) is None
