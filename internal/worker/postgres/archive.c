/* archive.c - the PostgreSQL archive's transactions, its insert path and
 * its meta values (archive.h).
 *
 * Several workers insert into one table: the unique index on
 * fingerprints makes a dead letter one record whichever replica takes
 * it, and a redelivery (a replica died between its commit and its ack,
 * the broker handed the message to another) finds the record instead of
 * making a second (INSERT ... ON CONFLICT DO NOTHING, then a lookup).
 * A transaction holds a batch of one consumer's deliveries; it commits
 * before their ack, as in SQLite. Text from a message reaches the
 * server as valid UTF-8 without NUL (bytes that are not become U+FFFD,
 * as the logs show them): PostgreSQL refuses such text, and a refused
 * insert would send the batch back to the broker again and again. */
#include "pg.h"

#include <amqp.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter.h"

#define PROBE_KEY	"write_probe"
#define INSERT_NAME	"dlq_put"
#define N_PARAMS	33

static const char INSERT_SQL[] =
	"INSERT INTO dead_letters (fingerprint, dlq, queue, exchange,"
	" routing_keys, message_id, correlation_id, type, content_type,"
	" content_encoding, timestamp, app_id, delivery_mode, priority,"
	" expiration, user_id, reply_to, headers_amqp, x_death, reason,"
	" retry_count, delivery_count, error, class, signature, hint,"
	" payload, payload_bytes, payload_sha256, received_at, replay_of,"
	" replay_count, props_raw)"
	" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
	" $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28,"
	" $29, $30, $31, $32, $33) ON CONFLICT (fingerprint) DO NOTHING"
	" RETURNING id";

/* A put's parameters: text ones are copied, made valid, into one buffer
 * (offsets, as it may move while it grows), binary ones point at the
 * caller's bytes. */
struct params {
	struct dlq_buf	*text;
	size_t		 off[N_PARAMS];
	const char	*bin[N_PARAMS];
	const char	*values[N_PARAMS];
	int		 lengths[N_PARAMS];
	int		 formats[N_PARAMS];
	bool		 null[N_PARAMS];
};

static void
p_text(struct params *p, int i, const void *s, size_t n)
{
	p->off[i] = p->text->len;
	dlq_buf_add_text(p->text, s, n);
	dlq_buf_addc(p->text, '\0');
}

static void
p_str(struct params *p, int i, struct dlq_str s)
{
	if (s.p == NULL)
		p->null[i] = true;
	else
		p_text(p, i, s.p, s.n);
}

static void
p_prop(struct params *p, int i, const amqp_basic_properties_t *props,
    amqp_flags_t flag, amqp_bytes_t v)
{
	if (props->_flags & flag)
		p_text(p, i, v.bytes ? v.bytes : "", v.len);
	else
		p->null[i] = true;
}

static void
p_int(struct params *p, int i, int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%" PRId64, v);
	p_text(p, i, s, strlen(s));
}

static void
p_bin(struct params *p, int i, const void *s, size_t n)
{
	p->bin[i] = s != NULL ? s : "";
	p->lengths[i] = (int)n;
	p->formats[i] = 1;
}

static void
p_resolve(struct params *p)
{
	int i;

	for (i = 0; i < N_PARAMS; i++)
		p->values[i] = p->null[i] ? NULL : p->formats[i] == 1 ?
		    p->bin[i] : p->text->data + p->off[i];
}

static int
begin(struct dlq_pg *a)
{
	dlq_archive_writer_lock();
	if (dlq_pg_exec(a, "begin", "BEGIN") == -1) {
		dlq_archive_writer_unlock();
		return -1;
	}
	a->in_tx = true;
	return 0;
}

int
dlq_pg_begin(struct dlq_pg *a)
{
	return begin(a);
}

int
dlq_pg_commit_hold(struct dlq_pg *a)
{
	if (dlq_pg_commit_tx(a) == -1)
		return -1;	/* the caller ends the turn: rollback */
	a->in_tx = false;
	return 0;
}

void
dlq_pg_rollback(struct dlq_pg *a)
{
	if (a->conn != NULL && PQtransactionStatus(a->conn) != PQTRANS_IDLE)
		(void)dlq_pg_exec(a, "rollback", "ROLLBACK");
	if (a->in_tx) {
		a->in_tx = false;
		dlq_archive_writer_unlock();
	}
}

int
dlq_pg_commit(struct dlq_pg *a)
{
	if (dlq_pg_commit_hold(a) == -1) {
		dlq_pg_rollback(a);
		return -1;
	}
	dlq_archive_writer_unlock();
	return 0;
}

/* The id of the record a fingerprint names, 0 if none, -1 on error. */
static int64_t
find(struct dlq_pg *a, const unsigned char fp[32])
{
	const char *values[1] = { (const char *)fp };
	int lengths[1] = { 32 }, formats[1] = { 1 };
	PGresult *res;
	int64_t id = 0;

	res = dlq_pg_query(a, "insert", "SELECT id FROM dead_letters WHERE"
	    " fingerprint = $1", 1, values, lengths, formats, a->wait_ms);
	if (res == NULL)
		return -1;
	if (PQntuples(res) > 0)
		id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return id;
}

