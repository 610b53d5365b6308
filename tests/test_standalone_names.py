"""A standalone script writes a suite's definitions into one namespace: two definitions of one name
(two modules' ``_UNSET`` sentinels and ``HTTPError`` classes, a suite module named ``logging`` beside the
standard library's) are kept apart — the later renamed, every definition that reads it rewritten — and
the script behaves as the suite did."""

from __future__ import annotations

import subprocess
import sys

from harness.cell.handover.inline import StandaloneWriter, foreign_imports


def test_two_definitions_of_one_name_are_kept_apart_and_the_script_behaves_as_the_suite(tmp_path):
    import paddle

    from .suites.clash_suite.model import Net

    original = Net()
    original(paddle.ones([1, 4]))
    assert original.said == ("web", "api-unset", "suite:call")  # the planted suite's own behaviour

    writer = StandaloneWriter(paddle)
    name = writer.reference(Net)
    script = (writer.header() + "import paddle\n\n" + writer.body()
              + f"\nnet = {name}()\nnet(paddle.ones([1, 4]))\nprint(repr(net.said))\n")
    assert foreign_imports(script) == [] and not writer.left_out, (foreign_imports(script), writer.left_out)
    # Each name once at the top level: the later definitions renamed, the standard library's module too.
    for bound in ("class HTTPError(", "class HTTPError_2(", "_UNSET = ", "_UNSET_2 = ", "logging = types.SimpleNamespace",
                  "import logging as logging_2"):
        assert script.count(bound) == 1, (bound, script)
    (tmp_path / "standalone.py").write_text(script)
    ran = subprocess.run([sys.executable, "standalone.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip().splitlines()[-1] == repr(original.said), script


def test_a_module_handed_to_a_layer_is_spelled_by_its_import_and_a_suite_module_is_said_unwritable():
    import paddle
    import pytest

    from harness.cell.handover.source_repro import Unspellable

    from .suites.clash_suite import web

    writer = StandaloneWriter(paddle)
    assert writer.value(paddle.nn.functional) == "paddle.nn.functional"
    assert "import paddle.nn.functional" in writer.header()
    with pytest.raises(Unspellable, match="clash_suite.web"):
        writer.value(web)  # a suite module: written in only where a definition reads it as a namespace


def test_a_statement_that_calls_a_written_function_comes_after_what_that_function_reads():
    """PaddleX's ``gelu = get_activation('gelu')`` runs when the script reaches it, and
    ``get_activation`` reads ``ACT2FN``: the table (and what it names) must come first — found on the
    zoo, where the script stopped with ``NameError: name 'ACT2FN' is not defined``."""
    from harness.cell.handover.inline import in_definition_order

    written = {"m.get_activation": "def get_activation(s):\n    return ACT2FN[s]\n",
               "m.gelu=statement": "gelu = get_activation('gelu')\n",
               "m.GELU": "class GELU:\n    pass\n",
               "m.ACT2CLS=statement": "ACT2CLS = {'gelu': GELU}\n",
               "m.ACT2FN=statement": "ACT2FN = dict(ACT2CLS)\n",
               # A statement that calls a class runs its __init__ (PaddleFormers' ``logger = Logger()``,
               # whose __init__ reads colorlog's namespace: found on the zoo).
               "m.Logger": "class Logger:\n    def __init__(self):\n        self.format = colorlog.Formatter\n",
               "m.logger=statement": "logger = Logger()\n",
               "colorlog as colorlog=namespace": "colorlog = types.SimpleNamespace(Formatter=GELU)\n"}
    ordered = list(in_definition_order(written))
    assert ordered.index("colorlog as colorlog=namespace") < ordered.index("m.logger=statement"), ordered
    assert ordered.index("m.ACT2FN=statement") < ordered.index("m.gelu=statement"), ordered
    assert ordered.index("m.GELU") < ordered.index("m.ACT2CLS=statement") < ordered.index("m.ACT2FN=statement")
    namespace: dict = {}
    exec("import types\n" + "".join(written[k] for k in ordered), namespace)  # the order runs as a script
    assert namespace["gelu"] is namespace["GELU"]


def test_an_int_enum_is_spelled_by_its_member_and_a_subclass_repr_is_never_taken_for_source():
    """urllib3's ``_SSL_VERSION_TO_TLS_VERSION`` maps ``ssl`` IntEnum members: an IntEnum is an int,
    and its repr (``<_SSLMethod.PROTOCOL_TLSv1_2: 5>``) written as a literal made PaddleFormers'
    Gemma 3 script unparsable (found on the zoo). Members are spelled by name; another int
    subclass, whose repr may be anything, has no source form."""
    import ssl

    import paddle
    import pytest

    from harness.cell.handover.source_repro import Unspellable

    table = {ssl.PROTOCOL_TLS_CLIENT: ssl.TLSVersion.TLSv1_2}
    writer = StandaloneWriter(paddle)
    spelled = writer.value(table)
    namespace: dict = {}
    exec(writer.header() + f"table = {spelled}\n", namespace)
    assert namespace["table"] == table and type(next(iter(namespace["table"]))) is ssl._SSLMethod, spelled

    class Flags(int):
        def __repr__(self):
            return "<flags>"

    with pytest.raises(Unspellable):
        writer.value(Flags(3))


def test_methods_nothing_reads_are_left_out_and_a_method_read_later_is_written_in(tmp_path):
    """A suite class's ``from_pretrained`` and ``save_pretrained`` reach a hub client whose module
    state has no source form (PaddleFormers' Gemma 3 brought ``requests`` and ``urllib3`` this way:
    a 125,948-line script that stopped at a logger); nothing the model runs reads them, so they are
    left out, said in the script, and what only they read is not written. A template method — the
    base's ``forward`` calling ``head``, which only the subclass defines, written before the base — is
    kept by settling; a package read through its submodule (``colors.codes.parse``, as colorlog's
    formatter reads ``colorlog.escape_codes``) is a namespace inside a namespace; and the script runs
    as the suite does."""
    import paddle

    from .suites.unread_suite.model import Aliased, Lonely, Net

    paddle.seed(0)
    net = Net()
    x = paddle.ones([1, 4])
    expected = net(x).numpy()
    writer = StandaloneWriter(paddle)
    name = writer.reference(Net)
    lonely = writer.reference(Lonely)
    aliased = writer.reference(Aliased)
    weights = {k: v.numpy().tolist() for k, v in net.state_dict().items()}
    script = (writer.header() + "import numpy as np\nimport paddle\n\n" + writer.body()
              + f"\nnet = {name}()\nnet.set_state_dict({{k: paddle.to_tensor(np.array(v, 'float32')) for k, v in {weights!r}.items()}})\n"
              + f"print(net(paddle.ones([1, 4])).numpy().tolist(), {lonely}.size, list({lonely}()(paddle.ones([1])).shape), {aliased}()(paddle.ones([1])).tolist())\n")
    assert foreign_imports(script) == [], foreign_imports(script)
    for gone in ("def from_pretrained", "def save_pretrained", "def hub_name", "def export_card", "SESSION", "def download"):
        assert gone not in script, (gone, script)
    for kept in ("def head", "def scale", "def body", "def forward", "def __init__", "size = 4", "def parse", "def _doubled", "from os import environ",
                 "colors = types.SimpleNamespace(codes=types.SimpleNamespace(parse=parse))"):
        assert kept in script, (kept, script)
    assert "Base.from_pretrained" in script and "Net.save_pretrained" in script  # said where it is left out
    (tmp_path / "s.py").write_text(script)
    ran = subprocess.run([sys.executable, "s.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip().splitlines()[-1] == f"{expected.tolist()} 4 [1] [2.0]", (ran.stdout, script)


def test_a_table_is_spelled_by_its_own_kind_and_the_value_the_suite_computed():
    """PaddleX's ``BASE_DEP_SPECS = _get_base_dep_specs()`` reads the installed package's metadata when
    the module is imported: copied as a statement it raised ``PackageNotFoundError`` in the environment
    without the suite (three causes' standalone scripts on the zoo). A defaultdict, an OrderedDict and a
    set are spelled by their own kind with the value the suite had — a plain dict literal would lose a
    defaultdict's default."""
    import collections

    import paddle

    from .suites.unread_suite import tables

    writer = StandaloneWriter(paddle)
    writer._global(tables, "SPECS", "test")
    writer._global(tables, "ORDER", "test")
    writer._global(tables, "NAMES", "test")
    namespace: dict = {}
    exec(writer.header() + writer.body(), namespace)
    assert type(namespace["SPECS"]) is collections.defaultdict and namespace["SPECS"] == tables.SPECS
    assert namespace["SPECS"]["absent"] == []  # the default, as the suite's table has it
    assert type(namespace["ORDER"]) is collections.OrderedDict and list(namespace["ORDER"]) == list(tables.ORDER)
    assert namespace["NAMES"] == tables.NAMES and "importlib" not in writer.body()


def test_an_alias_of_a_renamed_name_keeps_pointing_at_what_it_named():
    """requests' ``from urllib3.exceptions import HTTPError as BaseHTTPError`` beside its own
    ``HTTPError``: with urllib3's written first (it keeps the name), the alias line was rewritten as if
    it were requests' source — ``BaseHTTPError = HTTPError_2``, requests' own — and the script stopped
    on "Cannot create a consistent method resolution order" (found on the zoo)."""
    import paddle

    from .suites.clash_suite import errors, web

    writer = StandaloneWriter(paddle)
    decoding = writer.reference(errors.ContentDecodingError)  # urllib3's (here: web's) HTTPError claimed first
    own = writer.reference(errors.HTTPError)
    namespace: dict = {}
    exec(writer.header() + writer.body(), namespace)
    mro = [c.__name__ for c in namespace[decoding].__mro__]
    assert own != "HTTPError" and namespace["HTTPError"].__doc__ is None and issubclass(
        namespace[decoding], namespace["HTTPError"]), (mro, writer.body())
    assert not issubclass(namespace[decoding], namespace[own]), mro  # not requests' own HTTPError
    assert web.HTTPError.__name__ == "HTTPError"


def test_an_interpreter_type_the_builtins_do_not_name_is_spelled_from_types():
    """requests and urllib3 read ``MappingProxyType``, whose type says it is ``builtins.mappingproxy``
    — a name the builtins do not have: the script stopped on "module 'builtins' has no attribute
    'mappingproxy'" (found on the zoo). Spelled by its name in ``types``."""
    import types

    import paddle

    writer = StandaloneWriter(paddle)
    assert writer.value(types.MappingProxyType) == "types.MappingProxyType" and "import types" in writer.header()
    assert writer.value(types.FunctionType) == "types.FunctionType"
    assert writer.value(dict) == "builtins.dict" or writer.value(dict) == "dict"


def test_paddles_newer_aliases_are_written_by_the_names_they_alias(tmp_path):
    """PaddleX's ``nn.Conv2d`` stopped its standalone script at 2.6.2–3.1.1 on the name alone ("module
    'paddle.nn' has no attribute 'Conv2d'"): written as ``nn.Conv2D`` — the same object at the cell's
    release — it runs there, behaves as the suite did, and says what it rewrote. So is PyTorch's
    ``bias=False`` ("unexpected keyword argument 'bias'" at 2.6.2–3.1.1): ``bias_attr=False``, the
    same parameters. A parameter that shadows a module's name is the function's own and stays as
    written."""
    import paddle
    import pytest

    from harness.cell.handover.aliases import spelled_by_own_names

    if not hasattr(paddle.nn, "Conv2d"):
        pytest.skip(f"Paddle {paddle.__version__} has no nn.Conv2d alias (3.2+)")
    from .suites.aliased_suite import AliasedBlock

    paddle.seed(0)
    original = AliasedBlock()
    x = paddle.rand([1, 3, 8, 8])
    writer = StandaloneWriter(paddle)
    name = writer.reference(AliasedBlock)
    script = (writer.header() + "import paddle\nimport numpy\n\n" + writer.body()
              + f"\nnet = {name}()\nnet.set_state_dict({{k: paddle.to_tensor(v) for k, v in numpy.load('w.npz').items()}})\n"
              + "print(sorted(net.state_dict()))\n"
              + "print(net(paddle.to_tensor(numpy.load('x.npy'))).numpy().tolist())\n")
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    for alias in ("Conv2d", "AdaptiveAvgPool2d", "paddle.cat("):
        assert alias not in code, (alias, script)
    assert "nn.Conv2D(3, 4, 3)" in script and "paddle.concat([" in script and "nn.AdaptiveAvgPool2D(1)" in script
    assert "# Paddle's aliases written by the names they alias, as older" in script and "nn.Conv2d as nn.Conv2D" in script
    assert "bias=" not in code and "nn.Conv2D(8, 8, 1, bias_attr=False)" in script, script
    assert "Conv2D(bias=False) as Conv2D(bias_attr=False)" in script and "Conv2D(bias=True) as Conv2D(bias_attr=None)" in script
    import numpy

    numpy.savez(tmp_path / "w.npz", **{k: v.numpy() for k, v in original.state_dict().items()})
    numpy.save(tmp_path / "x.npy", x.numpy())
    (tmp_path / "standalone.py").write_text(script)
    ran = subprocess.run([sys.executable, "standalone.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert numpy.allclose(eval(ran.stdout.strip().splitlines()[-1]), original(x).numpy(), atol=1e-6)
    assert eval(ran.stdout.strip().splitlines()[-2]) == sorted(original.state_dict())  # no bias gained or lost
    assert "mix.bias" not in original.state_dict() and "keep.bias" in original.state_dict()
    # A local name that shadows the module: its own, never rewritten.
    source = "def pick(nn):\n    return nn.Conv2d\n"
    assert spelled_by_own_names(source, {"nn": paddle.nn}) == (source, set())
    assert spelled_by_own_names("f = nn.Conv2d\n", {"nn": paddle.nn})[0] == "f = nn.Conv2D\n"
    # Zero-argument super() in a method: the class and the method's first parameter, spelled out; a
    # comprehension's is its own scope and stays.
    from harness.cell.handover.aliases import explicit_super
    from .suites.aliased_suite import ScaledEmbedding

    embedding = writer.reference(ScaledEmbedding)
    assert "return super(ScaledEmbedding, self).forward(ids) * 2.0" in writer.body()
    comprehension = "class A(B):\n    def f(self):\n        return [super().g() for _ in range(2)]\n"
    assert explicit_super(comprehension, "A") == (comprehension, False)
    assert explicit_super("class A(B):\n    @staticmethod\n    def f(x):\n        return super()\n", "A")[1] is False
    assert explicit_super("class A(B):\n    def f(this):\n        return super().g()\n", "A")[0].endswith(
        "return super(A, this).g()\n")
    import importlib.util

    (tmp_path / "written.py").write_text(writer.header() + writer.body())  # dy2static reads the source
    spec = importlib.util.spec_from_file_location("written", tmp_path / "written.py")
    written = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(written)
    layer = getattr(written, embedding)(4, 3)
    ids = paddle.to_tensor([[1, 2]])
    exported = paddle.jit.to_static(layer, input_spec=[paddle.static.InputSpec([1, 2], "int64")], full_graph=True)
    assert numpy.allclose(exported(ids).numpy(), layer.weight.numpy()[[1, 2]][None] * 2.0)
    # Not a literal, or bias_attr given beside it: as written (the older release then says so itself).
    for kept in ("nn.Conv2D(1, 1, 1, bias=flag)\n", "nn.Conv2D(1, 1, 1, bias=False, bias_attr=None)\n"):
        assert spelled_by_own_names(kept, {"nn": paddle.nn}) == (kept, set())


class _Config:
    """A suite's config as PaddleX's are: every attribute in ``to_dict``, one computed from another
    when not given (``head_dim`` from ``hidden`` and ``heads``)."""

    def __init__(self, hidden=64, heads=4, head_dim=None, dropout=0.0, name="net"):
        self.hidden, self.heads, self.dropout, self.name = hidden, heads, dropout, name
        self.head_dim = head_dim if head_dim is not None else hidden // heads

    def to_dict(self):
        return dict(vars(self))


def test_a_config_is_written_by_what_its_class_defaults_do_not_give():
    """PaddleX's PP-LCNet config was written with all 96 keys of its ``to_dict`` (twice, 100 KB of the
    build line): what the class's own defaults give is left out — when the class rebuilt from the rest
    gives the whole dict back. A key a default computes from another key is kept."""
    from harness.cell.handover.source_repro import _beyond_defaults

    assert _beyond_defaults(_Config, _Config(dropout=0.1).to_dict()) == {"dropout": 0.1}
    assert _beyond_defaults(_Config, _Config().to_dict()) == {}
    # hidden 128 computes head_dim 32: a value other than the default's 16, kept.
    assert _beyond_defaults(_Config, _Config(hidden=128).to_dict()) == {"hidden": 128, "head_dim": 32}
    # head_dim 16 given beside hidden 128 equals the default's 16, but rebuilt from {"hidden": 128} the
    # class would compute 32: the rebuilt dict is not the whole, so the whole is written.
    whole = _Config(hidden=128, head_dim=16).to_dict()
    assert _beyond_defaults(_Config, whole) == whole

    class _NeedsArguments(_Config):
        def __init__(self, hidden, **kwargs):
            super().__init__(hidden=hidden, **kwargs)

    assert _beyond_defaults(_NeedsArguments, _Config().to_dict()) == _Config().to_dict()  # no defaults to leave out


def test_an_import_of_paddle_some_releases_lack_is_guarded_and_raises_only_when_used():
    """PaddleFormers' Gemma 3 imports ``paddle.distributed.flex_checkpoint`` (3.3 only): as a plain
    import its standalone script stopped at every older release on the import. Guarded, a missing
    module or name binds a ``_LeftOut`` that raises the import's own words when used; Paddle's public
    namespaces stay plain imports."""
    import paddle
    import pytest

    from harness.cell.handover.guarded import split
    from harness.cell.handover.inline import LEFT_OUT

    plain, guarded = split(["import paddle", "import paddle.nn.functional as F", "from paddle import nn",
                            "import collections", "from paddle.nn.functional import no_such_op_anywhere",
                            "import paddle.no_such_module_anywhere as fc", "import paddle.no_such_module_anywhere",
                            "_m = importlib.import_module('paddle.no_such_module_anywhere')"])
    assert plain == ["import paddle", "import paddle.nn.functional as F", "from paddle import nn", "import collections"]
    assert len(guarded) == 4
    namespace: dict = {}
    exec("import importlib\nimport paddle\n" + LEFT_OUT + "".join(guarded), namespace)  # a release without them
    for name, words in (("no_such_op_anywhere", "cannot import name 'no_such_op_anywhere'"),
                        ("fc", "No module named 'paddle.no_such_module_anywhere'"), ("_m", "No module named")):
        with pytest.raises(RuntimeError, match=words):
            namespace[name]()  # used: the import's own words
    # Where the import works, the name is the module's own object.
    exec("".join(split(["from paddle.nn.functional import relu"])[1]), namespace)
    assert namespace["relu"] is paddle.nn.functional.relu
