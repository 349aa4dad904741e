/* publisher.c - publish with confirms and mandatory; wait for the verdict
 * frame by frame (rabbitmq-c 0.11 has no confirm helper). */
#include "publisher.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "deadletter.h"

#define WRITE_TIMEOUT_MS	5000
#define CONFIRM_TIMEOUT_MS	10000

struct dlq_publisher {
	const struct dlq_config	*cfg;
	const char		*name;	/* the connection's, for the broker */
	amqp_connection_state_t	 conn;	/* NULL: reconnect before use */
	uint64_t		 seq;	/* delivery tag of the last publish */
	uint64_t		 conn_gen;	/* connections made */
	bool			 blocked;	/* connection.blocked, not yet
						   unblocked */
	char			 block_reason[64];
	int64_t			 last_used_ms;	/* monotonic */
	bool			 hold;	/* never replaced for idleness */
};

const char *
dlq_pub_outcome_name(enum dlq_pub_outcome o)
{
	static const char *const names[] = { "published", "failed", "unknown" };

	return names[o];
}

static int
connect_confirmed(struct dlq_publisher *p, char *why, size_t n)
{
	enum dlq_amqp_status st;
	amqp_rpc_reply_t r;

	p->conn = dlq_amqp_connect(p->cfg, p->name, &st, why, n);
	if (p->conn == NULL)
		return -1;
	amqp_confirm_select(p->conn, DLQ_AMQP_CHANNEL);
	r = amqp_get_rpc_reply(p->conn);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		dlq_amqp_reply_text(r, why, n);
		dlq_amqp_close(p->conn);
		p->conn = NULL;
		return -1;
	}
	p->seq = 0;
	p->conn_gen++;
	p->blocked = false;
	p->last_used_ms = dlq_now_ms();
	return 0;
}

struct dlq_publisher *
dlq_publisher_open(const struct dlq_config *c, const char *name, char *why,
    size_t n)
{
	struct dlq_publisher *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		snprintf(why, n, "out of memory");
		return NULL;
	}
	p->cfg = c;
	p->name = name;
	if (connect_confirmed(p, why, n) == -1) {
		free(p);
		return NULL;
	}
	return p;
}

void
dlq_publisher_close(struct dlq_publisher *p)
{
	if (p == NULL)
		return;
	dlq_amqp_close(p->conn);
	free(p);
}

amqp_connection_state_t
dlq_publisher_conn(struct dlq_publisher *p)
{
	p->last_used_ms = dlq_now_ms();	/* in use: not idle */
	return p->conn;
}

void
dlq_publisher_hold(struct dlq_publisher *p)
{
	p->hold = true;
}

static void
broken(struct dlq_publisher *p)
{
	dlq_amqp_close(p->conn);
	p->conn = NULL;
}

static void
settle(struct dlq_pub_pending *e, enum dlq_pub_outcome o, const char *detail)
{
	e->settled = true;
	e->out = o;
	snprintf(e->detail, sizeof(e->detail), "%.511s%.159s", detail, e->note);
}

/* Settles every open entry with the same verdict; their count. */
static size_t
settle_open(struct dlq_pub_pending *v, size_t n, enum dlq_pub_outcome o,
    const char *detail)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (!v[i].settled) {
			settle(&v[i], o, detail);
			k++;
		}
	return k;
}

/* The open entry a basic.return is about: by its key header, or the only
 * open one when the message has none. */
static struct dlq_pub_pending *
returned_entry(struct dlq_pub_pending *v, size_t n, size_t open,
    const amqp_message_t *msg, const char *key_header)
{
	const amqp_field_value_t *f = NULL;
	int64_t key;
	size_t i;

	if (key_header != NULL &&
	    (msg->properties._flags & AMQP_BASIC_HEADERS_FLAG))
		f = dlq_table_get(&msg->properties.headers, key_header);
	for (i = 0; i < n; i++) {
		if (v[i].settled)
			continue;
		if (f != NULL ? dlq_field_to_i64(f, &key) && key == v[i].key :
		    open == 1)
			return &v[i];
	}
	return NULL;
}

/* A confirm of an earlier message (posted before a block, given up as
 * unknown): a return without a key that came just before it was its own,
 * not the open entry's. */
static void
late_confirm(struct dlq_pub_pending *v, size_t n, const char *key_header)
{
	size_t i;

	if (key_header != NULL)
		return;
	for (i = 0; i < n; i++)
		if (!v[i].settled)
			v[i].returned = false;
}

/* An ack or nack: settles the open entries it covers. */
static void
confirm(struct dlq_pub_pending *v, size_t n, uint64_t tag, bool multiple,
    bool ack, const char *key_header)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (v[i].settled || (multiple ? v[i].tag > tag : v[i].tag != tag))
			continue;
		if (!ack)
			settle(&v[i], DLQ_PUB_FAILED, "nacked by the broker");
		else if (v[i].returned) {
			v[i].settled = true;	/* its detail says why */
			v[i].out = DLQ_PUB_FAILED;
		} else
			settle(&v[i], DLQ_PUB_OK, "confirmed by the broker");
		k++;
	}
	if (k == 0 && !multiple)
		late_confirm(v, n, key_header);
}

