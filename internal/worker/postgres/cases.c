/* cases.c - the operator's queries on a PostgreSQL archive (cases.h):
 * stats, list, show, groups and the traffic of stats so far. Answers are the same JSON as the SQLite
 * archive's: the key order of its json_object(), compact, error texts
 * masked again with the rules of now. */
#include "cases.h"

#include <amqp.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter.h"
#include "pg.h"
#include "proto.h"
#include "redact.h"

#define N_ARGS		14

/* Text parameters of one query, numbers printed into slots. */
struct args {
	const char	*v[N_ARGS];
	char		 num[N_ARGS][24];
};

static void
a_int(struct args *a, int i, int64_t v)
{
	snprintf(a->num[i], sizeof(a->num[i]), "%lld", (long long)v);
	a->v[i] = a->num[i];
}

#define OWNER_PCT(pct) \
	"(SELECT assigned_at - received_at FROM dead_letters" \
	" WHERE assigned_at IS NOT NULL ORDER BY 1 LIMIT 1 OFFSET" \
	" (SELECT count(*) * " #pct " / 100 FROM dead_letters" \
	"  WHERE assigned_at IS NOT NULL))"
#define OBJECT_AGG(k, v, rest) \
	"(SELECT coalesce(json_object_agg(" k ", " v "), '{}') FROM (" rest \
	") s)"

int
dlq_pg_cases_stats(struct dlq_pg *pg, int64_t now_ms, int64_t owner_sla_ms,
    struct dlq_buf *out)
{
	struct args a;

	memset(&a, 0, sizeof(a));
	a_int(&a, 0, now_ms);
	a_int(&a, 1, owner_sla_ms);
	return dlq_pg_query_json(pg, "WITH p AS (SELECT $1::bigint AS now,"
	    " $2::bigint AS sla) SELECT json_build_object("
	    " 'total', (SELECT count(*) FROM dead_letters),"
	    " 'unresolved', (SELECT count(*) FROM dead_letters"
	    "   WHERE status IN " DLQ_PG_UNRESOLVED "),"
	    " 'by_queue', " OBJECT_AGG("queue", "n", "SELECT queue, count(*) n"
	    "   FROM dead_letters WHERE status IN " DLQ_PG_UNRESOLVED " GROUP BY queue"
	    "   ORDER BY n DESC") ","
	    " 'by_class', " OBJECT_AGG("class", "n", "SELECT class, count(*) n"
	    "   FROM dead_letters WHERE status IN " DLQ_PG_UNRESOLVED " GROUP BY class"
	    "   ORDER BY n DESC") ","
	    " 'by_owner', " OBJECT_AGG("owner", "n", "SELECT owner, count(*) n"
	    "   FROM dead_letters WHERE status = 'assigned' GROUP BY owner"
	    "   ORDER BY n DESC, owner LIMIT 50") ","
	    " 'by_status', " OBJECT_AGG("status", "n", "SELECT status, count(*)"
	    "   n FROM dead_letters GROUP BY status") ","
	    " 'oldest_unresolved_age_ms', (SELECT p.now - min(received_at)"
	    "   FROM dead_letters WHERE status IN " DLQ_PG_UNRESOLVED "),"
	    " 'new_last_hour', (SELECT count(*) FROM dead_letters"
	    "   WHERE received_at >= p.now - 3600000),"
	    " 'new_last_day', (SELECT count(*) FROM dead_letters"
	    "   WHERE received_at >= p.now - 86400000),"
	    " 'replaying_unknown', (SELECT count(*) FROM dead_letters"
	    "   WHERE status = 'replaying'),"
	    " 'repeated_cycles', (SELECT count(*) FROM dead_letters"
	    "   WHERE replay_of IS NOT NULL),"
	    " 'payloads_purged', (SELECT count(*) FROM dead_letters"
	    "   WHERE purged_at IS NOT NULL),"
	    " 'escalations', json_build_object("
	    "   'past_escalate_at', (SELECT count(*) FROM dead_letters"
	    "     WHERE status = 'assigned' AND escalate_at < p.now),"
	    "   'unowned_past_sla', (SELECT count(*) FROM dead_letters"
	    "     WHERE p.sla > 0 AND status = 'open' AND owner IS NULL"
	    "     AND received_at < p.now - p.sla),"
	    "   'owner_sla_ms', p.sla,"
	    "   'cases', (SELECT coalesce(json_agg(json_build_object('id', id,"
	    "     'queue', queue, 'kind', k, 'owner', owner, 'decision',"
	    "     decision, 'overdue_ms', late) ORDER BY late DESC), '[]') FROM"
	    "     (SELECT id, queue, owner, decision,"
	    "      CASE WHEN status = 'assigned' THEN 'no_decision'"
	    "      ELSE 'no_owner' END k,"
	    "      CASE WHEN status = 'assigned' THEN p.now - escalate_at"
	    "      ELSE p.now - received_at - p.sla END late FROM dead_letters"
	    "      WHERE (status = 'assigned' AND escalate_at < p.now) OR"
	    "      (p.sla > 0 AND status = 'open' AND owner IS NULL AND"
	    "      received_at < p.now - p.sla) ORDER BY late DESC LIMIT 20) c)),"
	    " 'decisions', json_build_object("
	    "   'time_to_owner_ms', json_build_object("
	    "     'count', (SELECT count(*) FROM dead_letters"
	    "       WHERE assigned_at IS NOT NULL),"
	    "     'p50', " OWNER_PCT(50) ", 'p90', " OWNER_PCT(90) ","
	    "     'max', (SELECT max(assigned_at - received_at)"
	    "       FROM dead_letters WHERE assigned_at IS NOT NULL)),"
	    "   'oldest_awaiting_decision_age_ms', (SELECT p.now -"
	    "     min(received_at) FROM dead_letters WHERE status IN ('open',"
	    "     'assigned')),"
	    "   'replays_without_evidence', (SELECT count(*) FROM attempts"
	    "     WHERE evidence IS NULL),"
	    "   'max_cycles_per_message', (SELECT coalesce(max(replay_count), 0)"
	    "     FROM dead_letters WHERE replay_of IS NOT NULL)),"
	    " 'redrive', json_build_object("
	    "   'outcomes', " OBJECT_AGG("outcome", "n", "SELECT outcome,"
	    "     count(*) n FROM attempts WHERE actor = '" DLQ_REDRIVE_ACTOR "'"
	    "     GROUP BY outcome") ","
	    "   'left_for_humans', (SELECT count(*) FROM dead_letters"
	    "     WHERE redrive_stopped_at IS NOT NULL AND status IN"
	    "     ('open', 'assigned')),"
	    "   'circuits_open', (SELECT coalesce(json_agg(queue), '[]') FROM"
	    "     redrive_circuits WHERE resumed_at IS NULL))) FROM p", 2, a.v,
	    out);
}

