/* worker.c - start-up, the consumer threads and shutdown.
 *
 * Signals are blocked in every thread and taken synchronously here with
 * sigtimedwait(): no code runs in a signal handler, and the consumers see
 * only an atomic stop flag. A broker that is not up yet (compose starts
 * both at once) is waited for with backoff; a broker that refuses our
 * credentials is an error that retrying cannot fix. */
#include "url.h"
#include "worker.h"

#include <errno.h>
#include <malloc.h>
#include <sys/stat.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "alert.h"
#include "amqp.h"
#include "archive.h"
#include "cases.h"
#include "classify.h"
#include "classrefresh.h"
#include "duration.h"
#include "signature.h"
#include "sigrefresh.h"
#include "control.h"
#include "housekeep.h"
#include "leader.h"
#include "http.h"
#include "metrics.h"
#include "log.h"
#include "monitor.h"
#include "preflight.h"
#include "replicas.h"
#include "redrive.h"

/* Time the last digest may take at shutdown; the consumers need well
 * under a second, so the worker still exits within 5 s. */
#define SHUTDOWN_ALERT_BUDGET_MS	3000

/* The consumers write through one SQLite connection, in turns: one page
 * cache for all of them, never invalidated by another connection's
 * commit. Grows only as pages are used, and is given back after a flood.
 * Inserts touch the ends of the table and its indexes (fingerprints
 * begin with the death time) and the fingerprints of the last seconds:
 * 2 MiB hold them at 16 000 dead letters a second, and with 500 000
 * records in the archive a drain reads no more pages than with 8 MiB
 * (bench scenario 7), which cost 6 MiB more resident at a flood's peak. */
#define CONSUMER_CACHE_KIB		2048

static atomic_bool stopping;

static const char *
signal_name(int sig)
{
	return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
}

/* Waits up to `ms` for SIGTERM/SIGINT/SIGHUP; returns the signal or 0. */
static int
wait_signal(const sigset_t *set, int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	int sig;

	sig = sigtimedwait(set, NULL, &ts);
	return sig > 0 ? sig : 0;
}

/* Asserts the topology, retrying while the broker cannot be reached
 * (readiness says why meanwhile). 0 done, -1 the broker refused us, or
 * the stop signal that came while waiting. */
static int
assert_topology(const struct dlq_config *c, const struct dlq_topology *t,
    const sigset_t *set, struct dlq_assert_result *res)
{
	enum dlq_amqp_status st;
	struct dlq_buf line = { 0 };
	unsigned attempt = 0;
	char why[512];
	int64_t delay;
	int sig;

	for (;;) {
		st = dlq_topology_apply(c, t, res, why, sizeof(why));
		dlq_metrics_broker(st == DLQ_AMQP_OK ? NULL : why);
		if (st == DLQ_AMQP_OK)
			return 0;
		if (st == DLQ_AMQP_FATAL) {
			dlq_log(DLQ_LOG_ERR, "broker_refused", "url", c->url_safe,
			    "error", why, NULL);
			return -1;
		}
		delay = dlq_amqp_backoff_ms(attempt++, c->reconnect_min_ms,
		    c->reconnect_max_ms);
		if (dlq_log_begin(&line, DLQ_LOG_WARN, "broker_unavailable")) {
			dlq_log_str(&line, "url", c->url_safe);
			dlq_log_str(&line, "error", why);
			dlq_log_int(&line, "retry_in_ms", delay);
			dlq_log_end(&line);
		}
		dlq_buf_release(&line);
		if ((sig = wait_signal(set, delay)) != 0)
			return sig;
	}
}

/* How long a worker waits for another that has its archive open: a
 * predecessor stopping (SIGTERM: done within 10 s) or one started by
 * mistake, which it then leaves alone (exit 1). */
#define ARCHIVE_CLAIM_WAIT_MS	15000

/* One worker per archive (dlq_archive_claim). 0 claimed (or the file
 * cannot be opened: the archive's open says why), -1 another worker kept
 * it, 1 a stop signal came while waiting. */
