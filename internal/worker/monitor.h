/* monitor.h - one consumer thread per monitored DLQ.
 *
 * Each thread owns its AMQP connection and archive handle (rabbitmq-c and
 * SQLite handles are never shared), consumes its DLQ with manual acks and
 * a prefetch, archives every dead letter, logs it as one `dead_letter`
 * line and acks it after the commit. Always acks: a payload that cannot be
 * read is recorded with what could be read, never requeued, so no
 * redelivery loop can form. On any connection error it logs
 * `consumer_reconnecting`, backs off with jitter and starts again. */
#ifndef DLQ_MONITOR_H
#define DLQ_MONITOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "topology.h"

struct dlq_monitor;

struct dlq_alerter;
struct dlq_classifier;

/* What every consumer thread shares; all of it outlives the monitors. */
struct dlq_monitor_env {
	const atomic_bool		*stop;
	struct dlq_alerter		*alerter;	/* NULL: no alerts */
	const struct dlq_classifier	*classifier;
	struct dlq_archive		*archive;	/* shared by the consumers:
							   used between begin and
							   commit only */
};

/* Starts the consumer thread for `q`.
 * `c` and `q` must outlive the monitor. NULL on failure (logged). */
struct dlq_monitor *dlq_monitor_start(const struct dlq_config *c,
	    const struct dlq_queue *q, const struct dlq_monitor_env *env);

/* Waits for the thread (it ends soon after *stop is set: the message in
 * hand is finished and acked first) and frees it. NULL ok. */
void	dlq_monitor_join(struct dlq_monitor *);

/* The consumer's DLQ when it found it missing (NOT_FOUND when it
 * subscribed: deleted, or a broker back without its definitions) since
 * the last call, else NULL. Any thread. */
const char *dlq_monitor_take_missing(struct dlq_monitor *);

/* Counters for health and tests; any thread. */
bool	dlq_monitor_connected(const struct dlq_monitor *);
uint64_t dlq_monitor_acked(const struct dlq_monitor *);

#endif
