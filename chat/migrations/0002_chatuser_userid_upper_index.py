"""Index for the admin user search (`userIdPartial`, a case-insensitive prefix).

Django renders `user_id__istartswith` on PostgreSQL as `UPPER(user_id::text) LIKE UPPER(%s)`;
a pattern-ops index on that expression serves it under any collation. SQLite needs none.
"""

from django.db import migrations

INDEX = "chatuser_userid_upper"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'CREATE INDEX IF NOT EXISTS {INDEX} ON chat_chatuser ((UPPER("user_id"::text)) text_pattern_ops)')


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("chat", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
