"""A Kafka home built once from Maven Central and cached beside Storm's:
``lib/`` (the broker ``org.apache.kafka:kafka_2.13`` and its dependencies, with an SLF4J
binding so that it logs at all) and ``.complete`` once whole. Kafka's binary tarball is not on Maven
Central; its jars are.

The paced replay producer and the lag reader are Java classes of streamband's jar
(``storm/``, package ``streamband.kafka``; :func:`client_jar`), run against this
home's ``kafka-clients``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from streamband.errors import PreconditionError

KAFKA_VERSION = "4.1.1"
SCALA = "2.13"
#: Kafka logs through SLF4J 1.x and ships no binding; log4j2's is on Maven Central
LOG4J_VERSION = "2.24.3"
REPO_ROOT = Path(__file__).resolve().parents[3]
#: the Maven project that holds the producer and lag reader (beside Storm's plug-ins)
JAVA_PROJECT = REPO_ROOT / "storm"
CLIENT_JAR = "streamband-storm.jar"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>streamband</groupId><artifactId>kafka-home</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_{scala}</artifactId>
      <version>{v}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId><version>{log4j}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId><version>{log4j}</version></dependency>
  </dependencies>
</project>
"""

ProgressFn = Callable[[str], None]


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/streamband/kafka-VERSION`` (``~/.cache`` without it)."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "streamband" / f"kafka-{KAFKA_VERSION}"


def need(tool: str) -> str:
    """The path of ``tool``, or a :class:`PreconditionError` saying how to install it."""
    path = shutil.which(tool)
    if not path:
        raise PreconditionError(f"{tool} not found: Kafka needs Java 17 and Maven "
                                "(apt-get install openjdk-17-jdk-headless maven)")
    return path


def maven(args: list[str], cwd: Path, progress: ProgressFn | None = None) -> None:
    """Runs ``mvn -B ARGS`` in ``cwd``, one progress line per artifact downloaded.

    Raises
    ------
    PreconditionError
        If Maven fails (with its ERROR lines).
    """
    proc = subprocess.Popen([need("mvn"), "-B", *args], cwd=cwd, stdout=subprocess.PIPE,
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
            progress(f"Kafka: {count} artifacts from Maven Central ({got.group(1)})")
    if proc.wait():
        raise PreconditionError(f"mvn {' '.join(args)} failed in {cwd}: "
                                + " | ".join(errors)[:600])


def ensure_home(progress: ProgressFn | None = None) -> Path:
    """The cached Kafka home; copies Kafka's jars from Maven Central on first use
    (46 jars, ~45 MB)."""
    home = cache_dir()
    if (home / ".complete").exists():
        return home
    need("java")
    if progress:
        progress(f"building the Kafka home {home} from Maven Central (Kafka {KAFKA_VERSION})")
    home.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="kafka-home-", dir=home.parent))
    try:
        (tmp / "pom.xml").write_text(_POM.format(v=KAFKA_VERSION, scala=SCALA,
                                                 log4j=LOG4J_VERSION))
        maven(["dependency:copy-dependencies", f"-DoutputDirectory={tmp / 'lib'}",
               "-DincludeScope=runtime"], tmp, progress)
        (tmp / "pom.xml").unlink()
        if home.exists():
            shutil.rmtree(home)
        tmp.rename(home)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (home / ".complete").write_text(KAFKA_VERSION + "\n")
    return home


def client_jar(progress: ProgressFn | None = None) -> Path:
    """streamband's jar with the producer and lag reader (``streamband.kafka.*``),
    built with Maven from :data:`JAVA_PROJECT` when a source is newer than the jar."""
    jar = JAVA_PROJECT / "target" / CLIENT_JAR
    if not (JAVA_PROJECT / "pom.xml").is_file():
        raise PreconditionError(f"{JAVA_PROJECT}/pom.xml not found: streamband's Java sources "
                                "are needed for the Kafka producer")
    sources = [JAVA_PROJECT / "pom.xml", *(JAVA_PROJECT / "src").rglob("*.java")]
    newest = max(p.stat().st_mtime for p in sources)
    if not jar.is_file() or jar.stat().st_mtime < newest:
        if progress:
            progress(f"building {CLIENT_JAR} with Maven")
        maven(["-q", "package"], JAVA_PROJECT, progress)
    return jar


def classpath(home: Path, jar: Path | None = None) -> str:
    """The Java classpath of the broker (``jar`` None) or of streamband's clients."""
    parts = [str(home / "lib" / "*")]
    if jar is not None:
        parts.append(str(jar))
    return ":".join(parts)


def main() -> None:
    """``python -m streamband.kafka.home``: fetch Kafka and build the client jar now
    (CI does this before the tests)."""
    import time

    t0 = time.monotonic()
    home = ensure_home(lambda m: print(m, flush=True))
    client_jar(lambda m: print(m, flush=True))
    print(f"Kafka home ready: {home} ({time.monotonic() - t0:.1f} s)")


if __name__ == "__main__":
    main()
