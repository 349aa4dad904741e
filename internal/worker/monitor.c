/* monitor.c - the consumer thread of one DLQ.
 *
 * Deliveries are handled in batches: wait (a quarter second at most, so
 * heartbeats are serviced and the stop flag is seen) for one, then take
 * what the broker has already sent, up to archive.batch_max; archive them
 * in one transaction (through the archive connection all consumers share,
 * in turns: the transaction holds the writer mutex from its first
 * delivery to the commit); after the commit write their log lines (still
 * in the turn: one line buffer serves all consumers), ack them all with
 * one basic.ack(multiple) and hand their alert groups over with one
 * lock. Ack after commit: a crash must redeliver, never lose.
 *
 * Anything that is not a delivery arrives as AMQP_STATUS_UNEXPECTED_STATE
 * and is read as a frame: basic.cancel (the queue was deleted),
 * connection.blocked / unblocked (a broker alarm), or a close. Every error
 * ends in the same place: destroy the connection, back off with jitter,
 * connect again. Unacked deliveries of a lost connection go back to the
 * queue, so nothing is lost; if the archive cannot be written, that is how
 * consumption pauses, and the consumer connects again only once a test
 * write succeeds (wait_for_archive).
 *
 * rabbitmq-c reads the socket into a 128 KiB buffer per connection that
 * it keeps as long as the connection lives: a burst fills it, and its
 * pages stay resident (4.6 MiB for 37 DLQs). After a flood, once every
 * DLQ is quiet (the memory release below), each consumer that took a
 * burst replaces its connection (cancel, archive and ack what was sent,
 * close, connect): the new buffer is resident only as far as a trickle
 * fills it. A replacement costs about 2 ms of CPU, so everyday bursts
 * do not get one. A consumer that took a delivery of 1 MiB or more
 * (LARGE_BYTES) replaces its connection once its queue is quiet. */
#include "monitor.h"

#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alert.h"
#include "amqp.h"
#include "archive.h"
#include "classify.h"
#include "deadletter.h"
#include "digest.h"
#include "log.h"
#include "metrics.h"
#include "redact.h"
#include "signature.h"

#define POLL_MS		250
/* A batch's next delivery is waited for up to LINGER_MS while the batch
 * is younger than BATCH_WINDOW_MS (see poll_batch). */
#define LINGER_MS	5
#define BATCH_WINDOW_MS	20
#define DRAIN_MS	100
#define BATCH_GROUPS	32	/* alert groups per batch before "other" */
/* A batch this large (bodies plus about 256 bytes of frames each) was
 * read ahead into the connection's input buffer, whose pages stay
 * resident: the connection is replaced after the flood. */
#define BURST_BYTES	(32 * 1024)
/* rabbitmq-c assembles a delivery's body frames in the channel's memory
 * pool and keeps its pages for the connection's life (releasing the
 * buffers recycles them, never frees them): one 60 MiB dead letter left
 * 63 MiB resident. A consumer that took a delivery this large replaces
 * its connection as soon as its queue is quiet, flood or not, but not
 * again within LARGE_GAP_MS: a steady trickle of large dead letters makes
 * one new connection a minute, not one each. */
#define LARGE_BYTES	(1024 * 1024)
#define LARGE_GAP_MS	60000
#define FRAME_BYTES	256
#define CLASS_CACHE	256	/* classifications remembered per thread */
/* The test write before deliveries are taken again after the archive
 * refused a batch: the batch's bodies and RECORD_BYTES a record (what a
 * drain writes, WAL frames of the record and its index pages: about
 * 7 KiB in the benchmark), within these bounds. */
#define RECORD_BYTES	(8 * 1024)
#define PROBE_MIN_BYTES	(64 * 1024)
#define PROBE_MAX_BYTES	(16 * 1024 * 1024)

struct class_cache {
	uint64_t			key;
	struct dlq_classification	c;
};

