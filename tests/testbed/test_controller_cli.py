"""``streamband controller``: a bad listen address or a non-loopback one without a token
is one line and exit 2, before anything listens."""

from typer.testing import CliRunner

from streamband.cli import app


def test_bad_listen_is_one_line_exit_2():
    r = CliRunner().invoke(app, ["controller", "--listen", "nonsense"])
    assert r.exit_code == 2 and "--listen" in r.output and r.output.count("\n") == 1


def test_non_loopback_needs_token():
    r = CliRunner().invoke(app, ["controller", "--listen", "0.0.0.0:8181"],
                           env={"STREAMBAND_API_TOKEN": ""})
    assert r.exit_code == 2 and "token" in r.output and r.output.count("\n") == 1
