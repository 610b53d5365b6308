"""User-facing errors: one line, exit code 2, no traceback."""


class UserError(Exception):
    """Bad input from the user (matrix file, argument, model factory...).

    The message must name the file, key or argument and say what to do.
    """

    exit_code = 2
