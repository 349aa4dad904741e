/* replay.c - plan, claim and finish replays on a PostgreSQL archive
 * (replaysrv.h): the rows and messages read, the claims and verdicts
 * written; the rules and answers are replaydecide.c's, as on SQLite.
 *
 * Operators on two replicas may select the same records: a claim locks
 * each record it takes (FOR UPDATE SKIP LOCKED) in the transaction that
 * marks it 'replaying', so of two claims at once one takes it and the
 * other is refused it ("being claimed by another replay"), and one that
 * comes after finds it 'replaying' and is refused by the policy. */
#include "replaysrv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "pg.h"
#include "replaydecide.h"

/* The columns of struct dlq_replay_row; the oldest x-death time in
 * seconds. x_death is the JSON the worker wrote. */
#define ROW_COLUMNS	"id, status, class, owner, received_at, timestamp,"	\
	" replay_count, queue, message_id, evidence, evidence_at,"		\
	" (SELECT min(extract(epoch FROM (x->>'time')::timestamptz))::bigint"	\
	" FROM json_array_elements(CASE WHEN json_typeof(x_death::json) ="	\
	" 'array' THEN x_death::json ELSE '[]' END) x)"

#define CLAIMED_ELSEWHERE	"being claimed by another replay right now " \
	"(another operator, or the same selection twice): try again"

static int64_t
num(PGresult *res, int r, int c)
{
	return PQgetisnull(res, r, c) ? 0 : strtoll(PQgetvalue(res, r, c),
	    NULL, 10);
}

static void
col(PGresult *res, int r, int c, char *out, size_t n)
{
	dlq_replay_col(out, n, PQgetvalue(res, r, c),
	    (size_t)PQgetlength(res, r, c));
}

static void
read_row(PGresult *res, int i, struct dlq_replay_row *r)
{
	r->id = num(res, i, 0);
	col(res, i, 1, r->status, sizeof(r->status));
	col(res, i, 2, r->class, sizeof(r->class));
	col(res, i, 3, r->owner, sizeof(r->owner));
	r->has_owner = !PQgetisnull(res, i, 3);
	r->received_at = num(res, i, 4);
	r->timestamp = num(res, i, 5);
	r->replay_count = num(res, i, 6);
	col(res, i, 7, r->queue, sizeof(r->queue));
	col(res, i, 8, r->message_id, sizeof(r->message_id));
	col(res, i, 9, r->evidence, sizeof(r->evidence));
	r->evidence_at = r->evidence[0] ? num(res, i, 10) : 0;
	r->first_death_ms = num(res, i, 11) * 1000;
}

static int
fail(char *why, size_t whylen)
{
	snprintf(why, whylen, "archive: %s", dlq_pg_err);
	return DLQ_ERROR;
}

int
dlq_pg_replay_plan(struct dlq_pg *a, const struct dlq_config *c,
    const cJSON *req, struct dlq_buf *out, char *why, size_t whylen)
{
	struct dlq_replay_selection sel;
	struct dlq_replay_row r;
	char v[3][24];
	const char *values[5];
	const cJSON *e;
	PGresult *res;
	int64_t id;
	int n = 0, rc, i;

	if ((rc = dlq_replay_plan_check(c, req, &sel, why, whylen)) != DLQ_OK)
		return rc;
	dlq_buf_addc(out, '[');
	if (sel.ids != NULL) {
		cJSON_ArrayForEach(e, sel.ids) {
			if (n >= sel.limit)
				break;
			if (!dlq_json_int(e, 1, DLQ_JSON_INT_MAX, &id)) {
				snprintf(why, whylen, "'ids' must be positive "
				    "integers");
				return DLQ_USAGE;
			}
			snprintf(v[0], sizeof(v[0]), "%lld", (long long)id);
			values[0] = v[0];
			if ((res = dlq_pg_query(a, "replay", "SELECT "
			    ROW_COLUMNS " FROM dead_letters WHERE id = $1", 1,
			    values, NULL, NULL, a->wait_ms)) == NULL)
				return fail(why, whylen);
			if (PQntuples(res) == 1) {
				read_row(res, 0, &r);
				dlq_replay_plan_item(out, c, req, &r, n++ == 0);
			} else
				dlq_replay_plan_missing(out, id, n++ == 0);
			PQclear(res);
		}
	} else {
		snprintf(v[0], sizeof(v[0]), "%lld", (long long)(sel.since_ms ?
		    dlq_wall_ms() - sel.since_ms : 0));
		snprintf(v[1], sizeof(v[1]), "%lld", (long long)sel.limit);
		values[0] = sel.queue;
		values[1] = sel.class;
		values[2] = sel.signature;
		values[3] = v[0];
		values[4] = v[1];
		if ((res = dlq_pg_query(a, "replay", "SELECT " ROW_COLUMNS
		    " FROM dead_letters WHERE ($1::text IS NULL OR queue = $1 OR"
		    " dlq = $1) AND ($2::text IS NULL OR class = $2) AND"
		    " ($3::text IS NULL OR signature = $3) AND received_at >="
		    " $4::bigint AND status IN ('open', 'assigned', 'replaying')"
		    " ORDER BY id LIMIT $5::bigint", 5, values, NULL, NULL,
		    a->wait_ms)) == NULL)
			return fail(why, whylen);
		for (i = 0; i < PQntuples(res); i++) {
			read_row(res, i, &r);
			dlq_replay_plan_item(out, c, req, &r, n++ == 0);
		}
		PQclear(res);
	}
	dlq_buf_addc(out, ']');
	return DLQ_OK;
}

