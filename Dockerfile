# Dockerfile - dlq-worker and dlqctl on Debian 12.
# Build stage: the -dev packages and the compiler; runtime stage: only the
# shared libraries, a non-root user, a health check on /readyz.

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc make pkg-config libc6-dev librabbitmq-dev libcurl4-openssl-dev \
      libcjson-dev libconfig-dev libsqlite3-dev libpq-dev libssl-dev libmicrohttpd-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY cmd cmd
COPY internal internal
COPY topology topology
RUN make -j"$(nproc)" all

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      librabbitmq4 libcurl4 libcjson1 libconfig9 libsqlite3-0 libpq5 libssl3 \
      libmicrohttpd12 ca-certificates curl sqlite3 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /var/lib/dlq-monitor --shell /usr/sbin/nologin dlq \
 && install -d -o dlq -g dlq -m 0750 /var/lib/dlq-monitor \
 && install -d -o dlq -g dlq -m 0755 /run/dlq-monitor
COPY --from=build /src/build/dlq-worker /src/build/dlqctl /usr/local/bin/
COPY scripts/archive-repair.sh /usr/local/bin/dlq-archive-repair
COPY config/dlq-worker.conf /etc/dlq-monitor/dlq-worker.conf
COPY topology/line.conf /etc/dlq-monitor/topology/line.conf
USER dlq
ENV DLQ_ARCHIVE_PATH=/var/lib/dlq-monitor/archive.db \
    DLQ_TOPOLOGY_FILE=/etc/dlq-monitor/topology/line.conf \
    DLQ_CONTROL_SOCKET=/run/dlq-monitor/control.sock \
    DLQ_HTTP_LISTEN=0.0.0.0:9464
EXPOSE 9464
VOLUME ["/var/lib/dlq-monitor"]
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD curl -fsS http://127.0.0.1:9464/readyz || exit 1
ENTRYPOINT ["/usr/local/bin/dlq-worker"]
CMD ["-c", "/etc/dlq-monitor/dlq-worker.conf"]
