/* metrics.c - process-wide counters for /metrics.
 *
 * Labelled series live in small fixed tables: labels come from the
 * topology (queues), the death reasons and the error classes, so their
 * number is bounded; past the table size new series are counted under
 * "other" rather than growing memory. */
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "leader.h"

#define SERIES_MAX	512
#define CONSUMERS_MAX	1024

struct series {
	char		 labels[3][256];	/* a queue name: up to 255 bytes */
	uint64_t	 value;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct series dead[SERIES_MAX];
static size_t n_dead;
static struct series alerts[64];
static size_t n_alerts;
static struct series reconnects[CONSUMERS_MAX];
static size_t n_reconnects;
static struct {
	char	 dlq[256];
	bool	 up;
	bool	 archive_failing;	/* its last batch could not be written */
	uint32_t others;		/* other consumers of its DLQ */
} consumers[CONSUMERS_MAX];
static size_t n_consumers;
static char archive_error[256];	/* why, the last time one said */
static char broker_error[256];	/* why it cannot be reached; "": it can */

static char replica[300];	/* "": not a replica (SQLite) */

static atomic_uint_fast64_t acked;
static atomic_uint_fast64_t control_refused;
static atomic_bool topology_ok;

static const double commit_buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5, 1, 2.5 };
#define NBUCKETS	(sizeof(commit_buckets) / sizeof(commit_buckets[0]))
static uint64_t commit_counts[NBUCKETS + 1];
static uint64_t commit_n;
static double commit_sum;

/* Adds to the series with these labels (under mu). The last place of
 * a table counts every label set past the others, all its labels
 * "other": the series already there go on counting as themselves. */
static void
bump(struct series *t, size_t *n, size_t max, const char *a, const char *b,
    const char *c, uint64_t by)
{
	size_t i;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < *n; i++)
			if (strcmp(t[i].labels[0], a) == 0 &&
			    strcmp(t[i].labels[1], b) == 0 &&
			    strcmp(t[i].labels[2], c) == 0) {
				t[i].value += by;
				return;
			}
		if (*n < max - 1)
			break;
		a = b = c = "other";	/* the last series counts the rest */
	}
	snprintf(t[*n].labels[0], sizeof(t[0].labels[0]), "%s", a);
	snprintf(t[*n].labels[1], sizeof(t[0].labels[1]), "%s", b);
	snprintf(t[*n].labels[2], sizeof(t[0].labels[2]), "%s", c);
	t[(*n)++].value = by;
}

void
dlq_metrics_dead_letters(const char *dlq, const char *reason,
    const char *class, uint64_t n)
{
	pthread_mutex_lock(&mu);
	bump(dead, &n_dead, SERIES_MAX, dlq, reason, class, n);
	pthread_mutex_unlock(&mu);
}

void
dlq_metrics_acked(uint64_t n)
{
	acked += n;
}

void
dlq_metrics_reconnect(const char *dlq)
{
	pthread_mutex_lock(&mu);
	bump(reconnects, &n_reconnects, CONSUMERS_MAX, dlq, "", "", 1);
	pthread_mutex_unlock(&mu);
}

void
dlq_metrics_alert(const char *target, bool sent)
{
	pthread_mutex_lock(&mu);
	bump(alerts, &n_alerts, 64, target, sent ? "sent" : "failed", "", 1);
	pthread_mutex_unlock(&mu);
}

void
dlq_metrics_commit(double s)
{
	size_t i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < NBUCKETS && s > commit_buckets[i]; i++)
		;
	commit_counts[i]++;
	commit_n++;
	commit_sum += s;
	pthread_mutex_unlock(&mu);
}

/* The consumers table's entry of `dlq`, added when new; CONSUMERS_MAX
 * when the table is full (under mu). */
static size_t
consumer(const char *dlq)
{
	size_t i;

	for (i = 0; i < n_consumers; i++)
		if (strcmp(consumers[i].dlq, dlq) == 0)
			return i;
	if (n_consumers == CONSUMERS_MAX)
		return CONSUMERS_MAX;
	snprintf(consumers[n_consumers].dlq, sizeof(consumers[0].dlq), "%s",
	    dlq);
	return n_consumers++;
}

void
dlq_metrics_consumer(const char *dlq, bool up)
{
	size_t i;

	pthread_mutex_lock(&mu);
	if ((i = consumer(dlq)) < CONSUMERS_MAX)
		consumers[i].up = up;
	pthread_mutex_unlock(&mu);
}

