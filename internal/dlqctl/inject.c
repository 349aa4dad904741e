/* inject.c - publish, fail through the retry queue, reject. */
#include "inject.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "amqp.h"
#include "deadletter.h"
#include "stopsig.h"

#define WAIT_EXTRA_MS	60000
#define STOP_EXTRA_MS	5000	/* after an interrupt, past the retry delay */
/* Other messages met in the work queue are held unacked, then put back;
 * past this many the run stops: the queue is not a demo queue. */
#define HOLD_MAX	10000

static int
publish(amqp_connection_state_t conn, const char *exchange, const char *rk,
    amqp_basic_properties_t *p, amqp_bytes_t body)
{
	return amqp_basic_publish(conn, DLQ_AMQP_CHANNEL,
	    amqp_cstring_bytes(exchange), amqp_cstring_bytes(rk), 0, 0, p, body);
}

/* The same message, one retry later: headers copied, x-retry-count + 1. */
static int
retry(amqp_connection_state_t conn, const struct dlq_queue *q,
    amqp_message_t *m, int64_t n)
{
	amqp_basic_properties_t p = m->properties;
	amqp_table_entry_t *e;
	int i, k = 0, rc;

	e = calloc((size_t)p.headers.num_entries + 1, sizeof(*e));
	if (e == NULL)
		return -1;
	for (i = 0; (p._flags & AMQP_BASIC_HEADERS_FLAG) &&
	    i < p.headers.num_entries; i++)
		if (p.headers.entries[i].key.len != 13 ||
		    memcmp(p.headers.entries[i].key.bytes, "x-retry-count", 13))
			e[k++] = p.headers.entries[i];
	e[k].key = amqp_cstring_bytes("x-retry-count");
	e[k].value.kind = AMQP_FIELD_KIND_I32;
	e[k++].value.value.i32 = (int32_t)n;
	p.headers.entries = e;
	p.headers.num_entries = k;
	p._flags |= AMQP_BASIC_HEADERS_FLAG;
	rc = publish(conn, "", q->retry_name, &p, m->body);
	free(e);
	return rc;
}

/* Whether a message got from the work queue is one of this run's: its
 * message_id begins with the run's prefix. */
static bool
ours(const amqp_message_t *m, const char *prefix)
{
	size_t n = strlen(prefix);

	return (m->properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) &&
	    m->properties.message_id.len > n &&
	    memcmp(m->properties.message_id.bytes, prefix, n) == 0;
}

/* Whether the work queue is there and nobody consumes it: a live
 * service's consumers would take demo messages and act on them (an SMS
 * sent, an order placed). Says why not. */
static bool
unconsumed(amqp_connection_state_t conn, const char *name)
{
	amqp_queue_declare_ok_t *ok;
	amqp_rpc_reply_t r;
	char why[256];

	ok = amqp_queue_declare(conn, DLQ_AMQP_CHANNEL, amqp_cstring_bytes(name),
	    1, 0, 0, 0, amqp_empty_table);
	r = amqp_get_rpc_reply(conn);
	if (ok == NULL || r.reply_type != AMQP_RESPONSE_NORMAL) {
		fprintf(stderr, "dlqctl: %s: %s (dlqctl topology assert "
		    "declares it)\n", name, dlq_amqp_reply_text(r, why,
		    sizeof(why)));
		return false;
	}
	if (ok->consumer_count > 0) {
		fprintf(stderr, "dlqctl: %s has %u consumer%s (a live service?): "
		    "they would take the demo messages and act on them; inject "
		    "is for a queue nobody consumes. Nothing was published\n",
		    name, (unsigned)ok->consumer_count,
		    ok->consumer_count == 1 ? "" : "s");
		return false;
	}
	return true;
}

