"""``hlopipe launch`` runs a local job: its coordination service (no authentication) listens on
the loopback interface only, never on an address other machines can reach."""

from __future__ import annotations

import contextlib
import io
import ipaddress
import socket
import subprocess
import sys

import pytest

from hlopipe.runtime import distributed
from hlopipe.runtime.launch import LOOPBACK, child_env, free_port, launch


def non_loopback_addresses() -> list[str]:
    """This machine's own addresses that are not loopback (IPv4 and IPv6, link-local left out:
    it needs a scope id)."""
    found: set[str] = set()
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10)
        found.update(out.stdout.split())
    with contextlib.suppress(OSError):
        for *_, addr in socket.getaddrinfo(socket.gethostname(), None):
            found.add(str(addr[0]))
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))  # UDP: picks the outgoing interface, sends nothing
        found.add(s.getsockname()[0])
    keep = []
    for a in sorted(found):
        ip = ipaddress.ip_address(a.split("%")[0])
        if not (ip.is_loopback or ip.is_link_local or ip.is_unspecified):
            keep.append(str(ip))
    return keep


def reachable(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        try:
            s.connect((host, port))
        except OSError:
            return False
        return True


def addresses_this_test_can_use() -> list[str]:
    """Non-loopback addresses on which a socket listening on every interface is reachable
    from here (so 'not reachable' below means the service is not listening there)."""
    usable = []
    for addr in non_loopback_addresses():
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind(("::" if family == socket.AF_INET6 else "0.0.0.0", 0))
            s.listen()
            if reachable(addr, s.getsockname()[1]):
                usable.append(addr)
    return usable


@pytest.fixture(scope="module")
def outside() -> list[str]:
    addrs = addresses_this_test_can_use()
    if not addrs:
        pytest.skip(
            "this machine has no non-loopback address reachable from itself (hostname -I, "
            f"getaddrinfo and the UDP route found {non_loopback_addresses()}), so there is no "
            "address to check the service is NOT listening on"
        )
    return addrs


def test_the_launchers_service_listens_on_loopback_only(outside: list[str]) -> None:
    port = free_port()
    service = distributed.start_service(port, 2, 10, LOOPBACK)  # as launch() starts it
    try:
        assert reachable(LOOPBACK, port)  # it runs...
        for addr in outside:  # ...but not where other machines could reach it
            assert not reachable(addr, port), f"the coordination service answers on {addr}"
    finally:
        service.shutdown()


def test_the_check_would_see_a_service_on_every_interface(outside: list[str]) -> None:
    # the previous test, with the service bound as jax binds it by default ([::]:port)
    port = free_port()
    service = distributed.start_service(port, 2, 10, "[::]")
    try:
        assert any(reachable(addr, port) for addr in outside)
    finally:
        service.shutdown()


def test_children_point_jax_at_loopback() -> None:
    env = child_env(0, 2, 1234, 1, 10, external_service=False, base={})
    assert env[distributed.ENV_COORDINATOR] == f"{LOOPBACK}:1234"
    # jax.distributed.initialize binds process 0's service here when the launcher does not host it
    assert env["JAX_COORDINATOR_BIND_ADDRESS"] == f"{LOOPBACK}:1234"


# Process 0 of a one-process job hosts the service itself (launch(host_service=False)), as
# jax.distributed.initialize starts it; it reports where the service answers.
PROBE = """
import os, socket, sys
from hlopipe import distributed
distributed.initialize()
port = int(os.environ["HLOPIPE_COORDINATOR"].rsplit(":", 1)[1])
for addr in sys.argv[1:]:
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(fam) as s:
        s.settimeout(3)
        print("PROBE", addr, "open" if s.connect_ex((addr, port)) == 0 else "closed", flush=True)
distributed.shutdown()
"""


@pytest.mark.multiprocess
def test_process_0_hosting_the_service_under_launch_listens_on_loopback(outside) -> None:
    out = io.StringIO()
    code = launch(
        [sys.executable, "-c", PROBE, LOOPBACK, *outside], nproc=1, host_service=False, out=out
    )
    assert code == 0, out.getvalue()
    lines = [ln.split()[3:] for ln in out.getvalue().splitlines() if " PROBE " in ln]
    assert lines == [[LOOPBACK, "open"]] + [[a, "closed"] for a in outside], out.getvalue()
