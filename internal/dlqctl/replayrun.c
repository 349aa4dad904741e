/* replayrun.c - dlqctl's replay loop. */
#include "replayrun.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "amqp.h"
#include "classify.h"
#include "proto.h"
#include "ctlclient.h"
#include "deadletter.h"
#include "publisher.h"
#include "redact.h"
#include "replay.h"
#include "replaysend.h"
#include "replaytarget.h"
#include "stopsig.h"
#include "termtext.h"

#define REFUSAL_KINDS	16
#define CLAIM_CHUNK	100
#define CANARY_POLL_MS	250
/* How long a chunk's outcomes wait for a worker that does not answer (a
 * restart, a deploy) before they are given up, and how often asked. */
#define FINISH_WAIT_MS	30000
#define FINISH_RETRY_MS	1000
#define REFUSALS_NOTED_MAX	(32 * 1024)	/* bytes of ids and reasons */

struct tally {
	bool	 dry;		/* published counts the eligible */
	size_t	 total, done, published, refused, failed, unknown;
	size_t	 given_back;	/* claimed, not sent: replayable */
	size_t	 originals_back;	/* live: published, original unacked */
	size_t	 posted;	/* sends tried: what --rate paces */
	bool	 blocked;	/* the broker blocks publishing: stop */
	char	 why[REFUSAL_KINDS][160];
	size_t	 why_n[REFUSAL_KINDS];
	cJSON	*refusals;	/* executing: what was refused and why */
	size_t	 refusals_bytes, refusals_unlisted;
	int64_t	 start_ms;
	cJSON	*results;
	cJSON	*canary;	/* NULL: no canary; else what it showed */
	cJSON	*targets;	/* a dry run: where the eligible would go */
	cJSON	*plan;		/* a live dry run: each message, as a plan */
	char	 unseen[256];	/* why they could not be looked at, or "" */
	int64_t	 delivery_count_max;	/* live: of what went back; -1 */
};

static void
tally_init(struct tally *t)
{
	memset(t, 0, sizeof(*t));
	t->delivery_count_max = -1;
}

/* A live-queue run gives back what it does not replay, and a quorum
 * queue counts that as a delivery (up to RabbitMQ 4.2 every return; 4.3
 * counts basic.reject only): past its delivery limit (20 by default
 * since 4.0) it drops or dead-letters the message. What such a queue
 * handed out before carries x-delivery-count: `deliveries`, -1 without
 * it. */
static void
note_return(struct tally *t, int64_t deliveries)
{
	if (deliveries > t->delivery_count_max)
		t->delivery_count_max = deliveries;
}

static void
returns_text(const struct tally *t)
{
	if (t->delivery_count_max <= 0)	/* none, or none counted yet */
		return;
	printf("note: what this run gave back carries x-delivery-count, up "
	    "to %lld: a quorum queue counts returns (up to RabbitMQ 4.2, this "
	    "run's too) and drops or dead-letters a message past its delivery "
	    "limit (20 by default since RabbitMQ 4.0); examine it "
	    "sparingly\n", (long long)t->delivery_count_max);
}

/* The string `key` of `o`, or "". */
static const char *
str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* A dry run's targets, looked at on the broker. */
static void
look_targets(const struct dlq_config *c, struct tally *t)
{
	if (dlq_replay_targets_look(c, t->targets, t->unseen,
	    sizeof(t->unseen)) == 0)
		t->unseen[0] = '\0';
}

static void
targets_json(const struct tally *t, cJSON *out)
{
	if (t->targets == NULL)
		return;
	if (t->unseen[0] != '\0')
		cJSON_AddStringToObject(out, "targets_not_looked_at", t->unseen);
	else
		cJSON_AddItemReferenceToObject(out, "targets", t->targets);
}

static void
targets_text(const struct tally *t)
{
	if (t->targets == NULL)
		return;
	if (t->unseen[0] != '\0')
		printf("targets not looked at: %s\n", t->unseen);
	else
		dlq_replay_targets_print(stdout, t->targets);
}

/* Counts a refusal by its reason; an executing run also keeps what was
 * refused (archive id, or a live delivery's message id) and why, for the
 * audit (as many as fit in one control request: their size as they will
 * be sent, escapes included, with the id again in "ids"). */
static void
refuse(struct tally *t, int64_t id, const char *message_id, const char *why)
{
	cJSON *r;
	char *text;
	size_t i, cost;

	t->refused++;
	if (t->refusals != NULL && (r = cJSON_CreateObject()) != NULL) {
		if (id > 0)
			cJSON_AddNumberToObject(r, "id", (double)id);
		if (message_id != NULL)
			cJSON_AddStringToObject(r, "message_id", message_id);
		cJSON_AddStringToObject(r, "why", why);
		text = cJSON_PrintUnformatted(r);
		/* and a comma; its id again in "ids" (15 digits and a
		 * comma, with a margin) */
		cost = text ? strlen(text) + 1 + (id > 0 ? 21 : 0) :
		    REFUSALS_NOTED_MAX + 1;
		free(text);
		if (t->refusals_bytes + cost > REFUSALS_NOTED_MAX) {
			t->refusals_unlisted++;
			cJSON_Delete(r);
		} else {
			cJSON_AddItemToArray(t->refusals, r);
			t->refusals_bytes += cost;
		}
	}
	for (i = 0; i < REFUSAL_KINDS && t->why[i][0] != '\0'; i++)
		if (strcmp(t->why[i], why) == 0)
			break;
	if (i == REFUSAL_KINDS)
		return;
	snprintf(t->why[i], sizeof(t->why[i]), "%s", why);
	t->why_n[i]++;
}

static void
result(struct tally *t, int64_t id, const char *message_id,
    enum dlq_pub_outcome o, const char *detail)
{
	cJSON *r = cJSON_CreateObject();

	if (id > 0)
		cJSON_AddNumberToObject(r, "id", (double)id);
	if (message_id != NULL)
		cJSON_AddStringToObject(r, "message_id", message_id);
	cJSON_AddStringToObject(r, "outcome", dlq_pub_outcome_name(o));
	cJSON_AddStringToObject(r, "detail", detail);
	cJSON_AddItemToArray(t->results, r);
	if (o == DLQ_PUB_OK)
		t->published++;
	else if (o == DLQ_PUB_FAILED)
		t->failed++;
	else
		t->unknown++;
}

static void
progress(const struct tally *t, bool end)
{
	double secs = (double)(dlq_now_ms() - t->start_ms) / 1000.0;
	double rate = secs > 0 ? (double)t->done / secs : 0;
	char eta[32];

	if (!isatty(2))
		return;
	dlq_format_age(rate > 0 ? (int64_t)((double)(t->total - t->done) /
	    rate * 1000) : 0, eta, sizeof(eta));
	fprintf(stderr, "\r%zu/%zu  %.1f/s  %zu failed  ETA %s   %s", t->done,
	    t->total, rate, t->failed + t->unknown, eta, end ? "\n" : "");
}

