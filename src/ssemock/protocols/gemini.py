"""Google Gemini ``generateContent`` streams (``gemini.generate_content``).

``models/{model}:streamGenerateContent?alt=sse`` answers SSE with CRLF line endings
(``data: {...}\\r\\n\\r\\n``); without ``alt=sse`` the same ``GenerateContentResponse`` objects
come as one JSON array written element by element (``[{...}\\n,\\r\\n{...}\\n]``, the
``json_array`` framing). Each object carries ``candidates`` (``content.parts``: ``text``,
``thought`` text, whole ``functionCall``\\ s), ``finishReason`` on the last, cumulative
``usageMetadata``, and ``promptFeedback.blockReason`` when the prompt is blocked (then no
candidates). A mid-stream error is an object ``{"error": {code, message, status}}`` -- the same
shape as the HTTP error body.

Client note: google-genai's line parser takes a line as data only when it starts with
``data: `` (with the space), and hands any other line (a comment, ``data:`` without the space,
``id:``/``event:``/``retry:`` fields) to its JSON fallback, which then fails with
``UnknownApiResponseError``. The SSE spec makes the space optional and comments legal, so the
``no_space`` and ``keepalive`` transforms break that SDK: a real client non-conformance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..framing.sse import is_event
from . import Protocol, _path
from . import synthesis as syn
from .base import JSON, Event, Fold, HTTPErrorBody, StreamError, obj, seq, string

__all__ = ["API_URL", "PROTOCOL", "synthesize"]

API_URL = "https://generativelanguage.googleapis.com/v1beta/models/{model}:streamGenerateContent"

# google.rpc status of an HTTP status, and the reverse for error kinds
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_MESSAGES = {
    429: "Resource has been exhausted (e.g. check quota).",
    503: "The model is overloaded. Please try again later.",
    500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
}
_KINDS = {
    "overloaded_error": 503,
    "rate_limit_error": 429,
    "api_error": 500,
    "server_error": 500,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "timeout": 504,
}


class _Gemini(Fold):
    """GenerateContentResponse objects: text and thought parts per candidate, whole function calls."""

    protocol = "gemini.generate_content"
    container = "candidate"

    def feed(self, event: Event) -> None:
        payload = self.json_object(event.data) if is_event(event) else event
        if not isinstance(payload, Mapping):
            raise self.fail(f"expected a JSON object, got {type(payload).__name__}")
        if payload.get("error") is not None:
            self.result.error = dict(obj(payload["error"])) or {"message": str(payload["error"])}
            return
        self.result.id = self.result.id or string(payload.get("responseId"))
        self.result.model = self.result.model or string(payload.get("modelVersion"))
        if isinstance(payload.get("usageMetadata"), dict):
            self.result.usage = dict(payload["usageMetadata"])  # cumulative: the last one is the total
        block = obj(payload.get("promptFeedback")).get("blockReason")
        if block is not None:
            self.choice(0).finish_reason = string(block) or None
            self.result.complete = True
        candidates = seq(payload.get("candidates"))
        for raw in candidates:
            self.candidate(obj(raw))
        if candidates and all(c.finish_reason for c in self._choices.values()):
            self.result.complete = True

    def candidate(self, candidate: JSON) -> None:
        index = candidate.get("index", 0)
        if not isinstance(index, int) or isinstance(index, bool):
            raise self.fail(f"candidate index is not an integer: {index!r}")
        self.choice(index)  # a candidate without text (executableCode only) is a choice not finished yet
        for raw in seq(obj(candidate.get("content")).get("parts")):
            part = obj(raw)
            if isinstance(part.get("text"), str):
                self.add("thinking" if part.get("thought") is True else "text", part["text"], choice=index)
            if "thoughtSignature" in part:
                self.add("signature", string(part["thoughtSignature"]), choice=index)
            if isinstance(part.get("functionCall"), dict):
                function = part["functionCall"]
                call = self.tool(len([k for k in self._tools if k[0] == index]), choice=index)
                call.id, call.name = string(function.get("id")), string(function.get("name"))
                args = function.get("args")
                call.arguments = json.dumps(args, ensure_ascii=False) if args is not None else ""
        self.result.citations.extend(seq(obj(candidate.get("citationMetadata")).get("citations")))
        if candidate.get("finishReason") is not None:
            self.choice(index).finish_reason = string(candidate["finishReason"]) or None


def _error(code: int, message: str | None) -> JSON:
    return {
        "error": {
            "code": code,
            "message": message or _MESSAGES.get(code, f"ssemock error {code}"),
            "status": _STATUSES.get(code, "INTERNAL" if code >= 500 else "INVALID_ARGUMENT"),
        }
    }


def error_event(error: StreamError) -> bytes:
    """The error object in the stream: ``data: {"error": {code, message, status}}`` (SSE), or an
    array element and the array's end (JSON array). ``kind`` is an error type or a code."""
    code = _KINDS.get(error.kind) or (int(error.kind) if error.kind.isdigit() else 500)
    payload = _error(code, error.message)
    nl = error.newline.encode()
    if error.framing == "json_array":  # Gemini's own separator, whatever the lines inside use
        head = b"\n,\r\n" if error.after_first else b"["
        return head + orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n]"
    return b"data: " + orjson.dumps(payload) + nl + nl


