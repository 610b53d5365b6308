"""A package read through its submodule (``colors.codes.parse``), as colorlog's formatter reads
``colorlog.escape_codes``."""

from . import codes  # noqa: F401
