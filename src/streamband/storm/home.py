"""A ``storm.home`` built once from Maven Central and cached: ``lib/`` and
``lib-worker/`` (storm-server, storm-client and their dependencies), ``conf/``,
``log4j2/`` (daemon and worker logging), ``extlib/`` (streamband's own jar: the
pinning scheduler and the flow reporter, on every worker's classpath)."""

from __future__ import annotations

import shutil
from pathlib import Path

from streamband import maven
from streamband.maven import ProgressFn

STORM_VERSION = "2.8.1"
JAVA_PROJECT = maven.REPO_ROOT / "storm"
JAR_NAME = "streamband-storm.jar"
#: storm-kafka-client and kafka-clients, on the class path of storm/'s topologies
#: (``topology.classpath``: read from each host's disk, where the testbed's hosts share one)
KAFKA_JAR_NAME = "streamband-storm-kafka.jar"

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

def cache_dir() -> Path:
    return maven.cache_dir(f"storm-{STORM_VERSION}")


def _finish(tmp: Path) -> None:
    shutil.copytree(tmp / "lib", tmp / "lib-worker")
    for d in ("conf", "extlib", "extlib-daemon", "log4j2"):
        (tmp / d).mkdir(exist_ok=True)
    (tmp / "conf" / "storm.yaml").write_text(
        "# each daemon gets its own file: -Dstorm.conf.file\n")
    (tmp / "log4j2" / "cluster.xml").write_text(
        _LOG4J.format(path="${sys:storm.log.dir}/${sys:logfile.name}"))
    (tmp / "log4j2" / "worker.xml").write_text(_LOG4J.format(
        path="${sys:workers.artifacts}/${sys:storm.id}/${sys:worker.port}/${sys:logfile.name}"))


def ensure_home(progress: ProgressFn | None = None) -> Path:
    """The cached ``storm.home``; downloads Storm's jars on first use."""
    return maven.ensure_home(cache_dir(), _POM.format(v=STORM_VERSION), "Storm", progress,
                             _finish)


def streamband_jar(progress: ProgressFn | None = None) -> Path:
    """streamband's jar (scheduler, reporter, admin CLI, benchmark topologies), built
    with Maven from ``storm/`` when a source is newer than the jar."""
    return maven.project_jar(JAVA_PROJECT, JAR_NAME, progress)


def kafka_client_jar(progress: ProgressFn | None = None) -> Path:
    """The Kafka client of the Kafka-fed topologies, built with :func:`streamband_jar`
    (one ``mvn package`` of ``storm/``)."""
    return maven.project_jar(JAVA_PROJECT, KAFKA_JAR_NAME, progress)


def install_jar(home: Path, jar: Path) -> Path:
    """Puts streamband's jar on the daemons' and workers' classpath of ``home``."""
    return maven.install(jar, home / "extlib" / JAR_NAME)


def main() -> None:
    """``python -m streamband.storm.home``: fetch Storm and build streamband's jar now
    (CI does this before the tests)."""
    def build(progress: ProgressFn) -> Path:
        home = ensure_home(progress)
        install_jar(home, streamband_jar(progress))
        return home

    maven.ready("storm.home", build)


if __name__ == "__main__":
    main()
