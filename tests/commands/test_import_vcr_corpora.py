"""Real traffic nobody on the project wrote, imported as a user imports it (issue 31; realtraffic3's
streams, issue 42).

``../shared/corpora/realtraffic2`` (348 public vcrpy cassettes from six open-source LLM projects)
and ``../shared/corpora/migration`` (pydantic-ai, llm-anthropic, llm-gemini) are converted by
``ssemock import-vcr FOLDER --out OUT``, once per run (the command line's ``main`` as ``python -m
ssemock`` runs it, in this process: a subprocess per command only added an interpreter's start). Then:
nothing is refused but the one test JWT no scanner can tell from a real one, no body is lost,
every stream is labelled with the protocol and accumulates to the text an independent decoder
(`real_traffic_reference`, written from the providers' documentation) finds, and ``ssemock
validate`` has no warning or problem on any imported file.

``../shared/corpora/realtraffic3`` (482 vcrpy files from ten more projects) is imported too: every
stream of the files it converts (its refusals are the refusal tests' business) is labelled,
accumulated (text and tool calls) and shown as the reference decodes it, with no warning from
``validate`` (issue 42 item 4: Cohere's v1 chat, Bedrock Agents, and the Cohere Command and Meta
Llama families of InvokeModel were unlabelled, mislabelled or empty).

The corpora sit beside the repository (CI clones them there and passes ``--ssemock-corpora``; see
tests/conftest.py): without them these tests are deselected. They are read, never copied in.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import import_vcr_once
from real_traffic_reference import body_of, decode_tree

import ssemock
from ssemock import Cassette, framing
from ssemock.commands.cli import main
from ssemock.redaction.rules import mask_text

#: corpus -> the part of its tree import-vcr is given, under the corpora folder
ROOTS = {"realtraffic2": Path("realtraffic2", "corpus"), "migration": Path("migration")}
#: the corpora whose streams are checked (labels, text, tool calls, show, validate)
STREAM_ROOTS = {**ROOTS, "realtraffic3": Path("realtraffic3", "corpus")}
#: how many streams each holds, at least (realtraffic3: all but the refused SSO file's)
STREAMS = {"realtraffic2": 400, "migration": 120, "realtraffic3": 835}
#: the only refusals: an HS256 test JWT (``sub: noone@ibm...``) in two watsonx cassettes
JWT_REFUSED = {
    "traceloop+openllmetry/packages/opentelemetry-instrumentation-watsonx/tests/metrics/cassettes/"
    "test_watsonx_metrics/test_generate_stream_metrics.yaml",
    "traceloop+openllmetry/packages/opentelemetry-instrumentation-watsonx/tests/traces/cassettes/"
    "test_generate/test_generate_text_stream.yaml",
}


@pytest.fixture(scope="module")
def imported(
    corpora: Path, tmp_path_factory: pytest.TempPathFactory, realtraffic3_vcr: tuple[Path, dict[str, Any]]
) -> Iterator[dict[str, tuple[Path, str]]]:
    """Each corpus imported by the CLI once a run (tests/conftest.py's `import_vcr_once`, shared by
    the xdist workers): {corpus: (output folder, what import-vcr printed)};
    realtraffic3 as the run imported it once (tests/conftest.py), its refusals as the text
    import-vcr prints them (`_refused` reads)."""
    folder, report = realtraffic3_vcr
    refusals = "".join(f"ssemock: error: refused {r['source']}: {r['reason']}\n" for r in report["refused"])
    out: dict[str, tuple[Path, str]] = {"realtraffic3": (folder, refusals)}
    for name, root in ROOTS.items():
        target, _, stdout, stderr = import_vcr_once(tmp_path_factory, name, corpora / root)
        out[name] = (target, stdout + stderr)
    yield out


def _ssemock(*args: str) -> tuple[int, str, str]:
    """``python -m ssemock ARGS`` as its ``__main__`` runs it (``main(ARGS)``), in this process:
    (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(list(args))
    return code, stdout.getvalue(), stderr.getvalue()


def _refused(output: str) -> set[str]:
    return {
        line.split("refused ", 1)[1].split(": ", 1)[0]
        for line in output.splitlines()
        if line.startswith("ssemock: error: refused ")
    }


@pytest.mark.parametrize("corpus", sorted(ROOTS))
def test_nothing_is_refused_but_the_test_jwt(corpus: str, imported: dict[str, tuple[Path, str]]) -> None:
    _, output = imported[corpus]
    refused = _refused(output)
    assert refused == (JWT_REFUSED if corpus == "realtraffic2" else set()), output[-3000:]
    lines = output.splitlines()
    for name in refused:  # its findings, one a line under it
        at = next(k for k, line in enumerate(lines) if name in line)
        assert lines[at + 1].startswith("  interaction 0 response.body: a JWT (eyJ...)"), lines[at : at + 4]
    if corpus == "migration":  # pydantic-ai's gRPC files are no vcrpy cassettes: said so, skipped
        assert output.count("not a vcrpy cassette") == 5


@pytest.mark.parametrize("corpus", sorted(ROOTS))
def test_no_body_is_lost(corpus: str, imported: dict[str, tuple[Path, str]], corpora: Path) -> None:
    folder, _ = imported[corpus]
    root = corpora / ROOTS[corpus]
    converted = 0
    for source in sorted(root.rglob("*.yaml")):
        rel = str(source.relative_to(root))
        data = yaml.load(source.read_bytes(), Loader=yaml.CSafeLoader)
        items = data.get("interactions") or []
        if rel in JWT_REFUSED or not items or "request" not in items[0]:
            continue
        cassette = Cassette.load((folder / rel).with_suffix(".json"))
        assert len(cassette.interactions) == len(items), rel
        for k, (item, x) in enumerate(zip(items, cassette.interactions)):
            response = item["response"]
            if "body" not in response and "parsed_body" in response:  # pydantic-ai's JSON form
                assert json.loads(x.response.body) == response["parsed_body"], (rel, k)
            else:
                assert x.response.body == body_of(response), (rel, k)
        converted += 1
    assert converted >= (346 if corpus == "realtraffic2" else 97)


@pytest.mark.parametrize("corpus", sorted(STREAM_ROOTS))
def test_every_stream_is_labelled_accumulated_and_shown_as_the_reference_decodes_it(
    corpus: str, imported: dict[str, tuple[Path, str]], corpora: Path
) -> None:
    folder, output = imported[corpus]
    expected = decode_tree(corpora / STREAM_ROOTS[corpus])
    refused = _refused(output)
    checked = 0
    for rel, streams in expected.items():
        if rel in refused:
            continue
        path = (folder / rel).with_suffix(".json")
        cassette = Cassette.load(path)
        code, stdout, _ = _ssemock("show", "--json", str(path))
        assert code == 0, rel
        shown = {item["index"]: item for item in json.loads(stdout)["shown"]}
        for k, want in streams.items():
            x = cassette.interactions[k]
            content_type = x.response.header("content-type")
            where = f"{rel} interaction {k}"
            if "family" in want:  # an API no protocol covers: plain events
                if want["family"] == "json error body":
                    continue
                events = framing.decode(x.response.body, content_type)
                with pytest.raises(ssemock.ProtocolError, match="cannot detect the protocol"):
                    ssemock.detect_protocol(events, url=x.request.url, content_type=content_type)
                assert shown[k]["protocol"] is None, where
                continue
            events = framing.decode(x.response.body, content_type)
            protocol = ssemock.detect_protocol(events, url=x.request.url, content_type=content_type)
            assert protocol == want["protocol"], where
            result = ssemock.accumulate(events, protocol)
            assert result.text == want["text"], where
            if "tools" in want:
                assert [(c.name, c.parsed_arguments) for c in result.tool_calls] == want["tools"], where
            show = shown[k]
            # show prints the text as it prints everything: what looks like a credential masked
            assert (show["protocol"], show["text"], show["accumulate_error"]) == (
                protocol,
                mask_text(result.text),
                None,
            ), where
            assert [c["name"] for c in show["tool_calls"]] == [c.name for c in result.tool_calls], where
            checked += 1
    assert checked >= STREAMS[corpus], checked


@pytest.mark.parametrize("corpus", sorted(STREAM_ROOTS))
def test_validate_finds_no_warning_or_problem(corpus: str, imported: dict[str, tuple[Path, str]]) -> None:
    folder, _ = imported[corpus]
    files = sorted(str(p) for p in folder.rglob("*.json"))
    code, stdout, stderr = _ssemock("validate", "--json", *files)
    assert code == 0, stdout[-3000:] + stderr[-3000:]
    reports = json.loads(stdout)
    assert len(reports) == len(files)
    assert [
        (r["path"], r["warnings"], r["problems"]) for r in reports if r["warnings"] or r["problems"]
    ] == []
