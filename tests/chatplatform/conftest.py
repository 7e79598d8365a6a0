"""Fixtures of these tests: the scripted model server."""

from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)
from tests.peers.redis_server import redis_url  # noqa: F401  (a pytest fixture, registered by importing it here)
