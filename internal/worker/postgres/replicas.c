/* replicas.c - what the replicas of a PostgreSQL archive coordinate
 * through it (replicas.h): the leader's lease and the pending alert
 * groups.
 *
 * The lease is one row of `leases` with an expiry in the server's clock:
 * its holder renews it, another replica takes it only once it has
 * expired. Alert groups are rows of `alert_pending` per webhook target:
 * digest 0 is what waits for the next digest (every replica adds to it
 * in the transaction of the batch it archives, so nothing committed is
 * missing from it and nothing rolled back is in it), digest 1 what the
 * leader is sending. Rows are locked in the order of their hash, by the
 * replicas' inserts and by the leader's take alike, so that two of them
 * never wait for each other in a circle. */
#include "pg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replicas.h"
#include "signature.h"

/* How a group absorbs another of its key (the same as
 * dlq_digest_add_group: counts added, times widened, samples kept up to
 * three, new when either was). */
#define MERGE_GROUP							\
	" ON CONFLICT (target, digest, hash) DO UPDATE SET"		\
	" count = alert_pending.count + excluded.count,"			\
	" first_at = least(alert_pending.first_at, excluded.first_at),"	\
	" last_at = greatest(alert_pending.last_at, excluded.last_at),"	\
	" is_new = alert_pending.is_new OR excluded.is_new,"		\
	" samples = (alert_pending.samples || excluded.samples)[1:3]"

#define GROUP_COLUMNS	"hash, cause, count, first_at, last_at, is_new,"	\
	" queue, reason, class, error, samples"

int
dlq_pg_lease(struct dlq_pg *a, const char *replica, int64_t ttl_ms,
    char *holder, size_t n)
{
	char ttl[24];
	const char *values[2] = { replica, ttl };
	PGresult *res;
	int held;

	snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
	res = dlq_pg_query(a, "lease", "INSERT INTO leases (name, holder,"
	    " since, expires_at) VALUES ('leader', $1, clock_timestamp(),"
	    " clock_timestamp() + $2::bigint * interval '1 millisecond')"
	    " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
	    " expires_at = excluded.expires_at, since = CASE WHEN"
	    " leases.holder = excluded.holder THEN leases.since ELSE"
	    " excluded.since END WHERE leases.holder = excluded.holder OR"
	    " leases.expires_at < clock_timestamp() RETURNING holder", 2,
	    values, NULL, NULL, a->wait_ms);
	if (res == NULL)
		return -1;
	held = PQntuples(res) == 1;
	PQclear(res);
	if (held)
		return 1;
	res = dlq_pg_query(a, "lease", "SELECT holder FROM leases WHERE"
	    " name = 'leader'", 0, NULL, NULL, NULL, a->wait_ms);
	if (res == NULL)
		return -1;
	snprintf(holder, n, "%s", PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) :
	    "?");
	PQclear(res);
	return 0;
}

void
dlq_pg_lease_release(struct dlq_pg *a, const char *replica)
{
	const char *values[1] = { replica };

	PQclear(dlq_pg_query(a, "lease", "DELETE FROM leases WHERE name ="
	    " 'leader' AND holder = $1", 1, values, NULL, NULL, a->wait_ms));
}

/* The batch's groups as a JSON array for json_to_recordset; the dead
 * letters counted over the digest's group limit as one group of hash 0. */
