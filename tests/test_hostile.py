"""Hostile input: cassettes and vcrpy files built to hurt (deep nesting, floods of tiny values,
huge and non-finite numbers, wrong types everywhere, FIFOs and devices, compression bombs) give
``CassetteError`` naming the file -- through ``Cassette.load``, ``import_vcr`` and every command
of the CLI, which then exits non-zero with one line and no traceback -- within a time and memory
bound. Example counts are modest so the file runs in well under a minute.
"""

from __future__ import annotations

import base64
import functools
import gzip
import json
import os
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ssemock
from ssemock import Cassette, CassetteError
from ssemock.commands.cli import main
from ssemock.commands.import_vcr import import_vcr
from ssemock.store import reading

SCALE = int(os.environ.get("SSEMOCK_FUZZ_SCALE", "1"))  # as in test_fuzz.py: 50 for a deep run
HOSTILE = settings(
    max_examples=60 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
COMMANDS = [
    ["show"],
    ["show", "--events", "--json"],
    ["validate"],
    ["rechunk", "--chunking", "bytewise", "--preview"],
    ["redact", "--check"],
    ["fix", "-o", "{out}"],
    ["import-vcr", "-o", "{out}"],
]

# -- hostile JSON text ---------------------------------------------------------------------------

_NUMBERS = [
    "1e308",
    "-1e308",
    "1e400",
    "-0.0",
    "NaN",
    "Infinity",
    "-Infinity",
    "18446744073709551616",
    "99999999999999999999999999",
    "-1",
    "0.5",
    "1.7976931348623157e308",
    "5e-324",
    "true",
    "null",
]
_DEEP = st.integers(200, 3000).map(lambda n: "[" * n + "]" * n)
_ODD = st.one_of(
    st.sampled_from(_NUMBERS),
    _DEEP,
    st.sampled_from(
        [
            '"x"',
            '""',
            "[]",
            "{}",
            '"\\ud800"',
            "[[0, 2]]",
            '{"type": "x"}',
            '["ab"]',
            "[[1e308, 2]]",
            '[["0", 2]]',
            "[[0, 1], [0, 1]]",
        ]
    ),
)


def _doc(fields: dict[str, str]) -> str:
    """A cassette with one interaction whose fields (``request.url``, ``response.chunks``, ...)
    are the given JSON texts, valid everywhere else."""
    req = {"method": '"POST"', "url": '"http://h.test/v1"', "headers": '{"a": "b"}'}
    resp = {
        "status": "200",
        "headers": '{"content-type": "text/event-stream"}',
        "body": '["data: x\\n\\n"]',
        "chunks": "[[0, 9]]",
        "complete": "true",
    }
    for where, text in fields.items():
        side, key = where.split(".")
        (req if side == "request" else resp)[key] = text
    obj = lambda d: "{" + ", ".join(f'"{k}": {v}' for k, v in d.items()) + "}"  # noqa: E731
    return '{"version": 1, "interactions": [{"request": ' + obj(req) + ', "response": ' + obj(resp) + "}]}"


_FIELDS = [
    "request.method",
    "request.url",
    "request.headers",
    "request.json",
    "request.body",
    "request.body_base64",
    "response.status",
    "response.headers",
    "response.body",
    "response.body_base64",
    "response.chunks",
    "response.complete",
    "response.error",
]
hostile_fields = st.dictionaries(st.sampled_from(_FIELDS), _ODD, min_size=1, max_size=3)
hostile_texts = st.one_of(
    hostile_fields.map(_doc),
    _DEEP.map(lambda d: '{"version": 1, "interactions": ' + d + "}"),
    st.integers(1, 2000).map(lambda n: '{"version": 1, "interactions": [' + ",".join(["{}"] * n) + "]}"),
    st.sampled_from(_NUMBERS).map(lambda v: '{"version": ' + v + ', "interactions": []}'),
)


def _load_bounded(raw: bytes, path: Path) -> Cassette | None:
    """Cassette.load gives a cassette or CassetteError naming the file (a hang runs into
    pytest-timeout); what loads saves."""
    path.write_bytes(raw)
    try:
        cassette = Cassette.load(path)
    except CassetteError as exc:
        assert str(path) in str(exc)
        return None
    again = Cassette.loads(cassette.dumps())  # what loads saves, and loads again
    assert [x.request.body for x in again.interactions] == [x.request.body for x in cassette.interactions]
    return cassette


@HOSTILE
@given(hostile_texts)
def test_hostile_cassettes_load_or_raise_cassette_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    _load_bounded(text.encode("utf-8", "surrogatepass"), tmp_path_factory.mktemp("h") / "hostile.json")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)  # any exception escaping main fails the test with its traceback
    out, err = capsys.readouterr()
    return code, out, err