struct dlq_monitor {
	pthread_t		 thread;
	const struct dlq_config	*cfg;
	const struct dlq_queue	*q;
	const atomic_bool	*stop;
	const struct dlq_classifier *classifier;
	struct dlq_alerter	*alerter;
	struct dlq_archive	*archive;	/* shared (env) */
	bool			 in_tx;		/* began: ours to commit */
	struct dlq_redact	 redact;
	struct dlq_buf		 line;		/* a log line of this thread */
	struct dlq_buf		 error;		/* redacted error text */
	struct dlq_buf		 sig;		/* normalised error text */
	struct dlq_buf		 xdeath;	/* x-death JSON: log and archive */
	struct dlq_buf		 payload;	/* redacted, before escaping */
	struct dlq_digest	 alerts;	/* alert groups of the batch */
	struct class_cache	 cache[CLASS_CACHE];
	uint64_t		 batch_tag;	/* last delivery tag in batch */
	size_t			 batch_n;
	size_t			 batch_bytes;	/* bodies and frames, about */
	size_t			 failed_bytes;	/* of the batch refused last */
	unsigned		 probes;	/* since the last commit */
	bool			 burst;		/* replace the connection */
	bool			 large;		/* when quiet, past the gap */
	int64_t			 recycled_ms;	/* last replacement, or 0 */
	unsigned		 epoch;		/* releases before it opened */
	bool			 archive_failing;
	bool			 checked_shared;	/* other consumers: asked */
	bool			 shared_told;	/* in a digest, this episode */
	uint32_t		 others;	/* other consumers, last asked */
	int64_t			 shared_due_ms;	/* when to ask again */
	bool			 busy;		/* counted in busy_consumers */
	atomic_bool		 connected;
	atomic_bool		 missing;	/* its DLQ: NOT_FOUND */
	atomic_uint_fast64_t	 acked;
	amqp_bytes_t		 consumer_tag;
};

enum step { STEP_OK, STEP_TIMEOUT, STEP_RECONNECT, STEP_ARCHIVE,
	STEP_RECYCLE };

/* The log lines of the batch being archived, written after its commit.
 * Only the consumer whose transaction holds the archive writer mutex
 * touches it, so one buffer serves them all (one per consumer would be
 * 37 batch-sized buffers in a flood). */
static struct dlq_buf batch_lines;

/* Consumers that took deliveries since they last found their queue
 * empty. When the last one goes quiet after a flood (RELEASE_AFTER
 * deliveries since the last time), the memory it left behind goes back
 * to the system: the shared archive connection's page cache and malloc's
 * free memory (until then they serve the next batches; a trickle of
 * dead letters never pays for a release). */
#define RELEASE_AFTER	10000
static atomic_int busy_consumers;
static atomic_long taken_since_release;
static atomic_uint releases;	/* memory releases so far */

/* Fault injection for the tests, as SQLite does it: with
 * DLQ_FAULT_EXIT_AFTER_COMMITS=N the process exits right after its Nth
 * archive commit, before the ack; DLQ_FAULT_COMMIT_DELAY_MS=N waits N ms
 * before each commit, so that a test which races the worker loses (make
 * test-stress). Compiled only into the test build (DLQ_TEST_HOOKS): the
 * binaries users run read no such variable. */
#define DLQ_FAULT_EXIT_CODE	99
/* each consumer's start sets them while the others run: atomic */
static atomic_long fault_exit_after;
static atomic_long fault_commit_delay_ms;
static atomic_long commits;

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

static void
classify(struct dlq_monitor *m, const char *queue, const char *reason,
    const char *error, struct dlq_classification *out)
{
	uint64_t key = dlq_signature_hash(queue, reason, "", error);
	struct class_cache *c = &m->cache[key % CLASS_CACHE];

	if (c->key != key || c->c.class == NULL) {
		dlq_classify(m->classifier, queue, reason, error, &c->c);
		c->key = key;
	}
	*out = c->c;
}

static int64_t
header_int(const struct dlq_dead_letter *d, const char *name)
{
	const amqp_field_value_t *v;
	int64_t n;

	if (!(d->props->_flags & AMQP_BASIC_HEADERS_FLAG) ||
	    (v = dlq_table_get(&d->props->headers, name)) == NULL ||
	    !dlq_field_to_i64(v, &n) || n < 0)
		return 0;
	return n;
}

/* Decodes, classifies, archives one delivery and queues its log line and
 * alert; nothing leaves the thread before the commit. */