static void
groups_json(const struct dlq_digest *batch, struct dlq_buf *out)
{
	const struct dlq_group *g;
	char sig[DLQ_SIGNATURE_ID_LEN + 1];
	size_t i;
	int k;

	dlq_buf_addc(out, '[');
	for (i = 0; i < batch->n; i++) {
		g = &batch->groups[i];
		dlq_signature_id(g->hash, sig);
		dlq_buf_printf(out, "%s{\"hash\":%" PRId64 ",\"cause\":%" PRId64
		    ",\"count\":%" PRIu64 ",\"first_at\":%" PRId64
		    ",\"last_at\":%" PRId64 ",\"signature\":\"%s\",\"queue\":",
		    i > 0 ? "," : "", (int64_t)g->hash, (int64_t)g->cause,
		    g->count, g->first_ms, g->last_ms, sig);
		dlq_buf_json_cstr(out, g->queue);
		dlq_buf_adds(out, ",\"reason\":");
		dlq_buf_json_cstr(out, g->reason);
		dlq_buf_adds(out, ",\"class\":");
		dlq_buf_json_cstr(out, g->class);
		dlq_buf_adds(out, ",\"error\":");
		dlq_buf_json_cstr(out, g->error);
		dlq_buf_adds(out, ",\"samples\":[");
		for (k = 0; k < g->n_samples; k++) {
			if (k > 0)
				dlq_buf_addc(out, ',');
			dlq_buf_json_cstr(out, g->samples[k]);
		}
		dlq_buf_adds(out, "]}");
	}
	if (batch->other_count > 0)
		dlq_buf_printf(out, "%s{\"hash\":0,\"cause\":0,\"count\":%" PRIu64
		    ",\"first_at\":0,\"last_at\":0,\"signature\":\"\","
		    "\"queue\":\"\",\"reason\":\"\",\"class\":\"\","
		    "\"error\":\"\",\"samples\":[]}", batch->n > 0 ? "," : "",
		    batch->other_count);
	dlq_buf_addc(out, ']');
}

int
dlq_pg_alerts_stage(struct dlq_pg *a, const char *const *targets, size_t n,
    const struct dlq_digest *batch)
{
	struct dlq_buf keys, groups;
	const char *values[2];
	PGresult *res;
	size_t i;

	if (n == 0 || dlq_digest_empty(batch))
		return 0;
	dlq_buf_init(&keys);
	dlq_buf_init(&groups);
	/* the keys are hex digests or "log": quoted, nothing to escape */
	dlq_buf_addc(&keys, '{');
	for (i = 0; i < n; i++)
		dlq_buf_printf(&keys, "%s\"%s\"", i > 0 ? "," : "", targets[i]);
	dlq_buf_addc(&keys, '}');
	groups_json(batch, &groups);
	if (keys.oom || groups.oom) {
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "alert groups: out of "
		    "memory");
		dlq_buf_release(&keys);
		dlq_buf_release(&groups);
		return -1;
	}
	values[0] = keys.data;
	values[1] = groups.data;
	/* new: no record of its signature came before the group's first
	 * (this batch's own records are not before it) */
	res = dlq_pg_query(a, "alert groups", "INSERT INTO alert_pending"
	    " (target, digest, " GROUP_COLUMNS ") SELECT t.target, 0, g.hash,"
	    " g.cause, g.count, g.first_at, g.last_at, g.hash <> 0 AND NOT"
	    " EXISTS (SELECT 1 FROM dead_letters d WHERE d.signature ="
	    " g.signature AND d.received_at < g.first_at), g.queue, g.reason,"
	    " g.class, g.error, g.samples FROM unnest($1::text[]) AS t(target),"
	    " json_to_recordset($2::json) AS g(hash bigint, cause bigint,"
	    " count bigint, first_at bigint, last_at bigint, signature text,"
	    " queue text, reason text, class text, error text, samples text[])"
	    " ORDER BY t.target, g.hash" MERGE_GROUP, 2, values, NULL, NULL,
	    a->wait_ms);
	PQclear(res);
	dlq_buf_release(&keys);
	dlq_buf_release(&groups);
	return res != NULL ? 0 : -1;
}