@settings(HOSTILE, max_examples=25 * SCALE)
@given(hostile_texts)
def test_every_command_on_a_hostile_cassette_fails_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    folder = tmp_path_factory.mktemp("cli")
    path = folder / "hostile.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    for command in COMMANDS:
        argv = [command[0], str(path), *(a.format(out=folder / "out.json") for a in command[1:])]
        code, out, err = _run(argv, capsys)
        assert "Traceback" not in out + err
        if code != 0 and command[0] != "validate":  # validate reports on stdout, one FAIL block per file
            assert len(err.strip().splitlines()) == 1 and err.startswith("ssemock: error: "), (argv, err)
        if command[0] == "validate" and code != 0:
            assert out.startswith("FAIL") and str(path) in out


def test_a_flood_of_tiny_values_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """20 MB of ``{},{},...`` inside interactions: refused before parsing, holding the text about
    twice at most (it built ~30x the file as Python objects before)."""
    path = tmp_path / "flood.json"
    path.write_bytes(b'{"version": 1, "interactions": [' + b"{}," * 7_000_000 + b"{}]}")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        with pytest.raises(CassetteError, match="JSON values in .* bytes, more than a cassette of this size"):
            Cassette.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * size, f"{peak / size:.1f}x the file"


def test_a_cassette_in_ssemocks_own_layout_is_never_too_many_values(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A recording cut byte by byte (one chunk map pair per byte) is the densest a saved cassette
    gets: it loads, by the large-file reader, on the budget of one value per 16 bytes alone (so
    with the free values too; 54 KB where 450 KB with them was a CPU-second, issue 48 item 4)."""
    _no_free_values(monkeypatch)
    c = Cassette()
    body = b"data: x\n\n" * 6_000
    c.add("GET", "http://h.test/", [body[i : i + 1] for i in range(len(body))])
    # saved as a recording is (the same file), without the secret scan: the load is under test
    path = c.save(tmp_path / "dense.json", scan_secrets=False)
    assert path.stat().st_size >= reading.LEAN_MIN_SIZE
    assert Cassette.load(path).interactions[0].response.ends == list(range(1, len(body) + 1))


def _no_free_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the budget of one value per 16 bytes: what it allows shows at a small size."""
    import ssemock.store.size_guard as size_guard

    monkeypatch.setattr(size_guard, "FREE_VALUES", 0)


@pytest.mark.parametrize("layout", ["a pair a line", "a number a line"])
def test_a_chunk_map_of_one_byte_chunks_fits_the_budget_in_either_layout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, layout: str
) -> None:
    """A pair on its line (20 bytes or more) counts as one value, though its list, numbers and
    comma are three; the layout before (a number a line) takes 60 bytes for them."""
    _no_free_values(monkeypatch)
    body = b"data: x\n\n" * 2_000
    c = Cassette()
    c.add("GET", "http://h.test/", [body[i : i + 1] for i in range(len(body))])
    raw = c.dumps()
    if layout == "a number a line":
        raw = orjson.dumps(orjson.loads(raw), option=orjson.OPT_INDENT_2)
    path = tmp_path / "dense.json"
    path.write_bytes(raw)
    assert Cassette.load(path).interactions[0].response.ends == list(range(1, len(body) + 1))


_IN_A_MAP = (
    b'{"version": 1, "interactions": [{"request": {"method": "GET", "url": "http://h/"}, '
    b'"response": {"status": 200, "body": ["x"], "chunks": [',
    b"[0, 1]]}}]}",
)


