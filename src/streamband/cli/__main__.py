"""``python -m streamband.cli``: the ``streamband`` command."""

from streamband.cli import main

main()