/* Column c of row r: a JSON number, or null. */
static void
json_num(struct dlq_buf *out, PGresult *res, int r, int c)
{
	if (PQgetisnull(res, r, c))
		dlq_buf_adds(out, "null");
	else
		dlq_buf_adds(out, PQgetvalue(res, r, c));
}

static void
json_text(struct dlq_buf *out, PGresult *res, int r, int c)
{
	if (PQgetisnull(res, r, c))
		dlq_buf_adds(out, "null");
	else
		dlq_buf_json_str(out, PQgetvalue(res, r, c),
		    (size_t)PQgetlength(res, r, c));
}

/* The rows of `res` as a JSON array of objects with `keys` for its
 * columns: a number where number[c] (NULL: null), else text; column
 * `error` masked again with the rules of now. The result is cleared. */
static int
rows_json(struct dlq_pg *pg, PGresult *res, const char *const *keys,
    const bool *number, int nkeys, int error, struct dlq_buf *out)
{
	struct dlq_buf masked;
	int r, c;

	dlq_buf_init(&masked);
	dlq_buf_addc(out, '[');
	for (r = 0; r < PQntuples(res); r++) {
		dlq_buf_adds(out, r > 0 ? ",{" : "{");
		for (c = 0; c < nkeys; c++) {
			dlq_buf_printf(out, "%s\"%s\":", c > 0 ? "," : "",
			    keys[c]);
			if (number[c])
				json_num(out, res, r, c);
			else if (c == error && !PQgetisnull(res, r, c)) {
				dlq_buf_reset(&masked);
				dlq_redact_text(&pg->mask, PQgetvalue(res, r, c),
				    (size_t)PQgetlength(res, r, c),
				    3 * (size_t)PQgetlength(res, r, c) + 16,
				    &masked);
				dlq_buf_json_str(out, masked.data ? masked.data :
				    "", masked.len);
			} else
				json_text(out, res, r, c);
		}
		dlq_buf_addc(out, '}');
	}
	dlq_buf_addc(out, ']');
	dlq_buf_release(&masked);
	PQclear(res);
	if (out->oom) {
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "out of memory");
		return dlq_pg_fail(out);
	}
	return DLQ_OK;
}

