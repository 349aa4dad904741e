/* cases.c - the operator's queries and case mutations on the archive. */
#include "cases.h"
#include "sqlite.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "archive.h"
#include "refusal.h"
#include "suggest.h"

#define UNRESOLVED	"('open','assigned','replaying')"
#define STR(x)		#x
#define XSTR(x)		STR(x)
#define PREVIEW		XSTR(DLQ_PREVIEW_BYTES)

enum ptype { P_NULL, P_TEXT, P_INT };

struct param {
	enum ptype	 t;
	const char	*s;
	int64_t		 i;
};

#define TEXT(v)	((struct param){ (v) ? P_TEXT : P_NULL, (v), 0 })
#define INT(v)	((struct param){ P_INT, NULL, (v) })
#define INT_OR_NULL(v)	((struct param){ (v) ? P_INT : P_NULL, NULL, (v) })

static int
fail(sqlite3 *db, struct dlq_buf *out)
{
	dlq_buf_reset(out);
	dlq_buf_adds(out, dlq_sqlite_db_errmsg(db));
	return DLQ_ERROR;
}

static sqlite3_stmt *
prepare(sqlite3 *db, const char *sql, const struct param *p, int n)
{
	sqlite3_stmt *st;
	int i;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	for (i = 0; i < n; i++) {
		if (p[i].t == P_TEXT)
			sqlite3_bind_text(st, i + 1, p[i].s, -1, SQLITE_STATIC);
		else if (p[i].t == P_INT)
			sqlite3_bind_int64(st, i + 1, p[i].i);
	}
	return st;
}

/* Runs a query whose one row and column is JSON text; appends it, valid
 * UTF-8 without a NUL in a value (json_object() copies a stored text's
 * bytes as they are, and escapes a NUL). */
static int
query_json(sqlite3 *db, const char *sql, const struct param *p, int n,
    struct dlq_buf *out)
{
	sqlite3_stmt *st = prepare(db, sql, p, n);
	int rc;

	if (st == NULL)
		return fail(db, out);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		dlq_buf_add_json_text(out, sqlite3_column_text(st, 0),
		    (size_t)sqlite3_column_bytes(st, 0));
	else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		rc = SQLITE_DONE;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return fail(db, out);
	return rc == SQLITE_ROW ? DLQ_OK : DLQ_NOT_FOUND;
}

/* A list: an empty one is an answer, not "not found". */
static int
query_list(sqlite3 *db, const char *sql, const struct param *p, int n,
    struct dlq_buf *out)
{
	int rc = query_json(db, sql, p, n, out);

	return rc == DLQ_NOT_FOUND ? DLQ_OK : rc;
}

static int
exec_changes(sqlite3 *db, const char *sql, const struct param *p, int n,
    int *changes)
{
	sqlite3_stmt *st = prepare(db, sql, p, n);
	int rc;

	if (st == NULL)
		return -1;
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	*changes = sqlite3_changes(db);
	return rc == SQLITE_DONE ? 0 : -1;
}

#define SUMMARY_FIELDS							\
	"'id', id, 'received_at', received_at, 'dlq', dlq, 'queue', queue,"	\
	" 'message_id', message_id, 'reason', reason, 'class', class,"	\
	" 'signature', signature, 'status', status, 'owner', owner,"	\
	" 'error', dlq_mask(error), 'retry_count', retry_count,"		\
	" 'replay_count', replay_count, 'payload_bytes', payload_bytes"

/* A discarded record that a reopen may take back (of `dead_letters`):
 * its payload kept, and no replay of it that may have arrived (an
 * outcome unknown when it was dropped, or published): sending it again
 * could send it twice. */
#define REOPENABLE	"(status = 'discarded' AND purged_at IS NULL AND"	\
	" NOT EXISTS (SELECT 1 FROM attempts WHERE dead_letter_id ="	\
	" dead_letters.id AND outcome IN ('unknown', 'published')))"