/* Waits for the next slot of a `rate` per second schedule. */
static void
pace(const struct tally *t, int64_t rate)
{
	int64_t due, now;
	struct timespec ts;

	if (rate <= 0)
		return;
	due = t->start_ms + (int64_t)t->posted * 1000 / rate;
	while (!dlq_stop_asked() && (now = dlq_now_ms()) < due) {
		ts.tv_sec = 0;
		ts.tv_nsec = ((due - now) > 100 ? 100 : (due - now)) * 1000000L;
		nanosleep(&ts, NULL);
	}
}

static void
print_canary(const cJSON *k)
{
	const cJSON *e;
	char w[32];

	dlq_format_age((int64_t)cJSON_GetObjectItem(k, "watch_ms")->valuedouble,
	    w, sizeof(w));
	if (!cJSON_IsTrue(cJSON_GetObjectItem(k, "stopped"))) {
		printf("canary: %d sent, none came back within %s\n",
		    cJSON_GetObjectItem(k, "sent")->valueint, w);
		return;
	}
	if (cJSON_IsString(cJSON_GetObjectItem(k, "inconclusive"))) {
		printf("canary INCONCLUSIVE: %d sent, none came back within "
		    "%s, but at its end ", cJSON_GetObjectItem(k,
		    "sent")->valueint, w);
		dlq_term_put(stdout, cJSON_GetObjectItem(k,
		    "inconclusive")->valuestring, -1, 0);
		printf(": the other %d were not touched\n",
		    cJSON_GetObjectItem(k, "untouched")->valueint);
		return;
	}
	printf("canary FAILED: %d of %d sent came back dead within %s; the "
	    "other %d were not touched\n", cJSON_GetArraySize(
	    cJSON_GetObjectItem(k, "returned")), cJSON_GetObjectItem(k,
	    "sent")->valueint, w, cJSON_GetObjectItem(k, "untouched")->valueint);
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(k, "returned")) {
		printf("  #%lld died again as #%lld: ",
		    (long long)cJSON_GetObjectItem(e, "id")->valuedouble,
		    (long long)cJSON_GetObjectItem(e, "returned_id")->valuedouble);
		dlq_term_put(stdout, str_of(e, "reason"), -1, 0);
		putchar(' ');
		dlq_term_put(stdout, cJSON_IsString(cJSON_GetObjectItem(e,
		    "error")) ? cJSON_GetObjectItem(e, "error")->valuestring : "",
		    -1, 0);
		putchar('\n');
	}
}

static int
summary(const struct tally *t, bool json)
{
	cJSON *j, *w;
	char *text;
	size_t i;

	progress(t, true);
	if (json) {
		j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, t->dry ? "eligible" : "published",
		    (double)t->published);
		cJSON_AddBoolToObject(j, "dry_run", t->dry);
		cJSON_AddNumberToObject(j, "refused", (double)t->refused);
		cJSON_AddNumberToObject(j, "failed", (double)t->failed);
		cJSON_AddNumberToObject(j, "unknown", (double)t->unknown);
		cJSON_AddBoolToObject(j, "interrupted", dlq_stop_asked());
		cJSON_AddBoolToObject(j, "broker_blocked", t->blocked);
		cJSON_AddNumberToObject(j, "not_sent", (double)t->given_back);
		if (t->originals_back > 0)
			cJSON_AddNumberToObject(j, "originals_back",
			    (double)t->originals_back);
		w = cJSON_AddObjectToObject(j, "refusals");
		for (i = 0; i < REFUSAL_KINDS && t->why[i][0]; i++)
			cJSON_AddNumberToObject(w, t->why[i], (double)t->why_n[i]);
		cJSON_AddItemReferenceToObject(j, "results", t->results);
		if (t->plan != NULL)
			cJSON_AddItemReferenceToObject(j, "plan", t->plan);
		if (t->canary != NULL)
			cJSON_AddItemReferenceToObject(j, "canary", t->canary);
		targets_json(t, j);
		if (t->delivery_count_max >= 0)
			cJSON_AddNumberToObject(j, "delivery_count_max",
			    (double)t->delivery_count_max);
		text = cJSON_PrintUnformatted(j);
		puts(text);
		cJSON_free(text);
		cJSON_Delete(j);
	} else {
		printf("%s%s %zu, refused %zu, failed %zu, unknown %zu%s\n",
		    dlq_stop_asked() ? "interrupted: " : "", t->dry ? "eligible" :
		    "published", t->published, t->refused, t->failed, t->unknown,
		    t->dry ? " (dry run: nothing was published)" : "");
		for (i = 0; i < REFUSAL_KINDS && t->why[i][0]; i++)
		{
			printf("  refused %zu: ", t->why_n[i]);
			dlq_term_put(stdout, t->why[i], -1, 0);
			putchar('\n');
		}
		if (t->blocked)
			printf("stopped: the broker blocks publishing (a memory or "
			    "disk alarm); %zu claimed were not sent and stay "
			    "replayable; try again when the alarm clears\n",
			    t->given_back);
		if (t->originals_back > 0)
			printf("%zu replayed went back to the queue too (their "
			    "originals could not be acked): take them out before "
			    "another run\n", t->originals_back);
		cJSON_ArrayForEach(w, t->results) {
			if (strcmp(cJSON_GetObjectItem(w, "outcome")->valuestring,
			    "published") == 0)
				continue;
			fputs("  ", stdout);
			dlq_term_put(stdout, str_of(w, "outcome"), -1, 0);
			printf(" #%lld: ", cJSON_HasObjectItem(w, "id") ?
			    (long long)cJSON_GetObjectItem(w, "id")->valuedouble :
			    0LL);
			dlq_term_put(stdout, cJSON_GetObjectItem(w,
			    "detail")->valuestring, -1, 0);
			putchar('\n');
		}
		if (t->canary != NULL)
			print_canary(t->canary);
		targets_text(t);
		returns_text(t);
	}
	if (t->failed || t->unknown || t->blocked || t->originals_back)
		return DLQ_EXIT_ERROR;
	/* done, but not all that was asked: a script must not read an
	 * executed run whose policy refused some as "replayed" */
	if ((t->canary != NULL && cJSON_IsTrue(cJSON_GetObjectItem(t->canary,
	    "stopped"))) || (!t->dry && t->refused > 0))
		return DLQ_EXIT_CONFLICT;
	return DLQ_EXIT_OK;
}

