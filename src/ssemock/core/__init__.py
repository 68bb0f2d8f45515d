"""Foundations: misspelt-name errors, record modes, the private user folder and a pytest run's scratch folder. Imports nothing else of ssemock."""

from .packages import fresh

__version__ = "0.1.0"

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)
