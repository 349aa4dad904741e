/* alert.c - the alert thread, its targets and their timing.
 *
 * Per target two digests: `pending` (filled by consumers under the mutex)
 * and `inflight` (the digest being sent, owned by the alert thread). When
 * a target is due, pending is merged into inflight and inflight is sent;
 * on failure it stays and absorbs what arrives meanwhile, so a webhook
 * outage costs delay, never dead letters. Timing per target:
 *   nothing sent yet, or cooldown passed since the last digest -> now
 *   otherwise                    -> last digest + cooldown
 *   retrying after a failure     -> backoff or Retry-After
 *   and never two attempts less than a second apart.
 * A target's last delivered (or logged) digest is remembered in the
 * archive by its cut-off (when it took the pending dead letters), and
 * until the first one its first start: after a restart (a deploy, a
 * crash loop) the unresolved dead letters archived since, which no
 * digest announced, are pending again (alertbacklog.h), and a webhook's
 * cooldown goes on from there.
 *
 * On a shared archive (replicas, replicas.h) the pending groups live in
 * the archive instead: each replica stages its batches' groups in their
 * own transaction (dlq_alert_stage_batch), and only the leader
 * (leader.h) sends, taking what is pending from the archive when a
 * digest is due (polled every second out of the cooldown); its memory
 * keeps only the notices of its own jobs. A digest that failed, or whose
 * leader died, stays in the archive for the next attempt, by whichever
 * replica leads then. Notices given on a replica that does not lead are
 * dropped (their events are in its log). */
#include "alert.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alertbacklog.h"
#include "amqp.h"
#include "archive.h"
#include "leader.h"
#include "log.h"
#include "metrics.h"
#include "replicas.h"
#include "url.h"
#include "webhook.h"

#define MIN_INTERVAL_MS		1000
#define POLL_MS			1000	/* shared: out of the cooldown */
#define BACKOFF_MAX_MS		(5 * 60 * 1000)
#define SEEN_CAP		16384	/* signatures remembered as not new */
#define NEVER			(INT64_MIN / 4)

struct target {
	const struct dlq_target	*cfg;		/* NULL: log only */
	char			 host[256];
	char			 url_sha[68];	/* archive_meta id */
	CURL			*curl;
	struct dlq_digest	 pending;	/* under the mutex */
	struct dlq_digest	 inflight;	/* alert thread only */
	int64_t			 last_done_ms;	/* monotonic */
	int64_t			 cutoff_wall_ms; /* of inflight */
	int64_t			 last_attempt_ms;
	int64_t			 next_try_ms;
	int64_t			 next_poll_ms;	/* shared archive; under mu */
	bool			 taken;		/* shared: a digest of it is
						 * in the archive, unsent */
	unsigned		 attempt;
};

struct dlq_alerter {
	const struct dlq_config	*cfg;
	struct dlq_archive	*memory;	/* alert thread's; or NULL */
	bool			 shared;	/* pending groups in the archive */
	bool			 led;		/* shared: at the last turn */
	struct dlq_digest	 shown;		/* shared: what is sent */
	const char		**keys;		/* shared: the targets' */
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	atomic_bool		 stop;
	int64_t			 budget_ms;
	struct target		*t;
	size_t			 n;
	uint64_t		*seen;
	size_t			 n_seen;
	char			 title[160];
	struct dlq_buf		 text;
	struct dlq_buf		 body;
	struct dlq_buf		 line;
};

/* True when signature `id` (dlq_signature_id's 48 bits) was not seen
 * before (and remembers it). Under mu, or before the thread starts. */
static bool
seen_id(struct dlq_alerter *a, uint64_t id)
{
	uint64_t key = id + 1;		/* 0 marks a free slot */
	size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL >> 32) &
	    (SEEN_CAP - 1);

	for (; a->seen[i] != 0; i = (i + 1) & (SEEN_CAP - 1))
		if (a->seen[i] == key)
			return false;
	if (a->n_seen >= SEEN_CAP * 3 / 4) {
		/* full: forget, at the cost of marking some groups new twice */
		memset(a->seen, 0, SEEN_CAP * sizeof(*a->seen));
		a->n_seen = 0;
		i = (size_t)(key * 0x9e3779b97f4a7c15ULL >> 32) &
		    (SEEN_CAP - 1);
	}
	a->seen[i] = key;
	a->n_seen++;
	return true;
}

