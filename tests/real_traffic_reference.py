"""An independent decoding of every streamed response in the real-traffic corpora (no ssemock).

For each vcrpy YAML cassette under the given roots, every interaction whose response is a stream
(text/event-stream, application/x-ndjson, application/vnd.amazon.eventstream, or a Gemini
``:streamGenerateContent`` JSON array) gets ``{"protocol": name, "text": final text}``:
``protocol`` is the ssemock protocol name the stream must be labelled with, or None for a stream of
an API no ssemock protocol covers (then ``family`` says which API it is, and ``text`` is still its
text); ``text`` is the main text (choice/candidate 0, no reasoning, no tool arguments).

Written for issue 31's corpus test (tests/commands/test_import_vcr_corpora.py) from the providers'
documentation, never from ssemock's code: a difference between the two is a bug in one of them.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import struct
import zlib
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml

STREAM_TYPES = ("text/event-stream", "application/x-ndjson", "application/vnd.amazon.eventstream")


# -- the cassette file ------------------------------------------------------------------------------


def header(headers: dict, name: str) -> str:
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return value[0] if isinstance(value, list) else str(value)
    return ""


def body_of(response: dict) -> bytes:
    body = response.get("body")
    raw = body.get("string") if isinstance(body, dict) else body
    raw = raw.encode("utf-8") if isinstance(raw, str) else (raw or b"")
    if "gzip" in header(response.get("headers"), "content-encoding") and raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw


def framing_of(url: str, response: dict) -> str | None:
    media = header(response.get("headers"), "content-type").split(";")[0].strip().lower()
    if media in STREAM_TYPES:
        return {"text/event-stream": "sse", "application/x-ndjson": "ndjson"}.get(media, "eventstream")
    if ":streamGenerateContent" in url and "alt=sse" not in url:
        return "json_array"
    return None


# -- framings -------------------------------------------------------------------------------------


def sse(body: bytes) -> list[tuple[str, str]]:
    """(event type, data) of each dispatched event (WHATWG: an unterminated last event is dropped)."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    events, data, kind = [], [], ""
    for line in re.split(r"\r\n|\r|\n", text)[:-1]:  # the last piece has no line end
        if not line:
            if data:
                events.append((kind or "message", "\n".join(data)))
            data, kind = [], ""
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
    return events


def ndjson(body: bytes) -> list:
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def eventstream(body: bytes) -> list[tuple[dict, bytes]]:
    """(headers, payload) of each AWS eventstream message, both CRCs checked."""
    out, pos = [], 0
    while pos < len(body):
        total, head_len, prelude_crc = struct.unpack_from(">III", body, pos)
        assert zlib.crc32(body[pos : pos + 8]) == prelude_crc, "prelude CRC"
        message = body[pos : pos + total]
        assert zlib.crc32(message[:-4]) == struct.unpack(">I", message[-4:])[0], "message CRC"
        heads, at, end = {}, 12, 12 + head_len
        while at < end:
            size = message[at]
            name = message[at + 1 : at + 1 + size].decode()
            kind, at = message[at + 1 + size], at + 2 + size
            if kind in (0, 1):
                heads[name] = kind == 0
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", message, at)
                value = message[at + 2 : at + 2 + length]
                heads[name] = value.decode() if kind == 7 else value
                at += 2 + length
            else:
                size = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}[kind]
                heads[name] = message[at : at + size]
                at += size
        out.append((heads, message[end:-4]))
        pos += total
    return out


# -- protocols: the main text of each -------------------------------------------------------------


def _json(data: str):
    try:
        return json.loads(data)
    except ValueError:
        return None


def _sorted_text(parts: dict) -> str:
    return "".join("".join(parts[k]) for k in sorted(parts))


def openai_chat(events: list[dict]) -> str:
    return "".join(
        c["delta"].get("content") or ""
        for e in events
        for c in e.get("choices") or []
        if c.get("index", 0) == 0 and isinstance(c.get("delta"), dict)
    )


def openai_completions(events: list[dict]) -> str:
    return "".join(
        c.get("text") or "" for e in events for c in e.get("choices") or [] if c.get("index", 0) == 0
    )


def openai_responses(events: list[dict]) -> str:
    parts: dict = {}
    for e in events:
        if e.get("type") == "response.output_text.delta":
            parts.setdefault((e.get("output_index", 0), e.get("content_index", 0)), []).append(e["delta"])
    return _sorted_text(parts)


def anthropic(events: list[dict]) -> str:
    parts: dict = {}
    for e in events:
        delta = e.get("delta") or {}
        if e.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
            parts.setdefault(e["index"], []).append(delta["text"])
        elif "completion" in e:  # Claude v2 Text Completions (over Bedrock invoke)
            parts.setdefault(0, []).append(e["completion"])
    return _sorted_text(parts)


def gemini(events: list[dict]) -> str:
    return "".join(
        part.get("text", "")
        for e in events
        for cand in (e.get("candidates") or [])[:1]
        for part in (cand.get("content") or {}).get("parts") or []
        if not part.get("thought")
    )


def cohere(events: list[dict]) -> str:
    return "".join(
        e["delta"]["message"]["content"].get("text", "") for e in events if e.get("type") == "content-delta"
    )


def ollama(events: list[dict]) -> str:
    return "".join((e.get("message") or {}).get("content", "") + e.get("response", "") for e in events)


