"""Finding secrets: credential shapes and names in bytes, text, URLs, headers and forms, and the scan of a whole cassette in every form a secret takes there (decoded bodies, events, streamed pieces joined). Knows framings, not protocols or cassette files."""

from ..core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