int
dlq_sqlite_cases_list(struct dlq_sqlite *archive, const struct dlq_list_filter *f,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { TEXT(f->queue), TEXT(f->status),
	    TEXT(f->class), TEXT(f->signature), INT(f->since_ms),
	    INT(f->limit), TEXT(f->message_id), TEXT(f->correlation_id),
	    INT(f->before_id > 0 ? f->before_id : INT64_MAX), TEXT(f->owner),
	    INT(f->reopenable), TEXT(f->text), INT(f->text_in_error),
	    INT(f->preview) };

	/* id < ?9 always: a range of the rowid, where the next page starts */
	return query_list(db, "SELECT json_group_array(json_object("
	    SUMMARY_FIELDS ", 'hint', COALESCE(hint, (SELECT text FROM hints"
	    " WHERE hints.id = hint_id)), 'payload_preview', CASE WHEN ?14"
	    " THEN CAST(substr(payload, 1, " PREVIEW ") AS TEXT) END))"
	    " FROM (SELECT * FROM dead_letters WHERE"
	    " (?1 IS NULL OR queue = ?1 OR dlq = ?1) AND"
	    " (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR class = ?3) AND"
	    " (?4 IS NULL OR signature = ?4) AND received_at >= ?5 AND"
	    " (?7 IS NULL OR message_id = ?7) AND"
	    " (?8 IS NULL OR correlation_id = ?8) AND"
	    " (?10 IS NULL OR owner = ?10) AND (?11 = 0 OR " REOPENABLE ")"
	    " AND (?12 IS NULL OR instr(message_id, ?12) > 0 OR"
	    " instr(correlation_id, ?12) > 0 OR"
	    " (?13 AND instr(dlq_mask(error), ?12) > 0))"
	    " AND id < ?9 ORDER BY id DESC LIMIT ?6)", p, 14, out);
}

int
dlq_sqlite_cases_version(struct dlq_sqlite *archive, struct dlq_buf *out)
{
	return query_json(dlq_sqlite_db(archive), "SELECT json_array((SELECT"
	    " max(id) FROM dead_letters), (SELECT max(id) FROM audit))", NULL,
	    0, out);
}

/* The payload as a JSON field: text when it is printable UTF-8, else
 * base64. Only for the operator role. */
static void
add_payload(sqlite3 *db, int64_t id, struct dlq_buf *out)
{
	const struct param p[] = { INT(id) };
	sqlite3_stmt *st = prepare(db, "SELECT payload FROM dead_letters "
	    "WHERE id = ?1", p, 1);
	const unsigned char *b;
	size_t n;

	if (st == NULL)
		return;
	if (sqlite3_step(st) == SQLITE_ROW) {
		b = sqlite3_column_blob(st, 0);
		n = (size_t)sqlite3_column_bytes(st, 0);
		if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
			dlq_buf_adds(out, ",\"payload\":null");
		} else if (dlq_utf8_is_text(b, n)) {
			dlq_buf_adds(out, ",\"payload\":");
			dlq_buf_json_str(out, b, n);
		} else {
			dlq_buf_adds(out, ",\"payload_base64\":\"");
			dlq_buf_base64(out, b, n);
			dlq_buf_addc(out, '"');
		}
	}
	sqlite3_finalize(st);
}

/* an audit entry of dlqctl's own (`replay --from-queue`, refusals) */
#define NOTE(u)	"(" u ".command = 'audit_note' AND json_valid(" u ".args))"
/* a change by ids that left some as they were, and said why (control.c) */
#define BY_IDS(u)	"(" u ".command IN ('assign', 'drop', 'reopen') AND"	\
	" json_valid(" u ".args) AND json_type(" u ".args, '$.refused') ="	\
	" 'array')"
/* why the record `d` was refused by the audit entry `u` */
#define REFUSAL(u)	"(SELECT json_extract(r.value, '$.why') FROM"	\
	" json_each(" u ".args, '$.refused') r WHERE CASE WHEN r.type ="	\
	" 'object' THEN json_extract(r.value, '$.id') END = d.id)"

