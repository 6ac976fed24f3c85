"""The kernel's view of connections: ``ss -tinpH state established`` parsed."""

import os

from streamband.loop.sockets import parse_ss, tcp_sockets

SAMPLE = """\
0      1448   10.0.0.2:41234     10.0.0.3:6700 users:(("java",pid=4242,fd=77))
\t bbr wscale:9,9 rto:204 rtt:51.2/2 mss:1448 rcv_rtt:7 cwnd:20 ssthresh:7 bytes_sent:9000 \
bytes_acked:7552 bytes_received:12 notsent:0 send 45Mbps retrans:0/80 minrtt:1.02
3      0      [::ffff:10.0.0.2]:6701 [::ffff:10.0.0.3]:50000 users:(("java",pid=7,fd=3))
\t cubic bytes_acked:1 bytes_received:99
"""


def test_parse_two_sockets():
    a, b = parse_ss(SAMPLE)
    assert a.four_tuple == ("10.0.0.2", 41234, "10.0.0.3", 6700)
    assert (a.send_q, a.bytes_acked, a.bytes_sent, a.pids) == (1448, 7552, 9000, (4242,))
    # where a backlog waits: RTT against the path's minimum, the window, retransmissions
    assert (a.rtt_ms, a.min_rtt_ms, a.cwnd, a.retrans) == (51.2, 1.02, 20, 80)
    assert (b.rtt_ms, b.min_rtt_ms, b.cwnd, b.retrans) == (None, None, None, 0)
    assert b.four_tuple == ("10.0.0.2", 6701, "10.0.0.3", 50000)
    assert (b.recv_q, b.bytes_acked, b.pids) == (3, 1, (7,))


def test_reads_this_namespace():
    """A real connection on loopback shows up with its bytes."""
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.create_connection(srv.getsockname())
    peer, _ = srv.accept()
    cli.sendall(b"x" * 5000)
    peer.recv(10000)
    port, srv_port = cli.getsockname()[1], srv.getsockname()[1]
    mine = [s for s in tcp_sockets() if s.src_port == port]
    plain = [s for s in tcp_sockets(processes=False) if s.src_port == port]
    cli.close()
    peer.close()
    srv.close()
    assert [s.dst_port for s in mine] == [srv_port]
    assert mine[0].bytes_acked >= 5000
    assert mine[0].min_rtt_ms is not None and mine[0].rtt_ms >= mine[0].min_rtt_ms > 0
    assert mine[0].cwnd is not None and mine[0].cwnd > 0
    assert os.getpid() in mine[0].pids  # which process holds it, with ss -p
    assert [s.four_tuple for s in plain] == [mine[0].four_tuple] and plain[0].pids == ()


def test_a_steps_host_reads_run_side_by_side_and_once_each():
    """HostSockets reads each (host, processes) once per flow state, and the reads named
    together are in flight at once: every read here waits until all four have started,
    which reads one after another never reach (the barrier breaks)."""
    import threading

    from streamband.loop.sockets import HostSockets

    keys = [("10.0.0.1", False), ("10.0.0.2", False), ("10.0.0.3", True), ("10.0.0.4", True)]
    started = threading.Barrier(len(keys), timeout=30)
    calls: list[tuple[str, bool]] = []

    def read(ip: str, processes: bool):
        calls.append((ip, processes))
        started.wait()
        return tcp_sockets(processes=processes)

    hosts = HostSockets(read)
    hosts.prefetch(keys + keys[:2])
    assert hosts("10.0.0.3", True) is hosts.seen[("10.0.0.3", True)]
    assert sorted(calls) == sorted(keys)