int
dlq_pg_cases_list(struct dlq_pg *pg, const struct dlq_list_filter *f,
    struct dlq_buf *out)
{
	static const char *const keys[] = { "id", "received_at", "dlq",
	    "queue", "message_id", "reason", "class", "signature", "status",
	    "owner", "error", "retry_count", "replay_count", "payload_bytes",
	    "hint", "payload_preview" };
	static const bool number[] = { true, true, false, false, false, false,
	    false, false, false, false, false, true, true, true, false, false };
	struct args a;
	PGresult *res;

	memset(&a, 0, sizeof(a));
	a.v[0] = f->queue;
	a.v[1] = f->status;
	a.v[2] = f->class;
	a.v[3] = f->signature;
	a_int(&a, 4, f->since_ms);
	a_int(&a, 5, f->limit);
	a.v[6] = f->message_id;
	a.v[7] = f->correlation_id;
	a_int(&a, 8, f->before_id > 0 ? f->before_id : INT64_MAX);
	a.v[9] = f->owner;
	a.v[10] = f->reopenable ? "1" : "0";
	a.v[11] = f->text;
	a.v[12] = f->text_in_error ? "1" : "0";
	a.v[13] = f->preview ? "1" : "0";
	res = dlq_pg_query(pg, "list", "SELECT id, received_at, dlq, queue,"
	    " message_id, reason, class, signature, status, owner, error,"
	    " retry_count, replay_count, payload_bytes, COALESCE(hint, (SELECT"
	    " text FROM hints WHERE hints.id = hint_id)), CASE WHEN $14::int = 1"
	    " THEN encode(substring(payload FROM 1 FOR 120), 'escape') END"
	    " FROM dead_letters WHERE"
	    " ($1::text IS NULL OR queue = $1 OR dlq = $1) AND"
	    " ($2::text IS NULL OR status = $2) AND"
	    " ($3::text IS NULL OR class = $3) AND"
	    " ($4::text IS NULL OR signature = $4) AND received_at >= $5 AND"
	    " ($7::text IS NULL OR message_id = $7) AND"
	    " ($8::text IS NULL OR correlation_id = $8) AND"
	    " ($10::text IS NULL OR owner = $10) AND ($11::int = 0 OR "
	    DLQ_PG_REOPENABLE ") AND ($12::text IS NULL OR"
	    " strpos(message_id, $12) > 0 OR strpos(correlation_id, $12) > 0"
	    " OR ($13::int = 1 AND strpos(error, $12) > 0))"
	    " AND id < $9 ORDER BY id DESC LIMIT $6", 14, a.v,
	    NULL, NULL, pg->wait_ms);
	if (res == NULL)
		return dlq_pg_fail(out);
	return rows_json(pg, res, keys, number, sizeof(keys) / sizeof(keys[0]),
	    10, out);
}

/* an audit entry of dlqctl's own (`replay --from-queue`, refusals) */
#define NOTE(u)	"(" u ".command = 'audit_note')"
/* a change by ids that left some as they were, and said why */
#define BY_IDS(u)	"(" u ".command IN ('assign', 'drop', 'reopen') AND"	\
	" jsonb_typeof(" u ".args::jsonb -> 'refused') = 'array')"
/* why the record `d` was refused by the audit entry `u` */
#define REFUSAL(u)	"(SELECT r.value ->> 'why' FROM"	\
	" jsonb_array_elements(CASE jsonb_typeof(" u ".args::jsonb ->"	\
	" 'refused') WHEN 'array' THEN " u ".args::jsonb -> 'refused' ELSE"	\
	" '[]' END) r WHERE jsonb_typeof(r.value) = 'object' AND"	\
	" (r.value ->> 'id') = d.id::text LIMIT 1)"

/* The stored header table as JSON (as the worker logs headers), from
 * bytea's text form; NULL when it is not a table. */
