"""The player: `replay` / `use_cassette` and the `Player` they start: lifecycle, dispatch from the stacks, the recording session's ends, assertions and reports; explore (many runs of the player) and vcrpy-style hooks."""

from ..core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
