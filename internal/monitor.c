/* monitor.c - the consumer thread of one DLQ.
 *
 * The loop waits for a delivery with a short timeout so that heartbeats are
 * serviced (rabbitmq-c only does so inside its calls) and the stop flag is
 * seen within a quarter second. Anything that is not a delivery arrives as
 * AMQP_STATUS_UNEXPECTED_STATE and is read as a frame: basic.cancel (the
 * queue was deleted), connection.blocked / unblocked (a broker alarm),
 * or a close. Every error ends in the same place: destroy the connection,
 * back off with jitter, connect again. Unacked deliveries of a lost
 * connection are requeued by the broker, so nothing is lost. */
#include "monitor.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert.h"
#include "amqp.h"
#include "deadletter.h"
#include "signature.h"
#include "log.h"
#include "redact.h"

#define POLL_MS		250
#define DRAIN_MS	100

struct dlq_monitor {
	pthread_t		 thread;
	const struct dlq_config	*cfg;
	const struct dlq_queue	*q;
	const atomic_bool	*stop;
	struct dlq_redact	 redact;
	struct dlq_alerter	*alerter;
	struct dlq_buf		 line;		/* reused for every log line */
	struct dlq_buf		 error;		/* redacted error text */
	struct dlq_buf		 sig;		/* normalised error text */
	atomic_bool		 connected;
	atomic_uint_fast64_t	 acked;
	amqp_bytes_t		 consumer_tag;
};

enum step { STEP_OK, STEP_TIMEOUT, STEP_RECONNECT };

/* A C string copy of `s`, cut to the buffer. */
static const char *
cstr(char *buf, size_t n, struct dlq_str s, const char *none)
{
	size_t len;

	if (s.p == NULL)
		return none;
	len = s.n < n ? s.n : dlq_utf8_prefix(s.p, n - 1);
	memcpy(buf, s.p, len);
	buf[len] = '\0';
	return buf;
}

/* Hands the dead letter to the alert thread, grouped by signature. */
static void
note_alert(struct dlq_monitor *m, const struct dlq_dead_letter *d)
{
	struct dlq_alert_event e;
	char queue[256], reason[32], id[64];

	dlq_buf_reset(&m->sig);
	dlq_signature_normalize(m->error.data, m->error.len, &m->sig);
	e.queue = cstr(queue, sizeof(queue), d->queue, m->q->name);
	e.reason = cstr(reason, sizeof(reason),
	    d->n_xdeath > 0 ? d->xdeath[0].reason : d->first_death_reason,
	    "unknown");
	e.class = "";
	e.error = m->sig.data ? m->sig.data : "";
	e.message_id = cstr(id, sizeof(id), d->message_id, NULL);
	e.hash = dlq_signature_hash(e.queue, e.reason, e.class, e.error);
	e.at_ms = dlq_wall_ms();
	dlq_alert_note(m->alerter, &e);
}

static void
log_delivery(struct dlq_monitor *m, const amqp_envelope_t *env)
{
	struct dlq_dead_letter d;
	struct dlq_str dlq = { m->q->dlq_name, strlen(m->q->dlq_name) };
	struct dlq_str rk = { env->routing_key.bytes, env->routing_key.len };

	dlq_deadletter_decode(&d, &env->message.properties,
	    env->message.body, dlq, rk, &m->cfg->error_headers);
	dlq_buf_reset(&m->error);
	dlq_deadletter_error_text(&d, &m->redact, DLQ_ERROR_TEXT_MAX, &m->error);
	dlq_log_begin(&m->line, DLQ_LOG_INFO, "dead_letter");
	dlq_deadletter_log_fields(&d, &m->redact, &m->error, &m->line);
	if (env->redelivered)
		dlq_log_bool(&m->line, "redelivered", true);
	dlq_log_end(&m->line);
	note_alert(m, &d);
}

static enum step
handle_delivery(struct dlq_monitor *m, amqp_connection_state_t conn,
    amqp_envelope_t *env)
{
	log_delivery(m, env);
	/* Always ack: whatever the payload was, it is logged now. */
	if (amqp_basic_ack(conn, DLQ_AMQP_CHANNEL, env->delivery_tag, 0) !=
	    AMQP_STATUS_OK) {
		dlq_log(DLQ_LOG_WARN, "ack_failed", "dlq", m->q->dlq_name, NULL);
		return STEP_RECONNECT;
	}
	m->acked++;
	return STEP_OK;
}