/* One row of a take's SELECT into the digest. */
static int64_t
add_row(PGresult *res, int r, struct dlq_digest *out)
{
	struct dlq_group g;
	int64_t hash = strtoll(PQgetvalue(res, r, 0), NULL, 10);
	int64_t count = strtoll(PQgetvalue(res, r, 2), NULL, 10);

	if (hash == 0) {
		dlq_digest_add_other(out, 0, (uint64_t)count);
		return count;
	}
	memset(&g, 0, sizeof(g));
	g.hash = (uint64_t)hash;
	g.cause = (uint64_t)strtoll(PQgetvalue(res, r, 1), NULL, 10);
	g.count = (uint64_t)count;
	g.first_ms = strtoll(PQgetvalue(res, r, 3), NULL, 10);
	g.last_ms = strtoll(PQgetvalue(res, r, 4), NULL, 10);
	g.is_new = PQgetvalue(res, r, 5)[0] == 't';
	snprintf(g.queue, sizeof(g.queue), "%s", PQgetvalue(res, r, 6));
	snprintf(g.reason, sizeof(g.reason), "%s", PQgetvalue(res, r, 7));
	snprintf(g.class, sizeof(g.class), "%s", PQgetvalue(res, r, 8));
	dlq_group_set_error(&g, PQgetvalue(res, r, 9));
	/* samples[1..3], NULL past the last */
	for (; g.n_samples < DLQ_DIGEST_SAMPLES &&
	    !PQgetisnull(res, r, 10 + g.n_samples); g.n_samples++)
		snprintf(g.samples[g.n_samples], sizeof(g.samples[0]), "%s",
		    PQgetvalue(res, r, 10 + g.n_samples));
	dlq_digest_add_group(out, &g);
	return count;
}

int64_t
dlq_pg_alerts_take(struct dlq_pg *a, const char *target,
    struct dlq_digest *out)
{
	const char *values[1] = { target };
	PGresult *res;
	int64_t added = 0;
	int r;

	res = dlq_pg_query(a, "alert groups", "WITH moved AS (DELETE FROM"
	    " alert_pending WHERE (target, digest, hash) IN (SELECT target,"
	    " digest, hash FROM alert_pending WHERE target = $1 AND digest = 0"
	    " ORDER BY hash FOR UPDATE) RETURNING *) INSERT INTO alert_pending"
	    " (target, digest, " GROUP_COLUMNS ") SELECT target, 1, "
	    GROUP_COLUMNS " FROM moved ORDER BY hash" MERGE_GROUP, 1, values,
	    NULL, NULL, a->wait_ms);
	if (res == NULL)
		return -1;
	PQclear(res);
	/* the largest first: those over the digest's group limit are
	 * counted as "other" */
	res = dlq_pg_query(a, "alert groups", "SELECT hash, cause, count,"
	    " first_at, last_at, is_new, queue, reason, class, error,"
	    " samples[1], samples[2], samples[3] FROM alert_pending WHERE"
	    " target = $1 AND digest = 1 ORDER BY count DESC, hash", 1, values,
	    NULL, NULL, a->wait_ms);
	if (res == NULL)
		return -1;
	for (r = 0; r < PQntuples(res); r++)
		added += add_row(res, r, out);
	PQclear(res);
	return added;
}

int
dlq_pg_alerts_done(struct dlq_pg *a, const char *target)
{
	const char *values[1] = { target };
	PGresult *res;

	res = dlq_pg_query(a, "alert groups", "DELETE FROM alert_pending"
	    " WHERE target = $1 AND digest = 1", 1, values, NULL, NULL,
	    a->wait_ms);
	PQclear(res);
	return res != NULL ? 0 : -1;
}

/* Not asked of a shared archive (alertbacklog.h): its pending alert
 * groups are staged in each batch's transaction, above, so nothing is
 * owed to a webhook that the archive would have to find again. */
int64_t
dlq_pg_alert_backlog(struct dlq_pg *a, int64_t since_ms, int max_groups,
    struct dlq_digest *out)
{
	(void)a;
	(void)since_ms;
	(void)max_groups;
	(void)out;
	snprintf(dlq_pg_err, sizeof(dlq_pg_err), "alert backlog: a shared "
	    "archive stages its pending alert groups instead");
	return -1;
}
