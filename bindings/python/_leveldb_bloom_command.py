"""The ``leveldb-bloom`` console script: executes the command pip installed in this package.

The command is a program of its own (built from the ``cli`` crate, beside the drop-in it
preloads); this script only replaces the Python process with it, so that its arguments,
streams, signals and exit status are the command's own. Python ignores SIGPIPE and SIGXFSZ
for itself; as ``subprocess`` does for the programs it starts, they are set back to their
default actions first, since an executed program inherits ignored signals.
"""

from __future__ import annotations

import os
import signal
import sys

COMMAND = "leveldb-bloom"


def command_path() -> str:
    """The command's executable in this package (it may not exist: see :func:`main`)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), COMMAND)


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
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [COMMAND, *sys.argv[1:]])

