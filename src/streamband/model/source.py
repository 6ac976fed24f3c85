"""Reading a user's input file: its text (:func:`read_text`) and its YAML
(:func:`load_yaml`), refused with one line when it is not what it looks like.

A file is read only if it is a regular file (never a FIFO that blocks, a device that
never ends, a directory), in UTF-8 and at most ``limit`` bytes. Its YAML is read by
:class:`StrictLoader`, the YAML 1.2 core schema without its surprises:

- a key given twice is refused (YAML would keep the last silently);
- explicit tags (``!!int "5"``, ``!!binary``, ``!custom``) are refused: a value is what
  it looks like; aliases (``*a``) are read, but a document they expand past
  :data:`MAX_VALUES` values is refused (a small file cannot become a huge one);
- only ``true``/``false`` are booleans, only decimal numbers are numbers (no
  ``yes``/``on``, dates, ``1:30`` base 60, octal ``010``, hex or ``1_000``): anything
  else stays a string, which a number field then refuses;
- an integer longer than :data:`MAX_INT_DIGITS` digits, and a float literal beyond the
  largest float (``1e999``, which would read as infinity), are refused.

Every problem is the ``error`` class given (a :class:`~streamband.errors.SpecError` by
default), one line naming the file, the line and what was expected.

Examples
--------
>>> StrictLoader.scalar("yes"), StrictLoader.scalar("010"), StrictLoader.scalar("1_000")
('yes', 10, '1_000')
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from streamband.errors import InputError, SpecError

#: spec files larger than this are refused (a spec is a page of YAML)
MAX_SPEC_BYTES = 1 << 20
#: a document expands (its aliases copied out) to at most this many values: a spec is a
#: page, and a few aliases nested must not make it billions (the "billion laughs")
MAX_VALUES = 100_000
#: an integer needs at most 20 digits (a datapath id is below 2^64); more is refused
#: before Python converts it (past 4300 digits the conversion itself fails)
MAX_INT_DIGITS = 20

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a file of ``mode`` is, in words (``"a FIFO"``, ``"a directory"``, ...)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a file"
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def _os_problem(err: OSError) -> str:
    if err.errno == errno.ENOENT:
        return "no such file"
    if err.errno == errno.ELOOP:
        return "a loop of symbolic links"
    if err.errno == errno.ENOTDIR:
        return "a path through something that is not a directory"
    if err.errno == errno.EACCES:
        return "permission denied"
    return err.strerror or str(err)


def read_text(path: Path | str, what: str = "spec", limit: int = MAX_SPEC_BYTES,
              error: type[InputError] = SpecError) -> str:
    """A text input file's contents, refused with one line when it is missing, a
    symbolic-link loop, a directory, a FIFO or device, empty, binary, not UTF-8 or
    larger than ``limit`` bytes.

    Raises
    ------
    InputError
        ``error`` (default :class:`SpecError`): ``PATH: problem, expected a WHAT ...``.
    """
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except OSError as err:
        raise error(f"{p}: {_os_problem(err)}, expected a {what} file") from None
    except ValueError:  # a NUL byte in the name
        raise error(f"{str(p)!r}: not a file name, expected a {what} file") from None
    if not stat.S_ISREG(mode):
        raise error(f"{p}: is {file_kind(mode)}, expected a {what} file") from None
    try:
        # non-blocking: a FIFO swapped in after the check cannot hang the open
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise error(f"{p}: is no longer a regular file, expected a {what} file")
            raw = fh.read(limit + 1)  # a bound, for files whose size stat does not tell
    except OSError as err:
        raise error(f"{p}: cannot read the {what} ({_os_problem(err)})") from None
    if len(raw) > limit:
        raise error(f"{p}: more than {limit} bytes, expected a {what} of at most "
                    f"{limit} bytes")
    if not raw.strip():
        raise error(f"{p}: empty, expected a {what}")
    nul = raw.find(b"\0")
    if nul >= 0:
        raise error(f"{p}: binary data (a NUL byte at offset {nul}), "
                    f"expected a {what} in UTF-8 text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise error(f"{p}: line {line}: not UTF-8 (byte 0x{raw[err.start]:02x}), "
                    f"expected a {what} in UTF-8 text") from None


def _expanded(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many values ``node`` holds once every alias is copied out (an alias is the
    node it names: counted once per use, computed once per node)."""
    if memo.get(id(node)) == -1:
        raise Refused(None, None, "an alias inside the value it names: expected a value "
                      "that ends", node.start_mark)
    if id(node) not in memo:
        memo[id(node)] = -1  # on the way down: met again below, it is a cycle
        children = (node.value if isinstance(node, yaml.SequenceNode) else
                    [x for kv in node.value for x in kv] if isinstance(node, yaml.MappingNode)
                    else [])
        memo[id(node)] = 1 + sum(_expanded(c, memo) for c in children)
    return memo[id(node)]


