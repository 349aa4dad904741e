/* publisher.c - publish with confirms and mandatory; wait for the verdict
 * frame by frame (rabbitmq-c 0.11 has no confirm helper). */
#include "publisher.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"

#define WRITE_TIMEOUT_MS	5000
#define CONFIRM_TIMEOUT_MS	10000

struct dlq_publisher {
	const struct dlq_config	*cfg;
	const char		*name;	/* the connection's, for the broker */
	amqp_connection_state_t	 conn;	/* NULL: reconnect before use */
	uint64_t		 seq;	/* delivery tag of the last publish */
	bool			 blocked;	/* connection.blocked, not yet
						   unblocked */
	char			 block_reason[64];
	int64_t			 last_used_ms;	/* monotonic */
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

static enum dlq_pub_outcome
broken(struct dlq_publisher *p, enum dlq_pub_outcome o)
{
	dlq_amqp_close(p->conn);
	p->conn = NULL;
	return o;
}

/* Waits for the ack / nack of p->seq; a basic.return before the ack
 * means the message was not routed. */
static enum dlq_pub_outcome
await_confirm(struct dlq_publisher *p, char *detail, size_t n)
{
	int64_t deadline = dlq_now_ms() + CONFIRM_TIMEOUT_MS, left;
	amqp_frame_t f;
	amqp_message_t msg;
	struct timeval tv;
	bool returned = false;
	int rc;

	for (;;) {
		if ((left = deadline - dlq_now_ms()) <= 0 && p->blocked) {
			/* the broker holds it unread: it may still deliver it
			 * when the alarm clears. Keep the connection, to hear
			 * connection.unblocked. */
			snprintf(detail, n, "no confirm within %d s: the broker "
			    "blocks publishing (%s); it may deliver this one when "
			    "the alarm clears", CONFIRM_TIMEOUT_MS / 1000,
			    p->block_reason);
			return DLQ_PUB_UNKNOWN;
		}
		if (left <= 0) {
			snprintf(detail, n, "no confirm from the broker within "
			    "%d s", CONFIRM_TIMEOUT_MS / 1000);
			return broken(p, DLQ_PUB_UNKNOWN);
		}
		tv.tv_sec = left / 1000;
		tv.tv_usec = (left % 1000) * 1000;
		rc = amqp_simple_wait_frame_noblock(p->conn, &f, &tv);
		if (rc == AMQP_STATUS_TIMEOUT)
			continue;
		if (rc != AMQP_STATUS_OK) {
			snprintf(detail, n, "connection lost before the confirm: "
			    "%s", amqp_error_string2(rc));
			return broken(p, DLQ_PUB_UNKNOWN);
		}
		if (f.frame_type != AMQP_FRAME_METHOD)
			continue;
		switch (f.payload.method.id) {
		case AMQP_BASIC_RETURN_METHOD: {
			amqp_basic_return_t *m = f.payload.method.decoded;
			snprintf(detail, n, "returned by the broker: %u %.*s "
			    "(no queue bound to the target)", m->reply_code,
			    (int)m->reply_text.len, (char *)m->reply_text.bytes);
			returned = true;
			if (amqp_read_message(p->conn, f.channel, &msg, 0).reply_type
			    == AMQP_RESPONSE_NORMAL)
				amqp_destroy_message(&msg);
			break;
		}
		case AMQP_BASIC_ACK_METHOD: {
			amqp_basic_ack_t *m = f.payload.method.decoded;
			if (m->delivery_tag < p->seq && !m->multiple) {
				/* a late confirm of an earlier message (sent
				 * before a block); its return was its own */
				returned = false;
				break;
			}
			if (returned)
				return DLQ_PUB_FAILED;
			snprintf(detail, n, "confirmed by the broker");
			return DLQ_PUB_OK;
		}
		case AMQP_BASIC_NACK_METHOD: {
			amqp_basic_nack_t *m = f.payload.method.decoded;
			if (m->delivery_tag < p->seq && !m->multiple) {
				returned = false;
				break;
			}
			snprintf(detail, n, "nacked by the broker");
			return DLQ_PUB_FAILED;
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
			amqp_channel_close_t *m = f.payload.method.decoded;
			snprintf(detail, n, "refused by the broker: %u %.*s",
			    m->reply_code, (int)m->reply_text.len,
			    (char *)m->reply_text.bytes);
			return broken(p, DLQ_PUB_FAILED);
		}
		case AMQP_CONNECTION_CLOSE_METHOD:
			snprintf(detail, n, "connection closed by the broker before "
			    "the confirm");
			return broken(p, DLQ_PUB_UNKNOWN);
		default:
			break;
		}
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

enum dlq_pub_outcome
dlq_publisher_send(struct dlq_publisher *p, const char *exchange,
    const char *rk, const amqp_basic_properties_t *props, amqp_bytes_t body,
    char *detail, size_t n)
{
	struct pollfd pfd;
	int rc;

	/* heartbeats are only serviced inside library calls: a connection
	 * left idle (a canary's watch, the redrive's interval) may have been
	 * closed by the broker meanwhile. Start afresh before sending, so a
	 * dead connection never turns a message into an unknown outcome. */
	if (p->conn != NULL && !p->blocked && p->cfg->heartbeat_s > 0 &&
	    dlq_now_ms() - p->last_used_ms > p->cfg->heartbeat_s * 1000 / 2) {
		dlq_amqp_close(p->conn);
		p->conn = NULL;
	}
	if (p->conn == NULL && connect_confirmed(p, detail, n) == -1)
		return DLQ_PUB_FAILED;	/* nothing was sent */
	p->last_used_ms = dlq_now_ms();
	if (dlq_publisher_blocked(p)) {
		snprintf(detail, n, "not sent: the broker blocks publishing (%s)",
		    p->block_reason);
		return DLQ_PUB_FAILED;
	}
	pfd.fd = amqp_get_sockfd(p->conn);
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, WRITE_TIMEOUT_MS) != 1) {
		snprintf(detail, n, "broker not accepting data within %d s",
		    WRITE_TIMEOUT_MS / 1000);
		return broken(p, DLQ_PUB_FAILED);
	}
	rc = amqp_basic_publish(p->conn, DLQ_AMQP_CHANNEL,
	    amqp_cstring_bytes(exchange), amqp_cstring_bytes(rk), 1, 0, props,
	    body);
	if (rc != AMQP_STATUS_OK) {
		snprintf(detail, n, "publish failed: %s", amqp_error_string2(rc));
		return broken(p, DLQ_PUB_UNKNOWN);
	}
	p->seq++;
	return await_confirm(p, detail, n);
}