int
dlq_sqlite_cases_show(struct dlq_sqlite *archive, int64_t id, bool payload, struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { INT(id), INT(payload) };
	size_t start = out->len;
	int rc;

	rc = query_json(db, "SELECT json_object(" SUMMARY_FIELDS ","
	    " 'exchange', exchange, 'routing_keys', json(routing_keys),"
	    " 'correlation_id', correlation_id, 'type', type,"
	    " 'content_type', content_type, 'content_encoding', content_encoding,"
	    " 'timestamp', timestamp, 'app_id', app_id,"
	    " 'delivery_mode', delivery_mode, 'priority', priority,"
	    " 'expiration', expiration, 'user_id', user_id, 'reply_to', reply_to,"
	    " 'x_death', json(x_death), 'delivery_count', delivery_count,"
	    " 'hint', COALESCE(hint, (SELECT text FROM hints"
	    "   WHERE id = d.hint_id)), 'payload_sha256', payload_sha256,"
	    " 'decision', decision, 'evidence', evidence,"
	    " 'evidence_at', evidence_at, 'redrive_note', redrive_note,"
	    " 'escalate_at', escalate_at, 'assigned_by', assigned_by,"
	    " 'assigned_at', assigned_at, 'resolved_by', resolved_by,"
	    " 'resolved_at', resolved_at, 'resolution', resolution,"
	    " 'replay_of', replay_of, 'purged_at', purged_at,"
	    " 'headers', CASE WHEN ?2 THEN json(COALESCE(headers_json,"
	    "   dlq_headers_json(headers_amqp))) END,"
	    " 'attempts', (SELECT json_group_array(json_object('id', a.id,"
	    "   'actor', a.actor, 'reason', a.reason, 'evidence', a.evidence,"
	    "   'policy', json(a.policy), 'checked_at', a.checked_at,"
	    "   'target', a.target, 'started_at', a.started_at,"
	    "   'finished_at', a.finished_at, 'outcome', a.outcome,"
	    "   'detail', a.detail)) FROM attempts a"
	    "   WHERE a.dead_letter_id = d.id ORDER BY a.id),"
	    /* a note says what it is, and a refusal why this one; a
	     * change by ids its result for this record, and its reason */
	    " 'audit', (SELECT json_group_array(json_object('at', u.at,"
	    "   'actor', u.actor, 'command', u.command,"
	    "   'result', CASE WHEN " BY_IDS("u") " THEN coalesce("
	    "    'not changed: ' || " REFUSAL("u") ", 'ok') ELSE u.result END,"
	    "   'reason', CASE WHEN u.command <> 'audit_note' AND"
	    "    json_valid(u.args) THEN json_extract(u.args, '$.reason') END,"
	    "   'what', CASE WHEN " NOTE("u") " THEN json_extract(u.args,"
	    "    '$.what') END,"
	    "   'why', CASE WHEN " NOTE("u") " THEN " REFUSAL("u") " END))"
	    "   FROM audit u WHERE u.id IN (SELECT audit_id FROM audit_ids"
	    "   WHERE dead_letter_id = d.id) ORDER BY u.id),"
	    /* every death of this logical message, linked by x-replay-of */
	    " 'lineage', (WITH RECURSIVE"
	    "   up(id, replay_of) AS (SELECT id, replay_of FROM dead_letters"
	    "    WHERE id = ?1 UNION SELECT x.id, x.replay_of FROM dead_letters x"
	    "    JOIN up ON x.id = up.replay_of),"
	    "   down(id) AS (SELECT id FROM dead_letters WHERE id = ?1 UNION"
	    "    SELECT x.id FROM dead_letters x JOIN down ON x.replay_of ="
	    "    down.id)"
	    "   SELECT json_group_array(json_object('id', l.id, 'received_at',"
	    "    l.received_at, 'reason', l.reason, 'status', l.status,"
	    "    'replay_count', l.replay_count, 'replay_of', l.replay_of))"
	    "   FROM (SELECT * FROM dead_letters WHERE id IN (SELECT id FROM up"
	    "    UNION SELECT id FROM down) ORDER BY id) l))"
	    " FROM dead_letters d WHERE id = ?1", p, 2, out);
	if (rc != DLQ_OK || !payload || out->len == start)
		return rc;
	out->len--;		/* reopen the object: add the payload */
	add_payload(db, id, out);
	dlq_buf_addc(out, '}');
	return DLQ_OK;
}

/* Time from dead-lettering to owner at the `pct` percentile. */
#define OWNER_PCT(pct) \
	"(SELECT assigned_at - received_at FROM dead_letters" \
	" WHERE assigned_at IS NOT NULL ORDER BY 1 LIMIT 1 OFFSET" \
	" (SELECT count(*) * " #pct " / 100 FROM dead_letters" \
	"  WHERE assigned_at IS NOT NULL))"

