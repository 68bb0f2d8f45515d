"""gRPC calls: which recorded call answers one (matching), what a replay serves (a call's steps
under faults, timing and its deadline), and how a recording is made."""

from ...core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
