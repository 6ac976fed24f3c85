"""``python -m streamband.sdn``: the controller process."""

from streamband.sdn.cli import main

main()
