/* worker.h - the daemon's life: assert the topology, run one consumer
 * thread per monitored DLQ, stop cleanly on SIGTERM / SIGINT.
 * Called once from main, before any other thread exists. */
#ifndef DLQ_WORKER_H
#define DLQ_WORKER_H

#include <stdbool.h>

#include "config.h"
#include "topology.h"

/* Exit codes of dlq-worker (and dlqctl). */
enum {
	DLQ_EXIT_OK = 0,
	DLQ_EXIT_ERROR = 1,
	DLQ_EXIT_USAGE = 2,
	DLQ_EXIT_CONFLICT = 3,	/* done, not all as asked: topology
				 * conflicts, replay refusals, canary,
				 * records assign / drop may not change */
	DLQ_EXIT_PERMISSION = 4,
};

/* Runs until a signal, or until its archive file is deleted or replaced
 * (exit 1), or, with assert_only, until the topology has been asserted
 * once. Returns an exit code. */
int	dlq_worker_run(const struct dlq_config *, const struct dlq_topology *,
	    bool assert_only);

#endif
