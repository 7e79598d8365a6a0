"""`python manage.py seed_demo`: the demo data set of `make run` (CONTRACT §1). Safe to re-run."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from chat.models import ChatUser, UserType

DEMO_ADMIN = "admin"
DEMO_PASSWORD = "admin-demo"


class Command(BaseCommand):
    help = "Load the demo data set (admin user, chat app, agent, tools, tags, directives) and print the admin login."

    def handle(self, *args: Any, **options: Any) -> None:
        admin, created = ChatUser.objects.get_or_create(
            user_id=DEMO_ADMIN, defaults={"is_staff": True, "is_superuser": True, "user_type": UserType.INTERNAL}
        )
        if created:
            admin.set_password(DEMO_PASSWORD)
            admin.save()
        self.stdout.write(
            f"Django admin: http://127.0.0.1:8000/admin/  login {DEMO_ADMIN} / {DEMO_PASSWORD}"
            if created
            else f"Django admin: http://127.0.0.1:8000/admin/  login {DEMO_ADMIN} (password unchanged)"
        )
        self.stdout.write("Bearer token: python manage.py issue_token demo-user")
