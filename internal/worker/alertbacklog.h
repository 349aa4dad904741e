/* alertbacklog.h - dead letters no delivered digest announced.
 *
 * A digest lives in memory until a webhook takes it: a crash, or a
 * shutdown while the webhook is down, loses it. Its dead letters are in
 * the archive, so at start a webhook target gets back, as pending, the
 * unresolved ones archived since the last digest it received. */
#ifndef DLQ_ALERTBACKLOG_H
#define DLQ_ALERTBACKLOG_H

struct dlq_archive;

#include <stdint.h>

#include "digest.h"

/* Adds to `out` one group per failure signature of the open and
 * assigned records received at or after `since_ms` (wall clock), the
 * largest `max_groups` of them, each with its count, first and last
 * seen and its first record's message id; a group is new when the
 * archive holds no record of its signature from before `since_ms`.
 * Returns the dead letters added, or -1 on error. */
int64_t	dlq_alert_backlog(struct dlq_archive *, int64_t since_ms, int max_groups,
	    struct dlq_digest *out);

#endif
