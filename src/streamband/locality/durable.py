"""Durable writes: temp file + fsync + rename (+ fsync of the directory).

003 §3.4: "the manager saves all routing configurations to stable storage before
starting reconfiguration". A reader sees either the old or the new file, never a
torn one.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, json.dumps(obj, sort_keys=True).encode())


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def atomic_write_pickle(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def read_pickle(path: Path) -> Any:
    with open(path, "rb") as f:
        return pickle.load(f)
