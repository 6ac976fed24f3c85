"""A ``storm.home`` built once from Maven Central and cached: ``lib/`` and
``lib-worker/`` (storm-server, storm-client and their dependencies), ``conf/``,
``log4j2/`` (daemon and worker logging), ``extlib/`` (streamband's own jar: the
pinning scheduler and the flow reporter, on every worker's classpath)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from streamband.errors import PreconditionError

STORM_VERSION = "2.8.1"
REPO_ROOT = Path(__file__).resolve().parents[3]
JAVA_PROJECT = REPO_ROOT / "storm"
JAR_NAME = "streamband-storm.jar"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>streamband</groupId><artifactId>storm-home</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.storm</groupId><artifactId>storm-server</artifactId>
      <version>{v}</version></dependency>
    <dependency><groupId>org.apache.storm</groupId><artifactId>storm-client</artifactId>
      <version>{v}</version></dependency>
  </dependencies>
</project>
"""

_LOG4J = """<?xml version="1.0" encoding="UTF-8"?>
<configuration monitorInterval="60" shutdownHook="disable">
  <appenders>
    <File name="F" fileName="{path}">
      <PatternLayout pattern="%d{{yyyy-MM-dd HH:mm:ss.SSS}} %c{{1.}} %t [%p] %msg%n"/>
    </File>
  </appenders>
  <loggers>
    <root level="info"><appender-ref ref="F"/></root>
    <Logger name="org.apache.storm.shade.org.apache.zookeeper" level="warn"/>
    <Logger name="org.apache.storm.shade.org.apache.curator" level="warn"/>
  </loggers>
</configuration>
"""

ProgressFn = Callable[[str], None]


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "streamband" / f"storm-{STORM_VERSION}"


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise PreconditionError(
            f"{tool} not found: Storm needs Java 17 and Maven "
            "(apt-get install openjdk-17-jdk-headless maven)")
    return path


def _mvn(args: list[str], cwd: Path, progress: ProgressFn | None) -> None:
    """Runs Maven, reporting every artifact it downloads through ``progress``."""
    proc = subprocess.Popen([_need("mvn"), "-B", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    n = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        tail = (tail + [line.rstrip()])[-30:]
        m = re.search(r"Downloaded from \S+: \S+/([^/\s]+) \(", line)
        if m and progress:
            n += 1
            progress(f"downloaded {n} artifacts from Maven Central ({m.group(1)})")
    if proc.wait():
        raise PreconditionError(f"mvn {' '.join(args)} failed in {cwd}: " + " | ".join(
            t for t in tail if "ERROR" in t)[:600])


def ensure_home(progress: ProgressFn | None = None) -> Path:
    """The cached ``storm.home``; downloads Storm's jars on first use."""
    home = cache_dir()
    done = home / ".complete"
    if done.exists():
        return home
    _need("java")
    if progress:
        progress(f"building storm.home {home} from Maven Central (Storm {STORM_VERSION})")
    tmp = Path(tempfile.mkdtemp(prefix="storm-home-", dir=home.parent if home.parent.exists()
                                else None))
    try:
        (tmp / "pom.xml").write_text(_POM.format(v=STORM_VERSION))
        _mvn(["dependency:copy-dependencies", f"-DoutputDirectory={tmp / 'lib'}",
              "-DincludeScope=runtime"], tmp, progress)
        (tmp / "pom.xml").unlink()
        shutil.copytree(tmp / "lib", tmp / "lib-worker")
        for d in ("conf", "extlib", "extlib-daemon", "log4j2"):
            (tmp / d).mkdir(exist_ok=True)
        (tmp / "conf" / "storm.yaml").write_text(
            "# each daemon gets its own file: -Dstorm.conf.file\n")
        (tmp / "log4j2" / "cluster.xml").write_text(
            _LOG4J.format(path="${sys:storm.log.dir}/${sys:logfile.name}"))
        (tmp / "log4j2" / "worker.xml").write_text(_LOG4J.format(
            path="${sys:workers.artifacts}/${sys:storm.id}/${sys:worker.port}/${sys:logfile.name}"))
        home.parent.mkdir(parents=True, exist_ok=True)
        if home.exists():
            shutil.rmtree(home)
        tmp.rename(home)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    done.write_text(STORM_VERSION + "\n")
    return home


def streamband_jar(progress: ProgressFn | None = None) -> Path:
    """streamband's jar (scheduler, reporter, admin CLI, benchmark topologies), built
    with Maven from ``storm/`` when a source is newer than the jar."""
    jar = JAVA_PROJECT / "target" / JAR_NAME
    if not (JAVA_PROJECT / "pom.xml").exists():
        raise PreconditionError(f"{JAVA_PROJECT}/pom.xml not found: streamband's Java sources "
                                "are needed to build its Storm jar")
    sources = [JAVA_PROJECT / "pom.xml", *(JAVA_PROJECT / "src").rglob("*")]
    newest = max(p.stat().st_mtime for p in sources if p.is_file())
    if not jar.exists() or jar.stat().st_mtime < newest:
        if progress:
            progress(f"building {JAR_NAME} with Maven")
        _mvn(["-q", "package"], JAVA_PROJECT, progress)
    return jar


def install_jar(home: Path, jar: Path) -> Path:
    """Puts streamband's jar on the daemons' and workers' classpath of ``home``."""
    dst = home / "extlib" / JAR_NAME
    if not dst.exists() or dst.read_bytes() != jar.read_bytes():
        tmp = dst.with_suffix(".tmp")
        shutil.copyfile(jar, tmp)
        tmp.replace(dst)
    return dst


def main() -> None:
    """``python -m streamband.storm.home``: fetch Storm and build streamband's jar now
    (CI does this before the tests)."""
    import time

    t0 = time.monotonic()
    home = ensure_home(lambda m: print(m, flush=True))
    install_jar(home, streamband_jar(lambda m: print(m, flush=True)))
    print(f"storm.home ready: {home} ({time.monotonic() - t0:.1f} s)")


if __name__ == "__main__":
    main()
