"""A suite that is slow to import, as the Paddle suites are (paddlenlp 41 s, ppdet 32 s): every
import appends this process's pid to the file ``$SLOW_SUITE_IMPORTS`` names, so a test counts the
processes that paid it."""

import os
import time

time.sleep(1.0)
_LOG = os.environ.get("SLOW_SUITE_IMPORTS")
if _LOG:
    with open(_LOG, "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")

import paddle.nn as nn  # noqa: E402


class SuiteNet(nn.Layer):
    def __init__(self, width: int):
        super().__init__()
        self.conv = nn.Conv2D(3, width, 3, padding=1)
        self.fc = nn.Linear(width, 4)

    def forward(self, image):
        return self.fc(self.conv(image).mean(axis=[2, 3]))