/* The same for a signature hash (dlq_signature_hash). */
static bool
seen_insert(struct dlq_alerter *a, uint64_t hash)
{
	return seen_id(a, hash >> 16);
}

/* At start: the signatures the archive holds are not new. */
static void
seed_seen(void *arg, const char *signature)
{
	char *end;
	uint64_t id = strtoull(signature, &end, 16);

	if (end != signature && *end == '\0')
		(void)seen_id(arg, id);
}

void
dlq_alert_note_batch(struct dlq_alerter *a, struct dlq_digest *batch)
{
	bool wake = false;
	size_t i;

	if (a == NULL || dlq_digest_empty(batch))
		return;
	if (a->shared) {	/* staged: a leader out of its cooldown
				 * takes them now */
		if (dlq_leading()) {
			pthread_mutex_lock(&a->mu);
			for (i = 0; i < a->n; i++)
				a->t[i].next_poll_ms = NEVER;
			pthread_cond_signal(&a->cv);
			pthread_mutex_unlock(&a->mu);
		}
		return;
	}
	pthread_mutex_lock(&a->mu);
	for (i = 0; i < batch->n; i++)
		batch->groups[i].is_new = seen_insert(a, batch->groups[i].hash);
	for (i = 0; i < a->n; i++) {
		wake |= dlq_digest_empty(&a->t[i].pending);
		dlq_digest_merge(&a->t[i].pending, batch);
	}
	if (wake)
		pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

int
dlq_alert_stage_batch(struct dlq_alerter *a, struct dlq_archive *archive,
    const struct dlq_digest *batch)
{
	if (a == NULL || !a->shared || dlq_digest_empty(batch))
		return 0;
	return dlq_archive_alerts_stage(archive, a->keys, a->n, batch);
}

void
dlq_alert_notice(struct dlq_alerter *a, enum dlq_notice_kind kind,
    const char *subject, const char *text)
{
	bool wake = false;
	size_t i;

	if (a == NULL || (a->shared && !dlq_leading()))
		return;
	pthread_mutex_lock(&a->mu);
	for (i = 0; i < a->n; i++) {
		wake |= dlq_digest_empty(&a->t[i].pending);
		dlq_digest_notice(&a->t[i].pending, kind, subject, text);
	}
	if (wake)
		pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

static int64_t
max64(int64_t x, int64_t y)
{
	return x > y ? x : y;
}

/* When `t` should send next; INT64_MAX when it has nothing. Under mu.
 * On a shared archive only the leader sends, and out of the cooldown it
 * looks for staged groups every POLL_MS. */
static int64_t
due(const struct dlq_alerter *a, const struct target *t)
{
	int64_t cooled = max64(t->last_done_ms + a->cfg->cooldown_ms,
	    t->last_attempt_ms + MIN_INTERVAL_MS);

	if (a->shared && !dlq_leading())
		return INT64_MAX;
	if (!dlq_digest_empty(&t->inflight) || t->taken)
		return max64(t->next_try_ms, t->last_attempt_ms + MIN_INTERVAL_MS);
	if (a->shared)
		return max64(cooled, t->next_poll_ms);
	if (!dlq_digest_empty(&t->pending))
		return cooled;
	return INT64_MAX;
}

static void
render(struct dlq_alerter *a, const struct target *t,
    const struct dlq_digest *d)
{
	dlq_buf_reset(&a->text);
	dlq_digest_render_linked(d, t->cfg ? t->cfg->format :
	    DLQ_FORMAT_PLAIN, a->title, a->cfg->console_public_url,
	    (size_t)a->cfg->max_chars, &a->text);
}

/* A digest in the log is an alert (there is no webhook, or it could not
 * be reached at shutdown): at warn, so that log.level = warn, which
 * silences a flood's dead_letter lines, keeps it. */
static void
log_digest(struct dlq_alerter *a, const struct target *t,
    const struct dlq_digest *d, bool unsent)
{
	if (!dlq_log_begin(&a->line, DLQ_LOG_WARN, "alert_digest"))
		return;
	if (t->cfg != NULL)
		dlq_log_str(&a->line, "target", t->host);
	dlq_log_int(&a->line, "groups", (int64_t)dlq_digest_groups(d));
	dlq_log_int(&a->line, "dead_letters", (int64_t)d->total);
	if (d->n_notices > 0)
		dlq_log_int(&a->line, "notices", (int64_t)d->n_notices);
	if (unsent)
		dlq_log_bool(&a->line, "unsent", true);
	dlq_log_strn(&a->line, "text", a->text.data, a->text.len);
	dlq_log_end(&a->line);
}

/* POSTs the rendered text; logs alert_sent or alert_failed. */
static int
post(struct dlq_alerter *a, struct target *t, const struct dlq_digest *d,
    long timeout_ms, const atomic_bool *abort, struct dlq_webhook_result *r)
{
	int rc;

	dlq_buf_reset(&a->body);
	dlq_webhook_body(&a->body, t->cfg->format, a->text.data, a->text.len);
	rc = dlq_webhook_post(t->curl, t->cfg, &a->body, timeout_ms, abort, r);
	dlq_metrics_alert(t->host, rc == 0);
	if (rc == 0 && dlq_log_begin(&a->line, DLQ_LOG_INFO, "alert_sent")) {
		dlq_log_str(&a->line, "target", t->host);
		dlq_log_str(&a->line, "format",
		    dlq_alert_format_name(t->cfg->format));
		dlq_log_int(&a->line, "status", r->status);
		dlq_log_int(&a->line, "groups", (int64_t)dlq_digest_groups(d));
		dlq_log_int(&a->line, "dead_letters", (int64_t)d->total);
		dlq_log_int(&a->line, "bytes", (int64_t)a->text.len);
		dlq_log_int(&a->line, "attempt", t->attempt + 1);
		dlq_log_end(&a->line);
	}
	return rc;
}

/* A webhook target is known in archive_meta by the SHA-256 of its URL,
 * which is a secret and never stored. */
static void
hash_url(struct target *t)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0, i;

	if (EVP_Digest(t->cfg->url, strlen(t->cfg->url), md, &n, EVP_sha256(),
	    NULL) != 1)
		return;
	for (i = 0; i < n && 2 * i + 2 < sizeof(t->url_sha); i++)
		snprintf(t->url_sha + 2 * i, 3, "%02x", md[i]);
}

/* Its archive_meta key `what`:<url_sha> (`what`:log for the log-only
 * target); false when it has none. */
static bool
meta_key(const struct dlq_alerter *a, const struct target *t,
    const char *what, char *key, size_t n)
{
	if (a->memory == NULL || t->url_sha[0] == '\0')
		return false;
	snprintf(key, n, "%s:%s", what, t->url_sha);
	return true;
}

/* A digest reached the webhook (or the log): its cut-off goes to the
 * archive. */
static void
remember_sent(struct dlq_alerter *a, const struct target *t)
{
	char key[96];

	if (meta_key(a, t, "alert_sent", key, sizeof(key)))
		(void)dlq_archive_meta_set(a->memory, key, t->cutoff_wall_ms);
}

/* Since when the archive's dead letters are owed to the target (in a
 * digest it received, or to come): the cut-off of the last digest it
 * received (*sent true), else its first start, which is recorded now
 * when this is it (nothing is owed then). False: nothing is owed. */
static bool
owed_since(struct dlq_alerter *a, const struct target *t, int64_t *since,
    bool *sent)
{
	char key[96];
	int rc;

	if (!meta_key(a, t, "alert_sent", key, sizeof(key)))
		return false;
	if ((*sent = dlq_archive_meta_get(a->memory, key, since) == 1))
		return true;
	(void)meta_key(a, t, "alert_since", key, sizeof(key));
	if ((rc = dlq_archive_meta_get(a->memory, key, since)) == 0)
		(void)dlq_archive_meta_set(a->memory, key, dlq_wall_ms());
	return rc == 1;
}

/* A webhook's last digest went out at `wall` (before this process, or
 * from another replica): less than a cooldown ago, the next one waits
 * for the rest of it. */
static void
resume_cooldown(struct dlq_alerter *a, struct target *t, int64_t wall)
{
	int64_t ago = dlq_wall_ms() - wall;

	if (ago < 0 || ago >= a->cfg->cooldown_ms)
		return;
	t->last_done_ms = dlq_now_ms() - ago;
	if (dlq_log_begin(&a->line, DLQ_LOG_INFO, "alert_cooldown_resumed")) {
		dlq_log_str(&a->line, "target", t->host);
		dlq_log_int(&a->line, "last_digest_ago_ms", ago);
		dlq_log_int(&a->line, "next_digest_in_ms",
		    a->cfg->cooldown_ms - ago);
		dlq_log_end(&a->line);
	}
}

/* At start, for a target started before: what the archive received
 * since it was last served and is still unresolved is pending again,
 * and for a webhook a digest less than a cooldown ago makes the next one
 * wait for the rest of it (a log-only digest goes out as it would). */
static void
recall_sent(struct dlq_alerter *a, struct target *t)
{
	int64_t wall, backlog;
	bool sent;

	if (!owed_since(a, t, &wall, &sent))
		return;
	backlog = dlq_alert_backlog(a->memory, wall,
	    a->cfg->max_groups, &t->pending);
	if (backlog > 0 && dlq_log_begin(&a->line, DLQ_LOG_INFO,
	    "alert_backlog")) {
		dlq_log_str(&a->line, "target", t->host);
		dlq_log_int(&a->line, "groups",
		    (int64_t)dlq_digest_groups(&t->pending));
		dlq_log_int(&a->line, "dead_letters", backlog);
		dlq_log_end(&a->line);
	}
	if (t->cfg != NULL && sent)
		resume_cooldown(a, t, wall);
}

/* What a digest of `t` would hold now (alert thread, mu not held): its
 * digest in flight; on a shared archive that one's notices and the
 * groups the archive holds for `t`, taken into its digest being sent
 * (if the archive does not answer, the notices alone: an archive outage
 * is told). NULL: nothing. */
static const struct dlq_digest *
contents(struct dlq_alerter *a, struct target *t)
{
	int64_t n;

	if (!a->shared)
		return dlq_digest_empty(&t->inflight) ? NULL : &t->inflight;
	dlq_digest_clear(&a->shown);
	dlq_digest_merge(&a->shown, &t->inflight);
	if ((n = dlq_archive_alerts_take(a->memory, t->url_sha,
	    &a->shown)) >= 0)
		t->taken = n > 0;
	else if (dlq_log_begin(&a->line, DLQ_LOG_WARN,
	    "alert_groups_unavailable")) {
		dlq_log_str(&a->line, "target", t->host);
		dlq_log_str(&a->line, "error", dlq_archive_errmsg(a->memory));
		dlq_log_end(&a->line);
	}
	return dlq_digest_empty(&a->shown) ? NULL : &a->shown;
}

/* A digest of `t` went out: what it held is done with. */
static void
delivered(struct dlq_alerter *a, struct target *t)
{
	dlq_digest_clear(&t->inflight);
	remember_sent(a, t);
	if (!t->taken)
		return;
	t->taken = false;
	/* sent, but still in the archive: the next digest repeats it
	 * (rather than lose it) */
	if (dlq_archive_alerts_done(a->memory, t->url_sha) == -1)
		dlq_log(DLQ_LOG_WARN, "alert_groups_kept", "target", t->host,
		    "error", dlq_archive_errmsg(a->memory), NULL);
}

/* One attempt for a due target. Called with mu held; returns with it. */
static void
send_due(struct dlq_alerter *a, struct target *t)
{
	const struct dlq_digest *d;
	struct dlq_webhook_result r;
	int64_t delay;
	int rc = 0;

	dlq_digest_merge(&t->inflight, &t->pending);
	dlq_digest_clear(&t->pending);
	pthread_mutex_unlock(&a->mu);

	/* a leader sends only what it surely finishes as the leader */
	if ((a->shared && dlq_leading_left_ms() < a->cfg->alert_timeout_ms +
	    MIN_INTERVAL_MS) || (d = contents(a, t)) == NULL) {
		pthread_mutex_lock(&a->mu);
		t->next_poll_ms = dlq_now_ms() + POLL_MS;
		return;
	}
	t->last_attempt_ms = dlq_now_ms();
	t->cutoff_wall_ms = dlq_wall_ms();
	render(a, t, d);
	if (t->cfg == NULL)
		log_digest(a, t, d, false);
	else
		rc = post(a, t, d, (long)a->cfg->alert_timeout_ms, &a->stop, &r);

	if (rc == 0) {
		delivered(a, t);
		t->last_done_ms = dlq_now_ms();
		t->attempt = 0;
	} else {
		t->attempt++;
		delay = (int64_t)MIN_INTERVAL_MS << (t->attempt < 9 ? t->attempt - 1 : 8);
		if (delay > BACKOFF_MAX_MS)
			delay = BACKOFF_MAX_MS;
		if (r.retry_after_ms > 0)
			delay = max64(r.retry_after_ms, MIN_INTERVAL_MS);
		t->next_try_ms = dlq_now_ms() + delay;
		if (dlq_log_begin(&a->line, DLQ_LOG_WARN, "alert_failed")) {
			dlq_log_str(&a->line, "target", t->host);
			dlq_log_int(&a->line, "status", r.status);
			dlq_log_str(&a->line, "error", r.error);
			dlq_log_int(&a->line, "attempt", t->attempt);
			dlq_log_int(&a->line, "retry_in_ms", delay);
			dlq_log_int(&a->line, "dead_letters", (int64_t)d->total);
			dlq_log_end(&a->line);
		}
	}
	pthread_mutex_lock(&a->mu);
}

/* At shutdown: one last attempt per target within the budget, or log.
 * On a shared archive a replica that does not lead has nothing to send,
 * and what the leader could not send stays in the archive. */
static void
flush(struct dlq_alerter *a)
{
	const struct dlq_digest *d;
	struct dlq_webhook_result r;
	int64_t end = dlq_now_ms() + a->budget_ms, left;
	struct target *t;
	size_t i;

	if (a->shared && !dlq_leading())
		return;
	for (i = 0; i < a->n; i++) {
		t = &a->t[i];
		pthread_mutex_lock(&a->mu);
		dlq_digest_merge(&t->inflight, &t->pending);
		dlq_digest_clear(&t->pending);
		t->cutoff_wall_ms = dlq_wall_ms();
		pthread_mutex_unlock(&a->mu);
		if ((d = contents(a, t)) == NULL)
			continue;
		render(a, t, d);
		left = end - dlq_now_ms();
		if (t->cfg == NULL) {
			log_digest(a, t, d, false);
			delivered(a, t);
		} else if (left < 100 ||
		    post(a, t, d, (long)(left < a->cfg->alert_timeout_ms ? left :
		    a->cfg->alert_timeout_ms), NULL, &r) != 0)
			log_digest(a, t, d, true);
		else
			delivered(a, t);
		dlq_digest_clear(&t->inflight);
	}
}

/* A replica of a shared archive became the leader: each webhook's
 * cooldown goes on from the last digest any replica delivered to it (a
 * digest its predecessor left unsent goes with the next one). */
static void
elected(struct dlq_alerter *a)
{
	int64_t wall;
	char key[96];
	size_t i;

	for (i = 0; i < a->n; i++) {
		struct target *t = &a->t[i];

		if (t->cfg != NULL && meta_key(a, t, "alert_sent", key,
		    sizeof(key)) && dlq_archive_meta_get(a->memory, key,
		    &wall) == 1)
			resume_cooldown(a, t, wall);
	}
}

/* It leads no more: its notices are dropped (logged where given). */
static void
deposed(struct dlq_alerter *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		dlq_digest_clear(&a->t[i].pending);
		dlq_digest_clear(&a->t[i].inflight);
		a->t[i].taken = false;
	}
}

