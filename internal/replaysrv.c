/* replaysrv.c - plan, claim and finish replays on the archive. */
#include "replaysrv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "replay.h"

#define PLAN_MAX	10000

/* The columns a decision needs. */
#define ROW_COLUMNS	"id, status, class, owner, received_at, timestamp," \
			" replay_count, queue, message_id"

struct row {
	int64_t		 id;
	char		 status[16];
	char		 class[16];
	char		 owner[128];
	bool		 has_owner;
	int64_t		 received_at;
	int64_t		 timestamp;	/* 0: none */
	int64_t		 replay_count;
	char		 queue[256];
	char		 message_id[256];
};

static void
col(sqlite3_stmt *st, int i, char *out, size_t n)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	snprintf(out, n, "%s", t ? (const char *)t : "");
}

static void
read_row(sqlite3_stmt *st, struct row *r)
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
	col(st, 8, r->message_id, sizeof(r->message_id));
}

static const char *
jstr(const cJSON *req, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, k);

	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static bool
jtrue(const cJSON *req, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, k));
}

/* Age of the message: from its own timestamp when it has one (an OTP's
 * age is counted from when it was sent), else from when it died. */
static int64_t
age_ms(const struct row *r, int64_t now)
{
	int64_t born = r->received_at;

	if (r->timestamp > 0 && r->timestamp * 1000 < born)
		born = r->timestamp * 1000;
	return now - born;
}

static bool
decide(const struct dlq_config *c, const struct row *r, bool force,
    struct dlq_replay_policy *p, char *why, size_t n)
{
	struct dlq_replay_facts f;

	dlq_config_replay_policy(c, r->queue, p);
	f.status = r->status;
	f.class = r->class;
	f.owner = r->has_owner ? r->owner : NULL;
	f.age_ms = age_ms(r, dlq_wall_ms());
	f.replay_count = r->replay_count;
	return dlq_replay_eligible(p, &f, force, why, n);
}

static void
target(const cJSON *req, const struct row *r, const char **exchange,
    const char **rk)
{
	*exchange = jstr(req, "to_exchange") ? jstr(req, "to_exchange") : "";
	*rk = jstr(req, "routing_key") ? jstr(req, "routing_key") : r->queue;
}

static void
plan_item(struct dlq_buf *out, const struct dlq_config *c, const cJSON *req,
    const struct row *r, bool first)
{
	struct dlq_replay_policy p;
	const char *ex, *rk;
	char why[256];
	bool ok = decide(c, r, jtrue(req, "force"), &p, why, sizeof(why));

	target(req, r, &ex, &rk);
	dlq_buf_printf(out, "%s{\"id\":%lld,\"message_id\":", first ? "" : ",",
	    (long long)r->id);
	dlq_buf_json_cstr(out, r->message_id[0] ? r->message_id : NULL);
	dlq_buf_adds(out, ",\"queue\":");
	dlq_buf_json_cstr(out, r->queue);
	dlq_buf_adds(out, ",\"class\":");
	dlq_buf_json_cstr(out, r->class);
	dlq_buf_adds(out, ",\"status\":");
	dlq_buf_json_cstr(out, r->status);
	dlq_buf_printf(out, ",\"eligible\":%s,\"why\":", ok ? "true" : "false");
	dlq_buf_json_cstr(out, ok ? NULL : why);
	dlq_buf_adds(out, ",\"exchange\":");
	dlq_buf_json_cstr(out, ex);
	dlq_buf_adds(out, ",\"routing_key\":");
	dlq_buf_json_cstr(out, rk);
	dlq_buf_addc(out, '}');
}

int
dlq_replay_plan(sqlite3 *db, const struct dlq_config *c, const cJSON *req,
    struct dlq_buf *out, char *why, size_t whylen)
{
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(req, "ids"), *e;
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(req, "limit");
	const cJSON *since = cJSON_GetObjectItemCaseSensitive(req, "since_ms");
	sqlite3_stmt *st;
	struct row r;
	int64_t limit = cJSON_IsNumber(lim) ? (int64_t)lim->valuedouble :
	    c->replay_limit;
	int n = 0;