@pytest.mark.parametrize(
    "flood",
    [
        _IN_A_MAP[0] + b"[0,1]," * 100_000 + _IN_A_MAP[1],
        _IN_A_MAP[0] + b"[0, 1], " * 100_000 + _IN_A_MAP[1],
        _IN_A_MAP[0] + b"[0, 1],\n" * 100_000 + _IN_A_MAP[1],
        _IN_A_MAP[0] + b"0, " * 100_000 + _IN_A_MAP[1],
        # the line break between two pairs, inside a string: not ssemock's layout, not counted out
        b'{"version": 1, "interactions": [' + b"{}," * 100_000 + b'"' + b"],\n          [" * 100_000 + b'"]}',
    ],
    ids=["compact-pairs", "pairs-on-one-line", "pairs-unindented", "numbers", "pair-breaks-in-a-string"],
)
def test_a_flood_of_pairs_outside_the_layout_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flood: bytes
) -> None:
    _no_free_values(monkeypatch)
    path = tmp_path / "flood.json"
    path.write_bytes(flood)
    with pytest.raises(CassetteError, match="JSON values in .* bytes, more than a cassette of this size"):
        Cassette.load(path)


_NOT_REGULAR = ["fifo", "dev_zero", "directory", "socket"]
_COMMANDS = ["show", "validate", "rechunk", "redact", "fix", "import-vcr", "serve"]

# One Python process runs every command on every kind of file, as `python -m ssemock` would
# (`raise SystemExit(main())`): main()'s exit code, what it printed, and a traceback if anything
# escaped it. Each command gets 20 s (SIGALRM: a hang is reported as one, not waited on) and the
# process 4 GiB (a read of /dev/zero ends in MemoryError here, never in the test run's worker).
# One process instead of 28 (~0.22 CPU-s each to start and import the command line; issue 33).
_RUN_EACH = r"""
import contextlib, io, json, resource, signal, sys, traceback
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
from ssemock.commands.cli import main

def hung(*_):
    raise TimeoutError("hung for 20 s")

signal.signal(signal.SIGALRM, hung)
done = {}
for key, argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        signal.alarm(20)
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            signal.alarm(0)
    done[key] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(done))
"""


@pytest.fixture(scope="module")
def not_regular(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Path, int, str, str]]]:
    """Per ``make/command``: the target, and the exit code, stdout and stderr of the command on it."""
    import socket

    tmp = tmp_path_factory.mktemp("not-regular")
    fifo, sock_path = tmp / "pipe.json", tmp / "s.json"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    targets = {"fifo": fifo, "dev_zero": Path("/dev/zero"), "socket": sock_path}
    cases, where = [], {}
    for make in _NOT_REGULAR:
        for command in _COMMANDS:
            key = f"{make}/{command}"
            scratch = tmp / make / command
            scratch.mkdir(parents=True)
            target = targets.get(make, scratch)  # a directory: an empty one of its own
            extra = {
                "rechunk": ["--chunking", "bytewise", "--preview"],
                "import-vcr": ["-o", str(scratch / "o.json")],
            }
            cases.append([key, [command, str(target), *extra.get(command, [])]])
            where[key] = target
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _RUN_EACH, json.dumps(cases)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        sock.close()
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout.splitlines()[-1])
    yield {key: (where[key], *done[key]) for key in where}


@pytest.mark.parametrize("make", _NOT_REGULAR)
@pytest.mark.parametrize("command", _COMMANDS)
def test_commands_refuse_files_that_are_not_regular_without_hanging(
    not_regular: dict[str, tuple[Path, int, str, str]], make: str, command: str
) -> None:
    """A FIFO hung every command; /dev/zero was read until MemoryError. Now: one line, exit 1."""
    target, code, stdout, stderr = not_regular[f"{make}/{command}"]
    assert code == 1, stdout + stderr
    if make == "directory" and command in ("validate", "redact"):  # they search folders: none here
        assert stderr.strip() == f"ssemock: error: no cassette (*.json) in {target}"
        return
    lines = (stdout if command == "validate" else stderr).strip().splitlines()
    assert "not a regular file" in lines[-1] and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == (0 if command == "validate" else 1)


