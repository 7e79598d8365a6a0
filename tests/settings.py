"""The platform's settings for the test run and the platform processes its tests start (they
inherit DJANGO_SETTINGS_MODULE): the same knobs, with a password hasher that costs microseconds.

PBKDF2's hundreds of thousands of rounds cost a large fraction of a second per user created with a
password, per `seed_demo` and per sign-in; no test measures the hasher (docs/decisions.md, "The
test suite").
"""

from chatplatform.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