int
dlq_sqlite_cases_stats(struct dlq_sqlite *archive, int64_t now_ms, int64_t owner_sla_ms,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	int64_t unowned = dlq_sqlite_unowned_past_sla(archive, now_ms,
	    owner_sla_ms);
	const struct param p[] = { INT(now_ms), INT(owner_sla_ms),
	    INT(unowned) };

	/* counts from the tallies, the oldest by a seek per status, the
	 * cases past the SLA by the oldest first: with a million open
	 * records as with ten */
	return query_json(db, "SELECT json_object("
	    " 'total', (SELECT coalesce(sum(n), 0) FROM tallies),"
	    " 'unresolved', (SELECT coalesce(sum(n), 0) FROM tallies"
	    "   WHERE status IN " UNRESOLVED "),"
	    " 'by_queue', (SELECT json_group_object(queue, c) FROM"
	    "   (SELECT queue, sum(n) c FROM tallies WHERE status IN "
	    UNRESOLVED " GROUP BY queue HAVING c > 0 ORDER BY c DESC)),"
	    " 'by_class', (SELECT json_group_object(class, c) FROM"
	    "   (SELECT class, sum(n) c FROM tallies WHERE status IN "
	    UNRESOLVED " GROUP BY class HAVING c > 0 ORDER BY c DESC)),"
	    /* what each owner still has to decide: the 50 with the most */
	    " 'by_owner', (SELECT json_group_object(owner, n) FROM"
	    "   (SELECT owner, count(*) n FROM dead_letters WHERE status ="
	    "   'assigned' GROUP BY owner ORDER BY n DESC, owner LIMIT 50)),"
	    " 'by_status', (SELECT json_group_object(status, c) FROM"
	    "   (SELECT status, sum(n) c FROM tallies GROUP BY status"
	    "   HAVING c > 0)),"
	    " 'oldest_unresolved_age_ms', (SELECT ?1 - min(t) FROM"
	    "   (" OLDEST("open") " UNION ALL " OLDEST("assigned") " UNION ALL "
	    OLDEST("replaying") ")),"
	    /* to the minute: the arrivals are kept by minute */
	    " 'new_last_hour', (SELECT coalesce(sum(n), 0) FROM arrivals"
	    "   WHERE minute >= (?1 - 3600000) / 60000),"
	    " 'new_last_day', (SELECT coalesce(sum(n), 0) FROM arrivals"
	    "   WHERE minute >= (?1 - 86400000) / 60000),"
	    " 'replaying_unknown', (SELECT coalesce(sum(n), 0) FROM tallies"
	    "   WHERE status = 'replaying'),"
	    " 'repeated_cycles', (SELECT count(*) FROM dead_letters"
	    "   WHERE replay_of IS NOT NULL),"
	    " 'payloads_purged', (SELECT coalesce(sum(n), 0) FROM tallies"
	    "   WHERE purged = 1),"
	    " 'escalations', (SELECT json_object("
	    "   'past_escalate_at', (SELECT count(*) FROM dead_letters"
	    "     WHERE status = 'assigned' AND escalate_at < ?1),"
	    "   'unowned_past_sla', ?3,"
	    "   'owner_sla_ms', ?2,"
	    /* the 20 most overdue: of the assigned past escalate-at (few)
	     * and of the open, the 20 oldest (a walk of the status index
	     * from its oldest, not a sort of every open record) */
	    "   'cases', (SELECT json_group_array(json_object('id', id,"
	    "     'queue', queue, 'kind', k, 'owner', owner, 'decision',"
	    "     decision, 'overdue_ms', late)) FROM"
	    "     (SELECT * FROM (SELECT id, queue, owner, decision,"
	    "      'no_decision' k, ?1 - escalate_at late FROM dead_letters"
	    "      WHERE status = 'assigned' AND escalate_at < ?1"
	    "      UNION ALL SELECT * FROM (SELECT id, queue, owner, decision,"
	    "      'no_owner' k, ?1 - received_at - ?2 late FROM dead_letters"
	    "      WHERE ?2 > 0 AND status = 'open' AND owner IS NULL AND"
	    "      received_at < ?1 - ?2 ORDER BY received_at LIMIT 20))"
	    "      ORDER BY late DESC LIMIT 20)))),"
	    " 'decisions', (SELECT json_object("
	    "   'time_to_owner_ms', json_object("
	    "     'count', (SELECT count(*) FROM dead_letters"
	    "       WHERE assigned_at IS NOT NULL),"
	    "     'p50', " OWNER_PCT(50) ", 'p90', " OWNER_PCT(90) ","
	    "     'max', (SELECT max(assigned_at - received_at)"
	    "       FROM dead_letters WHERE assigned_at IS NOT NULL)),"
	    "   'oldest_awaiting_decision_age_ms', (SELECT ?1 - min(t) FROM"
	    "     (" OLDEST("open") " UNION ALL " OLDEST("assigned") ")),"
	    "   'replays_without_evidence', (SELECT count(*) FROM attempts"
	    "     WHERE evidence IS NULL),"
	    "   'max_cycles_per_message', (SELECT coalesce(max(replay_count), 0)"
	    "     FROM dead_letters WHERE replay_of IS NOT NULL))),"
	    " 'redrive', (SELECT json_object("
	    "   'outcomes', (SELECT json_group_object(outcome, n) FROM"
	    "     (SELECT outcome, count(*) n FROM attempts"
	    "      WHERE actor = '" DLQ_REDRIVE_ACTOR "' GROUP BY outcome)),"
	    "   'left_for_humans', (SELECT count(*) FROM dead_letters INDEXED BY"
	    "     dead_letters_redrive_stopped WHERE redrive_stopped_at IS NOT"
	    "     NULL AND status IN ('open', 'assigned')),"
	    "   'circuits_open', (SELECT json_group_array(queue) FROM"
	    "     redrive_circuits WHERE resumed_at IS NULL))))", p, 3, out);
}