static void *
run(void *arg)
{
	struct dlq_alerter *a = arg;
	struct timespec ts;
	int64_t now, next, d;
	size_t i;
	bool sent;

	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		if (a->shared && dlq_leading() != a->led) {
			a->led = !a->led;
			if (a->led) {
				pthread_mutex_unlock(&a->mu);
				elected(a);
				pthread_mutex_lock(&a->mu);
			} else
				deposed(a);
		}
		now = dlq_now_ms();
		next = INT64_MAX;
		sent = false;
		for (i = 0; i < a->n && !sent; i++) {
			if ((d = due(a, &a->t[i])) <= now) {
				send_due(a, &a->t[i]);
				sent = true;
			} else if (d < next)
				next = d;
		}
		if (sent || a->stop)
			continue;
		if (a->shared && next > now + POLL_MS)	/* who leads */
			next = now + POLL_MS;
		if (next == INT64_MAX)
			pthread_cond_wait(&a->cv, &a->mu);
		else {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			d = next - now;
			ts.tv_sec += d / 1000;
			ts.tv_nsec += (d % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&a->cv, &a->mu, &ts);
		}
	}
	pthread_mutex_unlock(&a->mu);
	flush(a);
	return NULL;
}

static void
free_alerter(struct dlq_alerter *a)
{
	size_t i;

	for (i = 0; i < a->n; i++) {
		dlq_digest_release(&a->t[i].pending);
		dlq_digest_release(&a->t[i].inflight);
		if (a->t[i].curl != NULL)
			curl_easy_cleanup(a->t[i].curl);
	}
	free(a->t);
	free(a->keys);
	free(a->seen);
	dlq_digest_release(&a->shown);
	dlq_buf_release(&a->text);
	dlq_buf_release(&a->body);
	dlq_buf_release(&a->line);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

struct dlq_alerter *
dlq_alert_start(const struct dlq_config *c, struct dlq_archive *memory)
{
	struct dlq_alerter *a;
	pthread_condattr_t ca;
	size_t i;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	a->cfg = c;
	a->memory = memory;
	a->n = c->n_targets ? c->n_targets : 1;	/* no webhook: log only */
	a->shared = memory != NULL && dlq_archive_shared(memory);
	a->t = calloc(a->n, sizeof(*a->t));
	a->keys = calloc(a->n, sizeof(*a->keys));
	a->seen = calloc(SEEN_CAP, sizeof(*a->seen));
	pthread_mutex_init(&a->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cv, &ca);
	pthread_condattr_destroy(&ca);
	dlq_buf_init(&a->text);
	dlq_buf_init(&a->body);
	dlq_buf_init(&a->line);
	dlq_digest_title(a->title, sizeof(a->title), "");
	if (a->t == NULL || a->keys == NULL || a->seen == NULL ||
	    (a->shared && dlq_digest_init(&a->shown, (size_t)c->max_groups)
	    == -1))
		goto fail;
	for (i = 0; i < a->n; i++) {
		struct target *t = &a->t[i];
		t->cfg = c->n_targets ? &c->targets[i] : NULL;
		t->last_done_ms = t->last_attempt_ms = t->next_try_ms = NEVER;
		if (dlq_digest_init(&t->pending, (size_t)c->max_groups) == -1 ||
		    dlq_digest_init(&t->inflight, (size_t)c->max_groups) == -1)
			goto fail;
		if (t->cfg != NULL) {
			dlq_url_host(t->cfg->url, t->host, sizeof(t->host));
			if ((t->curl = curl_easy_init()) == NULL)
				goto fail;
			hash_url(t);
		} else {
			snprintf(t->host, sizeof(t->host), "log");
			snprintf(t->url_sha, sizeof(t->url_sha), "log");
		}
		t->next_poll_ms = NEVER;
		a->keys[i] = t->url_sha;
		if (!a->shared)
			recall_sent(a, t);
	}
	if (memory != NULL && !a->shared)
		(void)dlq_archive_signatures(memory, SEEN_CAP / 2, seed_seen,
		    a);
	if (pthread_create(&a->thread, NULL, run, a) != 0)
		goto fail;
	return a;
fail:
	dlq_log(DLQ_LOG_ERR, "alert_start_failed", "error", "out of memory",
	    NULL);
	free_alerter(a);
	return NULL;
}

void
dlq_alert_stop(struct dlq_alerter *a, int64_t budget_ms)
{
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	a->budget_ms = budget_ms;
	a->stop = true;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	free_alerter(a);
}
