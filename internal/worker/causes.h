/* causes.h - the archive's failure signature groups gathered by cause,
 * for `dlqctl groups --by-cause`.
 *
 * A signature includes the source queue, so one failure of a dependency
 * that several queues share (a provider down) is a group in each. A
 * cause is what the digest gathers into one line: the same death reason,
 * error class and normalised error text, whatever the queue. Called by
 * the control thread on its archive handle. */
#ifndef DLQ_CAUSES_H
#define DLQ_CAUSES_H

struct dlq_archive;

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* The signature groups gathered at once, at most: about 120 bytes each
 * while the answer is made, with the room the arrays grow into 16 MiB at
 * most, whatever the archive holds. */
#define DLQ_CAUSES_GROUPS_MAX	100000

/* Appends the largest `limit` causes of the groups received since
 * `since_ms` (wall clock; 0: all time), as dlq_cases_groups() counts
 * them, the largest first:
 * [{"reason", "class", "error", "count", "unresolved", "first_seen",
 *   "last_seen", "sample_id", "sample_message_id", "groups": [{"queue",
 *   "signature", "count", "unresolved"}, ...]}]; the texts and the sample
 * are those of its largest group, the groups the largest first. With
 * `queue` (a work queue or DLQ name), the causes with a group of that
 * queue, each with all its groups; with `class`, the causes of that
 * class (a class is part of a cause). More than `max_groups` groups
 * (of that class, in that window) are not gathered: DLQ_REFUSED,
 * and `out` says so. Returns a DLQ_CASE_* code; on error `out` holds the
 * message. */
int	dlq_causes_list(struct dlq_archive *, const char *queue, const char *class,
	    int64_t since_ms, int64_t limit, size_t max_groups,
	    struct dlq_buf *out);

#endif
