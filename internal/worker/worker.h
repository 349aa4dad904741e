/* worker.h - the daemon's life: assert the topology, run one consumer
 * thread per monitored DLQ, stop cleanly on SIGTERM / SIGINT.
 * Called once from main, before any other thread exists. */
#ifndef DLQ_WORKER_H
#define DLQ_WORKER_H

#include <stdbool.h>

#include "config.h"
#include "proto.h"
#include "topology.h"


/* Runs until a signal, or until its archive file is deleted or replaced
 * (exit 1), or, with assert_only, until the topology has been asserted
 * once. Returns an exit code. */
int	dlq_worker_run(const struct dlq_config *, const struct dlq_topology *,
	    bool assert_only);

#endif