/* A frame other than a delivery is waiting: read and act on it. */
static enum step
handle_frame(struct dlq_monitor *m, amqp_connection_state_t conn)
{
	amqp_frame_t f;
	struct timeval tv = { 0, 0 };
	int rc;

	rc = amqp_simple_wait_frame_noblock(conn, &f, &tv);
	if (rc == AMQP_STATUS_TIMEOUT)
		return STEP_TIMEOUT;
	if (rc != AMQP_STATUS_OK) {
		dlq_log(DLQ_LOG_WARN, "consumer_error", "dlq", m->q->dlq_name,
		    "error", amqp_error_string2(rc), NULL);
		return STEP_RECONNECT;
	}
	if (f.frame_type != AMQP_FRAME_METHOD)
		return STEP_OK;		/* stray body of a broken delivery */
	switch (f.payload.method.id) {
	case AMQP_BASIC_CANCEL_METHOD:
		dlq_log(DLQ_LOG_WARN, "consumer_cancelled", "dlq",
		    m->q->dlq_name, "reason",
		    "cancelled by the broker (queue deleted?)", NULL);
		return STEP_RECONNECT;
	case AMQP_CONNECTION_BLOCKED_METHOD:
		dlq_log(DLQ_LOG_WARN, "connection_blocked", "dlq",
		    m->q->dlq_name, NULL);
		return STEP_OK;
	case AMQP_CONNECTION_UNBLOCKED_METHOD:
		dlq_log(DLQ_LOG_INFO, "connection_unblocked", "dlq",
		    m->q->dlq_name, NULL);
		return STEP_OK;
	case AMQP_CHANNEL_CLOSE_METHOD:
	case AMQP_CONNECTION_CLOSE_METHOD:
		dlq_log(DLQ_LOG_WARN, "consumer_error", "dlq", m->q->dlq_name,
		    "error", "closed by the broker", NULL);
		return STEP_RECONNECT;
	default:
		return STEP_OK;
	}
}

/* Waits up to `ms` for one delivery and handles it. */
static enum step
poll_once(struct dlq_monitor *m, amqp_connection_state_t conn, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	amqp_envelope_t env;
	amqp_rpc_reply_t r;
	enum step st;
	char why[256];

	amqp_maybe_release_buffers(conn);
	r = amqp_consume_message(conn, &env, &tv, 0);
	if (r.reply_type == AMQP_RESPONSE_NORMAL) {
		st = handle_delivery(m, conn, &env);
		amqp_destroy_envelope(&env);
		return st;
	}
	if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
		if (r.library_error == AMQP_STATUS_TIMEOUT)
			return STEP_TIMEOUT;
		if (r.library_error == AMQP_STATUS_UNEXPECTED_STATE)
			return handle_frame(m, conn);
	}
	dlq_log(DLQ_LOG_WARN, "consumer_error", "dlq", m->q->dlq_name,
	    "error", dlq_amqp_reply_text(r, why, sizeof(why)), NULL);
	return STEP_RECONNECT;
}

static int
subscribe(struct dlq_monitor *m, amqp_connection_state_t conn)
{
	amqp_basic_consume_ok_t *ok;
	amqp_rpc_reply_t r;
	char why[256];

	amqp_basic_qos(conn, DLQ_AMQP_CHANNEL, 0, (uint16_t)m->cfg->prefetch, 0);
	r = amqp_get_rpc_reply(conn);
	if (r.reply_type == AMQP_RESPONSE_NORMAL) {
		ok = amqp_basic_consume(conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(m->q->dlq_name), amqp_empty_bytes, 0, 0,
		    0, amqp_empty_table);
		r = amqp_get_rpc_reply(conn);
		if (ok != NULL && r.reply_type == AMQP_RESPONSE_NORMAL) {
			amqp_bytes_free(m->consumer_tag);
			m->consumer_tag = amqp_bytes_malloc_dup(ok->consumer_tag);
			return 0;
		}
	}
	dlq_log(DLQ_LOG_WARN, "consume_failed", "dlq", m->q->dlq_name, "error",
	    dlq_amqp_reply_text(r, why, sizeof(why)), NULL);
	return -1;
}

