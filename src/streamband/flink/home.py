"""A Flink home built once from Maven Central and cached: ``lib/`` (the runtime, the
clients, the DataStream API, the RPC system, the file connector and log4j; ``flink-dist``
is not on Maven Central, its jars are), ``examples/`` (``flink-examples-streaming``, jobs
streamband did not write) and ``.complete`` once whole. streamband's own Java side
(``flink/``: the reporter plug-in and the benchmark jobs) is built with Maven beside it.
"""

from __future__ import annotations

from pathlib import Path

from streamband import maven
from streamband.maven import ProgressFn

FLINK_VERSION = "1.20.3"
#: the newest flink-examples-streaming the registry serves on the 1.20 line
EXAMPLES_VERSION = "1.20.0"
JAVA_PROJECT = maven.REPO_ROOT / "flink"
#: the metrics reporter, installed as a plug-in (``plugins/streamband/``)
REPORTER_JAR = "streamband-flink-reporter.jar"
#: the benchmark jobs' classes (the jar a job submits: tens of KB, which each TaskManager
#: fetches from the JobManager's blob server through the testbed's links)
JOBS_JAR = "streamband-flink.jar"
#: the Kafka connector and its dependencies, read by every process from the local disk
#: (``flink run -C file://...``: the testbed's hosts share one file system)
KAFKA_JAR = "streamband-flink-kafka.jar"
EXAMPLES_JAR = f"flink-examples-streaming-{EXAMPLES_VERSION}.jar"

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>streamband</groupId><artifactId>flink-home</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""

_LIB = [("org.apache.flink", a, FLINK_VERSION) for a in (
    "flink-runtime", "flink-clients", "flink-streaming-java", "flink-rpc-akka-loader",
    "flink-connector-files", "flink-metrics-core")] + [
    ("org.apache.logging.log4j", a, maven.LOG4J_VERSION) for a in (
        "log4j-slf4j-impl", "log4j-core", "log4j-api")]


def _pom() -> str:
    deps = "\n".join(f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
                     f"<version>{v}</version></dependency>" for g, a, v in _LIB)
    return _POM.format(deps=deps)


def cache_dir() -> Path:
    return maven.cache_dir(f"flink-{FLINK_VERSION}")


def _finish(progress: ProgressFn | None):  # noqa: ANN202
    def finish(tmp: Path) -> None:
        (tmp / "examples").mkdir()
        (tmp / "plugins").mkdir()
        maven.run(["dependency:copy", "-Dartifact=org.apache.flink:flink-examples-streaming:"
                   f"{EXAMPLES_VERSION}", f"-DoutputDirectory={tmp / 'examples'}"],
                  tmp, progress, "Flink")
    return finish


def ensure_home(progress: ProgressFn | None = None) -> Path:
    """The cached Flink home; copies Flink's jars from Maven Central on first use."""
    return maven.ensure_home(cache_dir(), _pom(), "Flink", progress, _finish(progress))


def reporter_jar(progress: ProgressFn | None = None) -> Path:
    """The reporter plug-in's jar, built with Maven from ``flink/`` when a source is newer
    (one ``mvn package`` builds the three jars)."""
    maven.project_jar(JAVA_PROJECT, JOBS_JAR, progress)
    return JAVA_PROJECT / "target" / REPORTER_JAR


def jobs_jar(progress: ProgressFn | None = None) -> Path:
    """The benchmark jobs' jar (without the Kafka connector: :func:`kafka_jar`)."""
    return maven.project_jar(JAVA_PROJECT, JOBS_JAR, progress)


def kafka_jar(progress: ProgressFn | None = None) -> Path:
    """The Kafka connector's jar, a class path of the benchmark jobs (built by the same
    ``mvn package``)."""
    return maven.project_jar(JAVA_PROJECT, KAFKA_JAR, progress)


def install_plugin(home: Path, progress: ProgressFn | None = None) -> Path:
    """Puts the reporter into ``home/plugins/streamband/`` (Flink loads each plug-in
    directory with a class loader of its own), with the Kafka client it asks the broker's
    end offsets with (:data:`KAFKA_JAR`, read from the local disk)."""
    plugin = home / "plugins" / "streamband"
    maven.install(kafka_jar(progress), plugin / KAFKA_JAR)
    return maven.install(reporter_jar(progress), plugin / REPORTER_JAR)


def main() -> None:
    """``python -m streamband.flink.home``: fetch Flink and build streamband's jars now
    (CI does this before the tests)."""
    def build(progress: ProgressFn) -> Path:
        home = ensure_home(progress)
        install_plugin(home, progress)
        return home

    maven.ready("Flink home", build)


if __name__ == "__main__":
    main()
