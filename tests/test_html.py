"""The HTML report opened in a real browser (headless Chromium): what a person sees, checked from
the rendered DOM, with a screenshot kept for people to look at."""

from __future__ import annotations

import json
import re
import shutil


from .conftest import chromium, matrix_text, needs_chromium, run_harness

pytestmark = needs_chromium




def test_the_report_shows_verdicts_causes_and_escapes_hostile_messages(tmp_path, paddle_version):
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(matrix_text(paddle_version, {"clean": "tests.factories:clean", "hostile": "tests.factories:hostile",
                                                   "broken": "tests.factories:truncated_params"}))
    results = tmp_path / "r"
    run_harness("run", "--matrix", str(matrix), "--session", "cpu_fp32", "--results", str(results))
    proc = run_harness("report", "--results", str(results))
    assert proc.returncode == 0, proc.stderr
    page = results / "default" / "report.html"
    source = page.read_text()
    assert "http://" not in source.replace("http://www.w3.org", "") and "https://" not in source.split("<body>")[0]
    dom = chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # The hostile message is text on the page, never markup: no script ran, no element was made.
    assert "<title>Qualification report · run default</title>" in html
    assert "pwned" in html and "<script" not in html and "<img src=\"x\"" not in html
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in html
    # The matrix at a glance: one verdict per cell, coloured by its class.
    cells = {model: status for status, model in re.findall(r'<td class="v (\w+)" data-cell="[^"]*/(\w+)"', html)}
    assert cells == {"clean": "pass", "hostile": "error", "broken": "error"}
    # The truncated export's stages share one cause: one line, three stage results, one cell.
    assert re.search(r"<b>error ×3</b> in 1 cell\(s\)", html)
    # The machine, once: the CPU and the ISA oneDNN chose, from the records.
    record = json.loads(next((results / "default").rglob("clean.json")).read_text())
    machines = re.findall(r'<p class="machine" data-machine="(\w+)"><b>Machine:</b> ([^<]*)', html)
    assert [m[0] for m in machines] == [record["machine"]["key"]]
    assert f"isa {record['machine']['onednn']['isa']}" in machines[0][1] and record["machine"]["cpu"] in machines[0][1]
    shot = tmp_path / "report.png"
    screenshot = chromium(f"--screenshot={shot}", "--window-size=1400,900", page.as_uri())
    assert screenshot.returncode == 0 and shot.stat().st_size > 10_000
    keep = results.parent / "report-screenshot.png"
    shutil.copy(shot, keep)
