/* alert.h - the alert thread: one digest per cooldown window per target.
 *
 * Consumer threads hand their batches of dead letters to
 * dlq_alert_note_batch(), which only takes a mutex and merges them into
 * the pending groups of each target: it never waits on HTTP, so
 * heartbeats keep flowing. The alert thread sends (or, without a webhook,
 * logs) one digest when the cooldown has passed since the last one; the
 * first dead letter after a quiet period goes out at once. A failed POST
 * keeps its digest and retries with backoff while new dead letters merge
 * into it: counts are merged, never dropped. When a webhook target's
 * digest went out is kept in the archive: after a restart the cooldown
 * goes on from there. On an archive that replicas share, the pending
 * groups live in the archive and only the leader sends (alert.c). */
#ifndef DLQ_ALERT_H
#define DLQ_ALERT_H

#include <stdint.h>
#include <stdio.h>

#include "archive.h"
#include "config.h"
#include "digest.h"

struct dlq_alerter;

/* Starts the alert thread; `c` must outlive it, and `memory` (a handle
 * of its own, used by the alert thread only; NULL: nothing is kept
 * across restarts) until dlq_alert_stop(). NULL on failure (logged).
 * curl_global_init() must have been called. */
struct dlq_alerter *dlq_alert_start(const struct dlq_config *c,
	    struct dlq_archive *memory);

/* A batch of dead letters grouped by the caller (one lock per batch);
 * any thread. Marks the batch's new groups. */
void	dlq_alert_note_batch(struct dlq_alerter *, struct dlq_digest *batch);

/* In the transaction that archives `batch`, before its commit: on a
 * shared archive its groups are staged there for the leader's next
 * digest (replicas.h); nothing otherwise. 0 / -1 (the batch fails). */
int	dlq_alert_stage_batch(struct dlq_alerter *, struct dlq_archive *,
	    const struct dlq_digest *batch);

/* A notice about `subject` (NULL: none) for the next digest's section
 * of that kind (archive, thresholds, escalations, redrive); any thread. */
void	dlq_alert_notice(struct dlq_alerter *, enum dlq_notice_kind,
	    const char *subject, const char *text);

/* Sends what is pending once, within `budget_ms`, or logs it as an unsent
 * `alert_digest`; then stops the thread and frees. NULL ok. */
void	dlq_alert_stop(struct dlq_alerter *, int64_t budget_ms);

#endif