/* The properties of the message (dlq_replay_message), in its order. */
static const char *const PROPS[8] = { "message_id", "correlation_id",
	"type", "content_type", "content_encoding", "app_id", "reply_to",
	"user_id" };

/* Each property whose exact bytes were kept (props_raw: they are not
 * text) takes them instead of its text, decoded into raw[i]. */
static void
exact_props(const char *props_raw, struct dlq_replay_message *m,
    struct dlq_buf raw[8])
{
	cJSON *j = cJSON_Parse(props_raw);
	const cJSON *v;
	int i;

	for (i = 0; j != NULL && i < 8; i++) {
		v = cJSON_GetObjectItemCaseSensitive(j, PROPS[i]);
		if (!cJSON_IsString(v) || dlq_base64_decode(v->valuestring,
		    &raw[i]) == -1)
			continue;
		m->props[i] = raw[i].data ? raw[i].data : "";
		m->props_len[i] = raw[i].len;
	}
	cJSON_Delete(j);
}

/* The message to publish (dlq_replay_message_json) of the record `id`:
 * 0, 1 when its payload was purged (nothing to send), -1 on error. */
static int
message_json(struct dlq_pg *a, const char *id, struct dlq_buf *out)
{
	const char *values[1] = { id };
	struct dlq_replay_message m;
	struct dlq_buf raw[8];
	unsigned char *headers = NULL, *body = NULL;
	PGresult *res;
	int i, rc = 1;

	for (i = 0; i < 8; i++)
		dlq_buf_init(&raw[i]);
	res = dlq_pg_query(a, "replay", "SELECT message_id, correlation_id,"
	    " type, content_type, content_encoding, app_id, reply_to, user_id,"
	    " timestamp, priority, headers_amqp, payload, purged_at, props_raw"
	    " FROM dead_letters WHERE id = $1", 1, values, NULL, NULL,
	    a->wait_ms);
	if (res == NULL)
		return -1;
	if (PQntuples(res) != 1 || !PQgetisnull(res, 0, 12))
		goto out;
	memset(&m, 0, sizeof(m));
	for (i = 0; i < 8; i++) {
		m.props[i] = PQgetisnull(res, 0, i) ? NULL :
		    PQgetvalue(res, 0, i);
		m.props_len[i] = (size_t)PQgetlength(res, 0, i);
	}
	if (!PQgetisnull(res, 0, 13))
		exact_props(PQgetvalue(res, 0, 13), &m, raw);
	m.has_timestamp = !PQgetisnull(res, 0, 8);
	m.timestamp = num(res, 0, 8);
	m.has_priority = !PQgetisnull(res, 0, 9);
	m.priority = num(res, 0, 9);
	/* bytea comes as text (hex): back to its bytes */
	if ((!PQgetisnull(res, 0, 10) && (headers = PQunescapeBytea(
	    (const unsigned char *)PQgetvalue(res, 0, 10), &m.headers_len)) ==
	    NULL) || (!PQgetisnull(res, 0, 11) && (body = PQunescapeBytea(
	    (const unsigned char *)PQgetvalue(res, 0, 11), &m.body_len)) ==
	    NULL)) {
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "replay: out of memory");
		rc = -1;
		goto out;
	}
	m.headers = headers;
	m.body = body;
	dlq_replay_message_json(out, strtoll(id, NULL, 10), &m);
	rc = 0;