int
dlq_sqlite_cases_traffic(struct dlq_sqlite *archive, int64_t since_ms, int64_t limit,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { INT(since_ms), INT(limit) };

	return query_list(db, "SELECT json_group_array(json_object("
	    " 'queue', queue, 'dead_lettered', n)) FROM"
	    " (SELECT queue, sum(n) AS n FROM arrivals"
	    "  WHERE minute >= ?1 / 60000 GROUP BY queue ORDER BY 2 DESC"
	    "  LIMIT ?2)", p, 2, out);
}

/* One row per failure signature of the groups `g` (signature, sid: its
 * sample, lid: its last record, n, u: unresolved, fid: the signature's
 * first record ever), in the columns of enum dlq_group_col; `error` the
 * sample's error text (d.error), masked or not yet. */
#define GROUP_ROWS(error, g) \
	"SELECT g.signature, g.sid, g.n, g.u," \
	" CASE WHEN g.fid = g.sid THEN d.received_at ELSE" \
	" (SELECT received_at FROM dead_letters WHERE id = g.fid) END f," \
	" e.received_at l, d.queue, d.reason, d.class," \
	" " error " error, d.message_id, d.dlq FROM " g \
	" JOIN dead_letters d ON d.id = g.sid" \
	" JOIN dead_letters e ON e.id = g.lid"
/* All time: counted from the signature index alone (its entries hold the
 * rowid): ids grow with time, so the group's first record is its sample
 * and first seen, its last is last seen. The unresolved come from the
 * status index. A signature includes the source queue, so the sample's
 * queue is the group's. */
#define GROUPS_ALL \
	"(SELECT a.signature, a.sid, a.sid fid, a.lid, a.n," \
	" coalesce(o.n, 0) u FROM" \
	" (SELECT signature, min(id) sid, max(id) lid, count(*) n" \
	"  FROM dead_letters GROUP BY signature) a" \
	" LEFT JOIN (SELECT signature, count(*) n FROM dead_letters" \
	"  WHERE status IN " UNRESOLVED " GROUP BY signature) o" \
	" ON o.signature = a.signature) g"
/* Since a time (?3): the records after the newest one received before it
 * (ids grow with time: a range of the rowid, read from the newest back,
 * NOT INDEXED so that the signature index does not make it visit every
 * record), each group's sample its first in the window; first seen is
 * the signature's first record ever, so a failure that began in the
 * window shows it. */
#define GROUPS_SINCE \
	"(SELECT signature, min(id) sid, max(id) lid, count(*) n," \
	" sum(status IN " UNRESOLVED ") u," \
	" (SELECT min(id) FROM dead_letters x" \
	"  WHERE x.signature = w.signature) fid" \
	" FROM dead_letters w NOT INDEXED WHERE id > coalesce((SELECT id" \
	"  FROM dead_letters WHERE received_at < ?3 ORDER BY id DESC" \
	"  LIMIT 1), 0) AND received_at >= ?3" \
	" GROUP BY signature) g"
/* The largest ?2 groups of `rows` of queue ?1 and class ?4 (NULL: any)
 * as JSON, their error texts masked (only theirs: not every group's). */
#define GROUPS_JSON(rows) \
	"SELECT json_group_array(json_object(" \
	" 'signature', signature, 'queue', queue, 'reason', reason," \
	" 'class', class, 'error', dlq_mask(error), 'count', n," \
	" 'unresolved', u," \
	" 'first_seen', f, 'last_seen', l, 'sample_id', sid," \
	" 'sample_message_id', message_id)) FROM (" rows \
	" WHERE (?1 IS NULL OR d.queue = ?1 OR d.dlq = ?1)" \
	" AND (?4 IS NULL OR d.class = ?4)" \
	" ORDER BY g.n DESC LIMIT ?2)"

int
dlq_sqlite_cases_groups(struct dlq_sqlite *archive, const char *queue, const char *class,
    int64_t since_ms, int64_t limit, struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { TEXT(queue), INT(limit), INT(since_ms),
		TEXT(class) };

	return query_list(db, since_ms == 0 ?
	    GROUPS_JSON(GROUP_ROWS("d.error", GROUPS_ALL)) :
	    GROUPS_JSON(GROUP_ROWS("d.error", GROUPS_SINCE)), p, 4, out);
}

