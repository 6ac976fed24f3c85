"""A Kafka home built once from Maven Central and cached beside Storm's:
``lib/`` (the broker ``org.apache.kafka:kafka_2.13`` and its dependencies, with an SLF4J
binding so that it logs at all) and ``.complete`` once whole. Kafka's binary tarball is not on Maven
Central; its jars are.

The paced replay producer and the lag reader are Java classes of streamband's jar
(``storm/``, package ``streamband.kafka``; :func:`client_jar`), run against this
home's ``kafka-clients``.
"""

from __future__ import annotations

from pathlib import Path

from streamband import maven
from streamband.maven import ProgressFn

KAFKA_VERSION = "4.1.1"
SCALA = "2.13"
#: the Maven project that holds the producer and lag reader (beside Storm's plug-ins)
JAVA_PROJECT = maven.REPO_ROOT / "storm"
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

def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/streamband/kafka-VERSION``, beside Storm's home."""
    return maven.cache_dir(f"kafka-{KAFKA_VERSION}")


def ensure_home(progress: ProgressFn | None = None) -> Path:
    """The cached Kafka home; copies Kafka's jars from Maven Central on first use
    (46 jars, ~45 MB)."""
    return maven.ensure_home(cache_dir(), _POM.format(v=KAFKA_VERSION, scala=SCALA,
                                                      log4j=maven.LOG4J_VERSION), "Kafka", progress)


def client_jar(progress: ProgressFn | None = None) -> Path:
    """streamband's jar with the producer and lag reader (``streamband.kafka.*``),
    built with Maven from :data:`JAVA_PROJECT` when a source is newer than the jar."""
    return maven.project_jar(JAVA_PROJECT, CLIENT_JAR, progress)


def classpath(home: Path, jar: Path | None = None) -> str:
    """The Java classpath of the broker (``jar`` None) or of streamband's clients."""
    parts = [str(home / "lib" / "*")]
    if jar is not None:
        parts.append(str(jar))
    return ":".join(parts)


def main() -> None:
    """``python -m streamband.kafka.home``: fetch Kafka and build the client jar now
    (CI does this before the tests)."""
    def build(progress: ProgressFn) -> Path:
        home = ensure_home(progress)
        client_jar(progress)
        return home

    maven.ready("Kafka home", build)


if __name__ == "__main__":
    main()
