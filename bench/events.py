"""bench/events: what the events and operations (docs/api.md, "Events") cost, and how fast they go.

1. Turns with webhooks: sequential streamed turns (each a new session, so each writes its
   session.created outbox row) on three servers at once, interleaved: no webhooks; webhooks to a
   receiver answering in 1 ms; webhooks to a receiver answering 500 (retried in the background).
   One worker delivers meanwhile. Target: TTFT with webhooks ≤ 1.02× without.
2. From cause to delivery: the receiver's arrival time minus the event's `timestamp` (p50, p99).
3. Deliveries per second of one worker, from an outbox of `--deliveries` rows, to the 1 ms receiver.
4. The user's session list (`GET /api/chat/sessions`, 20 of 800 sessions) against `GET /api/chat/user`
   in the same run, one uvicorn process, `wrk` at 1, 10 and 50 connections. Target ≥ 0.8×.
5. PostgreSQL only: admin session search over `--sessions` sessions (30 % with insights, 5 % with
   feedback, 2 % with internal comments): p50/p95 per filter family through the API (target p95
   < 50 ms), and the query plans (no sequential scan of sessions, insights or feedback).

    .venv/bin/python bench/events.py [--turns 30] [--deliveries 3000] [--sessions 1000000] [--wrk-seconds 5]

A throwaway database (SQLite, or a new database on the DATABASE_URL server), Redis when REDIS_URL
is set. The load generator, the receivers, the model server and the platform share the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import aiohttp
import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_platform, manage, percentile  # noqa: E402
from bench.converse import through_sse  # noqa: E402
from tests.peers.webhook_receiver import Answer, WebhookReceiver  # noqa: E402
from tests.servers import asgi_server  # noqa: E402

SECRET = "bench-webhook-secret"
BODY = {"chatAppId": "demo", "agentId": "demo-assistant", "message": "Tell me something.", "features": {}, "source": "user"}


def hooks(*receivers: WebhookReceiver) -> str:
    return json.dumps(
        [{"url": r.url, "secret": SECRET, "events": ["session.created", "session.completed", "feedback.created"]} for r in receivers]
    )


@contextmanager
def worker(env: dict[str, str]):
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_worker"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


# --- 1 and 2: turns with webhooks, and cause-to-delivery latency ---------------------------------


async def turns(servers: dict[str, str], token: str, count: int) -> dict[str, list[tuple[float, float]]]:
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120)) as client:
        for url in servers.values():  # warm up
            for _ in range(3):
                await through_sse(client, url, token)
        for _ in range(count):  # interleaved: drift on the machine hits every configuration alike
            for name, url in servers.items():
                samples[name].append(await through_sse(client, url, token))
    return samples


def bench_turns(env: dict[str, str], token: str, admin: str, args: argparse.Namespace) -> None:
    with WebhookReceiver(default=Answer(delay=0.001)) as fast, WebhookReceiver(default=Answer(status=500, delay=0.001)) as failing:
        worker_env = {**env, "CHAT_WEBHOOKS": hooks(fast, failing)}
        with (
            asgi_server(env) as plain,
            asgi_server({**env, "CHAT_WEBHOOKS": hooks(fast)}) as to_fast,
            asgi_server({**env, "CHAT_WEBHOOKS": hooks(failing)}) as to_failing,
            worker(worker_env),
        ):
            agent = {"agent": {"agentId": "demo-assistant", "foundationModel": "openai:bench"}}
            httpx.post(f"{plain.url}/api/chat-admin/agent", json=agent, headers={"Authorization": f"Bearer {admin}"}).raise_for_status()
            servers = {"no webhooks": plain.url, "webhooks, 1 ms receiver": to_fast.url, "webhooks, 500 receiver": to_failing.url}
            samples = asyncio.run(turns(servers, token, args.turns))
            deadline = time.monotonic() + 30
            while len(fast.of("session.created")) < args.turns + 3 and time.monotonic() < deadline:
                time.sleep(0.1)
        base = statistics.median(ttft for ttft, _ in samples["no webhooks"])
        print(f"\n1. sequential streamed turns, each a new session ({args.turns} per configuration, interleaved; one worker delivering):")
        print(f"   {'configuration':<26} {'TTFT p50':>9} {'p99':>8} {'total p50':>10} {'TTFT x':>7}")
        for name, rows in samples.items():
            ttft, total = [t for t, _ in rows], [t for _, t in rows]
            ratio = statistics.median(ttft) / base
            verdict = "" if name == "no webhooks" else ("  OK" if ratio <= 1.02 else "  above 1.02")
            print(
                f"   {name:<26} {statistics.median(ttft) * 1000:7.1f}ms {percentile(ttft, 99) * 1000:6.1f}ms "
                f"{statistics.median(total) * 1000:8.1f}ms {ratio:7.3f}{verdict}"
            )
        print(f"   the 500 receiver got {len(failing.received)} attempts meanwhile (retried with backoff)")
        waits = [
            request.at - datetime.fromisoformat(request.json["timestamp"].replace("Z", "+00:00")).timestamp()
            for request in fast.of("session.created")
        ]
        print(f"\n2. from cause to delivery (session.created, {len(waits)} events, worker polling every 0.5 s):")
        print(f"   p50 {percentile(waits, 50) * 1000:.0f} ms   p99 {percentile(waits, 99) * 1000:.0f} ms   max {max(waits) * 1000:.0f} ms")


# --- 3: deliveries per second --------------------------------------------------------------------

FILL_OUTBOX = """
import json, uuid
from django.utils import timezone
from chat.models import WebhookDelivery
url, count = {url!r}, {count}
now = timezone.now()
rows = []
for n in range(count):
    session = uuid.uuid4()
    data = {{"sessionId": str(session), "userId": "u", "chatAppId": "demo"}}
    body = json.dumps({{"event": "session.created", "timestamp": now.isoformat(), "data": data}})
    rows.append(WebhookDelivery(event="session.created", endpoint=url, body=body, session_id=session,
                                created_at=now, retry_from=now, next_attempt_at=now))
