/* retention.c - archive.retention_days on a PostgreSQL archive
 * (cases.h): the payloads and headers of resolved records older than the
 * cut-off go, the records stay. As in SQLite, DLQ_PURGE_CHUNK ids at a
 * time, each its own transaction, so that a long purge holds no lock
 * for long. Every replica runs it daily; a second run over the same
 * records finds nothing left to purge (purged_at is set once). */
#include "cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "proto.h"

#define PURGEABLE	" status IN ('replayed', 'discarded') AND"	\
	" received_at < $1::bigint AND purged_at IS NULL"

int
dlq_pg_cases_purgeable(struct dlq_pg *pg, int64_t cutoff_ms,
    struct dlq_buf *out)
{
	char cutoff[24];
	const char *values[1] = { cutoff };
	int64_t n = 0;

	snprintf(cutoff, sizeof(cutoff), "%lld", (long long)cutoff_ms);
	if (dlq_pg_number(pg, "purge", "SELECT count(*) FROM dead_letters"
	    " WHERE" PURGEABLE, 1, values, &n) == -1)
		return dlq_pg_fail(out);
	dlq_buf_printf(out, "{\"purgeable\":%lld,\"before_ms\":%lld}",
	    (long long)n, (long long)cutoff_ms);
	return DLQ_OK;
}

int
dlq_pg_cases_purge(struct dlq_pg *pg, int64_t cutoff_ms, int64_t now_ms,
    dlq_purge_go_on go_on, void *arg, struct dlq_buf *out)
{
	char v[4][24];
	const char *values[4] = { v[0], v[1], v[2], v[3] };
	PGresult *res;
	int64_t lo, hi, from;
	long long purged = 0;

	snprintf(v[0], sizeof(v[0]), "%lld", (long long)cutoff_ms);
	snprintf(v[1], sizeof(v[1]), "%lld", (long long)now_ms);
	res = dlq_pg_query(pg, "purge", "SELECT min(id), max(id) FROM"
	    " dead_letters WHERE" PURGEABLE, 1, values, NULL, NULL,
	    pg->wait_ms);
	if (res == NULL)
		return dlq_pg_fail(out);
	if (PQgetisnull(res, 0, 0)) {
		lo = 1;
		hi = 0;		/* nothing to purge */
	} else {
		lo = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
		hi = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	}
	PQclear(res);
	for (from = lo; from <= hi; from += DLQ_PURGE_CHUNK) {
		snprintf(v[2], sizeof(v[2]), "%lld", (long long)from);
		snprintf(v[3], sizeof(v[3]), "%lld", (long long)(from +
		    DLQ_PURGE_CHUNK - 1));
		res = dlq_pg_query(pg, "purge", "UPDATE dead_letters SET"
		    " payload = NULL, headers_json = NULL, headers_amqp = NULL,"
		    " purged_at = $2::bigint WHERE id BETWEEN $3::bigint AND"
		    " $4::bigint AND" PURGEABLE, 4, values, NULL, NULL,
		    pg->wait_ms);
		if (res == NULL)
			return dlq_pg_fail(out);
		purged += atoll(PQcmdTuples(res));
		PQclear(res);
		if (from + DLQ_PURGE_CHUNK > hi)
			break;
		if (go_on != NULL && !go_on(purged, (int)((from +
		    DLQ_PURGE_CHUNK - lo) * 100 / (hi - lo + 1)), arg)) {
			dlq_buf_printf(out, "{\"purged\":%lld,\"before_ms\":"
			    "%lld,\"interrupted\":true}", purged,
			    (long long)cutoff_ms);
			return DLQ_OK;
		}
	}
	dlq_buf_printf(out, "{\"purged\":%lld,\"before_ms\":%lld}", purged,
	    (long long)cutoff_ms);
	return DLQ_OK;
}
