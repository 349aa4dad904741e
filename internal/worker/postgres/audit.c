/* audit.c - the shared audit, in PostgreSQL (cases.h): every replica's
 * control requests in one table, each linked to the records it names. */
#include "cases.h"

#include <stdio.h>

#include "pg.h"

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
	    " u.id FROM u, jsonb_array_elements(CASE jsonb_typeof(u.ids) WHEN"
	    " 'array' THEN u.ids ELSE '[]' END) j WHERE jsonb_typeof(j.value) ="
	    " 'number' ON CONFLICT DO NOTHING", 6, values, NULL, NULL,
	    a->wait_ms);
	PQclear(res);
	return res != NULL ? 0 : -1;
}
