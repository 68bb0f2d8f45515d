"""WebSocket sessions in the plan: what a recording keeps (`record`), what a replay expects
(`expect`), a session refused with the difference (`refused`), a session served under a variant
(`variants`), the lanes of a session that multiplexes responses (`lanes`) and the handshake's HTTP
heads (`handshake`). The conversation itself (shared with the other transports that talk) is `ssemock.plan.conversation`."""

from ...core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
