"""The optional C accelerator of ssemock.sse (ssemock.framing), the cassette layout and the secret scan; everything else is declared in pyproject.toml.

``optional=True``: where no C compiler is available the install still succeeds and ssemock.sse
uses its pure-Python code, which gives the same results.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[Extension("ssemock.framing._speedups", ["src/ssemock/framing/_speedups.c"], optional=True)]
)
