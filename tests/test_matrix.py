"""Matrix validation and expansion (host side), and the bad-input contract of the CLI."""

import json
import subprocess
import sys

import pytest

from harness import matrix
from harness.shared.errors import UserError
from harness.shared.spec import CellSpec

from .conftest import ROOT, one_line_error, run_harness


def test_default_matrix_expands_to_stable_cell_ids():
    m = matrix.load(ROOT / "matrix" / "default.toml")
    cells = m.expand("cpu_onednn_bf16", m.run["default_paddle"])
    ids = [c.id for c in cells]
    assert ids == [f"cpu_onednn_bf16/{m.run['default_paddle']}/normal/{name}" for name in m.run["models"]]
    assert cells[0].stages == ["baseline", "memory", "ir", "onednn_bf16"]
    assert cells[0].tolerances["bf16"] == {"atol": 1e-3, "rtol": 2e-2, "scaled_atol": 2e-2}
    # The typed spec is the JSON the cell side reads, both ways.
    assert CellSpec.from_dict(json.loads(json.dumps(cells[0].to_dict()))) == cells[0]
    with pytest.raises(ValueError, match="unknown keys"):
        CellSpec.from_dict(dict(cells[0].to_dict(), surprise=1))
    # The same input gives the same cells: ids are the resume keys.
    assert [c.id for c in matrix.load(ROOT / "matrix" / "default.toml").expand(
        "cpu_onednn_bf16", m.run["default_paddle"])] == ids


def test_every_declared_session_name_says_what_runs():
    m = matrix.load(ROOT / "matrix" / "default.toml")
    names = set(m.sessions)
    assert {"cpu_fp32", "cpu_onednn_fp32", "cpu_onednn_bf16", "gpu_fp32", "gpu_fp16",
            "gpu_trt_fp32", "gpu_trt_fp16", "gpu_trt_int8"} <= names
    assert m.session("gpu_trt_fp16").stages[-1] == "trt_fp16"
    assert m.session("cpu_fp32").stages[-1] == "cpu_fp32"


@pytest.mark.parametrize(
    "text, key",
    [
        ("[paddle\n", "not valid TOML"),
        ('[paddle."3.3.1"]\npython = "3.11"\npackages = ["paddlepaddle==3.3.1"]\n'
         '[sessions.cpu_fp32]\ndevice = "cpu"\nbackend = "native"\nprecision = "fp32"\n'
         '[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4\n[models.m]\nfactory = "no-colon"\n', "models.m.factory"),
        ('[paddle."3.3.1"]\npython = "3.11"\npackages = ["paddlepaddle==3.3.1"]\n'
         '[sessions.cpu_fast]\ndevice = "cpu"\nbackend = "native"\nprecision = "fp32"\n'
         '[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4\n[models.m]\nfactory = "a.b:c"\n', "call it 'cpu_fp32'"),
        ('[paddle."3.3.1"]\npython = "3.11"\npackages = ["paddlepaddle==3.3.1"]\n'
         '[sessions.cpu_fp32]\ndevice = "cpu"\nbackend = "native"\nprecision = "fp32"\n'
         '[tolerances.fp32]\natol = "tight"\nrtol = 1e-4\n[models.m]\nfactory = "a.b:c"\n', "tolerances.fp32.atol"),
        ('[paddle."3.3.1"]\npython = "3.11"\npackages = ["paddlepaddle==3.3.1"]\n'
         '[sessions.cpu_fp32]\ndevice = "cpu"\nbackend = "native"\nprecision = "fp32"\n'
         '[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4\nscaled_atol = -1\n[models.m]\nfactory = "a.b:c"\n',
         "tolerances.fp32.scaled_atol"),
        ('[paddle."3.3.1"]\npython = "3.11"\npackages = ["paddlepaddle==3.3.1"]\nflavour = 1\n'
         '[sessions.cpu_fp32]\ndevice = "cpu"\nbackend = "native"\nprecision = "fp32"\n'
         '[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4\n[models.m]\nfactory = "a.b:c"\n', 'paddle."3.3.1".flavour'),
        # The train modes a model's suite trains it in: known modes, each with where the suite does so.
        ('[paddle."3.3.1"]\npython = "3.11"\npackages = ["paddlepaddle==3.3.1"]\n'
         '[sessions.cpu_fp32]\ndevice = "cpu"\nbackend = "native"\nprecision = "fp32"\n'
         '[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4\n[models.m]\nfactory = "a.b:c"\nmodes.fp8 = "x.yaml"\n',
         "models.m.modes.fp8"),
        ('[paddle."3.3.1"]\npython = "3.11"\npackages = ["paddlepaddle==3.3.1"]\n'
         '[sessions.cpu_fp32]\ndevice = "cpu"\nbackend = "native"\nprecision = "fp32"\n'
         '[tolerances.fp32]\natol = 1e-4\nrtol = 1e-4\n[models.m]\nfactory = "a.b:c"\nmodes.qat = true\n',
         "models.m.modes.qat"),
    ],
)
def test_malformed_matrix_is_one_line_naming_the_key(tmp_path, text, key):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        matrix.load(path)
    assert key in str(err.value) and str(path) in str(err.value)
    line = one_line_error(run_harness("run", "--matrix", str(path), "--session", "cpu_fp32"))
    assert key in line


def test_unknown_session_mode_model_and_version_are_user_errors(write_matrix, tmp_path):
    path = write_matrix({"clean": "tests.factories:clean"})
    base = ["run", "--matrix", str(path), "--results", str(tmp_path / "r")]
    assert "unknown session 'cpu_fp64'" in one_line_error(run_harness(*base, "--session", "cpu_fp64"))
    assert "unknown model 'nope'" in one_line_error(run_harness(*base, "--session", "cpu_fp32", "--model", "nope"))
    assert "unknown train mode 'fp8'" in one_line_error(run_harness(*base, "--session", "cpu_fp32", "--mode", "fp8"))
    assert "'9.9.9' is not in [paddle]" in one_line_error(run_harness(*base, "--session", "cpu_fp32", "--paddle", "9.9.9"))
    assert "--session" in one_line_error(run_harness("run", "--sesion", "cpu_fp32"))


# The cell side runs inside a Paddle environment; every other module is host side or shared.


def _modules():
    from .test_house import _modules as modules  # read from the files: walking packages would import them

    return sorted(modules())


def test_host_side_never_imports_paddle():
    from .test_house import tier  # the house's own reading of which side a module is on

    host = [m for m in _modules() if tier(m) != "cell" and m != "harness.__main__"]
    assert "harness.running.runner" in host and "harness.report.tables" in host and "harness.shared.vocab" in host
    code = (
        "import importlib, sys; sys.modules['paddle'] = None\n"  # any import of paddle now raises
        f"for name in {host!r}: importlib.import_module(name)\n"
        "import harness.__main__\n"
        "import runpy; runpy.run_path('noxfile.py')\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_shared_tier_needs_only_the_standard_library_and_numpy():
    shared = [m for m in _modules() if m.startswith("harness.shared")]
    blocked = ["paddle", "tabulate", "openpyxl", "matplotlib", "jinja2", "docker", "nox"]
    code = (
        "import importlib, sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        f"for name in {shared!r}: importlib.import_module(name)\n"
        "print(len(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