def test_chunk_times_out_of_range_never_reach_timing(tmp_path: Path) -> None:
    """t_ms of 1e308 was accepted, then timing="recorded" raised OverflowError (sync) or hung (async)."""
    with pytest.raises(CassetteError, match=r"response.chunks\[0\]: time 1e\+308 ms is out of range"):
        Cassette.loads(_doc({"response.chunks": "[[1e308, 9]]"}), path="t.json")
    c = Cassette()
    for times in ([1e308], [float("nan")], [float("inf")], [-1.0], [86_401.0]):
        with pytest.raises(ValueError, match="times must be finite"):
            c.add("GET", "http://h.test/", [b"data: x\n\n"], times=times)


# -- a request body too deep for the layout ------------------------------------------------------


def _nested(depth: int) -> Any:
    return functools.reduce(lambda v, _: {"a": v}, range(depth - 1), {"a": 1})


def test_a_recorded_request_body_too_deep_for_the_layout_is_saved_as_text(
    tmp_path: Path, server: str
) -> None:
    """JSON nested 255+ deep in a request body made the save fail and the recording was lost."""
    body = json.dumps(_nested(400)).encode()
    path = tmp_path / "deep.json"
    with ssemock.use_cassette(path, record_mode="all"), httpx.Client() as client:
        assert client.post(f"{server}/v1/chat/completions", content=body).status_code == 200
    (x,) = Cassette.load(path).interactions
    assert x.request.body == body
    with ssemock.use_cassette(path), httpx.Client() as client:  # and it replays, matched by that body
        assert client.post(f"{server}/v1/chat/completions", content=body).status_code == 200


def test_a_request_json_too_deep_for_the_layout_in_a_file_is_a_cassette_error() -> None:
    deep = "[" * 251 + "]" * 251
    with pytest.raises(CassetteError, match="request.json is nested deeper than a cassette keeps JSON"):
        Cassette.loads(_doc({"request.json": deep}), path="deep.json")
    assert (
        Cassette.loads(_doc({"request.json": "[" * 250 + "]" * 250})).interactions[0].request.json()
        is not None
    )


# -- vcrpy imports -------------------------------------------------------------------------------

_YAML_TOKENS = [
    "[",
    "]",
    "{",
    "}",
    "- ",
    "-",
    ": ",
    ":",
    ", ",
    "\n",
    "  ",
    "&a ",
    "*a",
    "&b ",
    "*b",
    "!!binary ",
    "!!python/tuple ",
    "!!python/object:os.system ",
    "!!str ",
    "? ",
    "interactions",
    "request",
    "response",
    "method",
    "uri",
    "body",
    "string",
    "status",
    "code",
    "headers",
    "GET",
    "http://h/",
    "200",
    "1e400",
    '"\\ud800"',
    "'x'",
    '"',
    "|\n  ",
    "%YAML 1.1\n",
    "---\n",
    "...\n",
    "<<: *a\n",
    "~",
    "0x1f",
    "\t",
]
hostile_yaml = st.one_of(
    st.lists(st.sampled_from(_YAML_TOKENS), max_size=60).map("".join),
    st.integers(300, 30_000).map(lambda n: "[" * n + "]" * n),
    st.integers(300, 30_000).map(lambda n: "- " * n + "x\n"),
    st.integers(300, 30_000).map(lambda n: '{"interactions": ' + "[" * n + "]" * n + "}"),
)


def _vcr_interaction(draw: st.DrawFn) -> Any:
    odd = st.one_of(
        st.none(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=5),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )
    request = {"method": "POST", "uri": "http://h.test/v1", "body": '{"a": 1}', "headers": {"A": ["b"]}}
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Type": ["text/event-stream"]},
        "body": {"string": "data: x\n\n"},
    }
    for _ in range(draw(st.integers(1, 3))):
        side = draw(st.sampled_from([request, response]))
        side[draw(st.sampled_from(sorted(side)))] = draw(odd)
    return {"request": request, "response": response}


hostile_vcr = st.composite(lambda draw: {"interactions": [_vcr_interaction(draw)], "version": 1})()


def _import_bounded(path: Path) -> Cassette | None:
    try:
        return import_vcr(path)
    except CassetteError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return None


@HOSTILE
@given(hostile_yaml)
def test_hostile_yaml_imports_or_raises_cassette_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    path = tmp_path_factory.mktemp("vcr") / "hostile.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    _import_bounded(path)


