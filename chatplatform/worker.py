"""The background worker process (`manage.py run_worker`, README.md "Background worker, webhooks, session insights").

The main thread runs the configured django-tasks backend's own worker loop: django-tasks-db's
(the database backend) or RQ's SimpleWorker (no fork per job), so a task runs exactly as that
backend runs it. A service thread beside it, on every tick of CHAT_WORKER_POLL_SECONDS, runs the
pollers (webhook deliveries), enqueues the periodic jobs whose period started, and every few
seconds records that the worker lives; on the database backend it also hands tasks of workers
that stopped living back to the queue, and on RQ it moves due retries (`run_after`) into the queue.

Stopping: SIGTERM or Ctrl-C lets the current task finish (the backends' warm shutdown) and the
service thread finish its in-flight deliveries, releasing what it claimed but did not start;
a second signal stops at once. SIGKILL leaves leases to run out and tasks to be requeued.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import threading
import time

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules

from chatplatform import tasks
from chatplatform.models import WorkerProcess

logger = logging.getLogger("chatplatform.worker")


def new_worker_id() -> str:
    return f"{socket.gethostname()[:40]}-{os.getpid()}-{secrets.token_hex(3)}"


class Worker:
    """One worker process; `run()` returns when it is told to stop (or, in `burst` mode, when
    nothing is left to do now)."""

    def __init__(self, *, worker_id: str, burst: bool = False) -> None:
        self.worker_id = worker_id
        self.burst = burst
        self.stop = threading.Event()
        self.started = timezone.now()
        self._claimed_periods: dict[str, int] = {}
        self._last_beat = 0.0

    def run(self) -> None:
        tasks.worker_id = self.worker_id
        autodiscover_modules("tasks")  # each app's tasks.py registers its tasks, periodic jobs and pollers
        tasks.heartbeat(started=self.started)
        logger.info("worker %s started on the %s backend", self.worker_id, settings.CHAT_TASK_BACKEND)
        try:
            if self.burst:
                self._run_burst()
                return
            service = threading.Thread(target=self._serve, name="worker-service", daemon=True)
            service.start()
            try:
                self._run_backend()
            finally:
                self.stop.set()
                service.join(timeout=settings.CHAT_WEBHOOK_TIMEOUT_SECONDS + 10)
        finally:
            WorkerProcess.objects.filter(worker_id=self.worker_id).delete()
            logger.info("worker %s stopped", self.worker_id)

    # --- the service thread ------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while not self.stop.is_set():
                done = self._tick()
                if not done:
                    self.stop.wait(settings.CHAT_WORKER_POLL_SECONDS)
        finally:
            connection.close()

    def _tick(self, *, periodic: bool = True) -> int:
        done = 0
        try:
            done += tasks.run_pollers(self.stop)
            if periodic and not self.stop.is_set():
                done += tasks.schedule_periodic_jobs(claimed=self._claimed_periods)
            if settings.CHAT_TASK_BACKEND == "rq":
                _enqueue_due_rq_jobs()
            if time.monotonic() - self._last_beat >= settings.CHAT_WORKER_HEARTBEAT_SECONDS:
                self._last_beat = time.monotonic()
                tasks.heartbeat(started=self.started)
                if settings.CHAT_TASK_BACKEND == "database":
                    tasks.requeue_abandoned_tasks()
        except Exception:
            logger.exception("worker service tick failed")
        finally:
            close_old_connections()
        return done

    # --- the backend's loop --------------------------------------------------------------------

    def _run_backend(self, *, burst: bool = False) -> int:
        """Run the backend's worker loop (until stopped, or in `burst` until its queue is empty); tasks run."""
        backend = settings.CHAT_TASK_BACKEND
        if backend == "database":
            from django_tasks_db.management.commands.db_worker import Worker as DatabaseWorker

            worker = DatabaseWorker(
                queue_names=["*"],
                interval=settings.CHAT_WORKER_POLL_SECONDS,
                batch=burst,
                backend_name="default",
                startup_delay=False,
                max_tasks=None,
                worker_id=self.worker_id,
                excluded_queue_names=[],
            )
            if not burst:
                worker.configure_signals()
            try:
                worker.run()
            except SystemExit as exc:  # its signal handler's way out of an idle wait
                if exc.code not in (0, None):
                    raise
            return worker._run_tasks
        if backend == "rq":
            import django_rq

            rq_worker = django_rq.get_worker(
                "default", job_class="django_tasks_rq.backend.Job", worker_class="rq.worker.SimpleWorker", name=self.worker_id
            )
            return int(rq_worker.work(burst=burst, logging_level=logging.getLevelName(logging.getLogger().level)))
        # `immediate`: tasks ran where they were enqueued; only the service work is left.
        if not burst:
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, lambda *_: self.stop.set())
            self.stop.wait()
        return 0

    def _run_burst(self) -> None:
        """Everything due now, until a round finds nothing: deliveries, periodic jobs, tasks (and the
        tasks' own events). For scripts and tests; a retry scheduled for later is left for later."""
        for round_number in range(50):
            done = self._tick(periodic=round_number == 0)  # each periodic job at most once per burst
            done += self._run_backend(burst=True)
            if not done:
                return


def _enqueue_due_rq_jobs() -> None:
    """RQ keeps tasks with `run_after` (retries) in a scheduled registry; move the due ones to the
    queue. RQ's own scheduler would fork a process beside the service thread, so it runs here."""
    import django_rq
    from rq.scheduler import RQScheduler

    scheduler = RQScheduler([django_rq.get_queue("default")], connection=django_rq.get_connection("default"))
    scheduler.acquire_locks()
    if scheduler.acquired_locks:
        try:
            scheduler.enqueue_scheduled_jobs()
        finally:
            scheduler.release_locks()
