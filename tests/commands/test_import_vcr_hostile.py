"""``ssemock import-vcr`` on values Python refuses to build: an integer over the 4,300 digits
Python converts, a URL that does not split (``http://[::1``), and a header holding a CR and an
LF (a cassette refuses it at load, so it is never written). Each gives one clear error line
naming the file, the interaction and the field, no traceback, and the other files still convert.
One subprocess for all of them (the CLI takes many files)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CASSETTE = """interactions:
- request:
    body: null
    headers: {{}}
    method: GET
    uri: {uri}
  response:
    body: {{string: 'ok'}}
    headers: {{}}
    status: {{code: {code}, message: OK}}
version: 1
"""
JSON = (
    '{{"interactions": [{{"request": {{"body": null, "headers": {{}}, "method": "GET", '
    '"uri": "http://127.0.0.1/a"}}, "response": {{"body": {{"string": "ok"}}, "headers": {{}}, '
    '"status": {{"code": {code}, "message": "OK"}}}}}}], "version": 1}}'
)


def test_an_integer_too_long_for_python_and_a_url_that_does_not_split_are_one_error_each(
    tmp_path: Path,
) -> None:
    huge = "7" * 5_000
    files = {
        "huge.yaml": CASSETTE.format(uri="http://127.0.0.1/a", code=huge),
        "huge_json.json": JSON.format(code=huge),
        "bad_url.yaml": CASSETTE.format(uri="http://[::1", code=200),
        "crlf.yaml": CASSETTE.format(uri="http://127.0.0.1/a", code=200).replace(
            "    headers: {}\n    status", '    headers: {X-Bad: ["a\\r\\nX-Injected: 1"]}\n    status'
        ),
        "good.yaml": CASSETTE.format(uri="http://127.0.0.1/a", code=200),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ssemock",
            "import-vcr",
            *(str(tmp_path / n) for n in files),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    assert proc.returncode == 1, out  # something was refused
    lines = out.splitlines()
    for name, says in (
        ("huge.yaml", "Exceeds the limit (4300 digits)"),
        ("huge_json.json", "Exceeds the limit (4300 digits)"),
        ("bad_url.yaml", "interaction 0: request.uri is not a URL (Invalid IPv6 URL)"),
        ("crlf.yaml", "interaction 0: GET http://127.0.0.1/a: response.headers['X-Bad'] holds a CR at 1"),
    ):
        (line,) = [x for x in lines if f"refused {tmp_path / name}" in x]
        assert says in line and "fix or remove it" in line, line
    assert (tmp_path / "out" / "good.json").exists()  # the run went on
