/* worker.c - start-up, the consumer threads and shutdown.
 *
 * Signals are blocked in every thread and taken synchronously here with
 * sigtimedwait(): no code runs in a signal handler, and the consumers see
 * only an atomic stop flag. A broker that is not up yet (compose starts
 * both at once) is waited for with backoff; a broker that refuses our
 * credentials is an error that retrying cannot fix. */
#include "worker.h"

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
#include "control.h"
#include "log.h"
#include "monitor.h"

/* Time the last digest may take at shutdown; the consumers need well
 * under a second, so the worker still exits within 5 s. */
#define SHUTDOWN_ALERT_BUDGET_MS	3000

static atomic_bool stopping;

/* Waits up to `ms` for SIGTERM/SIGINT; returns the signal or 0. */
static int
wait_signal(const sigset_t *set, int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	int sig;

	sig = sigtimedwait(set, NULL, &ts);
	return sig > 0 ? sig : 0;
}

static int
assert_topology(const struct dlq_config *c, const struct dlq_topology *t,
    const sigset_t *set, struct dlq_assert_result *res)
{
	enum dlq_amqp_status st;
	unsigned attempt = 0;
	char why[512], ms[24];
	int64_t delay;

	for (;;) {
		st = dlq_topology_apply(c, t, res, why, sizeof(why));
		if (st == DLQ_AMQP_OK)
			return 0;
		if (st == DLQ_AMQP_FATAL) {
			dlq_log(DLQ_LOG_ERR, "broker_refused", "url", c->url_safe,
			    "error", why, NULL);
			return -1;
		}
		delay = dlq_amqp_backoff_ms(attempt++, c->reconnect_min_ms,
		    c->reconnect_max_ms);
		snprintf(ms, sizeof(ms), "%lld", (long long)delay);
		dlq_log(DLQ_LOG_WARN, "broker_unavailable", "url", c->url_safe,
		    "error", why, "retry_in_ms", ms, NULL);
		if (wait_signal(set, delay) != 0)
			return 1;
	}
}

/* Everything the running worker owns, in start order. */
struct services {
	struct dlq_archive	*archive;	/* main thread: retention */
	struct dlq_classifier	*classifier;
	struct dlq_alerter	*alerter;
	struct dlq_control	*control;
	struct dlq_monitor	**mons;
	size_t			 n_mons;
	int64_t			 next_retention_ms;
};

static int
start_services(const struct dlq_config *c, const struct dlq_topology *t,
    struct services *s)
{
	struct dlq_monitor_env env;
	struct dlq_buf errors;
	size_t i;

	memset(s, 0, sizeof(*s));
	dlq_buf_init(&errors);
	if ((s->archive = dlq_archive_open(c)) == NULL)
		return -1;
	if ((s->classifier = dlq_classify_new(c, &errors)) == NULL) {
		dlq_log(DLQ_LOG_ERR, "classify_failed", "error", errors.data,
		    NULL);
		dlq_buf_release(&errors);
		return -1;
	}
	if ((s->alerter = dlq_alert_start(c)) == NULL ||
	    (s->control = dlq_control_start(c)) == NULL ||
	    (s->mons = calloc(t->n_queues, sizeof(*s->mons))) == NULL)
		return -1;
	env.stop = &stopping;
	env.alerter = s->alerter;
	env.classifier = s->classifier;
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
	for (i = 0; i < s->n_mons; i++)
		dlq_monitor_join(s->mons[i]);
	free(s->mons);
	dlq_control_stop(s->control);
	dlq_alert_stop(s->alerter, SHUTDOWN_ALERT_BUDGET_MS);
	dlq_classify_free(s->classifier);
	dlq_archive_close(s->archive);
}

/* archive.retention_days: payloads and headers of resolved records go,
 * the records stay. Once at start, then daily. */
static void
apply_retention(const struct dlq_config *c, struct services *s)
{
	struct dlq_buf out;
	char days[24];
	int64_t now = dlq_wall_ms();

	if (c->retention_days == 0 || now < s->next_retention_ms)
		return;
	s->next_retention_ms = now + 86400000;
	dlq_buf_init(&out);
	snprintf(days, sizeof(days), "%lld", (long long)c->retention_days);
	if (dlq_cases_purge(dlq_archive_db(s->archive), now -
	    c->retention_days * 86400000, now, &out) == DLQ_CASE_OK)
		dlq_log(DLQ_LOG_INFO, "retention_applied", "days", days,
		    "result", out.data, NULL);
	else
		dlq_log(DLQ_LOG_WARN, "retention_failed", "error", out.data,
		    NULL);
	dlq_buf_release(&out);
}

int
dlq_worker_run(const struct dlq_config *c, const struct dlq_topology *t,
    bool assert_only)
{
	struct dlq_assert_result res;
	struct services s;
	sigset_t set;
	int sig, rc;
	char count[24], targets[32];

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	srandom((unsigned)time(NULL) ^ (unsigned)getpid());

	snprintf(count, sizeof(count), "%zu", dlq_topology_monitored(t));
	snprintf(targets, sizeof(targets), "%zu webhook%s", c->n_targets,
	    c->n_targets == 1 ? "" : "s");
	dlq_log(DLQ_LOG_INFO, "worker_starting", "url", c->url_safe,
	    "topology", t->source, "monitored", count,
	    "alerts", c->n_targets ? targets : "log only",
	    "archive", c->archive_path, NULL);

	if ((rc = assert_topology(c, t, &set, &res)) != 0)
		return rc < 0 ? DLQ_EXIT_ERROR : DLQ_EXIT_OK;
	if (assert_only)
		return res.conflicts || res.errors ? DLQ_EXIT_CONFLICT :
		    DLQ_EXIT_OK;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		dlq_log(DLQ_LOG_ERR, "curl_init_failed", NULL);
		return DLQ_EXIT_ERROR;
	}
	if (start_services(c, t, &s) == -1) {
		stop_services(&s);
		curl_global_cleanup();
		return DLQ_EXIT_ERROR;
	}
	snprintf(count, sizeof(count), "%zu", s.n_mons);
	dlq_log(DLQ_LOG_INFO, "worker_started", "consumers", count, NULL);

	while ((sig = wait_signal(&set, 1000)) == 0)
		apply_retention(c, &s);
	dlq_log(DLQ_LOG_INFO, "shutdown_started", "signal",
	    sig == SIGTERM ? "SIGTERM" : "SIGINT", NULL);
	stop_services(&s);
	curl_global_cleanup();
	dlq_log(DLQ_LOG_INFO, "shutdown", NULL);
	return DLQ_EXIT_OK;
}
