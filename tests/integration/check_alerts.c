/* check_alerts.c - webhook digests from the real worker to a real HTTP
 * receiver on loopback: batching, cooldown, retries, timeouts, escaping. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "config.h"
#include "harness.h"
#include "receiver.h"

#define WAIT_MS		20000
#define SLACK_PATH	"/services/T000/B000/s3cr3tP4th"
#define GCHAT_PATH	"/v1/spaces/AAA/messages?key=s3cr3tK3y"
#define DISCORD_PATH	"/api/webhooks/1/s3cr3tD1sc"

struct fixture {
	struct h_rig		 rig;
	struct h_receiver	*r;
};

/* A worker on three fresh queues whose alerts go to the receiver `r`
 * with the alert group `alert`, a printf format taking up to two
 * receiver URLs (different paths). */
static void
start_with(struct fixture *f, struct h_receiver *r, const char *alert)
{
	char extra[1024];

	f->r = r;
	h_rig_name(&f->rig, "al", 3);
	/* the alert's %s take these URLs in this order, as many as it uses */
	snprintf(extra, sizeof(extra), alert, h_receiver_url(f->r, SLACK_PATH),
	    h_receiver_url(f->r, GCHAT_PATH), h_receiver_url(f->r,
	    DISCORD_PATH));
	h_rig_setup(&f->rig, extra);
	h_rig_start(&f->rig);
}

static void
start(struct fixture *f, const char *alert)
{
	start_with(f, h_receiver_start(), alert);
}

static void
stop(struct fixture *f)
{
	char *log;

	h_rig_stop(&f->rig);
	/* the webhook path is a secret: never in the log */
	log = h_slurp(f->rig.w.log);
	ck_assert_ptr_null(strstr(log, "s3cr3tP4th"));
	ck_assert_ptr_null(strstr(log, "s3cr3tK3y"));
	ck_assert_ptr_null(strstr(log, "s3cr3tD1sc"));
	free(log);
	h_receiver_stop(f->r);
}

/* n messages die in queue q with error text `error` (a %d for i). */
static void
die_in(struct fixture *f, int q, int n, const char *error)
{
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	static int call;	/* ids differ between calls: two deaths of
				 * one message id in one second are one */
	char text[256], id[64];
	int i;

	e.key = amqp_cstring_bytes("x-error");
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	call++;
	for (i = 0; i < n; i++) {
		snprintf(text, sizeof(text), error, i);
		snprintf(id, sizeof(id), "m-%d-%d-%d", call, q, i);
		e.value.value.bytes = amqp_cstring_bytes(text);
		h_publish(f->rig.c, f->rig.exch, f->rig.q[q], "{}", 2, id, &h);
	}
	ck_assert_int_eq(h_reject(f->rig.c, f->rig.q[q], n, WAIT_MS), n);
}

static char *
text_of(struct h_request *r)
{
	cJSON *j = cJSON_Parse(r->body), *t;
	char *s;

	ck_assert_msg(j != NULL, "body is not JSON: %s", r->body);
	t = cJSON_GetObjectItemCaseSensitive(j, "text");
	if (strcmp(r->path, DISCORD_PATH) == 0) {
		/* mentions off, link previews off (flags: SUPPRESS_EMBEDS) */
		t = cJSON_GetObjectItemCaseSensitive(j, "content");
		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
		    cJSON_GetObjectItem(j, "allowed_mentions"), "parse")), 0);
		ck_assert_int_eq(cJSON_GetObjectItem(j, "flags")->valueint, 4);
		ck_assert_int_eq(cJSON_GetArraySize(j), 3);
	} else
		ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert(cJSON_IsString(t));
	s = strdup(t->valuestring);
	cJSON_Delete(j);
	return s;
}

/* The "×N" count of `queue` in the list of a cause's line, "(q1 ×500,
 * q2 ×300; sample ...)" from `list` on, or 0. */
static long
count_in_cause(const char *list, const char *end, const char *queue)
{
	size_t qn = strlen(queue);
	const char *p = list;

	while (p < end && *p != ';') {
		if ((size_t)(end - p) > qn && strncmp(p, queue, qn) == 0 &&
		    strncmp(p + qn, " ×", strlen(" ×")) == 0)
			return atol(p + qn + strlen(" ×"));
		if ((p = strstr(p, ", ")) == NULL || p >= end)
			break;
		p += 2;
	}
	return 0;
}

