"""The platform's settings for the test run and the platform processes its tests start (they
inherit DJANGO_SETTINGS_MODULE): the same knobs, with a password hasher that costs microseconds.

PBKDF2's hundreds of thousands of rounds cost a large fraction of a second per user created with a
password, per `seed_demo` and per sign-in; no test measures the hasher (docs/decisions.md, "The
test suite").
"""

from chatplatform.env import env_bool
from chatplatform.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The suite starts about a hundred server processes, most of which serve a turn or two: loading
# every door's SDK and the prompt compiler before listening cost each about a second of CPU. The
# tests of a fresh server's first turns start theirs with CHAT_WARM_START=true.
CHAT_WARM_START = env_bool("CHAT_WARM_START", default=False)
