"""Block non-loopback network access, so an accidental download fails loudly instead of hanging."""

from __future__ import annotations

import ipaddress
import socket

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


class NetworkBlocked(RuntimeError):
    pass


def _check(address) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str) or host.startswith("/"):  # unix sockets are local
        return
    if host in ("localhost", ""):
        return
    try:
        if ipaddress.ip_address(host.split("%")[0]).is_loopback:
            return
    except ValueError:
        pass
    raise NetworkBlocked(f"tests may not reach the network (tried {host!r}): ragclinic must work offline")


def _connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _check(address)
    return _real_connect(self, address)


def _connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _check(address)
    return _real_connect_ex(self, address)


def install() -> None:
    socket.socket.connect = _connect
    socket.socket.connect_ex = _connect_ex