class Refused(yaml.MarkedYAMLError):
    """YAML that parses but is not read: ``problem`` says what and what was expected."""


# PyYAML's resolver matches from the start only: each pattern is anchored at both ends
_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_SPECIAL = re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_TAG = "tag:yaml.org,2002:"


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the YAML 1.2 core schema's implicit types, refusing
    duplicate keys, explicit tags, alias bombs, over-long integers and float literals
    that overflow (see the module's text)."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}

    @classmethod
    def scalar(cls, text: str) -> Any:
        """One plain scalar as this loader reads it."""
        return yaml.load(text, Loader=cls)

    def compose_node(self, parent: Any, index: Any) -> Any:
        ev = self.peek_event()
        tag = getattr(ev, "tag", None)
        if tag not in (None, "!") and isinstance(
                ev, yaml.ScalarEvent | yaml.SequenceStartEvent | yaml.MappingStartEvent):
            shown = "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag
            raise Refused(None, None, f"explicit tag {shown}: expected a plain value "
                          "(tags are not read; write the value as it is meant)",
                          ev.start_mark)
        return super().compose_node(parent, index)

    def construct_document(self, node: yaml.Node) -> Any:
        size = _expanded(node, {})
        if size > MAX_VALUES:
            raise Refused(None, None, f"aliases expand the document to {size:.3g} values: "
                          f"expected at most {MAX_VALUES}", node.start_mark)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # a list or mapping as a key
                raise Refused(None, None, "a key that is a list or mapping: expected a "
                              "plain key", key_node.start_mark) from None
            line = key_node.start_mark.line + 1
            if first is not None:
                raise Refused(None, None, f"key {key!r} given twice (first on line "
                              f"{first}): expected each key once", key_node.start_mark)
            seen[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(node.value)
        digits = len(text.lstrip("+-"))
        if digits > MAX_INT_DIGITS:
            raise Refused(None, None, f"an integer of {digits} digits: expected at most "
                          f"{MAX_INT_DIGITS}", node.start_mark)
        return int(text)

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        text = str(node.value)
        if _SPECIAL.fullmatch(text):
            return float(text.replace(".", "", 1))
        value = float(text)
        if value in (float("inf"), float("-inf")):
            raise Refused(None, None, f"{text[:40]} is beyond the largest float "
                          "(about 1.8e308): expected a finite number", node.start_mark)
        return value


for _tag, _regex, _first in (
        ("bool", _BOOL, "tTfF"), ("int", _INT, "-+0123456789"),
        ("float", _FLOAT, "-+0123456789."), ("float", _SPECIAL, "-+."),
        ("null", _NULL, ["~", "n", "N", ""])):
    StrictLoader.add_implicit_resolver(_TAG + _tag, _regex, list(_first))
StrictLoader.add_constructor(_TAG + "int", StrictLoader.construct_yaml_int)
StrictLoader.add_constructor(_TAG + "float", StrictLoader.construct_yaml_float)


def parse_yaml(text: str, source: str, error: type[InputError] = SpecError) -> Any:
    """``text`` read by :class:`StrictLoader`; a problem is one line naming ``source``
    and the line."""
    try:
        return yaml.load(text, Loader=StrictLoader)
    except Refused as err:
        mark = err.problem_mark
        raise error(f"{source}: line {mark.line + 1}: {err.problem}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}:" if mark else ""
        problem = getattr(err, "problem", None) or "not valid YAML"
        raise error(f"{source}:{line} {problem}, expected a YAML mapping") from None
    except RecursionError:
        raise error(f"{source}: nested too deeply, expected a YAML mapping") from None


def load_yaml(path: Path | str, what: str = "spec") -> dict:
    """A YAML mapping from ``path`` (one line naming file and line on error)."""
    data = parse_yaml(read_text(path, what), str(path))
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a YAML mapping at the top level, got "
                        f"{type(data).__name__}")
    return data