/* Sends `req` (consumed); the answer, or NULL with why in `why` and,
 * when `code` is not NULL, the exit code it calls for there. */
static cJSON *
ask(const struct dlq_config *c, cJSON *req, char *why, size_t n, int *code)
{
	cJSON *ans = dlq_ctl_call(c->control_socket, req, why, n);
	const cJSON *err;
	int rc = DLQ_EXIT_ERROR;

	cJSON_Delete(req);
	if (ans != NULL && !cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok"))) {
		err = cJSON_GetObjectItem(ans, "error");
		snprintf(why, n, "%s", cJSON_IsString(err) ? err->valuestring :
		    "refused");
		rc = dlq_ctl_exit_code(ans);
		cJSON_Delete(ans);
		ans = NULL;
	}
	if (ans == NULL && code != NULL)
		*code = rc;
	return ans;
}

static void
add_options(cJSON *r, const struct dlq_replay_opts *o)
{
	if (o->reason)
		cJSON_AddStringToObject(r, "reason", o->reason);
	if (o->evidence)
		cJSON_AddStringToObject(r, "evidence", o->evidence);
	if (o->to_exchange)
		cJSON_AddStringToObject(r, "to_exchange", o->to_exchange);
	if (o->routing_key)
		cJSON_AddStringToObject(r, "routing_key", o->routing_key);
	if (o->force)
		cJSON_AddTrueToObject(r, "force");
	if (o->reset_retries)
		cJSON_AddTrueToObject(r, "reset_retries");
}

/* One line of a dry run's plan: the archive id (or a live delivery's
 * message id), eligible or not, the target, and why not. */
static void
plan_line(const cJSON *i)
{
	const cJSON *why = cJSON_GetObjectItem(i, "why");
	const cJSON *rk = cJSON_GetObjectItem(i, "routing_key");
	char tgt[300];

	dlq_replay_target_name(str_of(i, "exchange"), cJSON_IsString(rk) ?
	    rk->valuestring : "-", tgt, sizeof(tgt));
	if (cJSON_HasObjectItem(i, "id"))
		printf("%-8lld ", (long long)cJSON_GetObjectItem(i,
		    "id")->valuedouble);
	else {
		/* whole: two ids that differ only at their end must not
		 * look alike; a long one widens its row */
		dlq_term_put(stdout, str_of(i, "message_id")[0] ? str_of(i,
		    "message_id") : "-", -1, 24);
		putchar(' ');
	}
	printf("%-9s ", cJSON_IsTrue(cJSON_GetObjectItem(i, "eligible")) ?
	    "yes" : "no");
	if (cJSON_IsString(why) && why->valuestring[0] != '\0') {
		dlq_term_put(stdout, tgt, -1, 40);
		putchar(' ');
		dlq_term_put(stdout, why->valuestring, -1, 0);
	} else
		dlq_term_put(stdout, tgt, -1, 0);
	putchar('\n');
}

/* Whether the canary's messages (the first k eligible of `plan`) go to
 * queues with a consumer: one that waits unconsumed never comes back to
 * a DLQ, and "none came back" would let the rest go blind. Looked at
 * before the canary goes and again after its watch; false, with why,
 * when a queue has none or cannot be looked at. */
static bool
canary_consumed(const struct dlq_config *c, const cJSON *plan, int k,
    char *why, size_t n)
{
	cJSON *targets = cJSON_CreateArray();
	const cJSON *i;
	bool ok;
	int taken = 0;

	cJSON_ArrayForEach(i, plan)
		if (taken < k && cJSON_IsTrue(cJSON_GetObjectItem(i,
		    "eligible"))) {
			dlq_replay_targets_add(targets, str_of(i, "exchange"),
			    str_of(i, "routing_key"));
			taken++;
		}
	ok = dlq_replay_targets_look(c, targets, why, n) == 0 &&
	    !dlq_replay_targets_unconsumed(targets, why, n);
	cJSON_Delete(targets);
	return ok;
}

/* "canary: WHY: a canary there waits ...; THEN": a dry run's line on
 * stdout, else an error (prefixed dlqctl:) on stderr. */
static void
say_unconsumed(FILE *f, const char *why, const char *then)
{
	fputs(f == stderr ? "dlqctl: canary: " : "canary: ", f);
	dlq_term_put(f, why, -1, 0);
	fprintf(f, ": a canary there waits unconsumed and proves nothing; "
	    "%s\n", then);
}

/* How an executed run with --canary would go, for `yes` eligible. */
static void
canary_plan(const struct dlq_config *c, const struct dlq_replay_opts *o,
    const cJSON *plan, int yes)
{
	char watch[32], why[512];

	dlq_format_duration(o->watch_ms, watch, sizeof(watch));
	if (o->canary >= yes)
		printf("canary: all %d go at once (--canary %lld covers them "
		    "all), then watched for %s for any that come back to a "
		    "DLQ\n", yes, (long long)o->canary, watch);
	else
		printf("canary: the first %lld go, watched for %s; the other %lld "
		    "only if none of them comes back to a DLQ meanwhile\n",
		    (long long)o->canary, watch, (long long)(yes - o->canary));
	if (!canary_consumed(c, plan, o->canary < yes ? (int)o->canary : yes,
	    why, sizeof(why)))
		say_unconsumed(stdout, why, "executed now, nothing would be "
		    "sent");
}

/* The plan of a dry run, and where its eligible messages would go as
 * the broker sees it now. */
static void
print_plan(const struct dlq_config *c, const struct dlq_replay_opts *o,
    const cJSON *plan)
{
	const cJSON *i;
	struct tally t;
	cJSON *out;
	char *text;
	int yes = 0, n = 0;

	tally_init(&t);
	t.targets = cJSON_CreateArray();
	cJSON_ArrayForEach(i, plan)
		if (cJSON_IsTrue(cJSON_GetObjectItem(i, "eligible")))
			dlq_replay_targets_add(t.targets, str_of(i, "exchange"),
			    str_of(i, "routing_key"));
	look_targets(c, &t);
	if (o->json) {
		out = cJSON_CreateObject();
		cJSON_AddTrueToObject(out, "dry_run");
		cJSON_AddItemReferenceToObject(out, "plan", (cJSON *)plan);
		targets_json(&t, out);
		text = cJSON_PrintUnformatted(out);
		puts(text);
		cJSON_free(text);
		cJSON_Delete(out);
	} else if (cJSON_GetArraySize(plan) == 0)
		printf("no dead letters match: nothing to replay\n");
	else {
		printf("%-8s %-9s %-40s %s\n", "ID", "ELIGIBLE", "TARGET",
		    "WHY NOT");
		cJSON_ArrayForEach(i, plan) {
			plan_line(i);
			yes += cJSON_IsTrue(cJSON_GetObjectItem(i, "eligible"));
			n++;
		}
		printf("dry run: %d of %d would be replayed; nothing was "
		    "published (add --execute --reason TEXT)\n", yes, n);
		if (o->canary > 0 && yes > 0)
			canary_plan(c, o, plan, yes);
		targets_text(&t);
	}
	cJSON_Delete(t.targets);
}

