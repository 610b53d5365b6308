"""The conversion launcher's answers (``runtimes/paddle2onnx/launcher.py``): a pid line and an exit-code
line sent back to back over a real socket are read as two lines — a conversion that ends at once had
both read as its pid, and the trial that asked was said untestable."""

import socket

from harness.runtimes.paddle2onnx.launcher import _read_line


def test_a_pid_and_an_exit_code_arriving_together_are_two_lines():
    asker, launcher = socket.socketpair()
    with asker, launcher:
        launcher.sendall(b"13746\n1\n")
        assert _read_line(asker) == "13746"
        assert _read_line(asker) == "1"
        launcher.close()
        try:
            _read_line(asker)
        except OSError as exc:
            assert "hung up" in str(exc)
        else:
            raise AssertionError("a closed launcher must be said, not read as an empty line")
