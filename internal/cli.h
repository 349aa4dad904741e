/* cli.h - start-up steps shared by dlq-worker and dlqctl. */
#ifndef DLQ_CLI_H
#define DLQ_CLI_H

#include "config.h"
#include "topology.h"

/* Loads the configuration (`path` NULL: embedded defaults + env) and the
 * topology it names. Problems go to stderr, one per line. Returns 0, or
 * -1 with nothing left to release. */
int	dlq_cli_load(const char *path, struct dlq_config *,
	    struct dlq_topology **);

#define DLQ_VERSION	"0.1.0"

#endif
