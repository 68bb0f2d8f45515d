"""Aiming: which faults apply to each interaction served, and at which attempt (`Aim`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import framing
from .fault_model import Fault, Served, framing_of

if TYPE_CHECKING:
    from ..store.cassette import Interaction

__all__ = ["Aim"]


class _AtAttempt(Fault):
    """A fault bound to the attempt it is at for the interaction it is aimed at."""

    def __init__(self, fault: Fault, attempt: int) -> None:
        self.fault, self.attempt, self.name, self.on = fault, attempt, fault.name, fault.on
        self.per_request = fault.per_request

    def apply(self, served: Served, attempt: int) -> None:
        self.fault.apply(served, self.attempt)

    def refuses(self, framing: str) -> str | None:
        return self.fault.refuses(framing)

    def needs_end(self, attempt: int = 0) -> str | None:
        return self.fault.needs_end(self.attempt)


def _listed(interactions: Sequence[Interaction], most: int = 12) -> str:
    shown = [f"#{i} {x.request.method} {x.request.url}" for i, x in enumerate(interactions[:most])]
    more = len(interactions) - most
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "") if shown else "none"


class Aim:
    """Which faults apply to each interaction served, and at which attempt.

    An aimed fault (``on=``) applies to the interactions its [`Target`][ssemock.faults.Target] matches. Unaimed,
    ``http_error`` and ``sequence`` apply to the first interaction matched (their attempts count
    the requests it answers), every other fault to each interaction whose response is a stream it
    has a meaning for (a plain JSON body, an empty body or a framing it refuses are left alone)."""

    def __init__(self, faults: Sequence[Fault]) -> None:
        self.faults = faults
        """The faults, in the order given."""
        self._pins: dict[int, int] = {}  # fault position -> the interaction it was first applied to
        self._attempts: dict[tuple[int, int], int] = {}  # (fault position, interaction) -> times applied

    def check(self, interactions: Sequence[Interaction], where: str, *, complete: bool = True) -> None:
        """Raise ValueError, naming the fault, the target and the cassette's requests, for a target
        that matches no interaction, an aimed fault that has no meaning for a response it matches,
        and (``complete``: nothing will be recorded) a stream fault no interaction can take."""
        if not interactions:
            return
        for fault in self.faults:
            if fault.on is not None:
                matched = [i for i, x in enumerate(interactions) if fault.on.matches(i, x.request)]
                if not matched:
                    raise ValueError(
                        f"ssemock: fault {fault}: its target {str(fault.on)!r} matches no interaction "
                        f"of {where}; its requests: {_listed(interactions)}"
                    )
                for i in matched:
                    if fault.websocket:  # served by the sessions it matches: an HTTP exchange cannot take it
                        if interactions[i].websocket is None:
                            raise ValueError(
                                f"ssemock: fault {fault}: its target {str(fault.on)!r} matches interaction "
                                f"#{i} ({interactions[i].request.method} {interactions[i].request.url}) of "
                                f"{where}, which is no WebSocket session: aim it at a session's URL"
                            )
                        continue
                    response = interactions[i].response
                    kind = (
                        "grpc"
                        if getattr(interactions[i], "grpc", None) is not None
                        else framing_of(response.header("content-type"), response.body)
                    )
                    why = fault.refuses(kind) or (
                        fault.refuses_interaction(interactions[i]) if response.body else None
                    )
                    if why:
                        raise ValueError(
                            f"ssemock: fault {fault} cannot apply to interaction #{i} "
                            f"({interactions[i].request.method} {interactions[i].request.url}) of "
                            f"{where}, a {kind} body: {why}"
                        )
            elif complete and not fault.per_request and not any(self.takes(fault, x) for x in interactions):
                refused = [
                    (i, why) for i, x in enumerate(interactions) if (why := fault.refuses_interaction(x))
                ]
                if refused:
                    i, why = refused[0]
                    raise ValueError(
                        f"ssemock: fault {fault} cannot apply to interaction #{i} "
                        f"({interactions[i].request.method} {interactions[i].request.url}) of {where}: "
                        f"{why}; nor to any other response of it"
                    )
                kinds = sorted(
                    {framing_of(x.response.header("content-type"), x.response.body) for x in interactions}
                )
                raise ValueError(
                    f"ssemock: fault {fault} has a meaning for no response of {where} (framings: "
                    f"{', '.join(kinds)}; a plain JSON or empty body is no stream); its requests: "
                    f"{_listed(interactions)}; aim it with on= at a response it can change"
                )

    @staticmethod
    def takes(fault: Fault, interaction: Interaction, *, arriving: bool = False) -> bool:
        """Whether an unaimed stream fault applies to ``interaction``'s response (``arriving``:
        a live stream whose body is still to come, so an empty body so far is no reason not to)."""
        response = interaction.response
        if not response.body and not arriving:
            return False
        kind = framing.detect(response.header("content-type"), response.body)
        if fault.refuses(kind.name) is not None or fault.refuses_interaction(interaction) is not None:
            return False
        return kind.stream or fault.takes_document(interaction.request.url, response.headers, response.body)

    def pick(self, index: int, interaction: Interaction, *, arriving: bool = False) -> list[Fault]:
        """The faults serving ``interaction`` (at ``index``) now goes through, each at its attempt
        (``arriving``: its body is a live stream still to come; see [`takes`][ssemock.faults.Aim.takes])."""
        out: list[Fault] = []
        for n, fault in enumerate(self.faults):
            if fault.on is not None:
                hit = fault.on.matches(index, interaction.request)
            elif fault.per_request:
                hit = self._pins.setdefault(n, index) == index
            else:
                hit = self.takes(fault, interaction, arriving=arriving)
            if hit:
                attempt = self._attempts.get((n, index), 0)
                self._attempts[n, index] = attempt + 1
                out.append(_AtAttempt(fault, attempt))
        return out