/* Ids claimed per request: one archive transaction per chunk. With a
 * rate, at most a second's worth is claimed ahead of publishing. */
static int
chunk_size(const struct dlq_replay_opts *o)
{
	if (o->rate > 0 && o->rate < CLAIM_CHUNK)
		return (int)o->rate;
	return CLAIM_CHUNK;
}

/* Outcomes the worker did not record: their records stay 'replaying'
 * (outcome unknown) though dlqctl knows them. Said id by id with what
 * settles each, so that a published one is never sent again. */
static void
say_unrecorded(const cJSON *part, const char *why)
{
	static const char *const what[][2] = {
		{ "published", "published, confirmed by the broker: never "
		    "replay them again; close each with dlqctl drop ID "
		    "--reason \"replayed; outcome not recorded\"" },
		{ "failed", "not sent: dlqctl replay ID --force sends it" },
		{ "unknown", "outcome unknown: if it is in the target queue, "
		    "dlqctl drop ID, else dlqctl replay ID --force" },
	};
	const cJSON *id, *r;
	size_t i;
	int n;

	fprintf(stderr, "dlqctl: outcomes not recorded (%s); these records "
	    "stay 'replaying':\n", why);
	for (i = 0; i < sizeof(what) / sizeof(what[0]); i++) {
		n = 0;
		id = cJSON_GetObjectItem(part, "ids")->child;
		cJSON_ArrayForEach(r, cJSON_GetObjectItem(part, "results")) {
			if (id != NULL && strcmp(str_of(r, "outcome"),
			    what[i][0]) == 0)
				fprintf(stderr, "%s%lld", n++ ? " " : "  ",
				    (long long)id->valuedouble);
			id = id != NULL ? id->next : NULL;
		}
		if (n > 0)
			fprintf(stderr, ": %s\n", what[i][1]);
	}
}

/* Records the outcomes of a chunk (`fin`, freed): in as many requests as
 * the worker's request limit needs. A worker that does not answer (it is
 * restarting) is asked again every FINISH_RETRY_MS for FINISH_WAIT_MS. */
static void
finish(const struct dlq_config *c, cJSON *fin)
{
	cJSON *parts = dlq_replay_finish_split(fin, DLQ_CONTROL_REQUEST_MAX),
	    *part, *ans;
	struct timespec ts = { FINISH_RETRY_MS / 1000,
	    (FINISH_RETRY_MS % 1000) * 1000000L };
	int64_t end;
	char why[512];
	bool said = false, again;

	cJSON_Delete(fin);
	while ((part = cJSON_DetachItemViaPointer(parts, parts->child)) !=
	    NULL) {
		end = dlq_now_ms() + FINISH_WAIT_MS;
		again = false;
		while ((ans = dlq_ctl_call(c->control_socket, part, why,
		    sizeof(why))) == NULL && dlq_now_ms() < end &&
		    !dlq_stop_asked()) {
			if (!said)
				fprintf(stderr, "dlqctl: the worker does not "
				    "answer (%s); recording the outcomes waits "
				    "up to %d s\n", why, FINISH_WAIT_MS / 1000);
			said = again = true;
			nanosleep(&ts, NULL);
		}
		/* asked again, "not open": a request that timed out was
		 * recorded after all */
		if (ans == NULL)
			say_unrecorded(part, why);
		else if (!cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok")) &&
		    !(again && strcmp(str_of(ans, "code"), "not_found") == 0))
			say_unrecorded(part, cJSON_IsString(cJSON_GetObjectItem(
			    ans, "error")) ? cJSON_GetObjectItem(ans,
			    "error")->valuestring : "refused");
		cJSON_Delete(ans);
		cJSON_Delete(part);
	}
	cJSON_Delete(parts);
}

/* Claims, publishes and records one chunk of eligible ids. Returns how
 * many of them it settled (claimed or refused): the worker defers the
 * rest of a chunk whose messages are large, to be asked for again. */
