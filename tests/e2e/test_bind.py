"""Issue 15 item 1: the default install listens on this machine only.

``streamlit run app.py`` used to listen on every interface in local mode, where whoever
reaches the port is the lead (and can send the provider keys to a server of their choice).
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import pytest

from tests.e2e.harness import browser_context, free_port, streamlit_app

LOCAL = {"REFORM_AUTH_MODE": "local", "REFORM_LOAD_DEMO": "false"}


def _listening_addresses(port: int) -> list[str]:
    """Local addresses of the LISTEN sockets on ``port`` (Linux /proc/net/tcp and tcp6)."""
    out = []
    for name, width in (("tcp", 8), ("tcp6", 32)):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            addr, hexport = fields[1].split(":")
            if fields[3] != "0A" or int(hexport, 16) != port:  # 0A = LISTEN
                continue
            raw = bytes.fromhex(addr)
            # /proc prints each 32-bit word in host (little-endian) order
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            out.append(str(ipaddress.ip_address(raw)))
    return out


def _non_loopback_ipv4() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if ipaddress.ip_address(ip).is_loopback else ip


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
def test_streamlit_run_app_listens_on_loopback_only(tmp_path):
    """The README's command, no address given: every listening socket is a loopback address."""
    port = free_port()
    with streamlit_app({**LOCAL, "REFORM_DATABASE_URL": f"sqlite:///{tmp_path / 'bind.db'}"}, port=port):
        addresses = _listening_addresses(port)
        assert addresses, f"nothing listens on port {port}"
        assert all(ipaddress.ip_address(a).is_loopback for a in addresses), (
            f"streamlit run app.py listens on {addresses}, not only on loopback"
        )
        other = _non_loopback_ipv4()
        if other:
            with pytest.raises(OSError):
                socket.create_connection((other, port), timeout=2).close()


def test_local_mode_refuses_a_browser_on_another_machine(tmp_path):
    """An address set to every interface in local mode: a browser from elsewhere is not the lead."""
    other = _non_loopback_ipv4()
    if other is None:
        pytest.skip("this machine has no non-loopback IPv4 address to connect from")
    from playwright.sync_api import expect

    env = {**LOCAL, "REFORM_DATABASE_URL": f"sqlite:///{tmp_path / 'remote.db'}", "REFORM_LOAD_DEMO": "true"}
    with streamlit_app(env, "--server.address", "0.0.0.0") as base, browser_context() as context:
        port = base.rsplit(":", 1)[1]
        remote = context.new_page()
        remote.goto(f"http://{other}:{port}/users")
        expect(remote.get_by_text("serves only a browser on the machine it runs on")).to_be_visible()
        expect(remote.get_by_role("heading", name="Users")).to_have_count(0)
        expect(remote.get_by_text("ReForm demo")).to_have_count(0)
        local = context.new_page()
        local.goto(f"http://127.0.0.1:{port}/")
        expect(local.get_by_role("heading", name="ReForm demo")).to_be_visible()
