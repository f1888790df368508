"""ray_fleet.connect without a cluster (ray.init stands in, answering as Ray Client does): a session
the Ray Client server failed to start is asked for again (ray#63202), up to CLIENT_INIT_TRIES times,
then refused with one typed line; other failures, and a GCS address's, are refused at the first."""
from __future__ import annotations

import socket

import pytest

from cuzk.cluster import ray_fleet
from cuzk.cluster.ray_fleet import CLIENT_INIT_TRIES, ClusterUnavailableError

ray = pytest.importorskip("ray")
SERVER_FAILED = ConnectionAbortedError("Initialization failure from server:\nTraceback (most recent call last):\n"
                                       "  File \"proxier.py\", line 772\nRuntimeError: Starting Ray client server failed.")


@pytest.fixture
def listening():
    """A port that accepts connections (connect's probe), and nothing Ray behind it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


class FakeInit:
    """ray.init raising each of `errors` in turn, then joining; `calls` counts its calls."""

    def __init__(self) -> None:
        self.errors: list[Exception] = []
        self.calls = 0

    def __call__(self, **kwargs) -> None:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


@pytest.fixture
def init(monkeypatch) -> FakeInit:
    fake = FakeInit()
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake)
    return fake


def test_a_client_session_the_server_failed_to_start_is_asked_for_again(init, listening):
    init.errors = [SERVER_FAILED]
    ray_fleet.connect(f"ray://127.0.0.1:{listening}")
    assert init.calls == 2


def test_a_client_session_that_never_starts_is_one_typed_line(init, listening):
    init.errors = [SERVER_FAILED] * CLIENT_INIT_TRIES
    with pytest.raises(ClusterUnavailableError) as refused:
        ray_fleet.connect(f"ray://127.0.0.1:{listening}")
    assert init.calls == CLIENT_INIT_TRIES
    assert str(refused.value) == (f"--cluster ray://127.0.0.1:{listening}: cannot join the Ray cluster: Initialization "
                                  "failure from server: RuntimeError: Starting Ray client server failed.")


@pytest.mark.parametrize("address, error", [("ray://127.0.0.1:{}", ConnectionRefusedError("no")),
                                            ("127.0.0.1:{}", SERVER_FAILED)])
def test_other_failures_are_refused_at_once(init, listening, address, error):
    init.errors = [error]
    with pytest.raises(ClusterUnavailableError):
        ray_fleet.connect(address.format(listening))
    assert init.calls == 1
