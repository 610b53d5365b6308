"""Tables a suite module computes when imported, from what is installed (as PaddleX's ``deps`` reads
its own package metadata)."""

import collections
import importlib.metadata


def _specs():
    found = collections.defaultdict(list)
    for dist in ("numpy",):
        found[dist].append(f"{dist}=={importlib.metadata.version(dist)}")
    return found


SPECS = _specs()
ORDER = collections.OrderedDict([("b", 1), ("a", 2)])
NAMES = {"base", "all"}
