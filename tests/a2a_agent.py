"""The streaming A2A agent the a2a-sdk 1.3.0 tests serve on loopback (over JSON-RPC and HTTP+JSON
in tests/protocols/test_a2a.py, over gRPC in tests/sdk/test_a2a_grpc.py), its card and the
messages its clients send."""

from __future__ import annotations

import asyncio
import threading

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, Message, Part, Role, SendMessageRequest

ASK = "Weather in Berlin?"
WAIT = "Weather in Berlin? I will subscribe."


class Weather(AgentExecutor):
    """A streaming agent: the task, working (with a status message), two artifact chunks,
    completed; asked to ``WAIT``, it holds after working until ``gate`` is set (a subscriber
    has joined)."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.gate = gate

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work(updater.new_agent_message([Part(text="Looking. ")]))
        gate = self.gate
        while gate is not None and context.message.parts[0].text == WAIT and not gate.is_set():
            await asyncio.sleep(0.01)
        await updater.add_artifact([Part(text="Sunny ☀️, ")], artifact_id="forecast", last_chunk=False)
        await updater.add_artifact(
            [Part(text="21 °C.")], artifact_id="forecast", append=True, last_chunk=True
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def card(*interfaces: tuple[str, str]) -> AgentCard:
    """The agent's card, streaming, reached by each ``(protocol binding, url)``."""
    return AgentCard(
        name="weather",
        description="the weather",
        version="1",
        default_input_modes=["text"],
        default_output_modes=["text"],
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[
            AgentInterface(protocol_binding=binding, url=url, protocol_version="1.0")
            for binding, url in interfaces
        ],
    )


def request(text: str = ASK, message_id: str = "m-1") -> SendMessageRequest:
    """A user's message to the agent."""
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=message_id, parts=[Part(text=text)])
    )
