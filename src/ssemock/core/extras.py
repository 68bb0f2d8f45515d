"""The optional extras: how to install one (`install_hint`), and the clear error a feature raises
when the extra it needs is missing (`require`), naming the extra rather than a module deep inside."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtraError", "install_hint", "require"]


def install_hint(extra: str) -> str:
    """How to install an extra: ssemock is installed from a clone (or a git URL), not from PyPI."""
    return (
        f'pip install -e ".[{extra}]" in your ssemock clone '
        f'(or pip install "ssemock[{extra}] @ git+<URL of the ssemock repository>")'
    )


class MissingExtraError(ModuleNotFoundError):
    """A feature was used whose extra is not installed: the message names the feature, the extra
    and how to install it (a ModuleNotFoundError, so code that catches one still does)."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """``module`` imported, or MissingExtraError saying that ``feature`` needs the ``extra`` extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"ssemock: {feature} needs {module}, which the {extra!r} extra installs: {install_hint(extra)}",
            name=module,
        ) from exc
