"""Subcommands of the ``swgpu`` CLI, one module each (see :mod:`swgpu_core.cli`)."""
