/* replaysrv.c - plan, claim and finish replays on the archive. */
#include "replaysrv.h"
#include "sqlite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "archive.h"
#include "cases.h"
#include "proto.h"
#include "duration.h"
#include "replay.h"
#include "signature.h"

#define PLAN_MAX	10000

/* The columns a decision needs. */
#define ROW_COLUMNS	"id, status, class, owner, received_at, timestamp," \
			" replay_count, queue, message_id, evidence," \
			" evidence_at, (SELECT min(unixepoch(json_extract(" \
			" x.value, '$.time'))) FROM json_each(CASE WHEN" \
			" json_valid(x_death) THEN x_death END) x)"

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
	char		 evidence[DLQ_CONTROL_TEXT_MAX + 1]; /* the case's */
	int64_t		 evidence_at;	/* 0: none */
	int64_t		 first_death_ms; /* oldest x-death time; 0: none */
};

/* Column `i` as text into out[n], cut whole characters short when it
 * does not fit (an evidence assigned before its length was checked). */
static void
col(sqlite3_stmt *st, int i, char *out, size_t n)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	size_t len = t ? (size_t)sqlite3_column_bytes(st, i) : 0;

	if (len > n - 1)
		len = dlq_utf8_prefix(t, n - 1);
	memcpy(out, t ? (const char *)t : "", len);
	out[len] = '\0';
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
	dlq_text_copy(r->message_id, sizeof(r->message_id),
	    sqlite3_column_blob(st, 8), (size_t)sqlite3_column_bytes(st, 8));
	col(st, 9, r->evidence, sizeof(r->evidence));
	r->evidence_at = r->evidence[0] ? sqlite3_column_int64(st, 10) : 0;
	r->first_death_ms = sqlite3_column_int64(st, 11) * 1000;
}

static const char *
jstr(const cJSON *req, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, k);

	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* A free text of the request (reason, evidence): NULL when only blank. */
static const char *
jtext(const cJSON *req, const char *k)
{
	return dlq_json_text(cJSON_GetObjectItemCaseSensitive(req, k));
}

/* The reason and evidence a replay records, each within the limit. */
static bool
texts_fit(const cJSON *req, char *why, size_t n)
{
	return dlq_json_text_fits(req, "reason", why, n) &&
	    dlq_json_text_fits(req, "evidence", why, n);
}

static bool
jtrue(const cJSON *req, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, k));
}

/* Age of the message: from its own timestamp when it has one (an OTP's
 * age is counted from when it was sent), else from when it first died
 * (it may have gone round a retry queue for long before its last
 * death), else from when it was archived. */
static int64_t
age_ms(const struct row *r, int64_t now)
{
	int64_t died = r->first_death_ms > 0 &&
	    r->first_death_ms < r->received_at ? r->first_death_ms :
	    r->received_at;

	return now - dlq_replay_born_ms((uint64_t)r->timestamp, died);
}

/* Evidence given with the replay is fresh; else the case's own, as old
 * as its check (-1: none). */
static int64_t
evidence_age_ms(const cJSON *req, const struct row *r, int64_t now)
{
	if (jtext(req, "evidence") != NULL)
		return 0;
	return r->evidence_at > 0 ? now - r->evidence_at : -1;
}

static bool
decide(const struct dlq_config *c, const cJSON *req, const struct row *r,
    struct dlq_replay_policy *p, char *why, size_t n)
{
	struct dlq_replay_facts f;
	int64_t now = dlq_wall_ms();

	dlq_config_replay_policy(c, r->queue, p);
	f.status = r->status;
	f.class = r->class;
	f.owner = r->has_owner ? r->owner : NULL;
	f.age_ms = age_ms(r, now);
	f.replay_count = r->replay_count;
	f.evidence_age_ms = evidence_age_ms(req, r, now);
	return dlq_replay_eligible(p, &f, jtrue(req, "force"), why, n);
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
	bool ok = decide(c, req, r, &p, why, sizeof(why));

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
dlq_sqlite_replay_plan(struct dlq_sqlite *archive, const struct dlq_config *c, const cJSON *req,
    struct dlq_buf *out, char *why, size_t whylen)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(req, "ids"), *e;
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(req, "limit");
	const cJSON *since = cJSON_GetObjectItemCaseSensitive(req, "since_ms");
	sqlite3_stmt *st;
	struct row r;
	int64_t limit = c->replay_limit, since_ms = 0, id;
	int n = 0;

