"""Both argument styles TIPC configs pass: ``--key=value`` / ``--key value`` / ``--flag`` (the
models repo's Step6 scripts) and ``-c file -o Section.key=value`` (PaddleClas, PaddleOCR)."""

import sys


def parse(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    options = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "-o" and i + 1 < len(argv):
            key, _, value = argv[i + 1].partition("=")
            options[key] = value
            i += 2
        elif word == "-c" and i + 1 < len(argv):
            options["config"] = argv[i + 1]
            i += 2
        elif word.startswith("--"):
            key, eq, value = word[2:].partition("=")
            if not eq and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                value, i = argv[i + 1], i + 1
            options[key.replace("-", "_")] = value if (eq or value) else "True"
            i += 1
        else:
            raise SystemExit(f"unexpected argument {word!r}")
    return options


def get(options, *names, default=None):
    for name in names:
        if options.get(name) not in (None, ""):
            return options[name]
    return default


def truthy(value):
    return str(value).lower() in ("true", "1", "yes")
