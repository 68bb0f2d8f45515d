"""An independent decoding of every streamed response in the real-traffic corpora (no ssemock).

For each vcrpy YAML cassette under the given roots, every interaction whose response is a stream
(text/event-stream, application/x-ndjson, application/vnd.amazon.eventstream, or a Gemini
``:streamGenerateContent`` JSON array) gets ``{"protocol": name, "text": final text}``:
``protocol`` is the ssemock protocol name the stream must be labelled with, or None for a stream of
an API no ssemock protocol covers (then ``family`` says which API it is, and ``text`` is still its
text); ``text`` is the main text (choice/candidate 0, no reasoning, no tool arguments); ``tools``,
where the protocol has tool calls, is choice 0's calls as ``[(name, parsed arguments)]`` in order.

Written for issue 31's corpus test (tests/commands/test_import_vcr_corpora.py) from the providers'
documentation, never from ssemock's code: a difference between the two is a bug in one of them.
Issue 42 added realtraffic3's shapes: Cohere's v1 chat (JSON lines as ``application/stream+json``),
Bedrock Agents' InvokeAgent (raw text chunks), the Cohere Command, Meta Llama and Mistral families
of InvokeModel, MCP's streamable HTTP answers, and the tool calls of every protocol that has them.
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

STREAM_TYPES = (
    "text/event-stream",
    "application/x-ndjson",
    "application/stream+json",  # Cohere v1 chat: JSON lines
    "application/vnd.amazon.eventstream",
)


class _Loader(yaml.CSafeLoader):
    """YAML as vcrpy writes it; an aiohttp recording's header names are tagged ``istr`` (a
    ``str`` subclass of multidict, written as the constructor call of its one string)."""


_Loader.add_multi_constructor(
    "tag:yaml.org,2002:python/object/apply:multidict",
    lambda loader, suffix, node: loader.construct_sequence(node)[0],
)


def load_yaml(path: Path) -> dict:
    return yaml.load(path.read_bytes(), Loader=_Loader)


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
        return {
            "text/event-stream": "sse",
            "application/x-ndjson": "ndjson",
            "application/stream+json": "ndjson",
        }.get(media, "eventstream")
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


def cohere_v1(events: list[dict]) -> str:
    """Cohere v1 chat lines: the answer is the ``text`` of the ``text-generation`` lines."""
    return "".join(e.get("text", "") for e in events if e.get("event_type") == "text-generation")


def invoke_chunk_text(chunk: dict) -> str:
    """The text of one InvokeModel chunk of the families without an event ``type`` (choice 0):
    Titan ``outputText``, Meta Llama ``generation``, Mistral ``outputs``, OpenAI-like ``choices``
    (AI21 Jamba, Mistral Large 2, DeepSeek), Cohere Command ``text`` (``index`` 0 when several
    generations) or ``generations``, Command R's ``text-generation`` events."""
    if "outputText" in chunk:
        return chunk["outputText"] or ""
    if "generation" in chunk:
        return chunk["generation"] or ""
    if "outputs" in chunk:
        return "".join((o.get("text") or "") for o in chunk["outputs"][:1])
    if "choices" in chunk:
        return "".join(
            ((c.get("delta") or c.get("message") or {}).get("content") or c.get("text") or "")
            for c in chunk["choices"]
            if c.get("index", 0) == 0
        )
    if "generations" in chunk:
        return "".join(g.get("text") or "" for g in chunk["generations"][:1])
    if chunk.get("event_type", "text-generation") == "text-generation" and chunk.get("index", 0) == 0:
        return chunk.get("text") or ""
    return ""


def mcp(events: list[dict]) -> str:
    """Text content items of the JSON-RPC results (a tools/call result's ``content``)."""
    return "".join(
        c.get("text", "")
        for e in events
        for c in (e.get("result") or {}).get("content") or []
        if isinstance(c, dict) and c.get("type") == "text"
    )


# -- tool calls: [(name, parsed arguments)] of choice 0, in order ----------------------------------


def _args(text):
    if isinstance(text, dict):
        return text
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return None


def openai_chat_tools(events: list[dict]) -> list:
    """``delta.tool_calls`` by ``index``; a new ``id`` at a used index starts another call. The
    name comes whole (some servers repeat it in every delta of the call): the first one counts."""
    calls: list = []  # [index, id, name, arguments]
    for e in events:
        for c in e.get("choices") or []:
            if c.get("index", 0) != 0 or not isinstance(c.get("delta"), dict):
                continue
            for d in c["delta"].get("tool_calls") or []:
                fn = d.get("function") or {}
                same = [x for x in calls if x[0] == d.get("index", 0)]
                if not same or (d.get("id") and same[-1][1] and d["id"] != same[-1][1]):
                    calls.append([d.get("index", 0), d.get("id") or "", "", ""])
                    same = [calls[-1]]
                call = same[-1]
                call[1] = call[1] or d.get("id") or ""
                call[2] = call[2] or fn.get("name") or ""
                call[3] += fn.get("arguments") or ""
    return [(name, _args(arguments)) for _, _, name, arguments in sorted(calls, key=lambda x: x[0])]


