"""What real provider endpoints send that is NOT a credential, and what IS one.

``PROVIDERS``: for each provider endpoint, the full response header set and body shape its API
sends, as documented in the providers' API references (rate-limit headers, request and trace ids,
organization/project ids, cookies, caching, tracing) and seen in public recordings, with values
synthesized in the documented formats: RFC 3339 and HTTP dates, epoch seconds, Go durations
(``1m30s``), ``req_``/``msg_``/``chatcmpl-``/``resp_`` ids, UUIDs, hex trace ids, hashes, model
names, base64 thinking signatures, Bedrock's ``{"bytes": base64(JSON)}`` payloads. The request
headers and bodies are what each provider's SDK sends (with fake keys, which the default rules
redact). Recording any of them must be refused for nothing.

``CREDENTIALS``: one credential per shape the scanner knows: every one must still be refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from dataclasses import dataclass, field

from ssemock.framing.eventstream import encode as _frame

RNG = random.Random(2126)
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
RFC3339 = "2026-11-26T16:04:37Z"
HTTP_DATE = "Thu, 26 Nov 2026 16:04:37 GMT"


def _rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def _hex(n: int) -> str:
    return _rand(n, "0123456789abcdef")


def _uuid() -> str:
    return str(uuid.UUID(int=RNG.getrandbits(128), version=4))


def _b64(n: int) -> str:
    return base64.b64encode(RNG.randbytes(n)).decode()


def _sse(obj: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj, separators=(',', ':'))}\n\n".encode()


@dataclass
class Endpoint:
    """One provider endpoint: the request an SDK sends and the response the API answers."""

    provider: str
    method: str
    path: str
    request_headers: dict[str, str]
    request_body: bytes | None
    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes]
    query: str = ""
    notes: list[str] = field(default_factory=list)


CLOUDFLARE = [
    ("cf-cache-status", "DYNAMIC"),
    ("cf-ray", f"{_hex(16)}-SJC"),
    ("server", "cloudflare"),
    (
        "set-cookie",
        f"__cf_bm={_rand(43)}.{_rand(20)}-1764173077-1.0.1.1-{_rand(60)}; path=/; "
        f"expires=Thu, 26-Nov-26 16:34:37 GMT; domain=.api.example.com; HttpOnly; Secure; SameSite=None",
    ),
    (
        "set-cookie",
        f"_cfuvid={_rand(43)}-1764173077123-0.0.1.1-604800000; path=/; domain=.api.example.com; "
        "HttpOnly; Secure; SameSite=None",
    ),
    ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
    ("x-content-type-options", "nosniff"),
    ("alt-svc", 'h3=":443"; ma=86400'),
]
STAINLESS = {
    "x-stainless-lang": "python",
    "x-stainless-package-version": "1.99.9",
    "x-stainless-os": "Linux",
    "x-stainless-arch": "x64",
    "x-stainless-runtime": "CPython",
    "x-stainless-runtime-version": "3.11.9",
    "x-stainless-async": "false",
    "x-stainless-retry-count": "0",
    "x-stainless-read-timeout": "600",
    "accept": "application/json",
    "accept-encoding": "gzip, deflate",
    "content-type": "application/json",
}


def openai_chat() -> Endpoint:
    cid, fp = f"chatcmpl-{_rand(29)}", f"fp_{_hex(10)}"
    base = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1764173077,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": fp,
    }
    chunks = [
        _sse(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": "", "refusal": None},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
                "obfuscation": _rand(6),
            }
        )
    ]
    for word in ["Hello", "!", " How", " can", " I", " help", "?"]:
        chunks.append(
            _sse(
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"content": word}, "logprobs": None, "finish_reason": None}
                    ],
                    "obfuscation": _rand(RNG.randint(1, 12)),
                }
            )
        )
    chunks.append(
        _sse({**base, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]})
    )
    chunks.append(
        _sse(
            {
                **base,
                "choices": [],
                "usage": {
                    "prompt_tokens": 9,
                    "completion_tokens": 8,
                    "total_tokens": 17,
                    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                    "completion_tokens_details": {
                        "reasoning_tokens": 0,
                        "audio_tokens": 0,
                        "accepted_prediction_tokens": 0,
                        "rejected_prediction_tokens": 0,
                    },
                },
            }
        )
    )
    chunks.append(b"data: [DONE]\n\n")
    headers = [
        ("date", HTTP_DATE),
        ("content-type", "text/event-stream; charset=utf-8"),
        ("access-control-expose-headers", "X-Request-ID"),
        ("openai-organization", f"user-{_rand(24).lower()}"),
        ("openai-processing-ms", "412"),
        ("openai-project", f"proj_{_rand(24)}"),
        ("openai-version", "2020-10-01"),
        ("x-envoy-upstream-service-time", "389"),
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-limit-tokens", "30000000"),
        ("x-ratelimit-remaining-requests", "9999"),
        ("x-ratelimit-remaining-tokens", "29999990"),
        ("x-ratelimit-reset-requests", "6ms"),
        ("x-ratelimit-reset-tokens", "0s"),
        ("x-ratelimit-limit-project-tokens", "30000000"),
        ("x-ratelimit-remaining-project-tokens", "29999990"),
        ("x-ratelimit-reset-project-tokens", "1m30s"),
        ("x-request-id", f"req_{_hex(32)}"),
        ("x-openai-proxy-wasm", "v0.1"),
        *CLOUDFLARE,
    ]
    body = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Say hello"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 64,
        "max_completion_tokens": 64,
        "temperature": 0.7,
        "user": "user-1234",
        "metadata": {"session": "demo"},
    }
    return Endpoint(
        "openai",
        "POST",
        "/v1/chat/completions",
        {
            **STAINLESS,
            "authorization": "Bearer sk-test-fakefakefakefakefake1234",
            "user-agent": "OpenAI/Python 1.99.9",
            "openai-organization": "org-fake",
            "openai-project": "proj_fake",
            "x-stainless-helper-method": "stream",
        },
        json.dumps(body).encode(),
        200,
        headers,
        chunks,
    )


def openai_responses() -> Endpoint:
    rid, mid, rsid = f"resp_{_hex(48)}", f"msg_{_hex(48)}", f"rs_{_hex(48)}"
    response = {
        "id": rid,
        "object": "response",
        "created_at": 1764173077,
        "status": "in_progress",
        "model": "o4-mini-2025-04-16",
        "output": [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "medium", "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
        "max_output_tokens": 256,
        "prompt_cache_key": None,
        "safety_identifier": None,
    }
    events = [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": response}),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": 1,
                "output_index": 0,
                "item": {
                    "id": rsid,
                    "type": "reasoning",
                    "summary": [],
                    "encrypted_content": "gAAAAAB" + base64.urlsafe_b64encode(RNG.randbytes(300)).decode(),
                },
            },
        ),
    ]
    for k, piece in enumerate(["Hi", " there", "!"]):
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "sequence_number": 2 + k,
                    "item_id": mid,
                    "output_index": 1,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                    "obfuscation": _rand(10),
                },
            )
        )
    events.append(
        (
            "response.completed",
            {
                "type": "response.completed",
                "sequence_number": 9,
                "response": {
                    **response,
                    "status": "completed",
                    "usage": {
                        "input_tokens": 12,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 70,
                        "output_tokens_details": {"reasoning_tokens": 64},
                        "total_tokens": 82,
                    },
                },
            },
        )
    )
    headers = [
        ("date", HTTP_DATE),
        ("content-type", "text/event-stream; charset=utf-8"),
        ("openai-organization", f"org-{_rand(24)}"),
        ("openai-processing-ms", "97"),
        ("openai-version", "2020-10-01"),
        ("x-request-id", f"req_{_hex(32)}"),
        ("x-ratelimit-reset-tokens", "59m59.992s"),
        ("x-ratelimit-reset-requests", "8.64s"),
        ("x-ratelimit-remaining-tokens", "149999"),
        *CLOUDFLARE,
    ]
    body = {
        "model": "o4-mini",
        "input": "Say hi",
        "stream": True,
        "reasoning": {"effort": "medium"},
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 256,
    }
    return Endpoint(
        "openai",
        "POST",
        "/v1/responses",
        {**STAINLESS, "authorization": "Bearer sk-test-fake"},
        json.dumps(body).encode(),
        200,
        headers,
        [_sse(e, name) for name, e in events],
    )


def anthropic() -> Endpoint:
    mid = f"msg_01{_rand(22)}"
    signature = _b64(280)
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 25,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                        "output_tokens": 1,
                        "service_tier": "standard",
                    },
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "The user says hi."},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": signature},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hello"}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "!"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_01{_rand(22)}",
                    "name": "get_weather",
                    "input": {},
                },
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": '{"location": "Par'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 2,
                "delta": {"type": "input_json_delta", "partial_json": 'is", "unit": "c"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 42},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    headers = [
        ("date", HTTP_DATE),
        ("content-type", "text/event-stream; charset=utf-8"),
        ("cache-control", "no-cache"),
        ("anthropic-ratelimit-requests-limit", "4000"),
        ("anthropic-ratelimit-requests-remaining", "3999"),
        ("anthropic-ratelimit-requests-reset", RFC3339),
        ("anthropic-ratelimit-input-tokens-limit", "400000"),
        ("anthropic-ratelimit-input-tokens-remaining", "400000"),
        ("anthropic-ratelimit-input-tokens-reset", RFC3339),
        ("anthropic-ratelimit-output-tokens-limit", "80000"),
        ("anthropic-ratelimit-output-tokens-remaining", "80000"),
        ("anthropic-ratelimit-output-tokens-reset", "2026-11-26T16:04:38Z"),
        ("anthropic-ratelimit-tokens-limit", "480000"),
        ("anthropic-ratelimit-tokens-remaining", "480000"),
        ("anthropic-ratelimit-tokens-reset", "2026-11-26T16:04:37.512Z"),
        ("request-id", f"req_011C{_rand(20)}"),
        ("anthropic-organization-id", _uuid()),
        ("via", "1.1 google"),
        ("x-robots-tag", "none"),
        ("x-envoy-upstream-service-time", "1303"),
        ("content-security-policy", "default-src 'none'; frame-ancestors 'none'"),
        *CLOUDFLARE,
    ]
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "stream": True,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [
            {
                "name": "get_weather",
                "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}},
            }
        ],
        "metadata": {"user_id": _uuid()},
    }
    return Endpoint(
        "anthropic",
        "POST",
        "/v1/messages",
        {
            **STAINLESS,
            "x-api-key": "sk-ant-test-fakefakefake",
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "interleaved-thinking-2025-05-14",
            "user-agent": "Anthropic/Python 0.99.0",
            "x-stainless-timeout": "600",
            "anthropic-dangerous-direct-browser-access": "false",
        },
        json.dumps(body).encode(),
        200,
        headers,
        [_sse(e, name) for name, e in events],
    )


GOOGLE = [
    ("date", HTTP_DATE),
    ("vary", "Origin, X-Origin, Referer"),
    ("server", "scaffolding on HTTPServer2"),
    ("x-xss-protection", "0"),
    ("x-frame-options", "SAMEORIGIN"),
    ("x-content-type-options", "nosniff"),
    ("server-timing", "gfet4t7; dur=1234"),
    ("alt-svc", 'h3=":443"; ma=2592000,h3-29=":443"; ma=2592000'),
]


def _gemini_chunk(text: str, last: bool = False) -> dict[str, object]:
    chunk: dict[str, object] = {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}],
        "usageMetadata": {
            "promptTokenCount": 5,
            "totalTokenCount": 5,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 5}],
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": _rand(22),
    }
    if last:
        chunk["candidates"][0].update(
            {
                "finishReason": "STOP",
                "groundingMetadata": {  # type: ignore[index]
                    "groundingChunks": [
                        {
                            "web": {
                                "uri": "https://vertexaisearch.cloud.google.com/grounding-api-redirect/"
                                + base64.urlsafe_b64encode(RNG.randbytes(120)).decode().rstrip("="),
                                "title": "example.com",
                            }
                        }
                    ],
                    "webSearchQueries": ["hello world"],
                },
            }
        )
        chunk["candidates"][0]["content"]["parts"].append({"text": "", "thoughtSignature": _b64(200)})  # type: ignore[index]
        chunk["usageMetadata"] = {
            "promptTokenCount": 5,
            "candidatesTokenCount": 3,
            "totalTokenCount": 29,
            "thoughtsTokenCount": 21,
            "cachedContentTokenCount": 0,
        }
    return chunk


def gemini_sse() -> Endpoint:
    chunks = [_sse(_gemini_chunk(t, k == 2)) for k, t in enumerate(["Hello", " there", "!"])]
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "generationConfig": {
            "maxOutputTokens": 256,
            "thinkingConfig": {"thinkingBudget": 128, "includeThoughts": False},
        },
    }
    return Endpoint(
        "gemini",
        "POST",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        {
            "x-goog-api-key": "AIza-fake",
            "x-goog-api-client": "google-genai-sdk/1.38.0 gl-python/3.11.9",
            "user-agent": "google-genai-sdk/1.38.0 gl-python/3.11.9",
            "content-type": "application/json",
        },
        json.dumps(body).encode(),
        200,
        [("content-type", "text/event-stream"), ("content-disposition", "attachment"), *GOOGLE],
        chunks,
        query="alt=sse",
    )


def gemini_array() -> Endpoint:
    items = [json.dumps(_gemini_chunk(t, k == 1), indent=2) for k, t in enumerate(["Hello", " world"])]
    chunks = [b"[" + items[0].encode(), b",\r\n" + items[1].encode(), b"]"]
    return Endpoint(
        "gemini",
        "POST",
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent",
        {"content-type": "application/json", "x-goog-api-key": "AIza-fake"},
        b'{"contents":[{"parts":[{"text":"Hi"}]}]}',
        200,
        [("content-type", "application/json; charset=UTF-8"), *GOOGLE],
        chunks,
    )


AWS_REQUEST = {
    "content-type": "application/json",
    "user-agent": "Boto3/1.40.0 md/Botocore#1.40.0 ua/2.1 os/linux#6.8 "
    "md/arch#x86_64 lang/python#3.11.9 md/pyimpl#CPython cfg/retry-mode#legacy Botocore/1.40.0",
    "x-amz-date": "20261126T160437Z",
    "x-amz-security-token": "IQoJb3JpZ2luX2VjEFAKE",
    "amz-sdk-invocation-id": str(uuid.UUID(int=7)),
    "amz-sdk-request": "attempt=1; max=3",
    "authorization": "AWS4-HMAC-SHA256 Credential=AKIAFAKE/20261126/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64,
    "x-amz-content-sha256": hashlib.sha256(b"{}").hexdigest(),
}


def bedrock_converse() -> Endpoint:
    def frame(kind: str, payload: dict[str, object], n: int) -> bytes:
        return _frame(
            {":event-type": kind, ":content-type": "application/json", ":message-type": "event"},
            json.dumps({**payload, "p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"[:n]}).encode(),
        )

    frames = [
        frame("messageStart", {"role": "assistant"}, 3),
        frame(
            "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Hmm."}}}, 9
        ),
        frame(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": _b64(180)}}},
            4,
        ),
        frame("contentBlockStop", {"contentBlockIndex": 0}, 20),
        frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Hello"}}, 30),
        frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": " there"}}, 12),
        frame("contentBlockStop", {"contentBlockIndex": 1}, 7),
        frame("messageStop", {"stopReason": "end_turn"}, 16),
        frame(
            "metadata",
            {
                "usage": {
                    "inputTokens": 11,
                    "outputTokens": 9,
                    "totalTokens": 20,
                    "cacheReadInputTokens": 0,
                    "cacheWriteInputTokens": 0,
                },
                "metrics": {"latencyMs": 512},
            },
            35,
        ),
    ]
    body = {
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "inferenceConfig": {"maxTokens": 512, "temperature": 0.5},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    }
    return Endpoint(
        "bedrock",
        "POST",
        "/model/anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream",
        AWS_REQUEST,
        json.dumps(body).encode(),
        200,
        [
            ("date", HTTP_DATE),
            ("content-type", "application/vnd.amazon.eventstream"),
            ("x-amzn-requestid", _uuid()),
            ("x-amzn-trace-id", f"Root=1-{_hex(8)}-{_hex(24)};Sampled=0"),
        ],
        frames,
    )


def bedrock_invoke_stream() -> Endpoint:
    def chunk(event: dict[str, object], n: int) -> bytes:
        payload = {
            "bytes": base64.b64encode(json.dumps(event).encode()).decode(),
            "p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"[:n],
        }
        return _frame(
            {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
            json.dumps(payload).encode(),
        )

    mid = f"msg_bdrk_01{_rand(22)}"
    events = [
        {
            "type": "message_start",
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-3-5-haiku-20241022",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 12, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello!"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
        {
            "type": "message_stop",
            "amazon-bedrock-invocationMetrics": {
                "inputTokenCount": 12,
                "outputTokenCount": 5,
                "invocationLatency": 421,
                "firstByteLatency": 310,
            },
        },
    ]
    return Endpoint(
        "bedrock",
        "POST",
        "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke-with-response-stream",
        AWS_REQUEST,
        json.dumps(
            {
                "anthropic_version": "bedrock-2023-05-31",
                "max_tokens": 256,
                "messages": [{"role": "user", "content": "Hi"}],
            }
        ).encode(),
        200,
        [
            ("date", HTTP_DATE),
            ("content-type", "application/vnd.amazon.eventstream"),
            ("x-amzn-requestid", _uuid()),
            ("x-amzn-bedrock-content-type", "application/json"),
        ],
        [chunk(e, 3 + 7 * k) for k, e in enumerate(events)],
    )


def bedrock_invoke() -> Endpoint:
    answer = {
        "id": f"msg_bdrk_01{_rand(22)}",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-5-haiku-20241022",
        "content": [{"type": "text", "text": "Hello!"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": 5},
    }
    return Endpoint(
        "bedrock",
        "POST",
        "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke",
        AWS_REQUEST,
        b'{"anthropic_version":"bedrock-2023-05-31","max_tokens":256,"messages":[]}',
        200,
        [
            ("date", HTTP_DATE),
            ("content-type", "application/json"),
            ("x-amzn-requestid", _uuid()),
            ("x-amzn-bedrock-invocation-latency", "421"),
            ("x-amzn-bedrock-output-token-count", "5"),
            ("x-amzn-bedrock-input-token-count", "12"),
            ("x-amzn-bedrock-performanceconfig-latency", "standard"),
        ],
        [json.dumps(answer).encode()],
    )


def cohere() -> Endpoint:
    mid = _uuid()
    events = [
        (
            "message-start",
            {
                "id": mid,
                "type": "message-start",
                "delta": {
                    "message": {
                        "role": "assistant",
                        "content": [],
                        "tool_plan": "",
                        "tool_calls": [],
                        "citations": [],
                    }
                },
            },
        ),
        (
            "content-start",
            {
                "type": "content-start",
                "index": 0,
                "delta": {"message": {"content": {"type": "text", "text": ""}}},
            },
        ),
    ]
    events += [
        (
            "content-delta",
            {
                "type": "content-delta",
                "index": 0,
                "delta": {"message": {"content": {"text": t}}},
                "logprobs": None,
            },
        )
        for t in ["Hello", " world"]
    ]
    events += [
        ("content-end", {"type": "content-end", "index": 0}),
        (
            "message-end",
            {
                "type": "message-end",
                "delta": {
                    "finish_reason": "COMPLETE",
                    "usage": {
                        "billed_units": {"input_tokens": 3, "output_tokens": 2},
                        "tokens": {"input_tokens": 69, "output_tokens": 2},
                    },
                },
            },
        ),
    ]
    headers = [
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache, no-store, no-transform, must-revalidate, private, max-age=0"),
        ("expires", "Thu, 01 Jan 1970 00:00:00 UTC"),
        ("pragma", "no-cache"),
        ("vary", "Origin"),
        ("x-accel-expires", "0"),
        ("x-debug-trace-id", _hex(32)),
        ("x-endpoint-monthly-call-limit", "1000"),
        ("x-trial-endpoint-call-limit", "20"),
        ("x-trial-endpoint-call-remaining", "19"),
        ("num_chars", "2"),
        ("num_tokens", "5"),
        ("access-control-expose-headers", "X-Debug-Trace-ID"),
        ("x-envoy-upstream-service-time", "77"),
        ("date", HTTP_DATE),
        ("via", "1.1 google"),
        ("alt-svc", 'h3=":443"; ma=2592000'),
    ]
    body = {
        "model": "command-a-03-2025",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "max_tokens": 100,
    }
    return Endpoint(
        "cohere",
        "POST",
        "/v2/chat",
        {
            "authorization": "Bearer fake-cohere",
            "x-fern-language": "Python",
            "x-fern-sdk-name": "cohere",
            "x-fern-sdk-version": "5.17.0",
            "x-client-name": "my-app",
            "content-type": "application/json",
        },
        json.dumps(body).encode(),
        200,
        headers,
        [f"event: {name}\ndata: {json.dumps(e)}\n\n".encode() for name, e in events],
    )


def _openai_like(model: str, cid: str, extra_last: dict[str, object]) -> list[bytes]:
    base = {"id": cid, "object": "chat.completion.chunk", "created": 1764173077, "model": model}
    out = [
        _sse(
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                ],
            }
        )
    ]
    out += [
        _sse({**base, "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]})
        for t in ["Hi", "!"]
    ]
    out.append(_sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], **extra_last}))
    return [*out, b"data: [DONE]\n\n"]


def mistral() -> Endpoint:
    chunks = _openai_like(
        "mistral-small-latest",
        _hex(32),
        {"usage": {"prompt_tokens": 5, "total_tokens": 7, "completion_tokens": 2}},
    )
    headers = [
        ("date", HTTP_DATE),
        ("content-type", "text/event-stream; charset=utf-8"),
        ("mistral-correlation-id", _uuid()),
        ("x-kong-request-id", _hex(30)),
        ("x-kong-upstream-latency", "211"),
        ("x-kong-proxy-latency", "5"),
        ("x-envoy-upstream-service-time", "208"),
        ("access-control-allow-origin", "*"),
        ("x-ratelimitbysize-limit-minute", "500000"),
        ("x-ratelimitbysize-remaining-minute", "499968"),
        ("x-ratelimitbysize-limit-month", "1000000000"),
        ("x-ratelimitbysize-remaining-month", "999999968"),
        ("ratelimitbysize-limit", "500000"),
        ("ratelimitbysize-remaining", "499968"),
        ("ratelimitbysize-reset", "22"),
        ("ratelimitbysize-query-cost", "32"),
        ("x-ratelimit-limit-tokens-minute", "500000"),
        ("x-ratelimit-remaining-tokens-minute", "499968"),
        ("x-ratelimit-limit-tokens-month", "1000000000"),
        ("x-ratelimit-remaining-tokens-month", "999999968"),
        ("x-ratelimit-tokens-query-cost", "32"),
        *CLOUDFLARE,
    ]
    return Endpoint(
        "mistral",
        "POST",
        "/v1/chat/completions",
        {
            "authorization": "Bearer fake-mistral",
            "user-agent": "mistral-client-python/1.9.0",
            "content-type": "application/json",
            "accept": "text/event-stream",
        },
        b'{"model":"mistral-small-latest","messages":[{"role":"user","content":"Hi"}],"stream":true,'
        b'"max_tokens":64,"random_seed":7}',
        200,
        headers,
        chunks,
    )


def groq() -> Endpoint:
    rid = f"req_01{_rand(24).lower()}"
    chunks = _openai_like(
        "llama-3.3-70b-versatile",
        f"chatcmpl-{_uuid()}",
        {
            "x_groq": {
                "id": rid,
                "usage": {
                    "queue_time": 0.0021,
                    "prompt_tokens": 40,
                    "prompt_time": 0.0015,
                    "completion_tokens": 2,
                    "completion_time": 0.0033,
                    "total_tokens": 42,
                    "total_time": 0.0048,
                },
            },
            "system_fingerprint": f"fp_{_hex(10)}",
        },
    )
    headers = [
        ("date", HTTP_DATE),
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache"),
        ("vary", "Origin"),
        ("via", "1.1 google"),
        ("x-groq-region", "us-west-1"),
        ("x-request-id", rid),
        ("x-ratelimit-limit-requests", "14400"),
        ("x-ratelimit-limit-tokens", "6000"),
        ("x-ratelimit-remaining-requests", "14399"),
        ("x-ratelimit-remaining-tokens", "5960"),
        ("x-ratelimit-reset-requests", "6s"),
        ("x-ratelimit-reset-tokens", "400ms"),
        *CLOUDFLARE,
    ]
    return Endpoint(
        "groq",
        "POST",
        "/openai/v1/chat/completions",
        {**STAINLESS, "authorization": "Bearer gsk_fake", "user-agent": "Groq/Python 0.31.0"},
        b'{"model":"llama-3.3-70b-versatile","messages":[{"role":"user","content":"Hi"}],"stream":true}',
        200,
        headers,
        chunks,
    )


def ollama() -> Endpoint:
    lines = [
        {
            "model": "llama3.2",
            "created_at": "2026-11-26T16:04:37.123456789Z",
            "message": {"role": "assistant", "content": t},
            "done": False,
        }
        for t in ["Hel", "lo", "!"]
    ]
    lines.append(
        {
            "model": "llama3.2",
            "created_at": "2026-11-26T16:04:37.623456789Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 4883583458,
            "load_duration": 1334875,
            "prompt_eval_count": 26,
            "prompt_eval_duration": 342546000,
            "eval_count": 282,
            "eval_duration": 4535599000,
        }
    )
    return Endpoint(
        "ollama",
        "POST",
        "/api/chat",
        {"content-type": "application/json", "user-agent": "ollama-python/0.5.1"},
        b'{"model":"llama3.2","messages":[{"role":"user","content":"Hi"}],"stream":true,'
        b'"options":{"num_predict":128,"num_ctx":4096},"keep_alive":"5m"}',
        200,
        [("content-type", "application/x-ndjson"), ("date", HTTP_DATE)],
        [json.dumps(x).encode() + b"\n" for x in lines],
    )


def mcp() -> Endpoint:
    result = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": "weather", "version": "1.2.0"},
            "instructions": "Use get_forecast.",
        },
    }
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": _uuid(), "progress": 1, "total": 2, "message": "fetching"},
    }
    tool = {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {
            "content": [
                {
                    "type": "text",
                    "text": "Sunny, 21 C. Source: https://api.weather.example/v1/forecast?lat=48.85&lon=2.35",
                },
                {"type": "resource_link", "uri": "file:///reports/2026-11-26.md", "name": "report"},
            ],
            "structuredContent": {"temperature": 21, "updated": RFC3339},
            "isError": False,
        },
    }
    chunks = [
        f"id: {_uuid()}\nevent: message\ndata: {json.dumps(x)}\n\n".encode() for x in (result, progress, tool)
    ]
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "get_forecast",
            "arguments": {"city": "Paris"},
            "_meta": {"progressToken": _uuid()},
        },
    }
    return Endpoint(
        "mcp",
        "POST",
        "/mcp",
        {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18",
            "mcp-session-id": _uuid(),
            "user-agent": "python-httpx/0.28.1",
        },
        json.dumps(body).encode(),
        200,
        [
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache, no-transform"),
            ("connection", "keep-alive"),
            ("mcp-session-id", _uuid()),
            ("x-accel-buffering", "no"),
            ("date", HTTP_DATE),
        ],
        chunks,
    )


def misc_headers() -> Endpoint:
    """Headers many gateways and CDNs add: ETags, trace context, CSP, reporting, pagination links."""
    page = {
        "object": "list",
        "data": [
            {
                "id": f"file-{_rand(22)}",
                "object": "file",
                "bytes": 1234,
                "created_at": 1764173077,
                "filename": "data.jsonl",
                "purpose": "fine-tune",
                "status": "processed",
                "sha256": hashlib.sha256(b"x").hexdigest(),
            }
        ],
        "first_id": f"file-{_rand(22)}",
        "last_id": f"file-{_rand(22)}",
        "has_more": True,
        "next_page_token": base64.urlsafe_b64encode(b'{"after": 20, "limit": 20}').decode(),
        "nextPageToken": _rand(40),
        "etag": f'"{_hex(40)}"',
    }
    headers = [
        ("content-type", "application/json"),
        ("etag", f'W/"{_hex(4)}-{_rand(27)}"'),
        ("last-modified", HTTP_DATE),
        ("age", "0"),
        ("expires", "-1"),
        ("traceparent", f"00-{_hex(32)}-{_hex(16)}-01"),
        ("tracestate", f"rojo={_hex(16)},congo=t61rcWkgMzE"),
        ("x-cloud-trace-context", f"{_hex(32)}/1234567890123456789;o=1"),
        ("x-amzn-trace-id", f"Root=1-{_hex(8)}-{_hex(24)}"),
        ("x-amz-cf-id", _rand(56) + "=="),
        ("x-amz-cf-pop", "SFO53-P1"),
        ("x-cache", "Miss from cloudfront"),
        ("x-amz-apigw-id", _rand(16) + "="),
        ("x-amzn-remapped-date", HTTP_DATE),
        ("content-md5", base64.b64encode(hashlib.md5(b"x").digest()).decode()),
        ("digest", "sha-256=" + base64.b64encode(hashlib.sha256(b"x").digest()).decode()),
        ("link", '<https://api.example.com/v1/files?after=file-abc123&limit=20>; rel="next"'),
        (
            "report-to",
            json.dumps(
                {
                    "group": "cf-nel",
                    "max_age": 604800,
                    "endpoints": [{"url": f"https://a.nel.cloudflare.com/report/v4?s={_rand(120)}"}],
                }
            ),
        ),
        ("nel", '{"success_fraction":0,"report_to":"cf-nel","max_age":604800}'),
        ("x-runtime", "0.031204"),
        ("x-request-start", "t=1764173077123"),
        ("x-response-time", "31ms"),
        ("x-ratelimit-reset", "1764173137"),
        ("ratelimit-reset", "60"),
        ("retry-after", "30"),
        ("x-session-expires", RFC3339),
        ("x-token-expires-in", "3599"),
        ("x-key-rotated-at", "2026-11-26 16:04:37+00:00"),
    ]
    return Endpoint(
        "misc",
        "GET",
        "/v1/files",
        {
            "authorization": "Bearer sk-test-fake",
            "if-none-match": f'"{_hex(40)}"',
            "traceparent": f"00-{_hex(32)}-{_hex(16)}-01",
            "x-request-id": _uuid(),
        },
        None,
        200,
        headers,
        [json.dumps(page).encode()],
        query="limit=20&after=file-abc123&order=desc",
    )


def openai_429() -> Endpoint:
    error = {
        "error": {
            "message": "Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min "
            "(TPM): Limit 200000, Used 199990, Requested 120. Please try again in 36ms.",
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    return Endpoint(
        "openai",
        "POST",
        "/v1/chat/completions",
        {**STAINLESS, "authorization": "Bearer sk-test-fake"},
        b'{"model":"gpt-4o-mini","messages":[],"max_tokens":5}',
        429,
        [
            ("content-type", "application/json"),
            ("retry-after", "1"),
            ("retry-after-ms", "36"),
            ("x-ratelimit-reset-tokens", "36ms"),
            ("x-should-retry", "true"),
            ("x-request-id", f"req_{_hex(32)}"),
            *CLOUDFLARE,
        ],
        [json.dumps(error).encode()],
    )


PROVIDERS: dict[str, Endpoint] = {
    f.__name__: f()
    for f in (
        openai_chat,
        openai_responses,
        openai_429,
        anthropic,
        gemini_sse,
        gemini_array,
        bedrock_converse,
        bedrock_invoke_stream,
        bedrock_invoke,
        cohere,
        mistral,
        groq,
        ollama,
        mcp,
        misc_headers,
    )
}

# -- credentials: one per shape the scanner knows ------------------------------------------------------

_K = "Q1w2E3r4T5y6U7i8O9p0Z1x2C3v4B5n6M7"
CREDENTIALS: dict[str, str] = {
    "an Anthropic key (sk-ant-...)": "sk-ant-api03-" + _K + _K,
    "an OpenAI key (sk-proj-/sk-svcacct-/sk-admin-...)": "sk-proj-" + _K + _K,
    "an OpenAI-style key (sk-...)": "sk-" + _K + "abcd",
    "an OpenAI ephemeral key (ek_...)": "ek_" + _K[:32],  # a Realtime client secret (session.created)
    "a Google API key (AIza...)": "AIza" + (_K + _K)[:35],
    "a Google OAuth token (ya29....)": "ya29." + _K,
    "a GitHub token (gh?_...)": "ghp_" + _K[:36],
    "a GitHub token (github_pat_...)": "github_pat_" + _K + "_" + _K,
    "an AWS access key id (AKIA/ASIA...)": "AKIA" + "Q1W2E3R4T5Y6U7I8",
    "a Slack token (xox?-...)": "xoxb-123456789012-" + _K[:24],
    "a Stripe key (sk_live_/rk_live_...)": "sk_live_" + _K[:24],
    "a Hugging Face token (hf_...)": "hf_" + _K,
    "a Groq key (gsk_...)": "gsk_" + _K + _K[:18],
    "an xAI key (xai-...)": "xai-" + _K + _K,
    "a JWT (eyJ...)": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "a PEM private key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
    "a Bearer token": "Bearer " + _K,
    "Basic credentials": "Basic " + base64.b64encode(b"alice:" + _K.encode()).decode(),
}
