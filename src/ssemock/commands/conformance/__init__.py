"""``ssemock conformance``: a public scoreboard of SSE clients. Every case of the corpus
(`cases`) under every chunking and transform of the registry, served over real sockets by
`ssemock serve`'s app, against clients that each run a test service speaking LaunchDarkly's SSE
contract-test protocol (`harness`); a results file per run (`run`) and the docs page made from
it (`page.render`)."""

from __future__ import annotations

import json
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ...core import __version__
from ...core.packages import fresh
from ..loopback import running
from .cases import AMBIGUITIES, GROUPS, Scored, corpus
from .harness import Entry, started
from .hub import Hub
from .runner import SHAPES, CaseResult, ShapeResult, cassette_of, score, variants

__all__ = ["Entry", "Scored", "clients_file", "corpus", "run"]


def clients_file(path: Path) -> list[Entry]:
    """The clients a TOML file lists (``[[client]]`` tables); ValueError names the file and entry."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the clients file: {exc}") from exc
    tables = raw.get("client")
    if not isinstance(tables, list) or not tables:
        raise ValueError(f"{path}: no [[client]] table: list each client to score as one")
    return [Entry.of(t, f"{path} [[client]] {k + 1}") for k, t in enumerate(tables) if isinstance(t, dict)]


def run(
    entries: Sequence[Entry],
    root: Path,
    out: Path,
    *,
    only: Sequence[str] = (),
    groups: Sequence[str] = (),
    progress: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Score every entry; write ``out/results.json``, each case's cassette in ``out/cases``
    (what the reproducers serve) and what each test service printed in ``out/logs``; the results. ``only``: case names; ``groups``: group names."""
    cases = [c for c in corpus() if (not only or c.name in only) and (not groups or c.group in groups)]
    (out / "cases").mkdir(parents=True, exist_ok=True)
    (out / "logs").mkdir(exist_ok=True)
    for case in cases:
        cassette_of(case).save(out / "cases" / f"{case.name}.json")
    hub = Hub()
    began = time.monotonic()
    clients: list[dict[str, Any]] = []
    with running(hub) as base:
        for entry in entries:
            t0 = time.monotonic()
            try:
                with started(entry, root, out / "logs" / f"{entry.name}.log") as service:
                    parallel = service.status.get("parallel", 6)
                    workers = parallel if isinstance(parallel, int) and parallel > 0 else 6
                    results, shapes = score(hub, base, service, cases, workers=workers, progress=progress)
                    status = service.status
            except RuntimeError as exc:  # its service never answered: said, and the others still run
                progress(str(exc))
                clients.append({"name": entry.name, "language": entry.language, "error": str(exc)})
                continue
            seconds = time.monotonic() - t0
            progress(
                f"{entry.name}: {sum(not r.failed for r in results)}/{len(results)} cases pass, "
                f"{sum(not s.failed for s in shapes)}/{len(shapes)} transforms ({seconds:.1f} s)"
            )
            clients.append(_client(entry, status, results, shapes, out, seconds))
    results_doc = {
        "ssemock": __version__,
        "seconds": round(time.monotonic() - began, 1),
        "groups": GROUPS,
        "shapes": SHAPES,
        "ambiguities": AMBIGUITIES,
        "cases": [
            {"name": c.name, "group": c.group, "note": c.note, "variants": [v.name for v in variants(c)]}
            for c in cases
        ],
        "clients": clients,
    }
    (out / "results.json").write_text(
        json.dumps(results_doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return results_doc


def _client(
    entry: Entry,
    status: dict[str, Any],
    results: list[CaseResult],
    shapes: list[ShapeResult],
    out: Path,
    seconds: float,
) -> dict[str, Any]:
    failed = [
        {
            "case": r.case.name,
            "group": r.case.group,
            "variants": r.failed,
            "why": r.why,
            "cut": r.cut,
            "explanation": r.explanation,
            "reproducer": _reproducer(entry, r.case, r.cut, "", out),
        }
        for r in results
        if r.failed
    ]
    by_name = {r.case.name: r.case for r in results}
    transforms = [
        {
            "transform": s.transform,
            "ran": s.ran,
            "failed": s.failed,
            "why": s.why,
            "cut": s.cut,
            "explanation": s.explanation,
            "reproducer": _reproducer(entry, by_name[s.failed[0]], s.cut, s.transform, out)
            if s.failed
            else "",
        }
        for s in shapes
    ]
    return {
        "name": entry.name,
        "language": entry.language,
        "version": str(status.get("version", "?")),
        "capabilities": sorted(c for c in status.get("capabilities", []) if isinstance(c, str)),
        "seconds": round(seconds, 1),
        "ran": {g: sorted(r.case.name for r in results if r.case.group == g) for g in GROUPS},
        "streams": sum(len(variants(r.case)) for r in results),
        "own_ids": sorted(r.case.name for r in results if r.own_ids),
        "reports_ids": any(r.ids_seen for r in results),
        "failed": failed,
        "transforms": transforms,
    }


def _reproducer(entry: Entry, case: Scored, cut: str | None, transform: str, out: Path) -> str:
    parts = [f"ssemock serve {out.as_posix()}/cases/{case.name}.json --chunking {cut}"]
    if transform:
        parts.append(f"--transform {transform}")
    if case.faults:
        parts.append(f"--faults {case.faults}")
    parts.append("--cors '*' --port 8000 &")
    call = entry.call.replace("{url}", f"http://127.0.0.1:8000/{case.name}") or "(your client)"
    return " ".join(parts) + " " + call


fresh(__name__)
