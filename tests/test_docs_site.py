"""The docs site: it builds strictly, its references cover the CLI and the public API, and the
extras and CI commands it documents are the ones the project declares.

Building needs the ``docs`` extra (mkdocs-material, mkdocstrings), part of ``dev``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import needs
import pytest
from needs import CHROMIUM

import ssemock
from ssemock.commands.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SUBMODULES = [
    "chunking",
    "transforms",
    "timing",
    "faults",
    "sse",
    "ndjson",
    "accumulate",
    "matching",
    "cassettes",
    "synth",
    "conformance",
    "strategies",
    "held",
    "serve",
    "websocket",
]


def _submodule(name: str) -> ModuleType:
    """A public submodule: a front door (``ssemock.sse``), or a layer's module that the package
    exports as an attribute (``ssemock.held`` is ``ssemock.plan.push_replay``)."""
    try:
        return importlib.import_module(f"ssemock.{name}")
    except ModuleNotFoundError:
        module = getattr(ssemock, name)
        assert isinstance(module, ModuleType), name
        return module


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "hooks" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("the ssemock parser has no subcommands")


def _sections(markdown: str) -> dict[str, str]:
    """``## ssemock NAME`` heading -> the text up to the next heading."""
    parts = re.split(r"^## ssemock (\S+)$", markdown, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_cli_reference_lists_every_command_and_option() -> None:
    parser = build_parser()
    markdown = _hook().render(parser)
    sections = _sections(markdown)
    commands = _commands(parser)
    assert list(sections) == list(commands)  # every subcommand, in the order --help lists them
    for name, sub in commands.items():
        text = sections[name]
        assert sub.format_usage().split()[1:3] == ["ssemock", name]
        assert f"ssemock {name}" in text.split("```")[1], f"{name}: no usage line"
        assert (sub.description or "")[:60] in text, f"{name}: description missing"
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert f"`{option}`" in text, f"ssemock {name}: option {option} is not in the reference"
            if not action.option_strings:
                assert f"`{action.metavar or action.dest}`" in text, f"ssemock {name}: argument {action.dest}"
            if action.help:
                assert action.help.split(";")[0][:40].replace("|", "\\|").replace("<", "&lt;") in text, (
                    f"ssemock {name} {action.option_strings or action.dest}: help text missing"
                )
        for group in sub._mutually_exclusive_groups:
            assert "one of" in text and all(f"`{a.option_strings[0]}`" in text for a in group._group_actions)
    assert "`--version`" in markdown


def test_the_cli_reference_page_is_only_the_marker_and_an_introduction() -> None:
    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert _hook().MARKER in page
    assert "## ssemock" not in page  # nothing hand-written that could drift


# What a build of the site reads: the pages (and hooks, scripts, styles), mkdocs.yml, and the
# source (mkdocstrings reads its docstrings, the CLI hook renders ssemock's argparse parser).
SITE_INPUTS = [ROOT / "mkdocs.yml", DOCS, ROOT / "src" / "ssemock"]


def _newest_input() -> float:
    newest = 0.0
    for top in SITE_INPUTS:
        for path in [top] if top.is_file() else top.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                newest = max(newest, path.stat().st_mtime)
    return newest


def _given_site() -> Path | None:
    """The site ``.ci/run`` built just before the suite (``SSEMOCK_DOCS_SITE``: it runs ``mkdocs build
    --strict --site-dir "$SSEMOCK_DOCS_SITE"`` under ``set -e``, so the suite runs only if that
    strict build passed), when every file of it was written after the last change to what the build
    reads; else None (not given, or stale: the fixture builds)."""
    given = os.environ.get("SSEMOCK_DOCS_SITE")
    if not given or not (Path(given) / "index.html").is_file():
        return None
    written = [p.stat().st_mtime for p in Path(given).rglob("*") if p.is_file()]
    return Path(given) if min(written) >= _newest_input() else None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The strictly built site: the one ``.ci/run`` built from this tree right before the suite
    (the same command, so not built a second time: ~12 CPU-s, issue 33), else built here."""
    given = _given_site()
    if given is not None:
        return given
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, (
        "mkdocs build --strict failed (it needs the docs extra: pip install -e '.[dev]'):\n"
        + proc.stdout[-3000:]
        + proc.stderr[-6000:]
    )
    return out


def _ids(page: Path) -> set[str]:
    return set(re.findall(r'id="([^"]+)"', page.read_text(encoding="utf-8")))


def test_mkdocs_builds_strictly_with_every_page(site: Path) -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in sorted(DOCS.rglob("*.md")):
        relative = page.relative_to(DOCS).as_posix()
        assert f": {relative}" in nav, f"mkdocs.yml's nav does not list {relative}"
        built = site / (relative[:-3] + "/index.html" if page.name != "index.md" else relative[:-3] + ".html")
        assert built.exists(), built


# -- the architecture picture: Mermaid, vendored, drawn offline --------------------------------

MERMAID = DOCS / "js" / "mermaid.min.js"


def test_the_architecture_page_loads_the_vendored_mermaid_and_no_cdn(site: Path) -> None:
    html = (site / "architecture" / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', html)
    assert "../js/mermaid.min.js" in scripts, scripts
    # mkdocs-material fetches Mermaid from unpkg only when no global `mermaid` is loaded; no page
    # names a script that is not part of the site
    assert not [src for src in scripts if "//" in src], scripts
    built = site / "js" / "mermaid.min.js"
    assert built.read_bytes() == MERMAID.read_bytes()
    assert b'globalThis["mermaid"]' in built.read_bytes()[-4096:]  # the UMD build: a global
    licence = (DOCS / "js" / "mermaid.LICENSE").read_text(encoding="utf-8")
    assert "The MIT License" in licence and "registry.npmjs.org/mermaid/-/mermaid-11." in licence
    # the diagram: a mermaid block (superfences' custom fence) naming every layer package
    block = re.search(r'<pre class="mermaid"><code>(.*?)</code></pre>', html, re.S)
    assert block is not None, "docs/architecture.md has no ```mermaid block, or the fence is not configured"
    packages = ["core", "framing", "store", "scan", "protocols", "redaction", "variants", "plan", "stacks",
                "player", "plugin", "commands", "cassettes"]  # fmt: skip
    assert all(f"{name}/" in block.group(1) for name in packages), block.group(1)


def test_every_layer_package_has_an_internals_page(site: Path) -> None:
    layers = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    [contract] = [c for c in layers["contracts"] if c["type"] == "layers"]
    packages = {name for layer in contract["layers"] for name in re.split(r"[|:]", layer) if name.strip()}
    ids: set[str] = set()
    for page in (site / "reference").glob("internals-*/index.html"):
        ids |= _ids(page)
    missing = {name.strip() for name in packages if f"ssemock.{name.strip()}" not in ids} - {"cassettes"}
    assert not missing, f"no page under Reference > Internals renders these packages: {missing}"
    assert "ssemock.cassettes" in _ids(site / "reference" / "cassettes" / "index.html")  # public already


# The page as served, plus a script that runs first: it opens the shadow root mkdocs-material draws
# the diagram in (closed otherwise, so invisible to --dump-dom) and copies what is drawn into the DOM.
PROBE = """<script>
(function () {
  var attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    return attach.call(this, Object.assign({}, init, {mode: "open"}));
  };
  var poll = setInterval(function () {
    var host = document.querySelector("div.mermaid");
    if (host && host.shadowRoot && host.shadowRoot.querySelector("svg")) {
      clearInterval(poll);
      var out = document.createElement("pre");
      out.id = "drawn";
      out.textContent = host.shadowRoot.innerHTML;
      document.body.appendChild(out);
    }
  }, 50);
})();
</script>"""


def test_the_architecture_diagram_is_drawn_offline_in_a_browser(site: Path, tmp_path: Path) -> None:
    import html
    import http.server
    import threading
    from functools import partial

    needs.chromium("this test")
    served: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            served.append(self.path)
            if self.path == "/architecture/probe.html":
                page = (site / "architecture" / "index.html").read_text(encoding="utf-8")
                body = page.replace("<head>", "<head>" + PROBE, 1).encode("utf-8")
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        cmd = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            # offline: every host name but loopback fails to resolve (a CDN fetch would fail)
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            f"http://127.0.0.1:{server.server_port}/architecture/probe.html",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", timeout=45)
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr[-2000:]
    drawn = re.search(r'<pre id="drawn">(.*?)</pre>', proc.stdout, re.S)
    assert drawn is not None, f"no diagram was drawn; served: {served}"
    svg = html.unescape(drawn.group(1))
    assert svg.lstrip().startswith("<svg") and "1 · framing/" in svg and "axis: transport" in svg, svg[:500]
    assert "/js/mermaid.min.js" in served


def test_the_built_cli_reference_has_every_command_and_option(site: Path) -> None:
    page = site / "reference" / "cli" / "index.html"
    html = page.read_text(encoding="utf-8")
    ids = _ids(page)
    for name, sub in _commands(build_parser()).items():
        assert f"ssemock-{name}" in ids, name
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings:
                assert f"<code>{option}</code>" in html, (name, option)


def test_the_api_reference_documents_every_public_name(site: Path) -> None:
    api = _ids(site / "reference" / "api" / "index.html")
    submodules = set(SUBMODULES)
    for name in ssemock.__all__:
        if name in submodules or name == "explore":
            continue
        qualified = {"accumulate": "ssemock.accumulate.accumulate"}
        assert qualified.get(name, f"ssemock.{name}") in api, f"ssemock.{name} is not in reference/api.md"
    # explore is documented once, on its own page (two headings for one name make links ambiguous)
    assert "ssemock.explore.explore" in _ids(site / "reference" / "explore" / "index.html")
    assert 'href="../explore/#ssemock.explore.explore"' in (
        site / "reference" / "api" / "index.html"
    ).read_text(encoding="utf-8")
    assert submodules <= set(ssemock.__all__)
    for sub in SUBMODULES:
        module = _submodule(sub)
        ids = _ids(site / "reference" / sub / "index.html")
        for name in module.__all__:
            assert f"ssemock.{sub}.{name}" in ids, f"ssemock.{sub}.{name} is not in reference/{sub}.md"


# A Sphinx role left in a docstring renders as its raw text: ":func:<code>replay</code>".
RAW_ROLE = re.compile(r":(?:py:)?(?:meth|class|func|data|mod|attr|exc|obj|const|ref|term):(?:<code>|`)")
# mkdocstrings' heading of an object entry (attribute, function, method, class, module: its name),
# then the entry's description box; an empty box right after it is an entry with no description.
OBJECT = re.compile(
    r'<h\d id="([^"]+)" class="doc doc-heading">\s*(?:<code[^>]*>\s*)?'
    r'<span class="doc doc-object-name doc-(\w+)-name">'
)
CONTENTS = '<div class="doc doc-contents'
UNDESCRIBED = re.compile(r'<div class="doc doc-contents[^"]*">\s*(?:</div>|<div class="doc doc-children">)')


def test_the_built_reference_has_no_raw_sphinx_role(site: Path) -> None:
    raw = {
        str(page.relative_to(site)): RAW_ROLE.findall(page.read_text(encoding="utf-8"))
        for page in site.rglob("*.html")
    }
    assert not {page: found for page, found in raw.items() if found}, (
        "docstrings use mkdocstrings cross-references ([`replay`][ssemock.replay]), not Sphinx roles"
    )


def test_every_attribute_and_function_in_the_reference_has_a_description(site: Path) -> None:
    kinds: dict[str, int] = {}
    bare = []
    for page in sorted((site / "reference").rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        for heading in OBJECT.finditer(html):
            kinds[heading.group(2)] = kinds.get(heading.group(2), 0) + 1
            entry = html[heading.end() :]
            following = entry.find('class="doc doc-heading"')  # the next object's heading
            entry = entry if following < 0 else entry[:following]
            assert CONTENTS in entry, (page, heading.group(1))  # the marker still holds
            if UNDESCRIBED.search(entry):
                bare.append(heading.group(1))
    # the marker finds the entries (mkdocstrings did not change its markup)
    assert kinds.get("attribute", 0) > 300 and kinds.get("function", 0) > 100, kinds
    assert not bare, (
        f"shown with no description, an attribute as its bare assignment (add a docstring): {bare}"
    )


def test_player_shows_its_public_attributes_only_and_signatures_are_formatted(site: Path) -> None:
    page = site / "reference" / "api" / "index.html"
    ids = _ids(page)
    public = {i.rsplit(".", 1)[1] for i in ids if i.startswith("ssemock.Player.")}
    assert {"plays", "router", "attempts", "cassette", "chunking"} <= public
    assert not {name for name in public if name.startswith("_")} and "guard" not in public
    html = page.read_text(encoding="utf-8")
    start = html.index('id="ssemock.replay"')
    signature = html[html.index('class="doc-signature', start) :]
    signature = re.sub(r"<[^>]+>", "", signature[: signature.index("</code>")])
    # formatted (by ruff, in the docs extra): one parameter a line, not one long line
    assert "replay(\n" in signature and "\n    chunking: " in signature, signature[:300]


def _public_callables() -> list[tuple[str, object]]:
    """Every public function, class, method and property of ssemock and its public submodules."""
    out: list[tuple[str, object]] = []
    seen: set[int] = set()
    modules = [ssemock, *(_submodule(s) for s in SUBMODULES)]
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isfunction(obj):
                out.append((f"{module.__name__}.{name}", obj))
            elif inspect.isclass(obj) and obj.__module__.startswith("ssemock"):
                out.append((f"{module.__name__}.{name}", obj))
                for attr, value in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    function = (
                        value.fget if isinstance(value, property) else getattr(value, "__func__", value)
                    )
                    if inspect.isfunction(function):
                        out.append((f"{module.__name__}.{name}.{attr}", function))
    return out


def test_every_public_function_class_and_method_has_a_docstring() -> None:
    found = _public_callables()
    assert len(found) > 100
    missing = []
    for name, obj in found:
        doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        generated = (
            inspect.isclass(obj) and doc is not None and doc.startswith(f"{obj.__name__}(")
        )  # dataclass
        if not doc or generated:
            missing.append(name)
    assert not missing, f"public names without a docstring: {missing}"


# -- extras and CI ---------------------------------------------------------------------------


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def _resolved(extra: str, extras: dict[str, list[str]]) -> set[str]:
    """The distribution names an extra installs, through ``ssemock[...]`` self-references."""
    names: set[str] = set()
    for requirement in extras[extra]:
        name = re.split(r"[\s\[<>=!~;@]", requirement, maxsplit=1)[0].lower()
        if name == "ssemock":
            inner = re.search(r"\[([^\]]+)\]", requirement)
            assert inner is not None, requirement
            for other in inner.group(1).split(","):
                names |= _resolved(other.strip(), extras)
        else:
            names.add(name)
    return names


DEV_TOOLS = {
    "mypy",
    "pytest-xdist",
    "hypothesis",
    "pytest-recording",
    "vcrpy",
    "pytest-timeout",
    "pytest-asyncio",
    "anthropic",
    "brotli",
    "zstandard",
    "sseclient-py",
    "boto3",
    "responses",
}


def test_user_extras_hold_no_dev_tools_and_dev_holds_them_all() -> None:
    extras = _extras()
    assert {"httpx2", "serve", "demo", "docs", "dev"} <= set(extras)
    for extra in extras:
        if extra != "dev":
            installed = _resolved(extra, extras)
            # explore's search and its example database are hypothesis's: a user extra of its own
            allowed = {"hypothesis"} if extra == "explore" else set()
            assert not (installed & DEV_TOOLS) - allowed, (extra, installed & DEV_TOOLS)
        # together they stop pytest from starting (both register --record-mode): cassetter lives
        # in its side environment (test_every_installed_pytest_plugin_loads_in_a_bare_project)
        assert "cassetter" not in _resolved(extra, extras), extra
    dev = _resolved("dev", extras)
    assert DEV_TOOLS <= dev
    assert {"mkdocs-material", "mkdocstrings", "openai", "httpx-sse", "uvicorn", "rich"} <= dev
    assert _resolved("docs", extras) == {"mkdocs-material", "mkdocstrings", "ruff"}  # ruff formats signatures
    assert _resolved("serve", extras) == {"uvicorn", "starlette"}
    assert _resolved("explore", extras) == {"hypothesis"}


def test_every_installed_pytest_plugin_loads_in_a_bare_project(pytester: pytest.Pytester) -> None:
    """This environment holds every extra (the dev extra includes the others): pytest, with every
    installed plugin loaded as in a user's project (no ini, no addopts), starts and runs a test,
    so no two of the extras' plugins register the same option (pytest refuses to start on the
    second) and pytest stays usable in any project that installs any of the extras."""
    from importlib.metadata import entry_points

    names = sorted({ep.name for ep in entry_points(group="pytest11")})
    assert {"ssemock", "recording", "xdist", "asyncio", "hypothesispytest"} <= set(names)
    pytester.makepyfile(
        test_bare=f"""
