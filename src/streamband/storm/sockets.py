"""The kernel's view of TCP connections, engine-neutral, lives in
:mod:`streamband.loop.sockets` (Storm and Flink both read it); this name stays for the
modules and tests that import it from here."""

from streamband.loop.sockets import TcpSocket, parse_ss, tcp_sockets

__all__ = ["TcpSocket", "parse_ss", "tcp_sockets"]
