"""pytest plugin: the ``ssemock`` fixture and marker, namespaced options, the variant matrix.

Options are all ``--ssemock-*`` (and ``ssemock_*`` ini keys) so the plugin coexists with
pytest-recording and cassetter. Where an option is given in several places, the marker wins,
then the command line, then the ``ssemock_config`` fixture, then the ini file; except the record
mode, where the command line wins (as ``--record-mode`` does for pytest-recording). A test
without the marker or the fixture costs nothing: no autouse fixture, nothing imported for it.

The hooks and fixtures live in the modules of this package by concern; pytest finds them
here, on the module its ``pytest11`` entry point names."""

from __future__ import annotations

from ..core.packages import fresh
from .explore import pytest_pyfunc_call
from .fixture import ssemock, ssemock_cassette_dir, ssemock_config
from .interrupts import pytest_keyboard_interrupt, pytest_timeout_set_timer
from .matrix import pytest_generate_tests
from .naming import cassette_name, pytest_make_parametrize_id
from .proxy import ssemock_proxy
from .reports import pytest_runtest_makereport, pytest_terminal_summary
from .session import pytest_collection_modifyitems, pytest_configure, pytest_unconfigure
from .settings import KEYWORDS, pytest_addoption

__all__ = [
    "pytest_configure",
    "pytest_unconfigure",
    "KEYWORDS",
    "cassette_name",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_generate_tests",
    "pytest_keyboard_interrupt",
    "pytest_make_parametrize_id",
    "pytest_pyfunc_call",
    "pytest_runtest_makereport",
    "pytest_terminal_summary",
    "pytest_timeout_set_timer",
    "ssemock",
    "ssemock_cassette_dir",
    "ssemock_config",
    "ssemock_proxy",
]

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
