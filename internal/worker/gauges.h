/* gauges.h - what /metrics and /readyz ask of the archive: the metric
 * families computed from the records (unresolved by DLQ and status,
 * oldest age, replays and redrives by outcome, escalations, time to
 * owner), and whether a write could begin now. Implemented by the
 * backend (sqlite/gauges.c). */
#ifndef DLQ_GAUGES_H
#define DLQ_GAUGES_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

struct dlq_archive;

/* Appends the archive's metric families, in Prometheus' text format, to
 * `out`; a family whose query fails is left with its HELP and TYPE. */
void	dlq_archive_metrics(struct dlq_archive *, int64_t now_ms,
	    int64_t owner_sla_ms, struct dlq_buf *out);
/* Whether a write transaction can begin now (taken in a turn among the
 * writers, and rolled back at once). */
bool	dlq_archive_writable(struct dlq_archive *);
/* How long a statement on this handle waits for another's write lock. */
void	dlq_archive_busy_timeout(struct dlq_archive *, int ms);

#endif