/* Sum of the "×N" counts of `queue` in the digest: its own lines, "• NEW
 * *queue* ×N ...", and those of a cause in several queues, "• *3
 * queues* ×N reason: error (queue ×N, ...; sample ...)". */
static long
count_for(const char *text, const char *queue)
{
	const char *line = text, *p, *end, *list;
	size_t qn = strlen(queue);
	long sum = 0;

	for (; line != NULL && *line; line = strchr(line, '\n'),
	    line = line ? line + 1 : NULL) {
		if (strncmp(line, "• ", strlen("• ")) != 0)
			continue;
		end = strchr(line, '\n');
		end = end != NULL ? end : line + strlen(line);
		p = line + strlen("• ");
		if (strncmp(p, "NEW ", 4) == 0)
			p += 4;
		if (*p == '*')
			p++;
		if (strspn(p, "0123456789") > 0 &&
		    strncmp(p + strspn(p, "0123456789"), " queues",
		    strlen(" queues")) == 0) {
			for (list = NULL; (p = strstr(p, " (")) != NULL &&
			    p < end; p++)
				list = p + 2;
			if (list != NULL)
				sum += count_in_cause(list, end, queue);
			continue;
		}
		if (strncmp(p, queue, qn) != 0)
			continue;
		p += qn;
		if (*p == '*')
			p++;
		if (strncmp(p, " ×", strlen(" ×")) == 0)
			sum += atol(p + strlen(" ×"));
	}
	return sum;
}

/* 1 when the digest line of `queue` is marked NEW, 0 when it is not, -1
 * when the digest has no line for it. */
static int
marked_new(const char *text, const char *queue)
{
	const char *line = text, *p;
	size_t qn = strlen(queue);
	bool is_new;

	for (; line != NULL && *line; line = strchr(line, '\n'),
	    line = line ? line + 1 : NULL) {
		if (strncmp(line, "• ", strlen("• ")) != 0)
			continue;
		p = line + strlen("• ");
		if ((is_new = strncmp(p, "NEW ", 4) == 0))
			p += 4;
		if (*p == '*')
			p++;
		if (strncmp(p, queue, qn) == 0 &&
		    (p[qn] == ' ' || p[qn] == '*'))
			return is_new;
	}
	return -1;
}

/* The text of the second digest the receiver got, which came at least
 * `min_gap_ms` after the first. */
static char *
second_digest(struct fixture *f, int64_t min_gap_ms)
{
	struct h_request r[2];
	char *text;

	ck_assert(h_receiver_wait(f->r, 2, WAIT_MS));
	r[0] = h_receiver_get(f->r, 0);
	r[1] = h_receiver_get(f->r, 1);
	ck_assert_msg(r[1].at_ms - r[0].at_ms >= min_gap_ms, "second digest "
	    "%lld ms after the first", (long long)(r[1].at_ms - r[0].at_ms));
	text = text_of(&r[1]);
	free(r[0].body);
	free(r[1].body);
	return text;
}

/* The text of the log-only digest number i (0-based) of the worker. */
static char *
logged_digest(struct fixture *f, int i)
{
	cJSON **ev;
	char *text;
	int n;

	ck_assert(h_worker_wait(&f->rig.w, "alert_digest", i + 1, WAIT_MS));
	ev = h_worker_events(&f->rig.w, "alert_digest", &n);
	text = strdup(h_jstr(ev[i], "text"));
	h_events_free(ev, n);
	return text;
}

/* Two dead letters of q1 die after the first digest, the worker is
 * killed before the next, and a new one starts: it says they are owed
 * to `target` (its host, or "log"). second_digest() and logged_digest()
 * show where they go. */
static void
crash_with_two_pending(struct fixture *f, const char *target)
{
	cJSON **ev;
	int64_t end = h_now_ms() + WAIT_MS;
	int n, before;

	/* the first digest recorded as delivered (after its log line), so
	 * the restarted worker owes only what died after it */
	while ((n = (int)h_db_int(f->rig.db, "SELECT count(*) FROM "
	    "archive_meta WHERE key LIKE 'alert_sent:%'")) < 1 &&
	    h_now_ms() < end)
		usleep(20000);
	ck_assert_int_eq(n, 1);
	before = h_worker_count(&f->rig.w, "alert_digest") +
	    h_worker_count(&f->rig.w, "alert_sent");
	ck_assert_int_eq(before, 1);
	die_in(f, 1, 2, "pending at the crash %d");
	ck_assert(h_worker_wait(&f->rig.w, "dead_letter", 3, WAIT_MS));
	ck_assert_int_eq(h_worker_signal(&f->rig.w, SIGKILL, 5000, NULL), -1);
	ck_assert_int_eq(h_worker_count(&f->rig.w, "alert_digest") +
	    h_worker_count(&f->rig.w, "alert_sent"), before);
	h_rig_start(&f->rig);
	ev = h_worker_events(&f->rig.w, "alert_backlog", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "target"), target);
	ck_assert_int_eq(h_jnum(ev[0], "dead_letters"), 2);
	ck_assert_int_eq(h_jnum(ev[0], "groups"), 1);
	h_events_free(ev, n);
}

