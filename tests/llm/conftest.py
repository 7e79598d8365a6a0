"""The scripted model server fixture for these tests."""

from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)