/* Open entries of `v`; those posted on a connection since lost are
 * settled as unknown first. */
static size_t
count_open(struct dlq_publisher *p, struct dlq_pub_pending *v, size_t n)
{
	size_t i, open = 0;

	for (i = 0; i < n; i++) {
		if (v[i].settled)
			continue;
		if (p->conn == NULL || v[i].conn_gen != p->conn_gen)
			settle(&v[i], DLQ_PUB_UNKNOWN, "connection lost before the "
			    "confirm");
		else
			open++;
	}
	return open;
}

static bool
any_confirmed(const struct dlq_pub_pending *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].settled && v[i].out == DLQ_PUB_OK)
			return true;
	return false;
}

/* Reads one frame, waiting up to `ms`, and applies it to the open
 * entries: 1 read, 0 nothing came, -1 the connection or channel ended
 * (every open entry settled). */
static int
read_verdict(struct dlq_publisher *p, struct dlq_pub_pending *v, size_t n,
    const char *key_header, int64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	struct dlq_pub_pending *e;
	amqp_frame_t f;
	amqp_message_t msg;
	char detail[512];
	int rc;

	rc = amqp_simple_wait_frame_noblock(p->conn, &f, &tv);
	if (rc == AMQP_STATUS_TIMEOUT)
		return 0;
	if (rc != AMQP_STATUS_OK) {
		snprintf(detail, sizeof(detail), "connection lost before the "
		    "confirm: %s", amqp_error_string2(rc));
		settle_open(v, n, DLQ_PUB_UNKNOWN, detail);
		broken(p);
		return -1;
	}
	if (f.frame_type != AMQP_FRAME_METHOD)
		return 1;
	switch (f.payload.method.id) {
	case AMQP_BASIC_RETURN_METHOD: {
		amqp_basic_return_t *m = f.payload.method.decoded;
		snprintf(detail, sizeof(detail), "returned by the broker: %u %.*s "
		    "(no queue bound to the target)", m->reply_code,
		    (int)m->reply_text.len, (char *)m->reply_text.bytes);
		if (amqp_read_message(p->conn, f.channel, &msg, 0).reply_type !=
		    AMQP_RESPONSE_NORMAL)
			break;
		if ((e = returned_entry(v, n, count_open(p, v, n), &msg,
		    key_header)) != NULL) {
			e->returned = true;
			snprintf(e->detail, sizeof(e->detail), "%s%s", detail,
			    e->note);
		}
		amqp_destroy_message(&msg);
		break;
	}
	case AMQP_BASIC_ACK_METHOD: {
		amqp_basic_ack_t *m = f.payload.method.decoded;
		confirm(v, n, m->delivery_tag, m->multiple, true, key_header);
		break;
	}
	case AMQP_BASIC_NACK_METHOD: {
		amqp_basic_nack_t *m = f.payload.method.decoded;
		confirm(v, n, m->delivery_tag, m->multiple, false, key_header);
		break;
	}
	case AMQP_CONNECTION_BLOCKED_METHOD: {
		amqp_connection_blocked_t *m = f.payload.method.decoded;
		p->blocked = true;
		snprintf(p->block_reason, sizeof(p->block_reason), "%.*s",
		    (int)m->reason.len, (char *)m->reason.bytes);
		break;
	}
	case AMQP_CONNECTION_UNBLOCKED_METHOD:
		p->blocked = false;
		break;
	case AMQP_CHANNEL_CLOSE_METHOD: {
		/* the broker refused a publish (a missing exchange, no access)
		 * and dropped what followed it. The one open message, or all
		 * when none was confirmed and the refusal is about the target
		 * they share (404, 403), went nowhere; otherwise some before
		 * it may have been routed. */
		amqp_channel_close_t *m = f.payload.method.decoded;
		bool none = count_open(p, v, n) == 1 || (!any_confirmed(v, n) &&
		    (m->reply_code == AMQP_NOT_FOUND ||
		    m->reply_code == AMQP_ACCESS_REFUSED));
		snprintf(detail, sizeof(detail), "%s by the broker: %u %.*s",
		    none ? "refused" : "channel closed before the confirm",
		    m->reply_code, (int)m->reply_text.len,
		    (char *)m->reply_text.bytes);
		settle_open(v, n, none ? DLQ_PUB_FAILED : DLQ_PUB_UNKNOWN, detail);
		broken(p);
		return -1;
	}
	case AMQP_CONNECTION_CLOSE_METHOD:
		settle_open(v, n, DLQ_PUB_UNKNOWN, "connection closed by the broker "
		    "before the confirm");
		broken(p);
		return -1;
	default:
		break;
	}
	return 1;
}

void
dlq_publisher_pump(struct dlq_publisher *p, struct dlq_pub_pending *v,
    size_t n, const char *key_header)
{
	while (p->conn != NULL && count_open(p, v, n) > 0 &&
	    read_verdict(p, v, n, key_header, 0) == 1)
		;
}