sqlite3_stmt *
dlq_cases_group_rows(sqlite3 *db, int64_t since_ms)
{
	const struct param p[] = { TEXT(NULL), TEXT(NULL), INT(since_ms) };

	if (since_ms == 0)
		return prepare(db, GROUP_ROWS("dlq_mask(d.error)", GROUPS_ALL)
		    " ORDER BY g.n DESC, g.sid", p, 0);
	return prepare(db, GROUP_ROWS("dlq_mask(d.error)", GROUPS_SINCE)
	    " ORDER BY g.n DESC, g.sid", p, 3);
}

/* Why `id` was not changed: it does not exist, or its status forbids. */
static const char *
why_unchanged(sqlite3 *db, int64_t id, char *buf, size_t n)
{
	const struct param p[] = { INT(id) };
	sqlite3_stmt *st = prepare(db, "SELECT status FROM dead_letters "
	    "WHERE id = ?1", p, 1);
	const char *why = DLQ_NOT_IN_ARCHIVE;

	if (st != NULL && sqlite3_step(st) == SQLITE_ROW)
		why = dlq_refusal(buf, n, dlq_sqlite_text(st, 0), false, NULL);
	sqlite3_finalize(st);
	return why;
}

/* Why a discarded record `id` was not reopened: its status, its payload
 * purged, or a replay of it that may have arrived (an outcome unknown
 * when it was dropped, or published): sending it again would send it
 * twice. */
static const char *
why_not_reopened(sqlite3 *db, int64_t id, char *buf, size_t n)
{
	const struct param p[] = { INT(id) };
	sqlite3_stmt *st = prepare(db, "SELECT status, purged_at IS NOT NULL,"
	    " (SELECT outcome FROM attempts WHERE dead_letter_id = ?1 AND"
	    " outcome IN ('unknown', 'published') ORDER BY id DESC LIMIT 1)"
	    " FROM dead_letters WHERE id = ?1", p, 1);
	const char *why = DLQ_NOT_IN_ARCHIVE;

	if (st != NULL && sqlite3_step(st) == SQLITE_ROW)
		why = dlq_refusal(buf, n, dlq_sqlite_text(st, 0), true,
		    (const char *)sqlite3_column_text(st, 2));
	sqlite3_finalize(st);
	return why;
}

/* Runs `sql` (its last parameter the id) for each id, in one transaction,
 * and answers per id, with `why` for an id not changed. */
static int
mutate(sqlite3 *db, const char *sql, struct param *p, int n,
    const int64_t *ids, size_t n_ids,
    const char *(*why_not)(sqlite3 *, int64_t, char *, size_t),
    struct dlq_buf *out)
{
	size_t i, changed = 0;
	bool missing = false, refused = false;
	char why[128];
	const char *w;
	int ch;

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return fail(db, out);
	dlq_buf_adds(out, "{\"results\":[");
	for (i = 0; i < n_ids; i++) {
		p[n - 1] = INT(ids[i]);
		if (exec_changes(db, sql, p, n, &ch) == -1) {
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
			return fail(db, out);
		}
		dlq_buf_printf(out, "%s{\"id\":%lld,\"ok\":%s", i ? "," : "",
		    (long long)ids[i], ch ? "true" : "false");
		if (ch == 0) {
			w = why_not(db, ids[i], why, sizeof(why));
			missing |= w != why;	/* not a status */
			refused |= w == why;
			dlq_buf_adds(out, ",\"error\":");
			dlq_buf_json_cstr(out, w);
		} else
			changed++;
		dlq_buf_addc(out, '}');
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return fail(db, out);
	}
	dlq_buf_printf(out, "],\"changed\":%zu}", changed);
	return missing ? DLQ_NOT_FOUND : refused ? DLQ_REFUSED :
	    DLQ_OK;
}

int
dlq_sqlite_cases_assign(struct dlq_sqlite *archive, const int64_t *ids, size_t n,
    const char *owner, const char *decision, const char *evidence,
    int64_t escalate_at_ms, const char *actor, int64_t now_ms,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct param p[] = { TEXT(owner), TEXT(decision), TEXT(evidence),
	    INT_OR_NULL(escalate_at_ms), TEXT(actor), INT(now_ms), INT(0) };

	return mutate(db, "UPDATE dead_letters SET status = 'assigned',"
	    " owner = ?1, decision = ?2, evidence = coalesce(?3, evidence),"
	    " evidence_at = CASE WHEN ?3 IS NULL THEN evidence_at ELSE ?6 END,"
	    " escalate_at = ?4, assigned_by = ?5, assigned_at = ?6"
	    " WHERE id = ?7 AND status IN ('open', 'assigned')", p, 7, ids, n,
	    why_unchanged, out);
}