static int
replay_chunk(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, const int64_t *ids, int n, struct tally *t)
{
	cJSON *req, *ans, *fin, *res, *cl, *ref, *claims;
	struct dlq_pub_pending *pend = NULL;
	bool *back = NULL;	/* claimed, not sent: given back */
	char why[512];
	int64_t id;
	int i, k, settled;
	bool sent;

	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "cmd", "replay_claim");
	cJSON_AddItemToObject(req, "ids", cJSON_CreateArray());
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(cJSON_GetObjectItem(req, "ids"),
		    cJSON_CreateNumber((double)ids[i]));
	add_options(req, o);
	if ((ans = ask(c, req, why, sizeof(why), NULL)) == NULL) {
		for (i = 0; i < n; i++) {
			t->done++;
			refuse(t, ids[i], NULL, why);
		}
		return n;
	}
	/* the deferred are the chunk's last ids, in order */
	settled = n - cJSON_GetArraySize(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(ans, "data"), "deferred"));
	if (settled <= 0) {	/* no progress: never ask again for them */
		for (i = 0; i < n; i++) {
			t->done++;
			refuse(t, ids[i], NULL, "the worker deferred them all");
		}
		cJSON_Delete(ans);
		return n;
	}
	cJSON_ArrayForEach(ref, cJSON_GetObjectItem(cJSON_GetObjectItem(ans,
	    "data"), "refused")) {
		t->done++;
		refuse(t, (int64_t)cJSON_GetObjectItem(ref, "id")->valuedouble,
		    NULL, cJSON_GetObjectItem(ref, "why")->valuestring);
	}
	fin = cJSON_CreateObject();
	cJSON_AddStringToObject(fin, "cmd", "replay_finish");
	cJSON_AddItemToObject(fin, "ids", cJSON_CreateArray());
	res = cJSON_AddArrayToObject(fin, "results");
	claims = cJSON_GetObjectItem(cJSON_GetObjectItem(ans, "data"), "claims");
	k = cJSON_GetArraySize(claims);
	if (k > 0 && ((pend = calloc((size_t)k, sizeof(*pend))) == NULL ||
	    (back = calloc((size_t)k, sizeof(*back))) == NULL)) {
		fprintf(stderr, "dlqctl: out of memory; %d claims left replaying, "
		    "outcome unknown\n", k);
		free(pend);
		cJSON_Delete(ans);
		cJSON_Delete(fin);
		return settled;
	}
	/* post the chunk, reading confirms as they come, then wait for the
	 * rest: two round trips per chunk, not one per message */
	i = 0;
	cJSON_ArrayForEach(cl, claims) {
		if (dlq_stop_asked() || t->blocked) {
			/* claimed, never sent: give it back, replayable */
			pend[i].settled = true;
			pend[i].out = DLQ_PUB_FAILED;
			snprintf(pend[i].detail, sizeof(pend[i].detail), "not sent: "
			    "%s", t->blocked ? "the broker blocks publishing" :
			    "interrupted");
			back[i] = true;
		} else {
			pace(t, o->rate);
			t->posted++;
			dlq_publisher_pump(pub, pend, (size_t)i, DLQ_REPLAY_KEY_HEADER);
			if (dlq_replay_post(c, pub, cl, o->reason, o->reset_retries,
			    &pend[i]) == -1) {
				if (dlq_publisher_blocked(pub)) {
					t->blocked = true;
					/* refused before sending: nothing went
					 * out */
					back[i] = pend[i].out != DLQ_PUB_UNKNOWN;
				}
			} else if (i == 0) {
				/* the first of a chunk goes alone: a broker that
				 * blocks publishing holds that one, and the rest
				 * stays unsent (replayable), not unknown */
				dlq_publisher_settle(pub, pend, 1,
				    DLQ_REPLAY_KEY_HEADER);
				if (pend[0].out != DLQ_PUB_OK &&
				    dlq_publisher_blocked(pub))
					t->blocked = true;
			}
		}
		i++;
	}
	dlq_publisher_settle(pub, pend, (size_t)k, DLQ_REPLAY_KEY_HEADER);
	if (dlq_publisher_blocked(pub))
		t->blocked = true;
	i = 0;
	cJSON_ArrayForEach(cl, claims) {
		id = (int64_t)cJSON_GetObjectItem(cl, "id")->valuedouble;
		sent = !back[i];
		t->given_back += back[i];
		t->done++;
		dlq_replay_verdict(res, cl, pend[i].out, pend[i].detail);
		cJSON_AddItemToArray(cJSON_GetObjectItem(fin, "ids"),
		    cJSON_CreateNumber((double)id));
		if (sent)
			result(t, id, NULL, pend[i].out, pend[i].detail);
		progress(t, false);
		i++;
	}
	free(pend);
	free(back);
	cJSON_Delete(ans);
	if (cJSON_GetArraySize(res) == 0) {
		cJSON_Delete(fin);
		return settled;
	}
	finish(c, fin);
	return settled;
}

static void
send_ids(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, const int64_t *ids, int n, struct tally *t)
{
	int i, k;

	for (i = 0; i < n && !dlq_stop_asked() && !t->blocked; i += k) {
		k = n - i < chunk_size(o) ? n - i : chunk_size(o);
		k = replay_chunk(c, o, pub, ids + i, k, t);
	}
}

/* Asks the worker which of the canary's messages died again since
 * `from` (wall clock). NULL when it cannot tell. */
static cJSON *
canary_returns(const struct dlq_config *c, const int64_t *ids, int k,
    int64_t from)
{
	cJSON *req = cJSON_CreateObject(), *ans, *back;
	char why[512];
	int i;

	cJSON_AddStringToObject(req, "cmd", "replay_returns");
	cJSON_AddNumberToObject(req, "since_at_ms", (double)from);
	cJSON_AddItemToObject(req, "ids", cJSON_CreateArray());
	for (i = 0; i < k; i++)
		cJSON_AddItemToArray(cJSON_GetObjectItem(req, "ids"),
		    cJSON_CreateNumber((double)ids[i]));
	if ((ans = ask(c, req, why, sizeof(why), NULL)) == NULL) {
		fprintf(stderr, "dlqctl: canary: %s\n", why);
		return NULL;
	}
	back = cJSON_DetachItemFromObject(ans, "data");
	cJSON_Delete(ans);
	return back;
}

/* Watches the canary's messages (sent since `from`) up to the watch,
 * polling every CANARY_POLL_MS; stops at the first that died again. True
 * when none did and their queues still have a consumer: the rest may go.
 * Cannot tell -> false (never go on blind). */
static bool
watch_canary(const struct dlq_config *c, const struct dlq_replay_opts *o,
    const cJSON *plan, const int64_t *ids, int k, int rest, int64_t from,
    struct tally *t)
{
	int64_t end = dlq_now_ms() + o->watch_ms;
	struct timespec ts = { 0, CANARY_POLL_MS * 1000000L };
	cJSON *back;
	char why[512];
	bool ok, consumed = true;

	if (isatty(2))
		fprintf(stderr, "\ncanary: %d sent; watching them for %lld ms\n",
		    k, (long long)o->watch_ms);
	while ((back = canary_returns(c, ids, k, from)) != NULL &&
	    cJSON_GetArraySize(back) == 0 && dlq_now_ms() < end &&
	    !dlq_stop_asked()) {
		cJSON_Delete(back);
		nanosleep(&ts, NULL);
	}
	ok = back != NULL && cJSON_GetArraySize(back) == 0;
	/* none came back: proof only if they were there to be consumed */
	if (ok && !dlq_stop_asked())
		ok = consumed = canary_consumed(c, plan, k, why, sizeof(why));
	t->canary = cJSON_CreateObject();
	cJSON_AddNumberToObject(t->canary, "sent", k);
	cJSON_AddNumberToObject(t->canary, "watch_ms", (double)o->watch_ms);
	cJSON_AddItemToObject(t->canary, "returned", back ? back :
	    cJSON_CreateArray());
	cJSON_AddBoolToObject(t->canary, "stopped", !ok);
	if (!consumed)
		cJSON_AddStringToObject(t->canary, "inconclusive", why);
	cJSON_AddNumberToObject(t->canary, "untouched", ok ? 0 : rest);
	return ok && !dlq_stop_asked();
}

/* "ids": the archive records the refusals name. The audit indexes a
 * request's ids, so that each one's history (`show`) has the refusal. */
static void
add_refused_ids(cJSON *req, const cJSON *refusals)
{
	cJSON *ids = cJSON_AddArrayToObject(req, "ids");
	const cJSON *r, *id;

	if (ids == NULL)
		return;
	cJSON_ArrayForEach(r, refusals)
		if (cJSON_IsNumber(id = cJSON_GetObjectItem(r, "id")))
			cJSON_AddItemToArray(ids, cJSON_Duplicate(id, 0));
	if (cJSON_GetArraySize(ids) == 0)
		cJSON_DeleteItemFromObject(req, "ids");
}