/* The properties a replay sends whose bytes are not text (a NUL, bytes
 * that are not UTF-8), which their text columns hold with U+FFFD: their
 * exact bytes as a JSON object of base64 strings; nothing when all are
 * text. */
static void
raw_props(const amqp_basic_properties_t *p, struct dlq_buf *out)
{
	static const struct { const char *key; amqp_flags_t flag;
	    size_t off; } props[] = {
		{ "message_id", AMQP_BASIC_MESSAGE_ID_FLAG,
		    offsetof(amqp_basic_properties_t, message_id) },
		{ "correlation_id", AMQP_BASIC_CORRELATION_ID_FLAG,
		    offsetof(amqp_basic_properties_t, correlation_id) },
		{ "type", AMQP_BASIC_TYPE_FLAG,
		    offsetof(amqp_basic_properties_t, type) },
		{ "content_type", AMQP_BASIC_CONTENT_TYPE_FLAG,
		    offsetof(amqp_basic_properties_t, content_type) },
		{ "content_encoding", AMQP_BASIC_CONTENT_ENCODING_FLAG,
		    offsetof(amqp_basic_properties_t, content_encoding) },
		{ "app_id", AMQP_BASIC_APP_ID_FLAG,
		    offsetof(amqp_basic_properties_t, app_id) },
		{ "reply_to", AMQP_BASIC_REPLY_TO_FLAG,
		    offsetof(amqp_basic_properties_t, reply_to) },
		{ "user_id", AMQP_BASIC_USER_ID_FLAG,
		    offsetof(amqp_basic_properties_t, user_id) },
	};
	const amqp_bytes_t *v;
	size_t i;

	dlq_buf_reset(out);
	for (i = 0; i < sizeof(props) / sizeof(props[0]); i++) {
		v = (const amqp_bytes_t *)(const void *)((const char *)p +
		    props[i].off);
		if (!(p->_flags & props[i].flag) || v->bytes == NULL ||
		    dlq_utf8_is_text(v->bytes, v->len))
			continue;
		dlq_buf_printf(out, "%s\"%s\":\"", out->len ? "," : "{",
		    props[i].key);
		dlq_buf_base64(out, v->bytes, v->len);
		dlq_buf_addc(out, '"');
	}
	if (out->len > 0)
		dlq_buf_addc(out, '}');
}

static int
prepare(struct dlq_pg *a)
{
	PGresult *res;

	if (a->prepared)
		return 0;
	if (!PQsendPrepare(a->conn, INSERT_NAME, INSERT_SQL, 0, NULL)) {
		dlq_pg_set_err(a, "prepare");
		return -1;
	}
	if ((res = dlq_pg_answer(a, "prepare", a->wait_ms)) == NULL)
		return -1;
	PQclear(res);
	a->prepared = true;
	return 0;
}

