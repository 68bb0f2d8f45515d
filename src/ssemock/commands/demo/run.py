"""The demo itself: record one request through the openai SDK, replay the cassette with the
network blocked under every chunking through three clients, print the table and the conclusion,
and, asked, explore the streams a network can deliver for the naive decoder's smallest failure."""

from __future__ import annotations

import copy
import shlex
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import openai
from rich import box
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from ...player.explore import Failure
from ...player.explore import explore as explore_search
from ...player.replay import Player, replay, use_cassette
from ...store.cassette import Cassette, Interaction
from ...variants import chunking as _chunking
from ..loopback import running
from ..rechunk import rechunk
from .clients import Outcome, _openai_client, _via_httpx_sse, _via_naive, _via_openai
from .results import ChunkingResult, DemoResult
from .stream import APP, CASSETTE_NAME
from .websocket import print_websocket_rows


def _say(console: Console, text: str, **options: Any) -> None:
    """Print a sentence: wrapped to the width of a terminal, never broken into lines in a pipe."""
    console.print(text, soft_wrap=not console.is_terminal, **options)


def _record(directory: Path, console: Console) -> tuple[Path, str, Outcome, Interaction, float, float]:
    path = directory / CASSETTE_NAME
    with running(APP) as base_url:
        _say(
            console,
            f"[bold]1. Recording[/] a live stream from the loopback server {base_url} "
            'through the real [cyan]openai[/] SDK (httpx2), record_mode="once"',
        )
        first: list[float] = []
        with _openai_client(base_url) as client:
            t0 = time.perf_counter()
            with use_cassette(path, record_mode="once") as player:
                live = _via_openai(client, first)
            stream_s = time.perf_counter() - t0
    if not player.cassette.interactions:
        raise RuntimeError(f"the demo recorded nothing into {path}")
    return path, base_url, live, player.cassette.interactions[-1], first[0] if first else 0.0, stream_s


def _replay_row(
    cassette: Cassette,
    chunking: _chunking.Chunking,
    sdk_client: openai.OpenAI,
    http: httpx.Client,
    url: str,
    body: bytes,
    live: Outcome,
) -> ChunkingResult:
    with replay(cassette, chunking=chunking, allow_playback_repeats=True) as player:
        sdk = _via_openai(sdk_client)
        sse, events = _via_httpx_sse(http, url, body)
        naive = _via_naive(http, url, body)
    play = player.plays[0]
    if naive.error is not None:
        naive_got = naive.error.split(":", 1)[0]
    else:
        naive_got = f"{naive.chunks}/{live.chunks} chunks"
    return ChunkingResult(
        chunking=chunking.name,
        chunks=len(play.ends),
        bytes=len(play.body),
        events=events,
        openai_text_ok=sdk.error is None and sdk.text == live.text,
        openai_tool_args_ok=sdk.error is None and sdk.tool_calls == live.tool_calls,
        httpx_sse_ok=sse.same_as(live),
        naive_ok=naive.same_as(live),
        naive_got=naive_got,
        openai=sdk,
        httpx_sse=sse,
        naive=naive,
    )


def _mark(ok: bool, detail: str = "") -> str:
    text = f"{'✓' if ok else '✗'}{' ' + escape(detail) if detail else ''}"
    return f"[green]{text}[/]" if ok else f"[bold red]{text}[/]"


def _conclusion(rows: Sequence[ChunkingResult]) -> str:
    n = len(rows)
    real = sum(r.real_clients_ok for r in rows)
    failed = [r for r in rows if not r.naive_ok]
    real_part = (
        f"the openai SDK and httpx-sse matched the live run under all {n} chunkings"
        if real == n
        else f"the openai SDK and httpx-sse matched the live run under only {real} of {n} chunkings"
    )
    if not failed:
        return f"Conclusion: {real_part}, and so did the naive decoder this time."
    silent = sum(r.naive.error is None for r in failed)
    raised = sorted({(r.naive.error or "").split(":", 1)[0] for r in failed if r.naive.error})
    how = [f"{silent} silently lost events"] if silent else []
    if raised:
        how.append(f"{len(failed) - silent} raised {'/'.join(raised)}")
    return (
        f'Conclusion: {real_part}; the naive split("data: ") decoder failed under {len(failed)} '
        f"({', '.join(r.chunking for r in failed)}): {', '.join(how)}."
    )


def run_demo(
    console: Console | None = None, *, directory: str | Path | None = None, explore: int = 0
) -> DemoResult:
    """Record the demo stream, replay it under every chunking through three clients, print the table.

    With ``explore`` (a number of examples), then search the streams a network can deliver for
    the naive decoder's smallest failing one ([`ssemock.explore`][ssemock.explore.explore]) and print it beside the
    table: the boundaries in words, the decoder's error and the marker that reproduces it.

    With ``directory``, the cassette is written to a new ``ssemock-demo-*`` folder under it and
    kept, and the demo ends by printing the ``ssemock show`` command to inspect it. Without, it
    goes to a folder in the system temp dir that is removed before returning (also on error).
    """
    console = console if console is not None else Console()
    keep = directory is not None
    folder = Path(tempfile.mkdtemp(prefix="ssemock-demo-", dir=directory))
    try:
        result = _run(console, folder, explore)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    result.cassette_kept = keep
    if keep:
        _say(
            console,
            f"The cassette is kept in {result.cassette_path}. Look inside it (chunks, timing, events):",
            markup=False,
            highlight=False,
        )
        _say(
            console, f"  ssemock show {shlex.quote(str(result.cassette_path))}", markup=False, highlight=False
        )
    else:
        _say(
            console,
            "The cassette was recorded into a temporary folder, removed now. To keep it and look "
            "inside it (chunks, timing, events):",
            markup=False,
            highlight=False,
        )
        _say(
            console,
            f"  ssemock demo --dir .   then   ssemock show ./ssemock-demo-*/{CASSETTE_NAME}",
            markup=False,
            highlight=False,
        )
    return result


