"""A test's cassette file: named after the test (``Class.test`` in a class, the variant id left out, a secret parameter replaced by a hashed stand-in), resolved in its cassette folder."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..store.naming import file_name, recording_name

if TYPE_CHECKING:  # the rest is imported when a test uses ssemock: an unused plugin costs nothing
    pass


def _test_name(node: Any) -> tuple[str, list[str]]:
    """The test's name without the ssemock variant id, and the classes it is in (outermost first)."""
    name = re.sub(r"(?<=\[)ssemock-[^-\]]+(-|(?=\]))|-ssemock-[^-\]]+", "", node.name).replace("[]", "")
    return name, [c.name for c in getattr(node, "listchain", list)() if isinstance(c, pytest.Class)]


# a name given a value in a test id: a run of word characters and dots before "=" or ":", from its
# first letter or "_" on; matched from the run's start only, so a long run costs its length once
# (a search from every position in it made a 10,000-character id cost 2 CPU-s)
_ASSIGNED = re.compile(r"(?<![\w.])[\w.]+(?=\s*[=:])")
_NAME = re.compile(r"[A-Za-z_][\w.]*\Z")


def _assigned(name: str) -> list[str]:
    """The names given a value in a test id (``password=X``, ``api_key: X``), in order."""
    return [n[0] for m in _ASSIGNED.finditer(name) if (n := _NAME.search(m[0]))]


def _without_secrets(name: str) -> str:
    """A test id that holds a secret (a key used as a pytest parameter) with the parameters, or
    the whole id, replaced by a SHA-256 stand-in: stable across runs (replay finds the file),
    distinct per id, and no part of the key in the file name that gets committed."""
    from ..scan.shapes import credential_name, mask_text, scan

    # cut at each "-" too: pytest joins parameters with it, which would extend a fixed-length key
    cuts = [m.start() for m in re.finditer(r"[\]-]", name)]
    # a credential-named assignment, whatever its value: in an id, the value runs to the next "-"
    # or "]" ("password=X&0070": not a one-letter form value followed by another parameter)
    named = any(map(credential_name, _assigned(name)))
    if not named and mask_text(name) == name and not any(scan(name[:k]) or scan(name[k + 1 :]) for k in cuts):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    base, bracket, _ = name.partition("[")
    return f"{base}[secret-{digest}]" if bracket and mask_text(base) == base else f"secret-{digest}"


_STAND_INS = pytest.StashKey[int]()


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """A parameter that holds a secret (a key used as a pytest parameter, any value of an
    argument named like a credential: ``password``, ``api_key``) gets a hashed stand-in for its
    id, ``secret-<sha256 prefix>``: stable across runs, distinct per value, so pytest's terminal
    and reports, and the cassette file named after the test, never show it. An ``ids=`` you
    write yourself is shown as written."""
    from ..scan.shapes import credential_name, mask_text, scan

    if isinstance(val, bytes):
        text = val.decode("utf-8", "surrogateescape")
    elif isinstance(val, (str, int, float)) and not isinstance(val, bool):
        text = str(val)
    else:
        return None
    named = credential_name(argname) and text.strip() != ""
    if not named and not scan(text) and mask_text(text) == text:
        return None
    config.stash[_STAND_INS] = config.stash.get(_STAND_INS, 0) + 1
    return "secret-" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def cassette_name(node: Any) -> str:
    """The test's name without the ssemock variant id, safe as a file name; a test in a class is
    ``Class.test`` (nested: ``Outer.Inner.test``), so same-named tests never share a cassette."""
    name, classes = _test_name(node)
    return file_name(_without_secrets(".".join([*classes, name])))


def _cassette_path(spec: Any, directory: str | os.PathLike[str], node: Any) -> Path:
    """A name or relative path resolves in the test's cassette folder, never the working
    directory, and lexically: ``../other/x.json`` needs no folder of this test's to exist. An
    absolute path is taken as it is. The folder may be a str (as pytest-recording's
    ``vcr_cassette_dir`` returns, and so migrated ``ssemock_cassette_dir`` fixtures do)."""
    directory = Path(directory)
    if spec is None:
        path = directory / cassette_name(node)
        if not path.exists():  # a cassette import-vcr made from pytest-recording's name for this test
            name, classes = _test_name(node)
            imported = directory / file_name(recording_name(name, classes[-1] if classes else None))
            if imported.exists():
                return imported
        return path
    path = Path(os.path.normpath(directory / spec))
    return path if path.suffix else path.with_name(path.name + ".json")
