"""What a replay does to a gRPC call: its faults (status, drop, stall), its pacing under timing= and deadlines, and its wire chunkings (the DATA frames ssemock serve sends)."""

from ...core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
