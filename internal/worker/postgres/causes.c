/* causes.c - failure signature groups gathered by cause (causes.h) on a
 * PostgreSQL archive: its groups, the largest first, read through a
 * cursor a thousand at a time (an archive may hold 100 000) and handed
 * to bycause.c, their error texts masked with the rules of now; the
 * samples read when the answer needs their texts. */
#include "causes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bycause.h"
#include "pg.h"
#include "proto.h"

#define FETCH	"FETCH 1000 FROM dlq_causes"

/* One row per group, the largest first (as SQLite orders them). */
#define CAUSE_ROWS(g) \
	"DECLARE dlq_causes NO SCROLL CURSOR FOR" \
	" SELECT g.signature, d.queue, d.dlq, d.reason, d.class, d.error," \
	" g.n, g.u, CASE WHEN g.fid = g.sid THEN d.received_at ELSE" \
	" (SELECT received_at FROM dead_letters WHERE id = g.fid) END," \
	" e.received_at, g.sid FROM " g \
	" JOIN dead_letters d ON d.id = g.sid" \
	" JOIN dead_letters e ON e.id = g.lid ORDER BY g.n DESC, g.sid"

struct reader {
	struct dlq_pg	*pg;
	PGresult	*res;		/* the last sample */
	struct dlq_buf	 masked;	/* its error, masked */
};

/* The texts of a sample, by id (dlq_bycause_read). */
static bool
read_sample(void *arg, int64_t id, struct dlq_bycause_sample *s)
{
	struct reader *r = arg;
	char v[24];
	const char *values[1] = { v };
	int i;

	PQclear(r->res);
	snprintf(v, sizeof(v), "%lld", (long long)id);
	if ((r->res = dlq_pg_query(r->pg, "causes", "SELECT queue, reason,"
	    " class, error, message_id FROM dead_letters WHERE id = $1", 1,
	    values, NULL, NULL, r->pg->wait_ms)) == NULL)
		return false;
	s->found = PQntuples(r->res) == 1;
	for (i = 0; s->found && i < DLQ_BYCAUSE_TEXTS; i++) {
		s->text[i] = PQgetisnull(r->res, 0, i) ? NULL :
		    PQgetvalue(r->res, 0, i);
		s->len[i] = (size_t)PQgetlength(r->res, 0, i);
	}
	if (s->found && s->text[DLQ_BYCAUSE_ERROR] != NULL) {
		dlq_buf_reset(&r->masked);
		dlq_redact_text(&r->pg->mask, s->text[DLQ_BYCAUSE_ERROR],
		    s->len[DLQ_BYCAUSE_ERROR], 3 * s->len[DLQ_BYCAUSE_ERROR] +
		    16, &r->masked);
		s->text[DLQ_BYCAUSE_ERROR] = r->masked.data ? r->masked.data :
		    "";
		s->len[DLQ_BYCAUSE_ERROR] = r->masked.len;
	}
	return true;
}

/* Adds the groups of one fetch: 1 when there may be more, 0 at the
 * end, -1 out of memory, -2 past max_groups. */
static int
add_rows(struct dlq_pg *pg, PGresult *res, struct dlq_bycause *c,
    const char *class, size_t max_groups, struct dlq_buf *masked)
{
	struct dlq_bycause_group g;
	int r;

	for (r = 0; r < PQntuples(res); r++) {
		g.class = PQgetvalue(res, r, 4);
		if (class != NULL && strcmp(class, g.class) != 0)
			continue;
		if (dlq_bycause_groups(c) == max_groups)
			return -2;
		g.signature = PQgetvalue(res, r, 0);
		g.queue = PQgetvalue(res, r, 1);
		g.dlq = PQgetvalue(res, r, 2);
		g.reason = PQgetvalue(res, r, 3);
		dlq_buf_reset(masked);
		dlq_redact_text(&pg->mask, PQgetvalue(res, r, 5),
		    (size_t)PQgetlength(res, r, 5),
		    3 * (size_t)PQgetlength(res, r, 5) + 16, masked);
		g.error = masked->data ? masked->data : "";
		g.count = strtoll(PQgetvalue(res, r, 6), NULL, 10);
		g.unresolved = strtoll(PQgetvalue(res, r, 7), NULL, 10);
		g.first_seen = strtoll(PQgetvalue(res, r, 8), NULL, 10);
		g.last_seen = strtoll(PQgetvalue(res, r, 9), NULL, 10);
		g.sample_id = strtoll(PQgetvalue(res, r, 10), NULL, 10);
		if (masked->oom || !dlq_bycause_add(c, &g))
			return -1;
	}
	return PQntuples(res) > 0;
}

int
dlq_pg_causes_list(struct dlq_pg *pg, const char *queue, const char *class,
    int64_t since_ms, int64_t limit, size_t max_groups, struct dlq_buf *out)
{
	struct dlq_bycause *c = dlq_bycause_new(queue);
	struct reader r = { pg, NULL, { 0 } };
	char since[24];
	const char *values[1] = { since };
	PGresult *res;
	int more = 1, answer;

	dlq_buf_init(&r.masked);
	snprintf(since, sizeof(since), "%lld", (long long)since_ms);
	if (c == NULL || dlq_pg_exec(pg, "causes", "BEGIN READ ONLY") == -1)
		goto fail;
	if ((res = dlq_pg_query(pg, "causes", since_ms == 0 ?
	    CAUSE_ROWS(DLQ_PG_GROUPS_ALL) :
	    CAUSE_ROWS(DLQ_PG_GROUPS_SINCE("$1::bigint")), since_ms == 0 ? 0 :
	    1, values, NULL, NULL, pg->wait_ms)) == NULL)
		goto fail;
	PQclear(res);
	while (more == 1) {
		if ((res = dlq_pg_query(pg, "causes", FETCH, 0, NULL, NULL,
		    NULL, pg->wait_ms)) == NULL)
			goto fail;
		more = add_rows(pg, res, c, class, max_groups, &r.masked);
		PQclear(res);
	}
	if (more == -2)
		answer = dlq_bycause_too_many(max_groups, since_ms, out);
	else if (more == -1) {
		dlq_buf_reset(out);
		dlq_buf_adds(out, "out of memory");
		answer = DLQ_ERROR;
	} else if ((answer = dlq_bycause_json(c, limit, read_sample, &r, out))
	    == DLQ_ERROR && r.res == NULL) {
		dlq_buf_reset(out);
		dlq_buf_adds(out, dlq_pg_err);
	}
	(void)dlq_pg_exec(pg, "causes", "ROLLBACK");	/* it read only */
	goto out;
fail:
	if (pg->conn != NULL)
		(void)dlq_pg_exec(pg, "causes", "ROLLBACK");
	answer = c == NULL ? DLQ_ERROR : dlq_pg_fail(out);
	if (c == NULL) {
		dlq_buf_reset(out);
		dlq_buf_adds(out, "out of memory");
	}
out:
	PQclear(r.res);
	dlq_buf_release(&r.masked);
	dlq_bycause_free(c);
	return answer;
}
