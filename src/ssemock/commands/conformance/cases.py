"""The scoreboard's cases, in five groups: the SSE specification's parsing rules (``spec``), the
WHATWG examples and the web-platform-tests EventSource ``format-*`` cases (``whatwg``), the
catalogue's bug shapes that broke real clients (``bugs``), reconnection with ``Last-Event-ID``
and ``retry`` (``reconnect``), and real provider streams from the shipped library
(``providers``). What each must decode to is never written here: the reference decoder
(`ssemock.framing.sse`) reads it from the body as served."""

from __future__ import annotations

from dataclasses import dataclass

from ... import cassettes
from ...cassettes.conformance import cases as corpus_cases

__all__ = ["AMBIGUITIES", "GROUPS", "Scored", "corpus"]

GROUPS: dict[str, str] = {
    "spec": "the SSE specification's parsing rules (line endings, fields, BOM, comments, UTF-8)",
    "whatwg": "the WHATWG specification's examples and the web-platform-tests EventSource format-* cases",
    "bugs": "the bug shapes ssemock's catalogue found in real clients (data-less blocks, comments, ids, blank lines, [DONE] split)",
    "reconnect": "a dropped stream resumed with Last-Event-ID after retry: (clients that reconnect on their own)",
    "providers": "real provider streams from ssemock's shipped library (OpenAI, Anthropic, Gemini, Cohere, OpenRouter, MCP)",
}
"""Each case group, and what it checks."""

AMBIGUITIES: dict[str, str] = {
    "id persistence": "the specification gives each event the last event ID (it persists until an 'id' "
    "field changes it); a parser whose events carry only their own block's 'id' is not scored red for it "
    "(either is accepted, and the client is listed)",
    "event type": "an event without 'event:' may be reported with type 'message', '' or none: all count "
    "as 'message'",
    "end of stream": "how a client reports the end of a stream (an error, nothing, a reconnection) is not "
    "scored; only the events it delivered are",
    "retry delay": "how long a client waits before reconnecting is not scored (the reconnect cases set "
    "'retry: 1'); that it reconnects, with Last-Event-ID, and delivers each event once is",
    "comments": "whether a client reports comments is optional (LaunchDarkly's 'comments' capability): "
    "comments are never scored",
}
"""What the specification leaves open, listed on the page, never scored."""


@dataclass(frozen=True)
class Scored:
    """One case of the scoreboard: its group, the body served (recorded chunk ends ``ends``),
    what it checks, and the fault that drops it (``reconnect`` cases)."""

    name: str
    group: str
    body: bytes
    note: str
    ends: tuple[int, ...] = ()
    faults: str | None = None


_BUGS = {
    "event_without_data": "a block with only 'event:' (Anthropic's 'event: ping' shape) dispatches "
    "nothing: openai-python crashed on such data-less blocks",
    "id_only_block": "a block with only 'id:' dispatches nothing (google-genai rejected ids)",
    "retry_only_block": "a block with only 'retry:' dispatches nothing",
    "keepalive_comments": "keep-alive comments between events (OpenRouter's ': OPENROUTER PROCESSING'): "
    "google-genai rejected comments",
    "extra_blank_lines": "blank lines with nothing pending dispatch nothing (the ollama client's blank-line bug)",
    "done_split": "OpenAI's 'data: [DONE]' split across chunks is still one event",
    "data_after_done": "events after 'data: [DONE]' are still events to an SSE parser",
    "crlf_split": "a CRLF split between two chunks is one line ending (openai-node's chunk splitting)",
    "data_no_space": "'data:x' without a space (decoders that cut a fixed 'data: ')",
}

_EXTRA_BUGS: tuple[tuple[str, bytes, str], ...] = (
    (
        "dataless_between_json",
        b'data: {"a":1}\n\nevent: ping\n\ndata: {"a":2}\n\n',
        "a data-less 'event: ping' block between two JSON events: a client that dispatches it hands "
        "its caller an empty data string to parse (httpx-sse dispatches such events)",
    ),
    (
        "comment_after_crlf",
        b"data: a\r\n\r\n: keep-alive\r\n\r\ndata: b\r\n\r\n",
        "a keep-alive comment after CRLF-ended events (a proxy's heartbeat)",
    ),
)