def _run(console: Console, folder: Path, explore: int = 0) -> DemoResult:
    path, base_url, live, recorded, first_s, stream_s = _record(folder, console)
    resp = recorded.response
    _say(
        console,
        f"   recorded into [bold]{escape(str(path))}[/]: {len(resp.ends)} chunks, {len(resp.body)} bytes; "
        f"first chunk at {resp.times[0] * 1000:.1f} ms, last at {resp.times[-1] * 1000:.1f} ms "
        f"(the SDK handed its first chunk to the caller after {first_s * 1000:.1f} ms)",
    )
    calls = ", ".join(f"{c.name}({c.arguments})" for c in live.tool_calls)
    _say(
        console,
        f"   live result: {live.chunks} chunks, text {live.text!r}, tool call {calls}",
        markup=False,
        highlight=False,
    )
    _say(
        console,
        "[bold]2. Replaying[/] the cassette with the server stopped and the network blocked, "
        f"under every chunking ({len(_chunking.ALL)}), through three clients",
    )

    cassette = Cassette.load(path)
    body = cassette.interactions[0].request.body or b""
    url = f"{base_url}/v1/chat/completions"
    with _openai_client(base_url) as sdk_client, httpx.Client() as http:
        rows = [_replay_row(cassette, c, sdk_client, http, url, body, live) for c in _chunking.ALL]

    table = Table(
        title="Replayed under every chunking (✓ = same result as the live run)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 1, 0, 0),
    )
    columns: list[tuple[str, JustifyMethod]] = [
        ("chunking", "left"),
        ("chunks", "right"),
        ("bytes", "right"),
        ("events", "right"),
        ("openai\ntext", "center"),
        ("tool\nargs", "center"),
        ("httpx-\nsse", "center"),
        ("naive decoder", "left"),
    ]
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=True)
    for r in rows:
        table.add_row(
            r.chunking,
            str(r.chunks),
            str(r.bytes),
            str(r.events),
            _mark(r.openai_text_ok),
            _mark(r.openai_tool_args_ok),
            _mark(r.httpx_sse_ok),
            _mark(r.naive_ok, r.naive_got),
        )
    console.print(table)
    conclusion = _conclusion(rows)
    _say(console, conclusion, markup=False, highlight=False)
    print_websocket_rows(console)  # the same cut on a WebSocket session's frames (issue 35)
    result = DemoResult(
        path, base_url, live, resp.chunks, list(resp.times), first_s, stream_s, rows, conclusion
    )
    if explore:
        result.explored, result.explore_examples = (
            _explore(console, cassette, url, body, live, explore),
            explore,
        )
    return result


def _explore(
    console: Console, cassette: Cassette, url: str, body: bytes, live: Outcome, examples: int
) -> Failure | None:
    """Explore chunk boundaries (drawn where decoders break: inside characters, in the ``data:``
    prefix, around event ends, runs of 1-byte chunks, buffer multiples) for the naive decoder's
    smallest failing stream, and print it."""
    _say(
        console,
        f"[bold]3. Exploring[/] up to {examples} ways a network can cut this stream (boundaries drawn where "
        "decoders break) against the naive decoder, shrinking the first that breaks it",
    )

    with httpx.Client() as http:

        def naive_gets_the_live_result(player: Player) -> None:
            got = _via_naive(http, url, body)
            if not got.same_as(live):
                raise AssertionError(
                    got.error or f"it decoded {got.chunks} of {live.chunks} chunks, text {got.text!r}"
                )

        # explore starts from a stream the naive decoder reads right (one event a chunk: as the
        # recording is cut, it already fails, and explore would report that failure of the
        # unmodified stream without a search), then draws the cuts that break it
        start = copy.deepcopy(cassette)
        rechunk(start, _chunking.per_event)
        failure = explore_search(
            start,
            naive_gets_the_live_result,
            examples,
            transforms=None,
            database=False,
            seed=0,
            allow_playback_repeats=True,
        )
    if failure is None:
        _say(console, f"   the naive decoder got the live result under all {examples} streams", markup=False)
        return None
    _say(
        console,
        f"   the matrix above tried {len(_chunking.ALL)} fixed chunkings; explore's first failure came after "
        f"{failure.examples} example(s), shrunk to the smallest stream that still breaks it:",
        markup=False,
        highlight=False,
    )
    for line in failure.boundaries:
        _say(console, f"     a chunk boundary at byte {line}", markup=False, highlight=False)
    if failure.variant.transforms:
        _say(
            console, f"     transforms: {'+'.join(t.name for t in failure.variant.transforms)}", markup=False
        )
    _say(console, f"   the naive decoder under it: {failure.error}", markup=False, highlight=False)
    _say(console, f"   pin it as a regression test: {failure.reproducer}", markup=False, highlight=False)
    return failure
