/* inject.h - demo traffic: make messages die through the broker's real
 * dead-lettering path, so a new user sees dead letters, logs, a digest
 * and archive records within a minute. Not for production queues: it
 * consumes the work queue it injects into. */
#ifndef DLQ_INJECT_H
#define DLQ_INJECT_H

#include <stdio.h>

#include "config.h"
#include "topology.h"

/* Publishes `count` messages to work queue `queue` (through the work
 * exchange), fails each `retries` times through the queue's retry queue
 * (x-retry-count + 1, as an application would) and then rejects it with
 * requeue=false. Progress to `out`. Returns 0, or -1 with the reason
 * printed to stderr. */
int	dlq_inject(const struct dlq_config *, const struct dlq_topology *,
	    const char *queue, int count, const char *error, int retries,
	    FILE *out);

#endif
