"""The C extension; everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("trainmedic_native", ["trainmedic_native.c"])])
