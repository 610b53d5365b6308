"""A suite that starts a thread when imported (a monitor, a pool): a process forked after importing
it would not have that thread, so the fork server must not preload it."""

import threading
import time

import paddle.nn as nn

threading.Thread(target=lambda: time.sleep(3600), daemon=True, name="suite-monitor").start()


class ThreadedNet(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3 * 16 * 16, 4)

    def forward(self, image):
        return self.fc(image.flatten(1))