static enum step
take(struct dlq_monitor *m, const amqp_envelope_t *env)
{
	struct dlq_dead_letter d;
	struct dlq_str dlq = { m->q->dlq_name, strlen(m->q->dlq_name) };
	struct dlq_str rk = { env->routing_key.bytes, env->routing_key.len };
	struct dlq_str work = { m->q->name, strlen(m->q->name) };
	struct dlq_classification cl;
	struct dlq_alert_event e;
	struct dlq_record rec;
	char queue[256], reason[32], id[64], sig[DLQ_SIGNATURE_ID_LEN + 1];
	const char *error;
	int64_t archive_id;
	bool dup;

	/* published straight into the DLQ: the routing key names the DLQ */
	if (rk.n == dlq.n && memcmp(rk.p, dlq.p, dlq.n) == 0)
		rk = work;
	dlq_deadletter_decode(&d, &env->message.properties,
	    env->message.body, dlq, rk, &m->cfg->error_headers);
	dlq_buf_reset(&m->error);
	dlq_deadletter_error_text(&d, &m->redact, DLQ_ERROR_TEXT_MAX, &m->error);
	error = m->error.data ? m->error.data : "";
	e.queue = cstr(queue, sizeof(queue), d.queue, m->q->name);
	e.reason = cstr(reason, sizeof(reason),
	    d.n_xdeath > 0 ? d.xdeath[0].reason : d.first_death_reason,
	    "unknown");
	classify(m, e.queue, e.reason, error, &cl);
	dlq_buf_reset(&m->sig);
	dlq_signature_normalize(error, m->error.len, &m->sig);
	e.class = cl.class;
	e.error = error;
	e.message_id = NULL;	/* the digest's sample: whole, NUL and all */
	if (d.message_id.p != NULL) {
		dlq_text_copy(id, sizeof(id), d.message_id.p, d.message_id.n);
		e.message_id = id;
	}
	e.hash = dlq_signature_hash(e.queue, e.reason, e.class,
	    m->sig.data ? m->sig.data : "");
	e.normalized = m->sig.data ? m->sig.data : "";
	e.at_ms = dlq_wall_ms();
	dlq_signature_id(e.hash, sig);
	dlq_buf_reset(&m->xdeath);
	dlq_deadletter_xdeath_json(&d, &m->xdeath);

	rec.d = &d;
	rec.xdeath_json = &m->xdeath;
	rec.queue = e.queue;
	rec.reason = e.reason;
	rec.error = error;
	rec.class = cl.class;
	rec.signature = sig;
	rec.hint = cl.hint;
	rec.received_ms = e.at_ms;
	rec.replay_of = header_int(&d, "x-replay-of");
	rec.replay_count = header_int(&d, "x-replay-count");
	if ((archive_id = dlq_archive_put(m->archive, &rec, &dup)) == -1)
		return STEP_ARCHIVE;

	if (dlq_log_begin(&batch_lines, DLQ_LOG_INFO, "dead_letter")) {
		dlq_log_int(&batch_lines, "id", archive_id);
		dlq_deadletter_log_fields(&d, &m->redact, &m->error,
		    &m->xdeath, &m->payload, &batch_lines);
		dlq_log_str(&batch_lines, "class", cl.class);
		dlq_log_str(&batch_lines, "signature", sig);
		if (env->redelivered)
			dlq_log_bool(&batch_lines, "redelivered", true);
		if (dup)
			dlq_log_bool(&batch_lines, "duplicate", true);
		dlq_buf_adds(&batch_lines, "}\n");
	}
	if (!dup)
		dlq_digest_add(&m->alerts, &e, false);
	m->batch_tag = env->delivery_tag;
	m->batch_n++;
	return STEP_OK;
}

/* Writes the batch's log lines (dlq_log_write_lines). The
 * caller holds the archive writer mutex. */
static void
flush_lines(struct dlq_monitor *m)
{
	if (batch_lines.oom)
		dlq_log(DLQ_LOG_ERR, "log_line_dropped", "dlq", m->q->dlq_name,
		    NULL);
	else if (batch_lines.len > 0)
		dlq_log_write_lines(batch_lines.data, batch_lines.len);
	dlq_buf_reset(&batch_lines);
}

static void
archive_failed(struct dlq_monitor *m)
{
	char text[DLQ_NOTICE_TEXT_MAX];

	if (m->in_tx) {		/* only our own transaction */
		dlq_buf_reset(&batch_lines);	/* before the turn passes */
		dlq_archive_rollback(m->archive);
		m->in_tx = false;
	}
	dlq_digest_clear(&m->alerts);
	/* the failed delivery is not counted in batch_n yet */
	m->failed_bytes = m->batch_bytes + (m->batch_n + 1) * RECORD_BYTES;
	m->batch_bytes = 0;
	m->batch_n = 0;
	dlq_metrics_archive(m->q->dlq_name, dlq_archive_errmsg(m->archive));
	if (m->archive_failing)
		return;
	/* once per episode: logged and alerted */
	m->archive_failing = true;
	dlq_log(DLQ_LOG_ERR, "archive_error", "dlq", m->q->dlq_name,
	    "path", m->cfg->archive_path, "error",
	    dlq_archive_errmsg(m->archive), "action",
	    "deliveries left unacked; consumption paused", NULL);
	/* one line for the archive, whichever DLQs it stopped (the
	 * first of them named, the others counted), with the reason */
	snprintf(text, sizeof(text), "%s; consumption paused, the dead "
	    "letters wait in their DLQs", dlq_archive_errmsg(m->archive));
	dlq_alert_notice(m->alerter, DLQ_NOTICE_ARCHIVE, m->q->dlq_name, text);
}