void
dlq_metrics_consumer_others(const char *dlq, uint32_t others)
{
	size_t i;

	pthread_mutex_lock(&mu);
	if ((i = consumer(dlq)) < CONSUMERS_MAX)
		consumers[i].others = others;
	pthread_mutex_unlock(&mu);
}

void
dlq_metrics_archive(const char *dlq, const char *error)
{
	size_t i;

	pthread_mutex_lock(&mu);
	if ((i = consumer(dlq)) < CONSUMERS_MAX)
		consumers[i].archive_failing = error != NULL;
	if (error != NULL)
		snprintf(archive_error, sizeof(archive_error), "%s", error);
	pthread_mutex_unlock(&mu);
}

/* Whether a consumer's archive writes fail now (under mu). */
static bool
archive_failing(void)
{
	size_t i;

	for (i = 0; i < n_consumers; i++)
		if (consumers[i].archive_failing)
			return true;
	return false;
}

bool
dlq_metrics_archive_error(char *out, size_t n)
{
	bool failing;

	pthread_mutex_lock(&mu);
	if ((failing = archive_failing()))
		snprintf(out, n, "%s", archive_error);
	pthread_mutex_unlock(&mu);
	return failing;
}

void
dlq_metrics_control_refused(void)
{
	control_refused++;
}

void
dlq_metrics_broker(const char *error)
{
	pthread_mutex_lock(&mu);
	snprintf(broker_error, sizeof(broker_error), "%s", error ? error : "");
	pthread_mutex_unlock(&mu);
}

bool
dlq_metrics_broker_error(char *out, size_t n)
{
	bool failing;

	pthread_mutex_lock(&mu);
	if ((failing = broker_error[0] != '\0'))
		snprintf(out, n, "%s", broker_error);
	pthread_mutex_unlock(&mu);
	return failing;
}

void
dlq_metrics_topology(bool ok)
{
	topology_ok = ok;
}

bool
dlq_metrics_topology_asserted(void)
{
	return topology_ok;
}

int
dlq_metrics_consumers_down(struct dlq_buf *out)
{
	size_t i;
	int down = 0;

	pthread_mutex_lock(&mu);
	for (i = 0; i < n_consumers; i++)
		if (!consumers[i].up) {
			if (down++ > 0)
				dlq_buf_addc(out, ',');
			dlq_buf_json_cstr(out, consumers[i].dlq);
		}
	pthread_mutex_unlock(&mu);
	return down;
}

void
dlq_metrics_label(struct dlq_buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			dlq_buf_addc(b, '\\');
		if (*s == '\n') {
			dlq_buf_adds(b, "\\n");
			continue;
		}
		dlq_buf_addc(b, *s);
	}
}

static void
series(struct dlq_buf *b, const char *name, const char *const *keys, int nk,
    const struct series *s)
{
	int i;

	dlq_buf_adds(b, name);
	dlq_buf_addc(b, '{');
	for (i = 0; i < nk; i++) {
		dlq_buf_printf(b, "%s%s=\"", i ? "," : "", keys[i]);
		dlq_metrics_label(b, s->labels[i]);
		dlq_buf_addc(b, '"');
	}
	dlq_buf_printf(b, "} %llu\n", (unsigned long long)s->value);
}

void
dlq_metrics_replica(const char *name)
{
	snprintf(replica, sizeof(replica), "%s", name);
}

/* Each sample line of b from `from` on gets the replica's label first,
 * and the series dlq_leader is added. */
static void
label_replica(struct dlq_buf *b, size_t from)
{
	struct dlq_buf tail;
	const char *p, *end, *nl, *sp;

	dlq_buf_init(&tail);
	dlq_buf_add(&tail, b->data + from, b->len - from);
	if (tail.oom) {
		dlq_buf_release(&tail);
		return;
	}
	b->len = from;
	for (p = tail.data, end = tail.data + tail.len; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end - 1;
		sp = p + strcspn(p, "{ \n");
		if (*p == '#' || sp > nl || *sp == '\n') {
			dlq_buf_add(b, p, (size_t)(nl + 1 - p));
			continue;
		}
		dlq_buf_add(b, p, (size_t)(sp - p));
		dlq_buf_adds(b, "{replica=\"");
		dlq_metrics_label(b, replica);
		dlq_buf_adds(b, *sp == '{' ? "\"," : "\"}");
		dlq_buf_add(b, sp + (*sp == '{'), (size_t)(nl + 1 - sp -
		    (*sp == '{')));
	}
	dlq_buf_release(&tail);
	dlq_buf_adds(b, "# HELP dlq_leader 1 on the replica that sends the "
	    "digests and runs the singleton jobs.\n# TYPE dlq_leader gauge\n"
	    "dlq_leader{replica=\"");
	dlq_metrics_label(b, replica);
	dlq_buf_printf(b, "\"} %d\n", dlq_leading() ? 1 : 0);
}

