"""What a suite's model class reaches only from methods its forward never calls: a download helper
whose module state has no source form (a socket), as a hub client's does."""

import socket

CONNECTION = socket.socket  # a class from the standard library: fine; the session below is not
SESSION = object.__new__(type("Session", (), {}))  # an instance with no source form


def download(name):
    return SESSION, CONNECTION, name
