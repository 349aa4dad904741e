/* monitor.h - one consumer thread per monitored DLQ.
 *
 * Each thread owns its AMQP connection (rabbitmq-c handles are never
 * shared), consumes its DLQ with manual acks and a prefetch, logs every
 * dead letter as one `dead_letter` line and acks it. Always acks: a payload
 * that cannot be read is logged with what could be read, never requeued,
 * so no redelivery loop can form. On any connection error it logs
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

/* Starts the thread for `q`; every dead letter is also noted with
 * `alerter` (NULL: none). `c`, `q`, `stop` and `alerter` must outlive the
 * monitor. NULL when the thread cannot be created (logged). */
struct dlq_monitor *dlq_monitor_start(const struct dlq_config *c,
	    const struct dlq_queue *q, const atomic_bool *stop,
	    struct dlq_alerter *alerter);

/* Waits for the thread (it ends soon after *stop is set: the message in
 * hand is finished and acked first) and frees it. NULL ok. */
void	dlq_monitor_join(struct dlq_monitor *);

/* Counters for health and tests; any thread. */
bool	dlq_monitor_connected(const struct dlq_monitor *);
uint64_t dlq_monitor_acked(const struct dlq_monitor *);

#endif
