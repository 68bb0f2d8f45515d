"""The second public corpus imported as a user imports it, with no false refusal (issue 42 items 1-3).

``../shared/corpora/realtraffic3`` (10 projects' vcrpy cassettes under ``corpus/``, 95 HAR files
under ``har/``) is converted by ``ssemock import-vcr . --out OUT --json`` run in ``corpus/`` and
``ssemock import-har HAR -o OUT --json`` for each HAR, in this process (the command line's
``main``): the HARs once per module, the vcrpy files once per run (tests/conftest.py's
``realtraffic3_vcr``, whose output test_import_vcr_corpora checks). The only file refused is chatlas's AWS SSO token refresh, for its real token
fields and only for them (not the recorder's ``SCRUBBED_...`` placeholders beside them), and its
refusal lists every finding. realtraffic2 and the migration corpus are imported by
``test_import_vcr_corpora``, which asserts the same there.

The corpora sit beside the repository (CI clones them there); they are read, never written.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from ssemock.commands.cli import main

pytestmark = pytest.mark.corpora  # deselected without --ssemock-corpora (tests/conftest.py)
SSO = "posit-dev+chatlas/tests/_vcr/test_provider_bedrock/test_anthropic_simple_request.yaml"
#: the SSO refresh's real token fields: the client secret (a JWT), the refresh token it sends, the
#: access and refresh tokens it gets back
SSO_FINDINGS = [
    ("request.body", "a JWT (eyJ...)"),
    ("request.body", "a credential-named field 'refreshToken'"),
    ("request.body", "a credential-named field 'clientSecret' at $.clientSecret"),
    ("response.body", "a credential-named field 'accessToken'"),
    ("response.body", "a credential-named field 'refreshToken'"),
]


def _ssemock(*args: str) -> tuple[int, str]:
    """``python -m ssemock ARGS`` in this process: (exit code, stdout)."""
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(args))
    return code, stdout.getvalue()


@pytest.fixture(scope="module")
def corpus(corpora: Path) -> Path:
    """realtraffic3's folder in the corpora the run was given."""
    return corpora / "realtraffic3"


@pytest.fixture(scope="module")
def vcr_report(realtraffic3_vcr: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    """``import-vcr . --out OUT --json`` in realtraffic3's ``corpus/``: its report (imported once a
    run, test_import_vcr_corpora reads what it wrote: tests/conftest.py)."""
    return realtraffic3_vcr[1]


@pytest.fixture(scope="module")
def har_reports(
    corpus: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[int, dict[str, Any]]]:
    """``import-har HAR -o OUT --json`` for each HAR of realtraffic3: {HAR: (exit code, report)}."""
    out = tmp_path_factory.mktemp("har")
    reports = {}
    for k, har in enumerate(sorted((corpus / "har").rglob("*.har"))):
        code, stdout = _ssemock("import-har", str(har), "-o", str(out / f"{k}.json"), "--json")
        reports[str(har.relative_to(corpus / "har"))] = (code, json.loads(stdout))
    assert reports, f"no HAR under {corpus / 'har'}"
    return reports


def test_no_vcrpy_cassette_is_refused_but_the_sso_token_refresh(vcr_report: dict[str, Any]) -> None:
    refused = {r["source"]: r for r in vcr_report["refused"]}
    assert set(refused) == {SSO}, [(r["source"], r["reason"]) for r in vcr_report["refused"]]
    assert len(vcr_report["converted"]) == 481  # dd-trace-py's aiohttp-recorded files among them
    assert (
        sum("DataDog+dd-trace-py/tests/cassettes/openai/" in c["source"] for c in vcr_report["converted"])
        == 8
    )


def test_the_sso_refresh_is_refused_for_its_real_token_fields_only(vcr_report: dict[str, Any]) -> None:
    (refusal,) = vcr_report["refused"]
    findings = refusal["findings"]
    where_what = [f.split(": ", 1) for f in findings]
    assert [(where.split(" ", 2)[2], what.rsplit(" ('", 1)[0]) for where, what in where_what] == SSO_FINDINGS
    assert all(f.startswith("interaction 0 ") for f in findings)
    assert not any(name in " ".join(findings) for name in ("accessKeyId", "secretAccessKey", "sessionToken"))
    assert "--scrub-bodies" in refusal["what_to_do"]


def test_no_har_is_refused(har_reports: dict[str, tuple[int, dict[str, Any]]]) -> None:
    assert len(har_reports) == 95
    refused = {har: report for har, (code, report) in har_reports.items() if code or "refused" in report}
    assert refused == {}
    assert sum(report["interactions"] for _, report in har_reports.values()) >= 95
