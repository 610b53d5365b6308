from . import logging

_UNSET = "api-unset"


class HTTPError(Exception):
    pass


def call(x, default=_UNSET):
    said = logging.note("call")
    try:
        raise HTTPError(said)
    except HTTPError as error:
        return default, str(error)