def openai_responses_tools(events: list[dict]) -> list:
    """``function_call`` output items: the item ``done`` gives its arguments, else the deltas."""
    calls: dict = {}
    for e in events:
        item = e.get("item") or {}
        if (
            e.get("type") in ("response.output_item.added", "response.output_item.done")
            and item.get("type") == "function_call"
        ):
            call = calls.setdefault(e["output_index"], {"name": "", "arguments": ""})
            call["name"] = item.get("name") or call["name"]
            if e["type"] == "response.output_item.done":
                call["done"] = item.get("arguments") or ""
        elif e.get("type") == "response.function_call_arguments.delta" and e.get("output_index") in calls:
            calls[e["output_index"]]["arguments"] += e.get("delta") or ""
    return [(c["name"], _args(c.get("done", c["arguments"]))) for _, c in sorted(calls.items())]


def anthropic_tools(events: list[dict]) -> list:
    """``tool_use`` / ``server_tool_use`` / ``mcp_tool_use`` blocks: their ``input_json_delta`` pieces."""
    calls: dict = {}
    for e in events:
        block = e.get("content_block") or {}
        if e.get("type") == "content_block_start" and block.get("type") in (
            "tool_use",
            "server_tool_use",
            "mcp_tool_use",
        ):
            calls[e["index"]] = [block.get("name", ""), ""]
        elif (
            e.get("type") == "content_block_delta"
            and (e.get("delta") or {}).get("type") == "input_json_delta"
        ):
            if e["index"] in calls:
                calls[e["index"]][1] += e["delta"].get("partial_json") or ""
    return [(name, _args(arguments)) for _, (name, arguments) in sorted(calls.items())]


def gemini_tools(events: list[dict]) -> list:
    return [
        (part["functionCall"].get("name", ""), part["functionCall"].get("args") or {})
        for e in events
        for cand in (e.get("candidates") or [])[:1]
        for part in (cand.get("content") or {}).get("parts") or []
        if "functionCall" in part
    ]


def cohere_tools(events: list[dict]) -> list:
    calls: dict = {}
    for e in events:
        call = ((e.get("delta") or {}).get("message") or {}).get("tool_calls") or {}
        fn = call.get("function") or {}
        if e.get("type") == "tool-call-start":
            calls[e["index"]] = [fn.get("name", ""), fn.get("arguments") or ""]
        elif e.get("type") == "tool-call-delta" and e.get("index") in calls:
            calls[e["index"]][1] += fn.get("arguments") or ""
    return [(name, _args(arguments)) for _, (name, arguments) in sorted(calls.items())]


def cohere_v1_tools(events: list[dict]) -> list:
    """``tool-calls-chunk`` fragments by index, else the whole ``tool-calls-generation``."""
    calls: dict = {}
    for e in events:
        d = e.get("tool_call_delta") or {}
        if e.get("event_type") == "tool-calls-chunk" and "index" in d:
            call = calls.setdefault(d["index"], ["", ""])
            call[0] = call[0] or d.get("name") or ""
            call[1] += d.get("parameters") or ""
    if calls:
        return [(name, _args(arguments)) for _, (name, arguments) in sorted(calls.items())]
    whole = next((e["tool_calls"] for e in events if e.get("event_type") == "tool-calls-generation"), None)
    if whole is None:
        end = next((e for e in events if e.get("event_type") == "stream-end"), {})
        whole = (end.get("response") or {}).get("tool_calls") or []
    return [(c.get("name", ""), c.get("parameters") or {}) for c in whole]


def ollama_tools(events: list[dict]) -> list:
    return [
        (call["function"].get("name", ""), _args(call["function"].get("arguments", {})))
        for e in events
        for call in (e.get("message") or {}).get("tool_calls") or []
    ]


def converse_tools(events: list[dict]) -> list:
    calls: dict = {}
    for e in events:
        start = e.get("contentBlockStart") or {}
        tool = (start.get("start") or {}).get("toolUse")
        if tool:
            calls[start.get("contentBlockIndex", 0)] = [tool.get("name", ""), ""]
        delta = e.get("contentBlockDelta") or {}
        piece = (delta.get("delta") or {}).get("toolUse")
        if piece is not None and delta.get("contentBlockIndex", 0) in calls:
            calls[delta.get("contentBlockIndex", 0)][1] += piece.get("input") or ""
    return [(name, _args(arguments)) for _, (name, arguments) in sorted(calls.items())]


