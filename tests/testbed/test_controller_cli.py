import typer
from typer.testing import CliRunner

from streamband.sdn.cli import controller


def _app():
    a = typer.Typer()
    a.command()(controller)
    return a


def test_bad_listen_is_one_line_exit_2():
    r = CliRunner().invoke(_app(), ["--listen", "nonsense"])
    assert r.exit_code == 2 and "--listen" in r.output


def test_non_loopback_needs_token():
    r = CliRunner().invoke(_app(), ["--listen", "0.0.0.0:8181"], env={"STREAMBAND_API_TOKEN": ""})
    assert r.exit_code == 2 and "token" in r.output