static int
claim_archive(const struct dlq_config *c, const sigset_t *set, int *fd)
{
	int64_t until = dlq_now_ms() + ARCHIVE_CLAIM_WAIT_MS;
	struct dlq_buf line = { 0 };
	bool said = false;
	char why[96];

	*fd = -1;
	if (c->archive_url != NULL)	/* PostgreSQL: replicas share it */
		return 0;
	while (dlq_archive_claim(c->archive_path, fd) == EWOULDBLOCK) {
		if (dlq_now_ms() >= until) {
			snprintf(why, sizeof(why), "another dlq-worker still "
			    "has it open (waited %d s for it to exit)",
			    ARCHIVE_CLAIM_WAIT_MS / 1000);
			dlq_log(DLQ_LOG_ERR, "archive_open_failed", "path",
			    c->archive_path, "error", why, NULL);
			return -1;
		}
		if (!said && dlq_log_begin(&line, DLQ_LOG_WARN,
		    "archive_in_use")) {
			dlq_log_str(&line, "path", c->archive_path);
			dlq_log_int(&line, "wait_ms", ARCHIVE_CLAIM_WAIT_MS);
			dlq_log_str(&line, "advice", "another dlq-worker has "
			    "this archive open; waiting for it to exit. Two "
			    "on one archive would both send its digests: give "
			    "each worker its own archive.path");
			dlq_log_end(&line);
			dlq_buf_release(&line);
		}
		said = true;
		if (wait_signal(set, 100) != 0)
			return 1;
	}
	return 0;
}

/* After every handle of the archive is closed. */
static void
release_archive(int fd)
{
	if (fd != -1)
		close(fd);
}

/* Everything the running worker owns, in start order. */
struct services {
	struct dlq_archive	*archive;	/* main thread: retention */
	struct dlq_archive	*shared;	/* the consumers' one handle */
	struct dlq_archive	*alerts;	/* the alert thread's */
	struct dlq_classifier	*classifier;
	struct dlq_alerter	*alerter;
	struct dlq_redriver	*redriver;	/* NULL: redrive off */
	struct dlq_control	*control;
	struct dlq_http		*http;
	struct dlq_monitor	**mons;
	size_t			 n_mons;
	int64_t			 next_retention_ms;
	int64_t			 next_threshold_ms;
	int64_t			 owner_swept_ms;	/* housekeep.h */
	int64_t			 next_missing_ms;
	int64_t			 threshold_fired_ms[2];	/* wall clock */
};

static int
start_http(const struct dlq_config *c, struct services *s)
{
	bool failed;

	s->http = dlq_http_start(c, &failed);
	return failed ? -1 : 0;
}

/* redrive.queues names work queues: say so when one is not ours (it
 * would never find a dead letter to redrive). */
static void
check_redrive_queues(const struct dlq_config *c, const struct dlq_topology *t)
{
	size_t i, j;

	for (i = 0; i < c->redrive_queues.n; i++) {
		for (j = 0; j < t->n_queues; j++)
			if (strcmp(t->queues[j].name, c->redrive_queues.v[i]) == 0)
				break;
		if (j == t->n_queues || !t->queues[j].monitored)
			dlq_log(DLQ_LOG_WARN, "redrive_unknown_queue", "queue",
			    c->redrive_queues.v[i], "advice", "redrive.queues "
			    "names monitored work queues of the topology", NULL);
	}
}

/* What answers operators and monitoring, up before the broker is: the
 * archive, HTTP, the alert thread and the control socket. */
static int
start_services(const struct dlq_config *c, const struct dlq_topology *t,
    struct services *s)
{
	struct dlq_buf errors;
	size_t i;

