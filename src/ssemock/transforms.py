"""Transforms: rewrite a stream's bytes without changing what a conforming decoder yields.

Pass them by name to ``transform=`` (``ssemock.replay(cassette, transform="crlf")``, the marker,
``ssemock serve --transform``), or apply them yourself; the chunk ends move with the bytes:

    >>> from ssemock import transforms
    >>> transforms.apply([transforms.crlf], b"data: a\\n\\n", [3, 9])
    (b'data: a\\r\\n\\r\\n', [3, 11])

SSE transforms keep the events a WHATWG decoder yields (``ids`` gives events ids where the body
had none; ``raw_unicode`` writes JSON escapes as the characters they stand for, the same JSON
value). JSON-lines transforms (``crlf``, ``cr``, ``blank_lines``, ``raw_unicode``,
``no_final_newline``) keep the decoded objects. JSON array transforms write the whitespace and
line breaks real servers put around and inside elements (``compact``, ``pretty``,
``bracket_lines``, ``crlf``, ``cr``) and keep the decoded elements. A transform that does not
apply to a body (``keepalive`` on JSON lines, ``raw_unicode`` on a body without such escapes,
``ids`` on a body that has ids, anything on a plain JSON body) leaves it as it is, and
[`applies`][ssemock.transforms.applies] says so and [`skipped_because`][ssemock.transforms.skipped_because] why, so a matrix does not run the same bytes
twice and says why it did not.
"""

import sys

from .variants.transforms import *  # noqa: F403 (the public names, listed in its __all__)
from .variants.transforms import __all__ as __all__

# One module under both names (patching one patches both), taken from sys.modules (the package
# attribute may be a copy an earlier in-process pytest run imported and dropped); it carries this
# public docstring, which help() and doctest read.
_module = sys.modules[f"{__package__}.variants.transforms"]
_module.__doc__ = __doc__
sys.modules[__name__] = _module
