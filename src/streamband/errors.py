"""The one root of every error a user can cause.

:class:`StreambandError` is the base of every error streamband raises for bad input
(a spec, a trace, an option, a path) or for a precondition that does not hold (not
root, a tool missing, a testbed already up). ``str(err)`` is the one line to show:
what, where (file and line, or field) and what was expected. The command line
catches this class once (``streamband.cli``): the line on stderr, exit code 2,
nothing written and nothing left running. Any other exception is a bug and keeps
its traceback.

Hierarchy::

    StreambandError
    ├── InputError            bad input (also a ValueError)
    │   ├── SpecError         an experiment, testbed or cluster spec
    │   ├── TraceError        a coflow trace or data file
    │   └── OptionError       a command-line option or an output path
    └── PreconditionError     the world is not as the command needs it
                              (also a RuntimeError): not root, a tool or package
                              missing, a testbed or cluster already up, a port in use

Examples
--------
>>> raise SpecError("spec.yaml: sim.warmup_s: expected less than duration_s (300), got 400")
Traceback (most recent call last):
...
streamband.errors.SpecError: spec.yaml: sim.warmup_s: expected less than duration_s (300), got 400
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class StreambandError(Exception):
    """Bad input or a failed precondition; ``str(err)`` is the one line to show."""


class InputError(StreambandError, ValueError):
    """Bad input: the message names the input, where in it, and what was expected."""


class SpecError(InputError):
    """A spec (experiment, testbed, cluster) that cannot run."""


class TraceError(InputError):
    """A trace or data file that cannot be read."""


class OptionError(InputError):
    """A command-line option, or an output path, that cannot be used."""


class PreconditionError(StreambandError, RuntimeError):
    """The command cannot start here: not root, a tool missing, something already up."""


def nearest(word: str, choices: Iterable[str]) -> str:
    """``", did you mean 'x'?"`` for the closest of ``choices``, or ``""``.

    Examples
    --------
    >>> nearest("duraton_s", ["duration_s", "step_s"])
    ", did you mean 'duration_s'?"
    """
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f", did you mean {close[0]!r}?" if close else ""