out:
	for (i = 0; i < 8; i++)
		dlq_buf_release(&raw[i]);
	PQfreemem(headers);
	PQfreemem(body);
	PQclear(res);
	return rc;
}

/* The record `id` locked for this claim into *r: 1; 0 with why when it
 * is not there or another claim holds it; -1 on error. */
static int
lock_row(struct dlq_pg *a, const char *id, struct dlq_replay_row *r,
    const char **why)
{
	const char *values[1] = { id };
	PGresult *res;
	int rc;

	if ((res = dlq_pg_query(a, "replay", "SELECT " ROW_COLUMNS " FROM"
	    " dead_letters WHERE id = $1 FOR UPDATE SKIP LOCKED", 1, values,
	    NULL, NULL, a->wait_ms)) == NULL)
		return -1;
	if ((rc = PQntuples(res) == 1))
		read_row(res, 0, r);
	PQclear(res);
	if (rc == 1)
		return 1;
	if ((res = dlq_pg_query(a, "replay", "SELECT 1 FROM dead_letters"
	    " WHERE id = $1", 1, values, NULL, NULL, a->wait_ms)) == NULL)
		return -1;
	*why = PQntuples(res) == 1 ? CLAIMED_ELSEWHERE : DLQ_NOT_IN_ARCHIVE;
	PQclear(res);
	return 0;
}

/* Claims one record inside the transaction: a claim in `claims`, or a
 * refusal in `refused` (nothing changed); -1 on error. */
static int
claim_one(struct dlq_pg *a, const struct dlq_config *c, const cJSON *req,
    const char *actor, int64_t id, struct dlq_buf *claims,
    struct dlq_buf *refused)
{
	struct dlq_replay_grant g;
	struct dlq_replay_row r;
	struct dlq_buf message;
	char v[24], now[24], why[256];
	const char *values[7], *w;
	PGresult *res;
	int rc;

	snprintf(v, sizeof(v), "%lld", (long long)id);
	if ((rc = lock_row(a, v, &r, &w)) != 1) {
		if (rc == 0)
			dlq_replay_refusal(refused, id, w);
		return rc == 0 ? 1 : -1;
	}
	if (!dlq_replay_grant(c, req, &r, &g, why, sizeof(why))) {
		dlq_replay_refusal(refused, id, why);
		return 1;
	}
	dlq_buf_init(&message);
	if ((rc = message_json(a, v, &message)) != 0) {
		if (rc == 1)
			dlq_replay_refusal(refused, id, "its payload was purged: "
			    "nothing to replay");
		goto out;
	}
	rc = -1;
	values[0] = v;
	if ((res = dlq_pg_query(a, "replay", "UPDATE dead_letters SET status ="
	    " 'replaying' WHERE id = $1", 1, values, NULL, NULL, a->wait_ms))
	    == NULL)
		goto out;
	PQclear(res);
	snprintf(now, sizeof(now), "%lld", (long long)g.now);
	values[1] = actor;
	values[2] = dlq_json_text(cJSON_GetObjectItemCaseSensitive(req,
	    "reason"));
	values[3] = g.evidence.len > 0 ? g.evidence.data : NULL;
	values[4] = g.policy.data;
	values[5] = now;
	values[6] = g.target;
	if ((res = dlq_pg_query(a, "replay", "INSERT INTO attempts"
	    " (dead_letter_id, actor, reason, evidence, policy, checked_at,"
	    " target, started_at, outcome) VALUES ($1, $2, $3, $4, $5, $6, $7,"
	    " $6, 'unknown') RETURNING id", 7, values, NULL, NULL, a->wait_ms))
	    == NULL)
		goto out;
	dlq_replay_claim_item(claims, id, num(res, 0, 0), r.replay_count + 1,
	    actor, &g, &message);
	PQclear(res);
	rc = 0;
out:
	dlq_replay_grant_release(&g);
	dlq_buf_release(&message);
	return rc;
}

