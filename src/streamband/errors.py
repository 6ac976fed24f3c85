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
    ├── PreconditionError     the world is not as the command needs it
    │                         (also a RuntimeError): not root, a tool or package
    │                         missing, a testbed or cluster already up, a port in use
    ├── RunError              a real system failed while it ran (also a RuntimeError):
    │                         a store request, a ``tc`` call, a switch, a simulation
    │                         that cannot go on
    └── InternalError         a state the code says cannot happen: a bug (also a
                              RuntimeError); the command line keeps its traceback

Examples
--------
>>> raise SpecError("spec.yaml: sim.warmup_s: expected less than duration_s (300), got 400")
Traceback (most recent call last):
...
streamband.errors.SpecError: spec.yaml: sim.warmup_s: expected less than duration_s (300), got 400
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError


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


class RunError(StreambandError, RuntimeError):
    """A real system (a store, a switch, ``tc``) or a simulation failed while it ran."""


class InternalError(StreambandError, RuntimeError):
    """A state the code says cannot happen (a bug, never a condition)."""


def nearest(word: str, choices: Iterable[str]) -> str:
    """``", did you mean 'x'?"`` for the closest of ``choices``, or ``""``.

    Examples
    --------
    >>> nearest("duraton_s", ["duration_s", "step_s"])
    ", did you mean 'duration_s'?"
    """
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f", did you mean {close[0]!r}?" if close else ""


def _submodel(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def keys_at(root: type[BaseModel], loc: tuple[Any, ...]) -> tuple[str, ...]:
    """The valid keys of the model at ``loc`` (list indices and mapping keys skipped)."""
    model = root
    for part in loc:
        field = model.model_fields.get(str(part))
        if field is None:
            continue
        sub = _submodel(field.annotation)
        if sub is not None:
            model = sub
    return tuple(model.model_fields)


def one_line(err: ValidationError, source: str = "", root: type[BaseModel] | None = None) -> str:
    """A pydantic error as the one line to show: where, what, what was expected, and
    for an unknown key the nearest valid one (from ``root``'s fields at that place)."""
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"])
    msg = e["msg"].removeprefix("Value error, ")
    got = e.get("input")
    if e["type"] == "extra_forbidden":
        key = str(e["loc"][-1])
        known = keys_at(root, e["loc"][:-1]) if root is not None else ()
        msg = f"unknown key, expected one of {', '.join(known)}{nearest(key, known)}"
        got = None
    elif e["type"] == "literal_error" and got is not None:
        msg += nearest(str(got), re.findall(r"'([^']*)'", str(e.get("ctx", {}).get("expected"))))
    text = repr(got) if not isinstance(got, str) else repr(got[:60])
    shown = ("" if isinstance(got, dict | list) or got is None
             else f" (got {text if len(text) <= 64 else text[:60] + '...'})")
    where = f"{source}: " if source else ""
    return f"{where}{loc + ': ' if loc else ''}{msg}{shown}"