/* Records a run in the worker's audit table (and checks the role): what
 * ran, its result, and the refusals an executing run kept. Returns
 * DLQ_EXIT_OK, or the exit code of the failure said in `why`. */
static int
note(const struct dlq_config *c, const struct dlq_replay_opts *o,
    const char *what, const char *result, struct tally *t, char *why,
    size_t n, char *actor, size_t actor_len)
{
	cJSON *req = cJSON_CreateObject(), *ans, *sel;
	const char *who;
	int rc;

	cJSON_AddStringToObject(req, "cmd", "audit_note");
	cJSON_AddStringToObject(req, "what", what);
	cJSON_AddStringToObject(req, "result", result);
	add_options(req, o);
	if (t != NULL && t->refusals != NULL && t->refused > 0) {
		sel = cJSON_Duplicate(o->select, 1);
		cJSON_DeleteItemFromObject(sel, "ids");	/* in "refused" */
		if (sel->child != NULL)
			cJSON_AddItemToObject(req, "selection", sel);
		else
			cJSON_Delete(sel);
		add_refused_ids(req, t->refusals);
		cJSON_AddItemToObject(req, "refused", t->refusals);
		t->refusals = NULL;
		if (t->refusals_unlisted > 0)
			cJSON_AddNumberToObject(req, "refused_unlisted",
			    (double)t->refusals_unlisted);
	}
	if ((ans = ask(c, req, why, n, &rc)) == NULL)
		return rc;
	if (actor != NULL) {
		who = cJSON_GetStringValue(cJSON_GetObjectItem(
		    cJSON_GetObjectItem(ans, "data"), "actor"));
		snprintf(actor, actor_len, "%s", who ? who : "unknown");
	}
	cJSON_Delete(ans);
	return DLQ_EXIT_OK;
}

/* An executed replay's refusals go to the audit with their ids and
 * reasons: the policy said no, and the record says so. */
static void
note_refusals(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct tally *t)
{
	char res[120], why[512];

	if (t->refusals == NULL || t->refused == 0)
		return;
	snprintf(res, sizeof(res), "refused %zu of %zu selected", t->refused,
	    t->total);
	if (note(c, o, "replay --execute: refused by the policy", res, t, why,
	    sizeof(why), NULL, 0) != DLQ_EXIT_OK)
		fprintf(stderr, "dlqctl: could not audit the refusals: %s\n",
		    why);
}

/* Whether the plan names an id the archive does not hold: exit 1, as
 * show, drop and reopen do for one. */
static bool
unknown_ids(const cJSON *plan)
{
	const cJSON *i;

	cJSON_ArrayForEach(i, cJSON_GetObjectItem(plan, "data"))
		if (strcmp(str_of(i, "why"), DLQ_NOT_IN_ARCHIVE) == 0)
			return true;
	return false;
}

static int
run_archive(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	struct dlq_publisher *pub = NULL;
	struct tally t;
	cJSON *req, *plan, *item;
	int64_t *ids;
	char why[512];
	int n = 0, i, k, rc;

	tally_init(&t);
	req = cJSON_Duplicate(o->select, 1);
	cJSON_AddStringToObject(req, "cmd", "replay_plan");
	cJSON_AddNumberToObject(req, "limit", (double)o->limit);
	add_options(req, o);
	if ((plan = ask(c, req, why, sizeof(why), &rc)) == NULL) {
		fprintf(stderr, "dlqctl: %s\n", why);
		return rc;	/* usage, permission, ... */
	}
	if (!o->execute) {
		print_plan(c, o, cJSON_GetObjectItem(plan, "data"));
		rc = unknown_ids(plan) ? DLQ_EXIT_ERROR : DLQ_EXIT_OK;
		cJSON_Delete(plan);
		return rc;
	}
	t.results = cJSON_CreateArray();
	t.refusals = cJSON_CreateArray();
	t.total = (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(plan, "data"));
	if ((ids = calloc(t.total + 1, sizeof(*ids))) == NULL) {
		fprintf(stderr, "dlqctl: out of memory; nothing was sent\n");
		rc = DLQ_EXIT_ERROR;
		goto out;
	}
	cJSON_ArrayForEach(item, cJSON_GetObjectItem(plan, "data")) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(item, "eligible")))
			ids[n++] = (int64_t)cJSON_GetObjectItem(item,
			    "id")->valuedouble;
		else {
			t.done++;
			refuse(&t, (int64_t)cJSON_GetObjectItem(item,
			    "id")->valuedouble, NULL, cJSON_GetObjectItem(item,
			    "why")->valuestring);
		}
	}
	/* the broker only when there is something to publish */
	rc = DLQ_EXIT_ERROR;
	if (o->canary > 0 && n > 0 && !canary_consumed(c,
	    cJSON_GetObjectItem(plan, "data"), o->canary < n ? (int)o->canary :
	    n, why, sizeof(why))) {
		say_unconsumed(stderr, why, "nothing was sent (start its "
		    "consumer, or replay without --canary)");
		goto out;
	}
	if (n > 0 && (pub = dlq_publisher_open(c, "dlqctl replay", why,
	    sizeof(why))) == NULL) {
		fprintf(stderr, "dlqctl: %s\n", why);
		goto out;
	}
	t.start_ms = dlq_now_ms();
	i = 0;
	if (o->canary > 0 && n > 0) {
		int64_t from = dlq_wall_ms();

		k = o->canary < n ? (int)o->canary : n;
		send_ids(c, o, pub, ids, k, &t);
		if (!dlq_stop_asked() && !t.blocked &&
		    !watch_canary(c, o, cJSON_GetObjectItem(plan, "data"), ids,
		    k, n - k, from, &t))
			n = k;	/* stop: the rest stays untouched */
		i = k;
	}
	send_ids(c, o, pub, ids + i, n - i, &t);
	rc = summary(&t, o->json);
	note_refusals(c, o, &t);
	if (rc == DLQ_EXIT_CONFLICT && unknown_ids(plan))
		rc = DLQ_EXIT_ERROR;
out:
	free(ids);
	cJSON_Delete(t.refusals);
	cJSON_Delete(t.results);
	cJSON_Delete(t.canary);
	cJSON_Delete(plan);
	dlq_publisher_close(pub);
	return rc;
}

