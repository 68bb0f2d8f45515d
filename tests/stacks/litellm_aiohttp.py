"""Run by test_aiohttp.py in a venv of its own (litellm needs openai < 3): record
``litellm.acompletion(stream=True)`` (its async path sends through aiohttp) against the loopback
server given as argv[1], replay it under every chunking and transform and with a disconnect, and
print what happened as JSON."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
from typing import Any

# Full garbage collections after 100 middle-generation ones, not 10, as in the suite's own
# processes (tests/boot/ssemock_suite_boot.py): importing litellm (thousands of pydantic models)
# ran 6 full collections of a growing heap, 0.7 of its 3.8 CPU-s (issue 33).
gc.set_threshold(*gc.get_threshold()[:2], 100)

import litellm  # noqa: E402

import ssemock  # noqa: E402

TRANSFORMS = [None, "crlf", "cr", "keepalive", "no_space"]


def error(fn: Any) -> list[str] | None:
    try:
        fn()
    except Exception as exc:
        return [type(exc).__module__, type(exc).__name__, str(exc)]
    return None


async def complete(base: str) -> str:
    stream = await litellm.acompletion(
        model="openai/gpt-test",
        api_base=f"{base}/v1",
        api_key="sk-test-litellm",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        max_retries=0,
    )
    text = ""
    async for chunk in stream:
        text += chunk.choices[0].delta.content or ""
    return text


def main(base: str, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {"live_drop": error(lambda: asyncio.run(complete(f"{base}/drop")))}
    with ssemock.use_cassette(path, record_mode="once") as player:
        out["live"] = asyncio.run(complete(base))
    out["recorded"] = len(player.recorded)
    out["replays"] = {}
    for chunking in ssemock.chunking.ALL:
        for transform in TRANSFORMS:
            with ssemock.use_cassette(path, chunking=chunking, transform=transform) as player:
                text = asyncio.run(complete(base))
            out["replays"][f"{chunking}+{transform}"] = [
                text,
                player.expected.text,
                len(player.plays),
                ssemock.stacks.stack_of(player.plays[0].request),
            ]
    with ssemock.use_cassette(path, faults="disconnect:after_event=3"):
        out["disconnect"] = error(lambda: asyncio.run(complete(base)))
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])), flush=True)
    # ended without the interpreter's teardown (nothing is left to write): freeing litellm's heap
    # object by object cost 1.3 of the process's 6-7 CPU-s (issue 48 item 4)
    os._exit(0)
