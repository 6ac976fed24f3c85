"""`streamband testbed clean` stops every Storm JVM run from the project's storm.home, also
one without the project's mark (a daemon whose launcher died, a worker a Supervisor
relaunched): here a real ZooKeeper started from the cached home with a plain environment."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from streamband.procs import MARK, clean, leftovers, marked_processes
from streamband.storm.cluster import storm_processes
from streamband.storm.home import ensure_home

PORT = 22181


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_clean_stops_unmarked_storm_jvm(tmp_path: Path):
    clean()
    home = ensure_home()
    env = {k: v for k, v in os.environ.items() if k != MARK and not k.startswith("STREAMBAND")}
    cmd = ["java", "-Xmx64m", "-cp", f"{home / 'lib' / '*'}", f"-Dstorm.home={home}",
           "org.apache.storm.shade.org.apache.zookeeper.server.ZooKeeperServerMain",
           str(PORT), str(tmp_path / "zk")]
    log = (tmp_path / "zk.out").open("wb")
    zk = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                          start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _listening(PORT):
            assert zk.poll() is None, (tmp_path / "zk.out").read_text()[-2000:]
            assert time.monotonic() < deadline, "ZooKeeper did not listen in 60 s"
            time.sleep(0.2)
        assert zk.pid not in marked_processes()  # the mark alone would miss it
        assert zk.pid in storm_processes()
        assert any(str(zk.pid) in item for item in leftovers())
        clean()
        assert zk.wait(10) is not None
        assert storm_processes() == [] and leftovers() == []
    finally:
        if zk.poll() is None:
            zk.kill()
            zk.wait()
        log.close()
