"""What a replay does to a gRPC call: its faults (status, drop, stall) and its pacing under timing= and deadlines."""

from ...core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
