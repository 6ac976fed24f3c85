"""``streamband manage --config cluster.yaml``: the manager as a service
(:mod:`streamband.manage.service`)."""

from __future__ import annotations

from pathlib import Path

import typer

#: what ``--check`` says of each ``enforce``
ENFORCED = {"meter": "meters (OpenFlow meters on the senders' switches, policing)",
            "shaper": "the shaper (HTB classes on the switch egress ports, queueing)"}


def manage(
    config: Path = typer.Option(..., "--config", help="cluster.yaml: the Storm cluster, the "
                                "Flink cluster or both, the controller, the network, the "
                                "topologies and jobs and their policies"),
    check: bool = typer.Option(False, help="check the config and exit"),
) -> None:
    """Run the manager as a service against a Storm cluster, a Flink cluster or both, and
    an OpenFlow controller (dashboard, API and /metrics at manager.listen)."""
    from streamband.cli.command import out_dir
    from streamband.manage.config import load_config
    from streamband.manage.service import Service, serve
    from streamband.manage.state import FILES

    cfg = load_config(config)
    # the state directory is written like an output: the one check of outputs decides
    out_dir(cfg.manager.state_dir, f"{config}: manager.state_dir", files=FILES)
    if check:
        Service.check(cfg, ports=True)
        typer.echo(f"{config}: {len(cfg.topologies)} topologies, "
                   f"{len(cfg.network.hosts)} hosts, {len(cfg.network.switches)} switches, "
                   f"enforced by {ENFORCED[cfg.enforce]}")
        return
    serve(cfg)
