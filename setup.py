"""The optional C accelerator of ssemock.sse; everything else is declared in pyproject.toml.

``optional=True``: where no C compiler is available the install still succeeds and ssemock.sse
uses its pure-Python code, which gives the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("ssemock._speedups", ["src/ssemock/_speedups.c"], optional=True)])
