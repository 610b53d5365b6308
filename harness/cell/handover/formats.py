"""A stage's runtime calls for either program format the running Paddle may write: a source
reproducer exports with the Paddle that runs it (.json on 3.x, .pdmodel on 2.6), so it carries the
stage's calls for both, the lines they share written once."""

from __future__ import annotations

from typing import Dict, List, Optional

from ...shared.releases import NOT_RUNNABLE


def by_format(lines: Dict[str, Optional[str]], stage: str) -> str:
    """The runtime's lines for the program the running Paddle wrote (PIR or legacy), shared lines written once."""
    pir, legacy = lines.get("pir"), lines.get("legacy")
    if pir == legacy and pir is not None:
        return pir
    missing = "sys.exit({!r})\n"
    a = (pir or missing.format(f"{NOT_RUNNABLE} the stage {stage} does not exist for a PIR program")).splitlines()
    b = (legacy or missing.format(f"{NOT_RUNNABLE} the stage {stage} does not exist for a legacy program")).splitlines()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    before, after = a[:head], a[len(a) - tail:]
    only_a, only_b = a[head:len(a) - tail], b[head:len(b) - tail]
    def indented(block: List[str]) -> List[str]:
        return [f"    {ln}" if ln else "" for ln in block]

    if only_a and only_b:
        middle = ['if model_file.endswith(".json"):  # a PIR program: the stage as planned for PIR', *indented(only_a),
                  "else:  # a legacy program (.pdmodel)", *indented(only_b)]
    elif only_a:
        middle = ['if model_file.endswith(".json"):  # a PIR program: its own calls', *indented(only_a)]
    else:
        middle = ['if not model_file.endswith(".json"):  # a legacy program (.pdmodel): its own calls',
                  *indented(only_b)]
    return "\n".join([*before, *middle, *after]) + "\n"


__all__ = ["by_format"]