	memset(s, 0, sizeof(*s));
	dlq_buf_init(&errors);
	if ((s->archive = dlq_archive_open(c)) == NULL)
		return -1;
	/* before any other handle reads the archive; not fatal: the records
	 * keep their signatures, tried again at the next start
	 * (signatures_refresh_failed says why) */
	(void)dlq_sigrefresh_run(s->archive, c->archive_path);
	if ((s->shared = dlq_archive_open(c)) == NULL ||
	    (s->alerts = dlq_archive_open(c)) == NULL ||
	    dlq_archive_cache(s->shared, CONSUMER_CACHE_KIB) == -1)
		return -1;
	/* a stop waits for no other process's write lock: the consumers'
	 * drain leaves unacked what it cannot archive, the alert thread
	 * its last digest's time (the next start sends it again) */
	dlq_archive_stop_waits(s->shared, &stopping);
	dlq_archive_stop_waits(s->alerts, &stopping);
	if ((s->classifier = dlq_classify_new(c, &errors)) == NULL) {
		dlq_log(DLQ_LOG_ERR, "classify_failed", "error", errors.data,
		    NULL);
		dlq_buf_release(&errors);
		return -1;
	}
	/* before any thread reads the archive, and before the alert thread
	 * announces what no digest did; not fatal: the records keep their
	 * classes, tried again at the next start */
	(void)dlq_classrefresh_run(s->archive, c->archive_path,
	    s->classifier);
	/* down until their consumers connect, and the broker not reached
	 * yet: /metrics and /readyz say so from their first answer */
	for (i = 0; i < t->n_queues; i++)
		if (t->queues[i].monitored)
			dlq_metrics_consumer(t->queues[i].dlq_name, false);
	dlq_metrics_broker("not connected yet: the first attempt is under way");
	if (dlq_archive_shared(s->archive))	/* before the first scrape */
		dlq_metrics_replica(dlq_replica());
	if (start_http(c, s) == -1)
		return -1;
	if (dlq_leader_start(c, dlq_archive_shared(s->archive) ?
	    dlq_archive_open(c) : NULL) == -1 ||
	    (s->alerter = dlq_alert_start(c, s->alerts)) == NULL ||
	    (s->control = dlq_control_start(c)) == NULL ||
	    (s->mons = calloc(t->n_queues, sizeof(*s->mons))) == NULL)
		return -1;
	return 0;
}

/* After the topology is asserted: what reads from or writes to the
 * broker. */
static int
start_consumers(const struct dlq_config *c, const struct dlq_topology *t,
    struct services *s)
{
	struct dlq_monitor_env env;
	bool failed;
	size_t i;

	check_redrive_queues(c, t);
	s->redriver = dlq_redrive_start(c, s->alerter, &failed);
	if (failed)
		return -1;
	env.stop = &stopping;
	env.alerter = s->alerter;
	env.classifier = s->classifier;
	env.archive = s->shared;
	for (i = 0; i < t->n_queues; i++) {
		if (!t->queues[i].monitored)
			continue;
		if ((s->mons[s->n_mons] = dlq_monitor_start(c, &t->queues[i],
		    &env)) == NULL)
			return -1;
		s->n_mons++;
	}
	return 0;
}

/* Consumers first, so that their last dead letters reach the digest. */
static void
stop_services(struct services *s)
{
	size_t i;

	stopping = true;
	dlq_redrive_stop(s->redriver);	/* no new replays while draining */
	for (i = 0; i < s->n_mons; i++)
		dlq_monitor_join(s->mons[i]);
	free(s->mons);
	dlq_archive_close(s->shared);
	dlq_control_stop(s->control);
	dlq_http_stop(s->http);
	dlq_alert_stop(s->alerter, SHUTDOWN_ALERT_BUDGET_MS);
	dlq_leader_stop();	/* after the leader's last digest */
	dlq_archive_close(s->alerts);
	dlq_classify_free(s->classifier);
	dlq_archive_close(s->archive);
}

/* An archive file deleted or replaced under the worker: what it would
 * write from now on is lost at the next start, so it stops (exit 1),
 * and a restart (compose, systemd) opens the file at the path. Its
 * consumers ack nothing more meanwhile (dlq_archive_commit_hold). */
static bool
archive_replaced(const struct dlq_config *c, struct services *s)
{
	if (!dlq_archive_moved(s->archive))
		return false;
	dlq_log(DLQ_LOG_ERR, "archive_replaced", "path", c->archive_path,
	    "action", "exiting; dead letters not archived stay in their "
	    "queues for the next start", NULL);
	return true;
}

/* Whether no stop signal waits: a purge goes on between its chunks until
 * one does (then the main loop takes it at once). */
static bool
no_stop_pending(long long purged, int percent, void *arg)
{
	sigset_t p;

	(void)purged, (void)percent, (void)arg;
	return sigpending(&p) != 0 || !(sigismember(&p, SIGTERM) == 1 ||
	    sigismember(&p, SIGINT) == 1 || sigismember(&p, SIGHUP) == 1);
}

/* archive.retention_days: payloads and headers of resolved records go,
 * the records stay; archive.audit_retention_days: audit entries go.
 * Once at start, then daily; a stop signal interrupts the purge (the
 * rest goes at the next start). */
