"""One secret found in a cassette (`Finding`: where, which rule, its shape; never the value), and
the one finding per place the scan reports (`first_per_place`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Finding", "first_per_place"]


@dataclass(frozen=True)
class Finding:
    """One secret in a cassette: where (interaction, field, and the place inside the field's
    decoded form), which rule found it, and what the value looks like -- never the value."""

    interaction: int
    """The index of the interaction it is in (of the child process, for a ``stdio[k]`` field)."""
    field: str
    """Which field: ``request.url``, ``request.headers['x']``, ``request.body``, ``response.body``, ..."""
    rule: str
    """What was found: ``an Anthropic key (sk-ant-...)``, ``a credential-named field 'password'``."""
    shape: str
    """The value's length and character classes, e.g. ``20 chars: digits - : T Z``."""
    preview: str
    """The shape's public prefix and ``***``, never a character of the secret."""
    path: str = ""
    """Where inside the field: ``$.messages[0].content``, ``event 3 $.delta.text``, ``gzip``, ``base64``."""
    start: int | None = None
    """Where it starts in the field as stored (None: found only in a decoded form)."""
    end: int | None = None
    """Where it ends in the field as stored (None: found only in a decoded form)."""

    @property
    def where(self) -> str:
        """The field and the place inside it."""
        return f"{self.field} {self.path}" if self.path else self.field

    def __str__(self) -> str:
        """``interaction 0 response.body: a credential-named field 'password' at event 3 $.password
        ('***', 6 chars: a-z)``: the path after the rule, so no masking of a message takes what
        follows a credential-named path (``$.password: ...``) for its value."""
        at = f", at offset {self.start}" if self.start is not None else ""
        inside = f" at {self.path}" if self.path else ""
        place = (
            self.field if self.field.startswith("stdio[") else f"interaction {self.interaction} {self.field}"
        )
        return f"{place}: {self.rule}{inside} ({self.preview!r}, {self.shape}{at})"


def first_per_place(found: list[Finding]) -> list[Finding]:
    """One finding per (field, rule): the one found where it is stored if any (it has offsets),
    else the first one found decoded."""
    out: dict[tuple[str, str], Finding] = {}
    for f in sorted(found, key=lambda f: f.start is None):
        out.setdefault((f.field, f.rule), f)
    return sorted(out.values(), key=found.index)
