/* leader.c - the leader's lease (leader.h). */
#include "leader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "amqp.h"
#include "archive.h"
#include "log.h"
#include "replicas.h"

#define RENEW_MS	1000
/* The lease outlives a stalled leader by this at least, and its POST of
 * a digest (alert.timeout_ms) by 10 s. */
#define TTL_MIN_MS	15000
/* Kept from the local end of the lease: clocks that run at slightly
 * different rates. */
#define MARGIN_MS	1000

static atomic_llong lead_until = INT64_MAX;	/* monotonic; SQLite: always */
static char replica[300];
static struct dlq_archive *handle;
static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static bool running, stop;
static int64_t ttl_ms;

const char *
dlq_replica(void)
{
	char host[256];

	if (replica[0] == '\0') {
		if (gethostname(host, sizeof(host)) != 0)
			snprintf(host, sizeof(host), "?");
		host[sizeof(host) - 1] = '\0';
		snprintf(replica, sizeof(replica), "%s:%ld", host,
		    (long)getpid());
	}
	return replica;
}

bool
dlq_leading(void)
{
	return dlq_leading_left_ms() > 0;
}

int64_t
dlq_leading_left_ms(void)
{
	int64_t until = atomic_load(&lead_until), now;

	if (until == INT64_MAX)
		return INT64_MAX;
	now = dlq_now_ms();
	return until > now ? until - now : 0;
}

/* One ask: leads on until the lease's end, or says why not. */
static void
ask(char *leader, size_t n, bool *led)
{
	char holder[256] = "";
	int64_t t0 = dlq_now_ms();
	int rc = dlq_archive_lease(handle, replica, ttl_ms, holder,
	    sizeof(holder));

	if (rc == 1) {
		atomic_store(&lead_until, t0 + ttl_ms - MARGIN_MS);
		if (!*led)
			dlq_log(DLQ_LOG_INFO, "leader_elected", "replica",
			    replica, NULL);
		*led = true;
		leader[0] = '\0';
		return;
	}
	if (rc == 0) {
		atomic_store(&lead_until, 0);
		if (*led)
			dlq_log(DLQ_LOG_WARN, "leader_lost", "replica", replica,
			    "leader", holder, NULL);
		else if (strcmp(holder, leader) != 0)
			dlq_log(DLQ_LOG_INFO, "leader_follows", "leader",
			    holder, NULL);
		*led = false;
		snprintf(leader, n, "%s", holder);
		return;
	}
	/* no answer: what was renewed runs out by itself */
	if (*led && !dlq_leading()) {
		dlq_log(DLQ_LOG_WARN, "leader_lost", "replica", replica,
		    "error", dlq_archive_errmsg(handle), NULL);
		*led = false;
	}
}

/* Between asks (the first is the starter's, the others the thread's):
 * the holder last seen, whether this worker held the lease. */
static char seen_holder[256];
static bool held;

static void *
run(void *arg)
{
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&mu);
	while (!stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += RENEW_MS / 1000;
		while (!stop && pthread_cond_timedwait(&cv, &mu, &ts) == 0)
			;
		if (stop)
			break;
		pthread_mutex_unlock(&mu);
		ask(seen_holder, sizeof(seen_holder), &held);
		pthread_mutex_lock(&mu);
	}
	pthread_mutex_unlock(&mu);
	if (held) {
		atomic_store(&lead_until, 0);
		dlq_archive_lease_release(handle, replica);
	}
	return NULL;
}

int
dlq_leader_start(const struct dlq_config *c, struct dlq_archive *own)
{
	pthread_condattr_t ca;

	(void)dlq_replica();
	if (own == NULL)
		return 0;
	handle = own;
	ttl_ms = c->alert_timeout_ms + 10000 > TTL_MIN_MS ?
	    c->alert_timeout_ms + 10000 : TTL_MIN_MS;
	atomic_store(&lead_until, 0);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cv, &ca);
	pthread_condattr_destroy(&ca);
	/* the first ask before the other threads start: they know who
	 * leads from their first look */
	ask(seen_holder, sizeof(seen_holder), &held);
	if (pthread_create(&thread, NULL, run, NULL) != 0) {
		dlq_log(DLQ_LOG_ERR, "leader_start_failed", "error",
		    "cannot start a thread", NULL);
		return -1;
	}
	running = true;
	return 0;
}

void
dlq_leader_stop(void)
{
	if (!running) {
		dlq_archive_close(handle);	/* NULL ok */
		handle = NULL;
		return;
	}
	pthread_mutex_lock(&mu);
	stop = true;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(thread, NULL);
	running = false;
	dlq_archive_close(handle);
	handle = NULL;
}