static void
apply_retention(const struct dlq_config *c, struct services *s)
{
	struct dlq_buf out, line;
	long long purged = 0, audit = 0;
	int64_t now = dlq_wall_ms();
	int rc = DLQ_OK;

	if ((c->retention_days == 0 && c->audit_retention_days == 0) ||
	    now < s->next_retention_ms)
		return;
	s->next_retention_ms = now + 86400000;
	dlq_buf_init(&out);
	if (c->retention_days > 0) {
		rc = dlq_cases_purge(s->archive, now -
		    c->retention_days * 86400000, now, no_stop_pending, NULL,
		    &out);
		if (rc == DLQ_OK && sscanf(out.data, "{\"purged\":%lld}",
		    &purged) != 1)
			rc = DLQ_ERROR;
	}
	if (rc == DLQ_OK && c->audit_retention_days > 0 &&
	    dlq_cases_audit_expire(s->archive, now -
	    c->audit_retention_days * 86400000, &audit, &out) == -1)
		rc = DLQ_ERROR;
	if (rc == DLQ_OK) {
		dlq_buf_init(&line);
		if (dlq_log_begin(&line, DLQ_LOG_INFO, "retention_applied")) {
			dlq_log_int(&line, "days", c->retention_days);
			dlq_log_int(&line, "purged", purged);
			if (out.data && strstr(out.data, "\"interrupted\"") !=
			    NULL)
				dlq_log_bool(&line, "interrupted", true);
			dlq_log_int(&line, "audit_days",
			    c->audit_retention_days);
			dlq_log_int(&line, "audit_deleted", audit);
			dlq_log_end(&line);
		}
		dlq_buf_release(&line);
	} else
		dlq_log(DLQ_LOG_WARN, "retention_failed", "error", out.data ?
		    out.data : "?", NULL);
	dlq_buf_release(&out);
}

/* A threshold crossed: one alert, then not again within its cooldown,
 * also after a restart: when it fired is kept in the archive. */
