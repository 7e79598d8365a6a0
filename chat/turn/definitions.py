"""The chat apps, agents, tools and knowledge bases a turn reads, kept per process (chatplatform.generations)."""

from __future__ import annotations

from chatplatform.generations import LocalCopies

# The chat apps, agents and tools a turn reads (chat.turn.admission), kept per process: three queries
# were half of a turn's start. Any save or delete of one replaces the generation (chat/apps.py).
turn_definitions = LocalCopies("definitions:generation", lifetime=60.0)
