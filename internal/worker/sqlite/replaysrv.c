/* replaysrv.c - plan, claim and finish replays on the SQLite archive:
 * the rows and messages read, the claims and verdicts written; the
 * rules and answers are replaydecide.c's. */
#include "replaysrv.h"
#include "sqlite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "archive.h"
#include "proto.h"
#include "replaydecide.h"

/* The columns a decision needs (struct dlq_replay_row). */
#define ROW_COLUMNS	"id, status, class, owner, received_at, timestamp," \
			" replay_count, queue, message_id, evidence," \
			" evidence_at, (SELECT min(unixepoch(json_extract(" \
			" x.value, '$.time'))) FROM json_each(CASE WHEN" \
			" json_valid(x_death) THEN x_death END) x)"

static void
col(sqlite3_stmt *st, int i, char *out, size_t n)
{
	dlq_replay_col(out, n, sqlite3_column_text(st, i),
	    (size_t)sqlite3_column_bytes(st, i));
}

static void
read_row(sqlite3_stmt *st, struct dlq_replay_row *r)
{
	r->id = sqlite3_column_int64(st, 0);
	col(st, 1, r->status, sizeof(r->status));
	col(st, 2, r->class, sizeof(r->class));
	col(st, 3, r->owner, sizeof(r->owner));
	r->has_owner = sqlite3_column_type(st, 3) != SQLITE_NULL;
	r->received_at = sqlite3_column_int64(st, 4);
	r->timestamp = sqlite3_column_int64(st, 5);
	r->replay_count = sqlite3_column_int64(st, 6);
	col(st, 7, r->queue, sizeof(r->queue));
	dlq_text_copy(r->message_id, sizeof(r->message_id),
	    sqlite3_column_blob(st, 8), (size_t)sqlite3_column_bytes(st, 8));
	col(st, 9, r->evidence, sizeof(r->evidence));
	r->evidence_at = r->evidence[0] ? sqlite3_column_int64(st, 10) : 0;
	r->first_death_ms = sqlite3_column_int64(st, 11) * 1000;
}