int
dlq_inject(const struct dlq_config *c, const struct dlq_topology *t,
    const char *name, int count, const char *error, int retries, FILE *out)
{
	const struct dlq_queue *q;
	const char *near;
	amqp_connection_state_t conn;
	enum dlq_amqp_status st;
	amqp_basic_properties_t p;
	amqp_table_entry_t h[2];
	amqp_rpc_reply_t r;
	amqp_message_t m;
	const amqp_field_value_t *v;
	char why[512], prefix[48], id[64], body[160];
	int64_t n, deadline;
	uint64_t tag;
	int dead = 0, held = 0, k;
	bool stopping = false;
	static const atomic_bool never = false;

	if ((q = dlq_topology_find(t, name)) == NULL) {
		fprintf(stderr, "dlqctl: %s is not a work queue of the topology",
		    name);
		if ((near = dlq_topology_suggest(t, name)) != NULL)
			fprintf(stderr, "; did you mean '%s'?", near);
		fputc('\n', stderr);
		return -1;
	}
	if (strcmp(q->name, name) != 0) {	/* its DLQ */
		fprintf(stderr, "dlqctl: %s is the DLQ of %s: inject into the "
		    "work queue (--queue %s)\n", name, q->name, q->name);
		return -1;
	}
	if (retries > 0 && q->retry_name == NULL) {
		fprintf(stderr, "dlqctl: %s has no retry queue (retry_delay_ms = "
		    "0); use --retries 0\n", name);
		return -1;
	}
	if ((conn = dlq_amqp_connect(c, "dlqctl inject", &st, why,
	    sizeof(why))) == NULL) {
		fprintf(stderr, "dlqctl: %s\n", why);
		return -1;
	}
	if (!unconsumed(conn, name)) {
		dlq_amqp_close(conn);
		return -1;
	}
	snprintf(prefix, sizeof(prefix), "inject-%lld-%ld-", (long long)
	    time(NULL), (long)getpid());
	/* ^C, a closed terminal or a kill: the demo messages still on
	 * their way through the retry queue are rejected as they come
	 * back, not left in the work queue for nobody; a second one (only
	 * the first is caught) leaves them */
	dlq_stop_catch(true);
	for (k = 0; k < count; k++) {
		if (dlq_stop_asked()) {	/* fail those published, no more */
			count = k;
			break;
		}
		memset(&p, 0, sizeof(p));
		snprintf(id, sizeof(id), "%s%d", prefix, k);
		snprintf(body, sizeof(body), "{\"demo\":true,\"n\":%d,\"email\":"
		    "\"jane.doe@example.com\",\"phone\":\"+15551234567\"}", k);
		p._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
		    AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
		    AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_APP_ID_FLAG;
		p.message_id = amqp_cstring_bytes(id);
		p.timestamp = (uint64_t)time(NULL);
		p.content_type = amqp_cstring_bytes("application/json");
		p.app_id = amqp_cstring_bytes("dlqctl-inject");
		p.delivery_mode = 2;
		h[0].key = amqp_cstring_bytes("x-retry-count");
		h[0].value.kind = AMQP_FIELD_KIND_I32;
		h[0].value.value.i32 = 0;
		h[1].key = amqp_cstring_bytes("x-error");
		h[1].value.kind = AMQP_FIELD_KIND_UTF8;
		h[1].value.value.bytes = amqp_cstring_bytes(error);
		p.headers.num_entries = 2;
		p.headers.entries = h;
		if (publish(conn, t->work_exchange, name, &p,
		    amqp_cstring_bytes(body)) != AMQP_STATUS_OK) {
			fprintf(stderr, "dlqctl: publish failed\n");
			dlq_amqp_close(conn);
			return -1;
		}
	}
	if (retries == 0)
		fprintf(out, "published %d message%s to %s; rejecting each "
		    "at once\n", count, count == 1 ? "" : "s", name);
	else
		fprintf(out, "published %d message%s to %s; failing each %d "
		    "time%s through %s (%lld s each), then rejecting: about "
		    "%lld s\n", count, count == 1 ? "" : "s", name, retries,
		    retries == 1 ? "" : "s", q->retry_name,
		    (long long)(q->retry_delay_ms + 999) / 1000,
		    ((long long)retries * q->retry_delay_ms + 999) / 1000);
	fflush(out);	/* the wait may be long: say it now, even to a pipe */
	deadline = dlq_now_ms() + (int64_t)retries * q->retry_delay_ms +
	    WAIT_EXTRA_MS;
	while (dead < count && held < HOLD_MAX && dlq_now_ms() < deadline) {
		if (dlq_stop_asked() && !stopping) {
			stopping = true;
			retries = 0;
			deadline = dlq_now_ms() + q->retry_delay_ms +
			    STOP_EXTRA_MS;
			fprintf(out, "interrupted: the %d still on their way are "
			    "rejected as they come back (within %lld s); "
			    "interrupt again to leave them in %s\n",
			    count - dead, (long long)(q->retry_delay_ms +
			    STOP_EXTRA_MS + 999) / 1000, name);
			fflush(out);
		}
		amqp_maybe_release_buffers(conn);
		r = amqp_basic_get(conn, DLQ_AMQP_CHANNEL, amqp_cstring_bytes(name),
		    0);
		if (r.reply_type != AMQP_RESPONSE_NORMAL)
			break;
		if (r.reply.id != AMQP_BASIC_GET_OK_METHOD) {
			dlq_sleep_ms(50, &never);
			continue;
		}
		tag = ((amqp_basic_get_ok_t *)r.reply.decoded)->delivery_tag;
		if (amqp_read_message(conn, DLQ_AMQP_CHANNEL, &m, 0).reply_type !=
		    AMQP_RESPONSE_NORMAL)
			break;
		if (!ours(&m, prefix)) {
			held++;		/* another's: unacked, put back below */
			amqp_destroy_message(&m);
			continue;
		}
		n = 0;
		if ((m.properties._flags & AMQP_BASIC_HEADERS_FLAG) &&
		    (v = dlq_table_get(&m.properties.headers, "x-retry-count")))
			dlq_field_to_i64(v, &n);
		if (n < retries && retry(conn, q, &m, n + 1) == AMQP_STATUS_OK)
			amqp_basic_ack(conn, DLQ_AMQP_CHANNEL, tag, 0);
		else {
			amqp_basic_reject(conn, DLQ_AMQP_CHANNEL, tag, 0);
			dead++;
		}
		amqp_destroy_message(&m);
	}
	/* every delivery still unacked on the channel is another's */
	if (held > 0)
		amqp_basic_nack(conn, DLQ_AMQP_CHANNEL, 0, 1, 1);
	dlq_amqp_close(conn);
	fprintf(out, "%d of %d dead-lettered into %s\n", dead, count, q->dlq_name);
	if (!q->monitored)
		fprintf(out, "note: %s is not monitored: the worker leaves its "
		    "dead letters there (dlqctl replay --from-queue %s reads "
		    "them)\n", q->dlq_name, q->dlq_name);
	if (held > 0)
		fprintf(out, "%d other message%s met in %s %s put back, not "
		    "failed%s\n", held, held == 1 ? "" : "s", name, held == 1 ?
		    "was" : "were", held >= HOLD_MAX ? "; stopped there: inject "
		    "is for a demo queue, not a live one" : "");
	return dead == count ? 0 : -1;
}