int
dlq_sqlite_cases_drop(struct dlq_sqlite *archive, const int64_t *ids, size_t n, const char *reason,
    const char *actor, int64_t now_ms, struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct param p[] = { TEXT(reason), TEXT(actor), INT(now_ms), INT(0) };

	/* 'replaying': a replay whose outcome is unknown, found to have
	 * arrived: closed without sending it again */
	return mutate(db, "UPDATE dead_letters SET status = 'discarded',"
	    " resolution = ?1, resolved_by = ?2, resolved_at = ?3"
	    " WHERE id = ?4 AND status IN ('open', 'assigned', 'replaying')",
	    p, 4, ids, n, why_unchanged, out);
}

int
dlq_sqlite_cases_reopen(struct dlq_sqlite *archive, const int64_t *ids, size_t n,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct param p[] = { INT(0) };

	/* back to what it was before the drop: assigned when it has an
	 * owner; the drop and the reopen, with their reasons, stay in
	 * the audit */
	return mutate(db, "UPDATE dead_letters SET status = CASE WHEN owner"
	    " IS NULL THEN 'open' ELSE 'assigned' END, resolution = NULL,"
	    " resolved_by = NULL, resolved_at = NULL"
	    " WHERE id = ?1 AND " REOPENABLE, p, 1, ids, n,
	    why_not_reopened, out);
}

#define PURGEABLE	" status IN ('replayed', 'discarded') AND received_at < ?1" \
			" AND purged_at IS NULL"

int
dlq_sqlite_cases_purgeable(struct dlq_sqlite *archive, int64_t cutoff_ms, struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { INT(cutoff_ms) };

	return query_json(db, "SELECT json_object('purgeable', count(*),"
	    " 'before_ms', ?1) FROM dead_letters WHERE" PURGEABLE, p, 1, out);
}

int
dlq_sqlite_cases_purge(struct dlq_sqlite *archive, int64_t cutoff_ms, int64_t now_ms,
    dlq_purge_go_on go_on, void *arg, struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	struct param p[] = { INT(cutoff_ms), INT(now_ms), INT(0), INT(0) };
	const struct timespec pause = { 0, 2 * 1000 * 1000 };
	sqlite3_stmt *st;
	int64_t lo, hi, from;
	long long purged = 0;
	int changes, rc;

	/* the id range to walk, read outside any write */
	if ((st = prepare(db, "SELECT min(id), max(id) FROM dead_letters WHERE"
	    PURGEABLE, p, 1)) == NULL)
		return fail(db, out);
	rc = sqlite3_step(st);
	lo = sqlite3_column_int64(st, 0);
	hi = sqlite3_column_int64(st, 1);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_NULL)
		hi = lo - 1;	/* nothing to purge */
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return fail(db, out);
	for (from = lo; from <= hi; from += DLQ_PURGE_CHUNK) {
		p[2] = INT(from);
		p[3] = INT(from + DLQ_PURGE_CHUNK - 1);
		dlq_archive_writer_lock();
		/* by rowid: the status index would walk every purgeable
		 * record for each chunk */
		rc = exec_changes(db, "UPDATE dead_letters NOT INDEXED SET"
		    " payload = NULL, headers_json = NULL, headers_amqp = NULL,"
		    " purged_at = ?2"
		    " WHERE id BETWEEN ?3 AND ?4 AND" PURGEABLE, p, 4, &changes);
		dlq_archive_writer_unlock();
		if (rc == -1)
			return fail(db, out);
		purged += changes;
		if (from + DLQ_PURGE_CHUNK > hi)
			break;
		if (go_on != NULL && !go_on(purged, (int)((from +
		    DLQ_PURGE_CHUNK - lo) * 100 / (hi - lo + 1)), arg)) {
			dlq_buf_printf(out, "{\"purged\":%lld,\"before_ms\":"
			    "%lld,\"interrupted\":true}", purged,
			    (long long)cutoff_ms);
			return DLQ_OK;
		}
		/* a mutex is not fair: without a pause this loop would take
		 * it back before a waiting consumer runs */
		nanosleep(&pause, NULL);
	}
	dlq_buf_printf(out, "{\"purged\":%lld,\"before_ms\":%lld}", purged,
	    (long long)cutoff_ms);
	return DLQ_OK;
}

int
dlq_sqlite_cases_audit_add(struct dlq_sqlite *archive, int64_t now_ms, const char *actor, long uid,
    const char *command, const char *args_json, const char *result)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { INT(now_ms), TEXT(actor), INT(uid),
	    TEXT(command), TEXT(args_json), TEXT(result) };
	int changes;

	return exec_changes(db, "INSERT INTO audit (at, actor, uid, command,"
	    " args, result) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", p, 6, &changes);
}