int
dlq_sqlite_replay_plan(struct dlq_sqlite *archive, const struct dlq_config *c,
    const cJSON *req, struct dlq_buf *out, char *why, size_t whylen)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct dlq_replay_selection sel;
	struct dlq_replay_row r;
	const cJSON *e;
	sqlite3_stmt *st;
	int64_t id;
	int n = 0, rc;

	if ((rc = dlq_replay_plan_check(c, req, &sel, why, whylen)) != DLQ_OK)
		return rc;
	dlq_buf_addc(out, '[');
	if (sel.ids != NULL) {
		if (sqlite3_prepare_v2(db, "SELECT " ROW_COLUMNS " FROM "
		    "dead_letters WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
			goto fail;
		cJSON_ArrayForEach(e, sel.ids) {
			if (n >= sel.limit)
				break;
			if (!dlq_json_int(e, 1, DLQ_JSON_INT_MAX, &id)) {
				sqlite3_finalize(st);
				snprintf(why, whylen, "'ids' must be positive integers");
				return DLQ_USAGE;
			}
			sqlite3_bind_int64(st, 1, id);
			if (sqlite3_step(st) == SQLITE_ROW) {
				read_row(st, &r);
				dlq_replay_plan_item(out, c, req, &r, n++ == 0);
			} else
				dlq_replay_plan_missing(out, id, n++ == 0);
			sqlite3_reset(st);
		}
	} else {
		if (sqlite3_prepare_v2(db, "SELECT " ROW_COLUMNS " FROM "
		    "dead_letters WHERE (?1 IS NULL OR queue = ?1 OR dlq = ?1) AND"
		    " (?2 IS NULL OR class = ?2) AND (?3 IS NULL OR signature = ?3)"
		    " AND received_at >= ?4 AND status IN ('open', 'assigned',"
		    " 'replaying') ORDER BY id LIMIT ?5", -1, &st, NULL) !=
		    SQLITE_OK)
			goto fail;
		if (sel.queue)
			sqlite3_bind_text(st, 1, sel.queue, -1, SQLITE_STATIC);
		if (sel.class)
			sqlite3_bind_text(st, 2, sel.class, -1, SQLITE_STATIC);
		if (sel.signature)
			sqlite3_bind_text(st, 3, sel.signature, -1,
			    SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, sel.since_ms ? dlq_wall_ms() -
		    sel.since_ms : 0);
		sqlite3_bind_int64(st, 5, sel.limit);
		while (sqlite3_step(st) == SQLITE_ROW) {
			read_row(st, &r);
			dlq_replay_plan_item(out, c, req, &r, n++ == 0);
		}
	}
	sqlite3_finalize(st);
	dlq_buf_addc(out, ']');
	return DLQ_OK;
fail:
	snprintf(why, whylen, "archive: %s",
	    dlq_sqlite_db_errmsg(db));
	return DLQ_ERROR;
}

/* A text column: its bytes, NULL for SQL NULL. */
static const void *
text_col(sqlite3_stmt *st, int i, size_t *n)
{
	*n = (size_t)sqlite3_column_bytes(st, i);
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NULL;
	return sqlite3_column_blob(st, i);
}

/* The statements of a claim, prepared once per request. */
struct claim_sql {
	sqlite3_stmt	*row;		/* ROW_COLUMNS by id */
	sqlite3_stmt	*message;	/* what to publish, by id */
	sqlite3_stmt	*mark;		/* status 'replaying' */
	sqlite3_stmt	*attempt;	/* the new attempt */
};

static void
claim_sql_free(struct claim_sql *q)
{
	sqlite3_finalize(q->row);
	sqlite3_finalize(q->message);
	sqlite3_finalize(q->mark);
	sqlite3_finalize(q->attempt);
}

static int
claim_sql_prepare(sqlite3 *db, struct claim_sql *q)
{
	memset(q, 0, sizeof(*q));
	if (sqlite3_prepare_v2(db, "SELECT " ROW_COLUMNS " FROM dead_letters"
	    " WHERE id = ?1", -1, &q->row, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT message_id, correlation_id, type,"
	    " content_type, content_encoding, app_id, reply_to, user_id,"
	    " timestamp, priority, headers_amqp, payload, purged_at"
	    " FROM dead_letters WHERE id = ?1", -1, &q->message, NULL) !=
	    SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE dead_letters SET status ="
	    " 'replaying' WHERE id = ?1", -1, &q->mark, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO attempts (dead_letter_id,"
	    " actor, reason, evidence, policy, checked_at, target, started_at,"
	    " outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?6, 'unknown')", -1,
	    &q->attempt, NULL) != SQLITE_OK) {
		claim_sql_free(q);
		return -1;
	}
	return 0;
}

static int
step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* The message to publish (dlq_replay_message_json). -1 when its payload
 * was purged: nothing to send. */
static int
message_json(sqlite3_stmt *st, int64_t id, struct dlq_buf *out)
{
	struct dlq_replay_message m;
	int i, rc = -1;

	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_type(st, 12) !=
	    SQLITE_NULL)
		goto out;
	memset(&m, 0, sizeof(m));
	for (i = 0; i < 8; i++)
		m.props[i] = text_col(st, i, &m.props_len[i]);
	m.has_timestamp = sqlite3_column_type(st, 8) != SQLITE_NULL;
	m.timestamp = sqlite3_column_int64(st, 8);
	m.has_priority = sqlite3_column_type(st, 9) != SQLITE_NULL;
	m.priority = sqlite3_column_int64(st, 9);
	m.headers = sqlite3_column_blob(st, 10);
	m.headers_len = (size_t)sqlite3_column_bytes(st, 10);
	m.body = sqlite3_column_blob(st, 11);
	m.body_len = (size_t)sqlite3_column_bytes(st, 11);
	dlq_replay_message_json(out, id, &m);
	rc = 0;
out:
	sqlite3_reset(st);
	return rc;
}

