"""Report generation time and HTML size for a run (target: under 2 s and under 5 MB for >= 60 cells).

``python -m harness.bench.report --results results --run default``: loads the records once and
renders the markdown, JUnit and HTML, timing each, median of 3.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.report")
    parser.add_argument("--results", type=Path, default=Path("results"))
    parser.add_argument("--run", default="default")
    args = parser.parse_args(argv)
    from harness.report import html, junit
    from harness.report.model import RunModel
    from harness.report.tables import markdown_report

    folder = args.results / args.run
    timings = {"load": [], "markdown": [], "junit": [], "html": []}
    size = 0
    for _ in range(3):
        t = time.perf_counter()
        model = RunModel.load(folder)
        timings["load"].append(time.perf_counter() - t)
        t = time.perf_counter()
        markdown_report(model, "bench")
        timings["markdown"].append(time.perf_counter() - t)
        t = time.perf_counter()
        junit.junit_xml(model)
        timings["junit"].append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            page = html.write(Path(tmp) / "report.html", model, "bench")
            timings["html"].append(time.perf_counter() - t)
            size = page.stat().st_size
    if not model.records:
        print(f"no records under {folder}; run sessions first (e.g. nox -t cpu)")
        return 0
    total = sum(statistics.median(v) for v in timings.values())
    print(f"{len(model.records)} cells: " + ", ".join(f"{k} {statistics.median(v):.2f} s" for k, v in timings.items())
          + f"; total {total:.2f} s (target < 2 s); HTML {size / 2**20:.2f} MB (target < 5 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
