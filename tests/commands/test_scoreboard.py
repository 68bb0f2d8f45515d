"""ssemock conformance, the SSE client scoreboard: the runner against clients of ssemock's own,
each a LaunchDarkly-protocol test service in this process (the reference decoder: every case and
shape green; one that decodes UTF-8 chunk by chunk: red exactly where a boundary splits a
character, shrunk to that one boundary; one that dispatches data-less blocks: red in that shape's
column and the case that has one, green elsewhere), the docs page made from the committed run,
and the clients file's errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ssemock.commands.cli import main
from ssemock.commands.conformance import Entry, clients_file, corpus, run
from ssemock.commands.conformance.page import render
from ssemock.commands.conformance.service import Event, Opened, loopback, reference, serving
from ssemock.framing.sse import Decoder

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "conformance" / "run"
# a case of each group but the providers' (their streams are long: the full run scores them)
CASES = [
    "whatwg_stock_ticker",
    "wpt_format_utf8",
    "multibyte_utf8",
    "crlf_split",
    "event_without_data",
    "reconnect_id_persists",
]


def per_chunk_utf8(opened: Opened) -> Iterator[Event]:
    """A broken client: each chunk read decoded from UTF-8 on its own (a character split by a
    chunk boundary becomes U+FFFD), the rest the reference's."""
    decoder = Decoder()
    with loopback().stream("GET", opened.url, headers=opened.headers) as answer:
        for chunk in answer.iter_raw():
            for ev in decoder.feed(chunk.decode("utf-8", "replace").encode()):
                yield Event(ev.event, ev.data, ev.id)


def dispatches_dataless_blocks(opened: Opened) -> Iterator[Event]:
    """A broken client: the whole body read, then parsed as the specification says except that a
    block with any field but no data (``event:``, ``id:`` or ``retry:`` alone) is dispatched
    with empty data (openai-python's decoder's rule); comment-only blocks dispatch nothing."""
    text = loopback().get(opened.url, headers=opened.headers).content.decode("utf-8", "replace")
    kind, last_id, fields = "", "", False
    data: list[str] = []
    for line in re.split(r"\r\n|\r|\n", text.removeprefix("\ufeff"))[:-1]:
        if not line:
            if fields:
                yield Event(kind or "message", "\n".join(data), last_id)
            kind, data, fields = "", [], False
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        fields = fields or name in ("event", "data", "id", "retry")
        if name == "event":
            kind = value
        elif name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            last_id = value


def _score(
    client: object, tmp_path: Path, capabilities: tuple[str, ...] = (), cases: list[str] = CASES
) -> dict[str, Any]:
    with serving(client, name="mine", version="1", capabilities=capabilities) as url:  # type: ignore[arg-type]
        return run([Entry("mine", "Python", "read('{url}')", url=url)], ROOT, tmp_path, only=cases)


def test_the_reference_decoder_is_green_in_every_group(tmp_path: Path) -> None:
    results = _score(reference, tmp_path, ("reconnect",))
    (client,) = results["clients"]
    assert client["failed"] == []
    assert {g for g, ran in client["ran"].items() if ran} == {"spec", "whatwg", "bugs", "reconnect"}
    assert client["streams"] == sum(len(c["variants"]) for c in results["cases"])
    assert client["own_ids"] == [] and client["reports_ids"]
    # every transform ran on the cases it applies to, and broke none
    assert client["transforms"] and all(t["ran"] and not t["failed"] for t in client["transforms"])
    # the reproducers' cassettes are written: one per case
    assert sorted(p.stem for p in (tmp_path / "cases").iterdir()) == sorted(CASES)


