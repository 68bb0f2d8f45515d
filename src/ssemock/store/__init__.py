"""The cassette file: the model (`Cassette`, `Interaction`, `Request`, `Response`), its JSON layout, loading with clear errors, the atomic save that the secret scan guards, the per-file lock and the naming of a test's cassette."""

from ..core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