def converse(events: list[dict]) -> str:
    """ConverseStream events, and Nova's InvokeModel chunks (the same shapes, one per chunk)."""
    parts: dict = {}
    for e in events:
        delta = (e.get("contentBlockDelta") or {}).get("delta") or {}
        if "text" in delta:
            parts.setdefault(e["contentBlockDelta"].get("contentBlockIndex", 0), []).append(delta["text"])
    return _sorted_text(parts)


def titan(events: list[dict]) -> str:
    return "".join(e.get("outputText", "") for e in events)


def a2a(events: list[dict]) -> str:
    """Text parts of the agent's messages and artifacts, in order (A2A message/stream results)."""
    out = []
    for e in events:
        result = e.get("result") or {}
        kind = result.get("kind")
        message = (result.get("status") or {}).get("message") if kind in ("status-update", "task") else None
        message = result if kind == "message" else message
        sources = [message] if message and message.get("role") == "agent" else []
        if kind == "artifact-update":
            sources.append(result.get("artifact") or {})
        out += [p.get("text", "") for s in sources for p in s.get("parts") or [] if p.get("kind") == "text"]
    return "".join(out)


def assistants(events: list[tuple[str, str]]) -> str:
    return "".join(
        part["text"].get("value", "")
        for kind, data in events
        if kind == "thread.message.delta"
        for part in json.loads(data)["delta"].get("content") or []
        if part.get("type") == "text"
    )


def interactions(events: list[dict]) -> str:
    """Gemini Interactions API: step.delta of text steps (thought summaries are not text)."""
    return "".join(
        e["delta"].get("text", "")
        for e in events
        if e.get("event_type") == "step.delta" and (e.get("delta") or {}).get("type") == "text"
    )


# -- one response ---------------------------------------------------------------------------------


def decode(url: str, response: dict) -> dict | None:
    kind = framing_of(url, response)
    if kind is None:
        return None
    body, path = body_of(response), unquote(urlsplit(url).path)
    if kind == "eventstream":
        frames = eventstream(body)
        if path.endswith("/converse-stream"):
            events = [
                {h[":event-type"]: json.loads(p)} for h, p in frames if h.get(":message-type") == "event"
            ]
            return {"protocol": "bedrock.converse", "text": converse(events)}
        chunks = [
            json.loads(base64.b64decode(json.loads(p)["bytes"]))
            for h, p in frames
            if h.get(":message-type") == "event" and h.get(":event-type") == "chunk"
        ]
        read = anthropic if any("type" in c or "completion" in c for c in chunks) else converse
        read = titan if any("outputText" in c for c in chunks) else read
        return {"protocol": "bedrock.invoke", "text": read(chunks)}
    if kind == "ndjson":
        return {"protocol": "ollama.chat", "text": ollama(ndjson(body))}
    if kind == "json_array":
        return {"protocol": "gemini.generate_content", "text": gemini(json.loads(body))}
    events = sse(body)
    if not events and body.lstrip()[:1] == b"{" and _json(body.decode()) is not None:
        return {"protocol": None, "family": "json error body", "text": ""}
    data = [d for _, d in events]
    parsed = [v for v in map(_json, data) if isinstance(v, dict)]
    if "/threads/" in path and path.endswith("/runs"):
        return {"protocol": None, "family": "openai.assistants", "text": assistants(events)}
    if any(v.get("jsonrpc") == "2.0" and "kind" in (v.get("result") or {}) for v in parsed):
        return {"protocol": "a2a", "text": a2a(parsed)}
    if path.endswith("/interactions"):
        return {"protocol": None, "family": "gemini.interactions", "text": interactions(parsed)}
    if "streaming-api" in urlsplit(url).netloc and "replicate" in url:
        return {
            "protocol": None,
            "family": "replicate",
            "text": "".join(d for k, d in events if k == "output"),
        }
    if path.endswith("/text_stream"):
        text = "".join(r.get("generated_text", "") for v in parsed for r in v.get("results") or [])
        return {"protocol": None, "family": "watsonx.generation", "text": text}
    if parsed and all(set(v) == {"value"} for v in parsed):
        return {"protocol": None, "family": "writer.completions", "text": "".join(v["value"] for v in parsed)}
    if ":streamGenerateContent" in path:
        return {"protocol": "gemini.generate_content", "text": gemini(parsed)}
    if path.endswith("/v1/messages"):
        return {"protocol": "anthropic.messages", "text": anthropic(parsed)}
    if path.endswith("/v2/chat"):
        return {"protocol": "cohere.chat", "text": cohere(parsed)}
    if "/responses" in path:
        return {"protocol": "openai.responses", "text": openai_responses(parsed)}
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        return {"protocol": "openai.completions", "text": openai_completions(parsed)}
    if any("choices" in v for v in parsed):  # Chat Completions and every compatible server
        return {"protocol": "openai.chat", "text": openai_chat(parsed)}
    raise ValueError(f"unknown stream at {url}")


def decode_tree(root: Path) -> dict[str, dict[int, dict]]:
    """{file relative to ``root``: {interaction index: decoding}} for every vcrpy YAML file under it."""
    table: dict = {}
    for path in sorted(root.rglob("*.yaml")):
        data = yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
        for index, item in enumerate(data.get("interactions") or []):
            if "request" not in item:  # pydantic-ai's gRPC cassettes (*.xai.yaml): not vcrpy
                break
            found = decode(item["request"]["uri"], item["response"])
            if found is not None:
                table.setdefault(str(path.relative_to(root)), {})[index] = found
    return table
