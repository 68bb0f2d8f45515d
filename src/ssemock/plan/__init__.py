"""The plan: what a replay or a recording run serves. The plan of one response and the stream a stack reads it through, recording a live response, server-push streams, choosing the interaction that answers a request, the reference expectation and its diagnosis, and the errors a replay raises. Knows no client library."""

from ..core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
