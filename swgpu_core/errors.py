"""Errors that the CLI turns into one-line messages.

Every problem a user can cause (bad input file, wrong database, missing GPU) is raised
as a :class:`SwgpuError` whose message already names the file and record, so the CLI
prints it without a traceback and exits non-zero.
"""


class SwgpuError(Exception):
    """A user-facing error: the message is complete and fits on one line."""


class InputError(SwgpuError):
    """Bad input data (FASTA, query, parameters)."""


class DatabaseError(SwgpuError):
    """A database directory that is missing, corrupt or of another format version."""


class BackendUnavailable(SwgpuError):
    """The requested compute backend cannot run here (no CuPy, no GPU)."""