static cJSON *
headers_of(const char *hex)
{
	unsigned char *raw;
	size_t n, off = 0;
	amqp_bytes_t enc;
	amqp_table_t table;
	amqp_pool_t pool;
	struct dlq_buf json;
	cJSON *j = NULL;

	if ((raw = PQunescapeBytea((const unsigned char *)hex, &n)) == NULL)
		return NULL;
	enc.bytes = raw;
	enc.len = n;
	init_amqp_pool(&pool, 4096);
	dlq_buf_init(&json);
	if (amqp_decode_table(enc, &pool, &table, &off) == AMQP_STATUS_OK) {
		dlq_table_json(&json, &table);
		if (!json.oom && json.data != NULL)
			j = cJSON_CreateRaw(json.data);
	}
	dlq_buf_release(&json);
	empty_amqp_pool(&pool);
	PQfreemem(raw);
	return j;
}

/* The payload as the SQLite archive shows it: text when it is printable
 * UTF-8, else base64 (operator and up). */
static void
add_payload(struct dlq_buf *out, const char *hex, bool null)
{
	unsigned char *b;
	size_t n;

	if (null) {
		dlq_buf_adds(out, ",\"payload\":null");
		return;
	}
	if ((b = PQunescapeBytea((const unsigned char *)hex, &n)) == NULL)
		return;
	if (dlq_utf8_is_text(b, n)) {
		dlq_buf_adds(out, ",\"payload\":");
		dlq_buf_json_str(out, b, n);
	} else {
		dlq_buf_adds(out, ",\"payload_base64\":\"");
		dlq_buf_base64(out, b, n);
		dlq_buf_addc(out, '"');
	}
	PQfreemem(b);
}

int
dlq_pg_cases_show(struct dlq_pg *pg, int64_t id, bool payload,
    struct dlq_buf *out)
{
	struct args a;
	struct dlq_buf masked;
	PGresult *res;
	cJSON *o, *rest, *item, *e, *h = NULL;
	char *text;

