"""As requests' exceptions module: the other package's ``HTTPError`` imported under another name,
its own ``HTTPError`` beside it, and a class deriving from both sides."""

from .web import HTTPError as BaseHTTPError


class RequestException(IOError):
    pass


class HTTPError(RequestException):
    pass


class ContentDecodingError(RequestException, BaseHTTPError):
    pass
