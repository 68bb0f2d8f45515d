"""Foundations: misspelt-name errors, record modes, the private user folder and a pytest run's scratch folder. Imports nothing else of ssemock."""

__version__ = "0.1.0"
