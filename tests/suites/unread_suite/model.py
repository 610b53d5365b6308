from os import environ

import paddle.nn as nn

from . import colors
from .hub import download


class Base(nn.Layer):
    """A template method: the base's forward calls what its subclass defines."""

    def forward(self, x):
        return self.head(self.body(x))

    def body(self, x):
        return self.fc(x)

    @classmethod
    def from_pretrained(cls, name):
        return download(name)


class Net(Base):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def head(self, y):
        return self.scale(y)

    def scale(self, y):
        return y * colors.codes.parse("double")

    def save_pretrained(self, where):
        return download(where)

    @property
    def hub_name(self):
        return download("net")


class Lonely(nn.Layer):
    """Every method unread but forward: the class body keeps its own statements."""

    size = 4

    def forward(self, x):
        # An object imported from the standard library with no source form (as Paddle 3.3's
        # ``from paddle import tensor`` is a ``_TensorMethodOrModule``): imported so.
        return x if environ is not None else None

    def export_card(self):
        return download("card")


class Aliased(nn.Layer):
    """A method bound by a class-level statement, by its bare name."""

    def _doubled(self, x):
        return x * 2.0

    forward = _doubled