int64_t
dlq_pg_put(struct dlq_pg *a, const struct dlq_record *r, bool *duplicate)
{
	const struct dlq_dead_letter *d = r->d;
	const amqp_basic_properties_t *props = d->props;
	struct dlq_record_enc *e = &a->enc;
	struct params p;
	PGresult *res;
	int64_t id = -1;

	*duplicate = false;
	if (a->conn == NULL || !a->in_tx) {
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "insert: not in a "
		    "transaction on a live connection");
		return -1;
	}
	if (prepare(a) == -1)
		return -1;
	dlq_record_encode(e, r);
	memset(&p, 0, sizeof(p));
	p.text = &a->text;
	dlq_buf_reset(&a->text);
	p_bin(&p, 0, e->fingerprint, 32);
	p_str(&p, 1, d->dlq);
	p_text(&p, 2, r->queue, strlen(r->queue));
	if (d->n_xdeath > 0)
		p_str(&p, 3, d->xdeath[0].exchange);
	else
		p.null[3] = true;
	p_text(&p, 4, e->keys.data, e->keys.len);
	p_prop(&p, 5, props, AMQP_BASIC_MESSAGE_ID_FLAG, props->message_id);
	p_prop(&p, 6, props, AMQP_BASIC_CORRELATION_ID_FLAG,
	    props->correlation_id);
	p_prop(&p, 7, props, AMQP_BASIC_TYPE_FLAG, props->type);
	p_prop(&p, 8, props, AMQP_BASIC_CONTENT_TYPE_FLAG, props->content_type);
	p_prop(&p, 9, props, AMQP_BASIC_CONTENT_ENCODING_FLAG,
	    props->content_encoding);
	if (props->_flags & AMQP_BASIC_TIMESTAMP_FLAG)
		p_int(&p, 10, (int64_t)props->timestamp);
	else
		p.null[10] = true;
	p_prop(&p, 11, props, AMQP_BASIC_APP_ID_FLAG, props->app_id);
	if (props->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG)
		p_int(&p, 12, props->delivery_mode);
	else
		p.null[12] = true;
	if (props->_flags & AMQP_BASIC_PRIORITY_FLAG)
		p_int(&p, 13, props->priority);
	else
		p.null[13] = true;
	p_prop(&p, 14, props, AMQP_BASIC_EXPIRATION_FLAG, props->expiration);
	p_prop(&p, 15, props, AMQP_BASIC_USER_ID_FLAG, props->user_id);
	p_prop(&p, 16, props, AMQP_BASIC_REPLY_TO_FLAG, props->reply_to);
	if (e->has_headers)
		p_bin(&p, 17, e->headers, e->headers_len);
	else
		p.null[17] = true;
	p_text(&p, 18, r->xdeath_json->data, r->xdeath_json->len);
	p_text(&p, 19, r->reason, strlen(r->reason));
	if (d->has_retry_count)
		p_int(&p, 20, d->retry_count);
	else
		p.null[20] = true;
	if (d->has_delivery_count)
		p_int(&p, 21, d->delivery_count);
	else
		p.null[21] = true;
	p_text(&p, 22, r->error, strlen(r->error));
	p_text(&p, 23, r->class, strlen(r->class));
	p_text(&p, 24, r->signature, strlen(r->signature));
	if (r->hint != NULL)
		p_text(&p, 25, r->hint, strlen(r->hint));
	else
		p.null[25] = true;
	p_bin(&p, 26, d->body, d->body_len);
	p_int(&p, 27, (int64_t)d->body_len);
	p_text(&p, 28, e->body_hex, 64);
	p_int(&p, 29, r->received_ms);
	if (r->replay_of > 0)
		p_int(&p, 30, r->replay_of);
	else
		p.null[30] = true;
	p_int(&p, 31, r->replay_count);
	raw_props(props, &a->raw);
	if (a->raw.len > 0)
		p_text(&p, 32, a->raw.data, a->raw.len);
	else
		p.null[32] = true;
	if (a->text.oom || a->raw.oom) {
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "insert: out of "
		    "memory");
		return -1;
	}
	p_resolve(&p);

	res = dlq_pg_query_prepared(a, "insert", INSERT_NAME, N_PARAMS,
	    p.values, p.lengths, p.formats);
	if (res == NULL)
		return -1;
	if (PQntuples(res) == 1)
		id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	if (id > 0)
		return id;
	/* the fingerprint is there: this replica's earlier delivery, or
	 * another's (committed: the insert waited for it) */
	if ((id = find(a, e->fingerprint)) > 0) {
		*duplicate = true;
		return id;
	}
	if (id == 0)
		snprintf(dlq_pg_err, sizeof(dlq_pg_err), "insert: a record with "
		    "this fingerprint was neither inserted nor found");
	return -1;
}

int
dlq_pg_meta_get(struct dlq_pg *a, const char *key, int64_t *value)
{
	const char *values[1] = { key };

	return dlq_pg_number(a, "archive_meta", "SELECT value FROM"
	    " archive_meta WHERE key = $1", 1, values, value);
}

int
dlq_pg_meta_set(struct dlq_pg *a, const char *key, int64_t value)
{
	char v[24];
	const char *values[2] = { key, v };
	PGresult *res;

	snprintf(v, sizeof(v), "%" PRId64, value);
	res = dlq_pg_query(a, "archive_meta", "INSERT INTO archive_meta (key,"
	    " value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value ="
	    " excluded.value", 2, values, NULL, NULL, a->wait_ms);
	PQclear(res);
	return res != NULL ? 0 : -1;
}

/* A write committed and removed again, in a turn of the writer mutex:
 * it fails as a batch would (no server, a read-only standby, a full
 * disk, the connection lost), and it connects again when it can. */
int
dlq_pg_probe(struct dlq_pg *a, size_t bytes)
{
	(void)bytes;	/* a server's disk is not ours to measure */
	if (begin(a) == -1)
		return -1;
	if (dlq_pg_exec(a, "archive_meta", "INSERT INTO archive_meta (key,"
	    " value) VALUES ('" PROBE_KEY "', 0) ON CONFLICT (key) DO"
	    " UPDATE SET value = excluded.value + 1") == -1 ||
	    dlq_pg_exec(a, "archive_meta", "DELETE FROM archive_meta WHERE"
	    " key = '" PROBE_KEY "'") == -1) {
		dlq_pg_rollback(a);
		return -1;
	}
	return dlq_pg_commit(a);
}

int
dlq_pg_signatures(struct dlq_pg *a, int max,
    void (*each)(void *, const char *), void *ctx)
{
	char last[64] = "";
	const char *values[1] = { last };
	PGresult *res;
	int n = 0;

	/* one seek of the index per signature: a loose index scan */
	while (n < max) {
		res = dlq_pg_query(a, "signatures", "SELECT signature FROM"
		    " dead_letters WHERE signature > $1 ORDER BY signature"
		    " LIMIT 1", 1, values, NULL, NULL, a->wait_ms);
		if (res == NULL)
			return -1;
		if (PQntuples(res) == 0 ||
		    PQgetlength(res, 0, 0) >= (int)sizeof(last)) {
			PQclear(res);
			break;
		}
		snprintf(last, sizeof(last), "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		each(ctx, last);
		n++;
	}
	return n;
}
