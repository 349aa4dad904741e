/* http.h - /healthz, /readyz and /metrics on http.listen (libmicrohttpd).
 *
 *   /healthz  200 while the process runs
 *   /readyz   200 when the topology was asserted, every consumer is
 *             connected and the archive is writable; else 503 with a JSON
 *             body naming what is not ready
 *   /metrics  Prometheus text format: the in-memory counters (metrics.c)
 *             and what the archive holds (unresolved, ages, replays)
 * One libmicrohttpd thread with its own archive handle. */
#ifndef DLQ_HTTP_H
#define DLQ_HTTP_H

#include "config.h"

struct dlq_http;

/* NULL with *failed false when http.listen is off; NULL with *failed true
 * on error (logged). */
struct dlq_http *dlq_http_start(const struct dlq_config *, bool *failed);
void	dlq_http_stop(struct dlq_http *);	/* NULL ok */

#endif
