/* housekeep.c - the worker's threshold figures and overdue decisions, in
 * SQLite (housekeep.h). */
#include "housekeep.h"

#include "sqlite.h"

static int64_t
number(struct dlq_sqlite *archive, const char *sql, int64_t now)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	if (sqlite3_prepare_v2(dlq_sqlite_db(archive), sql, -1, &st, NULL) !=
	    SQLITE_OK)
		return -1;
	if (sqlite3_bind_parameter_count(st) > 0)
		sqlite3_bind_int64(st, 1, now);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_type(st, 0) == SQLITE_NULL ? 0 :
		    sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int64_t
dlq_sqlite_unresolved(struct dlq_sqlite *archive)
{
	return number(archive, "SELECT coalesce(sum(n), 0) FROM tallies WHERE "
	    "status IN ('open', 'assigned', 'replaying')", 0);
}

int64_t
dlq_sqlite_oldest_unresolved(struct dlq_sqlite *archive, int64_t now_ms)
{
	/* a seek of the status index per status */
	return number(archive, "SELECT ?1 - min(t) FROM (SELECT (SELECT"
	    " min(received_at) FROM dead_letters WHERE status = 'open') t"
	    " UNION ALL SELECT (SELECT min(received_at) FROM dead_letters"
	    " WHERE status = 'assigned') UNION ALL SELECT (SELECT"
	    " min(received_at) FROM dead_letters WHERE status = 'replaying'))",
	    now_ms);
}

int
dlq_sqlite_escalations(struct dlq_sqlite *archive, int64_t now_ms,
    int64_t owner_sla_ms,
    void (*each)(void *arg, const struct dlq_escalation *), void *arg)
{
	struct dlq_escalation e;
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(dlq_sqlite_db(archive), "UPDATE dead_letters"
	    " SET escalation_noted = CASE status WHEN 'assigned' THEN"
	    "  'decision:' || escalate_at ELSE 'owner' END"
	    " WHERE (status = 'assigned' AND escalate_at < ?1 AND"
	    "  escalation_noted IS NOT 'decision:' || escalate_at)"
	    " OR (?2 > 0 AND status = 'open' AND owner IS NULL AND"
	    "  received_at < ?1 - ?2 AND escalation_noted IS NOT 'owner')"
	    " RETURNING id, queue, owner, decision, escalate_at,"
	    " received_at", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_int64(st, 2, owner_sla_ms);
	dlq_archive_writer_lock();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		e.id = sqlite3_column_int64(st, 0);
		e.queue = dlq_sqlite_text(st, 1);
		e.owner = (const char *)sqlite3_column_text(st, 2);
		e.decision = (const char *)sqlite3_column_text(st, 3);
		e.escalate_at_ms = sqlite3_column_int64(st, 4);
		e.received_ms = sqlite3_column_int64(st, 5);
		each(arg, &e);
	}
	sqlite3_finalize(st);
	dlq_archive_writer_unlock();
	return rc == SQLITE_DONE ? 0 : -1;
}
