"""ssemock conformance, the SSE client scoreboard: the runner against two clients of ssemock's
own, each a LaunchDarkly-protocol test service in this process (the reference decoder: every
case green; one that decodes UTF-8 chunk by chunk: red exactly where a boundary splits a
character, shrunk to that one boundary), the docs page made from the committed run, and the
clients file's errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

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


def _score(client: object, tmp_path: Path, capabilities: tuple[str, ...] = ()) -> dict:
    with serving(client, name="mine", version="1", capabilities=capabilities) as url:  # type: ignore[arg-type]
        return run([Entry("mine", "Python", "read('{url}')", url=url)], ROOT, tmp_path, only=CASES)


def test_the_reference_decoder_is_green_in_every_group(tmp_path: Path) -> None:
    results = _score(reference, tmp_path, ("reconnect",))
    (client,) = results["clients"]
    assert client["failed"] == []
    assert {g for g, ran in client["ran"].items() if ran} == {"spec", "whatwg", "bugs", "reconnect"}
    assert client["streams"] == sum(len(c["variants"]) for c in results["cases"])
    assert client["own_ids"] == [] and client["reports_ids"]
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
    # every variant but the whole body in one chunk splits a character
    assert utf8["variants"] == [v for v in ran if v != "coalesced"]
    # the first, mid_line, cuts at bytes 10 and 20: shrunk to 10, inside '…' (bytes 8..11)
    assert utf8["cut"] == "at:10"
    assert "inside '…' (U+2026, a 3-byte character, after its byte 2)" in utf8["explanation"]
    assert failed["multibyte_utf8"]["cut"] == "at:13"  # inside '世', as_recorded's first cut
    assert utf8["reproducer"].startswith(
        f"ssemock serve {tmp_path.as_posix()}/cases/wpt_format_utf8.json --chunking at:10 --cors '*' --port 8000 &"
    )
    assert utf8["reproducer"].endswith("read('http://127.0.0.1:8000/wpt_format_utf8')")
    page = render(results)
    whatwg = sum(len(c["variants"]) for c in results["cases"] if c["group"] == "whatwg")
    assert f"🔴 [1/2](#mine-wpt-format-utf8) ({len(utf8['variants'])}/{whatwg} runs fail)" in page
    assert '<a id="mine-multibyte-utf8"></a>' in page


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
