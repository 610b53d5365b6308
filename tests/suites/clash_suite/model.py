import paddle.nn as nn

from .api import HTTPError, call
from .web import HTTPError as WebError
from .web import fetch


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        try:
            fetch(x)
            caught = "none"
        except WebError:
            caught = "web"
        except HTTPError:
            caught = "api"
        self.said = (caught, *call(x))
        return self.fc(x)