START_TEST(a_burst_is_the_first_at_once_then_one_digest)
{
	static const int share[3] = { 500, 300, 200 };
	struct fixture f;
	struct h_request r[2];
	int64_t first_dl;
	char *text;
	long sum[3] = { 0 };
	int i, k;

	start(&f, "alert = { webhook_url = \"%s\"; webhook_format = \"slack\";"
	    " cooldown_ms = 3000; };");
	first_dl = h_wall_ms();
	for (i = 0; i < 3; i++)
		die_in(&f, i, share[i], "upstream timeout after %d ms");
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 1000, WAIT_MS));
	ck_assert(h_receiver_wait(f.r, 2, WAIT_MS));
	for (k = 0; k < 2; k++) {
		r[k] = h_receiver_get(f.r, k);
		text = text_of(&r[k]);
		for (i = 0; i < 3; i++)
			sum[i] += count_for(text, f.rig.q[i]);
		/* one cause in the queues, one line (the first digest may
		 * have taken all of the first queue's) */
		if (k == 1)
			ck_assert_msg(strstr(text, " queues* ×") != NULL, "%s",
			    text);
		free(text);
	}
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(sum[i], share[i]);
	/* the first dead letter went out at once, the rest one cooldown on */
	ck_assert_msg(r[0].at_ms - first_dl < 1500, "first digest after %lld ms",
	    (long long)(r[0].at_ms - first_dl));
	ck_assert_int_ge(r[1].at_ms - r[0].at_ms, 2900);
	/* nothing more while nothing new dies (a full cooldown and more) */
	ck_assert(!h_receiver_wait(f.r, 3, 4000));
	for (k = 0; k < 2; k++)
		free(r[k].body);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_sent"), 2);
	stop(&f);
}
END_TEST

START_TEST(a_failing_webhook_gets_the_digest_once_with_merged_counts)
{
	static const int fail[2] = { 500, 500 };
	struct fixture f;
	struct h_request last;
	char *text;
	int i;

	start(&f, "alert = { webhook_url = \"%s\"; cooldown_ms = 1000; };");
	h_receiver_script(f.r, fail, 2, 0);
	die_in(&f, 0, 10, "boom %d");
	ck_assert(h_receiver_wait(f.r, 1, WAIT_MS));
	die_in(&f, 1, 5, "bang %d");	/* arrives while it is failing */
	ck_assert(h_receiver_wait(f.r, 3, WAIT_MS));
	ck_assert(!h_receiver_wait(f.r, 4, 2500));
	for (i = 0; i < 2; i++) {
		last = h_receiver_get(f.r, i);
		ck_assert_int_eq(last.status, 500);
		free(last.body);
	}
	last = h_receiver_get(f.r, 2);
	ck_assert_int_eq(last.status, 200);
	text = text_of(&last);
	ck_assert_int_eq(count_for(text, f.rig.q[0]), 10);
	ck_assert_int_eq(count_for(text, f.rig.q[1]), 5);
	ck_assert_msg(strstr(text, "15 dead letters in 2 groups") != NULL, "%s",
	    text);
	free(text);
	free(last.body);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_failed"), 2);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_sent"), 1);
	stop(&f);
}
END_TEST

