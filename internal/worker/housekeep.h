/* housekeep.h - what the worker's main loop asks of the archive between
 * batches: the figures its threshold alerts watch, and the cases whose
 * decision is overdue. Implemented by the backend (sqlite/housekeep.c). */
#ifndef DLQ_HOUSEKEEP_H
#define DLQ_HOUSEKEEP_H

#include <stdint.h>

struct dlq_archive;

/* Unresolved records (open, assigned, replaying); -1 on error. */
int64_t	dlq_archive_unresolved(struct dlq_archive *);
/* How old the oldest unresolved record is at `now_ms`; 0 with none,
 * -1 on error. */
int64_t	dlq_archive_oldest_unresolved(struct dlq_archive *, int64_t now_ms);

/* A case that needs a decision: an assigned case past its escalate-at
 * (owner set), an open case without an owner past cases.owner_sla. */
struct dlq_escalation {
	int64_t		 id;
	const char	*queue;
	const char	*owner;		/* NULL: no owner yet */
	const char	*decision;	/* NULL: none */
	int64_t		 escalate_at_ms;
	int64_t		 received_ms;
};

/* Notes the escalations not announced yet as announced and calls `each`
 * for each (under the writer mutex). Each is announced once: its key
 * (the escalate-at it missed, or "owner") is stored with the case, so a
 * new escalate-at makes a new escalation. An owner_sla_ms of 0 leaves
 * open cases alone. Open cases are looked at from *swept_ms (received
 * at or after it: 0 at the start of the process) to the SLA's cut, a
 * chunk of DLQ_ESCALATE_CHUNK at a time, and *swept_ms is set to that
 * cut: each check looks only at the cases that crossed the SLA since the
 * last, not at every open case (a walk of a million of them took 0.3-0.4 s
 * of CPU every alert.threshold_check_ms). 0 / -1 */
#define DLQ_ESCALATE_CHUNK	1000
int	dlq_archive_escalations(struct dlq_archive *, int64_t now_ms,
	    int64_t owner_sla_ms, int64_t *swept_ms,
	    void (*each)(void *arg, const struct dlq_escalation *), void *arg);

#endif
