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

/* Marks what it hands out, so that a decision overdue is said once
 * (and once across replicas: the update takes each row once). */
int
dlq_pg_escalations(struct dlq_pg *a, int64_t now_ms, int64_t owner_sla_ms,
    void (*each)(void *arg, const struct dlq_escalation *), void *arg)
{
	char now[24], sla[24];
	const char *values[2] = { now, sla };
	struct dlq_escalation e;
	PGresult *res;
	int r;

	snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	snprintf(sla, sizeof(sla), "%lld", (long long)owner_sla_ms);
	res = dlq_pg_query(a, "escalations", "UPDATE dead_letters"
	    " SET escalation_noted = CASE status WHEN 'assigned' THEN"
	    "  'decision:' || escalate_at ELSE 'owner' END"
	    " WHERE (status = 'assigned' AND escalate_at < $1::bigint AND"
	    "  escalation_noted IS DISTINCT FROM 'decision:' || escalate_at)"
	    " OR ($2::bigint > 0 AND status = 'open' AND owner IS NULL AND"
	    "  received_at < $1::bigint - $2::bigint AND"
	    "  escalation_noted IS DISTINCT FROM 'owner')"
	    " RETURNING id, queue, owner, decision, escalate_at, received_at",
	    2, values, NULL, NULL, a->wait_ms);
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
		each(arg, &e);
	}
	PQclear(res);
	return 0;
}