START_TEST(retry_after_is_honoured)
{
	static const int busy[1] = { 429 };
	struct fixture f;
	struct h_request a, b;
	cJSON **ev;
	int n;

	start(&f, "alert = { webhook_url = \"%s\"; cooldown_ms = 0; };");
	h_receiver_script(f.r, busy, 1, 2);
	die_in(&f, 2, 1, "rate limited %d");
	ck_assert(h_receiver_wait(f.r, 2, WAIT_MS));
	a = h_receiver_get(f.r, 0);
	b = h_receiver_get(f.r, 1);
	ck_assert_int_eq(a.status, 429);
	ck_assert_int_eq(b.status, 200);
	ck_assert_int_ge(b.at_ms - a.at_ms, 1950);
	ev = h_worker_events(&f.rig.w, "alert_failed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(ev[0], "status")->valueint, 429);
	ck_assert_int_eq(cJSON_GetObjectItem(ev[0], "retry_in_ms")->valueint,
	    2000);
	ck_assert_str_eq(cJSON_GetObjectItem(ev[0], "target")->valuestring,
	    "127.0.0.1");
	h_events_free(ev, n);
	free(a.body);
	free(b.body);
	stop(&f);
}
END_TEST

/* A 4xx that no retry cures says so, for the on-call reading the log;
 * the digest is still kept: the URL may be fixed behind a proxy. */
START_TEST(a_refused_webhook_says_why_and_keeps_the_digest)
{
	static const int gone[1] = { 404 };
	struct fixture f;
	struct h_request a, b;
	cJSON **ev;
	char *text;
	int n;

	start(&f, "alert = { webhook_url = \"%s\"; cooldown_ms = 0; };");
	h_receiver_script(f.r, gone, 1, 0);
	die_in(&f, 0, 3, "gone %d");
	ck_assert(h_receiver_wait(f.r, 2, WAIT_MS));
	a = h_receiver_get(f.r, 0);
	b = h_receiver_get(f.r, 1);
	ck_assert_int_eq(a.status, 404);
	ck_assert_int_eq(b.status, 200);
	text = text_of(&b);
	ck_assert_int_eq(count_for(text, f.rig.q[0]), 3);
	free(text);
	ev = h_worker_events(&f.rig.w, "alert_failed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(cJSON_GetObjectItem(ev[0], "error")->valuestring,
	    "HTTP 404: no such webhook (removed, or a wrong URL)");
	h_events_free(ev, n);
	free(a.body);
	free(b.body);
	stop(&f);
}
END_TEST

START_TEST(a_hanging_webhook_times_out_while_consumers_drain)
{
	struct fixture f;
	struct h_request a;
	cJSON **ev;
	int n, before;
	int64_t ms;

	start(&f, "alert = { webhook_url = \"%s\"; cooldown_ms = 0; };");
	h_receiver_hang(f.r, true);
	die_in(&f, 0, 1, "first %d");
	ck_assert(h_receiver_wait(f.r, 1, WAIT_MS));
	a = h_receiver_get(f.r, 0);
	/* while the POST hangs, dead letters keep being drained and acked */
	die_in(&f, 1, 50, "meanwhile %d");
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 51, WAIT_MS));
	ck_assert(h_wait_count(f.rig.q[1], 0, WAIT_MS));
	before = h_worker_count(&f.rig.w, "alert_failed");
	ck_assert_int_eq(before, 0);
	ck_assert(h_worker_wait(&f.rig.w, "alert_failed", 1, WAIT_MS));
	ms = h_wall_ms() - a.at_ms;
	ck_assert_msg(ms >= 4900 && ms < 8000, "attempt ended after %lld ms",
	    (long long)ms);
	ev = h_worker_events(&f.rig.w, "alert_failed", &n);
	ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(ev[0], "error")->valuestring,
	    "Timeout"));
	h_events_free(ev, n);
	free(a.body);
	/* shutdown does not wait for the hanging webhook past its budget */
	h_close(f.rig.c);
	ck_assert_int_eq(h_worker_stop(&f.rig.w, 10000, &ms), 0);
	ck_assert_msg(ms < 5000, "shutdown took %lld ms", (long long)ms);
	ck_assert_int_ge(h_worker_count(&f.rig.w, "alert_digest"), 1);
	h_receiver_stop(f.r);
}
END_TEST