/* Stop: cancel the consumer, handle what the broker had already sent,
 * ack it, and return. What is still unacked goes back to the queue. */
static void
drain(struct dlq_monitor *m, amqp_connection_state_t conn)
{
	amqp_basic_cancel(conn, DLQ_AMQP_CHANNEL, m->consumer_tag);
	if (amqp_get_rpc_reply(conn).reply_type != AMQP_RESPONSE_NORMAL)
		return;
	while (poll_once(m, conn, DRAIN_MS) == STEP_OK)
		;
}

static void *
run(void *arg)
{
	struct dlq_monitor *m = arg;
	amqp_connection_state_t conn;
	enum dlq_amqp_status status;
	unsigned attempt = 0;
	char name[300], why[512];
	int64_t delay;
	enum step st;

	snprintf(name, sizeof(name), "dlq-worker %s", m->q->dlq_name);
	while (!*m->stop) {
		conn = dlq_amqp_connect(m->cfg, name, &status, why, sizeof(why));
		if (conn != NULL && subscribe(m, conn) == -1)
			snprintf(why, sizeof(why), "cannot consume %s",
			    m->q->dlq_name);
		else if (conn != NULL) {
			m->connected = true;
			attempt = 0;
			dlq_log(DLQ_LOG_INFO, "consumer_started", "dlq",
			    m->q->dlq_name, NULL);
			st = STEP_OK;
			while (!*m->stop && st != STEP_RECONNECT)
				st = poll_once(m, conn, POLL_MS);
			if (*m->stop && st != STEP_RECONNECT)
				drain(m, conn);
			snprintf(why, sizeof(why), "connection lost");
		}
		m->connected = false;
		dlq_amqp_close(conn);
		if (*m->stop)
			break;
		delay = dlq_amqp_backoff_ms(attempt++, m->cfg->reconnect_min_ms,
		    m->cfg->reconnect_max_ms);
		dlq_log_begin(&m->line, DLQ_LOG_WARN, "consumer_reconnecting");
		dlq_log_str(&m->line, "dlq", m->q->dlq_name);
		dlq_log_str(&m->line, "error", why);
		dlq_log_int(&m->line, "attempt", attempt);
		dlq_log_int(&m->line, "delay_ms", delay);
		dlq_log_end(&m->line);
		dlq_sleep_ms(delay, m->stop);
	}
	dlq_log(DLQ_LOG_INFO, "consumer_stopped", "dlq", m->q->dlq_name, NULL);
	return NULL;
}

struct dlq_monitor *
dlq_monitor_start(const struct dlq_config *c, const struct dlq_queue *q,
    const atomic_bool *stop, struct dlq_alerter *alerter)
{
	struct dlq_monitor *m;
	pthread_attr_t attr;
	int rc;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	m->cfg = c;
	m->q = q;
	m->stop = stop;
	m->alerter = alerter;
	m->redact.keys = &c->mask_keys;
	m->redact.emails = c->mask_emails;
	m->redact.digits_min = (int)c->mask_digits_min;
	m->redact.max_bytes = (size_t)c->payload_max_bytes;
	m->consumer_tag = amqp_empty_bytes;
	dlq_buf_init(&m->line);
	dlq_buf_init(&m->error);
	dlq_buf_init(&m->sig);
	pthread_attr_init(&attr);
	/* 37+ threads: keep the stacks small (the deepest path is a log line) */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	rc = pthread_create(&m->thread, &attr, run, m);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		dlq_log(DLQ_LOG_ERR, "thread_create_failed", "dlq", q->dlq_name,
		    "error", strerror(rc), NULL);
		dlq_buf_release(&m->line);
		dlq_buf_release(&m->error);
		dlq_buf_release(&m->sig);
		free(m);
		return NULL;
	}
	return m;
}

void
dlq_monitor_join(struct dlq_monitor *m)
{
	if (m == NULL)
		return;
	pthread_join(m->thread, NULL);
	amqp_bytes_free(m->consumer_tag);
	dlq_buf_release(&m->line);
	dlq_buf_release(&m->error);
	dlq_buf_release(&m->sig);
	free(m);
}

bool
dlq_monitor_connected(const struct dlq_monitor *m)
{
	return m->connected;
}

uint64_t
dlq_monitor_acked(const struct dlq_monitor *m)
{
	return m->acked;
}
