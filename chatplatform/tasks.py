"""Background work (README.md, "Background worker, webhooks, session insights"): tasks that retry, periodic jobs, and pollers, all run by
`manage.py run_worker` (chatplatform.worker).

Tasks are django-tasks tasks, so the same code runs on the database backend (the default) and on
RQ (with REDIS_URL). Apps declare their work in their own `tasks.py`, which the worker imports:

- `@background()`: a task whose failures are retried with exponential backoff and jitter, up to
  CHAT_TASK_MAX_ATTEMPTS; the last failure stays a failed task result (the backend's record, in
  the Django admin for the database backend) and is logged as an error.
- `@periodic("name")`: a task every worker enqueues once per period of CHAT_PERIODIC_JOBS["name"];
  a unique PeriodicRun row per (job, period) makes exactly one of several workers do it.
- `@poller`: a function the worker calls on every tick (webhook deliveries) that claims its own
  rows under a lease, so work a killed worker held is taken up again once the lease runs out.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django_tasks import task
from django_tasks.base import Task

from chatplatform.models import PeriodicRun, WorkerProcess

logger = logging.getLogger("chatplatform.tasks")

# The worker running this process's tasks ("" outside a worker); PeriodicRun.ran_on shows it.
worker_id = ""
_attempt: contextvars.ContextVar[tuple[int, int]] = contextvars.ContextVar("task_attempt", default=(1, 1))


def backoff_seconds(retry: int, *, base: float, cap: float = 3600.0) -> float:
    """The wait before retry number `retry` (1 = the first): base × 2^(retry-1), at most `cap`, ±25 %
    so that many retries of one outage do not come back in step."""
    return min(base * 2 ** (retry - 1), cap) * random.uniform(0.75, 1.25)


def last_attempt() -> bool:
    """Inside a `@background` task: whether a failure now is final (no retry follows)."""
    attempt, attempts = _attempt.get()
    return attempt >= attempts


class GiveUp(Exception):
    """Raised by a `@background` task whose failure is final whatever attempt it is (its own record
    says so): the task fails without a retry."""


def background(*, retries: bool = True) -> Callable[[Callable[..., Any]], Task]:
    """A django-tasks task whose failures are retried: the next attempt is enqueued with `run_after`
    (backoff_seconds of CHAT_TASK_BACKOFF_SECONDS) before the failure is raised to the backend."""

    def register(function: Callable[..., Any]) -> Task:
        @functools.wraps(function)  # the task's import path stays the function's
        def run(*args: Any, _attempt_number: int = 1, **kwargs: Any) -> Any:
            attempts = settings.CHAT_TASK_MAX_ATTEMPTS if retries else 1
            token = _attempt.set((_attempt_number, attempts))
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                if _attempt_number < attempts and not isinstance(exc, GiveUp):
                    delay = backoff_seconds(_attempt_number, base=settings.CHAT_TASK_BACKOFF_SECONDS)
                    retry = the_task
                    if the_task.get_backend().supports_defer:
                        retry = the_task.using(run_after=timezone.now() + timedelta(seconds=delay))
                    retry.enqueue(*args, _attempt_number=_attempt_number + 1, **kwargs)
                    logger.warning(
                        "task %s attempt %d of %d failed (%s); retrying in %.1f s", the_task.name, _attempt_number, attempts, exc, delay
                    )
                else:
                    logger.error("task %s failed for good after %d attempts: %s", the_task.name, attempts, exc)
                raise
            finally:
                _attempt.reset(token)

        the_task = task()(run)
        return the_task

    return register


_periodic: dict[str, Task] = {}


def periodic(name: str) -> Callable[[Callable[[], Any]], Task]:
    """A job run once per period of CHAT_PERIODIC_JOBS[name] by whichever worker claims the period."""
    if name not in settings.CHAT_PERIODIC_JOBS:
        raise ValueError(f"periodic job {name} has no period in CHAT_PERIODIC_JOBS")

    def register(function: Callable[[], Any]) -> Task:
        @functools.wraps(function)
        def run(run_id: int | None = None) -> Any:
            runs = PeriodicRun.objects.filter(pk=run_id)  # type: ignore[misc]  # used only with an id
            if run_id is not None:
                runs.update(runs=F("runs") + 1, started_at=timezone.now(), ran_on=worker_id)
            try:
                result = function()
            except Exception as exc:
                if run_id is not None:
                    runs.update(finished_at=timezone.now(), outcome="failed", result=f"{type(exc).__name__}: {exc}"[:2000])
                logger.exception("periodic job %s failed", name)
                raise
            if run_id is not None:
                runs.update(finished_at=timezone.now(), outcome="succeeded", result=str(result)[:2000])
            return result

        job = task()(run)
        _periodic[name] = job
        return job

    return register


def schedule_periodic_jobs(*, claimed: dict[str, int], now: float | None = None) -> int:
    """Enqueue each periodic job whose current period nobody claimed yet; the jobs enqueued.
    `claimed` is this worker's memory of the periods it saw, so a period costs one INSERT per worker."""
    now = time.time() if now is None else now
    enqueued = 0
    for name, job in _periodic.items():
        seconds = settings.CHAT_PERIODIC_JOBS[name]
        number = int(now // seconds)
        if claimed.get(name) == number:
            continue
        claimed[name] = number
        try:
            with transaction.atomic():
                run = PeriodicRun.objects.create(
                    job=name,
                    period=number,
                    period_start=datetime.fromtimestamp(number * seconds, tz=UTC),
                    claimed_by=worker_id,
                    claimed_at=timezone.now(),
                )
        except IntegrityError:
            continue  # another worker has this period
        job.enqueue(run_id=run.pk)
        enqueued += 1
    return enqueued


_pollers: list[Callable[[threading.Event], int]] = []


def poller(function: Callable[[threading.Event], int]) -> Callable[[threading.Event], int]:
    """Register `function(stop) -> work done`, called by every worker on every tick; it returns
    early (releasing what it claimed) once `stop` is set."""
    _pollers.append(function)
    return function


def run_pollers(stop: threading.Event) -> int:
    done = 0
    for function in _pollers:
        if stop.is_set():
            break
        try:
            done += function(stop)
        except Exception:
            logger.exception("worker poller %s failed", function.__qualname__)
    return done


# --- Live workers, and tasks a killed worker left running (database backend) ------------------


def stale_after() -> timedelta:
    """How long a worker may go unseen before its running tasks are taken to be abandoned."""
    return timedelta(seconds=max(3 * settings.CHAT_WORKER_HEARTBEAT_SECONDS, 6 * settings.CHAT_WORKER_POLL_SECONDS))


def heartbeat(*, started: datetime) -> None:
    now = timezone.now()
    WorkerProcess.objects.update_or_create(
        worker_id=worker_id,
        defaults={"hostname": socket.gethostname(), "pid": os.getpid(), "backend": settings.CHAT_TASK_BACKEND, "last_seen": now},
        create_defaults={
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "backend": settings.CHAT_TASK_BACKEND,
            "started_at": started,
            "last_seen": now,
        },
    )


def requeue_abandoned_tasks() -> int:
    """Database backend: tasks still RUNNING on a worker that stopped beating (killed, or its host
    died) go back to READY, to run again (at least once). RQ does the same with its own registry."""
    from django_tasks import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    live = set(WorkerProcess.objects.filter(last_seen__gte=timezone.now() - stale_after()).values_list("worker_id", flat=True))
    abandoned = [
        result.pk
        for result in DBTaskResult.objects.filter(status=TaskResultStatus.RUNNING).only("pk", "worker_ids")
        if not result.worker_ids or result.worker_ids[-1] not in live
    ]
    if abandoned:
        DBTaskResult.objects.filter(pk__in=abandoned, status=TaskResultStatus.RUNNING).update(status=TaskResultStatus.READY)
        logger.warning("requeued %d task(s) abandoned by a worker that stopped", len(abandoned))
    WorkerProcess.objects.filter(last_seen__lt=timezone.now() - timedelta(days=1)).delete()
    return len(abandoned)


TASK_RECORDS_KEPT = timedelta(days=7)


@periodic("prune_task_records")
def prune_task_records() -> dict[str, int]:
    """Finished task results and periodic runs older than a week (the database backend keeps one row per task)."""
    cutoff = timezone.now() - TASK_RECORDS_KEPT
    pruned = {"periodicRuns": PeriodicRun.objects.filter(period_start__lt=cutoff).delete()[0]}
    if settings.CHAT_TASK_BACKEND == "database":
        from django_tasks import TaskResultStatus
        from django_tasks_db.models import DBTaskResult

        finished = DBTaskResult.objects.filter(status__in=[TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED], finished_at__lt=cutoff)
        pruned["taskResults"] = finished.delete()[0]
    return pruned