	memset(&a, 0, sizeof(a));
	a_int(&a, 0, id);
	a_int(&a, 1, payload);
	res = dlq_pg_query(pg, "show", "SELECT json_build_object("
	    " 'id', id, 'received_at', received_at, 'dlq', dlq, 'queue', queue,"
	    " 'message_id', message_id, 'reason', reason, 'class', class,"
	    " 'signature', signature, 'status', status, 'owner', owner,"
	    " 'error', error, 'retry_count', retry_count,"
	    " 'replay_count', replay_count, 'payload_bytes', payload_bytes,"
	    " 'exchange', exchange, 'routing_keys', routing_keys::json,"
	    " 'correlation_id', correlation_id, 'type', type,"
	    " 'content_type', content_type, 'content_encoding', content_encoding,"
	    " 'timestamp', timestamp, 'app_id', app_id,"
	    " 'delivery_mode', delivery_mode, 'priority', priority,"
	    " 'expiration', expiration, 'user_id', user_id, 'reply_to', reply_to,"
	    " 'x_death', x_death::json, 'delivery_count', delivery_count,"
	    " 'hint', COALESCE(hint, (SELECT text FROM hints"
	    "   WHERE id = d.hint_id)), 'payload_sha256', payload_sha256,"
	    " 'decision', decision, 'evidence', evidence,"
	    " 'evidence_at', evidence_at, 'redrive_note', redrive_note,"
	    " 'escalate_at', escalate_at, 'assigned_by', assigned_by,"
	    " 'assigned_at', assigned_at, 'resolved_by', resolved_by,"
	    " 'resolved_at', resolved_at, 'resolution', resolution,"
	    " 'replay_of', replay_of, 'purged_at', purged_at),"
	    " headers_amqp, json_build_object("
	    " 'attempts', (SELECT coalesce(json_agg(json_build_object('id',"
	    "   a.id, 'actor', a.actor, 'reason', a.reason, 'evidence',"
	    "   a.evidence, 'policy', a.policy::json, 'checked_at',"
	    "   a.checked_at, 'target', a.target, 'started_at', a.started_at,"
	    "   'finished_at', a.finished_at, 'outcome', a.outcome,"
	    "   'detail', a.detail) ORDER BY a.id), '[]') FROM attempts a"
	    "   WHERE a.dead_letter_id = d.id),"
	    " 'audit', (SELECT coalesce(json_agg(json_build_object('at', u.at,"
	    "   'actor', u.actor, 'command', u.command,"
	    "   'result', CASE WHEN " BY_IDS("u") " THEN coalesce("
	    "    'not changed: ' || " REFUSAL("u") ", 'ok') ELSE u.result END,"
	    "   'reason', CASE WHEN u.command <> 'audit_note' THEN"
	    "    u.args::jsonb ->> 'reason' END,"
	    "   'what', CASE WHEN " NOTE("u") " THEN u.args::jsonb ->> 'what'"
	    "    END,"
	    "   'why', CASE WHEN " NOTE("u") " THEN " REFUSAL("u") " END)"
	    "   ORDER BY u.id), '[]')"
	    "   FROM audit u WHERE u.id IN (SELECT audit_id FROM audit_ids"
	    "   WHERE dead_letter_id = d.id)),"
	    /* every death of this logical message, linked by x-replay-of */
	    " 'lineage', (WITH RECURSIVE"
	    "   up(id, replay_of) AS (SELECT x.id, x.replay_of FROM dead_letters"
	    "    x WHERE x.id = $1 UNION SELECT x.id, x.replay_of FROM"
	    "    dead_letters x JOIN up ON x.id = up.replay_of),"
	    "   down(id) AS (SELECT x.id FROM dead_letters x WHERE x.id = $1"
	    "    UNION SELECT x.id FROM dead_letters x JOIN down ON x.replay_of"
	    "    = down.id)"
	    "   SELECT json_agg(json_build_object('id', l.id, 'received_at',"
	    "    l.received_at, 'reason', l.reason, 'status', l.status,"
	    "    'replay_count', l.replay_count, 'replay_of', l.replay_of)"
	    "    ORDER BY l.id) FROM dead_letters l WHERE l.id IN (SELECT id"
	    "    FROM up UNION SELECT id FROM down))),"
	    " CASE WHEN $2::int = 1 THEN payload END"	/* viewers: not read */
	    " FROM dead_letters d WHERE id = $1", 2, a.v, NULL, NULL,
	    pg->wait_ms);
	if (res == NULL)
		return dlq_pg_fail(out);
	if (PQntuples(res) == 0) {
		PQclear(res);
		return DLQ_NOT_FOUND;
	}
	o = cJSON_Parse(PQgetvalue(res, 0, 0));
	rest = cJSON_Parse(PQgetvalue(res, 0, 2));
	if (o == NULL || rest == NULL)
		goto oom;
	/* the error masked again, with the rules of now */
	if ((e = cJSON_GetObjectItemCaseSensitive(o, "error")) != NULL &&
	    cJSON_IsString(e)) {
		dlq_buf_init(&masked);
		dlq_redact_text(&pg->mask, e->valuestring,
		    strlen(e->valuestring), 3 * strlen(e->valuestring) + 16,
		    &masked);
		cJSON_ReplaceItemInObjectCaseSensitive(o, "error",
		    cJSON_CreateString(masked.data ? masked.data : ""));
		dlq_buf_release(&masked);
	}
	if (payload && !PQgetisnull(res, 0, 1))
		h = headers_of(PQgetvalue(res, 0, 1));
	cJSON_AddItemToObject(o, "headers", h != NULL ? h : cJSON_CreateNull());
	while ((item = rest->child) != NULL)
		cJSON_AddItemToObject(o, item->string,
		    cJSON_DetachItemViaPointer(rest, item));
	cJSON_Delete(rest);
	rest = NULL;
	if ((text = cJSON_PrintUnformatted(o)) == NULL)
		goto oom;
	dlq_buf_adds(out, text);
	cJSON_free(text);
	cJSON_Delete(o);
	if (payload && out->len > 0) {
		out->len--;	/* reopen the object: add the payload */
		add_payload(out, PQgetvalue(res, 0, 3), PQgetisnull(res, 0, 3));
		dlq_buf_addc(out, '}');
	}
	PQclear(res);
	return DLQ_OK;
oom:
	cJSON_Delete(o);
	cJSON_Delete(rest);
	PQclear(res);
	snprintf(dlq_pg_err, sizeof(dlq_pg_err), "show: out of memory");
	return dlq_pg_fail(out);
}

