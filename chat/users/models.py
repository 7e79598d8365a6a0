"""ChatUser, the project's user model (docs/api.md, "Users"): a person using chat apps and, with
`is_staff`, an operator of the Django admin."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.core.cache import cache
from django.db import models
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from chatplatform.api.exceptions import UNAVAILABLE

# Authenticated users are kept in the shared cache: reading one there costs a fraction of the
# ORM query, and every save or delete drops the entry. In front of it, each process remembers a
# user for one second, which spares the Redis round trip on busy paths: a change made in another
# process (say, an operator deactivating a user) takes effect there within that second.
USER_CACHE_SECONDS = 300
LOCAL_USER_SECONDS = 1.0
_local_users: dict[str, tuple[float, dict[str, Any]]] = {}
_LOCAL_USERS_MAX = 10_000


def _user_cache_key(user_id: str) -> str:
    return f"chatuser:{user_id}"


def forget_local_users() -> None:
    """Drop this process's one-second memory of users (tests roll back the rows behind it)."""
    _local_users.clear()


class UserType(models.TextChoices):
    INTERNAL = "internal-user", "Internal user"
    EXTERNAL = "external-user", "External user"


# JWT claim → ChatUser field (docs/api.md, "Authentication").
_CLAIM_FIELDS = {
    "email": "email",
    "given_name": "first_name",
    "family_name": "last_name",
    "user_type": "user_type",
    "custom_data": "custom_data",
    "roles": "roles",
}


_USER_TYPES = frozenset({None, *UserType.values})


class ChatUserManager(BaseUserManager["ChatUser"]):
    def create_user(self, user_id: str, password: str | None = None, **fields: Any) -> ChatUser:
        user = self.model(user_id=user_id, **fields)
        user.set_password(password) if password else user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_superuser(self, user_id: str, password: str | None = None, **fields: Any) -> ChatUser:
        fields.update(is_staff=True, is_superuser=True, user_type=UserType.INTERNAL)
        return self.create_user(user_id, password, **fields)

    def _from_cache(self, key: str) -> ChatUser | None:
        now = time.monotonic()
        local = _local_users.get(key)
        if local is not None and now - local[0] < LOCAL_USER_SECONDS:
            values: Any = local[1]
        else:
            try:
                values = cache.get(key)
            except UNAVAILABLE:
                raise  # the cache is down: the request fails fast (503), not slowly twice
            except Exception:  # unreadable (written by another release): a miss
                return None
            if isinstance(values, dict):
                if len(_local_users) >= _LOCAL_USERS_MAX:
                    _local_users.clear()
                _local_users[key] = (now, values)
        attnames = [f.attname for f in self.model._meta.concrete_fields]
        if not isinstance(values, dict) or list(values) != attnames:  # fields of another release: a miss
            return None
        return self.model.from_db(self.db, attnames, list(values.values()))

    def sync_from_claims(self, claims: dict[str, Any]) -> ChatUser:
        """The user a verified token names: created on first sight, refreshed when claims change."""
        values = {field: claims[claim] for claim, field in _CLAIM_FIELDS.items() if claim in claims}
        if values.get("user_type") not in _USER_TYPES:
            values.pop("user_type")
        if not isinstance(values.get("custom_data", {}), dict):
            values.pop("custom_data")
        if not isinstance(values.get("roles", []), list):
            values.pop("roles")
        key = _user_cache_key(claims["sub"])
        user = self._from_cache(key)
        if user is None:
            user, created = self.get_or_create(user_id=claims["sub"], defaults={**values, "password": "!"})
            if created:
                return user
            # Field values, not the instance: a pickled model of another release may not load.
            cache.set(key, {f.attname: getattr(user, f.attname) for f in user._meta.concrete_fields}, USER_CACHE_SECONDS)
        changed = [field for field, value in values.items() if getattr(user, field) != value]
        if changed:
            for field in changed:
                setattr(user, field, values[field])
            user.save(update_fields=[*changed, "last_update"])
        return user


class ChatUser(AbstractBaseUser, PermissionsMixin):
    """A person using chat apps, and (with `is_staff`) an operator of the Django admin."""

    user_id = models.CharField("userId", max_length=255, primary_key=True)
    email = models.EmailField(blank=True, default="")
    first_name = models.CharField(max_length=150, blank=True, default="")
    last_name = models.CharField(max_length=150, blank=True, default="")
    user_type = models.CharField(max_length=20, choices=UserType.choices, default=UserType.EXTERNAL)
    custom_data = models.JSONField(default=dict, blank=True)
    roles = models.JSONField(default=list, blank=True)
    prefs = models.JSONField(default=dict, blank=True)
    is_staff = models.BooleanField(default=False, help_text="May log in to the Django admin; is an admin of the API.")
    is_active = models.BooleanField(default=True)
    create_date = models.DateTimeField(auto_now_add=True)
    last_update = models.DateTimeField(auto_now=True)

    objects = ChatUserManager()

    USERNAME_FIELD = "user_id"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS = []

    class Meta:
        verbose_name = "chat user"
        indexes = [models.Index(fields=["email"], name="chatuser_email")]  # admin search by email

    def __str__(self) -> str:
        return self.user_id

    @property
    def is_chat_admin(self) -> bool:
        """docs/api.md, "Authentication": admin = `is_staff`, or a token whose roles hold CHAT_ADMIN_ROLE."""
        return self.is_staff or settings.CHAT_ADMIN_ROLE in (self.roles or [])


@receiver(post_save, sender=ChatUser)
@receiver(post_delete, sender=ChatUser)
def _forget_cached_user(sender: type[ChatUser], instance: ChatUser, **kwargs: Any) -> None:
    key = _user_cache_key(instance.pk)
    _local_users.pop(key, None)
    cache.delete(key)