WebhookDelivery.objects.bulk_create(rows, batch_size=1000)
"""


def bench_deliveries(env: dict[str, str], args: argparse.Namespace) -> None:
    with WebhookReceiver(default=Answer(delay=0.001)) as fast:
        manage(env, "shell", "-c", FILL_OUTBOX.format(url=fast.url, count=args.deliveries))
        with worker({**env, "CHAT_WEBHOOKS": hooks(fast)}):
            deadline = time.monotonic() + 600
            while len(fast.received) < args.deliveries and time.monotonic() < deadline:
                time.sleep(0.2)
        arrivals = sorted(request.at for request in fast.received)
    span = arrivals[-1] - arrivals[0]
    print(f"\n3. one worker delivering {len(arrivals)} queued events to a 1 ms receiver (CHAT_WEBHOOK_CONCURRENCY 16):")
    print(f"   {len(arrivals) / span:.0f} deliveries/s ({span:.1f} s from the first to the last)")


# --- 4: the session list against /api/chat/user ----------------------------------------------------

FILL_SESSIONS = """
import uuid
from datetime import timedelta
from django.utils import timezone
from chat.models import ChatSession, ChatUser
ChatUser.objects.get_or_create(user_id="list-user", defaults={{"password": "!"}})
now = timezone.now()
ChatSession.objects.bulk_create(
    [ChatSession(user_id="list-user", chat_app_id="demo", agent_id="demo-assistant", title=f"Session {{n}}",
                 create_date=now - timedelta(minutes=n), last_update=now - timedelta(minutes=n)) for n in range({count})],
    batch_size=1000,
)
"""


def wrk(url: str, token: str, connections: int, seconds: float) -> float:
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "-H", f"Authorization: Bearer {token}", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors: {out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def bench_session_list(env: dict[str, str], args: argparse.Namespace) -> None:
    manage(env, "shell", "-c", FILL_SESSIONS.format(count=800))
    token = manage(env, "issue_token", "list-user").strip()
    print("\n4. GET /api/chat/sessions (20 of 800 sessions) against GET /api/chat/user, uvicorn 1 process, wrk:")
    print(f"   {'connections':>11} {'/user req/s':>12} {'/sessions req/s':>16} {'ratio':>6}")
    with asgi_server(env) as server:
        user, sessions = f"{server.url}/api/chat/user", f"{server.url}/api/chat/sessions"
        wrk(user, token, 2, 1)
        wrk(sessions, token, 2, 1)
        for connections in (1, 10, 50):
            rates = {"user": 0.0, "sessions": 0.0}
            for _ in range(2):  # interleaved halves
                rates["user"] += wrk(user, token, connections, args.wrk_seconds / 2)
                rates["sessions"] += wrk(sessions, token, connections, args.wrk_seconds / 2)
            ratio = rates["sessions"] / rates["user"]
            verdict = "  OK" if ratio >= 0.8 else "  below 0.8"
            print(f"   {connections:>11} {rates['user'] / 2:12.0f} {rates['sessions'] / 2:16.0f} {ratio:6.2f}{verdict}")


# --- 5: session search at scale (PostgreSQL) ------------------------------------------------------

POPULATE = [
    """INSERT INTO chat_chatuser (password, last_login, is_superuser, user_id, email, first_name, last_name, user_type, custom_data,
         roles, prefs, is_staff, is_active, create_date, last_update)
       SELECT '!', NULL, false, 'u' || g, '', '', '', CASE WHEN g % 5 = 0 THEN 'internal-user' ELSE 'external-user' END,
              jsonb_build_object('account', 'acct' || (g % 1000)), '[]', '{{}}', false, true, now(), now()
       FROM generate_series(1, 20000) g""",
    """INSERT INTO chat_chatsession (session_id, user_id, chat_app_id, agent_id, title, status, invocation_mode, source, entity_id,
         input_tokens, output_tokens, total_tokens, input_cost, output_cost, total_cost, last_message_id, turn_next, turn_serving,
         turn_started, create_date, last_update)
       SELECT md5('s' || g)::uuid, 'u' || (g % 20000 + 1), 'app' || (g % 25), 'agent', 'Session ' || g,
              CASE WHEN g % 10 = 0 THEN 'active' ELSE 'completed' END, CASE WHEN g % 7 = 0 THEN 'direct-agent-invoke' ELSE 'chat-app' END,
              'user', NULL, (g * 7919) % 5000, (g * 104729) % 2000, (g * 7919) % 5000 + (g * 104729) % 2000,
              0, 0, ((g * 7919) % 5000) * 0.00001, NULL, 0, 0, NULL,
              now() - g * interval '30 seconds', now() - g * interval '30 seconds' + ((g % 120) * interval '1 minute')
       FROM generate_series(1::bigint, {sessions}) g""",
    """INSERT INTO chat_sessioninsight (session_id, model, version, usage, generated_at, last_analyzed_message_id, scoring,
         detail_markdown, goal_achievement, user_satisfaction, interaction_quality, ai_accuracy, ai_helpfulness, ai_communication,
         ai_efficiency, ai_overall, user_sentiment, goal_completion_status, satisfaction_level, requires_followup,
         critical_issues_present, escalation_needed, session_duration_estimate, complexity_level, user_effort_required,
         ai_confidence_level, analysis_status, attempts, error, requested_at, lease_until, finished_at)
       SELECT md5('s' || g)::uuid, 'bench', '1', '{{}}', now(), NULL, '{{}}', 'report',
              (g * 31) % 11, (g * 17) % 11, (g * 13) % 11, (g * 29) % 11, 5, 5, (g * 37) % 11, (g * 41) % 11,
              (ARRAY['positive','neutral','negative'])[g % 3 + 1], (ARRAY['completed','partially_completed','not_completed'])[g % 3 + 1],
              (ARRAY['satisfied','neutral','dissatisfied'])[(g / 3) % 3 + 1], g % 11 = 0, g % 13 = 0, g % 17 = 0,
              (ARRAY['short','medium','long'])[(g / 7) % 3 + 1], (ARRAY['low','medium','high'])[(g / 5) % 3 + 1],
              (ARRAY['low','medium','high'])[(g / 11) % 3 + 1], (ARRAY['low','medium','high'])[(g / 13) % 3 + 1],
              'done', 1, '', now(), NULL, now()
       FROM generate_series(1::bigint, {sessions}) g WHERE g % 10 < 3""",
    """INSERT INTO chat_chatsessionfeedback (feedback_id, session_id, user_id, message_id, reported_by_human, created_by_customer,
         status, severity, type, user_comment, created_on, updated_on)
       SELECT 'f' || g, md5('s' || g)::uuid, CASE WHEN g % 3 = 0 THEN 'ai-feedback-user' ELSE 'u' || (g % 20000 + 1) END, NULL,
              g % 3 <> 0, g % 3 = 1, (ARRAY['open','in_review','resolved','closed'])[(g / 20) % 4 + 1],
              (ARRAY['low','medium','high','critical'])[(g / 40) % 4 + 1],
              (ARRAY['user_thumbs_up','user_thumbs_down','hallucination','system_error','other','user_dissatisfied'])[(g / 60) % 6 + 1],
              '', now() - g * interval '30 seconds', now() - g * interval '30 seconds'
       FROM generate_series(1::bigint, {sessions}) g WHERE g % 20 = 0""",
    """INSERT INTO chat_feedbackcomment (comment_id, feedback_id, position, user_id, comment, created_on, type, status)
       SELECT 'c' || g, 'f' || g, 0, 'op' || (g % 10), 'note', now(),
              (ARRAY['comment','customer_outreach_recommended','customer_outreach_made','technical_action_required',
                     'technical_action_completed'])[(g / 100) % 5 + 1], (ARRAY['open','closed'])[(g / 200) % 2 + 1]
       FROM generate_series(1::bigint, {sessions}) g WHERE g % 100 = 0""",
]

FAMILIES = {
    "no filter (newest first)": {},
    "userId": {"userId": "u4242"},
    "chatAppId + created range": {"chatAppId": "app7", "dateFilter": {"dateType": "created", "startDate": "2026-01-01T00:00:00Z"}},
    "customUserData + userType": {"customUserData": {"account": "acct40"}, "userType": ["internal-user"]},
    "hasInsights": {"insights": {"hasInsights": True}},
    "insight score (goal ≥ 9)": {"insights": {"hasInsights": True, "goalAchievementScore": {"score": 9, "operator": "gte"}}},
    "insight facets": {"insights": {"hasInsights": True, "userSentiment": ["negative"], "complexityLevel": ["high"]}},
    "flagged": {"flagged": True},
    "feedback facets": {"feedbackInStatus": ["open"], "feedbackType": ["hallucination"], "feedbackSeverity": ["high", "critical"]},
    "internal comments": {"feedbackInternalCommentType": ["technical_action_required"], "feedbackInternalCommentStatus": ["open"]},
    "sort totalCost desc": {"sortBy": [{"field": "totalCost", "order": "desc"}]},
    "sort insight score desc": {"insights": {"hasInsights": True}, "sortBy": [{"field": "insightGoalAchievementScore", "order": "desc"}]},
}

EXPLAIN = """
import json
from django.db import connection
from chat.search.serializers import SessionSearchFiltersSerializer
from chat.search.selectors import SessionSearch, search_count_query, search_page_query
for name, filters in json.loads({families!r}).items():
    request = SessionSearchFiltersSerializer(data=filters)
    request.is_valid(raise_exception=True)
    search = SessionSearch.from_request(dict(request.validated_data))
    counted = search_count_query(search)
    print("=== " + name)
    print("--- the first page")
    print(search_page_query(search, total=counted.count())[:21].explain(analyze=True))
    print("--- the total")
    sql, params = counted.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN ANALYZE SELECT count(*) FROM (" + sql + ") counted", params)
        print("\\n".join(row[0] for row in cursor.fetchall()))