def test_a_per_chunk_utf8_decoder_is_red_where_a_boundary_splits_a_character(tmp_path: Path) -> None:
    results = _score(per_chunk_utf8, tmp_path)
    (client,) = results["clients"]
    failed = {f["case"]: f for f in client["failed"]}
    assert sorted(failed) == ["multibyte_utf8", "wpt_format_utf8"]
    assert client["ran"]["reconnect"] == []  # it does not reconnect: the group is not scored
    utf8 = failed["wpt_format_utf8"]
    ran = next(c["variants"] for c in results["cases"] if c["name"] == "wpt_format_utf8")
    # every chunking but the whole body in one chunk splits a character (the transforms run under
    # fixed:3, which fails untransformed: they are not scored for this case)
    assert utf8["variants"] == [v for v in ran if v != "coalesced" and "+" not in v]
    assert not any("wpt_format_utf8" in t["ran"] for t in client["transforms"])
    # the first, mid_line, cuts at bytes 10 and 20: shrunk to 10, inside '…' (bytes 8..11)
    assert utf8["cut"] == "at:10"
    assert "inside '…' (U+2026, a 3-byte character, after its byte 2)" in utf8["explanation"]
    assert failed["multibyte_utf8"]["cut"] == "at:13"  # inside '世', as_recorded's first cut
    assert utf8["reproducer"].startswith(
        f"ssemock serve {tmp_path.as_posix()}/cases/wpt_format_utf8.json --chunking at:10 --cors '*' --port 8000 &"
    )
    assert utf8["reproducer"].endswith("read('http://127.0.0.1:8000/wpt_format_utf8')")
    page = render(results)
    whatwg = sum(sum("+" not in v for v in c["variants"]) for c in results["cases"] if c["group"] == "whatwg")
    assert f"🔴 [1/2](#mine-wpt-format-utf8) ({len(utf8['variants'])}/{whatwg} runs fail)" in page
    assert '<a id="mine-multibyte-utf8"></a>' in page


def test_a_client_that_dispatches_data_less_blocks_is_red_in_that_shape_alone(tmp_path: Path) -> None:
    results = _score(dispatches_dataless_blocks, tmp_path, cases=["crlf_split", "event_without_data"])
    (client,) = results["clients"]
    # the case made of a data-less block is red under every chunking; the other is green
    assert [(f["case"], f["cut"]) for f in client["failed"]] == [("event_without_data", "coalesced")]
    broken = {t["transform"]: t for t in client["transforms"] if t["failed"]}
    # the transforms adding event-only, id-only and retry-only blocks break it, on the case it
    # decodes untransformed; comment-only blocks, line endings and the rest do not
    assert sorted(broken) == ["meta", "retry"]
    assert broken["meta"]["failed"] == broken["meta"]["ran"] == ["crlf_split"]
    assert broken["meta"]["cut"] == "coalesced"
    assert "--chunking coalesced --transform meta" in broken["meta"]["reproducer"]
    assert {t["transform"] for t in client["transforms"]} >= {"keepalive", "comments", "crlf", "cr", "pad"}
    page = render(results)
    row = next(line for line in page.splitlines() if line.startswith(("| mine | 🔴", "| mine | 🟢")))
    cells = dict(zip(list(dict.fromkeys(results["shapes"].values())), row.split(" | ")[1:]))
    assert cells["data-less blocks"].startswith("🔴 [0/2](#mine-meta)")
    assert all(
        cell.startswith(("🟢", "n/a")) for column, cell in cells.items() if column != "data-less blocks"
    )
    assert '<a id="mine-meta"></a>' in page


def test_the_docs_page_is_the_committed_run_rendered() -> None:
    results = json.loads((RUN / "results.json").read_text(encoding="utf-8"))
    page = (ROOT / "docs" / "guide" / "scoreboard.md").read_text(encoding="utf-8")
    assert page == render(results) + "\n"
    assert len(results["clients"]) >= 12 and not any("error" in c for c in results["clients"])
    assert {c["name"] for c in results["cases"]} == {c.name for c in corpus()}


def test_render_only_writes_the_page_from_a_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    assert main(["conformance", "--render-only", "--out", str(RUN), "--page", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == (ROOT / "docs" / "guide" / "scoreboard.md").read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "no [[client]] table"),
        ('[[client]]\nlanguage = "Go"\ncommand = "x"\n', "a [[client]] has no 'name'"),
        ('[[client]]\nname = "x"\n', "client 'x' has neither 'command'"),
        ('[[client]]\nname = "x"\nurl = 5\n', "client 'x': 'url' must be a string"),
        ("[[client]\n", "cannot read the clients file"),
    ],
)
def test_a_bad_clients_file_is_named_with_what_to_fix(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "clients.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=str(path)) as caught:
        clients_file(path)
    assert said in str(caught.value)