/* Claims one record inside the caller's transaction: appends a claim to
 * `claims`, or a refusal to `refused` (then nothing changed). -1 on an
 * archive error. */
static int
claim_one(sqlite3 *db, struct claim_sql *q, const struct dlq_config *c,
    const cJSON *req, const char *actor, int64_t id, struct dlq_buf *claims,
    struct dlq_buf *refused)
{
	struct dlq_replay_grant g;
	struct dlq_replay_row r;
	struct dlq_buf message;
	char why[256];
	int rc = -1;

	sqlite3_bind_int64(q->row, 1, id);
	if (sqlite3_step(q->row) != SQLITE_ROW) {
		sqlite3_reset(q->row);
		dlq_replay_refusal(refused, id, DLQ_NOT_IN_ARCHIVE);
		return 1;
	}
	read_row(q->row, &r);
	sqlite3_reset(q->row);
	if (!dlq_replay_grant(c, req, &r, &g, why, sizeof(why))) {
		dlq_replay_refusal(refused, id, why);
		return 1;
	}
	dlq_buf_init(&message);
	if (message_json(q->message, id, &message) == -1) {
		dlq_replay_refusal(refused, id, "its payload was purged: nothing "
		    "to replay");
		rc = 1;
		goto out;
	}
	sqlite3_bind_int64(q->mark, 1, id);
	if (step_done(q->mark) == -1)
		goto out;
	sqlite3_bind_int64(q->attempt, 1, id);
	sqlite3_bind_text(q->attempt, 2, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(q->attempt, 3, dlq_json_text(
	    cJSON_GetObjectItemCaseSensitive(req, "reason")), -1,
	    SQLITE_STATIC);
	if (g.evidence.len > 0)
		sqlite3_bind_text(q->attempt, 4, g.evidence.data,
		    (int)g.evidence.len, SQLITE_STATIC);
	sqlite3_bind_text(q->attempt, 5, g.policy.data, (int)g.policy.len,
	    SQLITE_STATIC);
	sqlite3_bind_int64(q->attempt, 6, g.now);
	sqlite3_bind_text(q->attempt, 7, g.target, -1, SQLITE_STATIC);
	if (step_done(q->attempt) == -1)
		goto out;
	dlq_replay_claim_item(claims, id, sqlite3_last_insert_rowid(db),
	    r.replay_count + 1, actor, &g, &message);
	rc = 0;
out:
	dlq_replay_grant_release(&g);
	dlq_buf_release(&message);
	return rc;
}

int
dlq_sqlite_replay_claim(struct dlq_sqlite *archive, const struct dlq_config *c, const cJSON *req,
    const char *actor, struct dlq_buf *out, char *why, size_t whylen)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(req, "ids"), *e;
	struct dlq_buf claims, refused, deferred;
	struct claim_sql q;
	int rc;

