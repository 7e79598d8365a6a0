# One image for the ASGI server and the task worker (docs/deploy.md).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
# Byte-code compiled once, here: PYTHONDONTWRITEBYTECODE keeps the processes from writing it, and
# each would otherwise compile the project anew at every start (docs/decisions.md, "Settings and start-up").
RUN python -m compileall -q chatplatform chat agents tools tags directives knowledge
# Hashed, compressed static names at build time; the key only has to exist for this step.
RUN SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput

RUN useradd --system --uid 10001 app && mkdir -p /tmp/prometheus && chown app /tmp/prometheus
USER app

EXPOSE 8000
ENV PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus LOG_FORMAT=json
# The server by default; the worker is the same image with `python manage.py run_worker`.
# PROMETHEUS_MULTIPROC_DIR is emptied first: samples of a previous run must not be added up again.
CMD ["sh", "-c", "rm -rf \"$PROMETHEUS_MULTIPROC_DIR\"/* && exec python -m chatplatform.server chatplatform.asgi:application --host 0.0.0.0 --port 8000 --workers ${WEB_PROCESSES:-2} --lifespan off --ws-per-message-deflate false --proxy-headers --forwarded-allow-ips \"${FORWARDED_ALLOW_IPS:-127.0.0.1}\" --no-access-log"]
