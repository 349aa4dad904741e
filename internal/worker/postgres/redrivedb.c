/* redrivedb.c - the automatic redrive's queries on a PostgreSQL archive
 * (redrivedb.h), and its status and resume for dlqctl (cases.h). Only
 * the leader redrives (leader.h); its circuits are in the archive, so a
 * new leader finds a queue's circuit as the last one left it. */
#include "redrivedb.h"

#include <stdio.h>
#include <stdlib.h>

#include "cases.h"
#include "pg.h"
#include "proto.h"

/* The classes of redrive.classes (a JSON array of strings). */
#define IN_CLASSES(p)	" class IN (SELECT json_array_elements_text(" p "::json))"

bool
dlq_pg_redrive_circuit_open(struct dlq_pg *a, const char *queue)
{
	const char *values[1] = { queue };
	int64_t n = 1;	/* unknown: do not redrive */

	if (dlq_pg_number(a, "redrive", "SELECT count(*) FROM"
	    " redrive_circuits WHERE queue = $1 AND resumed_at IS NULL", 1,
	    values, &n) == -1)
		return true;
	return n > 0;
}

int64_t
dlq_pg_redrive_returned(struct dlq_pg *a, const char *queue,
    int64_t since_ms, int64_t until_ms)
{
	char since[24], until[24];
	const char *values[3] = { queue, since, until };
	int64_t n = 0;

	snprintf(since, sizeof(since), "%lld", (long long)since_ms);
	snprintf(until, sizeof(until), "%lld", (long long)until_ms);
	if (dlq_pg_number(a, "redrive", "SELECT count(DISTINCT"
	    " a.dead_letter_id) FROM attempts a JOIN dead_letters o ON o.id ="
	    " a.dead_letter_id JOIN dead_letters d ON d.replay_of ="
	    " a.dead_letter_id WHERE a.actor = '" DLQ_REDRIVE_ACTOR "' AND"
	    " a.outcome = 'published' AND o.queue = $1 AND a.started_at >="
	    " $2::bigint AND d.received_at >= a.started_at AND d.received_at"
	    " <= $3::bigint", 3, values, &n) == -1)
		return 0;
	return n;
}

void
dlq_pg_redrive_trip(struct dlq_pg *a, const char *queue, int64_t now_ms,
    int64_t redriven, int64_t returned)
{
	char v[3][24];
	const char *values[4] = { queue, v[0], v[1], v[2] };

	snprintf(v[0], sizeof(v[0]), "%lld", (long long)now_ms);
	snprintf(v[1], sizeof(v[1]), "%lld", (long long)redriven);
	snprintf(v[2], sizeof(v[2]), "%lld", (long long)returned);
	PQclear(dlq_pg_query(a, "redrive", "INSERT INTO redrive_circuits"
	    " (queue, tripped_at, redriven, returned) VALUES ($1, $2, $3, $4)",
	    4, values, NULL, NULL, a->wait_ms));
}

/* `res` answers an UPDATE ... RETURNING id, message_id, note. */
static void
leave(PGresult *res, dlq_redrive_left_fn each, void *arg)
{
	int r;

	for (r = 0; res != NULL && r < PQntuples(res); r++)
		each(arg, strtoll(PQgetvalue(res, r, 0), NULL, 10),
		    PQgetisnull(res, r, 1) ? NULL : PQgetvalue(res, r, 1),
		    PQgetvalue(res, r, 2));
	PQclear(res);
}

void
dlq_pg_redrive_give_up(struct dlq_pg *a, const char *queue, int64_t now_ms,
    int64_t max_cycles, const char *classes_json, dlq_redrive_left_fn each,
    void *arg)
{
	char now[24], max[24];
	const char *values[4] = { now, queue, max, classes_json };

	snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	snprintf(max, sizeof(max), "%lld", (long long)max_cycles);
	leave(dlq_pg_query(a, "redrive", "UPDATE dead_letters SET"
	    " redrive_stopped_at = $1, redrive_note = 'redrive gave up after '"
	    " || replay_count || ' dead cycles (redrive.max_cycles ' || $3 ||"
	    " ')' WHERE queue = $2 AND status = 'open' AND replay_count >="
	    " $3::bigint AND redrive_stopped_at IS NULL AND" IN_CLASSES("$4")
	    " RETURNING id, message_id, redrive_note", 4, values, NULL, NULL,
	    a->wait_ms), each, arg);
}

