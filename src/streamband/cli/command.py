"""What every ``streamband`` command shares: the one place that turns an error the user
caused (:class:`~streamband.errors.StreambandError`) into one line on stderr and exit
code 2, and the checks of options and output paths made before any work starts.

Every Typer app of the project is a :class:`App`; its commands are wrapped so that a
:class:`StreambandError` from anywhere under them ends the command the same way.
Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import math
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from streamband.errors import InternalError, OptionError, PreconditionError, StreambandError
from streamband.model.source import file_kind

#: every character ``str.splitlines`` breaks a line at
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def single_line(text: str) -> str:
    """``text`` on one line: line breaks (a user's input quoted in a message may hold
    any) shown escaped.

    Examples
    --------
    >>> single_line("key 'a\\x1eb'")
    "key 'a\\\\x1eb'"
    """
    return "".join(c.encode("unicode_escape").decode() if c in _LINE_BREAKS else c
                   for c in text)


def fail(err: StreambandError | str) -> typer.Exit:
    """Print the one line of ``err`` on stderr; the exit (code 2) to raise."""
    typer.echo(f"error: {single_line(str(err))}", err=True)
    return typer.Exit(2)


def engine_spec(loopback: int, work: Path, master: str,
                loopback_spec: Callable[[Path, int], Any],
                testbed_spec: Callable[[dict[str, Any], Path, str], Any]) -> Any:
    """An engine cluster's spec for ``streamband ENGINE up``: ``loopback`` processes on
    127.0.0.x, else in the namespaces of the testbed that is up (``master``: the host of
    the engine's master).

    Raises
    ------
    PreconditionError
        Without ``loopback``, if no testbed is up.
    """
    from streamband.testbed.registry import read_state

    if loopback:
        return loopback_spec(work, loopback)
    st = read_state()
    if not st or not st.get("ready"):
        raise PreconditionError("no testbed is up: run `streamband testbed up "
                                "star:hosts=2,master=true` first, or use --loopback N")
    return testbed_spec(st, work, master)


def _guarded(f: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except InternalError:
            raise  # a bug: its traceback is what to read
        except StreambandError as err:
            raise fail(err) from None

    return run


class OneLineGroup(TyperGroup):
    """A command group whose usage errors (an unknown option, a value of the wrong
    type) are one line on stderr too, with click's exit code (2)."""

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        try:
            rv = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                              standalone_mode=False, **extra)
        except typer.Abort:
            typer.echo("aborted", err=True)
            if not standalone_mode:
                raise
            sys.exit(1)
        except typer.TyperException as err:  # click's usage errors (vendored by Typer)
            if type(err).__name__ == "NoArgsIsHelpError":  # the help was asked for, and shown
                if not standalone_mode:
                    return 0
                sys.exit(0)
            ctx = getattr(err, "ctx", None)
            where = f"{ctx.command_path}: " if ctx is not None else ""
            fmt = getattr(err, "format_message", None)
            message = fmt() if fmt is not None else str(err)
            typer.echo(f"error: {where}{single_line(' '.join(message.split()))}", err=True)
            if not standalone_mode:
                raise
            sys.exit(getattr(err, "exit_code", 2))
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)


class App(typer.Typer):
    """A Typer app whose commands (and callback) end with one line and exit 2 on a
    :class:`StreambandError`, and whose usage errors are one line too."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", OneLineGroup)
        kwargs.setdefault("add_completion", False)
        kwargs.setdefault("pretty_exceptions_show_locals", False)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
        register = super().command(*args, **kwargs)
        return lambda f: register(_guarded(f))

    def callback(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., Any]], Any]:
        register = super().callback(*args, **kwargs)
        return lambda f: register(_guarded(f))


def number(value: float, option: str, low: float | None = None, high: float | None = None,
           low_open: bool = False, unit: str = "") -> float:
    """``value`` if it is finite and within ``[low, high]`` (``(low, high]`` when
    ``low_open``).

    Raises
    ------
    OptionError
        Naming the option, the range and the unit.
    """
    rng = ("(" if low_open else "[") + (f"{low:g}" if low is not None else "-inf") + ", " + (
        f"{high:g}" if high is not None else "inf") + "]"
    what = f"a finite number in {rng}" + (f" {unit}" if unit else "")
    below = low is not None and (value < low or (low_open and value == low))
    if not math.isfinite(value) or below or (high is not None and value > high):
        raise OptionError(f"{option}: expected {what}, got {value:g}")
    return value


def _writable(directory: Path) -> bool:
    """Whether a file can be created in ``directory`` (tried, then removed: root
    passes every permission check, a read-only or virtual file system does not)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".streamband-probe-", dir=directory)
    except OSError:
        return False
    os.close(fd)
    os.unlink(name)
    return True


