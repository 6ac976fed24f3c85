"""The configuration files of the store's servers (Swift's paste.deploy INI files,
the rsync daemon's and the node launcher's JSON), written per host.

Devices are plain directories (``mount_check = false``, ``disable_fallocate``);
every server binds its host's testbed address; logs go to a datagram socket the
node launcher drains into ``node.log`` (the namespaces have no syslog).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from streamband.swift.layout import (
    ACCOUNT_PORT,
    CONTAINER_PORT,
    KEY,
    MEMCACHED_PORT,
    OBJECT_PORT,
    PROXY_PORT,
    REPLICATION_PORT,
    RSYNC_PORT,
    USER,
    NodeFiles,
)
from streamband.swift.spec import ClusterSpec

LOG_LEVEL = os.environ.get("STREAMBAND_SWIFT_LOG_LEVEL", "WARNING")


def log_socket(files: NodeFiles, name: str) -> Path:
    """Where server ``name`` of this host sends its log records."""
    return files.root / f"{name}.log.sock"


def _default(files: NodeFiles, swift_dir: Path, ip: str, port: int, name: str) -> str:
    return (
        "[DEFAULT]\n"
        f"bind_ip = {ip}\nbind_port = {port}\nworkers = 0\n"
        f"swift_dir = {swift_dir}\ndevices = {files.devices}\n"
        "mount_check = false\ndisable_fallocate = true\n"
        f"log_name = {name}\nlog_level = {LOG_LEVEL}\nlog_address = {log_socket(files, name)}\n"
        "fallocate_reserve = 0\nuser = root\n"
        f"recon_cache_path = {files.root}\n"
    )


def storage_confs(files: NodeFiles, swift_dir: Path, ip: str,
                  cluster: ClusterSpec) -> dict[str, str]:
    """The server configs of one storage host: name -> INI text."""
    obj = _default(files, swift_dir, ip, OBJECT_PORT, "object") + (
        "\n[pipeline:main]\npipeline = object-server\n"
        "\n[app:object-server]\nuse = egg:swift#object\nreplication_server = false\n"
        "node_timeout = 10\nconn_timeout = 2\n"
    )
    repl = _default(files, swift_dir, ip, REPLICATION_PORT, "object-replication") + (
        "\n[pipeline:main]\npipeline = object-server\n"
        "\n[app:object-server]\nuse = egg:swift#object\nreplication_server = true\n"
        "\n[object-replicator]\n"
        f"log_address = {log_socket(files, 'object-replicator')}\n"
        f"sync_method = {cluster.sync_method}\n"
        f"interval = {cluster.replicator_interval_s:g}\n"
        f"concurrency = {cluster.replicator_concurrency}\n"
        "stats_interval = 3600\nring_check_interval = 3600\n"
        "rsync_module = {replication_ip}::object\n"
        "rsync_timeout = 600\nrsync_io_timeout = 30\nhttp_timeout = 30\nlockup_timeout = 3600\n"
        "handoffs_first = false\n"
    )
    cont = _default(files, swift_dir, ip, CONTAINER_PORT, "container") + (
        "\n[pipeline:main]\npipeline = container-server\n"
        "\n[app:container-server]\nuse = egg:swift#container\nreplication_server = true\n"
    )
    acct = _default(files, swift_dir, ip, ACCOUNT_PORT, "account") + (
        "\n[pipeline:main]\npipeline = account-server\n"
        "\n[app:account-server]\nuse = egg:swift#account\nreplication_server = true\n"
    )
    return {"object-server": obj, "object-replication": repl,
            "container-server": cont, "account-server": acct}


def proxy_conf(files: NodeFiles, swift_dir: Path, ip: str) -> str:
    """The proxy: tempauth (tokens in memcached, on the proxy's host), account
    autocreation; a node timeout long enough for shaped links."""
    return _default(files, swift_dir, ip, PROXY_PORT, "proxy") + (
        "\n[pipeline:main]\npipeline = catch_errors cache tempauth proxy-server\n"
        "\n[app:proxy-server]\nuse = egg:swift#proxy\naccount_autocreate = true\n"
        "node_timeout = 30\nconn_timeout = 3\nrecoverable_node_timeout = 30\n"
        "post_quorum_timeout = 0.5\nsorting_method = shuffle\n"
        "\n[filter:tempauth]\nuse = egg:swift#tempauth\n"
        f"user_{USER.replace(':', '_')} = {KEY} .admin\n"
        "token_life = 86400\n"
        "\n[filter:cache]\nuse = egg:swift#memcache\n"
        f"memcache_servers = {ip}:{MEMCACHED_PORT}\n"
        "\n[filter:catch_errors]\nuse = egg:swift#catch_errors\n"
    )


def rsyncd_conf(files: NodeFiles, ip: str) -> str:
    """The rsync daemon the peers' replicators push to (module ``object``)."""
    return (
        f"uid = root\ngid = root\naddress = {ip}\nport = {RSYNC_PORT}\n"
        f"pid file = {files.root / 'rsyncd.pid'}\nlog file = {files.root / 'rsyncd.log'}\n"
        "use chroot = no\nreverse lookup = no\n"
        f"\n[object]\npath = {files.devices}\nread only = false\nmax connections = 16\n"
        f"lock file = {files.root / 'rsync-object.lock'}\n"
    )


#: one storage host's servers: config name -> (the paste app it serves, its log name)
STORAGE_SERVERS = {"object-server": ("object-server", "object"),
                   "object-replication": ("object-server", "object-replication"),
                   "container-server": ("container-server", "container"),
                   "account-server": ("account-server", "account")}


def _launch(files: NodeFiles, name: str, servers: list[list[str]], replicator: str | None,
            logs: list[str]) -> Path:
    """A launcher file of :mod:`streamband.swift.node`: the servers and replicator
    one process runs, the log sockets it drains, the file it touches when ready."""
    path = files.root / f"{name}.json"
    path.write_text(json.dumps({
        "servers": servers, "replicator": replicator, "log": str(files.log),
        "log_sockets": [str(log_socket(files, x)) for x in logs],
        "ready": str(files.root / f"{name}.ready")}, indent=1))
    return path


def write_storage(files: NodeFiles, swift_dir: Path, ip: str, cluster: ClusterSpec,
                  split: bool = False) -> list[Path]:
    """Write one storage host's configs, its device and its launcher files: one
    process for every server of the host, or (``split``) one per server and one
    for the replicator. Returns the launcher files."""
    files.device.mkdir(parents=True, exist_ok=True)
    for name, text in storage_confs(files, swift_dir, ip, cluster).items():
        files.conf(name).write_text(text)
    files.conf("rsyncd").write_text(rsyncd_conf(files, ip))
    servers = {n: [str(files.conf(n)), app] for n, (app, _) in STORAGE_SERVERS.items()}
    logs = {n: log for n, (_, log) in STORAGE_SERVERS.items()}
    replicator = str(files.conf("object-replication"))
    if not split:
        return [_launch(files, "launch", list(servers.values()), replicator,
                        [*logs.values(), "object-replicator"])]
    return [_launch(files, f"launch-{n}", [srv], None, [logs[n]])
            for n, srv in servers.items()] + [
        _launch(files, "launch-replicator", [], replicator, ["object-replicator"])]


def write_proxy(files: NodeFiles, swift_dir: Path, ip: str) -> list[Path]:
    files.root.mkdir(parents=True, exist_ok=True)
    files.conf("proxy-server").write_text(proxy_conf(files, swift_dir, ip))
    return [_launch(files, "launch", [[str(files.conf("proxy-server")), "proxy-server"]],
                    None, ["proxy"])]
