"""Chat records (CONTRACT §5): users first; sessions, messages and feedback join them later."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models


class UserType(models.TextChoices):
    INTERNAL = "internal-user", "Internal user"
    EXTERNAL = "external-user", "External user"


# JWT claim → ChatUser field (CONTRACT §3).
_CLAIM_FIELDS = {
    "email": "email",
    "given_name": "first_name",
    "family_name": "last_name",
    "user_type": "user_type",
    "custom_data": "custom_data",
    "roles": "roles",
}


class ChatUserManager(BaseUserManager["ChatUser"]):
    def create_user(self, user_id: str, password: str | None = None, **fields: Any) -> ChatUser:
        user = self.model(user_id=user_id, **fields)
        user.set_password(password) if password else user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_superuser(self, user_id: str, password: str | None = None, **fields: Any) -> ChatUser:
        fields.update(is_staff=True, is_superuser=True, user_type=UserType.INTERNAL)
        return self.create_user(user_id, password, **fields)

    def sync_from_claims(self, claims: dict[str, Any]) -> ChatUser:
        """The user a verified token names: created on first sight, refreshed when claims change."""
        values = {field: claims[claim] for claim, field in _CLAIM_FIELDS.items() if claim in claims}
        if values.get("user_type") not in {None, *UserType.values}:
            values.pop("user_type")
        if not isinstance(values.get("custom_data", {}), dict):
            values.pop("custom_data")
        if not isinstance(values.get("roles", []), list):
            values.pop("roles")
        user, created = self.get_or_create(user_id=claims["sub"], defaults={**values, "password": "!"})
        if not created:
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
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        verbose_name = "chat user"
        indexes = [models.Index(fields=["email"], name="chatuser_email")]  # admin search by email

    def __str__(self) -> str:
        return self.user_id

    @property
    def is_chat_admin(self) -> bool:
        """CONTRACT §3: admin = `is_staff`, or a token whose roles hold CHAT_ADMIN_ROLE."""
        return self.is_staff or settings.CHAT_ADMIN_ROLE in (self.roles or [])