@HOSTILE
@given(hostile_vcr, st.sampled_from(["yaml", "json"]))
def test_vcr_cassettes_with_wrong_types_import_or_raise_cassette_error(
    tmp_path_factory: pytest.TempPathFactory, doc: Any, form: str
) -> None:
    path = tmp_path_factory.mktemp("vcr") / f"typed.{form}"
    path.write_text(yaml.safe_dump(doc) if form == "yaml" else json.dumps(doc))
    cassette = _import_bounded(path)
    if cassette is not None:
        Cassette.loads(cassette.dumps())  # what imports saves and loads


def test_a_vcr_request_line_with_a_newline_is_named_on_one_line(tmp_path: Path) -> None:
    """An error of an interaction names its request: a method or URI holding a newline is shown
    escaped, so the error stays one line (a drawn method of "\\n" made it two)."""
    path = tmp_path / "newline.json"
    interaction = {
        "request": {"method": "\n", "uri": "http://h.test/a\tb", "body": "", "headers": {}},
        "response": {"status": None, "headers": {}, "body": {"string": ""}},
    }
    path.write_text(json.dumps({"interactions": [interaction], "version": 1}))
    with pytest.raises(CassetteError) as raised:
        import_vcr(path)
    message = str(raised.value)
    assert "\n" not in message and "\t" not in message and str(path) in message
    assert "\\n http://h.test/a\\tb: response.status" in message


