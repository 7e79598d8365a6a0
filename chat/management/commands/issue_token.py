"""`python manage.py issue_token USER_ID [...]`: create or update a user and print a token (docs/api.md, "Users")."""

from __future__ import annotations

import json
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.users.models import ChatUser, UserType
from chatplatform.api.authentication import sign_token


class Command(BaseCommand):
    help = "Create or update a chat user and print one line: a signed bearer token the service accepts."
    # The system checks load the whole URL configuration (every view and what it imports); this
    # command uses none of it, and `manage.py check` is there to run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user_id")
        parser.add_argument("--admin", action="store_true", help="staff user with the admin role")
        parser.add_argument("--user-type", choices=UserType.values, default=None)
        parser.add_argument("--email", default=None)
        parser.add_argument("--first-name", default=None)
        parser.add_argument("--last-name", default=None)
        parser.add_argument("--custom-data", default=None, help="JSON object")
        parser.add_argument("--expires-in", type=int, default=86400, help="seconds (default one day)")

    def handle(self, *args: Any, **options: Any) -> None:
        user_id = options["user_id"].strip()
        if not user_id:
            raise CommandError("USER_ID must not be empty")
        if options["expires_in"] <= 0:
            raise CommandError("--expires-in must be a positive number of seconds")
        custom_data = None
        if options["custom_data"] is not None:
            try:
                custom_data = json.loads(options["custom_data"])
            except json.JSONDecodeError as exc:
                raise CommandError(f"--custom-data is not valid JSON: {exc.msg}") from None
            if not isinstance(custom_data, dict):
                raise CommandError("--custom-data must be a JSON object")

        user, _ = ChatUser.objects.get_or_create(user_id=user_id, defaults={"password": "!"})
        for field, value in (
            ("email", options["email"]),
            ("first_name", options["first_name"]),
            ("last_name", options["last_name"]),
            ("user_type", options["user_type"]),
            ("custom_data", custom_data),
        ):
            if value is not None:
                setattr(user, field, value)
        if options["admin"]:
            user.is_staff = True
            if settings.CHAT_ADMIN_ROLE not in user.roles:
                user.roles = [*user.roles, settings.CHAT_ADMIN_ROLE]
        user.full_clean(exclude=["password"])
        user.save()

        now = int(time.time())
        claims: dict[str, Any] = {
            "sub": user.user_id,
            "iat": now,
            "exp": now + options["expires_in"],
            "email": user.email,
            "given_name": user.first_name,
            "family_name": user.last_name,
            "user_type": user.user_type,
            "custom_data": user.custom_data,
            "roles": user.roles,
        }
        self.stdout.write(sign_token(claims))
