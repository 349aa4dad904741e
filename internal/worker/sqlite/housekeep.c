/* housekeep.c - the worker's threshold figures and overdue decisions, in
 * SQLite (housekeep.h). */
#include "housekeep.h"

#include "sqlite.h"

#include <time.h>

int64_t
dlq_sqlite_unresolved(struct dlq_sqlite *archive)
{
	return dlq_sqlite_number(archive, "SELECT coalesce(sum(n), 0) FROM"
	    " tallies WHERE status IN ('open', 'assigned', 'replaying')", 0, 0);
}

int64_t
dlq_sqlite_oldest_unresolved(struct dlq_sqlite *archive, int64_t now_ms)
{
	/* a seek of the status index per status */
	return dlq_sqlite_number(archive, "SELECT ?1 - min(t) FROM ("
	    OLDEST("open") " UNION ALL " OLDEST("assigned") " UNION ALL "
	    OLDEST("replaying") ")", now_ms, 0);
}

#define ESCALATED	" RETURNING id, queue, owner, decision, escalate_at," \
			" received_at"

/* Runs the noting statement `st` in the writers' turn and hands out
 * what it noted: their number in *n, the newest received_at in *newest.
 * 0 / -1 */
static int
announce(sqlite3_stmt *st, void (*each)(void *arg,
    const struct dlq_escalation *), void *arg, int *n, int64_t *newest)
{
	struct dlq_escalation e;
	int rc;

	dlq_archive_writer_lock();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		e.id = sqlite3_column_int64(st, 0);
		e.queue = dlq_sqlite_text(st, 1);
		e.owner = (const char *)sqlite3_column_text(st, 2);
		e.decision = (const char *)sqlite3_column_text(st, 3);
		e.escalate_at_ms = sqlite3_column_int64(st, 4);
		e.received_ms = sqlite3_column_int64(st, 5);
		if (e.received_ms > *newest)
			*newest = e.received_ms;
		(*n)++;
		each(arg, &e);
	}
	sqlite3_reset(st);
	dlq_archive_writer_unlock();
	return rc == SQLITE_DONE ? 0 : -1;
}

int
dlq_sqlite_escalations(struct dlq_sqlite *archive, int64_t now_ms,
    int64_t owner_sla_ms, int64_t *swept_ms,
    void (*each)(void *arg, const struct dlq_escalation *), void *arg)
{
	const struct timespec pause = { 0, 2 * 1000 * 1000 };
	sqlite3 *db = dlq_sqlite_db(archive);
	int64_t from = *swept_ms, cut = now_ms - owner_sla_ms, unused = 0;
	sqlite3_stmt *st;
	int n = 0, rc;

	/* assigned cases past their escalate-at: each made by a human */
	if (sqlite3_prepare_v2(db, "UPDATE dead_letters SET escalation_noted"
	    " = 'decision:' || escalate_at WHERE status = 'assigned' AND"
	    " escalate_at < ?1 AND escalation_noted IS NOT 'decision:' ||"
	    " escalate_at" ESCALATED, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, now_ms);
	rc = announce(st, each, arg, &n, &unused);
	sqlite3_finalize(st);
	if (rc == -1 || owner_sla_ms <= 0)
		return rc;
	/* open ones past the SLA since the last sweep, oldest first, a
	 * chunk per turn of the writers (a flood can make a million) */
	n = 0;
	if (sqlite3_prepare_v2(db, "UPDATE dead_letters SET escalation_noted"
	    " = 'owner' WHERE id IN (SELECT id FROM dead_letters WHERE status"
	    " = 'open' AND owner IS NULL AND received_at >= ?1 AND"
	    " received_at < ?2 AND escalation_noted IS NOT 'owner' ORDER BY"
	    " received_at LIMIT ?3)" ESCALATED, -1, &st, NULL) != SQLITE_OK)
		return -1;
	do {
		if (n == DLQ_ESCALATE_CHUNK)
			nanosleep(&pause, NULL);	/* consumers first */
		sqlite3_bind_int64(st, 1, from);
		sqlite3_bind_int64(st, 2, cut);
		sqlite3_bind_int(st, 3, DLQ_ESCALATE_CHUNK);
		n = 0;
		rc = announce(st, each, arg, &n, &from);
	} while (rc == 0 && n == DLQ_ESCALATE_CHUNK);
	sqlite3_finalize(st);
	if (rc == 0)
		*swept_ms = cut;
	return rc;
}
