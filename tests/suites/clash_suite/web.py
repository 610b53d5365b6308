import logging

_UNSET = object()


class HTTPError(Exception):
    pass


def fetch(x, default=_UNSET):
    logging.getLogger("web").debug("fetch")
    unset = (lambda value: value is _UNSET)(default)  # a lambda reading the renamed sentinel
    if unset:
        raise HTTPError("web")
    return default
