"""`python manage.py seed_demo`: load the demo data set of `make run` (chat/management/commands/_demo.py).

Safe to re-run: it creates what is missing and never changes what exists; `--reset` writes the
demo back as defined. Its accounts have passwords printed in the repository, so they are created
only with DEBUG on (`make run`); outside DEBUG only when asked for with `--with-accounts`, and
then with random passwords, printed once.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from chat.management.commands import _demo as demo


class Command(BaseCommand):
    help = (
        "Load the demo data set (chat app, agents, tools, tags, directives, a knowledge base of the project's docs; "
        "with DEBUG on, or --with-accounts, the admin and demo users) and print the logins. Creates what is missing, "
        "never changes what exists; --reset restores it."
    )

    # `make run` runs this on every start, after `migrate` has run the system checks.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--reset", action="store_true", help="Write every demo record back as the demo defines it.")
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="The server's address, for the printed links.")
        parser.add_argument(
            "--migrate", action="store_true", help="Apply unapplied migrations first; nothing when there are none (make run)."
        )
        parser.add_argument(
            "--with-accounts",
            action="store_true",
            help="Outside DEBUG, create the demo's admin and user too, with random passwords (printed once).",
        )

    def migrate_if_needed(self) -> None:
        """`make run` starts here on every start: one process instead of `migrate` then `seed_demo`,
        and no migrate (nor its system checks) when every migration is applied already."""
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            call_command("migrate", interactive=False, stdout=self.stdout)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["migrate"]:
            self.migrate_if_needed()
        loader = demo.Loader(reset=options["reset"])
        with transaction.atomic():
            if settings.DEBUG or options["with_accounts"]:
                loader.accounts(random_passwords=not settings.DEBUG)
            loader.records()
        loaded = loader.loaded
        for failure in loaded.failures:
            self.stderr.write(failure)

        self.stdout.write(
            f"Demo data: chat app {demo.CHAT_APP['chatAppId']!r}, agent {demo.AGENT['agentId']!r}, {len(demo.TOOLS)} tools, "
            f"{len(demo.TAG_DEFINITIONS)} tag definitions, {len(demo.DIRECTIVES)} directives, knowledge base "
            f"{demo.KNOWLEDGE_BASE['knowledgeBaseId']!r} ({loaded.documents} documents indexed), supervisor "
            f"{demo.SUPERVISOR['agentId']!r} with {len(demo.COLLABORATORS)} collaborators."
        )
        verb = "restored" if options["reset"] else "created"
        kept = f"; {loaded.kept} kept as they are (seed_demo --reset restores them)" if loaded.kept else ""
        self.stdout.write(f"{loaded.written} demo records {verb}{kept}.")
        url = options["url"].rstrip("/")
        self.stdout.write(f"Django admin: {url}/admin/  {self.login(demo.ADMIN, loaded)}")
        self.stdout.write(f"Chat page: {url}/  {self.login(demo.PERSON, loaded)}")
        self.stdout.write(
            f"Widgets: {len(demo.WIDGET_TAG_DEFINITIONS)} demo widget tag definitions ({loaded.widgets_added} added), scripts in "
            f"the widget store bucket {demo.WIDGET_STORE_BUCKET!r}; they show when the site's tags feature is on (make run turns it on)."
        )
        self.stdout.write("Bearer token: .venv/bin/python manage.py issue_token demo-user")

    def login(self, account: demo.Account, loaded: demo.Loaded) -> str:
        if account.user_id not in loaded.passwords:
            return "no demo account outside DEBUG (seed_demo --with-accounts creates it, with a random password)"
        password = loaded.passwords[account.user_id]
        return f"login {account.user_id} (password unchanged)" if password is None else f"login {account.user_id} / {password}"
