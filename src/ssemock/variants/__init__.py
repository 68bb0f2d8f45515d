"""Variants: what a replay does to a recorded stream. Chunkings (where boundaries fall), transforms (bytes that decode the same), faults (what networks and providers break), timings (when chunks arrive) and the hypothesis strategies that draw them. Pure functions of bytes, ends and framing."""

from ..core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
