"""``python -m leveldb_bloom ARGS`` runs the ``leveldb-bloom`` command, as the console
script does."""

from ._command import main

main()
