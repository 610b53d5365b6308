import logging

_UNSET = object()


class HTTPError(Exception):
    pass


def fetch(x, default=_UNSET):
    logging.getLogger("web").debug("fetch")
    if default is _UNSET:
        raise HTTPError("web")
    return default
