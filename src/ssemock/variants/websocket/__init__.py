"""What a WebSocket replay does to a session: wire chunkings (`chunking`), re-framings (`frames`),
faults (`faults`), the reads a variant gives (`serve`) and the hypothesis draws over them (`draws`)."""

from ...core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