	if ((rc = dlq_replay_claim_check(req, why, whylen)) != DLQ_OK)
		return rc;
	if (claim_sql_prepare(db, &q) == -1) {
		snprintf(why, whylen, "archive: %s",
		    dlq_sqlite_db_errmsg(db));
		return DLQ_ERROR;
	}
	dlq_buf_init(&claims);
	dlq_buf_init(&refused);
	dlq_buf_init(&deferred);
	/* one transaction (one fsync) for the whole chunk */
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	cJSON_ArrayForEach(e, ids) {
		int64_t id;

		if (!dlq_json_int(e, 1, DLQ_JSON_INT_MAX, &id))
			continue;	/* not an id: nothing to claim */
		if (claims.len >= DLQ_REPLAY_CLAIM_BYTES)	/* large ones */
			dlq_replay_defer(&deferred, id);
		else if (claim_one(db, &q, c, req, actor, id, &claims,
		    &refused) == -1)
			goto fail;
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	claim_sql_free(&q);
	dlq_replay_claim_answer(out, &claims, &refused, &deferred);
	dlq_buf_release(&claims);
	dlq_buf_release(&refused);
	dlq_buf_release(&deferred);
	return DLQ_OK;
fail:
	snprintf(why, whylen, "archive: %s",
	    dlq_sqlite_db_errmsg(db));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	claim_sql_free(&q);
	dlq_buf_release(&claims);
	dlq_buf_release(&refused);
	dlq_buf_release(&deferred);
	return DLQ_ERROR;
}

/* The statements of a finish, prepared once per request. */
struct finish_sql {
	sqlite3_stmt	*attempt;	/* the verdict, if still open */
	sqlite3_stmt	*record;	/* the record's status after it */
};

static void
finish_sql_free(struct finish_sql *q)
{
	sqlite3_finalize(q->attempt);
	sqlite3_finalize(q->record);
}

static int
finish_sql_prepare(sqlite3 *db, struct finish_sql *q)
{
	memset(q, 0, sizeof(*q));
	if (sqlite3_prepare_v2(db, "UPDATE attempts SET outcome = ?2,"
	    " detail = ?3, finished_at = ?4 WHERE id = ?1 AND outcome ="
	    " 'unknown' AND finished_at IS NULL", -1, &q->attempt, NULL) !=
	    SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE dead_letters SET"
	    " status = CASE ?2 WHEN 'published' THEN 'replayed'"
	    "  WHEN 'failed' THEN CASE WHEN owner IS NULL THEN 'open'"
	    "  ELSE 'assigned' END ELSE 'replaying' END,"
	    " resolved_by = CASE ?2 WHEN 'published' THEN ?3 END,"
	    " resolved_at = CASE ?2 WHEN 'published' THEN ?4 END,"
	    " resolution = CASE ?2 WHEN 'published' THEN 'replayed' END"
	    " WHERE id = (SELECT dead_letter_id FROM attempts WHERE id = ?1)"
	    " AND status = 'replaying'", -1, &q->record, NULL) != SQLITE_OK) {
		finish_sql_free(q);
		return -1;
	}
	return 0;
}

/* Records one verdict inside the caller's transaction: 1 done, 0 when the
 * attempt is not open, -1 on an archive error. */
static int
finish_one(sqlite3 *db, struct finish_sql *q, int64_t attempt,
    const char *outcome, const char *detail, const char *actor)
{
	int64_t now = dlq_wall_ms();

	sqlite3_bind_int64(q->attempt, 1, attempt);
	sqlite3_bind_text(q->attempt, 2, outcome, -1, SQLITE_STATIC);
	if (detail)
		sqlite3_bind_text(q->attempt, 3, detail, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q->attempt, 4, now);
	if (step_done(q->attempt) == -1)
		return -1;
	if (sqlite3_changes(db) != 1)
		return 0;
	sqlite3_bind_int64(q->record, 1, attempt);
	sqlite3_bind_text(q->record, 2, outcome, -1, SQLITE_STATIC);
	sqlite3_bind_text(q->record, 3, actor, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q->record, 4, now);
	return step_done(q->record) == -1 ? -1 : 1;
}

int
dlq_sqlite_replay_finish(struct dlq_sqlite *archive, const cJSON *req,
    const char *actor, struct dlq_buf *out, char *why, size_t whylen)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const cJSON *e;
	const char *outcome, *detail;
	struct finish_sql q;
	int64_t attempt;
	int done = 0, rc;

	if ((rc = dlq_replay_finish_check(req, why, whylen)) != DLQ_OK)
		return rc;
	if (finish_sql_prepare(db, &q) == -1) {
		snprintf(why, whylen, "archive: %s",
		    dlq_sqlite_db_errmsg(db));
		return DLQ_ERROR;
	}
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(req, "results")) {
		dlq_replay_finish_result(e, &attempt, &outcome, &detail);
		rc = finish_one(db, &q, attempt, outcome, detail, actor);
		if (rc == -1)
			goto fail;
		done += rc;
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	finish_sql_free(&q);
	return dlq_replay_finish_answer(req, done, out, why, whylen);
fail:
	snprintf(why, whylen, "archive: %s",
	    dlq_sqlite_db_errmsg(db));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	finish_sql_free(&q);
	return DLQ_ERROR;
}