void
dlq_publisher_settle(struct dlq_publisher *p, struct dlq_pub_pending *v,
    size_t n, const char *key_header)
{
	int64_t deadline = dlq_now_ms() + CONFIRM_TIMEOUT_MS, left;
	char detail[512];

	while (count_open(p, v, n) > 0) {
		if ((left = deadline - dlq_now_ms()) <= 0 && p->blocked) {
			/* the broker holds them unread: it may still deliver
			 * them when the alarm clears. Keep the connection, to
			 * hear connection.unblocked. */
			snprintf(detail, sizeof(detail), "no confirm within %d s: "
			    "the broker blocks publishing (%s); it may deliver "
			    "this one when the alarm clears",
			    CONFIRM_TIMEOUT_MS / 1000, p->block_reason);
			settle_open(v, n, DLQ_PUB_UNKNOWN, detail);
			return;
		}
		if (left <= 0) {
			snprintf(detail, sizeof(detail), "no confirm from the "
			    "broker within %d s", CONFIRM_TIMEOUT_MS / 1000);
			settle_open(v, n, DLQ_PUB_UNKNOWN, detail);
			broken(p);
			return;
		}
		if (read_verdict(p, v, n, key_header, left) == -1)
			return;
	}
}

/* Reads what the broker sent meanwhile (connection.unblocked, late
 * confirms) without waiting. */
static void
poll_frames(struct dlq_publisher *p)
{
	struct timeval tv = { 0, 0 };
	amqp_frame_t f;

	while (p->conn != NULL && amqp_simple_wait_frame_noblock(p->conn, &f,
	    &tv) == AMQP_STATUS_OK)
		if (f.frame_type == AMQP_FRAME_METHOD &&
		    f.payload.method.id == AMQP_CONNECTION_UNBLOCKED_METHOD)
			p->blocked = false;
}

bool
dlq_publisher_blocked(struct dlq_publisher *p)
{
	if (p->blocked)
		poll_frames(p);
	return p->blocked;
}

int
dlq_publisher_post(struct dlq_publisher *p, const char *exchange,
    const char *rk, const amqp_basic_properties_t *props, amqp_bytes_t body,
    struct dlq_pub_pending *e)
{
	struct pollfd pfd;
	char detail[512];
	int rc;

	e->settled = e->returned = false;
	/* heartbeats are only serviced inside library calls: a connection
	 * left idle (a canary's watch, the redrive's interval) may have been
	 * closed by the broker meanwhile. Start afresh before sending, so a
	 * dead connection never turns a message into an unknown outcome. */
	if (p->conn != NULL && !p->blocked && !p->hold &&
	    p->cfg->heartbeat_s > 0 &&
	    dlq_now_ms() - p->last_used_ms > p->cfg->heartbeat_s * 1000 / 2)
		broken(p);
	if (p->conn == NULL && connect_confirmed(p, detail,
	    sizeof(detail)) == -1) {
		settle(e, DLQ_PUB_FAILED, detail);	/* nothing was sent */
		return -1;
	}
	p->last_used_ms = dlq_now_ms();
	if (dlq_publisher_blocked(p)) {
		snprintf(detail, sizeof(detail), "not sent: the broker blocks "
		    "publishing (%s)", p->block_reason);
		settle(e, DLQ_PUB_FAILED, detail);
		return -1;
	}
	pfd.fd = amqp_get_sockfd(p->conn);
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, WRITE_TIMEOUT_MS) != 1) {
		snprintf(detail, sizeof(detail), "broker not accepting data "
		    "within %d s", WRITE_TIMEOUT_MS / 1000);
		settle(e, DLQ_PUB_FAILED, detail);
		broken(p);
		return -1;
	}
	rc = amqp_basic_publish(p->conn, DLQ_AMQP_CHANNEL,
	    amqp_cstring_bytes(exchange), amqp_cstring_bytes(rk), 1, 0, props,
	    body);
	if (rc == AMQP_STATUS_BAD_AMQP_DATA) {
		/* rabbitmq-c could not encode it (a name or a header over
		 * what AMQP carries): at most a part went out, which the
		 * broker discards with the connection */
		snprintf(detail, sizeof(detail), "not sent: the message cannot "
		    "be encoded (%s: a name of more than 255 bytes?)",
		    amqp_error_string2(rc));
		settle(e, DLQ_PUB_FAILED, detail);
		broken(p);
		return -1;
	}
	if (rc != AMQP_STATUS_OK) {
		snprintf(detail, sizeof(detail), "publish failed: %s",
		    amqp_error_string2(rc));
		settle(e, DLQ_PUB_UNKNOWN, detail);
		broken(p);
		return -1;
	}
	e->tag = ++p->seq;
	e->conn_gen = p->conn_gen;
	return 0;
}

enum dlq_pub_outcome
dlq_publisher_send(struct dlq_publisher *p, const char *exchange,
    const char *rk, const amqp_basic_properties_t *props, amqp_bytes_t body,
    char *detail, size_t n)
{
	struct dlq_pub_pending one;

	memset(&one, 0, sizeof(one));
	if (dlq_publisher_post(p, exchange, rk, props, body, &one) == 0)
		dlq_publisher_settle(p, &one, 1, NULL);
	snprintf(detail, n, "%s", one.detail);
	return one.out;
}