static void
threshold(const struct dlq_config *c, struct services *s, int kind,
    const char *name, int64_t value, int64_t limit, const char *text)
{
	struct dlq_buf line = { 0 };
	int64_t now = dlq_wall_ms(), *fired = &s->threshold_fired_ms[kind];
	char key[64];

	if (value <= limit)
		return;
	snprintf(key, sizeof(key), "threshold_fired:%s", name);
	/* replicas: the last leader's, in the archive */
	if ((*fired == 0 || dlq_archive_shared(s->archive)) &&
	    dlq_archive_meta_get(s->archive, key, fired) == -1)
		*fired = 0;
	/* a clock set back does not silence it */
	if (*fired != 0 && now >= *fired &&
	    now - *fired < c->threshold_cooldown_ms)
		return;
	*fired = now;
	(void)dlq_archive_meta_set(s->archive, key, now);
	if (dlq_log_begin(&line, DLQ_LOG_WARN, "threshold_alert")) {
		dlq_log_str(&line, "kind", name);
		dlq_log_int(&line, "value", value);
		dlq_log_int(&line, "limit", limit);
		dlq_log_str(&line, "text", text);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
	dlq_alert_notice(s->alerter, DLQ_NOTICE_THRESHOLD, NULL, text);
}

/* One escalation for the digest's "Needs a decision" section. */
static void
escalation_text(const struct dlq_escalation *e, int64_t now,
    const struct dlq_config *c, char *text, size_t n)
{
	char a[32], b[32];

	if (e->owner != NULL)
		snprintf(text, n, "#%lld %s: %s has not decided \"%s\"; due "
		    "%s ago", (long long)e->id, e->queue, e->owner,
		    e->decision ? e->decision : "", dlq_format_age(now -
		    e->escalate_at_ms, a, sizeof(a)));
	else
		snprintf(text, n, "#%lld %s: no owner after %s (cases.owner_sla "
		    "%s)", (long long)e->id, e->queue,
		    dlq_format_age(now - e->received_ms, a, sizeof(a)),
		    dlq_format_age(c->owner_sla_ms, b, sizeof(b)));
}

struct escalating {
	const struct dlq_config	*cfg;
	struct services		*s;
	int64_t			 now;
};

static void
escalate(void *arg, const struct dlq_escalation *e)
{
	struct escalating *x = arg;
	struct dlq_buf line = { 0 };
	char text[DLQ_NOTICE_TEXT_MAX];

	escalation_text(e, x->now, x->cfg, text, sizeof(text));
	if (dlq_log_begin(&line, DLQ_LOG_WARN, "case_escalated")) {
		dlq_log_int(&line, "id", e->id);
		dlq_log_str(&line, "queue", e->queue);
		dlq_log_str(&line, "kind", e->owner == NULL ? "no_owner" :
		    "no_decision");
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
	dlq_alert_notice(x->s->alerter, DLQ_NOTICE_ESCALATION, NULL, text);
}

/* Cases that need a decision and were not announced yet, announced once
 * each (housekeep.h). */
static void
note_escalations(const struct dlq_config *c, struct services *s, int64_t now)
{
	struct escalating x = { c, s, now };

	(void)dlq_archive_escalations(s->archive, now, c->owner_sla_ms,
	    &s->owner_swept_ms, escalate, &x);
}

/* For consumers that found their DLQ missing (`dlq` the first), the
 * topology asserted again when topology.reassert allows: 1 done, with
 * `res`; 0 not allowed; -1 failed (logged). */
static int
reassert(const struct dlq_config *c, const struct dlq_topology *t,
    const char *dlq, struct dlq_assert_result *res)
{
	char why[512];

	if (!c->reassert)
		return 0;
	dlq_log(DLQ_LOG_WARN, "topology_reassert", "dlq", dlq, "reason",
	    "the queue is missing: dead letters to it are dropped until it is "
	    "back", NULL);
	if (dlq_topology_apply(c, t, res, why, sizeof(why)) != DLQ_AMQP_OK) {
		dlq_log(DLQ_LOG_WARN, "topology_reassert_failed", "error", why,
		    NULL);
		return -1;
	}
	return 1;
}

/* What DLQ `dlq` missing means after that (`done`, `res`): the digest's
 * line about it. */
static const char *
answer_missing(int done, const struct dlq_assert_result *res,
    const char *dlq)
{
	if (done == 0)
		return "missing: the broker drops the dead letters meant for it "
		    "until someone declares it (dlqctl topology assert)";
	if (done < 0)
		return "missing; declaring it again failed (see "
		    "topology_reassert_failed): the broker drops the dead "
		    "letters meant for it";
	switch (dlq_assert_missing_queue(res, dlq)) {
	case 1:
		return "missing, and the worker's broker user may not declare "
		    "it (see topology_missing): the broker drops the dead "
		    "letters meant for it until someone declares it (dlqctl "
		    "topology assert)";
	case -1:
		return "missing, and the worker's broker user may not declare "
		    "all of the topology (see topology_missing): the broker "
		    "may drop the dead letters meant for it";
	}
	if (res->errors > 0)
		return "missing; asserting the topology again met errors (see "
		    "topology_error): the broker may drop the dead letters "
		    "meant for it";
	return "was missing (deleted?), declared again: dead letters that "
	    "died meanwhile were dropped by the broker, unless their work "
	    "queue dead-letters at least once";
}

/* Consumers that found their DLQ missing (deleted, or a broker back
 * without its definitions): the broker drops the dead letters meant for
 * them until they are back. Said in the digest, one line per meaning
 * naming its DLQs; with topology.reassert the topology is asserted
 * again (once for all) and each consumer subscribes at its next try. At
 * most once per rabbitmq.reconnect_max_ms. */
static void
check_missing(const struct dlq_config *c, const struct dlq_topology *t,
    struct services *s)
{
	struct dlq_assert_result res = { 0 };	/* untouched when done 0 */
	const char *dlq;
	bool seen = false;
	int done = 0;
	size_t i;

	if (dlq_now_ms() < s->next_missing_ms)
		return;
	for (i = 0; i < s->n_mons; i++) {
		if ((dlq = dlq_monitor_take_missing(s->mons[i])) == NULL)
			continue;
		if (!seen)
			done = reassert(c, t, dlq, &res);
		seen = true;
		dlq_alert_notice(s->alerter, DLQ_NOTICE_MISSING, dlq,
		    answer_missing(done, &res, dlq));
	}
	if (seen)
		s->next_missing_ms = dlq_now_ms() + c->reconnect_max_ms;
}

/* Bindings the broker user may not declare, found missing at start in
 * the management API: nothing else would tell on-call that the broker
 * drops what they would route (a DLQ's: its dead letters). */
static void
tell_missing_bindings(struct services *s,
    const struct dlq_assert_result *res)
{
	char text[DLQ_NOTICE_TEXT_MAX], more[48] = "";

	if (res->missing_bindings == 0)
		return;
	if (res->missing_bindings > 1)
		snprintf(more, sizeof(more), " and %u more",
		    res->missing_bindings - 1);
	snprintf(text, sizeof(text), "binding %s%s missing (topology_missing "
	    "in the log), and the worker's broker user may not declare it: "
	    "the broker drops what it would route, dead letters included "
	    "(dlqctl topology assert)", res->missing_binding, more);
	dlq_alert_notice(s->alerter, DLQ_NOTICE_MISSING, NULL, text);
}

/* alert.threshold, alert.max_age_ms and overdue escalations, checked
 * every alert.threshold_check_ms against the archive. */
static void
check_thresholds(const struct dlq_config *c, struct services *s)
{
	int64_t now = dlq_wall_ms(), n, age;
	char text[200], a[32], b[32];

	if (dlq_now_ms() < s->next_threshold_ms)
		return;
	s->next_threshold_ms = dlq_now_ms() + c->threshold_check_ms;
	n = dlq_archive_unresolved(s->archive);
	snprintf(text, sizeof(text), "%lld unresolved dead letters (threshold "
	    "%lld)", (long long)n, (long long)c->threshold);
	if (c->threshold > 0)
		threshold(c, s, 0, "unresolved", n, c->threshold, text);
	age = dlq_archive_oldest_unresolved(s->archive, now);
	snprintf(text, sizeof(text), "the oldest unresolved dead letter is %s "
	    "old (alert.max_age %s)", dlq_format_age(age, a, sizeof(a)),
	    dlq_format_age(c->threshold_max_age_ms, b, sizeof(b)));
	if (c->threshold_max_age_ms > 0)
		threshold(c, s, 1, "oldest_unresolved", age,
		    c->threshold_max_age_ms, text);
	note_escalations(c, s, now);
}

/* The archive holds payloads that viewers must not read: say so at
 * start when its file is open to others (a new one is created 0600). */
static void
check_archive_file(const struct dlq_config *c)
{
	char mode[8];

	if (c->archive_url != NULL || !dlq_preflight_open_to_others(
	    c->archive_path, mode, sizeof(mode)))
		return;
	dlq_log(DLQ_LOG_WARN, "archive_readable", "path", c->archive_path,
	    "mode", mode, "advice", "the archive holds payloads (personal "
	    "data) that only operators may read: chmod 600 it and its -wal "
	    "and -shm files (or 640 with the worker's group)", NULL);
}

/* After the first SIGTERM / SIGINT / SIGHUP the worker drains; a second
 * one means "now": exit at once. The archive stays consistent (WAL: an
 * unfinished transaction is rolled back on the next open) and unacked
 * deliveries go back to their queues. */
static void *
watch_second_signal(void *arg)
{
	const sigset_t *set = arg;
	int sig;

	if (sigwait(set, &sig) == 0) {
		dlq_log(DLQ_LOG_WARN, "shutdown_forced", "signal",
		    signal_name(sig), NULL);
		_exit(DLQ_EXIT_ERROR);
	}
	return NULL;
}

int
dlq_worker_run(const struct dlq_config *c, const struct dlq_topology *t,
    bool assert_only)
{
	struct dlq_assert_result res;
	struct services s;
	pthread_t watcher;
	sigset_t set;
	int sig, rc, lock_fd;
	struct dlq_buf line = { 0 };
	char targets[32], archive[DLQ_ARCHIVE_WHERE_MAX];

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	/* a closed terminal (make run) stops the worker as cleanly as ^C */
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* a file size limit (ulimit -f, systemd's LimitFSIZE=) reached by
	 * the archive fails the write with EFBIG, as a full disk fails it
	 * with ENOSPC: archive_error and a pause, not a crash loop */
	signal(SIGXFSZ, SIG_IGN);
	/* one malloc arena per consumer thread would multiply the resident
	 * memory by the number of DLQs; two are plenty for this load */
	mallopt(M_ARENA_MAX, 2);
	/* rabbitmq-c gives each connection 128 KiB buffers (socket input,
	 * output, frame pool pages). glibc's sliding mmap threshold moves
	 * such blocks into the heap after the first one is freed, where
	 * their pages stay resident once touched; a fixed threshold keeps
	 * them mapped on their own: resident only as far as used, returned
	 * when freed. 37 consumers: 4 MiB less when idle. */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());

	snprintf(targets, sizeof(targets), "%zu webhook%s", c->n_targets,
	    c->n_targets == 1 ? "" : "s");
	(void)dlq_archive_where(c, archive, sizeof(archive));
	if (dlq_log_begin(&line, DLQ_LOG_INFO, "worker_starting")) {
		dlq_log_str(&line, "url", c->url_safe);
		if (c->hosts.n > 0) {	/* the cluster's other nodes */
			dlq_log_key(&line, "hosts");
			dlq_strlist_json(&c->hosts, &line);
		}
		dlq_log_str(&line, "topology", t->source);
		dlq_log_int(&line, "monitored",
		    (int64_t)dlq_topology_monitored(t));
		dlq_log_str(&line, "alerts", c->n_targets ? targets :
		    "log only");
		dlq_log_str(&line, "archive", archive);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
	(void)dlq_preflight(c, dlq_preflight_log, NULL);

	/* before the topology: refused bindings are looked for over HTTP */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		dlq_log(DLQ_LOG_ERR, "curl_init_failed", NULL);
		return DLQ_EXIT_ERROR;
	}
	if (assert_only) {
		rc = assert_topology(c, t, &set, &res);
		curl_global_cleanup();
		if (rc != 0)
			return rc < 0 ? DLQ_EXIT_ERROR : DLQ_EXIT_OK;
		return res.conflicts || res.errors || res.refused ?
		    DLQ_EXIT_CONFLICT : DLQ_EXIT_OK;
	}
	if ((rc = claim_archive(c, &set, &lock_fd)) != 0) {
		curl_global_cleanup();
		return rc < 0 ? DLQ_EXIT_ERROR : DLQ_EXIT_OK;
	}
	/* health, metrics and the archive's reads answer while the broker
	 * is down: an orchestrator sees a live worker that is not ready */
	if (start_services(c, t, &s) == -1 ||
	    (sig = assert_topology(c, t, &set, &res)) == -1 ||
	    (sig == 0 && start_consumers(c, t, &s) == -1)) {
		stop_services(&s);
		release_archive(lock_fd);
		curl_global_cleanup();
		return DLQ_EXIT_ERROR;
	}
	if (sig != 0) {		/* stopped while waiting for the broker */
		dlq_log(DLQ_LOG_INFO, "shutdown_started", "signal",
		    signal_name(sig), NULL);
		stop_services(&s);
		release_archive(lock_fd);
		curl_global_cleanup();
		dlq_log(DLQ_LOG_INFO, "shutdown", NULL);
		return DLQ_EXIT_OK;
	}
	dlq_metrics_topology(true);
	check_archive_file(c);
	tell_missing_bindings(&s, &res);
	if (dlq_log_begin(&line, DLQ_LOG_INFO, "worker_started")) {
		dlq_log_int(&line, "consumers", (int64_t)s.n_mons);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);

	while ((sig = wait_signal(&set, c->threshold_check_ms < 1000 ?
	    c->threshold_check_ms : 1000)) == 0 &&
	    !archive_replaced(c, &s)) {
		if (dlq_leading()) {	/* one of each across replicas */
			apply_retention(c, &s);
			check_thresholds(c, &s);
		}
		check_missing(c, t, &s);
	}
	if (sig != 0)
		dlq_log(DLQ_LOG_INFO, "shutdown_started", "signal",
		    signal_name(sig), NULL);
	if (pthread_create(&watcher, NULL, watch_second_signal, &set) == 0)
		pthread_detach(watcher);
	stop_services(&s);
	release_archive(lock_fd);
	curl_global_cleanup();
	dlq_log(DLQ_LOG_INFO, "shutdown", NULL);
	return sig != 0 ? DLQ_EXIT_OK : DLQ_EXIT_ERROR;
}
