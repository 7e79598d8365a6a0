from __future__ import annotations

from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)