def agent_tools(events: list[dict]) -> list:
    """InvokeAgent ``returnControl``: each invocation input's function (or API path) and its
    parameters as ``{name: value}``."""
    out = []
    for e in events:
        for item in e.get("invocationInputs") or []:
            call = item.get("functionInvocationInput") or item.get("apiInvocationInput") or {}
            params = {p.get("name", ""): p.get("value") for p in call.get("parameters") or []}
            out.append((call.get("function") or call.get("apiPath") or "", params))
    return out


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
        events = [(h.get(":event-type"), p) for h, p in frames if h.get(":message-type") == "event"]
        if path.endswith("/converse-stream"):
            parsed = [{t: json.loads(p)} for t, p in events]
            return {"protocol": "bedrock.converse", "text": converse(parsed), "tools": converse_tools(parsed)}
        if re.fullmatch(r"/agents/[^/]+/agentAliases/[^/]+/sessions/[^/]+/text", path):
            raw = b"".join(base64.b64decode(json.loads(p)["bytes"]) for t, p in events if t == "chunk")
            control = [json.loads(p) for t, p in events if t == "returnControl"]
            return {"protocol": "bedrock.agent", "text": raw.decode(), "tools": agent_tools(control)}
        chunks = [json.loads(base64.b64decode(json.loads(p)["bytes"])) for t, p in events if t == "chunk"]
        if any("type" in c or "completion" in c for c in chunks):
            return {"protocol": "bedrock.invoke", "text": anthropic(chunks), "tools": anthropic_tools(chunks)}
        if any(set(c) & {"messageStart", "contentBlockDelta", "contentBlockStart"} for c in chunks):
            return {"protocol": "bedrock.invoke", "text": converse(chunks), "tools": converse_tools(chunks)}
        return {"protocol": "bedrock.invoke", "text": "".join(map(invoke_chunk_text, chunks))}
    if kind == "ndjson":
        lines = ndjson(body)
        if path.endswith("/v1/chat") and "cohere" in urlsplit(url).netloc:
            return {"protocol": "cohere.v1", "text": cohere_v1(lines), "tools": cohere_v1_tools(lines)}
        return {"protocol": "ollama.chat", "text": ollama(lines), "tools": ollama_tools(lines)}
    if kind == "json_array":
        parsed = json.loads(body)
        return {"protocol": "gemini.generate_content", "text": gemini(parsed), "tools": gemini_tools(parsed)}
    events = sse(body)
    if not events and body.lstrip()[:1] == b"{" and _json(body.decode()) is not None:
        return {"protocol": None, "family": "json error body", "text": ""}
    data = [d for _, d in events]
    parsed = [v for v in map(_json, data) if isinstance(v, dict)]
    if "/threads/" in path and path.endswith("/runs"):
        return {"protocol": None, "family": "openai.assistants", "text": assistants(events)}
    if any(v.get("jsonrpc") == "2.0" and "kind" in (v.get("result") or {}) for v in parsed):
        return {"protocol": "a2a", "text": a2a(parsed)}
    if path.endswith("/mcp") and parsed and all(v.get("jsonrpc") == "2.0" for v in parsed):
        return {"protocol": "mcp", "text": mcp(parsed)}
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
        return {"protocol": "gemini.generate_content", "text": gemini(parsed), "tools": gemini_tools(parsed)}
    if path.endswith("/v1/messages"):
        return {"protocol": "anthropic.messages", "text": anthropic(parsed), "tools": anthropic_tools(parsed)}
    if path.endswith("/v2/chat"):
        return {"protocol": "cohere.chat", "text": cohere(parsed), "tools": cohere_tools(parsed)}
    if "/responses" in path:
        return {
            "protocol": "openai.responses",
            "text": openai_responses(parsed),
            "tools": openai_responses_tools(parsed),
        }
    if path.endswith("/completions") and not path.endswith("/chat/completions"):
        return {"protocol": "openai.completions", "text": openai_completions(parsed)}
    if any("choices" in v for v in parsed):  # Chat Completions and every compatible server
        return {"protocol": "openai.chat", "text": openai_chat(parsed), "tools": openai_chat_tools(parsed)}
    raise ValueError(f"unknown stream at {url}")


def decode_tree(root: Path) -> dict[str, dict[int, dict]]:
    """{file relative to ``root``: {interaction index: decoding}} for every vcrpy YAML file under it."""
    table: dict = {}
    for path in sorted(root.rglob("*.yaml")):
        data = load_yaml(path)
        for index, item in enumerate(data.get("interactions") or []):
            if "request" not in item:  # pydantic-ai's gRPC cassettes (*.xai.yaml): not vcrpy
                break
            found = decode(item["request"]["uri"], item["response"])
            if found is not None:
                table.setdefault(str(path.relative_to(root)), {})[index] = found
    return table