# The web-platform-tests' eventsource/format-*.htm bodies (what they must decode to is the reference's).
_WPT: tuple[tuple[str, bytes, str], ...] = (
    (
        "wpt_format_field_parsing",
        b"data:\x00\ndata:  2\rData:1\ndata\x00:2\ndata:1\r\x00data:4\nda-ta:3\rdata_5\ndata:3\rdata:\r\n data:32\ndata:4\n\n",
        "wpt format-field-parsing: NUL kept in values, field names exact and case-sensitive, one space "
        "stripped, CR/LF/CRLF all end lines",
    ),
    (
        "wpt_format_comments",
        b"data:1\r:\x00\n:\r\ndata:2\n:"
        + b"x" * 300
        + b"\rdata:3\n:data:fail\r:"
        + b"y" * 300
        + b"\ndata:4\n\n",
        "wpt format-comments: comment lines of any length and ending, even holding 'data:', inside an event",
    ),
    (
        "wpt_format_data_before_final_empty_line",
        b"retry:1000\ndata:test1\n\nid:test\ndata:test2",
        "wpt format-data-before-final-empty-line: the last block, never ended by a blank line, is discarded",
    ),
    (
        "wpt_format_field_event_empty",
        b"event: \ndata:data\n\n",
        "wpt format-field-event-empty: an empty event type means 'message'",
    ),
    (
        "wpt_format_newlines",
        b"data:test\r\ndata\ndata:test\r\n\r",
        "wpt format-newlines: CRLF, LF and a final lone CR each end a line",
    ),
    (
        "wpt_format_null_character",
        b"data:\x00\n\n\n\n",
        "wpt format-null-character: a NUL is data",
    ),
    (
        "wpt_format_bom_2",
        b"\xef\xbb\xbf\xef\xbb\xbfdata:1\n\n\xef\xbb\xbfdata:2\n\ndata:3\n\n",
        "wpt format-bom-2: only the first BOM of the stream is stripped; the others make unknown fields",
    ),
    (
        "wpt_format_utf8",
        "data: ok\u2026 \u20ac \U0001f600\n\n".encode(),
        "wpt format-utf-8: the stream is UTF-8 (two-, three- and four-byte characters)",
    ),
)

_RECONNECT: tuple[tuple[str, bytes, str, str], ...] = (
    (
        "reconnect_last_event_id",
        b"retry: 1\n\nid: 1\ndata: first\n\nid: 2\ndata: second\n\nid: 3\ndata: third\n\n",
        "disconnect:after_event=3",
        "the stream drops after the event with id 2: the client reconnects (after 'retry: 1' ms) sending "
        "Last-Event-ID: 2 and gets 'third' once, no event twice",
    ),
    (
        "reconnect_id_persists",
        b"retry: 1\n\nid: a\ndata: one\n\ndata: two\n\nid: b\ndata: three\n\ndata: four\n\n",
        "disconnect:after_event=3",
        "the stream drops after 'two', which has no id field: the last event ID ('a') persists, so the "
        "client reconnects with Last-Event-ID: a and is sent 'two' again, then the rest",
    ),
)

PROVIDERS: tuple[str, ...] = (
    "openai/chat_tool_calls",
    "openai/responses_text",
    "anthropic/messages_ping",
    "gemini/stream_text",
    "cohere/chat_text",
    "openrouter/chat_keepalive",
    "mcp/sse_session",
)
"""The shipped library's SSE streams the ``providers`` group serves."""


def corpus() -> list[Scored]:
    """Every case of the scoreboard, group by group, in a stable order."""
    out: list[Scored] = []
    for case in corpus_cases():
        if "whatwg" in case.tags:
            group = "whatwg"
        elif case.name in _BUGS:
            group = "bugs"
        else:
            group = "spec"
        note = _BUGS.get(case.name, case.note)
        out.append(Scored(case.name, group, case.body, note, case.ends))
    out += [Scored(name, "whatwg", body, note) for name, body, note in _WPT]
    out += [Scored(name, "bugs", body, note) for name, body, note in _EXTRA_BUGS]
    out += [Scored(name, "reconnect", body, note, faults=fault) for name, body, fault, note in _RECONNECT]
    for name in PROVIDERS:
        response = cassettes.load(name).interactions[0].response
        note = f"the shipped library's {name} stream as its provider sends it"
        out.append(Scored(name.replace("/", "_"), "providers", response.body, note, tuple(response.ends)))
    order = list(GROUPS)
    return sorted(out, key=lambda s: order.index(s.group))
