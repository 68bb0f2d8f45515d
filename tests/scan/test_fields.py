"""What real traffic holds under credential-like names is no secret; a key in the same place still is
(issue 31, item 1: both directions).

Each place below is one a public corpus was falsely refused for: a recorder's placeholder
(``"api_key": "FILTERED"``, ``apikey=test_api_key``), Azure's ``azureml-model-session`` routing id,
OpenAI's ``Permissions-Policy`` header, a logprobs ``token``, an ``sk-`` run inside a reasoning
item's base64url ``encrypted_content``, and a key's short prefix (``sk-``, ``hf_``) inside MCP 2026's
sealed ``requestState`` (the suite's own MCP server made about one token in 800 refused). Every key
shape the scanner knows, put in that same place, is refused when the cassette is written.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_secrets import credentials

from ssemock import Cassette
from ssemock.scan.shapes import scan_body
from ssemock.store.cassette import SecretError

PERMISSIONS_POLICY = ", ".join(
    f"{name}=({allow})"
    for name, allow in [
        ("accelerometer", ""),
        ("camera", ""),
        ("publickey-credentials-create", "self"),
        ("publickey-credentials-get", "self"),
        ("geolocation", ""),
        ("payment", "self"),
    ]
).replace(" ", "")  # the one real header of that shape has no space: the whole value read as a form


def _fernet_like(seed: int) -> str:
    """A base64url blob like a reasoning item's ``encrypted_content``, with an ``sk-`` inside a run."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "-_"
    body = "".join(rng.choice(alphabet) for _ in range(2800))
    return "gAAAAABo" + body[:650] + "sk-" + body[650:]


def _sealed(seed: int, inside: str = "") -> str:
    """A token as MCP 2026's SDK seals a ``requestState`` (``v1.`` and base64url of a key id, a
    nonce and AES-GCM output), ``inside`` written into it past its start."""
    raw = base64.urlsafe_b64encode(random.Random(seed).randbytes(140)).decode().rstrip("=")
    return "v1." + raw[:40] + inside + raw[40:]


def _place(place: str, value: str) -> Cassette:
    """A cassette holding ``value`` in one of the places real traffic was refused for."""
    c = Cassette()
    sse = "text/event-stream"
    if place == "azureml-model-session":
        c.add(
            "POST",
            "https://x.openai.azure.com/openai/deployments/d/chat/completions",
            [b"data: ok\n\n"],
            headers={"content-type": sse, "azureml-model-session": value},
        )
    elif place == "permissions-policy":
        c.add(
            "POST",
            "https://api.openai.com/v1/chat/completions",
            [b"data: ok\n\n"],
            headers={"content-type": sse, "permissions-policy": value},
        )
    elif place.startswith("header "):  # a rate-limit, deployment or model-bucket header
        c.add(
            "POST",
            "https://example.openai.azure.com/openai/deployments/d/chat/completions",
            [b"data: ok\n\n"],
            headers={"content-type": sse, place.removeprefix("header "): value},
        )
    elif place in ("api_key", "secret_access_key", "sessionToken"):
        c.add(
            "POST",
            "https://api.example.com/v1/agents",
            [b"data: ok\n\n"],
            headers={"content-type": sse},
            request_json={"model": "m", place: value},
        )
    elif place == "form apikey":
        c.add(
            "POST",
            "https://iam.example.com/identity/token",
            [b"{}"],
            headers={"content-type": "application/json"},
            request_headers={"content-type": "application/x-www-form-urlencoded"},
            request_body=f"grant_type=urn%3Aibm%3Aparams%3Aoauth%3Agrant-type%3Aapikey&apikey={value}",
        )
    elif place == "logprobs token":
        event: Any = {
            "type": "response.output_text.delta",
            "delta": "The",
            "logprobs": [{"token": value, "logprob": -0.01, "top_logprobs": []}],
        }
        c.add(
            "POST",
            "https://api.openai.com/v1/responses",
            [f"data: {json.dumps(event)}\n\n".encode()],
            headers={"content-type": sse},
        )
    elif place == "encrypted_content":
        event = {
            "type": "response.output_item.done",
            "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": value, "summary": []},
        }
        c.add(
            "POST",
            "https://api.openai.com/v1/responses",
            [f"data: {json.dumps(event)}\n\n".encode()],
            headers={"content-type": sse},
        )
    elif place == "requestState":  # an input-required tools/call result, then the retry echoing it
        result = {"resultType": "input_required", "inputRequests": {}, "requestState": value}
        c.add(
            "POST",
            "http://127.0.0.1:8000/mcp",
            [
                f"event: message\ndata: {json.dumps({'jsonrpc': '2.0', 'id': 2, 'result': result})}\n\n".encode()
            ],
            headers={"content-type": sse},
            request_json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "ask", "arguments": {}, "inputResponses": {}, "requestState": value},
            },
        )
    else:  # pragma: no cover
        raise AssertionError(place)
    return c