def test_every_plugin_is_loaded(pytestconfig):
    missing = [name for name in {names!r} if not pytestconfig.pluginmanager.has_plugin(name)]
    assert missing == []
"""
    )
    pytester._monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    result = pytester.runpytest_inprocess("-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=1)


def test_ci_and_the_readme_use_the_dev_extra_and_build_the_docs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install -q -e ".[dev]"' in ci
    assert re.search(r"^(\S+=\S+ )?mkdocs build --strict", ci, re.M)
    # the site the suite checks is that strict build's, made before the suite runs
    build = ci.index('mkdocs build --strict --site-dir "$SSEMOCK_DOCS_SITE"')
    assert 'export SSEMOCK_DOCS_SITE="$(mktemp -d)"' in ci[:build] and "pytest -n 2 -q" in ci[build:]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert first is not None
    commands = [line.split("#")[0].strip() for line in first.group(1).splitlines()]
    assert commands[:2] == [
        'pip install -e ".[demo]" && ssemock demo',
        'pip install -e ".[dev]" && pytest -n 2 -q',
    ]
    assert "pytest -n 2 -q" in ci
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"^\s*pip install ssemock\b", text, re.M), f"{page}: ssemock is not on PyPI"
        assert '".[test]"' not in text and "ssemock[test]" not in text, f"{page}: there is no 'test' extra"


@pytest.mark.parametrize("module", ["ssemock.sse", "ssemock.framing.ndjson", "ssemock.transforms"])
def test_the_doctest_examples_in_module_docstrings_hold(module: str) -> None:
    import doctest

    tests = [t for t in doctest.DocTestFinder().find(importlib.import_module(module)) if t.examples]
    runner = doctest.DocTestRunner()
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, result


def test_the_replay_docstring_example_runs() -> None:
    import textwrap

    doc = ssemock.replay.__doc__ or ""
    code = textwrap.dedent(doc.split("marker):\n", 1)[1])  # the indented block after it
    namespace: dict[str, object] = {}
    exec(compile(code, "ssemock.replay.__doc__", "exec"), namespace)
    assert "player" in namespace
