/* triage.c - the operator's changes of records on a PostgreSQL archive
 * (cases.h): assign, drop, reopen. Each request is one transaction on
 * the control thread's own connection; two operators on two replicas
 * changing the same record are ordered by its row lock, the second
 * seeing the first's result (a dropped record is not assigned). The
 * answers are the SQLite archive's, id by id. */
#include "cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "proto.h"
#include "refusal.h"

#define N_ARGS	8

struct change {
	const char	*values[N_ARGS];	/* the last: the id */
	char		 num[N_ARGS][24];
	int		 n;
};

static void
c_int(struct change *c, int i, int64_t v)
{
	snprintf(c->num[i], sizeof(c->num[i]), "%lld", (long long)v);
	c->values[i] = c->num[i];
}

/* Why `id` was not changed: it does not exist (DLQ_NOT_IN_ARCHIVE), or
 * dlq_refusal() of its row. NULL on error. */
static const char *
why_not(struct dlq_pg *pg, int64_t id, bool reopen, char *buf, size_t n)
{
	char v[24];
	const char *values[1] = { v };
	PGresult *res;
	const char *why = DLQ_NOT_IN_ARCHIVE;

	snprintf(v, sizeof(v), "%lld", (long long)id);
	res = dlq_pg_query(pg, "change", "SELECT status, (SELECT outcome"
	    " FROM attempts WHERE dead_letter_id ="
	    " $1 AND outcome IN ('unknown', 'published') ORDER BY id DESC"
	    " LIMIT 1) FROM dead_letters WHERE id = $1", 1, values, NULL, NULL,
	    pg->wait_ms);
	if (res == NULL)
		return NULL;
	if (PQntuples(res) == 1)
		why = dlq_refusal(buf, n, PQgetvalue(res, 0, 0), reopen,
		    PQgetisnull(res, 0, 1) ? NULL : PQgetvalue(res, 0, 1));
	PQclear(res);
	return why;
}

/* Runs `sql` (its last parameter the id) for each id in one
 * transaction, and answers per id, with why for an id not changed. */
static int
change(struct dlq_pg *pg, const char *sql, struct change *c,
    const int64_t *ids, size_t n_ids, bool reopen, struct dlq_buf *out)
{
	size_t i, changed = 0;
	bool missing = false, refused = false;
	char why[128];
	const char *w;
	PGresult *res;
	int ch;

	if (dlq_pg_exec(pg, "change", "BEGIN") == -1)
		return dlq_pg_fail(out);
	dlq_buf_adds(out, "{\"results\":[");
	for (i = 0; i < n_ids; i++) {
		c_int(c, c->n - 1, ids[i]);
		res = dlq_pg_query(pg, "change", sql, c->n, c->values, NULL,
		    NULL, pg->wait_ms);
		if (res == NULL)
			goto fail;
		ch = atoi(PQcmdTuples(res));
		PQclear(res);
		dlq_buf_printf(out, "%s{\"id\":%lld,\"ok\":%s", i ? "," : "",
		    (long long)ids[i], ch ? "true" : "false");
		if (ch == 0) {
			if ((w = why_not(pg, ids[i], reopen, why, sizeof(why)))
			    == NULL)
				goto fail;
			missing |= w != why;	/* not a status */
			refused |= w == why;
			dlq_buf_adds(out, ",\"error\":");
			dlq_buf_json_cstr(out, w);
		} else
			changed++;
		dlq_buf_addc(out, '}');
	}
	if (dlq_pg_commit_tx(pg) == -1)
		goto fail;
	dlq_buf_printf(out, "],\"changed\":%zu}", changed);
	return missing ? DLQ_NOT_FOUND : refused ? DLQ_REFUSED : DLQ_OK;
fail:
	if (pg->conn != NULL)
		(void)dlq_pg_exec(pg, "change", "ROLLBACK");
	return dlq_pg_fail(out);
}

int
dlq_pg_cases_assign(struct dlq_pg *pg, const int64_t *ids, size_t n,
    const char *owner, const char *decision, const char *evidence,
    int64_t escalate_at_ms, const char *actor, int64_t now_ms,
    struct dlq_buf *out)
{
	struct change c = { { owner, decision, evidence }, { "" }, 7 };

	if (escalate_at_ms != 0)
		c_int(&c, 3, escalate_at_ms);
	c.values[4] = actor;
	c_int(&c, 5, now_ms);
	return change(pg, "UPDATE dead_letters SET status = 'assigned',"
	    " owner = $1, decision = $2, evidence = coalesce($3, evidence),"
	    " evidence_at = CASE WHEN $3::text IS NULL THEN evidence_at ELSE"
	    " $6::bigint END, escalate_at = $4::bigint, assigned_by = $5,"
	    " assigned_at = $6::bigint"
	    " WHERE id = $7::bigint AND status IN ('open', 'assigned')", &c,
	    ids, n, false, out);
}

int
dlq_pg_cases_drop(struct dlq_pg *pg, const int64_t *ids, size_t n,
    const char *reason, const char *actor, int64_t now_ms,
    struct dlq_buf *out)
{
	struct change c = { { reason, actor }, { "" }, 4 };

	c_int(&c, 2, now_ms);
	/* 'replaying': a replay whose outcome is unknown, found to have
	 * arrived: closed without sending it again */
	return change(pg, "UPDATE dead_letters SET status = 'discarded',"
	    " resolution = $1, resolved_by = $2, resolved_at = $3::bigint"
	    " WHERE id = $4::bigint AND status IN ('open', 'assigned',"
	    " 'replaying')", &c, ids, n, false, out);
}

int
dlq_pg_cases_reopen(struct dlq_pg *pg, const int64_t *ids, size_t n,
    struct dlq_buf *out)
{
	struct change c = { { NULL }, { "" }, 1 };

	/* back to what it was before the drop: assigned when it has an
	 * owner; the drop and the reopen stay in the audit */
	return change(pg, "UPDATE dead_letters SET status = CASE WHEN owner"
	    " IS NULL THEN 'open' ELSE 'assigned' END, resolution = NULL,"
	    " resolved_by = NULL, resolved_at = NULL"
	    " WHERE id = $1::bigint AND " DLQ_PG_REOPENABLE, &c, ids, n, true,
	    out);
}