void
dlq_metrics_render(struct dlq_buf *b)
{
	static const char *const dl_keys[] = { "dlq", "reason", "class" };
	static const char *const al_keys[] = { "target", "outcome" };
	static const char *const rc_keys[] = { "dlq" };
	size_t from = b->len;	/* the worker's own series from here */
	uint64_t cum = 0;
	size_t i;

	pthread_mutex_lock(&mu);
	dlq_buf_adds(b, "# HELP dlq_dead_letters_total Dead letters received "
	    "and archived.\n# TYPE dlq_dead_letters_total counter\n");
	for (i = 0; i < n_dead; i++)
		series(b, "dlq_dead_letters_total", dl_keys, 3, &dead[i]);
	dlq_buf_adds(b, "# HELP dlq_consumer_up 1 when the consumer of a DLQ "
	    "is connected.\n# TYPE dlq_consumer_up gauge\n");
	for (i = 0; i < n_consumers; i++) {
		dlq_buf_adds(b, "dlq_consumer_up{dlq=\"");
		dlq_metrics_label(b, consumers[i].dlq);
		dlq_buf_printf(b, "\"} %d\n", consumers[i].up ? 1 : 0);
	}
	dlq_buf_adds(b, "# HELP dlq_consumer_others Other consumers of a "
	    "monitored DLQ, as last asked: the dead letters they take are not "
	    "archived here.\n# TYPE dlq_consumer_others gauge\n");
	for (i = 0; i < n_consumers; i++) {
		dlq_buf_adds(b, "dlq_consumer_others{dlq=\"");
		dlq_metrics_label(b, consumers[i].dlq);
		dlq_buf_printf(b, "\"} %u\n", (unsigned)consumers[i].others);
	}
	dlq_buf_adds(b, "# HELP dlq_reconnects_total Consumer reconnects.\n"
	    "# TYPE dlq_reconnects_total counter\n");
	for (i = 0; i < n_reconnects; i++)
		series(b, "dlq_reconnects_total", rc_keys, 1, &reconnects[i]);
	dlq_buf_printf(b, "# HELP dlq_acks_total Deliveries acked after their "
	    "commit.\n# TYPE dlq_acks_total counter\ndlq_acks_total %llu\n",
	    (unsigned long long)acked);
	dlq_buf_printf(b, "# HELP dlq_control_refused_total Control requests "
	    "refused for want of a role.\n# TYPE dlq_control_refused_total "
	    "counter\ndlq_control_refused_total %llu\n",
	    (unsigned long long)control_refused);
	dlq_buf_adds(b, "# HELP dlq_alert_digests_total Digest POSTs by target "
	    "host and outcome.\n# TYPE dlq_alert_digests_total counter\n");
	for (i = 0; i < n_alerts; i++)
		series(b, "dlq_alert_digests_total", al_keys, 2, &alerts[i]);
	dlq_buf_adds(b, "# HELP dlq_archive_commit_seconds Archive commit "
	    "latency per batch.\n# TYPE dlq_archive_commit_seconds histogram\n");
	for (i = 0; i < NBUCKETS; i++) {
		cum += commit_counts[i];
		dlq_buf_printf(b, "dlq_archive_commit_seconds_bucket{le=\"%g\"} "
		    "%llu\n", commit_buckets[i], (unsigned long long)cum);
	}
	dlq_buf_printf(b, "dlq_archive_commit_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "dlq_archive_commit_seconds_sum %.6f\n"
	    "dlq_archive_commit_seconds_count %llu\n",
	    (unsigned long long)commit_n, commit_sum,
	    (unsigned long long)commit_n);
	dlq_buf_printf(b, "# HELP dlq_topology_asserted 1 once the topology "
	    "was asserted.\n# TYPE dlq_topology_asserted gauge\n"
	    "dlq_topology_asserted %d\n", topology_ok ? 1 : 0);
	dlq_buf_printf(b, "# HELP dlq_archive_writable 0 while a consumer "
	    "cannot write the archive (its DLQ paused), else 1.\n"
	    "# TYPE dlq_archive_writable gauge\ndlq_archive_writable %d\n",
	    archive_failing() ? 0 : 1);
	pthread_mutex_unlock(&mu);
	if (replica[0] != '\0')
		label_replica(b, from);
}