/* Facts about a live delivery, for the same policy as archived ones. */
static bool
judge_live(const struct dlq_config *c, const struct dlq_classifier *k,
    const struct dlq_dead_letter *d, const char *queue, bool has_evidence,
    char *why, size_t n, int64_t *replay_count)
{
	struct dlq_redact r = { &c->mask_keys, c->mask_emails,
	    (int)c->mask_digits_min, DLQ_ERROR_TEXT_MAX, 0 };
	struct dlq_classification cl;
	struct dlq_replay_policy p;
	struct dlq_replay_facts f;
	const amqp_field_value_t *v;
	struct dlq_buf err;
	char reason[32];
	int64_t died = dlq_wall_ms(), first;
	bool ok;

	dlq_buf_init(&err);
	dlq_deadletter_error_text(d, &r, DLQ_ERROR_TEXT_MAX, &err);
	snprintf(reason, sizeof(reason), "%.*s", d->n_xdeath > 0 &&
	    d->xdeath[0].reason.p ? (int)d->xdeath[0].reason.n : 7,
	    d->n_xdeath > 0 && d->xdeath[0].reason.p ? d->xdeath[0].reason.p :
	    "unknown");
	dlq_classify(k, queue, reason, err.data ? err.data : "", &cl);
	if ((first = dlq_deadletter_first_death_ms(d)) > 0)
		died = first;
	*replay_count = 0;
	if ((d->props->_flags & AMQP_BASIC_HEADERS_FLAG) &&
	    (v = dlq_table_get(&d->props->headers, "x-replay-count")) != NULL)
		dlq_field_to_i64(v, replay_count);
	f.status = "open";
	f.class = cl.class;
	f.owner = NULL;
	f.age_ms = dlq_wall_ms() - dlq_replay_born_ms(d->props->_flags &
	    AMQP_BASIC_TIMESTAMP_FLAG ? d->props->timestamp : 0, died);
	f.replay_count = *replay_count;
	f.evidence_age_ms = has_evidence ? 0 : -1;	/* given now, or none */
	dlq_config_replay_policy(c, queue, &p);
	ok = dlq_replay_eligible(&p, &f, false, why, n);
	dlq_buf_release(&err);
	return ok;
}

/* A live dry run's line for one delivery: its message id, eligible or
 * not, where it would go, why not. */
static void
plan_add(struct tally *t, const char *message_id, bool eligible,
    const char *exchange, const char *routing_key, const char *why)
{
	cJSON *p;

	if (t->plan == NULL || (p = cJSON_CreateObject()) == NULL)
		return;
	if (message_id[0] != '\0')
		cJSON_AddStringToObject(p, "message_id", message_id);
	else
		cJSON_AddNullToObject(p, "message_id");
	cJSON_AddBoolToObject(p, "eligible", eligible);
	cJSON_AddStringToObject(p, "exchange", exchange);
	cJSON_AddStringToObject(p, "routing_key", routing_key);
	if (why != NULL)
		cJSON_AddStringToObject(p, "why", why);
	cJSON_AddItemToArray(t->plan, p);
}

/* One live delivery: judged, and published when eligible and executing.
 * Returns true when it was replayed (to be acked); *deliveries is its
 * x-delivery-count, -1 without one. */
static bool
replay_live(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, const struct dlq_classifier *k,
    amqp_message_t *msg, amqp_bytes_t rk, struct tally *t, const char *me,
    int64_t *deliveries)
{
	struct dlq_dead_letter d;
	struct dlq_str dlq = { o->from_queue, strlen(o->from_queue) };
	struct dlq_str fallback = { rk.bytes, rk.len };
	amqp_basic_properties_t props = msg->properties;
	amqp_table_entry_t extra[5];
	struct dlq_replay_mark mark;
	enum dlq_pub_outcome out;
	const char *to_ex = o->to_exchange ? o->to_exchange : "", *to_rk;
	char why[256], queue[256], id[256], detail[512];
	bool loops;

	dlq_deadletter_decode(&d, &msg->properties, msg->body, dlq, fallback,
	    &c->error_headers);
	*deliveries = d.has_delivery_count ? d.delivery_count : -1;
	snprintf(queue, sizeof(queue), "%.*s", (int)d.queue.n, d.queue.p ?
	    d.queue.p : "");
	snprintf(id, sizeof(id), "%.*s", (int)d.message_id.n, d.message_id.p ?
	    d.message_id.p : "");
	/* the run's target, else the queue it died in */
	to_rk = o->routing_key ? o->routing_key : queue;
	/* no x-death names another queue: a copy would be read again by
	 * this very run */
	loops = to_ex[0] == '\0' && strcmp(to_rk, o->from_queue) == 0;
	if (loops)
		snprintf(why, sizeof(why), "its target is the queue it is read "
		    "from (no x-death names another): give --to-exchange and "
		    "--routing-key");
	if (loops || !judge_live(c, k, &d, queue, o->evidence != NULL, why,
	    sizeof(why), &mark.replay_count)) {
		plan_add(t, id, false, to_ex, to_rk, why);
		refuse(t, 0, id[0] ? id : NULL, why);
		return false;
	}
	if (!o->execute) {
		t->published++;
		plan_add(t, id, true, to_ex, to_rk, NULL);
		dlq_replay_targets_add(t->targets, to_ex, to_rk);
		return false;
	}
	pace(t, o->rate);
	t->posted++;
	mark.replay_count++;
	mark.by = me;
	mark.at_s = dlq_wall_ms() / 1000;
	mark.reason = o->reason;
	mark.replay_of = 0;
	mark.error_headers = &c->error_headers;
	if (dlq_replay_headers((msg->properties._flags & AMQP_BASIC_HEADERS_FLAG)
	    ? &msg->properties.headers : NULL, o->reset_retries, &mark, extra,
	    &props.headers) == -1)
		return false;
	props._flags |= AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
	props.delivery_mode = 2;
	if ((props._flags & AMQP_BASIC_USER_ID_FLAG) &&
	    (props.user_id.len != strlen(c->broker.user) ||
	    memcmp(props.user_id.bytes, c->broker.user, props.user_id.len) != 0))
		props._flags &= ~AMQP_BASIC_USER_ID_FLAG;
	props._flags &= ~AMQP_BASIC_EXPIRATION_FLAG;
	out = dlq_publisher_send(pub, to_ex, to_rk, &props, msg->body, detail,
	    sizeof(detail));
	dlq_replay_headers_free(&props.headers);
	result(t, 0, id[0] ? id : NULL, out, detail);
	return out == DLQ_PUB_OK;
}

/* For the tests only: DLQ_FAULT_LOSE_BEFORE_ACK=1 breaks the connection
 * after a live delivery's copy was confirmed, before its ack (a network
 * that fails just then). Compiled only into the test build
 * (DLQ_TEST_HOOKS). */
static bool
fault_lose_before_ack(void)
{
#ifdef DLQ_TEST_HOOKS
	const char *v = getenv("DLQ_FAULT_LOSE_BEFORE_ACK");

	return v != NULL && strcmp(v, "1") == 0;
#else
	return false;
#endif
}

