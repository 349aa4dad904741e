/* redrive.c - the worker's automatic redrive (see redrive.h). */
#include "redrive.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "amqp.h"
#include "archive.h"
#include "cases.h"
#include "duration.h"
#include "leader.h"
#include "log.h"
#include "publisher.h"
#include "redrivedb.h"
#include "replaysend.h"
#include "replaysrv.h"

#define REASON		"automatic redrive (redrive.classes)"

/* What one queue's last tick sent, watched for returns. */
struct queue_state {
	const char	*queue;
	int64_t		 tick_ms;	/* wall clock of the tick; 0: none */
	int64_t		 published;	/* confirmed in that tick */
};

struct dlq_redriver {
	const struct dlq_config	*cfg;
	struct dlq_alerter	*alerter;
	struct dlq_archive	*archive;
	struct dlq_publisher	*pub;
	struct dlq_buf		 classes;	/* JSON array, for json_each */
	struct queue_state	*q;
	size_t			 n;
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	bool			 stop;
};

static void
notice(struct dlq_redriver *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
notice(struct dlq_redriver *r, const char *fmt, ...)
{
	char text[DLQ_NOTICE_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	dlq_alert_notice(r->alerter, DLQ_NOTICE_REDRIVE, NULL, text);
}

static void
trip(struct dlq_redriver *r, struct queue_state *q, int64_t back)
{
	struct dlq_buf line = { 0 };
	char w[32];

	dlq_redrive_trip(r->archive, q->queue, dlq_wall_ms(), q->published,
	    back);
	if (dlq_log_begin(&line, DLQ_LOG_ERR, "redrive_circuit_open")) {
		dlq_log_str(&line, "queue", q->queue);
		dlq_log_int(&line, "redriven", q->published);
		dlq_log_int(&line, "returned", back);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
	notice(r, "%s: redrive PAUSED: %lld of %lld redriven came back dead "
	    "within %s (redrive.trip_ratio %.2f); resume with: dlqctl redrive "
	    "resume %s --reason TEXT", q->queue, (long long)back,
	    (long long)q->published, dlq_format_age(r->cfg->redrive_watch_ms, w,
	    sizeof(w)), (double)r->cfg->redrive_trip_permille / 1000.0,
	    q->queue);
	q->tick_ms = 0;
	q->published = 0;
}

struct leaving {
	struct dlq_redriver	*r;
	const char		*queue;
};

/* A case left to humans: a log line and a digest line (the note is on
 * the case). */
static void
left(void *arg, int64_t id, const char *mid, const char *note)
{
	struct leaving *x = arg;
	struct dlq_buf line = { 0 };

	if (dlq_log_begin(&line, DLQ_LOG_WARN, "redrive_stopped")) {
		dlq_log_int(&line, "id", id);
		dlq_log_str(&line, "queue", x->queue);
		dlq_log_str(&line, "why", note);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
	notice(x->r, "#%lld %s%s%s: %s; left open for a human (dlqctl show "
	    "%lld)", (long long)id, x->queue, mid ? " message " : "",
	    mid ? mid : "", note, (long long)id);
}

/* Cases that died redrive.max_cycles times after being redriven. */
static void
give_up(struct dlq_redriver *r, const char *queue)
{
	struct leaving x = { r, queue };

	dlq_redrive_give_up(r->archive, queue, dlq_wall_ms(),
	    r->cfg->redrive_max_cycles, r->classes.data, left, &x);
}

/* A case the replay policy refused. */
static void
refused(struct dlq_redriver *r, const char *queue, int64_t id,
    const char *why)
{
	struct leaving x = { r, queue };
	char note[320];

	snprintf(note, sizeof(note), "redrive refused: %s", why);
	dlq_redrive_leave(r->archive, id, dlq_wall_ms(), note, left, &x);
}

static void
add_candidate(void *arg, int64_t id)
{
	cJSON **req = arg, *ids;

	if (*req == NULL) {
		*req = cJSON_CreateObject();
		cJSON_AddArrayToObject(*req, "ids");
		cJSON_AddStringToObject(*req, "reason", REASON);
		cJSON_AddStringToObject(*req, "evidence", "class in "
		    "redrive.classes, older than redrive.min_age, fewer "
		    "than redrive.max_cycles dead cycles");
	}
	ids = cJSON_GetObjectItemCaseSensitive(*req, "ids");
	cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)id));
}

/* The oldest candidates of `queue`, as a claim request; NULL: none. */
static cJSON *
candidates(struct dlq_redriver *r, const char *queue)
{
	cJSON *req = NULL;

	(void)dlq_redrive_candidates(r->archive, queue, dlq_wall_ms() -
	    r->cfg->redrive_min_age_ms, r->cfg->redrive_max_cycles,
	    r->classes.data, r->cfg->redrive_batch, add_candidate, &req);
	return req;
}

struct tick {
	int64_t	 published, failed, unknown, refused;
};

/* Publishes every claim and records the verdicts. */
static void
send_claims(struct dlq_redriver *r, const cJSON *claims, struct tick *t)
{
	cJSON *fin = cJSON_CreateObject(), *res;
	const cJSON *cl;
	enum dlq_pub_outcome o;
	struct dlq_buf out;
	char detail[1024], why[256];
	int rc;

	res = cJSON_AddArrayToObject(fin, "results");
	cJSON_ArrayForEach(cl, claims) {
		if (dlq_publisher_blocked(r->pub)) {
			/* nothing goes out while the broker blocks: given
			 * back, redriven when the alarm is over */
			o = DLQ_PUB_FAILED;
			snprintf(detail, sizeof(detail), "not sent: the broker "
			    "blocks publishing");
		} else
			o = dlq_replay_send(r->cfg, r->pub, cl, REASON, false,
			    detail, sizeof(detail));
		t->published += o == DLQ_PUB_OK;
		t->failed += o == DLQ_PUB_FAILED;
		t->unknown += o == DLQ_PUB_UNKNOWN;
		dlq_replay_verdict(res, cl, o, detail);
	}
	dlq_buf_init(&out);
	dlq_archive_writer_lock();
	rc = cJSON_GetArraySize(res) > 0 ? dlq_replay_finish(r->archive, fin,
	    DLQ_REDRIVE_ACTOR, &out, why, sizeof(why)) : DLQ_OK;
	dlq_archive_writer_unlock();
	if (rc != DLQ_OK)
		dlq_log(DLQ_LOG_ERR, "redrive_failed", "step", "finish", "error",
		    why, NULL);
	dlq_buf_release(&out);
	cJSON_Delete(fin);
}

static void
audit(struct dlq_redriver *r, const char *queue, const cJSON *req,
    const struct tick *t)
{
	cJSON *args = cJSON_CreateObject();
	char *text, result[160];

	cJSON_AddStringToObject(args, "queue", queue);
	cJSON_AddItemToObject(args, "ids", cJSON_Duplicate(
	    cJSON_GetObjectItem(req, "ids"), 1));
	text = cJSON_PrintUnformatted(args);
	snprintf(result, sizeof(result), "published %lld, failed %lld, unknown "
	    "%lld, refused %lld", (long long)t->published, (long long)t->failed,
	    (long long)t->unknown, (long long)t->refused);
	dlq_archive_writer_lock();
	dlq_cases_audit_add(r->archive, dlq_wall_ms(), DLQ_REDRIVE_ACTOR,
	    (long)getuid(), DLQ_REDRIVE_AUDIT_COMMAND, text, result);
	dlq_archive_writer_unlock();
	cJSON_free(text);
	cJSON_Delete(args);
}

/* Claims and publishes one batch of `q`. */
static void
redrive_batch(struct dlq_redriver *r, struct queue_state *q)
{
	cJSON *req, *ans;
	const cJSON *e;
	struct dlq_buf out, line = { 0 };
	struct tick t = { 0, 0, 0, 0 };
	char why[256];
	int64_t start = dlq_wall_ms();
	int rc;

	if ((req = candidates(r, q->queue)) == NULL)
		return;
	if (r->pub == NULL && (r->pub = dlq_publisher_open(r->cfg,
	    "dlq-worker redrive", why, sizeof(why))) == NULL) {
		dlq_log(DLQ_LOG_WARN, "redrive_failed", "queue", q->queue, "step",
		    "connect", "error", why, NULL);
		cJSON_Delete(req);
		return;
	}
	dlq_buf_init(&out);
	dlq_archive_writer_lock();
	rc = dlq_replay_claim(r->archive, r->cfg, req, DLQ_REDRIVE_ACTOR, &out, why,
	    sizeof(why));
	dlq_archive_writer_unlock();
	if (rc != DLQ_OK || (ans = cJSON_Parse(out.data)) == NULL) {
		dlq_log(DLQ_LOG_ERR, "redrive_failed", "queue", q->queue, "step",
		    "claim", "error", why, NULL);
		dlq_buf_release(&out);
		cJSON_Delete(req);
		return;
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(ans, "refused")) {
		t.refused++;
		refused(r, q->queue, (int64_t)cJSON_GetObjectItem(e,
		    "id")->valuedouble, cJSON_GetObjectItem(e, "why")->valuestring);
	}
	send_claims(r, cJSON_GetObjectItem(ans, "claims"), &t);
	if (dlq_publisher_blocked(r->pub))
		dlq_log(DLQ_LOG_WARN, "redrive_failed", "queue", q->queue,
		    "step", "publish", "error", "the broker blocks publishing "
		    "(a resource alarm); what was not sent is redriven later",
		    NULL);
	audit(r, q->queue, req, &t);
	if (dlq_log_begin(&line, DLQ_LOG_INFO, "redrive_tick")) {
		dlq_log_str(&line, "queue", q->queue);
		dlq_log_int(&line, "published", t.published);
		dlq_log_int(&line, "failed", t.failed);
		dlq_log_int(&line, "unknown", t.unknown);
		dlq_log_int(&line, "refused", t.refused);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
	if (t.published > 0) {
		q->tick_ms = start;
		q->published = t.published;
	}
	cJSON_Delete(ans);
	dlq_buf_release(&out);
	cJSON_Delete(req);
}

static void
tick_queue(struct dlq_redriver *r, struct queue_state *q)
{
	int64_t back;

	if (dlq_redrive_circuit_open(r->archive, q->queue))
		return;
	if (q->published > 0) {
		back = dlq_redrive_returned(r->archive, q->queue, q->tick_ms,
		    q->tick_ms + r->cfg->redrive_watch_ms);
		/* more than trip_ratio came back: counted as soon as known */
		if (back * 1000 > r->cfg->redrive_trip_permille * q->published) {
			trip(r, q, back);
			return;
		}
		if (dlq_wall_ms() <= q->tick_ms + r->cfg->redrive_watch_ms)
			return;		/* still watching the last tick */
		q->published = 0;
	}
	give_up(r, q->queue);
	redrive_batch(r, q);
}

static void *
run(void *arg)
{
	struct dlq_redriver *r = arg;
	struct timespec ts;
	size_t i;

	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		pthread_mutex_unlock(&r->mu);
		for (i = 0; i < r->n && dlq_leading(); i++)
			tick_queue(r, &r->q[i]);
		pthread_mutex_lock(&r->mu);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += r->cfg->redrive_interval_ms / 1000;
		ts.tv_nsec += (r->cfg->redrive_interval_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static void
free_redriver(struct dlq_redriver *r)
{
	dlq_publisher_close(r->pub);
	dlq_archive_close(r->archive);
	dlq_buf_release(&r->classes);
	free(r->q);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

struct dlq_redriver *
dlq_redrive_start(const struct dlq_config *c, struct dlq_alerter *a,
    bool *failed)
{
	struct dlq_redriver *r;
	pthread_condattr_t ca;
	size_t i;

	*failed = false;
	if (c->redrive_queues.n == 0)
		return NULL;
	*failed = true;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->cfg = c;
	r->alerter = a;
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	r->n = c->redrive_queues.n;
	dlq_buf_init(&r->classes);
	dlq_strlist_json(&c->redrive_classes, &r->classes);
	if ((r->q = calloc(r->n, sizeof(*r->q))) == NULL ||
	    r->classes.data == NULL || (r->archive = dlq_archive_open(c)) ==
	    NULL) {
		free_redriver(r);
		return NULL;
	}
	for (i = 0; i < r->n; i++)
		r->q[i].queue = c->redrive_queues.v[i];
	if (pthread_create(&r->thread, NULL, run, r) != 0) {
		dlq_log(DLQ_LOG_ERR, "redrive_failed", "step", "start", NULL);
		free_redriver(r);
		return NULL;
	}
	*failed = false;
	return r;
}

void
dlq_redrive_stop(struct dlq_redriver *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	free_redriver(r);
}
