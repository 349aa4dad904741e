/* deadletter.c - decode a DLQ delivery: ids, x-death, counters, error.
 *
 * Clients encode headers differently (pika, amqplib, Spring, MassTransit):
 * a retry counter may arrive as any integer width, a float or a string; an
 * error may be a string or a table. The broker's own x-death is an array of
 * tables, newest first. Whatever arrives, this file reads what it can and
 * notes the rest in `problems`. */
#include "deadletter.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define JSON_MAX_DEPTH	16

static struct dlq_str
bytes_str(amqp_bytes_t b)
{
	struct dlq_str s = { b.len ? b.bytes : "", b.len };

	return s;
}

static void
problem(struct dlq_dead_letter *d, const char *what)
{
	if (d->n_problems < DLQ_PROBLEMS_MAX)
		d->problems[d->n_problems++] = what;
}

static bool
key_eq(amqp_bytes_t k, const char *name)
{
	size_t n = strlen(name);

	return k.len == n && memcmp(k.bytes, name, n) == 0;
}

const amqp_field_value_t *
dlq_table_get(const amqp_table_t *t, const char *name)
{
	int i;

	if (t == NULL)
		return NULL;
	for (i = 0; i < t->num_entries; i++)
		if (key_eq(t->entries[i].key, name))
			return &t->entries[i].value;
	return NULL;
}

static bool
is_string(const amqp_field_value_t *v)
{
	return v != NULL && (v->kind == AMQP_FIELD_KIND_UTF8 ||
	    v->kind == AMQP_FIELD_KIND_BYTES);
}

/* A string field as dlq_str; absent when missing or of another type. */
static struct dlq_str
str_field(const amqp_table_t *t, const char *name, struct dlq_dead_letter *d,
    const char *bad)
{
	const amqp_field_value_t *v = dlq_table_get(t, name);
	struct dlq_str none = { NULL, 0 };

	if (v == NULL)
		return none;
	if (!is_string(v)) {
		problem(d, bad);
		return none;
	}
	return bytes_str(v->value.bytes);
}

#define SECONDS_LIMIT	100000000000ULL		/* 10^11 s: year 5138 */
#define MS_LIMIT	(SECONDS_LIMIT * 1000)

int64_t
dlq_timestamp_ms(uint64_t ts, const char **unit)
{
	static const char *const units[] = { "seconds", "milliseconds",
	    "microseconds", "nanoseconds" };
	int k = 0;

	if (ts < SECONDS_LIMIT)
		ts *= 1000;
	else			/* UINT64_MAX is under MS_LIMIT in ns */
		for (k = 1; ts >= MS_LIMIT; k++)
			ts /= 1000;
	if (unit != NULL)
		*unit = units[k];
	return (int64_t)ts;
}