"""


def bench_search(env: dict[str, str], admin: str, args: argparse.Namespace) -> None:
    if not env["DATABASE_URL"].startswith("postg"):
        print("\n5. session search at scale: skipped (PostgreSQL only: set DATABASE_URL)")
        return
    started = time.monotonic()
    with psycopg.connect(env["DATABASE_URL"].replace("postgres://", "postgresql://"), autocommit=True) as conn:
        for statement in POPULATE:
            conn.execute(statement.format(sessions=args.sessions))
        conn.execute("VACUUM ANALYZE")
    print(f"\n5. session search over {args.sessions:,} sessions (populated in {time.monotonic() - started:.0f} s), through the API:")
    print(f"   {'filter family':<28} {'total':>9} {'p50':>8} {'p95':>8}  plan")
    plans = manage(env, "shell", "-c", EXPLAIN.format(families=json.dumps(FAMILIES)))
    by_family = dict(re.findall(r"=== (.+?)\n(.*?)(?==== |\Z)", plans, re.S))
    with asgi_server(env) as server, httpx.Client(headers={"Authorization": f"Bearer {admin}"}, timeout=60) as client:
        for name, filters in FAMILIES.items():
            body = {"command": "sessionSearch", "search": filters, "size": 20}
            for _ in range(3):
                response = client.post(f"{server.url}/api/chat-admin/sessions/search", json=body)
                response.raise_for_status()
            latencies = []
            for _ in range(args.search_repeats):
                begin = time.perf_counter()
                client.post(f"{server.url}/api/chat-admin/sessions/search", json=body).raise_for_status()
                latencies.append(time.perf_counter() - begin)
            plan = by_family.get(name, "")
            scans = sorted(set(re.findall(r"Seq Scan on (\w+)", plan)))
            p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
            verdict = "OK" if p95 < 0.05 else "above 50 ms"
            print(
                f"   {name:<28} {response.json()['total']:>9,} {p50 * 1000:6.1f}ms {p95 * 1000:6.1f}ms"
                f"  {verdict}; {'sequential scan of ' + ', '.join(scans) if scans else 'index scans only'}"
            )
    if args.plans:
        print(plans)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--deliveries", type=int, default=3000)
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--search-repeats", type=int, default=30)
    parser.add_argument("--wrk-seconds", type=float, default=6.0)
    parser.add_argument("--plans", action="store_true", help="print every query plan of part 5")
    parser.add_argument("--only", default="1,3,4,5", help="parts to run (2 comes with 1)")
    args = parser.parse_args()
    parts = set(args.only.split(","))

    model = ["--tokens", "50", "--first-token-delay", "0.3", "--token-delay", "0.02"]
    with bench_platform(model, CHAT_TITLE_MODEL="offline") as (env, token, admin):
        backend = "PostgreSQL" if env["DATABASE_URL"].startswith("postg") else "SQLite"
        tasks = "RQ on Redis" if env.get("REDIS_URL") else "the database"
        cache = "Redis" if env.get("REDIS_URL") else "local memory"
        print(f"events: {backend}, {cache} cache, tasks on {tasks}; model: 300 ms to first token, 50 tokens at 20 ms")
        if "1" in parts:
            bench_turns(env, token, admin, args)
        if "3" in parts:
            bench_deliveries(env, args)
        if "4" in parts:
            bench_session_list(env, args)
        if "5" in parts:
            bench_search(env, admin, args)


if __name__ == "__main__":
    main()
