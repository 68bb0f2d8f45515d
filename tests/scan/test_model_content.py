"""A credential-named field in what a model generated, or whose value is a word of the prompt, is
no secret; every key shape is still one there, and a login request's password still is
(`ssemock.scan.model_content`, through `scan_cassette`: issue 42 item 1)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from secrets_corpus import CREDENTIALS

from ssemock import Cassette
from ssemock.scan.walk import scan_cassette

WORD = "opensesame"  # a credential-named value a model may write: no key shape, not generated-looking
GENERATED = "9f8e7d6c5b4a39281706f5e4"  # a generated-looking value


def _sse(events: list[dict[str, Any]]) -> list[bytes]:
    return [f"data: {json.dumps(e)}\n\n".encode() for e in events]


def _thirds(text: str) -> list[str]:
    """``text`` in three pieces, as a model streams it."""
    n = len(text)
    return [text[: n // 3], text[n // 3 : 2 * n // 3], text[2 * n // 3 :]]


def _openai_chat(args: str) -> list[bytes]:
    return _sse(
        [
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}
                ]
            }
            for piece in _thirds(args)
        ]
    )


def _responses(args: str) -> list[bytes]:
    where = {"item_id": "fc_1", "output_index": 0}
    deltas = [{"type": "response.function_call_arguments.delta", **where, "delta": p} for p in _thirds(args)]
    return _sse([*deltas, {"type": "response.function_call_arguments.done", **where, "arguments": args}])


def _anthropic(args: str) -> list[bytes]:
    return _sse(
        [
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in _thirds(args)
        ]
    )


def _gemini(args: str) -> list[bytes]:
    call = {"functionCall": {"name": "login", "args": json.loads(args)}}
    return _sse([{"candidates": [{"content": {"parts": [call], "role": "model"}}]}])


#: a model's tool call in a streamed response, by provider: (the arguments' JSON) -> the chunks
RESPONSES: dict[str, Callable[[str], list[bytes]]] = {
    "openai chat": _openai_chat,
    "openai responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}

#: the next request, with the model's tool call in its history, by provider
HISTORIES: dict[str, Callable[[str], Any]] = {
    "openai chat": lambda args: {
        "messages": [
            {"role": "user", "content": "log in"},
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "function": {"name": "login", "arguments": args}}],
            },
        ]
    },
    "openai responses": lambda args: {
        "input": [
            {"role": "user", "content": "log in"},
            {"type": "function_call", "call_id": "c", "name": "login", "arguments": args},
        ]
    },
    "anthropic": lambda args: {
        "messages": [
            {"role": "user", "content": "log in"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "login", "input": json.loads(args)}],
            },
        ]
    },
    "gemini": lambda args: {
        "contents": [
            {"role": "user", "parts": [{"text": "log in"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "login", "args": json.loads(args)}}]},
        ]
    },
}


def _in_response(provider: str, value: str) -> Cassette:
    cassette = Cassette()
    cassette.add(
        "POST",
        "https://api.example.com/v1/chat",
        RESPONSES[provider](json.dumps({"user": "bob", "password": value})),
        headers={"content-type": "text/event-stream"},
        request_json={"messages": [{"role": "user", "content": "log in as bob"}]},
    )
    return cassette


def _in_history(provider: str, value: str) -> Cassette:
    cassette = Cassette()
    cassette.add(
        "POST",
        "https://api.example.com/v1/chat",
        [b'{"ok": true}'],
        headers={"content-type": "application/json"},
        request_json=HISTORIES[provider](json.dumps({"user": "bob", "password": value})),
    )
    return cassette


PLACES = {"response": _in_response, "history": _in_history}


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("provider", sorted(RESPONSES))
def test_a_credential_named_argument_is_no_secret_on_its_name_alone(provider: str, place: str) -> None:
    assert scan_cassette(PLACES[place](provider, WORD)) == []


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("provider", sorted(RESPONSES))
def test_a_generated_looking_argument_under_a_credential_name_is_still_refused(
    provider: str, place: str
) -> None:
    found = scan_cassette(PLACES[place](provider, GENERATED))
    assert "a credential-named field 'password'" in {f.rule for f in found}


@pytest.mark.parametrize("shape", sorted(CREDENTIALS))
@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("provider", sorted(RESPONSES))
def test_every_key_shape_is_still_refused_in_every_position(provider: str, place: str, shape: str) -> None:
    found = scan_cassette(PLACES[place](provider, CREDENTIALS[shape]))
    assert found, (provider, place, shape)
    assert {f.field for f in found} == {"response.body" if place == "response" else "request.body"}


PROMPT = "Log in with the first of these passwords: mellon,radiance"


def test_a_word_of_the_prompt_is_no_secret_under_a_credential_name() -> None:
    cassette = Cassette()
    cassette.add(  # the model's answer, as JSON text (no tool call): the prompt's own word
        "POST",
        "https://api.example.com/v1/chat",
        [b'{"login": {"password": "mellon"}}'],
        headers={"content-type": "application/json"},
        request_json={"messages": [{"role": "user", "content": PROMPT}]},
    )
    assert scan_cassette(cassette) == []


def test_a_login_or_token_request_is_still_refused() -> None:
    cassette = Cassette()
    url = "https://auth.example.com/login"
    cassette.add("POST", url, [b"{}"], request_json={"username": "bob", "password": "mellon"})
    # the password is the username: no prose carries it
    cassette.add("POST", url, [b"{}"], request_json={"username": "mellon", "password": "mellon"})
    # a GraphQL login mutation: its variables' input is no model's
    mutation = {"query": "mutation Login($input: LoginInput!) { login(input: $input) { ok } }"}
    cassette.add(
        "POST", url, [b"{}"], request_json={**mutation, "variables": {"input": {"password": "mellon"}}}
    )
    cassette.add(
        "POST",
        "https://auth.example.com/token",
        [b'{"access_token": "mellon"}'],
        headers={"content-type": "application/json"},
        request_json={"grant_type": "client_credentials", "client_secret": "mellon"},
    )
    found = {(f.interaction, f.field, f.rule) for f in scan_cassette(cassette)}
    assert found == {
        (0, "request.body", "a credential-named field 'password'"),
        (1, "request.body", "a credential-named field 'password'"),
        (2, "request.body", "a credential-named field 'password'"),
        (3, "request.body", "a credential-named field 'client_secret'"),
        (3, "response.body", "a credential-named field 'access_token'"),
    }


def test_a_prompt_word_does_not_clear_a_field_it_is_not() -> None:
    """The prompt says "mellon": a password field holding "radiant" is still refused."""
    cassette = Cassette()
    cassette.add(
        "POST",
        "https://auth.example.com/login",
        [b"{}"],
        request_json={"note": PROMPT, "password": "radiant"},
    )
    assert [f.rule for f in scan_cassette(cassette)] == ["a credential-named field 'password'"]