bool
dlq_field_to_i64(const amqp_field_value_t *v, int64_t *out)
{
	double f;
	size_t i;
	int64_t n = 0;
	const char *p;

	switch (v->kind) {
	case AMQP_FIELD_KIND_I8:	*out = v->value.i8; return true;
	case AMQP_FIELD_KIND_U8:	*out = v->value.u8; return true;
	case AMQP_FIELD_KIND_I16:	*out = v->value.i16; return true;
	case AMQP_FIELD_KIND_U16:	*out = v->value.u16; return true;
	case AMQP_FIELD_KIND_I32:	*out = v->value.i32; return true;
	case AMQP_FIELD_KIND_U32:	*out = v->value.u32; return true;
	case AMQP_FIELD_KIND_I64:	*out = v->value.i64; return true;
	case AMQP_FIELD_KIND_U64:
	case AMQP_FIELD_KIND_TIMESTAMP:
		if (v->value.u64 > INT64_MAX)
			return false;
		*out = (int64_t)v->value.u64;
		return true;
	case AMQP_FIELD_KIND_F32:
	case AMQP_FIELD_KIND_F64:
		f = v->kind == AMQP_FIELD_KIND_F32 ? v->value.f32 : v->value.f64;
		if (!isfinite(f) || f != floor(f) || fabs(f) > 9e15)
			return false;
		*out = (int64_t)f;
		return true;
	case AMQP_FIELD_KIND_DECIMAL:
		if (v->value.decimal.decimals != 0)
			return false;
		*out = v->value.decimal.value;
		return true;
	case AMQP_FIELD_KIND_UTF8:
	case AMQP_FIELD_KIND_BYTES:
		p = v->value.bytes.bytes;
		i = 0;
		while (i < v->value.bytes.len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		if (i == v->value.bytes.len || v->value.bytes.len - i > 18)
			return false;
		for (; i < v->value.bytes.len; i++) {
			if (p[i] < '0' || p[i] > '9')
				return false;
			n = n * 10 + (p[i] - '0');
		}
		*out = n;
		return true;
	default:
		return false;
	}
}

static void
decode_xdeath_entry(struct dlq_dead_letter *d, const amqp_table_t *t)
{
	struct dlq_xdeath *x = &d->xdeath[d->n_xdeath++];
	const amqp_field_value_t *v;
	int64_t n;

	x->queue = str_field(t, "queue", d, "x-death: queue is not a string");
	x->reason = str_field(t, "reason", d, "x-death: reason is not a string");
	x->exchange = str_field(t, "exchange", d,
	    "x-death: exchange is not a string");
	x->original_expiration = str_field(t, "original-expiration", d,
	    "x-death: original-expiration is not a string");
	x->count = -1;
	if ((v = dlq_table_get(t, "count")) != NULL) {
		if (dlq_field_to_i64(v, &n) && n >= 0)
			x->count = n;
		else
			problem(d, "x-death: count is not an integer");
	}
	x->time = -1;
	if ((v = dlq_table_get(t, "time")) != NULL) {
		if (dlq_field_to_i64(v, &n) && n >= 0)
			x->time = n;
		else
			problem(d, "x-death: time is not a timestamp");
	}
	x->routing_keys = NULL;
	if ((v = dlq_table_get(t, "routing-keys")) != NULL) {
		if (v->kind == AMQP_FIELD_KIND_ARRAY)
			x->routing_keys = &v->value.array;
		else
			problem(d, "x-death: routing-keys is not an array");
	}
}

static void
decode_xdeath(struct dlq_dead_letter *d, const amqp_field_value_t *v)
{
	int i;

	if (v->kind != AMQP_FIELD_KIND_ARRAY) {
		problem(d, "x-death: not an array");
		return;
	}
	for (i = 0; i < v->value.array.num_entries; i++) {
		const amqp_field_value_t *e = &v->value.array.entries[i];
		if (e->kind != AMQP_FIELD_KIND_TABLE) {
			problem(d, "x-death: entry is not a table");
			continue;
		}
		d->n_xdeath_total++;
		if (d->n_xdeath < DLQ_XDEATH_MAX)
			decode_xdeath_entry(d, &e->value.table);
	}
}

static void
decode_counter(struct dlq_dead_letter *d, const amqp_table_t *h,
    const char *name, int64_t *out, bool *has, const char *bad)
{
	const amqp_field_value_t *v = dlq_table_get(h, name);

	if (v == NULL)
		return;
	if (dlq_field_to_i64(v, out) && *out >= 0)
		*has = true;
	else
		problem(d, bad);
}

void
dlq_deadletter_decode(struct dlq_dead_letter *d,
    const amqp_basic_properties_t *props, amqp_bytes_t body,
    struct dlq_str dlq, struct dlq_str fallback_queue,
    const struct dlq_strlist *error_headers)
{
	const amqp_table_t *h = NULL;
	const amqp_field_value_t *v;
	struct dlq_str last;
	size_t i;

	memset(d, 0, sizeof(*d));
	d->dlq = dlq;
	d->props = props;
	d->body = body.bytes;
	d->body_len = body.len;
	if (props->_flags & AMQP_BASIC_MESSAGE_ID_FLAG)
		d->message_id = bytes_str(props->message_id);
	if (props->_flags & AMQP_BASIC_CORRELATION_ID_FLAG)
		d->correlation_id = bytes_str(props->correlation_id);
	if (props->_flags & AMQP_BASIC_HEADERS_FLAG)
		h = &props->headers;

	if ((v = dlq_table_get(h, "x-death")) != NULL)
		decode_xdeath(d, v);
	decode_counter(d, h, "x-retry-count", &d->retry_count,
	    &d->has_retry_count, "x-retry-count is not an integer");
	decode_counter(d, h, "x-delivery-count", &d->delivery_count,
	    &d->has_delivery_count, "x-delivery-count is not an integer");
	d->first_death_queue = str_field(h, "x-first-death-queue", d,
	    "x-first-death-queue is not a string");
	d->first_death_reason = str_field(h, "x-first-death-reason", d,
	    "x-first-death-reason is not a string");
	last = str_field(h, "x-last-death-queue", d,
	    "x-last-death-queue is not a string");

	/* The queue that put it here: the newest death, then the first one,
	 * then the dead-letter routing key (our topology sets it to Q). */
	if (last.p != NULL)
		d->queue = last;
	else if (d->n_xdeath > 0 && d->xdeath[0].queue.p != NULL)
		d->queue = d->xdeath[0].queue;
	else if (d->first_death_queue.p != NULL)
		d->queue = d->first_death_queue;
	else
		d->queue = fallback_queue;

	for (i = 0; error_headers != NULL && i < error_headers->n; i++)
		if ((v = dlq_table_get(h, error_headers->v[i])) != NULL &&
		    v->kind != AMQP_FIELD_KIND_VOID) {
			d->error = v;
			d->error_header = error_headers->v[i];
			break;
		}
}

static void
field_json(struct dlq_buf *b, const amqp_field_value_t *v, int depth);

/* A float as the shortest number that reads back to it (0.1, not
 * 0.10000000149011612 for a float's 0.1); null for infinities and NaN,
 * which JSON lacks. `single`: a 32-bit float. */
static void
add_float(struct dlq_buf *b, double f, bool single)
{
	char tmp[40];
	int p;

	if (!isfinite(f)) {
		dlq_buf_adds(b, "null");
		return;
	}
	for (p = single ? 6 : 15; p < 17; p++) {
		snprintf(tmp, sizeof(tmp), "%.*g", p, f);
		if (single ? strtof(tmp, NULL) == (float)f :
		    strtod(tmp, NULL) == f)
			break;
	}
	snprintf(tmp, sizeof(tmp), "%.*g", p, f);
	dlq_buf_adds(b, tmp);
}

static void
table_json(struct dlq_buf *b, const amqp_table_t *t, int depth)
{
	int i;

	if (depth > JSON_MAX_DEPTH) {
		dlq_buf_adds(b, "\"(nested too deep)\"");
		return;
	}
	dlq_buf_addc(b, '{');
	for (i = 0; i < t->num_entries; i++) {
		if (i > 0)
			dlq_buf_addc(b, ',');
		dlq_buf_json_str(b, t->entries[i].key.bytes,
		    t->entries[i].key.len);
		dlq_buf_addc(b, ':');
		field_json(b, &t->entries[i].value, depth + 1);
	}
	dlq_buf_addc(b, '}');
}

static void
field_json(struct dlq_buf *b, const amqp_field_value_t *v, int depth)
{
	int64_t n;
	int i;

	switch (v->kind) {
	case AMQP_FIELD_KIND_BOOLEAN:
		dlq_buf_adds(b, v->value.boolean ? "true" : "false");
		return;
	case AMQP_FIELD_KIND_F32:
	case AMQP_FIELD_KIND_F64:
		add_float(b, v->kind == AMQP_FIELD_KIND_F32 ? v->value.f32 :
		    v->value.f64, v->kind == AMQP_FIELD_KIND_F32);
		return;
	case AMQP_FIELD_KIND_DECIMAL: {
		double f = v->value.decimal.value;
		for (i = 0; i < v->value.decimal.decimals; i++)
			f /= 10;
		dlq_buf_printf(b, "%.*f", v->value.decimal.decimals, f);
		return;
	}
	case AMQP_FIELD_KIND_U64:
		dlq_buf_add_u64(b, v->value.u64);
		return;
	case AMQP_FIELD_KIND_TIMESTAMP:
		dlq_buf_addc(b, '"');
		dlq_buf_rfc3339(b, v->value.u64 > INT64_MAX ? 0 :
		    (int64_t)v->value.u64);
		dlq_buf_addc(b, '"');
		return;
	case AMQP_FIELD_KIND_UTF8:
	case AMQP_FIELD_KIND_BYTES:
		dlq_buf_json_str(b, v->value.bytes.bytes, v->value.bytes.len);
		return;
	case AMQP_FIELD_KIND_TABLE:
		table_json(b, &v->value.table, depth);
		return;
	case AMQP_FIELD_KIND_ARRAY:
		if (depth > JSON_MAX_DEPTH) {
			dlq_buf_adds(b, "\"(nested too deep)\"");
			return;
		}
		dlq_buf_addc(b, '[');
		for (i = 0; i < v->value.array.num_entries; i++) {
			if (i > 0)
				dlq_buf_addc(b, ',');
			field_json(b, &v->value.array.entries[i], depth + 1);
		}
		dlq_buf_addc(b, ']');
		return;
	default:
		if (dlq_field_to_i64(v, &n))
			dlq_buf_add_i64(b, n);
		else
			dlq_buf_adds(b, "null");
		return;
	}
}

void
dlq_field_json(struct dlq_buf *b, const amqp_field_value_t *v)
{
	field_json(b, v, 0);
}

void
dlq_table_json(struct dlq_buf *b, const amqp_table_t *t)
{
	table_json(b, t, 0);
}

/* Past `max`, the redaction reads no more than a short look-ahead: more
 * than that of a long header is not made text. */
#define ERROR_READ_PAST	4096
_Static_assert(ERROR_READ_PAST > DLQ_REDACT_LOOKAHEAD,
    "an error text made text in part must still read as cut");

/* An error header's string, redacted. Its bytes need not be UTF-8 and
 * may hold a NUL: each such byte becomes U+FFFD first, so that the log
 * line, the archive's TEXT column, the digest and the signature all read
 * the same whole text. */
static void
error_string(amqp_bytes_t e, const struct dlq_redact *r, size_t max,
    struct dlq_buf *out)
{
	size_t n = e.len;
	struct dlq_buf text;

	if (n > max + ERROR_READ_PAST)
		n = max + ERROR_READ_PAST;
	if (dlq_text_len(e.bytes, n) == n) {
		dlq_redact_text(r, e.bytes, e.len, max, out);
		return;
	}
	dlq_buf_init(&text);
	dlq_buf_add_text(&text, e.bytes, n);
	dlq_redact_text(r, text.data, text.len, max, out);
	dlq_buf_release(&text);
}

void
dlq_deadletter_error_text(const struct dlq_dead_letter *d,
    const struct dlq_redact *r, size_t max, struct dlq_buf *out)
{
	struct dlq_buf tmp;

	if (d->error == NULL)
		return;
	if (is_string(d->error)) {
		error_string(d->error->value.bytes, r, max, out);
		return;
	}
	/* A structured error (e.g. a table): its JSON text, redacted. */
	dlq_buf_init(&tmp);
	dlq_field_json(&tmp, d->error);
	dlq_redact_payload(&(struct dlq_redact){ r->keys, r->emails,
	    r->digits_min, max, r->key_starts }, tmp.data, tmp.len, out,
	    &(bool){ false });
	dlq_buf_release(&tmp);
}

static void
log_str(struct dlq_buf *b, const char *key, struct dlq_str s)
{
	dlq_log_key(b, key);
	if (s.p == NULL)
		dlq_buf_adds(b, "null");
	else
		dlq_buf_json_str(b, s.p, s.n);
}

static void
log_xdeath(struct dlq_buf *b, const struct dlq_xdeath *x)
{
	int i;

	dlq_buf_adds(b, "{\"count\":");
	if (x->count >= 0)
		dlq_buf_add_i64(b, x->count);
	else
		dlq_buf_adds(b, "null");
	log_str(b, "reason", x->reason);
	log_str(b, "queue", x->queue);
	log_str(b, "exchange", x->exchange);
	dlq_log_key(b, "routing_keys");
	dlq_buf_addc(b, '[');
	for (i = 0; x->routing_keys && i < x->routing_keys->num_entries; i++) {
		if (i > 0)
			dlq_buf_addc(b, ',');
		dlq_field_json(b, &x->routing_keys->entries[i]);
	}
	dlq_buf_addc(b, ']');
	dlq_log_key(b, "time");
	if (x->time >= 0) {
		dlq_buf_addc(b, '"');
		dlq_buf_rfc3339(b, x->time);
		dlq_buf_addc(b, '"');
	} else
		dlq_buf_adds(b, "null");
	if (x->original_expiration.p != NULL)
		log_str(b, "original_expiration", x->original_expiration);
	dlq_buf_addc(b, '}');
}

int64_t
dlq_deadletter_first_death_ms(const struct dlq_dead_letter *d)
{
	int64_t first = 0;
	size_t i;

	for (i = 0; i < d->n_xdeath; i++)
		if (d->xdeath[i].time > 0 && (first == 0 ||
		    d->xdeath[i].time * 1000 < first))
			first = d->xdeath[i].time * 1000;
	return first;
}

void
dlq_deadletter_xdeath_json(const struct dlq_dead_letter *d, struct dlq_buf *b)
{
	size_t i;

	dlq_buf_addc(b, '[');
	for (i = 0; i < d->n_xdeath; i++) {
		if (i > 0)
			dlq_buf_addc(b, ',');
		log_xdeath(b, &d->xdeath[i]);
	}
	dlq_buf_addc(b, ']');
}

void
dlq_deadletter_log_fields(const struct dlq_dead_letter *d,
    const struct dlq_redact *r, const struct dlq_buf *error,
    const struct dlq_buf *xdeath, struct dlq_buf *scratch, struct dlq_buf *b)
{
	enum dlq_payload_kind kind;
	bool truncated;
	size_t i;

	log_str(b, "dlq", d->dlq);
	log_str(b, "queue", d->queue);
	log_str(b, "message_id", d->message_id);
	log_str(b, "correlation_id", d->correlation_id);
	dlq_log_key(b, "x_retry_count");
	if (d->has_retry_count)
		dlq_buf_add_i64(b, d->retry_count);
	else
		dlq_buf_adds(b, "null");
	if (d->has_delivery_count)
		dlq_log_int(b, "x_delivery_count", d->delivery_count);
	dlq_log_key(b, "x_death");
	if (xdeath->len > 0)
		dlq_buf_add(b, xdeath->data, xdeath->len);
	else		/* it ran out of memory */
		dlq_buf_adds(b, "null");
	if (d->n_xdeath_total > d->n_xdeath)
		dlq_log_int(b, "x_death_omitted",
		    (int64_t)(d->n_xdeath_total - d->n_xdeath));

	dlq_log_key(b, "error");
	if (d->error != NULL && error != NULL) {
		dlq_buf_json_str(b, error->data, error->len);
		dlq_log_str(b, "error_header", d->error_header);
	} else
		dlq_buf_adds(b, "null");

	dlq_log_int(b, "payload_bytes", (int64_t)d->body_len);
	dlq_buf_reset(scratch);
	kind = dlq_redact_payload(r, d->body, d->body_len, scratch,
	    &truncated);
	dlq_log_str(b, "payload_kind", dlq_payload_kind_name(kind));
	dlq_log_key(b, "payload");
	if (kind == DLQ_PAYLOAD_BINARY)
		dlq_buf_adds(b, "null");
	else
		dlq_buf_json_str(b, scratch->data ? scratch->data : "",
		    scratch->len);
	if (truncated)
		dlq_log_bool(b, "payload_truncated", true);

	if (d->n_problems > 0) {
		dlq_log_key(b, "problems");
		dlq_buf_addc(b, '[');
		for (i = 0; i < d->n_problems; i++) {
			if (i > 0)
				dlq_buf_addc(b, ',');
			dlq_buf_json_cstr(b, d->problems[i]);
		}
		dlq_buf_addc(b, ']');
	}
}