def test_a_30000_deep_yaml_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    """It segfaulted the interpreter (PyYAML's composer recursed in C)."""
    path = tmp_path / "deep.yaml"
    path.write_text("[" * 30_000 + "]" * 30_000)
    proc = subprocess.run(
        [sys.executable, "-m", "ssemock", "import-vcr", str(path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stderr
    # ssemock's own depth cap, or the one newer PyYAML C parsers have (in its own words): either
    # way one line of ssemock's, the file named, no traceback
    (line,) = proc.stderr.strip().splitlines()
    assert "Traceback" not in line
    assert line.startswith(f"ssemock: error: refused {path}: ") and "not a vcrpy cassette" in line


def _vcr_yaml(response: dict[str, Any]) -> str:
    """A vcrpy cassette of one interaction, written by libyaml's emitter when it is there, as
    vcrpy writes (the same text as yaml.safe_dump's; the pure-Python one took 1.4 s for the bomb)."""
    return yaml.dump(
        {
            "interactions": [
                {
                    "request": {"method": "GET", "uri": "http://h.test/", "body": None, "headers": {}},
                    "response": response,
                }
            ],
            "version": 1,
        },
        Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
    )


def _gzip_of_zeros(mib: int) -> bytes:
    """A valid gzip member of ``mib`` MiB of zeros, ~4.6 KB a MiB, as ``gzip.compress`` at level 1
    would make it, built without compressing them all (that took a second of CPU): after a full
    flush each MiB of zeros deflates to the same independent block, so the block is repeated."""
    zeros = bytes(1 << 20)
    deflate = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)  # the header, then 1 MiB
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH) == block
    last = deflate.flush()[:-8]  # the final block, without the trailer of what this object saw
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    trailer = crc.to_bytes(4, "little") + ((mib << 20) & 0xFFFFFFFF).to_bytes(4, "little")
    return first + block * (mib - 1) + last + trailer


def test_the_zeros_bomb_is_valid_gzip() -> None:
    assert gzip.decompress(_gzip_of_zeros(3)) == bytes(3 << 20)


def test_a_compression_bomb_is_refused(tmp_path: Path) -> None:
    bomb = _gzip_of_zeros(400)  # ~2 MB that inflate to 400 MB
    path = tmp_path / "bomb.yaml"
    path.write_text(
        _vcr_yaml(
            {
                "status": {"code": 200},
                "headers": {"Content-Encoding": ["gzip"]},
                "body": {"base64_string": base64.b64encode(bomb).decode()},
            }
        )
    )
    tracemalloc.start()
    try:
        with pytest.raises(
            CassetteError,
            match=r"interaction 0: GET http://h.test/: response.body \(gzip\): the bodies decode to more",
        ):
            import_vcr(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 << 20  # the budget: 64 MB + 16x the file, and a copy while decoding


def test_yaml_aliases_cannot_multiply_a_body_past_the_budget(tmp_path: Path) -> None:
    big = "x" * (1 << 20)
    path = tmp_path / "laughs.yaml"
    path.write_text(
        f"big: &a '{big}'\ninteractions:\n- request: {{method: GET, uri: 'http://h/'}}\n"
        f"  response:\n    status: 200\n    body: [{', '.join(['*a'] * 200)}]\n"
    )
    with pytest.raises(CassetteError, match="the bodies decode to more than an import allows"):
        import_vcr(path)


@pytest.mark.parametrize(
    "text, says",
    [
        ("interactions: !!python/object:os.system [x]\n", "unsupported YAML tag"),
        ("a: &a [*a]\ninteractions: []\n", "refers to no complete anchor"),
        ("interactions: []\n? [a]\n: b\n", "a YAML mapping key is a list"),
        (
            "interactions:\n- request: {method: GET, uri: 'http://h/', headers: {a: [[1]]}}\n  response: {status: 200}\n",
            "request.headers['a'] must be text",
        ),
        (
            'interactions:\n- request: {method: GET, uri: "http://h/\\uDC80"}\n  response: {status: 200}\n',
            "YAML does not parse",
        ),
    ],
)
def test_vcr_shapes_that_are_refused(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(text)
    with pytest.raises(CassetteError, match=says.replace("[", r"\[").replace("]", r"\]")):
        import_vcr(path)


def test_text_that_cannot_be_written_as_utf8_is_refused() -> None:
    from ssemock.commands.import_vcr import from_vcr

    doc = {
        "interactions": [
            {"request": {"method": "GET", "uri": "http://h/\udc80"}, "response": {"status": 200}}
        ]
    }
    with pytest.raises(CassetteError, match="request.uri holds a lone surrogate"):
        from_vcr(doc, "odd.yaml")


@pytest.fixture
def vcr_like(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "ok.yaml"
    path.write_text(
        _vcr_yaml(
            {
                "status": {"code": 200, "message": "OK"},
                "headers": {"Content-Type": ["text/event-stream"]},
                "body": {"string": "data: a\n\ndata: b\n\n"},
            }
        )
        + "shared: &h [x]\nagain: *h\n"
    )
    yield path


def test_an_ordinary_vcr_file_still_imports_as_yaml_load_reads_it(vcr_like: Path) -> None:
    from ssemock.commands.import_vcr.reading import _yaml_loader, load_vcr

    assert load_vcr(vcr_like) == yaml.load(vcr_like.read_bytes(), Loader=_yaml_loader())
    assert import_vcr(vcr_like).interactions[0].response.ends == [9, 18]


def test_a_flood_in_a_json_vcr_file_is_refused_before_it_is_built(tmp_path: Path) -> None:
    path = tmp_path / "flood.json"
    path.write_bytes(b'{"interactions": [' + b"{}," * 2_000_000 + b"{}]}")
    with pytest.raises(CassetteError, match="JSON values in .* bytes"):
        import_vcr(path)


@pytest.mark.parametrize(
    "text",
    [
        _doc({"request.json": "[" * 300 + "]" * 300}),
        _doc({"response.chunks": "[[1e308, 9]]"}),
        _doc({"request.headers": '{"a": [1]}'}),
        '{"version": 1, "interactions": ' + "[" * 5000 + "]" * 5000 + "}",
    ],
)
def test_serve_refuses_a_hostile_cassette_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(text)
    code, out, err = _run(["serve", str(path)], capsys)  # fails while loading: no server is started
    assert code == 1 and err.startswith(f"ssemock: error: {path}") and len(err.strip().splitlines()) == 1


def test_serve_refuses_a_bad_fault_value_before_serving(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It answered 500 to every request instead."""
    path = tmp_path / "ok.json"
    c = Cassette()
    c.add("GET", "http://h.test/", [b"data: x\n\n"])
    c.save(path)
    code, out, err = _run(["serve", str(path), "--faults", "disconnect:after_event=x"], capsys)
    assert code == 1 and err.strip() == (
        "ssemock: error: bad fault 'disconnect:after_event=x': disconnect: "
        "after_event must be a whole number >= 0, got 'x'"
    )
