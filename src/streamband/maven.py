"""Java parts from Maven Central, built once and cached: the engines' homes (Storm's,
Kafka's: a ``lib/`` of an artifact and its dependencies) and streamband's own jars
(``storm/``, rebuilt when a source is newer). One Maven runner, one cache, one
``.complete`` marker per home, so that every engine is set up the same way."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from streamband.errors import PreconditionError
from streamband.procs import processes_where

ProgressFn = Callable[[str], None]
#: the checkout, where the engines' Maven projects (``storm/``, ``flink/``) are
REPO_ROOT = Path(__file__).resolve().parents[2]
#: the log4j2 the engines' homes log with (Kafka and Flink ship no binding of their own)
LOG4J_VERSION = "2.24.3"
#: written last into a home: a home without it is half-built (and so never used)
COMPLETE = ".complete"


def cache_dir(name: str) -> Path:
    """``$XDG_CACHE_HOME/streamband/NAME`` (``~/.cache`` without it)."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "streamband" / name


def need(tool: str, who: str) -> str:
    """The path of ``tool``, or a :class:`PreconditionError` saying how to install it."""
    path = shutil.which(tool)
    if not path:
        raise PreconditionError(f"{tool} not found: {who} needs Java 17 and Maven "
                                "(apt-get install openjdk-17-jdk-headless maven)")
    return path


def run(args: list[str], cwd: Path, progress: ProgressFn | None = None,
        who: str = "Maven") -> None:
    """Runs ``mvn -B ARGS`` in ``cwd``, one progress line per artifact downloaded.

    Raises
    ------
    PreconditionError
        If Maven fails (with its ERROR lines).
    """
    proc = subprocess.Popen([need("mvn", who), "-B", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    errors: list[str] = []
    count = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        if "ERROR" in line:
            errors = (errors + [line.strip()])[-8:]
        got = re.search(r"Downloaded from \S+: \S+/([^/\s]+) \(", line)
        if got and progress:
            count += 1
            progress(f"{who}: {count} artifacts from Maven Central ({got.group(1)})")
    if proc.wait():
        raise PreconditionError(f"mvn {' '.join(args)} failed in {cwd}: "
                                + " | ".join(errors)[:600])


def ensure_home(home: Path, pom: str, who: str, progress: ProgressFn | None = None,
                finish: Callable[[Path], None] | None = None) -> Path:
    """``home``, built on first use: ``lib/`` holds the runtime dependencies of ``pom``
    (a Maven project of packaging ``pom``), then ``finish(tmp)`` adds the rest; the home
    appears whole (renamed into place, :data:`COMPLETE` written last) or not at all."""
    if (home / COMPLETE).exists():
        return home
    need("java", who)
    if progress:
        progress(f"building {who}'s home {home} from Maven Central")
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{home.name}-", dir=home.parent))
    try:
        (tmp / "pom.xml").write_text(pom)
        run(["dependency:copy-dependencies", f"-DoutputDirectory={tmp / 'lib'}",
             "-DincludeScope=runtime"], tmp, progress, who)
        (tmp / "pom.xml").unlink()
        if finish is not None:
            finish(tmp)
        if home.exists():
            shutil.rmtree(home)
        tmp.rename(home)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (home / COMPLETE).write_text(home.name + "\n")
    return home


def project_jar(project: Path, jar_name: str, progress: ProgressFn | None = None) -> Path:
    """``project/target/JAR_NAME``, built with ``mvn package`` when a source of the Maven
    project ``project`` is newer than the jar."""
    jar = project / "target" / jar_name
    if not (project / "pom.xml").is_file():
        raise PreconditionError(f"{project}/pom.xml not found: streamband's Java sources "
                                f"are needed to build {jar_name}")
    sources = [project / "pom.xml", *(project / "src").rglob("*")]
    newest = max(p.stat().st_mtime for p in sources if p.is_file())
    if not jar.is_file() or jar.stat().st_mtime < newest:
        if progress:
            progress(f"building {jar_name} with Maven")
        run(["-q", "package"], project, progress, jar_name)
    return jar


def install(jar: Path, dst: Path) -> Path:
    """``jar`` copied to ``dst`` (atomically), unless the same bytes are there already."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if not dst.exists() or dst.read_bytes() != jar.read_bytes():
        tmp = dst.with_suffix(".tmp")
        shutil.copyfile(jar, tmp)
        tmp.replace(dst)
    return dst


def ready(what: str, build: Callable[[ProgressFn], Path]) -> None:
    """``python -m streamband.ENGINE.home``: ``build`` the engine's home and jars now
    (CI does this before the tests), with its progress and how long it took."""
    t0 = time.monotonic()
    home = build(lambda m: print(m, flush=True))
    print(f"{what} ready: {home} ({time.monotonic() - t0:.1f} s)")


def home_processes(arg: str) -> list[int]:
    """Pids of the JVMs whose command line names, after ``arg`` (e.g.
    ``-Dstorm.home=``), a home of this cache (:func:`cache_dir`) built whole (its
    :data:`COMPLETE` file), whether or not they
    carry the project's mark (a daemon launches children with an environment of its own);
    never this process's line."""
    needle = arg.encode()
    mine = cache_dir("")
    homes: dict[bytes, bool] = {}

    def ours(args: list[bytes]) -> bool:
        home = next((a[len(needle):] for a in args if a.startswith(needle)), None)
        if home is None:
            return False
        if home not in homes:
            path = Path(os.fsdecode(home))
            homes[home] = path.parent == mine and (path / COMPLETE).is_file()
        return homes[home]

    return processes_where("cmdline", ours)