/* Commit, then log, ack and alert: the order that loses nothing. */
static void
count_batch(struct dlq_monitor *m)
{
	size_t i;

	for (i = 0; i < m->alerts.n; i++)
		dlq_metrics_dead_letters(m->q->dlq_name, m->alerts.groups[i].reason,
		    m->alerts.groups[i].class, m->alerts.groups[i].count);
	if (m->alerts.other_count > 0)
		dlq_metrics_dead_letters(m->q->dlq_name, "other", "other",
		    m->alerts.other_count);
	dlq_metrics_acked(m->batch_n);
}

static enum step
finish_batch(struct dlq_monitor *m, amqp_connection_state_t conn)
{
	int64_t t0;

	if (m->batch_n == 0)
		return STEP_OK;
	if (fault_commit_delay_ms > 0)
		usleep((useconds_t)fault_commit_delay_ms * 1000);
	t0 = dlq_now_us();
	/* on a shared archive the batch's alert groups commit with it */
	if (dlq_alert_stage_batch(m->alerter, m->archive, &m->alerts) == -1 ||
	    dlq_archive_commit_hold(m->archive) == -1) {
		archive_failed(m);	/* rolled back: its lines go too */
		return STEP_ARCHIVE;
	}
	t0 = dlq_now_us() - t0;
	m->in_tx = false;
	flush_lines(m);
	dlq_archive_writer_unlock();
	dlq_metrics_commit((double)t0 / 1e6);
	if (dlq_log_begin(&m->line, DLQ_LOG_DEBUG, "archive_committed")) {
		dlq_log_str(&m->line, "dlq", m->q->dlq_name);
		dlq_log_int(&m->line, "batch", (int64_t)m->batch_n);
		dlq_log_int(&m->line, "us", t0);
		dlq_log_end(&m->line);
	}
	if (fault_exit_after > 0 && atomic_fetch_add(&commits, 1) + 1 ==
	    fault_exit_after)
		_exit(DLQ_FAULT_EXIT_CODE);	/* a crash between commit and ack */
	if (m->archive_failing) {
		m->archive_failing = false;
		m->probes = 0;
		dlq_log(DLQ_LOG_INFO, "archive_recovered", "dlq",
		    m->q->dlq_name, NULL);
	}
	count_batch(m);
	atomic_fetch_add(&taken_since_release, (long)m->batch_n);
	dlq_alert_note_batch(m->alerter, &m->alerts);
	dlq_digest_clear(&m->alerts);
	m->batch_n = 0;
	if (amqp_basic_ack(conn, DLQ_AMQP_CHANNEL, m->batch_tag, 1) !=
	    AMQP_STATUS_OK) {
		/* committed: the redelivery will be recognised, not doubled */
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

/* Waits up to `ms` for one delivery and takes it into the batch. */
static enum step
receive(struct dlq_monitor *m, amqp_connection_state_t conn, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	amqp_envelope_t env;
	amqp_rpc_reply_t r;
	enum step st;
	char why[256];

	/* the last delivery was copied out and destroyed: its frames can go */
	amqp_maybe_release_buffers(conn);
	r = amqp_consume_message(conn, &env, &tv, 0);
	if (r.reply_type == AMQP_RESPONSE_NORMAL) {
		if (m->batch_n == 0 && !m->in_tx) {
			if (dlq_archive_begin(m->archive) == -1) {
				m->batch_bytes += env.message.body.len +
				    FRAME_BYTES;
				amqp_destroy_envelope(&env);
				archive_failed(m);
				return STEP_ARCHIVE;
			}
			m->in_tx = true;
		}
		st = take(m, &env);
		m->batch_bytes += env.message.body.len + FRAME_BYTES;
		if (env.message.body.len >= LARGE_BYTES)
			m->large = true;
		amqp_destroy_envelope(&env);
		if (st == STEP_ARCHIVE)
			archive_failed(m);
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

/* How long the batch's next delivery is waited for. A broker feeding a
 * drain sends in bursts a few ms apart, and a commit (an fdatasync)
 * costs about the same for 1 record as for 100: waiting a little for
 * the next burst makes half the commits (in the benchmark's drain: 125
 * records a commit instead of 60, 1.5-2 µs less CPU a dead letter). Only
 * while the batch is young, holds less than half the prefetch (the
 * broker still has credit to send more) and no other thread waits for
 * the archive (a batch holds it); else only what has already arrived. */
static int
linger_ms(const struct dlq_monitor *m, int64_t started_ms)
{
	int64_t left = started_ms + BATCH_WINDOW_MS - dlq_now_ms();

	if (left <= 0 || m->batch_n >= (size_t)m->cfg->prefetch / 2 ||
	    dlq_archive_writer_wanted())
		return 0;
	return left < LINGER_MS ? (int)left : LINGER_MS;
}

/* One batch: the first delivery waits up to `ms`, the rest as long as
 * linger_ms() says. */
static enum step
poll_batch(struct dlq_monitor *m, amqp_connection_state_t conn, int ms)
{
	enum step st, fin;
	int64_t started;
	bool took;

	st = receive(m, conn, ms);
	started = dlq_now_ms();
	while (st == STEP_OK && m->batch_n > 0 &&
	    m->batch_n < (size_t)m->cfg->batch_max)
		st = receive(m, conn, linger_ms(m, started));
	if (st == STEP_ARCHIVE)
		return st;
	took = m->batch_n > 0;
	if (m->batch_bytes >= BURST_BYTES)
		m->burst = true;
	/* even when the connection broke: commit what was taken, the
	 * redelivery will find it */
	fin = finish_batch(m, conn);
	m->batch_bytes = 0;
	if (fin != STEP_OK)
		return fin;
	if (st == STEP_RECONNECT)
		return st;
	return took ? STEP_OK : st;
}

/* Says what changed in the number of other consumers of the DLQ: more
 * than before is logged at once; still there at the next ask, it goes
 * into the digest, once an episode (a predecessor whose connection the
 * broker closes within seconds of the start alerts no one); none left
 * is logged. */
static void
tell_shared(struct dlq_monitor *m, uint32_t others)
{
	char text[DLQ_NOTICE_TEXT_MAX];

	dlq_metrics_consumer_others(m->q->dlq_name, others);
	if (others > m->others &&
	    dlq_log_begin(&m->line, DLQ_LOG_WARN, "consumer_shared")) {
		dlq_log_str(&m->line, "dlq", m->q->dlq_name);
		dlq_log_int(&m->line, "consumers", others);
		dlq_log_str(&m->line, "advice", "another consumer takes dead "
		    "letters from this queue (a second dlq-worker?): the ones "
		    "it takes are not in this archive");
		dlq_log_end(&m->line);
	}
	if (others == 0 && m->others > 0)
		dlq_log(DLQ_LOG_INFO, "consumer_shared_ended", "dlq",
		    m->q->dlq_name, NULL);
	if (others > 0 && m->others > 0 && !m->shared_told) {
		snprintf(text, sizeof(text), "%u other consumer%s take%s its "
		    "dead letters too (a second dlq-worker? a script?): those "
		    "are not archived or alerted here", (unsigned)others,
		    others == 1 ? "" : "s", others == 1 ? "s" : "");
		dlq_alert_notice(m->alerter, DLQ_NOTICE_SHARED, m->q->dlq_name,
		    text);
		m->shared_told = true;
	}
	if (others == 0)
		m->shared_told = false;
	m->others = others;
}

/* How many other consumers the DLQ has (a passive declare): at the first
 * subscription, before it (`subscribed` false: they are all others), and
 * every rabbitmq.shared_check_ms between batches (ours counted out).
 * Each takes dead letters this archive never sees. Said, not prevented:
 * the other may be this worker's predecessor, whose connection the
 * broker has not yet seen close. Not asked before a later subscription,
 * where the broker may still count the consumer of the connection this
 * one replaces. A queue that is not there fails as the consume would. */
static amqp_rpc_reply_t
check_shared(struct dlq_monitor *m, amqp_connection_state_t conn,
    bool subscribed)
{
	amqp_queue_declare_ok_t *ok;
	amqp_rpc_reply_t r;
	uint32_t others;

	ok = amqp_queue_declare(conn, DLQ_AMQP_CHANNEL,
	    amqp_cstring_bytes(m->q->dlq_name), 1, 0, 0, 0, amqp_empty_table);
	r = amqp_get_rpc_reply(conn);
	if (ok == NULL || r.reply_type != AMQP_RESPONSE_NORMAL)
		return r;
	m->checked_shared = true;
	others = ok->consumer_count;
	if (subscribed && others > 0)
		others--;
	tell_shared(m, others);
	return r;
}

/* Between batches, when rabbitmq.shared_check_ms has passed since the
 * subscription or the last ask: asks again (deliveries arriving
 * meanwhile wait in rabbitmq-c's frame queue). */
static enum step
recheck_shared(struct dlq_monitor *m, amqp_connection_state_t conn)
{
	amqp_rpc_reply_t r;
	char why[256];

	if (m->cfg->shared_check_ms == 0 || dlq_now_ms() < m->shared_due_ms)
		return STEP_OK;
	m->shared_due_ms = dlq_now_ms() + m->cfg->shared_check_ms;
	r = check_shared(m, conn, true);
	if (r.reply_type == AMQP_RESPONSE_NORMAL)
		return STEP_OK;
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
	int code;

	amqp_basic_qos(conn, DLQ_AMQP_CHANNEL, 0, (uint16_t)m->cfg->prefetch, 0);
	r = amqp_get_rpc_reply(conn);
	if (r.reply_type == AMQP_RESPONSE_NORMAL && !m->checked_shared)
		r = check_shared(m, conn, false);
	if (r.reply_type == AMQP_RESPONSE_NORMAL) {
		ok = amqp_basic_consume(conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(m->q->dlq_name), amqp_empty_bytes, 0, 0,
		    0, amqp_empty_table);
		r = amqp_get_rpc_reply(conn);
		if (ok != NULL && r.reply_type == AMQP_RESPONSE_NORMAL) {
			amqp_bytes_free(m->consumer_tag);
			m->consumer_tag = amqp_bytes_malloc_dup(ok->consumer_tag);
			m->shared_due_ms = dlq_now_ms() +
			    m->cfg->shared_check_ms;
			return 0;
		}
	}
	dlq_log(DLQ_LOG_WARN, "consume_failed", "dlq", m->q->dlq_name, "error",
	    dlq_amqp_reply_text(r, why, sizeof(why)), NULL);
	if (dlq_amqp_is_channel_error(r, &code) && code == AMQP_NOT_FOUND)
		atomic_store(&m->missing, true);
	return -1;
}

const char *
dlq_monitor_take_missing(struct dlq_monitor *m)
{
	return atomic_exchange(&m->missing, false) ? m->q->dlq_name : NULL;
}

/* Keeps busy_consumers; `quiet`: the queue was found empty. */
static void
note_activity(struct dlq_monitor *m, bool quiet, bool may_release)
{
	if (!quiet && !m->busy) {
		m->busy = true;
		atomic_fetch_add(&busy_consumers, 1);
	} else if (quiet && m->busy) {
		m->busy = false;
		if (atomic_fetch_sub(&busy_consumers, 1) == 1 && may_release &&
		    atomic_load(&taken_since_release) >= RELEASE_AFTER) {
			atomic_store(&taken_since_release, 0);
			dlq_archive_release_memory(m->archive);
			dlq_archive_writer_lock();
			dlq_buf_release(&batch_lines);	/* a flood's batches */
			dlq_archive_writer_unlock();
			malloc_trim(0);
			atomic_fetch_add(&releases, 1);
			dlq_log(DLQ_LOG_INFO, "memory_released", "dlq",
			    m->q->dlq_name, NULL);
		}
	}
}

/* The consumer's working buffers and its batch's alert groups. */
static void
release_buffers(struct dlq_monitor *m)
{
	dlq_buf_release(&m->line);
	dlq_buf_release(&m->error);
	dlq_buf_release(&m->sig);
	dlq_buf_release(&m->xdeath);
	dlq_buf_release(&m->payload);
	dlq_digest_release(&m->alerts);
}

/* Before its connection is replaced after a flood: what the consumer's
 * batches grew goes back too (line and error buffers, alert groups). */
static void
shed(struct dlq_monitor *m)
{
	release_buffers(m);
	dlq_digest_init(&m->alerts, BATCH_GROUPS);	/* allocates nothing */
	malloc_trim(0);
}

/* Whether the connection is replaced now: it took a large delivery (and
 * the last replacement is LARGE_GAP_MS ago), or a burst and a flood
 * ended (a memory release) since it was opened. */
static bool
recycle_due(const struct dlq_monitor *m)
{
	if (*m->stop)
		return false;
	if (m->large && (m->recycled_ms == 0 ||
	    dlq_now_ms() - m->recycled_ms >= LARGE_GAP_MS))
		return true;
	return m->burst && atomic_load(&releases) != m->epoch;
}

/* Consumes until stop, an error or the end of a flood it took a burst
 * of; returns why it ended (STEP_RECYCLE: replace the connection). On
 * stop and before a replacement the consumer is cancelled and what the
 * broker had already sent is archived and acked; what is still unacked
 * goes back to the queue. */
static enum step
consume(struct dlq_monitor *m, amqp_connection_state_t conn)
{
	enum step st = STEP_OK;

	m->burst = false;
	m->large = false;
	m->epoch = atomic_load(&releases);
	while (!*m->stop && (st == STEP_OK || st == STEP_TIMEOUT)) {
		st = poll_batch(m, conn, POLL_MS);
		if (st == STEP_OK || st == STEP_TIMEOUT)
			note_activity(m, st == STEP_TIMEOUT, true);
		if (st == STEP_TIMEOUT && recycle_due(m))
			st = STEP_RECYCLE;
		else if (st == STEP_OK || st == STEP_TIMEOUT)
			st = recheck_shared(m, conn) == STEP_OK ? st :
			    STEP_RECONNECT;
	}
	note_activity(m, true, false);	/* leaving: no longer counted */
	if ((*m->stop && (st == STEP_OK || st == STEP_TIMEOUT)) ||
	    st == STEP_RECYCLE) {
		amqp_basic_cancel(conn, DLQ_AMQP_CHANNEL, m->consumer_tag);
		if (amqp_get_rpc_reply(conn).reply_type != AMQP_RESPONSE_NORMAL)
			return STEP_RECONNECT;
		while ((st = poll_batch(m, conn, DRAIN_MS)) == STEP_OK)
			;
		if (st == STEP_TIMEOUT && recycle_due(m))
			st = STEP_RECYCLE;
	}
	return st;
}

/* The archive refused a batch, whose deliveries went back to the queue
 * with the connection. A quorum queue counts each such return as a
 * delivery (up to RabbitMQ 4.2) and drops a message past its delivery
 * limit (20 by default since 4.0; before, where a policy sets one): so the
 * consumer takes deliveries again only once a test write as large as
 * that batch succeeds, tried with the reconnect backoff (which goes on
 * growing until a batch commits: a probe that passes where the batch
 * then fails again does not shorten it). However long the archive
 * refuses writes, its dead letters come back once. */
static void
wait_for_archive(struct dlq_monitor *m)
{
	size_t bytes = m->failed_bytes;
	int64_t delay;

	if (bytes < PROBE_MIN_BYTES)
		bytes = PROBE_MIN_BYTES;
	if (bytes > PROBE_MAX_BYTES)
		bytes = PROBE_MAX_BYTES;
	for (;;) {
		delay = dlq_amqp_backoff_ms(m->probes++,
		    m->cfg->reconnect_min_ms, m->cfg->reconnect_max_ms);
		dlq_sleep_ms(delay, m->stop);
		if (*m->stop)
			return;
		if (dlq_archive_probe(m->archive, bytes) == 0) {
			/* writable: /readyz need not wait for a dead letter */
			dlq_metrics_archive(m->q->dlq_name, NULL);
			return;
		}
		dlq_metrics_archive(m->q->dlq_name,
		    dlq_archive_errmsg(m->archive));
		if (dlq_log_begin(&m->line, DLQ_LOG_DEBUG,
		    "archive_probe_failed")) {
			dlq_log_str(&m->line, "dlq", m->q->dlq_name);
			dlq_log_str(&m->line, "error",
			    dlq_archive_errmsg(m->archive));
			dlq_log_int(&m->line, "attempt", m->probes);
			dlq_log_int(&m->line, "bytes", (int64_t)bytes);
			dlq_log_end(&m->line);
		}
	}
}

static void *
run(void *arg)
{
	struct dlq_monitor *m = arg;
	amqp_connection_state_t conn;
	enum dlq_amqp_status status;
	unsigned attempt = 0;
	char name[300], why[512];
	bool recycling = false;
	int64_t delay;
	enum step st;

	snprintf(name, sizeof(name), "dlq-worker %s", m->q->dlq_name);
	while (!*m->stop) {
		st = STEP_RECONNECT;
		conn = dlq_amqp_connect(m->cfg, name, &status, why, sizeof(why));
		if (conn != NULL && subscribe(m, conn) == -1)
			snprintf(why, sizeof(why), "cannot consume %s",
			    m->q->dlq_name);
		else if (conn != NULL) {
			m->connected = true;
			dlq_metrics_consumer(m->q->dlq_name, true);
			dlq_log(DLQ_LOG_INFO, recycling ? "consumer_recycled" :
			    "consumer_started", "dlq", m->q->dlq_name, NULL);
			st = consume(m, conn);
			/* a replacement: still counted as connected, no
			 * backoff, not a reconnect */
			if ((recycling = st == STEP_RECYCLE)) {
				m->recycled_ms = dlq_now_ms();
				dlq_amqp_close(conn);
				shed(m);
				continue;
			}
			attempt = 0;
			snprintf(why, sizeof(why), "connection lost");
		}
		recycling = false;
		m->connected = false;
		dlq_metrics_consumer(m->q->dlq_name, false);
		dlq_amqp_close(conn);
		if (*m->stop)
			break;
		dlq_metrics_reconnect(m->q->dlq_name);
		if (st == STEP_ARCHIVE) {	/* archive_error said it */
			wait_for_archive(m);
			continue;
		}
		delay = dlq_amqp_backoff_ms(attempt++, m->cfg->reconnect_min_ms,
		    m->cfg->reconnect_max_ms);
		if (dlq_log_begin(&m->line, DLQ_LOG_WARN,
		    "consumer_reconnecting")) {
			dlq_log_str(&m->line, "dlq", m->q->dlq_name);
			dlq_log_str(&m->line, "error", why);
			dlq_log_int(&m->line, "attempt", attempt);
			dlq_log_int(&m->line, "delay_ms", delay);
			dlq_log_end(&m->line);
		}
		dlq_sleep_ms(delay, m->stop);
	}
	if (m->connected) {	/* stopped while replacing its connection */
		m->connected = false;
		dlq_metrics_consumer(m->q->dlq_name, false);
	}
	dlq_log(DLQ_LOG_INFO, "consumer_stopped", "dlq", m->q->dlq_name, NULL);
	return NULL;
}

static void
free_monitor(struct dlq_monitor *m)
{
	amqp_bytes_free(m->consumer_tag);
	release_buffers(m);
	free(m);
}

struct dlq_monitor *
dlq_monitor_start(const struct dlq_config *c, const struct dlq_queue *q,
    const struct dlq_monitor_env *env)
{
	struct dlq_monitor *m;
	pthread_attr_t attr;
	int rc;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
#ifdef DLQ_TEST_HOOKS
	if (getenv("DLQ_FAULT_EXIT_AFTER_COMMITS") != NULL)
		fault_exit_after = atol(getenv("DLQ_FAULT_EXIT_AFTER_COMMITS"));
	if (getenv("DLQ_FAULT_COMMIT_DELAY_MS") != NULL)
		fault_commit_delay_ms = atol(getenv("DLQ_FAULT_COMMIT_DELAY_MS"));
#endif
	m->cfg = c;
	m->q = q;
	m->stop = env->stop;
	m->alerter = env->alerter;
	m->classifier = env->classifier;
	m->archive = env->archive;
	m->redact.keys = &c->mask_keys;
	m->redact.emails = c->mask_emails;
	m->redact.digits_min = (int)c->mask_digits_min;
	m->redact.max_bytes = (size_t)c->payload_max_bytes;
	m->redact.key_starts = dlq_redact_key_starts(&c->mask_keys);
	m->consumer_tag = amqp_empty_bytes;
	dlq_buf_init(&m->line);
	dlq_buf_init(&m->error);
	dlq_buf_init(&m->sig);
	dlq_buf_init(&m->xdeath);
	dlq_buf_init(&m->payload);
	dlq_metrics_consumer(q->dlq_name, false);
	if (dlq_digest_init(&m->alerts, BATCH_GROUPS) == -1) {
		free_monitor(m);
		return NULL;
	}
	pthread_attr_init(&attr);
	/* 37+ threads: keep the stacks small (the deepest path is a log line) */
	pthread_attr_setstacksize(&attr, 256 * 1024);
	rc = pthread_create(&m->thread, &attr, run, m);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		dlq_log(DLQ_LOG_ERR, "thread_create_failed", "dlq", q->dlq_name,
		    "error", strerror(rc), NULL);
		free_monitor(m);
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
	free_monitor(m);
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
