/* audit.c - the shared audit, in PostgreSQL (cases.h): every replica's
 * control requests in one table, each linked to the records it names;
 * listed by dlqctl audit, expired by archive.audit_retention_days. */
#include "cases.h"

#include <stdio.h>
#include <stdlib.h>

#include "pg.h"
#include "proto.h"

int
dlq_pg_cases_audit_add(struct dlq_pg *a, int64_t now_ms, const char *actor,
    long uid, const char *command, const char *args_json, const char *result)
{
	char now[24], u[24];
	const char *values[6] = { now, actor, u, command, args_json, result };
	PGresult *res;

	snprintf(now, sizeof(now), "%lld", (long long)now_ms);
	snprintf(u, sizeof(u), "%ld", uid);
	res = dlq_pg_query(a, "audit", "WITH u AS (INSERT INTO audit (at,"
	    " actor, uid, command, args, result) VALUES ($1, $2, $3, $4, $5,"
	    " $6) RETURNING id, args::jsonb -> 'ids' AS ids)"
	    " INSERT INTO audit_ids SELECT DISTINCT j.value::numeric::bigint,"
	    " u.id FROM u, " DLQ_PG_AUDIT_IDS("u") " ON CONFLICT DO NOTHING",
	    6, values, NULL, NULL, a->wait_ms);
	PQclear(res);
	return res != NULL ? 0 : -1;
}

int
dlq_pg_cases_audit(struct dlq_pg *a, const struct dlq_audit_filter *f,
    struct dlq_buf *out)
{
	char since[24], before[24], limit[24];
	const char *values[5] = { since, f->actor, f->command, before, limit };
	int rc;

	snprintf(since, sizeof(since), "%lld", (long long)f->since_ms);
	snprintf(before, sizeof(before), "%lld", (long long)f->before_id);
	snprintf(limit, sizeof(limit), "%lld", (long long)f->limit);
	rc = dlq_pg_query_json(a, "SELECT coalesce(json_agg(json_build_object("
	    " 'id', id, 'at', at, 'actor', actor, 'uid', uid, 'command', command,"
	    " 'args', args::json, 'result', result) ORDER BY id DESC), '[]')"
	    " FROM (SELECT * FROM audit WHERE at >= $1::bigint AND ($2::text IS"
	    " NULL OR actor = $2) AND ($3::text IS NULL OR command = $3) AND"
	    " ($4::bigint = 0 OR id < $4) ORDER BY id DESC LIMIT $5) u", 5,
	    values, out);
	return rc == DLQ_NOT_FOUND ? DLQ_OK : rc;
}

int
dlq_pg_cases_audit_expire(struct dlq_pg *a, int64_t cutoff_ms,
    long long *deleted, struct dlq_buf *out)
{
	char cutoff[24];
	const char *values[1] = { cutoff };
	PGresult *res;

	snprintf(cutoff, sizeof(cutoff), "%lld", (long long)cutoff_ms);
	*deleted = 0;
	/* the links by their key, from the ids each expired request
	 * named: audit_ids has no index by audit id (ten links per
	 * record), and a walk of it would be daily and linear */
	res = dlq_pg_query(a, "audit", "WITH gone AS (DELETE FROM audit WHERE"
	    " at < $1::bigint RETURNING id, args::jsonb -> 'ids' AS ids),"
	    " links AS (DELETE FROM audit_ids WHERE (dead_letter_id, audit_id)"
	    " IN (SELECT j.value::numeric::bigint, g.id FROM gone g, "
	    DLQ_PG_AUDIT_IDS("g") ")) SELECT count(*) FROM gone", 1, values,
	    NULL, NULL, a->wait_ms);
	if (res == NULL) {
		dlq_buf_adds(out, dlq_pg_err);
		return -1;
	}
	*deleted = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return 0;
}