void
dlq_pg_redrive_leave(struct dlq_pg *a, int64_t id, int64_t now_ms,
    const char *note, dlq_redrive_left_fn each, void *arg)
{
	char now[24], v[24];
	const char *values[3] = { now, note, v };

	snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	snprintf(v, sizeof(v), "%lld", (long long)id);
	leave(dlq_pg_query(a, "redrive", "UPDATE dead_letters SET"
	    " redrive_stopped_at = $1, redrive_note = $2 WHERE id = $3"
	    " RETURNING id, message_id, redrive_note", 3, values, NULL, NULL,
	    a->wait_ms), each, arg);
}

int
dlq_pg_redrive_candidates(struct dlq_pg *a, const char *queue,
    int64_t born_before_ms, int64_t max_cycles, const char *classes_json,
    int64_t limit, void (*each)(void *arg, int64_t id), void *arg)
{
	char v[3][24];
	const char *values[5] = { queue, v[0], v[1], classes_json, v[2] };
	PGresult *res;
	int r;

	snprintf(v[0], sizeof(v[0]), "%lld", (long long)born_before_ms);
	snprintf(v[1], sizeof(v[1]), "%lld", (long long)max_cycles);
	snprintf(v[2], sizeof(v[2]), "%lld", (long long)limit);
	if ((res = dlq_pg_query(a, "redrive", "SELECT id FROM dead_letters"
	    " WHERE queue = $1 AND status = 'open' AND received_at <="
	    " $2::bigint AND replay_count < $3::bigint AND redrive_stopped_at IS"
	    " NULL AND purged_at IS NULL AND" IN_CLASSES("$4") " ORDER BY id"
	    " LIMIT $5::bigint", 5, values, NULL, NULL, a->wait_ms)) == NULL)
		return -1;
	for (r = 0; r < PQntuples(res); r++)
		each(arg, strtoll(PQgetvalue(res, r, 0), NULL, 10));
	PQclear(res);
	return 0;
}

int
dlq_pg_cases_redrive_status(struct dlq_pg *a, const char *queues_json,
    struct dlq_buf *out)
{
	const char *values[1] = { queues_json };
	int rc;

	rc = dlq_pg_query_json(a, "SELECT coalesce(json_agg(json_build_object("
	    " 'queue', q.value,"
	    " 'circuit', CASE WHEN c.id IS NULL THEN 'closed' ELSE 'open' END,"
	    " 'tripped_at', c.tripped_at, 'redriven', c.redriven,"
	    " 'returned', c.returned,"
	    " 'left_for_humans', (SELECT count(*) FROM dead_letters d WHERE"
	    "   d.queue = q.value AND d.redrive_stopped_at IS NOT NULL AND"
	    "   d.status IN ('open', 'assigned')),"
	    " 'published', (SELECT count(*) FROM attempts t JOIN dead_letters d"
	    "   ON d.id = t.dead_letter_id WHERE d.queue = q.value AND"
	    "   t.actor = '" DLQ_REDRIVE_ACTOR "' AND t.outcome = 'published'))"
	    " ORDER BY q.n), '[]')"
	    " FROM json_array_elements_text($1::json) WITH ORDINALITY q(value, n)"
	    " LEFT JOIN redrive_circuits c ON c.queue = q.value AND"
	    " c.resumed_at IS NULL", 1, values, out);
	return rc == DLQ_NOT_FOUND ? DLQ_OK : rc;
}

int
dlq_pg_cases_redrive_resume(struct dlq_pg *a, const char *queue,
    const char *reason, const char *actor, int64_t now_ms,
    struct dlq_buf *out)
{
	char now[24];
	const char *values[4] = { queue, reason, actor, now };
	PGresult *res;
	int changed;

	snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	if ((res = dlq_pg_query(a, "redrive", "UPDATE redrive_circuits SET"
	    " resumed_at = $4, resumed_by = $3, resume_reason = $2 WHERE"
	    " queue = $1 AND resumed_at IS NULL", 4, values, NULL, NULL,
	    a->wait_ms)) == NULL)
		return dlq_pg_fail(out);
	changed = atoi(PQcmdTuples(res));
	PQclear(res);
	dlq_buf_printf(out, "{\"resumed\":%d}", changed);
	return changed > 0 ? DLQ_OK : DLQ_NOT_FOUND;
}
