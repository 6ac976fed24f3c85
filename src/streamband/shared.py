"""Where streamband finds the shared data (the FB2010 coflow trace, the papers): the
directory named by ``STREAMBAND_SHARED``, else ``shared/`` beside the repository this
package runs from — never the working directory."""

from __future__ import annotations

import os
from pathlib import Path

from streamband.errors import PreconditionError

#: the Facebook 2010 coflow trace as the coflow-benchmark project published it (004's
#: workload), inside the shared directory
FB2010_TRACE = ("data", "FB2010-1Hr-150-0.txt")


def shared_dir() -> Path:
    """The shared directory (``$STREAMBAND_SHARED`` or ``<repo>/../shared``)."""
    env = os.environ.get("STREAMBAND_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared"


def shared_file(*parts: str) -> Path:
    """A file of the shared directory.

    Raises
    ------
    PreconditionError
        If it is not there (naming the path and how to point at another one).
    """
    path = shared_dir().joinpath(*parts)
    if not path.is_file():
        raise PreconditionError(f"{path}: not found; set STREAMBAND_SHARED to the directory "
                                f"that holds {'/'.join(parts)}")
    return path