static void
check_body(struct h_receiver *r, const char *path, enum dlq_alert_format f,
    int cap)
{
	struct h_request q;
	char *text;
	int i;

	for (i = 0; i < h_receiver_count(r); i++) {
		q = h_receiver_get(r, i);
		free(text_of(&q));	/* every body is valid JSON */
		if (strcmp(q.path, path) != 0 || q.status != 200) {
			free(q.body);
			continue;
		}
		text = text_of(&q);
		ck_assert_msg((int)strlen(text) <= cap, "%zu bytes", strlen(text));
		ck_assert_ptr_nonnull(strstr(text, "東京 café"));
		ck_assert_ptr_nonnull(strstr(text, "\"quoted\""));
		if (f == DLQ_FORMAT_SLACK)
			ck_assert_ptr_nonnull(strstr(text, "&lt;tag&gt; &amp; co"));
		else if (f == DLQ_FORMAT_GOOGLE_CHAT)
			ck_assert_ptr_nonnull(strstr(text, "<\u200btag> & co"));
		else
			ck_assert_ptr_nonnull(strstr(text, "\\<tag\\> & co"));
		ck_assert_ptr_null(strstr(text, "<tag>"));
		/* Discord's body turns mentions off; elsewhere it is broken */
		if (f == DLQ_FORMAT_DISCORD)
			ck_assert_ptr_nonnull(strstr(text, "co @channel 東京"));
		else
			ck_assert_ptr_nonnull(strstr(text,
			    "co @\u200bchannel 東京"));
		ck_assert_ptr_nonnull(strstr(text, "more groups"));
		free(text);
		free(q.body);
		return;
	}
	ck_abort_msg("no request on %s", path);
}

START_TEST(bodies_are_valid_json_escaped_per_target_and_capped)
{
	static const int fail_first[3] = { 500, 500, 500 };
	static const char *words[] = { "alpha", "bravo", "charlie", "delta",
	    "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
	    "lima" };
	struct fixture f;
	char err[160];
	int i;

	start(&f, "alert = { cooldown_ms = 60000; max_chars = 600; targets = ("
	    " { url = \"%s\"; format = \"slack\"; },"
	    " { url = \"%s\"; format = \"google_chat\"; },"
	    " { url = \"%s\"; format = \"discord\"; } ); };");
	/* the first attempt of each target fails, so the retry carries all
	 * twelve groups: more than fit in 600 bytes */
	h_receiver_script(f.r, fail_first, 3, 0);
	for (i = 0; i < 12; i++) {
		snprintf(err, sizeof(err), "%s failed: \"quoted\" <tag> & co @channel\n"
		    "東京 café", words[i]);
		die_in(&f, i % 3, 1, err);
	}
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 12, WAIT_MS));
	ck_assert(h_worker_wait(&f.rig.w, "alert_sent", 3, WAIT_MS));
	check_body(f.r, SLACK_PATH, DLQ_FORMAT_SLACK, 600);
	check_body(f.r, GCHAT_PATH, DLQ_FORMAT_GOOGLE_CHAT, 600);
	check_body(f.r, DISCORD_PATH, DLQ_FORMAT_DISCORD, 600);
	stop(&f);
}
END_TEST

START_TEST(without_a_url_the_digest_is_logged_only)
{
	struct fixture f;
	cJSON **ev;
	int n;

	start(&f, "alert = { cooldown_ms = 0; } # %s unused");
	die_in(&f, 0, 3, "no webhook %d");
	ck_assert(h_worker_wait(&f.rig.w, "alert_digest", 1, WAIT_MS));
	ev = h_worker_events(&f.rig.w, "alert_digest", &n);
	ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(ev[0], "text")->valuestring,
	    "no webhook 0 (sample "));
	/* an alert: log.level = warn keeps it */
	ck_assert_str_eq(h_jstr(ev[0], "level"), "warn");
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_sent"), 0);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_failed"), 0);
	ck_assert_int_eq(h_receiver_connections(f.r), 0);
	stop(&f);
}
END_TEST

/* A crash loses the digest in memory, not its dead letters: after a
 * kill -9 the restarted worker posts what no delivered digest announced
 * (from the archive), once the cooldown allows. */
START_TEST(dead_letters_pending_at_a_crash_are_posted_after_the_restart)
{
	struct fixture f;
	char *text;

	start(&f, "alert = { webhook_url = \"%s\"; cooldown_ms = 3000; };");
	die_in(&f, 0, 1, "announced %d");
	ck_assert(h_receiver_wait(f.r, 1, WAIT_MS));
	crash_with_two_pending(&f, "127.0.0.1");
	text = second_digest(&f, 2900);
	ck_assert_msg(count_for(text, f.rig.q[1]) == 2, "%s", text);
	ck_assert_msg(count_for(text, f.rig.q[0]) == 0, "%s", text);
	/* the group's first text, as written (the two differ in a number:
	 * one group) */
	ck_assert_msg(strstr(text, "pending at the crash 0 (sample ") != NULL,
	    "%s", text);
	free(text);
	stop(&f);
}
END_TEST

