"""Fixtures shared by the integration tests."""

import pytest
from fake_servers import FakeServer


@pytest.fixture
def server():
    """A loopback fake OpenAI + Gemini server (see ``fake_servers.py``), stopped afterwards."""
    s = FakeServer().start()
    yield s
    s.stop()
