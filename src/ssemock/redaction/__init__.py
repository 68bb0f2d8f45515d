"""Keeping secrets out: the default redaction rules, secrets scrubbed out of bodies with their boundary maps shifted, secrets masked in decoded forms, and refused or interrupted recordings kept masked."""

from ..core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