def http_error(status: int, message: str | None) -> HTTPErrorBody:
    """``{"error": {"code", "message", "status"}}``, pretty-printed as Google sends it."""
    return HTTPErrorBody(
        orjson.dumps(_error(status, message), option=orjson.OPT_INDENT_2), "application/json; charset=UTF-8"
    )


def _is_gemini_url(url: str) -> bool:
    return _path(url).endswith((":streamGenerateContent", ":generateContent"))


def _is_gemini_event(event: Any) -> bool:
    if is_event(event):
        try:
            event = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            return False
    return isinstance(event, Mapping) and (
        "candidates" in event or "promptFeedback" in event or "usageMetadata" in event
    )


# -- synthesizer ---------------------------------------------------------------------------------


def synthesize(
    text: str = "",
    *,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    thinking: str | None = None,
    usage: Mapping[str, Any] | None = None,
    finish_reason: str | None = None,
    blocked: str | None = None,
    alt_sse: bool = True,
    model: str = "gemini-2.0-flash",
    chunk_size: int = 12,
    gap: float = 0.05,
    first_token: float = 0.4,
    seed: int = 0,
    prompt: str = "Say hello.",
    url: str | None = None,
) -> Any:
    """A Gemini stream: ``thinking`` as thought parts, ``text`` in pieces, each tool call as one
    whole ``functionCall`` part, the last object with ``finishReason`` (default ``STOP``) and the
    ``usageMetadata`` (every object carries the running count). ``blocked="SAFETY"``: the prompt
    is blocked (one object with ``promptFeedback``, no candidates); ``finish_reason="SAFETY"``:
    the answer stops with safety ratings. ``alt_sse=False``: the JSON array form."""
    syn.check_timing(chunk_size, gap, first_token)
    rng = syn.Rng(seed)
    calls = syn.calls(tool_calls, rng, "", id_size=8)
    response_id = rng.token(22)
    prompt_tokens = 4 + len(prompt) // 4
    objects: list[JSON] = []
    count = 0

    def usage_now(final: bool) -> JSON:
        if final and usage is not None:
            return dict(usage)
        out: JSON = {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": count,
            "totalTokenCount": prompt_tokens + count,
        }
        if final:
            out["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt_tokens}]
        return out

    def emit(parts: list[JSON], finish: str | None = None, extra: JSON | None = None) -> None:
        candidate: JSON = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate.update(extra or {})
        candidate["index"] = 0
        objects.append(
            {
                "candidates": [candidate],
                "usageMetadata": usage_now(finish is not None),
                "modelVersion": model,
                "responseId": response_id,
            }
        )

    if blocked is not None:
        objects.append(
            {
                "promptFeedback": {"blockReason": blocked, "safetyRatings": _ratings(blocked)},
                "usageMetadata": {"promptTokenCount": prompt_tokens, "totalTokenCount": prompt_tokens},
                "modelVersion": model,
                "responseId": response_id,
            }
        )
    else:
        for piece in syn.pieces(thinking or "", chunk_size, rng.pieces):
            count += 1
            emit([{"text": piece, "thought": True}])
        pieces = syn.pieces(text, chunk_size, rng.pieces)
        for piece in pieces[:-1] if not calls else pieces:
            count += 1
            emit([{"text": piece}])
        last: list[JSON] = [{"text": pieces[-1]}] if pieces and not calls else []
        last += [{"functionCall": {"name": c.name, "args": c.value}} for c in calls]
        count += 1
        reason = finish_reason or "STOP"
        emit(
            last or [{"text": ""}],
            reason,
            {"safetyRatings": _ratings("SAFETY")} if reason == "SAFETY" else None,
        )
    if alt_sse:
        events = [b"data: " + syn.compact(o).encode() + b"\r\n\r\n" for o in objects]
        content_type = "text/event-stream"
    else:  # pretty-printed elements, "\n,\r\n" between them, as the REST API writes them
        texts = [json.dumps(o, ensure_ascii=False, indent=2).encode() for o in objects]
        events = [(b"[" if k == 0 else b"\n,\r\n") + t for k, t in enumerate(texts)]
        events[-1] += b"\n]"
        content_type = "application/json; charset=UTF-8"
    chunks, times = syn.schedule(events, rng.writes, first_token=first_token, gap=gap)
    body: JSON = {"contents": [{"parts": [{"text": prompt}], "role": "user"}]}
    if calls:  # as google-genai sends them: schema types in upper case
        body["tools"] = [{"functionDeclarations": [_upper_types(t) for t in syn.tools(calls).values()]}]
    if calls or thinking is not None:  # google-genai sends it whenever a config is given, and
        # (3.x) the thinking config's field in snake case, which the API accepts too
        body["generationConfig"] = (
            {"thinkingConfig": {"include_thoughts": True}} if thinking is not None else {}
        )
    target = url or API_URL.format(model=model) + ("?alt=sse" if alt_sse else "")
    return syn.one_interaction(
        target,
        body,
        chunks,
        times,
        content_type=content_type,
        headers={"vary": "Origin", "x-goog-ssemock": "synthesized"},
    )


def _upper_types(value: Any) -> Any:
    """A JSON schema with its ``type`` names in upper case (Gemini's ``Type`` enum)."""
    if isinstance(value, dict):
        return {
            k: v.upper() if k == "type" and isinstance(v, str) else _upper_types(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_upper_types(v) for v in value]
    return value


def _ratings(blocked: str) -> list[JSON]:
    return [
        {
            "category": category,
            "probability": "HIGH" if k == 0 and blocked == "SAFETY" else "NEGLIGIBLE",
            **({"blocked": True} if k == 0 and blocked == "SAFETY" else {}),
        }
        for k, category in enumerate(
            (
                "HARM_CATEGORY_DANGEROUS_CONTENT",
                "HARM_CATEGORY_HATE_SPEECH",
                "HARM_CATEGORY_HARASSMENT",
                "HARM_CATEGORY_SEXUALLY_EXPLICIT",
            )
        )
    ]


def sdk_request(base_url: str, interaction: Any) -> bool:
    """Stream the interaction's request through google-genai (``alt=sse`` requests only: the SDK
    never asks for the JSON array form)."""
    parts = urlsplit(interaction.request.url)
    if "alt=sse" not in parts.query:
        return False
    from google import genai

    version, _, rest = parts.path.strip("/").partition("/models/")
    body = interaction.request.json()
    client = genai.Client(
        api_key="test-key-0000", http_options={"base_url": base_url + "/", "api_version": version}
    )
    config: JSON = {"tools": body["tools"]} if body.get("tools") else {}
    if "thinkingConfig" in obj(body.get("generationConfig")):
        config["thinking_config"] = genai.types.ThinkingConfig(include_thoughts=True)
    validated = genai.types.GenerateContentConfig.model_validate(config) if config else None
    for _ in client.models.generate_content_stream(
        model=rest.split(":")[0], contents=body["contents"], config=validated
    ):
        pass
    return True


PROTOCOL = Protocol(
    name="gemini.generate_content",
    framing="sse",
    fold=_Gemini,
    error_event=error_event,
    http_error=http_error,
    url=_is_gemini_url,
    event=_is_gemini_event,
    synthesize=synthesize,
    sdk_request=sdk_request,
    framings=("json_array",),
)