int
dlq_pg_cases_traffic(struct dlq_pg *pg, int64_t since_ms, int64_t limit,
    struct dlq_buf *out)
{
	struct args a;
	int rc;

	memset(&a, 0, sizeof(a));
	a_int(&a, 0, since_ms);
	a_int(&a, 1, limit);
	rc = dlq_pg_query_json(pg, "SELECT coalesce(json_agg(json_build_object("
	    " 'queue', queue, 'dead_lettered', n) ORDER BY n DESC), '[]') FROM"
	    " (SELECT queue, count(*) n FROM dead_letters"
	    "  WHERE received_at >= $1 GROUP BY queue ORDER BY n DESC"
	    "  LIMIT $2) t", 2, a.v, out);
	return rc == DLQ_NOT_FOUND ? DLQ_OK : rc;
}

/* One row per failure signature of the groups `g`, as SQLite's: the
 * sample (its first record in the window), the last, the counts, and
 * the signature's first record ever for first seen. */
#define GROUP_ROWS(g) \
	"SELECT g.signature, d.queue, d.reason, d.class, d.error, g.n, g.u," \
	" CASE WHEN g.fid = g.sid THEN d.received_at ELSE" \
	" (SELECT received_at FROM dead_letters WHERE id = g.fid) END f," \
	" e.received_at l, g.sid, d.message_id FROM " g \
	" JOIN dead_letters d ON d.id = g.sid" \
	" JOIN dead_letters e ON e.id = g.lid" \
	" WHERE ($1::text IS NULL OR d.queue = $1 OR d.dlq = $1)" \
	" AND ($4::text IS NULL OR d.class = $4) AND $3::bigint >= 0" \
	" ORDER BY g.n DESC LIMIT $2"
int
dlq_pg_cases_groups(struct dlq_pg *pg, const char *queue, const char *class,
    int64_t since_ms, int64_t limit, struct dlq_buf *out)
{
	static const char *const keys[] = { "signature", "queue", "reason",
	    "class", "error", "count", "unresolved", "first_seen",
	    "last_seen", "sample_id", "sample_message_id" };
	static const bool number[] = { false, false, false, false, false,
	    true, true, true, true, true, false };
	struct args a;
	PGresult *res;

	memset(&a, 0, sizeof(a));
	a.v[0] = queue;
	a_int(&a, 1, limit);
	a_int(&a, 2, since_ms);
	a.v[3] = class;
	res = dlq_pg_query(pg, "groups", since_ms == 0 ?
	    GROUP_ROWS(DLQ_PG_GROUPS_ALL) :
	    GROUP_ROWS(DLQ_PG_GROUPS_SINCE("$3")), 4, a.v, NULL,
	    NULL, pg->wait_ms);
	if (res == NULL)
		return dlq_pg_fail(out);
	return rows_json(pg, res, keys, number, sizeof(keys) / sizeof(keys[0]),
	    4, out);
}

int
dlq_pg_cases_returns(struct dlq_pg *pg, const char *ids_json,
    int64_t since_ms, struct dlq_buf *out)
{
	static const char *const keys[] = { "id", "returned_id", "dlq",
	    "reason", "class", "error", "received_at" };
	static const bool number[] = { true, true, false, false, false, false,
	    true };
	char since[24];
	const char *values[2] = { ids_json, since };
	PGresult *res;

	snprintf(since, sizeof(since), "%lld", (long long)since_ms);
	res = dlq_pg_query(pg, "returns", "SELECT replay_of, id, dlq, reason,"
	    " class, error, received_at FROM dead_letters WHERE replay_of IN"
	    " (SELECT value::bigint FROM json_array_elements_text($1::json))"
	    " AND received_at >= $2::bigint ORDER BY id", 2, values, NULL, NULL,
	    pg->wait_ms);
	if (res == NULL)
		return dlq_pg_fail(out);
	return rows_json(pg, res, keys, number, sizeof(keys) / sizeof(keys[0]),
	    5, out);
}

int
dlq_pg_cases_version(struct dlq_pg *pg, struct dlq_buf *out)
{
	return dlq_pg_query_json(pg, "SELECT json_build_array((SELECT max(id)"
	    " FROM dead_letters), (SELECT max(id) FROM audit))", 0, NULL, out);
}
