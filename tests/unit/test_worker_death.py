"""A cell's worker that Paddle's fatal-signal handler reported on is recorded with Paddle's innermost
C++ frame (``launch.Outcome.describe``): UVDoc's lite training at 3.3.1, as its worker log ended."""

from __future__ import annotations

import signal

from harness.launch import Outcome

REPORT = """--------------------------------------
C++ Traceback (most recent call last):
--------------------------------------
0   egr::Backward(std::vector<paddle::Tensor, std::allocator<paddle::Tensor> > const&, bool, std::string)
2   GridSampleGradNode::operator()(paddle::small_vector<std::vector<paddle::Tensor> >, 15u>&, bool, bool)
4   void phi::GridSampleGradKernel<float, phi::CPUContext>(phi::CPUContext const&, phi::DenseTensor const&)
5   phi::DenseTensor::Resize(common::DDim const&)
----------------------
Error Message Summary:
----------------------
FatalError: `Segmentation fault` is detected by the operating system.
  [SignalInfo: *** SIGSEGV (@0x60) received by PID 8647 (TID 0x7fb93882cb80) from PID 96 ***]
"""


def test_a_worker_paddle_reported_on_is_said_with_its_innermost_frame(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("training...\n" + REPORT)
    said = Outcome(-signal.SIGSEGV, log=log).describe()
    assert said["status"].value == "crash"
    assert said["message"] == "worker died with SIGSEGV in phi::DenseTensor::Resize", said["message"]


def test_a_worker_killed_without_a_report_says_the_signal_alone(tmp_path):
    log = tmp_path / "worker.log"
    log.write_text("training...\n")
    assert Outcome(-signal.SIGKILL, log=log).describe()["message"] == "worker died with SIGKILL"