int
dlq_pg_replay_claim(struct dlq_pg *a, const struct dlq_config *c,
    const cJSON *req, const char *actor, struct dlq_buf *out, char *why,
    size_t whylen)
{
	struct dlq_buf claims, refused, deferred;
	const cJSON *e;
	int64_t id;
	int rc;

	if ((rc = dlq_replay_claim_check(req, why, whylen)) != DLQ_OK)
		return rc;
	dlq_buf_init(&claims);
	dlq_buf_init(&refused);
	dlq_buf_init(&deferred);
	if (dlq_pg_exec(a, "replay", "BEGIN") == -1)
		goto fail;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(req, "ids")) {
		if (!dlq_json_int(e, 1, DLQ_JSON_INT_MAX, &id))
			continue;	/* not an id: nothing to claim */
		if (claims.len >= DLQ_REPLAY_CLAIM_BYTES)	/* large ones */
			dlq_replay_defer(&deferred, id);
		else if (claim_one(a, c, req, actor, id, &claims, &refused)
		    == -1)
			goto fail;
	}
	if (dlq_pg_commit_tx(a) == -1)
		goto fail;
	dlq_replay_claim_answer(out, &claims, &refused, &deferred);
	rc = DLQ_OK;
	goto out;
fail:
	rc = fail(why, whylen);
	if (a->conn != NULL)
		(void)dlq_pg_exec(a, "replay", "ROLLBACK");
out:
	dlq_buf_release(&claims);
	dlq_buf_release(&refused);
	dlq_buf_release(&deferred);
	return rc;
}

/* Records one verdict inside the transaction: 1 done, 0 when the attempt
 * is not open, -1 on error. */
static int
finish_one(struct dlq_pg *a, int64_t attempt, const char *outcome,
    const char *detail, const char *actor)
{
	char id[24], now[24];
	const char *values[4] = { id, outcome, detail, now };
	PGresult *res;
	int changed;

	snprintf(id, sizeof(id), "%lld", (long long)attempt);
	snprintf(now, sizeof(now), "%lld", (long long)dlq_wall_ms());
	if ((res = dlq_pg_query(a, "replay", "UPDATE attempts SET outcome ="
	    " $2, detail = $3, finished_at = $4 WHERE id = $1 AND outcome ="
	    " 'unknown' AND finished_at IS NULL", 4, values, NULL, NULL,
	    a->wait_ms)) == NULL)
		return -1;
	changed = atoi(PQcmdTuples(res));
	PQclear(res);
	if (changed != 1)
		return 0;
	values[2] = actor;
	if ((res = dlq_pg_query(a, "replay", "UPDATE dead_letters SET"
	    " status = CASE $2 WHEN 'published' THEN 'replayed'"
	    "  WHEN 'failed' THEN CASE WHEN owner IS NULL THEN 'open'"
	    "  ELSE 'assigned' END ELSE 'replaying' END,"
	    " resolved_by = CASE $2 WHEN 'published' THEN $3 END,"
	    " resolved_at = CASE $2 WHEN 'published' THEN $4::bigint END,"
	    " resolution = CASE $2 WHEN 'published' THEN 'replayed' END"
	    " WHERE id = (SELECT dead_letter_id FROM attempts WHERE id = $1)"
	    " AND status = 'replaying'", 4, values, NULL, NULL, a->wait_ms)) ==
	    NULL)
		return -1;
	PQclear(res);
	return 1;
}

int
dlq_pg_replay_finish(struct dlq_pg *a, const cJSON *req, const char *actor,
    struct dlq_buf *out, char *why, size_t whylen)
{
	const char *outcome, *detail;
	const cJSON *e;
	int64_t attempt;
	int done = 0, rc;

	if ((rc = dlq_replay_finish_check(req, why, whylen)) != DLQ_OK)
		return rc;
	if (dlq_pg_exec(a, "replay", "BEGIN") == -1)
		return fail(why, whylen);
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(req,
	    "results")) {
		dlq_replay_finish_result(e, &attempt, &outcome, &detail);
		if ((rc = finish_one(a, attempt, outcome, detail, actor)) == -1)
			goto fail;
		done += rc;
	}
	if (dlq_pg_commit_tx(a) == -1)
		goto fail;
	return dlq_replay_finish_answer(req, done, out, why, whylen);
fail:
	rc = fail(why, whylen);
	if (a->conn != NULL)
		(void)dlq_pg_exec(a, "replay", "ROLLBACK");
	return rc;
}
