"""The WebSocket scenarios on the websockets versions that cannot share the dev environment (issue
34): 13.1 (``websockets.connect`` is the legacy client; the asyncio client opens TCP in
``create_connection``), 13.0.1 (the asyncio client's ``connect.__init__`` makes the TCP
coroutine itself: no method to hook; the websockets clients only) and 15.0.1 (what
``openai[realtime]`` resolves to). Each side environment is built before the run from pinned
versions by ``bash .ci/side-env ws13|ws130|ws15`` (CI does; SSEMOCK_WS13_PYTHON,
SSEMOCK_WS130_PYTHON and SSEMOCK_WS15_PYTHON name others); one subprocess per environment runs
tests/stacks/ws_matrix.py, which records each scenario through the real client against a loopback
server, stops it and replays it offline, then again with a proxy in the environment (15.0 honours
``HTTPS_PROXY``: issue 41 item 5): what the client saw must be the same, and the proxy reached
by nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import side_env_python

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {
    "websockets.asyncio",
    "websockets.sync",
    "websockets.legacy",
    "openai.realtime.async",
    "openai.realtime.sync",
    "google-genai.live",
}


CLIENTS_ONLY = {"websockets.asyncio", "websockets.sync", "websockets.legacy"}  # ws130: no SDK


@pytest.mark.parametrize(
    ("env", "version", "scenarios"),
    [("ws13", "13.1", SCENARIOS), ("ws130", "13.0.1", CLIENTS_ONLY), ("ws15", "15.0.1", SCENARIOS)],
)
def test_every_scenario_replays_what_it_recorded(env: str, version: str, scenarios: set[str]) -> None:
    python = side_env_python(env)
    done = subprocess.run(
        [str(python), str(Path(__file__).with_name("ws_matrix.py"))],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    results = {r["name"]: r for r in map(json.loads, done.stdout.strip().splitlines())}
    assert set(results) == scenarios, done.stderr
    for name, result in results.items():
        assert "error" not in result, f"{name}: {result.get('error')}"
        assert result["websockets"] == version
        assert result["live"] and result["replay"] == result["live"], name
        assert result["proxied"] == result["live"] and result["proxy_reached"] == 0, name