def _writable_parent(path: Path, option: str) -> None:
    parent = path.absolute().parent
    while not os.path.lexists(parent):
        parent = parent.parent
    try:
        mode = os.stat(parent).st_mode
    except OSError as err:
        raise OptionError(f"{option}: {parent}: {err.strerror}, expected a directory on the "
                          f"way to {path}") from None
    if not stat.S_ISDIR(mode):
        raise OptionError(f"{option}: {parent} is {file_kind(mode)}, expected a directory on "
                          f"the way to {path}")
    if not _writable(parent):
        raise OptionError(f"{option}: {parent} is not writable, expected a place to write "
                          f"{path}")


def _given(path: Path | str, option: str, what: str) -> Path:
    """``path`` as a Path; an empty one (which would mean the current directory) refused."""
    if not str(path).strip():
        raise OptionError(f"{option}: an empty path, expected {what}")
    return Path(path)


def _existing(p: Path, option: str, what: str) -> int | None:
    """The mode of the file ``p`` names (links followed), None if there is none; a link
    to nothing or a loop of links is refused."""
    try:
        return os.stat(p).st_mode
    except NotADirectoryError:
        return None  # a file on the way: the parent's check names it
    except FileNotFoundError:
        if os.path.lexists(p):
            raise OptionError(f"{option}: {p} is a symbolic link to nothing, expected "
                              f"{what}") from None
        return None
    except OSError as err:
        raise OptionError(f"{option}: {p}: {err.strerror}, expected {what}") from None


#: the files every run and bench writes into its output directory
RESULT_FILES = ("results.json", "report.html")


def out_dir(path: Path | str, option: str = "--out",
            files: tuple[str, ...] = RESULT_FILES) -> Path:
    """``path`` if it is a directory that exists and is writable, or can be created,
    and each of ``files`` in it is a regular file or new; nothing is created here.

    Raises
    ------
    OptionError
        If ``path`` is empty, not a directory (a file, a FIFO, a device, a link to
        nothing), or it or its nearest existing parent is not writable, or one of
        ``files`` in it is not a regular file.
    """
    what = "a directory"
    p = _given(path, option, what)
    mode = _existing(p, option, what)
    if mode is None:
        _writable_parent(p, option)
        return p
    if not stat.S_ISDIR(mode):
        raise OptionError(f"{option}: {p} is {file_kind(mode)}, expected {what}")
    if not _writable(p):
        raise OptionError(f"{option}: {p} is not writable, expected a writable directory")
    for name in files:
        out_file(p / name, option)
    return p


def out_file(path: Path | str, option: str) -> Path:
    """``path`` if a file can be written there: it is a regular file that is writable,
    or a new path whose nearest existing parent is a writable directory; nothing is
    created here. Anything else (a directory, a FIFO, a device, a socket, a link to
    nothing) is refused: writing would replace it, block, or write elsewhere.

    Raises
    ------
    OptionError
    """
    what = "a regular file or a new path"
    p = _given(path, option, what)
    if str(path).endswith(os.sep):
        raise OptionError(f"{option}: {p} is a directory, expected a file path")
    mode = _existing(p, option, what)
    if mode is None:
        _writable_parent(p, option)
        return p
    if stat.S_ISDIR(mode):
        raise OptionError(f"{option}: {p} is a directory, expected a file path")
    if not stat.S_ISREG(mode):
        raise OptionError(f"{option}: {p} is {file_kind(mode)}, expected {what}")
    if not os.access(p, os.W_OK) or not _writable(p.absolute().parent):
        raise OptionError(f"{option}: {p} is not writable, expected a writable file path")
    return p