	if ((lim != NULL && !dlq_json_int(lim, 1, PLAN_MAX, &limit)) ||
	    limit > PLAN_MAX) {
		snprintf(why, whylen, "'limit' must be 1..%d", PLAN_MAX);
		return DLQ_USAGE;
	}
	if (since != NULL && !dlq_json_int(since, 0, DLQ_JSON_INT_MAX,
	    &since_ms)) {
		snprintf(why, whylen, "'since_ms' must be a positive integer");
		return DLQ_USAGE;
	}
	if (jstr(req, "class") != NULL && !dlq_class_valid(jstr(req, "class"))) {
		snprintf(why, whylen, "unknown class '%.40s' (%s)", jstr(req,
		    "class"), DLQ_CLASS_LIST);
		return DLQ_USAGE;
	}
	if (jstr(req, "signature") != NULL &&
	    !dlq_signature_id_valid(jstr(req, "signature"))) {
		snprintf(why, whylen, DLQ_SIGNATURE_BAD, jstr(req,
		    "signature"));
		return DLQ_USAGE;
	}
	if (jtrue(req, "force") && jtext(req, "reason") == NULL) {
		snprintf(why, whylen, "--force needs --reason");
		return DLQ_USAGE;
	}
	if (!texts_fit(req, why, whylen))
		return DLQ_USAGE;
	dlq_buf_addc(out, '[');
	if (cJSON_IsArray(ids)) {
		if (sqlite3_prepare_v2(db, "SELECT " ROW_COLUMNS " FROM "
		    "dead_letters WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
			goto fail;
		cJSON_ArrayForEach(e, ids) {
			if (n >= limit)
				break;
			if (!dlq_json_int(e, 1, DLQ_JSON_INT_MAX, &id)) {
				sqlite3_finalize(st);
				snprintf(why, whylen, "'ids' must be positive integers");
				return DLQ_USAGE;
			}
			sqlite3_bind_int64(st, 1, id);
			if (sqlite3_step(st) == SQLITE_ROW) {
				read_row(st, &r);
				plan_item(out, c, req, &r, n++ == 0);
			} else
				dlq_buf_printf(out, "%s{\"id\":%lld,\"eligible\":"
				    "false,\"why\":\"" DLQ_NOT_IN_ARCHIVE "\"}",
				    n++ ? "," : "", (long long)id);
			sqlite3_reset(st);
		}
	} else {
		if (jstr(req, "queue") == NULL &&
		    jstr(req, "signature") == NULL) {
			snprintf(why, whylen, "select ids, a --queue or a "
			    "--signature");
			return DLQ_USAGE;
		}
		if (sqlite3_prepare_v2(db, "SELECT " ROW_COLUMNS " FROM "
		    "dead_letters WHERE (?1 IS NULL OR queue = ?1 OR dlq = ?1) AND"
		    " (?2 IS NULL OR class = ?2) AND (?3 IS NULL OR signature = ?3)"
		    " AND received_at >= ?4 AND status IN ('open', 'assigned',"
		    " 'replaying') ORDER BY id LIMIT ?5", -1, &st, NULL) !=
		    SQLITE_OK)
			goto fail;
		if (jstr(req, "queue"))
			sqlite3_bind_text(st, 1, jstr(req, "queue"), -1,
			    SQLITE_STATIC);
		if (jstr(req, "class"))
			sqlite3_bind_text(st, 2, jstr(req, "class"), -1,
			    SQLITE_STATIC);
		if (jstr(req, "signature"))
			sqlite3_bind_text(st, 3, jstr(req, "signature"), -1,
			    SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, since_ms ? dlq_wall_ms() - since_ms : 0);
		sqlite3_bind_int64(st, 5, limit);
		while (sqlite3_step(st) == SQLITE_ROW) {
			read_row(st, &r);
			plan_item(out, c, req, &r, n++ == 0);
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

/* A text property as JSON; an AMQP short string need not be UTF-8 and
 * may hold a NUL, which JSON text does not carry as they are: then its
 * exact bytes too, as `key`_b64, which the publisher prefers. */
static void
json_text_col(struct dlq_buf *out, const char *key, sqlite3_stmt *st, int i)
{
	const void *v;
	size_t n;

	dlq_buf_printf(out, ",\"%s\":", key);
	if (sqlite3_column_type(st, i) == SQLITE_NULL) {
		dlq_buf_adds(out, "null");
		return;
	}
	v = sqlite3_column_blob(st, i);
	n = (size_t)sqlite3_column_bytes(st, i);
	dlq_buf_json_str(out, v, n);
	if (!dlq_utf8_is_text(v, n)) {
		dlq_buf_printf(out, ",\"%s_b64\":\"", key);
		dlq_buf_base64(out, v, n);
		dlq_buf_addc(out, '"');
	}
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

/* The message to publish: properties, raw headers and body (base64).
 * -1 when its payload was purged: nothing to send. */
static int
message_json(sqlite3_stmt *st, int64_t id, struct dlq_buf *out)
{
	static const char *const props[] = { "message_id", "correlation_id",
	    "type", "content_type", "content_encoding", "app_id", "reply_to",
	    "user_id", NULL };
	int i, rc = -1;

	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_type(st, 12) !=
	    SQLITE_NULL)
		goto out;
	dlq_buf_printf(out, "{\"id\":%lld", (long long)id);
	for (i = 0; props[i] != NULL; i++)
		json_text_col(out, props[i], st, i);
	for (i = 8; i <= 9; i++)
		if (sqlite3_column_type(st, i) != SQLITE_NULL)
			dlq_buf_printf(out, ",\"%s\":%lld", i == 8 ? "timestamp" :
			    "priority", (long long)sqlite3_column_int64(st, i));
	/* a JSON number reads back as a double: a timestamp past 2^53 (one
	 * in nanoseconds) would come back another; the exact one as text */
	if (sqlite3_column_type(st, 8) != SQLITE_NULL)
		dlq_buf_printf(out, ",\"timestamp_u64\":\"%llu\"",
		    (unsigned long long)(uint64_t)sqlite3_column_int64(st, 8));
	dlq_buf_adds(out, ",\"headers_b64\":\"");
	dlq_buf_base64(out, sqlite3_column_blob(st, 10),
	    (size_t)sqlite3_column_bytes(st, 10));
	dlq_buf_adds(out, "\",\"body_b64\":\"");
	dlq_buf_base64(out, sqlite3_column_blob(st, 11),
	    (size_t)sqlite3_column_bytes(st, 11));
	dlq_buf_adds(out, "\"}");
	rc = 0;
out:
	sqlite3_reset(st);
	return rc;
}

static void
refusal(struct dlq_buf *refused, int64_t id, const char *why)
{
	dlq_buf_printf(refused, "%s{\"id\":%lld,\"why\":", refused->len ? "," :
	    "", (long long)id);
	dlq_buf_json_cstr(refused, why);
	dlq_buf_addc(refused, '}');
}

/* Claims one record inside the caller's transaction: appends a claim to
 * `claims`, or a refusal to `refused` (then nothing changed). -1 on an
 * archive error. */
static int
claim_one(sqlite3 *db, struct claim_sql *q, const struct dlq_config *c,
    const cJSON *req, const char *actor, int64_t id, struct dlq_buf *claims,
    struct dlq_buf *refused)
{
	struct dlq_replay_policy p;
	struct dlq_buf policy, message, evidence;
	const char *ex, *rk;
	char tgt[600], why[256], ago[32];
	struct row r;
	int64_t now = dlq_wall_ms();
	int rc = -1;

	sqlite3_bind_int64(q->row, 1, id);
	if (sqlite3_step(q->row) != SQLITE_ROW) {
		sqlite3_reset(q->row);
		refusal(refused, id, DLQ_NOT_IN_ARCHIVE);
		return 1;
	}
	read_row(q->row, &r);
	sqlite3_reset(q->row);
	if (!decide(c, req, &r, &p, why, sizeof(why))) {
		refusal(refused, id, why);
		return 1;
	}
	dlq_buf_init(&message);
	if (message_json(q->message, id, &message) == -1) {
		dlq_buf_release(&message);
		refusal(refused, id, "its payload was purged: nothing to replay");
		return 1;
	}
	/* the evidence this attempt relied on: given now, or the case's */
	dlq_buf_init(&evidence);
	if (jtext(req, "evidence") != NULL)
		dlq_buf_adds(&evidence, jtext(req, "evidence"));
	else if (r.evidence_at > 0)
		dlq_buf_printf(&evidence, "%s (case evidence, checked %s ago)",
		    r.evidence, dlq_format_age(now - r.evidence_at, ago,
		    sizeof(ago)));
	else if (r.evidence[0] != '\0')	/* recorded before its time was */
		dlq_buf_printf(&evidence, "%s (case evidence, checked at an "
		    "unknown time)", r.evidence);
	dlq_buf_init(&policy);
	dlq_replay_policy_json(&p, &policy);
	target(req, &r, &ex, &rk);
	dlq_replay_target_name(ex, rk, tgt, sizeof(tgt));
	sqlite3_bind_int64(q->mark, 1, id);
	if (step_done(q->mark) == -1)
		goto out;
	sqlite3_bind_int64(q->attempt, 1, id);
	sqlite3_bind_text(q->attempt, 2, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(q->attempt, 3, jtext(req, "reason"), -1, SQLITE_STATIC);
	if (evidence.len > 0)
		sqlite3_bind_text(q->attempt, 4, evidence.data,
		    (int)evidence.len, SQLITE_STATIC);
	sqlite3_bind_text(q->attempt, 5, policy.data, (int)policy.len,
	    SQLITE_STATIC);
	sqlite3_bind_int64(q->attempt, 6, now);
	sqlite3_bind_text(q->attempt, 7, tgt, -1, SQLITE_STATIC);
	if (step_done(q->attempt) == -1)
		goto out;
	dlq_buf_printf(claims, "%s{\"id\":%lld,\"attempt\":%lld,"
	    "\"replay_count\":%lld,\"actor\":", claims->len ? "," : "",
	    (long long)id, (long long)sqlite3_last_insert_rowid(db),
	    (long long)r.replay_count + 1);
	dlq_buf_json_cstr(claims, actor);
	dlq_buf_adds(claims, ",\"exchange\":");
	dlq_buf_json_cstr(claims, ex);
	dlq_buf_adds(claims, ",\"routing_key\":");
	dlq_buf_json_cstr(claims, rk);
	dlq_buf_adds(claims, ",\"message\":");
	dlq_buf_add(claims, message.data, message.len);
	dlq_buf_addc(claims, '}');
	rc = 0;
out:
	dlq_buf_release(&evidence);
	dlq_buf_release(&policy);
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

	if (!cJSON_IsArray(ids) || cJSON_GetArraySize(ids) < 1 ||
	    cJSON_GetArraySize(ids) > DLQ_REPLAY_CLAIM_MAX ||
	    jtext(req, "reason") == NULL) {
		snprintf(why, whylen, "a claim names 1 to %d ids and a reason",
		    DLQ_REPLAY_CLAIM_MAX);
		return DLQ_USAGE;
	}
	if (!texts_fit(req, why, whylen))
		return DLQ_USAGE;
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
			dlq_buf_printf(&deferred, "%s%lld", deferred.len ? "," :
			    "", (long long)id);
		else if (claim_one(db, &q, c, req, actor, id, &claims,
		    &refused) == -1)
			goto fail;
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	claim_sql_free(&q);
	dlq_buf_adds(out, "{\"claims\":[");
	dlq_buf_add(out, claims.data ? claims.data : "", claims.len);
	dlq_buf_adds(out, "],\"refused\":[");
	dlq_buf_add(out, refused.data ? refused.data : "", refused.len);
	dlq_buf_adds(out, "],\"deferred\":[");
	dlq_buf_add(out, deferred.data ? deferred.data : "", deferred.len);
	dlq_buf_adds(out, "]}");
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

static bool
valid_outcome(const char *o)
{
	return o != NULL && (strcmp(o, "published") == 0 ||
	    strcmp(o, "failed") == 0 || strcmp(o, "unknown") == 0);
}

int
dlq_sqlite_replay_finish(struct dlq_sqlite *archive, const cJSON *req, const char *actor,
    struct dlq_buf *out, char *why, size_t whylen)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const cJSON *results = cJSON_GetObjectItemCaseSensitive(req, "results");
	const cJSON *e, *a;
	struct finish_sql q;
	int done = 0, rc;

	if (!cJSON_IsArray(results) || cJSON_GetArraySize(results) < 1 ||
	    cJSON_GetArraySize(results) > DLQ_REPLAY_CLAIM_MAX) {
		snprintf(why, whylen, "finish needs 'results': [{attempt, outcome "
		    "(published, failed or unknown), detail}]");
		return DLQ_USAGE;
	}
	cJSON_ArrayForEach(e, results) {
		int64_t attempt;

		a = cJSON_GetObjectItemCaseSensitive(e, "attempt");
		if (!dlq_json_int(a, 1, DLQ_JSON_INT_MAX, &attempt) ||
		    !valid_outcome(jstr(e, "outcome"))) {
			snprintf(why, whylen, "each result needs 'attempt' and an "
			    "'outcome' (published, failed or unknown)");
			return DLQ_USAGE;
		}
	}
	if (finish_sql_prepare(db, &q) == -1) {
		snprintf(why, whylen, "archive: %s",
		    dlq_sqlite_db_errmsg(db));
		return DLQ_ERROR;
	}
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	cJSON_ArrayForEach(e, results) {
		rc = finish_one(db, &q, (int64_t)cJSON_GetObjectItem(e,
		    "attempt")->valuedouble, jstr(e, "outcome"), jstr(e, "detail"),
		    actor);
		if (rc == -1)
			goto fail;
		done += rc;
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	finish_sql_free(&q);
	dlq_buf_printf(out, "{\"finished\":%d}", done);
	if (done != cJSON_GetArraySize(results)) {
		snprintf(why, whylen, "%d of %d attempts were not open", 
		    cJSON_GetArraySize(results) - done, cJSON_GetArraySize(results));
		return DLQ_NOT_FOUND;
	}
	return DLQ_OK;
fail:
	snprintf(why, whylen, "archive: %s",
	    dlq_sqlite_db_errmsg(db));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	finish_sql_free(&q);
	return DLQ_ERROR;
}