/* Without a webhook the same holds for the logged digest: what a crash
 * kept from the log comes in the first digest after the restart, which
 * waits for no cooldown. */
START_TEST(a_logged_digest_lost_to_a_crash_is_logged_after_the_restart)
{
	struct fixture f;
	char *text;

	start(&f, "alert = { cooldown_ms = 600000; } # %s unused");
	die_in(&f, 0, 1, "logged %d");
	free(logged_digest(&f, 0));
	crash_with_two_pending(&f, "log");
	text = logged_digest(&f, 0);
	ck_assert_msg(count_for(text, f.rig.q[1]) == 2, "%s", text);
	ck_assert_msg(count_for(text, f.rig.q[0]) == 0, "%s", text);
	free(text);
	/* a stop logs what is pending: nothing is owed at the next start */
	die_in(&f, 2, 1, "pending at the stop %d");
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 1, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.rig.w, 10000, NULL), 0);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_digest"), 2);
	h_rig_start(&f.rig);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_backlog"), 0);
	stop(&f);
}
END_TEST

/* The same before the target's first delivered digest: the webhook is
 * down from the start, the worker is killed, the webhook comes back. */
START_TEST(a_digest_never_delivered_before_a_crash_is_posted_after_it)
{
	struct fixture f;
	struct h_request q;
	char *text;
	int tried;

	start(&f, "alert = { webhook_url = \"%s\"; cooldown_ms = 1000; };");
	h_receiver_down(f.r, 500, 0);
	die_in(&f, 0, 1, "never announced %d");
	ck_assert(h_worker_wait(&f.rig.w, "alert_failed", 1, WAIT_MS));
	ck_assert_int_eq(h_worker_signal(&f.rig.w, SIGKILL, 5000, NULL), -1);
	tried = h_receiver_count(f.r);
	h_receiver_down(f.r, 0, 0);

	h_rig_start(&f.rig);
	/* the first request answered 200 (a POST of the killed worker may
	 * still have been recorded with 500 after the count) */
	for (;; tried++) {
		ck_assert(h_receiver_wait(f.r, tried + 1, WAIT_MS));
		q = h_receiver_get(f.r, tried);
		if (q.status == 200)
			break;
		free(q.body);
	}
	text = text_of(&q);
	ck_assert_msg(count_for(text, f.rig.q[0]) == 1, "%s", text);
	ck_assert_msg(strstr(text, "never announced 0 (sample ") != NULL, "%s",
	    text);
	free(text);
	free(q.body);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_backlog"), 1);
	stop(&f);
}
END_TEST

/* NEW means a failure the archive never recorded: a restart does not
 * make last week's failure new again. */
START_TEST(an_archived_failure_is_not_new_after_a_restart)
{
	struct fixture f;
	char *text;

	start(&f, "alert = { cooldown_ms = 0; } # %s unused");
	die_in(&f, 0, 1, "known failure %d");
	text = logged_digest(&f, 0);
	ck_assert_msg(marked_new(text, f.rig.q[0]) == 1, "%s", text);
	free(text);
	ck_assert_int_eq(h_worker_stop(&f.rig.w, 10000, NULL), 0);

	h_rig_start(&f.rig);
	die_in(&f, 0, 1, "known failure %d");
	text = logged_digest(&f, 0);
	ck_assert_msg(marked_new(text, f.rig.q[0]) == 0, "%s", text);
	free(text);
	die_in(&f, 1, 1, "never seen before %d");
	text = logged_digest(&f, 1);
	ck_assert_msg(marked_new(text, f.rig.q[1]) == 1, "%s", text);
	free(text);
	stop(&f);
}
END_TEST

START_TEST(shutdown_flushes_what_is_pending_once)
{
	struct fixture f;
	struct h_request q;
	char *text;

	start(&f, "alert = { webhook_url = \"%s\"; cooldown_ms = 600000; };");
	die_in(&f, 0, 1, "before %d");
	ck_assert(h_receiver_wait(f.r, 1, WAIT_MS));
	die_in(&f, 1, 2, "pending at shutdown %d");
	ck_assert(h_worker_wait(&f.rig.w, "dead_letter", 3, WAIT_MS));
	ck_assert_int_eq(h_receiver_count(f.r), 1);	/* cooldown holds it */
	h_close(f.rig.c);
	ck_assert_int_eq(h_worker_stop(&f.rig.w, 10000, NULL), 0);
	ck_assert_int_eq(h_receiver_count(f.r), 2);
	q = h_receiver_get(f.r, 1);
	text = text_of(&q);
	ck_assert_int_eq(count_for(text, f.rig.q[1]), 2);
	free(text);
	free(q.body);
	h_receiver_stop(f.r);
}
END_TEST