int
dlq_sqlite_cases_audit_expire(struct dlq_sqlite *archive, int64_t cutoff_ms, long long *deleted,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { INT(cutoff_ms) };
	int changes = 0, pruned, rc;

	*deleted = 0;
	dlq_archive_writer_lock();
	rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
	    /* by its key, from the ids each expired request named: a
	     * walk of audit_ids (ten entries per record) would take the
	     * writers' turn for a second per million records, daily */
	    && exec_changes(db, "DELETE FROM audit_ids WHERE (dead_letter_id,"
	    " audit_id) IN (SELECT CAST(j.value AS INTEGER), u.id FROM audit u,"
	    " " AUDIT_IDS_IN("u.args") " AND u.at < ?1)", p, 1, &changes) == 0 &&
	    exec_changes(db, "DELETE FROM audit WHERE at < ?1", p, 1,
	    &changes) == 0 && exec_changes(db, "DELETE FROM arrivals WHERE"
	    " minute < CAST(strftime('%s', 'now') AS INTEGER) / 60 - 2 * 1440",
	    NULL, 0, &pruned) == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL,
	    NULL) == SQLITE_OK ? 0 : -1;
	if (rc == -1) {
		dlq_buf_adds(out, sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	} else
		*deleted = changes;
	dlq_archive_writer_unlock();
	return rc;
}

int
dlq_sqlite_cases_audit(struct dlq_sqlite *archive, const struct dlq_audit_filter *f,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { INT(f->since_ms), TEXT(f->actor),
	    TEXT(f->command), INT(f->before_id), INT(f->limit) };

	return query_list(db, "SELECT json_group_array(json_object('id', id,"
	    " 'at', at, 'actor', actor, 'uid', uid, 'command', command,"
	    " 'args', json(args), 'result', result)) FROM (SELECT * FROM audit"
	    " WHERE at >= ?1 AND (?2 IS NULL OR actor = ?2) AND (?3 IS NULL OR"
	    " command = ?3) AND (?4 = 0 OR id < ?4) ORDER BY id DESC LIMIT ?5)",
	    p, 5, out);
}

int
dlq_sqlite_cases_returns(struct dlq_sqlite *archive, const char *ids_json, int64_t since_ms,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { TEXT(ids_json), INT(since_ms) };

	return query_list(db, "SELECT json_group_array(json_object("
	    " 'id', replay_of, 'returned_id', id, 'dlq', dlq, 'reason', reason,"
	    " 'class', class, 'error', dlq_mask(error), 'received_at',"
	    " received_at))"
	    " FROM (SELECT * FROM dead_letters WHERE replay_of IN"
	    "  (SELECT value FROM json_each(?1)) AND received_at >= ?2"
	    "  ORDER BY id)", p, 2, out);
}

int
dlq_sqlite_cases_redrive_status(struct dlq_sqlite *archive, const char *queues_json,
    struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { TEXT(queues_json) };

	return query_list(db, "SELECT json_group_array(json_object("
	    " 'queue', q.value,"
	    " 'circuit', CASE WHEN c.id IS NULL THEN 'closed' ELSE 'open' END,"
	    " 'tripped_at', c.tripped_at, 'redriven', c.redriven,"
	    " 'returned', c.returned,"
	    " 'left_for_humans', (SELECT count(*) FROM dead_letters d WHERE"
	    "   d.queue = q.value AND d.redrive_stopped_at IS NOT NULL AND"
	    "   d.status IN ('open', 'assigned')),"
	    " 'published', (SELECT count(*) FROM attempts a JOIN dead_letters d"
	    "   ON d.id = a.dead_letter_id WHERE d.queue = q.value AND"
	    "   a.actor = '" DLQ_REDRIVE_ACTOR "' AND a.outcome = 'published')))"
	    " FROM json_each(?1) q LEFT JOIN redrive_circuits c ON"
	    " c.queue = q.value AND c.resumed_at IS NULL", p, 1, out);
}

int
dlq_sqlite_cases_redrive_resume(struct dlq_sqlite *archive, const char *queue, const char *reason,
    const char *actor, int64_t now_ms, struct dlq_buf *out)
{
	sqlite3 *db = dlq_sqlite_db(archive);
	const struct param p[] = { TEXT(queue), TEXT(reason), TEXT(actor),
	    INT(now_ms) };
	int changes;

	if (exec_changes(db, "UPDATE redrive_circuits SET resumed_at = ?4,"
	    " resumed_by = ?3, resume_reason = ?2 WHERE queue = ?1 AND"
	    " resumed_at IS NULL", p, 4, &changes) == -1)
		return fail(db, out);
	dlq_buf_printf(out, "{\"resumed\":%d}", changes);
	return changes > 0 ? DLQ_OK : DLQ_NOT_FOUND;
}