	if (limit < 1 || limit > PLAN_MAX) {
		snprintf(why, whylen, "'limit' must be 1..%d", PLAN_MAX);
		return DLQ_REPLAY_USAGE;
	}
	if (jtrue(req, "force") && jstr(req, "reason") == NULL) {
		snprintf(why, whylen, "--force needs --reason");
		return DLQ_REPLAY_USAGE;
	}
	dlq_buf_addc(out, '[');
	if (cJSON_IsArray(ids)) {
		if (sqlite3_prepare_v2(db, "SELECT " ROW_COLUMNS " FROM "
		    "dead_letters WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
			goto fail;
		cJSON_ArrayForEach(e, ids) {
			if (n >= limit)
				break;
			sqlite3_bind_int64(st, 1, (int64_t)e->valuedouble);
			if (sqlite3_step(st) == SQLITE_ROW) {
				read_row(st, &r);
				plan_item(out, c, req, &r, n++ == 0);
			} else
				dlq_buf_printf(out, "%s{\"id\":%lld,\"eligible\":"
				    "false,\"why\":\"not found\"}", n++ ? "," : "",
				    (long long)e->valuedouble);
			sqlite3_reset(st);
		}
	} else {
		if (jstr(req, "queue") == NULL) {
			snprintf(why, whylen, "select ids or a --queue");
			return DLQ_REPLAY_USAGE;
		}
		if (sqlite3_prepare_v2(db, "SELECT " ROW_COLUMNS " FROM "
		    "dead_letters WHERE (queue = ?1 OR dlq = ?1) AND"
		    " (?2 IS NULL OR class = ?2) AND (?3 IS NULL OR signature = ?3)"
		    " AND received_at >= ?4 AND status IN ('open', 'assigned',"
		    " 'replaying') ORDER BY id LIMIT ?5", -1, &st, NULL) !=
		    SQLITE_OK)
			goto fail;
		sqlite3_bind_text(st, 1, jstr(req, "queue"), -1, SQLITE_STATIC);
		if (jstr(req, "class"))
			sqlite3_bind_text(st, 2, jstr(req, "class"), -1,
			    SQLITE_STATIC);
		if (jstr(req, "signature"))
			sqlite3_bind_text(st, 3, jstr(req, "signature"), -1,
			    SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, cJSON_IsNumber(since) ?
		    dlq_wall_ms() - (int64_t)since->valuedouble : 0);
		sqlite3_bind_int64(st, 5, limit);
		while (sqlite3_step(st) == SQLITE_ROW) {
			read_row(st, &r);
			plan_item(out, c, req, &r, n++ == 0);
		}
	}
	sqlite3_finalize(st);
	dlq_buf_addc(out, ']');
	return DLQ_REPLAY_OK;
fail:
	snprintf(why, whylen, "archive: %s", sqlite3_errmsg(db));
	return DLQ_REPLAY_ERROR;
}

static void
json_text_col(struct dlq_buf *out, const char *key, sqlite3_stmt *st, int i)
{
	dlq_buf_printf(out, ",\"%s\":", key);
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		dlq_buf_adds(out, "null");
	else
		dlq_buf_json_str(out, sqlite3_column_text(st, i),
		    (size_t)sqlite3_column_bytes(st, i));
}

/* The message to publish: properties, raw headers and body (base64). */
static int
message_json(sqlite3 *db, int64_t id, struct dlq_buf *out)
{
	static const char *const props[] = { "message_id", "correlation_id",
	    "type", "content_type", "content_encoding", "app_id", "reply_to",
	    "user_id", NULL };
	sqlite3_stmt *st;
	int i;

	if (sqlite3_prepare_v2(db, "SELECT message_id, correlation_id, type,"
	    " content_type, content_encoding, app_id, reply_to, user_id,"
	    " timestamp, priority, headers_amqp, payload, purged_at"
	    " FROM dead_letters WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_type(st, 12) !=
	    SQLITE_NULL) {
		sqlite3_finalize(st);
		return -1;
	}
	dlq_buf_printf(out, "{\"id\":%lld", (long long)id);
	for (i = 0; props[i] != NULL; i++)
		json_text_col(out, props[i], st, i);
	for (i = 8; i <= 9; i++)
		if (sqlite3_column_type(st, i) != SQLITE_NULL)
			dlq_buf_printf(out, ",\"%s\":%lld", i == 8 ? "timestamp" :
			    "priority", (long long)sqlite3_column_int64(st, i));
	dlq_buf_adds(out, ",\"headers_b64\":\"");
	dlq_buf_base64(out, sqlite3_column_blob(st, 10),
	    (size_t)sqlite3_column_bytes(st, 10));
	dlq_buf_adds(out, "\",\"body_b64\":\"");
	dlq_buf_base64(out, sqlite3_column_blob(st, 11),
	    (size_t)sqlite3_column_bytes(st, 11));
	dlq_buf_adds(out, "\"}");
	sqlite3_finalize(st);
	return 0;
}

int
dlq_replay_claim(sqlite3 *db, const struct dlq_config *c, const cJSON *req,
    const char *actor, struct dlq_buf *out, char *why, size_t whylen)
{
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(req, "ids");
	struct dlq_replay_policy p;
	struct dlq_buf policy;
	sqlite3_stmt *st = NULL;
	const char *ex, *rk;
	char tgt[600];
	struct row r;
	int64_t id, now = dlq_wall_ms(), attempt;
	int rc = DLQ_REPLAY_ERROR;

	if (cJSON_GetArraySize(ids) != 1 || jstr(req, "reason") == NULL) {
		snprintf(why, whylen, "a claim names one id and a reason");
		return DLQ_REPLAY_USAGE;
	}
	id = (int64_t)cJSON_GetArrayItem(ids, 0)->valuedouble;
	dlq_buf_init(&policy);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(db, "SELECT " ROW_COLUMNS " FROM dead_letters"
	    " WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		snprintf(why, whylen, "not found");
		rc = DLQ_REPLAY_NOT_FOUND;
		goto out;
	}
	read_row(st, &r);
	sqlite3_finalize(st);
	st = NULL;
	if (!decide(c, &r, jtrue(req, "force"), &p, why, whylen)) {
		rc = DLQ_REPLAY_REFUSED;
		goto out;
	}
	dlq_replay_policy_json(&p, &policy);
	target(req, &r, &ex, &rk);
	snprintf(tgt, sizeof(tgt), "%s/%s", ex[0] ? ex : "(default)", rk);
	if (sqlite3_prepare_v2(db, "UPDATE dead_letters SET status ="
	    " 'replaying' WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO attempts (dead_letter_id,"
	    " actor, reason, evidence, policy, checked_at, target, started_at,"
	    " outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?6, 'unknown')", -1,
	    &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, jstr(req, "reason"), -1, SQLITE_STATIC);
	if (jstr(req, "evidence"))
		sqlite3_bind_text(st, 4, jstr(req, "evidence"), -1,
		    SQLITE_STATIC);
	sqlite3_bind_text(st, 5, policy.data, (int)policy.len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, now);
	sqlite3_bind_text(st, 7, tgt, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	st = NULL;
	attempt = sqlite3_last_insert_rowid(db);
	dlq_buf_printf(out, "{\"id\":%lld,\"attempt\":%lld,\"replay_count\":"
	    "%lld,\"actor\":", (long long)id, (long long)attempt,
	    (long long)r.replay_count + 1);
	dlq_buf_json_cstr(out, actor);
	dlq_buf_adds(out, ",\"exchange\":");
	dlq_buf_json_cstr(out, ex);
	dlq_buf_adds(out, ",\"routing_key\":");
	dlq_buf_json_cstr(out, rk);
	dlq_buf_adds(out, ",\"message\":");
	if (message_json(db, id, out) == -1) {
		snprintf(why, whylen, "its payload was purged: nothing to replay");
		rc = DLQ_REPLAY_REFUSED;
		goto out;
	}
	dlq_buf_addc(out, '}');
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	dlq_buf_release(&policy);
	return DLQ_REPLAY_OK;
fail:
	snprintf(why, whylen, "archive: %s", sqlite3_errmsg(db));
out:
	sqlite3_finalize(st);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	dlq_buf_reset(out);
	dlq_buf_release(&policy);
	return rc;
}

int
dlq_replay_finish(sqlite3 *db, const cJSON *req, const char *actor,
    struct dlq_buf *out, char *why, size_t whylen)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(req, "attempt");
	const char *outcome = jstr(req, "outcome"), *detail = jstr(req, "detail");
	sqlite3_stmt *st;
	int64_t now = dlq_wall_ms();
	int changed;

	if (!cJSON_IsNumber(a) || outcome == NULL ||
	    (strcmp(outcome, "published") != 0 && strcmp(outcome, "failed") != 0
	    && strcmp(outcome, "unknown") != 0)) {
		snprintf(why, whylen, "finish needs 'attempt' and 'outcome' "
		    "(published, failed or unknown)");
		return DLQ_REPLAY_USAGE;
	}
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(db, "UPDATE attempts SET outcome = ?2,"
	    " detail = ?3, finished_at = ?4 WHERE id = ?1 AND outcome ="
	    " 'unknown' AND finished_at IS NULL", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(st, 1, (int64_t)a->valuedouble);
	sqlite3_bind_text(st, 2, outcome, -1, SQLITE_STATIC);
	if (detail)
		sqlite3_bind_text(st, 3, detail, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now);
	changed = sqlite3_step(st) == SQLITE_DONE ? sqlite3_changes(db) : -1;
	sqlite3_finalize(st);
	if (changed != 1) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		snprintf(why, whylen, "no open attempt %lld",
		    (long long)a->valuedouble);
		return DLQ_REPLAY_NOT_FOUND;
	}
	if (sqlite3_prepare_v2(db, "UPDATE dead_letters SET"
	    " status = CASE ?2 WHEN 'published' THEN 'replayed'"
	    "  WHEN 'failed' THEN CASE WHEN owner IS NULL THEN 'open'"
	    "  ELSE 'assigned' END ELSE 'replaying' END,"
	    " resolved_by = CASE ?2 WHEN 'published' THEN ?3 END,"
	    " resolved_at = CASE ?2 WHEN 'published' THEN ?4 END,"
	    " resolution = CASE ?2 WHEN 'published' THEN 'replayed' END"
	    " WHERE id = (SELECT dead_letter_id FROM attempts WHERE id = ?1)"
	    " AND status = 'replaying'", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	sqlite3_bind_int64(st, 1, (int64_t)a->valuedouble);
	sqlite3_bind_text(st, 2, outcome, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, actor, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now);
	changed = sqlite3_step(st);
	sqlite3_finalize(st);
	if (changed != SQLITE_DONE ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	dlq_buf_printf(out, "{\"attempt\":%lld,\"outcome\":",
	    (long long)a->valuedouble);
	dlq_buf_json_cstr(out, outcome);
	dlq_buf_addc(out, '}');
	return DLQ_REPLAY_OK;
fail:
	snprintf(why, whylen, "archive: %s", sqlite3_errmsg(db));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return DLQ_REPLAY_ERROR;
}