#: a key's prefix and a run after it as long as the shape asks, as random base64url holds them
SHORT_PREFIXES = ["sk-", "ek_", "hf_", "ghp_", "gsk_", "xai-"]


REAL = [
    ("azureml-model-session", "d060-20240328183338"),
    ("azureml-model-session", "d20260330170902-0e618f323d34"),
    ("azureml-model-session", "AZUREML-MODEL-SESSION-XXX"),
    ("permissions-policy", PERMISSIONS_POLICY),
    ("api_key", "FILTERED"),
    ("api_key", "REDACTED"),
    ("api_key", "<OPENAI_API_KEY>"),
    ("api_key", "test_api_key"),
    ("api_key", "test-api-key"),
    ("api_key", "dummy"),
    ("api_key", "your-api-key"),
    ("api_key", "sk-***"),
    ("secret_access_key", "test_secret_access_key"),
    ("secret_access_key", "test-secret"),
    ("form apikey", "test_api_key"),
    # recorders' placeholders named for the field (issue 42: an AWS SSO refresh's, in chatlas)
    ("secret_access_key", "SCRUBBED_SECRET_ACCESS_KEY"),
    ("sessionToken", "SCRUBBED_SESSION_TOKEN"),
    ("api_key", "API_KEY_REDACTED"),
    ("form apikey", "FILTERED_API_KEY"),
    # rate-limit, deployment and model-bucket headers (LiteLLM's Azure bucket: issue 42)
    ("header x-ratelimit-key", "gpt-5.2_2025-12-11"),
    ("header x-ratelimit-bucket-key", "acct9f8e7d6c:gpt-4o-2024-08-06"),
    ("header x-ms-deployment-key", "eastus2-gpt4o-20250115-a1b2c3"),
    ("header x-model-session-key", "m-20260101-9f8e7d6c5b4a"),
    ("logprobs token", "The"),
    ("logprobs token", " Paris"),
    ("encrypted_content", _fernet_like(1)),
    ("encrypted_content", _fernet_like(2)),
    *(
        ("requestState", _sealed(k, p + "Q1w2E3r4T5y6U7i8O9p0a1s2d3f4g5"))
        for k, p in enumerate(SHORT_PREFIXES)
    ),
]


@pytest.mark.parametrize(("place", "value"), REAL, ids=[f"{p}-{k}" for k, (p, _) in enumerate(REAL)])
def test_what_real_traffic_holds_there_is_written(place: str, value: str, tmp_path: Path) -> None:
    _place(place, value).save(tmp_path / "c.json")
    assert (tmp_path / "c.json").exists()


# a value is a placeholder only when the whole value is one
NOT_PLACEHOLDERS = [
    "sk-test-" + "Q1w2E3r4T5y6U7i8O9p0a1s2d3f4g5h6j7k8l9z0x1c2v3b4",  # "test" inside a key's length
    "hunter2",
    "testpassword1",
    "REDACTEDhunter2",
    "FILTERED-9f8e7d6c5b4a",
    "SCRUBBED_hunter2",
    "hunter_REDACTED2",
]


@pytest.mark.parametrize("value", NOT_PLACEHOLDERS)
@pytest.mark.parametrize("place", ["api_key", "form apikey"])
def test_a_value_with_a_placeholder_word_inside_is_still_refused(
    place: str, value: str, tmp_path: Path
) -> None:
    with pytest.raises(SecretError):
        _place(place, value).save(tmp_path / "c.json")
    assert not (tmp_path / "c.json").exists()


PLACES = sorted({p for p, _ in REAL})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=credentials(), place=st.sampled_from(PLACES))
def test_every_key_shape_in_those_places_is_refused(
    key: str, place: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("refused")
    value = PERMISSIONS_POLICY + f",x=({key})" if place == "permissions-policy" else key
    with pytest.raises(SecretError):
        _place(place, value).save(folder / "c.json")
    assert not (folder / "c.json").exists()


def test_a_base64_blob_still_hides_no_key_in_its_decoded_form(tmp_path: Path) -> None:
    """The ``sk-`` run inside base64url is no key, but a key the blob decodes to still is one."""
    key = "sk-proj-test" + "Q1w2E3r4T5y6U7i8O9p0" * 3
    blob = base64.urlsafe_b64encode(json.dumps({"note": f"my .env: {key}"}).encode()).decode()
    with pytest.raises(SecretError):
        _place("encrypted_content", blob).save(tmp_path / "c.json")


def test_sealed_tokens_are_written_whatever_they_happen_to_hold() -> None:
    """Seeded random sealed ``requestState`` tokens: none is read as a key (before, about one in
    800 held ``sk-``, ``ek_`` or ``hf_`` and a run long enough after it), while the same token
    with a key written over its start still is."""
    found = [
        k for k in range(4000) if scan_body(_place("requestState", _sealed(k)).interactions[0].response.body)
    ]
    assert found == []
    key = "sk-" + "Q1w2E3r4T5y6U7i8O9p0" * 2
    assert scan_body(_place("requestState", key + _sealed(1)[3:]).interactions[0].response.body)
