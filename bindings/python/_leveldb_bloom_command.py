"""The ``leveldb-bloom`` console script: executes the command pip installed in the
``leveldb_bloom`` package.

The command is a program of its own (built from the ``cli`` crate, beside the drop-in it
preloads); this script only replaces the Python process with it, so that its arguments,
streams, signals and exit status are the command's own. It is a module of its own, outside
the package, so that running the command never loads the package's library (nor depends on
``$LEVELDB_BLOOM_LIB``). Python ignores SIGPIPE and SIGXFSZ for itself, and cannot tell what
its caller had set; as ``subprocess`` does for the programs it starts, they are set back to
their default actions first, since an executed program inherits ignored signals.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys

COMMAND = "leveldb-bloom"


def command_path() -> str:
    """The command's executable in the installed package, found without importing the
    package (it may not exist: see :func:`main`)."""
    spec = importlib.util.find_spec("leveldb_bloom")
    folders = list(spec.submodule_search_locations or []) if spec else []
    return os.path.join(folders[0] if folders else "leveldb_bloom", COMMAND)


def main() -> None:
    """Executes the command with this script's arguments; exits 2 if it is not installed."""
    path = command_path()
    if not os.access(path, os.X_OK):
        sys.stderr.write(
            f"leveldb-bloom: {path}: not installed with this package (the package was not "
            "built by pip from its wheel or sdist)\n"
        )
        raise SystemExit(2)
    for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    for stream in (sys.stdout, sys.stderr):  # None where the caller closed it
        if stream is not None:
            stream.flush()
    os.execv(path, [COMMAND, *sys.argv[1:]])

