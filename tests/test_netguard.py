import socket

import netguard
import pytest


def test_non_loopback_connections_are_blocked():
    with pytest.raises(netguard.NetworkBlocked):
        socket.create_connection(("203.0.113.1", 80), timeout=1)


def test_loopback_is_allowed():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=1)
    c.close()
    srv.close()
