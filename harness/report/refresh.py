"""What shows a run's findings, written again after a command changed them (host side).

``releases`` writes each cause's release span into its records and ``workarounds`` writes the
workaround files; a draft or a report written before says "seen at 3.3.1 (no other version ran this
cell)" until it is made again. ``refresh`` makes them again from the records as they now are: every
issue draft, and each of the run's reports that exists (``report.md``, ``report.html``,
``report.xml``, the per-session summaries) — a report nobody asked for is not written."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, List

from ..shared.runfolder import RunFolder
from . import drafts
from .model import RunModel


def refresh(results: Path, say: Callable[[str], object] = print) -> List[Path]:
    model = RunModel.load(results)
    written = drafts.write_all(model)
    folder = RunFolder(results)
    title = f"Qualification report · run {results.name}"
    from .tables import write_markdown

    if folder.report("md").is_file():
        written.append(write_markdown(folder.report("md"), model, title))
    if folder.report("html").is_file():
        from . import html

        written.append(html.write(folder.report("html"), model, title))
    if folder.report("xml").is_file():
        from . import junit

        written.append(junit.write(folder.report("xml"), model))
    for (session, version), records in model.by_session().items():
        summary = folder.summary(session, version)
        if summary.is_file():
            probes = [p for p in model.hazard_probes if p.paddle == version]
            written.append(write_markdown(summary, RunModel(records, probes), f"{session} · Paddle {version}"))
    say(f"rewritten from the records: {len(written)} file(s) that show the findings (drafts and reports)")
    return written


__all__ = ["refresh"]
