"""A suite module named as the standard library's."""


def note(message):
    return "suite:" + message