/* A restart (a deploy, a crash loop) does not reset the cooldown: the
 * first dead letter after it waits until a cooldown after the digest
 * the worker sent before. */
START_TEST(a_restart_does_not_post_before_the_cooldown)
{
	struct fixture f;
	cJSON **ev;
	char *text;
	int n;

	start(&f, "alert = { webhook_url = \"%s\"; cooldown_ms = 4000; };");
	die_in(&f, 0, 1, "before the restart %d");
	ck_assert(h_receiver_wait(f.r, 1, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.rig.w, 10000, NULL), 0);
	ck_assert_int_eq(h_receiver_count(f.r), 1);

	h_rig_start(&f.rig);
	ev = h_worker_events(&f.rig.w, "alert_cooldown_resumed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "target"), "127.0.0.1");
	ck_assert_int_gt(h_jnum(ev[0], "next_digest_in_ms"), 0);
	ck_assert_int_le(h_jnum(ev[0], "next_digest_in_ms"), 4000);
	h_events_free(ev, n);
	die_in(&f, 1, 1, "after the restart %d");
	text = second_digest(&f, 3900);
	ck_assert_int_eq(count_for(text, f.rig.q[1]), 1);
	ck_assert_int_eq(count_for(text, f.rig.q[0]), 0);
	free(text);
	stop(&f);
}
END_TEST

START_TEST(test_alert_reports_each_target)
{
	static const int answers[3] = { 200, 404, 200 };
	struct h_receiver *r = h_receiver_start();
	struct h_request q;
	const char *queues[] = { "unused", NULL };
	char extra[600], prefix[64], *out, *text;
	const char *cfg;
	int rc;

	h_name(prefix, sizeof(prefix), "ta");
	snprintf(extra, sizeof(extra), "alert = { webhook_url = \"%s\"; "
	    "webhook_format = \"slack\"; targets = ( { url = \"%s\"; }, "
	    "{ url = \"%s\"; format = \"discord\"; } ); };",
	    h_receiver_url(r, SLACK_PATH), h_receiver_url(r, "/plain"),
	    h_receiver_url(r, DISCORD_PATH));
	cfg = h_setup(prefix, queues, extra);
	h_receiver_script(r, answers, 3, 0);
	rc = h_run((const char *[]){ h_bin("dlqctl"), "-c", cfg, "test-alert",
	    NULL }, NULL, &out);
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(out, "127.0.0.1 (slack): HTTP 200 ok\n"
	    "127.0.0.1 (plain): failed: HTTP 404: no such webhook (removed, "
	    "or a wrong URL)\n"
	    "127.0.0.1 (discord): HTTP 200 ok\n");
	free(out);
	ck_assert_int_eq(h_receiver_count(r), 3);
	q = h_receiver_get(r, 0);
	text = text_of(&q);
	ck_assert_ptr_nonnull(strstr(text, "*TEST dlq-monitor on "));
	free(text);
	free(q.body);
	q = h_receiver_get(r, 2);
	text = text_of(&q);
	ck_assert_msg(strncmp(text, "**TEST dlq-monitor on ", 22) == 0, "%s",
	    text);
	free(text);
	free(q.body);
	h_receiver_stop(r);
}
END_TEST

/* Webhooks behind a private CA (a receiver with the test node's
 * certificate, signed by its CA): a target without the CA fails and
 * says why in OpenSSL's words, never showing the URL's path; with the
 * CA (alert.webhook_ca_cert for the first target, ca_cert in
 * alert.targets) the test digest arrives. */
START_TEST(a_webhook_behind_a_private_ca_needs_its_ca_cert)
{
	const char *queues[] = { "unused", NULL };
	struct h_receiver *r = h_receiver_start_tls(h_tls_file("server.pem"),
	    h_tls_file("server.key"));
	char extra[1200], prefix[64], *out;
	const char *cfg;
	struct h_request q;
	int rc;

	h_name(prefix, sizeof(prefix), "tc");
	snprintf(extra, sizeof(extra), "alert = { webhook_url = \"%s\"; "
	    "webhook_ca_cert = \"%s\"; targets = ( { url = \"%s\"; }, "
	    "{ url = \"%s\"; ca_cert = \"%s\"; } ); };",
	    h_receiver_url(r, "/first"), h_tls_ca(),
	    h_receiver_url(r, "/services/T0/B0/Secr3tPath"),
	    h_receiver_url(r, "/third"), h_tls_ca());
	cfg = h_setup(prefix, queues, extra);
	rc = h_run((const char *[]){ h_bin("dlqctl"), "-c", cfg, "test-alert",
	    NULL }, NULL, &out);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strncmp(out, "localhost (plain): HTTP 200 ok\n"
	    "localhost (plain): failed: SSL certificate problem: unable to "
	    "get local issuer certificate\n"
	    "localhost (plain): HTTP 200 ok\n", 1000) == 0, "%s", out);
	ck_assert_ptr_null(strstr(out, "Secr3tPath"));
	free(out);
	ck_assert_int_eq(h_receiver_count(r), 2);
	ck_assert_int_eq(h_receiver_connections(r), 3);
	q = h_receiver_get(r, 0);
	ck_assert_str_eq(q.path, "/first");
	ck_assert_ptr_nonnull(strstr(q.body, "TEST dlq-monitor on "));
	free(q.body);
	q = h_receiver_get(r, 1);
	ck_assert_str_eq(q.path, "/third");
	free(q.body);
	h_receiver_stop(r);
}
END_TEST

