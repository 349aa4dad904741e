/* housekeep.c - the worker's threshold figures and overdue decisions, in
 * PostgreSQL (housekeep.h). */
#include "housekeep.h"

#include <stdio.h>
#include <stdlib.h>

#include "pg.h"

int64_t
dlq_pg_unresolved(struct dlq_pg *a)
{
	int64_t v = 0;

	return dlq_pg_number(a, "unresolved", "SELECT count(*) FROM"
	    " dead_letters WHERE status IN ('open', 'assigned', 'replaying')",
	    0, NULL, &v) == -1 ? -1 : v;
}

int64_t
dlq_pg_oldest_unresolved(struct dlq_pg *a, int64_t now_ms)
{
	char now[24];
	const char *values[1] = { now };
	int64_t v = 0;

	snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	return dlq_pg_number(a, "unresolved", "SELECT $1::bigint -"
	    " min(received_at) FROM dead_letters WHERE status IN ('open',"
	    " 'assigned', 'replaying')", 1, values, &v) == -1 ? -1 : v;
}

#define ESCALATED	" RETURNING id, queue, owner, decision, escalate_at," \
			" received_at"

/* Runs the noting statement `sql` with `values` and hands out what it
 * noted: their number in *n, the newest received_at in *newest. 0 / -1 */
static int
announce(struct dlq_pg *a, const char *sql, int nv, const char *const *values,
    void (*each)(void *arg, const struct dlq_escalation *), void *arg,
    int *n, int64_t *newest)
{
	struct dlq_escalation e;
	PGresult *res;
	int r;

	res = dlq_pg_query(a, "escalations", sql, nv, values, NULL, NULL,
	    a->wait_ms);
	if (res == NULL)
		return -1;
	for (r = 0; r < PQntuples(res); r++) {
		e.id = strtoll(PQgetvalue(res, r, 0), NULL, 10);
		e.queue = PQgetvalue(res, r, 1);
		e.owner = PQgetisnull(res, r, 2) ? NULL : PQgetvalue(res, r, 2);
		e.decision = PQgetisnull(res, r, 3) ? NULL :
		    PQgetvalue(res, r, 3);
		e.escalate_at_ms = strtoll(PQgetvalue(res, r, 4), NULL, 10);
		e.received_ms = strtoll(PQgetvalue(res, r, 5), NULL, 10);
		if (e.received_ms > *newest)
			*newest = e.received_ms;
		each(arg, &e);
	}
	*n = PQntuples(res);
	PQclear(res);
	return 0;
}

/* Marks what it hands out, so that a decision overdue is said once
 * (and once across replicas: the update takes each row once; a chunk
 * skips the rows another replica's chunk holds). */
int
dlq_pg_escalations(struct dlq_pg *a, int64_t now_ms, int64_t owner_sla_ms,
    int64_t *swept_ms, void (*each)(void *arg,
    const struct dlq_escalation *), void *arg)
{
	char now[24], from[24], cut[24], chunk[16];
	const char *values[3] = { from, cut, chunk };
	int64_t newest = *swept_ms, unused = 0;
	int n = 0;

	snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	/* assigned cases past their escalate-at: each made by a human */
	if (announce(a, "UPDATE dead_letters SET escalation_noted ="
	    " 'decision:' || escalate_at WHERE status = 'assigned' AND"
	    " escalate_at < $1::bigint AND escalation_noted IS DISTINCT FROM"
	    " 'decision:' || escalate_at" ESCALATED, 1,
	    (const char *const[]){ now }, each, arg, &n, &unused) == -1)
		return -1;
	if (owner_sla_ms <= 0)
		return 0;
	/* open ones past the SLA since the last sweep, a chunk at a time */
	snprintf(cut, sizeof(cut), "%lld", (long long)(now_ms - owner_sla_ms));
	snprintf(chunk, sizeof(chunk), "%d", DLQ_ESCALATE_CHUNK);
	do {
		snprintf(from, sizeof(from), "%lld", (long long)newest);
		if (announce(a, "UPDATE dead_letters SET escalation_noted ="
		    " 'owner' WHERE id IN (SELECT id FROM dead_letters WHERE"
		    " status = 'open' AND owner IS NULL AND received_at >="
		    " $1::bigint AND received_at < $2::bigint AND"
		    " escalation_noted IS DISTINCT FROM 'owner' ORDER BY"
		    " received_at LIMIT $3::int FOR UPDATE SKIP LOCKED)"
		    ESCALATED, 3, values, each, arg, &n, &newest) == -1)
			return -1;
	} while (n == DLQ_ESCALATE_CHUNK);
	*swept_ms = now_ms - owner_sla_ms;
	return 0;
}