/* A live delivery was published, but the connection it was read on is
 * gone before its ack: the original goes back to the queue, and a later
 * run would send it again. Said at once, counted, and the run fails. */
static void
original_back(struct tally *t, const char *queue, const amqp_message_t *m)
{
	char id[256] = "none";

	if (m->properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
		snprintf(id, sizeof(id), "%.*s",
		    (int)m->properties.message_id.len,
		    (const char *)m->properties.message_id.bytes);
	t->originals_back++;
	fputs("dlqctl: replayed, but the connection was lost before its "
	    "original was acked: it is back in ", stderr);
	dlq_term_put(stderr, queue, -1, 0);
	fputs(" and a later run would send it again; take it out first "
	    "(message id ", stderr);
	dlq_term_put(stderr, id, -1, 0);
	fputs(")\n", stderr);
}

static int
run_live(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	struct dlq_classifier *k;
	struct dlq_publisher *pub;
	amqp_connection_state_t conn;
	amqp_basic_get_ok_t *ok;
	amqp_rpc_reply_t r;
	amqp_message_t msg;
	struct tally t;
	const cJSON *item;
	uint64_t tag;
	int64_t deliveries;
	char why[512], me[64], res[300], what[400];
	bool unread = false;	/* stopped by a failed read, not the end */
	bool lost = false;	/* the connection, after a publish */
	bool lose_ack = fault_lose_before_ack();
	int rc;

	snprintf(what, sizeof(what), "replay --from-queue %s%s", o->from_queue,
	    o->execute ? " --execute" : " (dry run)");
	/* x-replayed-by: the caller as the worker sees it (SO_PEERCRED),
	 * the same name as the audit's */
	if ((rc = note(c, o, what, "started", NULL, why, sizeof(why), me,
	    sizeof(me))) != DLQ_EXIT_OK) {
		fprintf(stderr, "dlqctl: %s (live-queue replays are audited by "
		    "the worker)\n", why);
		return rc;
	}
	if ((k = dlq_classify_new(c, NULL)) == NULL ||
	    (pub = dlq_publisher_open(c, "dlqctl replay", why,
	    sizeof(why))) == NULL) {
		fprintf(stderr, "dlqctl: %s\n", k ? why : "classifier failed");
		dlq_classify_free(k);
		return 1;
	}
	dlq_publisher_hold(pub);	/* it reads the deliveries */
	tally_init(&t);
	t.dry = !o->execute;
	t.results = cJSON_CreateArray();
	if (o->execute)
		t.refusals = cJSON_CreateArray();
	else {
		t.targets = cJSON_CreateArray();
		t.plan = cJSON_CreateArray();
	}
	t.total = (size_t)o->limit;
	t.start_ms = dlq_now_ms();
	/* Ineligible deliveries stay unacked until the end, so that basic.get
	 * does not hand them out again; then they all go back at once. */
	while (!dlq_stop_asked() && !t.blocked && t.done < (size_t)o->limit &&
	    (conn = dlq_publisher_conn(pub)) != NULL) {
		amqp_maybe_release_buffers(conn);
		r = amqp_basic_get(conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(o->from_queue), 0);
		if (r.reply_type != AMQP_RESPONSE_NORMAL) {
			fprintf(stderr, "dlqctl: cannot read %s: %s\n",
			    o->from_queue, dlq_amqp_reply_text(r, why, sizeof(why)));
			unread = true;
			break;
		}
		if (r.reply.id != AMQP_BASIC_GET_OK_METHOD)
			break;		/* empty */
		ok = r.reply.decoded;
		tag = ok->delivery_tag;
		r = amqp_read_message(conn, DLQ_AMQP_CHANNEL, &msg, 0);
		if (r.reply_type != AMQP_RESPONSE_NORMAL) {
			fprintf(stderr, "dlqctl: cannot read a message of %s: "
			    "%s\n", o->from_queue, dlq_amqp_reply_text(r, why,
			    sizeof(why)));
			unread = true;
			break;
		}
		t.done++;
		if (!replay_live(c, o, pub, k, &msg, ok->routing_key, &t, me,
		    &deliveries))
			note_return(&t, deliveries);
		else {
			if ((conn = dlq_publisher_conn(pub)) != NULL && lose_ack)
				shutdown(amqp_get_sockfd(conn), SHUT_RDWR);
			if (conn == NULL || amqp_basic_ack(conn,
			    DLQ_AMQP_CHANNEL, tag, 0) != AMQP_STATUS_OK) {
				original_back(&t, o->from_queue, &msg);
				lost = true;	/* nothing more to read on it */
			}
		}
		/* a blocked connection would hang the next basic.get */
		t.blocked = o->execute && dlq_publisher_blocked(pub);
		amqp_destroy_message(&msg);
		progress(&t, false);
		if (lost)
			break;
	}
	if ((conn = dlq_publisher_conn(pub)) != NULL)
		amqp_basic_nack(conn, DLQ_AMQP_CHANNEL, 0, 1, 1);
	t.total = t.done;
	if (t.targets != NULL)
		look_targets(c, &t);
	if (!o->json && cJSON_GetArraySize(t.plan) > 0) {
		printf("%-24s %-9s %-40s %s\n", "MESSAGE_ID", "ELIGIBLE",
		    "TARGET", "WHY NOT");
		cJSON_ArrayForEach(item, t.plan)
			plan_line(item);
	}
	rc = summary(&t, o->json);
	if (unread && rc == DLQ_EXIT_OK)
		rc = DLQ_EXIT_ERROR;
	snprintf(res, sizeof(res), "examined %zu: %s %zu, refused %zu, failed "
	    "%zu, unknown %zu%s%s", t.done, t.dry ? "eligible" : "published",
	    t.published, t.refused, t.failed, t.unknown, unread ?
	    "; stopped: the queue could not be read" : "", lost ?
	    "; stopped: the connection was lost before an ack, the original "
	    "of one published is back in the queue" : "");
	if (note(c, o, what, res, &t, why, sizeof(why), NULL, 0) !=
	    DLQ_EXIT_OK)
		fprintf(stderr, "dlqctl: could not audit the result: %s\n", why);
	cJSON_Delete(t.refusals);
	cJSON_Delete(t.results);
	cJSON_Delete(t.targets);
	cJSON_Delete(t.plan);
	dlq_publisher_close(pub);
	dlq_classify_free(k);
	return rc;
}

int
dlq_replay_run(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	/* ^C, a closed terminal or a kill: stop after the current message,
	 * give back what was claimed and not sent, print the summary */
	dlq_stop_catch(false);
	signal(SIGPIPE, SIG_IGN);
	return o->from_queue ? run_live(c, o) : run_archive(c, o);
}
