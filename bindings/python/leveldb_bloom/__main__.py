"""``python -m leveldb_bloom ARGS`` runs the ``leveldb-bloom`` command, as the console
script does (this way imports the package first, and so loads its library)."""

if __name__ == "__main__":
    from _leveldb_bloom_command import main

    main()
