"""The short form of a written source reproducer (``running/compact.py``): what it keeps of the
script and where it writes none (pure text; the forms run on real Paddle in ``tests/test_standalone.py``)."""

from harness.running.compact import compact_form
from harness.shared.releases import MODEL_SOURCE, MODEL_SOURCE_END

HEAD = '"""A script."""\nimport os\nimport sys\nimport tempfile\n\nimport numpy as np\nimport paddle\nimport paddle.inference\n'
MODEL = ("import copy\n\n\nclass OneOp(paddle.nn.Layer):\n    \"\"\"Its docstring.\"\"\"\n\n"
         "    def forward(self, in0):\n        # a comment\n        return [paddle.tanh(in0)]\n")
BUILD = ('\nhere = os.path.dirname(os.path.abspath(__file__))\ninputs = np.load(os.path.join(here, "inputs.npz"))\n'
         "layer = OneOp()\nfeed_names = ['in0']\nspec = []\n"
         'state = np.load(os.path.join(here, "weights.npz"))\n')
CONFIG = ("config = paddle.inference.Config(os.path.join(out, model_file), params_file)\n"
          "if model_file.endswith('.json'):\n    config.enable_new_ir(True)\nconfig.enable_mkldnn()\n\n"
          "predictor = paddle.inference.create_predictor(config)\n")


def test_a_numeric_inference_cause_keeps_its_model_config_and_tolerance_and_drops_the_rest():
    tail = BUILD + CONFIG + 'tolerances = [{"atol": 0.001, "rtol": 0.01, "scaled_atol": 1e-05}]\nprint("MISMATCH: reproduced")\n'
    text, why = compact_form(HEAD + MODEL_SOURCE + MODEL + MODEL_SOURCE_END + tail, "a cause")
    assert why == "" and text is not None
    assert "class OneOp" in text and "return [paddle.tanh(in0)]" in text
    assert "import copy" not in text and "Its docstring" not in text and "# a comment" not in text
    assert "    config.enable_new_ir(True)" in text and "config.enable_mkldnn()" in text
    # One tolerance for every output: written as numbers (no ``sys``, no table); several: the table.
    assert "atol = 0.001 + 1e-05 * np.abs(want" in text and "rtol=0.01, atol=atol" in text and "import sys" not in text
    assert "import paddle.inference" not in text  # `import paddle` gives it at every release
    assert "layer.eval()" not in text  # an op program: every attribute spelled out, train or eval
    model = MODEL.replace("class OneOp", "class Net")
    assert "layer.eval()" in compact_form(HEAD + MODEL_SOURCE + model + MODEL_SOURCE_END + tail, "x")[0]
    several = tail.replace('"scaled_atol": 1e-05}]', '"scaled_atol": 1e-05}, {"atol": 0.5, "rtol": 0.01}]')
    table = compact_form(HEAD + MODEL_SOURCE + MODEL + MODEL_SOURCE_END + several, "a cause")[0]
    assert '"atol": 0.5' in table and "import sys" in table and "MISMATCH: reproduced" in table
    # The feed's names read from inputs.npz where it holds exactly them, in order; else written out.
    stored = compact_form(HEAD + MODEL_SOURCE + MODEL + MODEL_SOURCE_END + tail, "a cause", stored=["in0"])[0]
    assert "feed_names" not in stored and "for n in inputs.files]" in stored
    assert "feed_names = ['in0']" in compact_form(HEAD + MODEL_SOURCE + MODEL + MODEL_SOURCE_END + tail, "x",
                                                   stored=["in1", "in0"])[0]
    compile(stored, "compact.py", "exec")
    assert "eager.npz" not in text and text.startswith('"""a cause; python compact.py')
    compile(text, "compact.py", "exec")
    quoted = compact_form(HEAD + MODEL_SOURCE + MODEL + MODEL_SOURCE_END + tail, 'raised "x\\d"')[0]
    compile(quoted, "compact.py", "exec")  # Paddle's words with quotes and backslashes stay a docstring
    with_eager = compact_form(HEAD + MODEL_SOURCE + MODEL + MODEL_SOURCE_END + tail.replace(
        "state = np", 'if os.path.exists(os.path.join(here, "eager.npz")):\n    a\n    b\n    c\nstate = np'), "x", True)[0]
    assert with_eager is not None and "eager.npz" in with_eager


def test_an_error_cause_compares_nothing_and_a_converter_or_foreign_script_gets_no_short_form():
    error = compact_form(HEAD + MODEL_SOURCE + MODEL + MODEL_SOURCE_END + BUILD + CONFIG, "an error")[0]
    assert error is not None and "assert_allclose" not in error and "import sys" not in error
    reads_sys = MODEL.replace("return [paddle.tanh(in0)]", "return [paddle.tanh(in0)] if sys.platform else []")
    assert "import sys" in compact_form(HEAD + MODEL_SOURCE + reads_sys + MODEL_SOURCE_END + BUILD + CONFIG, "x")[0]
    assert error.rstrip().endswith('predictor.run()\nprint("ran without error: not reproduced")')  # Paddle's error says it
    converter = BUILD + "import paddle2onnx\nsession = ort.InferenceSession(onnx_file)\n"
    assert compact_form(HEAD + MODEL_SOURCE + MODEL + MODEL_SOURCE_END + converter, "x") == (
        None, "its stage is not run by Paddle Inference (a converter's script stays as it is)")
    assert compact_form("print('hello')\n", "x") == (None, "not a source reproducer the harness wrote")


def test_what_a_short_form_may_do_without_is_each_config_call_and_the_params_file_wrapper():
    from harness.running.compact import removals, without

    text = ("class Anchored(paddle.nn.Layer):\n    def forward(self, x):\n        return [x]\n"
            "layer = OneOp()\nlayer = Anchored(layer)\n"
            "config = paddle.inference.Config(a, b)\nif model_file.endswith('.json'):  # a PIR program: its own calls\n"
            "    config.enable_new_ir(True)\nconfig.enable_mkldnn()\npredictor = paddle.inference.create_predictor(config)\n")
    found = removals(text)
    assert found == [[7], [8], [0, 1, 2, 4]], found  # the Config itself never
    assert without(text, [7]).count("if model_file") == 0  # an if left with no body goes too, its comment with it
    assert "config.enable_mkldnn()" in without(text, [7]) and "Anchored" not in without(text, [0, 1, 2, 4])
    compile(without(without(text, [0, 1, 2, 4]), []), "x.py", "exec")


def test_an_op_program_may_return_fewer_outputs_and_drops_what_only_they_read():
    from harness.running.compact import fewer_outputs

    text = ("class OneOp(paddle.nn.Layer):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_buffer('p0', paddle.zeros([2]), persistable=True)\n"
            "        self.register_buffer('p1', paddle.zeros([]), persistable=True)\n\n"
            "    def forward(self, in0):\n        r0 = paddle.add(in0, self.p0)\n        r1 = paddle.multiply(self.p1, r0)\n"
            "        r2 = paddle.pow(r0, 3.0)\n        r10 = paddle.tanh(r2)\n        return [r1, r10]\n")
    first, second = fewer_outputs(text)
    assert "return [r10]" in first and "r1 =" not in first and "'p1'" not in first and "r0 = " in first
    assert "return [r1]" in second and "r2 =" not in second and "r10 =" not in second and "'p1'" in second
    compile(first, "x.py", "exec"), compile(second, "x.py", "exec")
    assert fewer_outputs(text.replace("return [r1, r10]", "return [r10]")) == []  # one output: nothing to drop
    assert fewer_outputs(text.replace("class OneOp", "class Model")) == []  # a model's source: not an op program
