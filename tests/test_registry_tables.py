"""The docs' protocol and fault tables are generated from the registries (docs/hooks/registry_tables.py,
issue 44 item 5): every registered protocol and every fault is a row, each row says what the
registry says (a protocol's error bytes, a fault's parameters), and the pages hold the markers the
hook replaces, so a new member shows up without editing a page."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest

from ssemock import faults, protocols
from ssemock.protocols.base import StreamError
from ssemock.variants.websocket import faults as ws_faults

DOCS = Path(__file__).parents[1] / "docs"


@pytest.fixture(scope="module")
def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "registry_tables_hook", DOCS / "hooks" / "registry_tables.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(table: str) -> list[list[str]]:
    return [line.split(" | ") for line in table.splitlines() if line.startswith("| `")]


def test_every_registered_protocol_is_a_row_with_its_own_error_bytes(hook: ModuleType) -> None:
    rows = _rows(hook.render_protocols())
    assert [row[0].strip("| `") for row in rows] == list(protocols.names())
    for p, row in zip(protocols.all_protocols(), rows):
        error = p.error_event(StreamError("server_error", "Overloaded.", framing=p.framing))
        if any(b < 9 or 13 < b < 32 for b in error):  # an eventstream frame
            assert f"{len(error)} binary bytes" in row[5]
        else:
            assert error.decode().strip()[:40].replace("\n", "\\n").replace("|", "\\|") in row[5]
        assert ("lanes (`stream_id`)" in row[4]) == (p.lanes is not None)
        assert row[4].startswith("yes") == (p.responses is not None)


def test_every_fault_is_a_row_with_the_parameters_its_factory_takes(hook: ModuleType) -> None:
    for table, registry in ((hook.render_faults(), faults), (hook.render_ws_faults(), ws_faults)):
        rows = _rows(table)
        assert [row[0].strip("| `").split(":")[0] for row in rows] == [*registry.factories(), "sequence"]
        for (name, factory), row in zip(registry.factories().items(), rows):
            for param in inspect.signature(factory).parameters:
                assert f"{param}=" in row[0], (name, param)
    ws_rows = {row[0].strip("| `").split(":")[0]: row[0] for row in _rows(hook.render_ws_faults())}
    assert (
        "lane=" in ws_rows["drop"] and "lane=" in ws_rows["error_event"] and "lane=" not in ws_rows["close"]
    )


def test_the_pages_hold_the_markers_and_no_hand_written_copy(hook: ModuleType) -> None:
    protocols_page = (DOCS / "guide" / "protocols.md").read_text()
    faults_page = (DOCS / "guide" / "faults.md").read_text()
    assert hook.PROTOCOLS in protocols_page
    assert hook.FAULTS in faults_page and hook.WS_FAULTS in faults_page
    assert "| protocol | endpoint |" not in protocols_page and "| name | Python |" not in faults_page
    assert "docs/hooks/registry_tables.py" in (DOCS.parent / "mkdocs.yml").read_text()