/* The worker's digests reach a webhook behind a private CA. */
START_TEST(digests_reach_a_webhook_behind_a_private_ca)
{
	struct fixture f;
	char alert[600];
	cJSON **ev;
	int n;

	snprintf(alert, sizeof(alert), "alert = { webhook_url = \"%%s\"; "
	    "webhook_ca_cert = \"%s\"; cooldown_ms = 0; } # %%s unused",
	    h_tls_ca());
	start_with(&f, h_receiver_start_tls(h_tls_file("server.pem"),
	    h_tls_file("server.key")), alert);
	die_in(&f, 0, 2, "behind a private CA %d");
	ck_assert(h_receiver_wait(f.r, 1, WAIT_MS));
	ck_assert(h_worker_wait(&f.rig.w, "alert_sent", 1, WAIT_MS));
	ev = h_worker_events(&f.rig.w, "alert_sent", &n);
	ck_assert_str_eq(h_jstr(ev[0], "target"), "localhost");
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "alert_failed"), 0);
	stop(&f);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("alerts");
	TCase *tc = tcase_create("webhook");
	TCase *file = tcase_create("sqlite_backlog");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_burst_is_the_first_at_once_then_one_digest);
	tcase_add_test(tc, a_failing_webhook_gets_the_digest_once_with_merged_counts);
	tcase_add_test(tc, retry_after_is_honoured);
	tcase_add_test(tc, a_refused_webhook_says_why_and_keeps_the_digest);
	tcase_add_test(tc, a_hanging_webhook_times_out_while_consumers_drain);
	tcase_add_test(tc, bodies_are_valid_json_escaped_per_target_and_capped);
	tcase_add_test(tc, without_a_url_the_digest_is_logged_only);
	tcase_add_test(tc, shutdown_flushes_what_is_pending_once);
	tcase_add_test(tc, a_restart_does_not_post_before_the_cooldown);
	tcase_add_test(tc, an_archived_failure_is_not_new_after_a_restart);
	tcase_add_test(tc, test_alert_reports_each_target);
	tcase_add_test(tc, a_webhook_behind_a_private_ca_needs_its_ca_cert);
	tcase_add_test(tc, digests_reach_a_webhook_behind_a_private_ca);
	suite_add_tcase(s, tc);
	/* the SQLite archive's backlog after a crash, read in its file (a
	 * PostgreSQL archive stages the groups instead: check_postgres.c) */
	tcase_set_tags(file, "sqlite");
	tcase_set_timeout(file, 120);
	tcase_add_test(file,
	    dead_letters_pending_at_a_crash_are_posted_after_the_restart);
	tcase_add_test(file,
	    a_digest_never_delivered_before_a_crash_is_posted_after_it);
	tcase_add_test(file,
	    a_logged_digest_lost_to_a_crash_is_logged_after_the_restart);
	suite_add_tcase(s, file);
	return s;
}

DLQ_CHECK_MAIN(suite)
