"""Import vcrpy / pytest-recording cassettes (YAML, or vcrpy's JSON serializer) as ssemock cassettes.

vcrpy joins a streamed body into one blob and keeps no timing, so the imported responses get one
chunk per event of their framing (SSE event, JSON line, JSON array element) and every chunk at
t=0 -- [`NO_BOUNDARIES`][ssemock.commands.import_vcr.NO_BOUNDARIES] says so. Bodies stored compressed (vcrpy's httpx stub keeps the bytes
as they came off the wire) are decoded and their Content-Encoding dropped, as ssemock's recorder
does. A body a custom serializer kept parsed (``parsed_body``) becomes the bytes it gave vcrpy
back. Nothing is dropped silently: a field that cannot be carried over is a
[`CassetteError`][ssemock.CassetteError] naming the file, the interaction and the field (``force`` drops
it and lists it). The default redaction rules are applied; what they leave is for the caller to
check with `ssemock.redaction.rules.find_secrets` ([`import_paths`][ssemock.commands.import_vcr.import_paths] refuses such a file).

[`import_paths`][ssemock.commands.import_vcr.import_paths] imports files, folders and globs in one go and reports file by file.
"""

from __future__ import annotations

from ...core.packages import fresh
from .checks import BODY_EXPANSION as BODY_EXPANSION
from .checks import BODY_FREE as BODY_FREE
from .convert import NO_BOUNDARIES, from_vcr, import_vcr, is_ssemock_cassette, is_vcr_cassette
from .reading import YAML_BYTES_PER_VALUE as YAML_BYTES_PER_VALUE
from .reading import load_vcr
from .tree import SSEMOCK_SUFFIX as SSEMOCK_SUFFIX
from .tree import VCR_SUFFIXES as VCR_SUFFIXES
from .tree import Converted, ImportSummary, Refused, Skipped, import_file, import_paths

__all__ = [
    "NO_BOUNDARIES",
    "Converted",
    "ImportSummary",
    "Refused",
    "Skipped",
    "from_vcr",
    "import_file",
    "import_paths",
    "import_vcr",
    "is_ssemock_cassette",
    "is_vcr_cassette",
    "load_vcr",
]

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
