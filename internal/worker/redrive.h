/* redrive.h - the worker's automatic redrive of transient dead letters.
 *
 * Off unless redrive.queues names work queues. Every redrive.interval one
 * thread looks at each of them: open cases of a class in redrive.classes,
 * older than redrive.min_age, at most redrive.batch, oldest first, are
 * replayed exactly as `dlqctl replay --execute` would (the same policy,
 * claim, confirmed publish, attempt and audit; actor "dlq-worker").
 *
 * It stops by itself:
 *   - a message that died redrive.max_cycles times after being redriven
 *     (its replay count) is left open for a human, with a note on the
 *     case and a line in the digest;
 *   - a case the replay policy refuses is left the same way;
 *   - when more than redrive.trip_ratio of a tick's redriven messages come
 *     back dead within redrive.watch, the queue's circuit opens: no more
 *     redrive there until `dlqctl redrive resume Q --reason TEXT`. The
 *     circuit is kept in the archive, so a restart does not close it.
 * The next tick of a queue waits until the watch of the last one is over,
 * so a queue's ticks are max(interval, watch) apart while it redrives.
 * Of replicas sharing an archive, only the leader redrives (leader.h). */
#ifndef DLQ_REDRIVE_H
#define DLQ_REDRIVE_H

#include <stdbool.h>

#include "alert.h"
#include "config.h"

struct dlq_redriver;

/* NULL when redrive is off (no queues), or on failure with *failed set
 * (logged); `c` and `a` must outlive it. */
struct dlq_redriver *dlq_redrive_start(const struct dlq_config *c,
	    struct dlq_alerter *a, bool *failed);
void	dlq_redrive_stop(struct dlq_redriver *);	/* NULL ok */

#endif
