/* replayrun.c - dlqctl's replay loop over archived dead letters: plan,
 * then claim, publish and finish a chunk at a time (the claims and
 * finishes on a lane, ctllane.h, beside the publishing), a canary first
 * when asked; --from-queue is replaylive.c's. */
#include "replayrun.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "amqp.h"
#include "proto.h"
#include "ctlclient.h"
#include "publisher.h"
#include "replaysend.h"
#include "replaytarget.h"
#include "stopsig.h"
#include "termtext.h"

#include "replaylive.h"
#include "replaytally.h"
#include "ctllane.h"

#define CLAIM_CHUNK	250
#define CANARY_POLL_MS	250
/* How long a chunk's outcomes wait for a worker that does not answer (a
 * restart, a deploy) before they are given up, and how often asked. */
#define FINISH_WAIT_MS	30000
#define FINISH_RETRY_MS	1000


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
			dlq_replay_targets_add(targets, dlq_tally_str(i, "exchange"),
			    dlq_tally_str(i, "routing_key"));
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
	struct dlq_tally t;
	cJSON *out;
	char *text;
	int yes = 0, n = 0;

	dlq_tally_init(&t);
	t.targets = cJSON_CreateArray();
	cJSON_ArrayForEach(i, plan)
		if (cJSON_IsTrue(cJSON_GetObjectItem(i, "eligible")))
			dlq_replay_targets_add(t.targets, dlq_tally_str(i, "exchange"),
			    dlq_tally_str(i, "routing_key"));
	dlq_tally_look_targets(c, &t);
	if (o->json) {
		out = cJSON_CreateObject();
		cJSON_AddTrueToObject(out, "dry_run");
		cJSON_AddItemReferenceToObject(out, "plan", (cJSON *)plan);
		dlq_tally_targets_json(&t, out);
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
			dlq_tally_plan_line(i);
			yes += cJSON_IsTrue(cJSON_GetObjectItem(i, "eligible"));
			n++;
		}
		printf("dry run: %d of %d would be replayed; nothing was "
		    "published (add --execute --reason TEXT)\n", yes, n);
		if (o->canary > 0 && yes > 0)
			canary_plan(c, o, plan, yes);
		dlq_tally_targets_text(&t);
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
			if (id != NULL && strcmp(dlq_tally_str(r, "outcome"),
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
		    !(again && strcmp(dlq_tally_str(ans, "code"), "not_found") == 0))
			say_unrecorded(part, cJSON_IsString(cJSON_GetObjectItem(
			    ans, "error")) ? cJSON_GetObjectItem(ans,
			    "error")->valuestring : "refused");
		cJSON_Delete(ans);
		cJSON_Delete(part);
	}
	cJSON_Delete(parts);
}

/* A chunk's claim: asked on the lane, answered while the chunk before
 * it is published. */
struct claim {
	const struct dlq_config	*c;
	cJSON			*req;	/* sent and freed on the lane */
	cJSON			*ans;	/* NULL: nothing claimed, see why */
	char			 why[512];
	const int64_t		*ids;
	int			 n;
	uint64_t		 ticket;
};

static void
claim_run(void *arg)
{
	struct claim *cl = arg;

	cl->ans = dlq_replay_ask(cl->c, cl->req, cl->why, sizeof(cl->why),
	    NULL);
	cl->req = NULL;
}

/* Puts the claim of the next chunk of ids[0..left) on the lane. */
static void
claim_ask(struct dlq_lane *lane, const struct dlq_config *c,
    const struct dlq_replay_opts *o, const int64_t *ids, int left,
    struct claim *cl)
{
	int i, n = left < chunk_size(o) ? left : chunk_size(o);

	memset(cl, 0, sizeof(*cl));
	cl->c = c;
	cl->ids = ids;
	cl->n = n;
	cl->req = cJSON_CreateObject();
	cJSON_AddStringToObject(cl->req, "cmd", "replay_claim");
	cJSON_AddItemToObject(cl->req, "ids", cJSON_CreateArray());
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(cJSON_GetObjectItem(cl->req, "ids"),
		    cJSON_CreateNumber((double)ids[i]));
	dlq_replay_add_options(cl->req, o);
	cl->ticket = dlq_lane_put(lane, claim_run, cl);
}

/* Waits for the claim and tallies what it refused. Returns how many of
 * its ids it settled (claimed or refused): the worker defers the rest of
 * a chunk whose messages are large, to be asked for again. Its answer
 * stays only when it claimed some. */
static int
claim_settled(struct dlq_lane *lane, struct claim *cl, struct dlq_tally *t)
{
	const cJSON *ref;
	int i, settled;

	dlq_lane_wait(lane, cl->ticket);
	if (cl->ans == NULL) {
		for (i = 0; i < cl->n; i++) {
			t->done++;
			dlq_tally_refuse(t, cl->ids[i], NULL, cl->why);
		}
		return cl->n;
	}
	/* the deferred are the chunk's last ids, in order */
	settled = cl->n - cJSON_GetArraySize(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cl->ans, "data"), "deferred"));
	if (settled <= 0) {	/* no progress: never ask again for them */
		for (i = 0; i < cl->n; i++) {
			t->done++;
			dlq_tally_refuse(t, cl->ids[i], NULL,
			    "the worker deferred them all");
		}
		cJSON_Delete(cl->ans);
		cl->ans = NULL;
		return cl->n;
	}
	cJSON_ArrayForEach(ref, cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cl->ans, "data"), "refused")) {
		t->done++;
		dlq_tally_refuse(t, (int64_t)cJSON_GetObjectItem(ref,
		    "id")->valuedouble, NULL, cJSON_GetObjectItem(ref,
		    "why")->valuestring);
	}
	return settled;
}

/* A chunk's outcomes, recorded on the lane while the next is published. */
struct finishing {
	const struct dlq_config	*c;
	cJSON			*fin;
};

static void
finish_run(void *arg)
{
	struct finishing *f = arg;

	finish(f->c, f->fin);
	free(f);
}

static void
finish_later(struct dlq_lane *lane, const struct dlq_config *c, cJSON *fin)
{
	struct finishing *f = malloc(sizeof(*f));

	if (f == NULL) {
		finish(c, fin);
		return;
	}
	f->c = c;
	f->fin = fin;
	dlq_lane_put(lane, finish_run, f);
}

/* Publishes what `cl` claimed (its answer is freed) and puts the
 * recording of their outcomes on the lane. */
static void
publish_claims(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, struct dlq_lane *lane, struct claim *cl,
    struct dlq_tally *t)
{
	cJSON *fin, *res, *claims, *item;
	struct dlq_pub_pending *pend = NULL;
	bool *back = NULL;	/* claimed, not sent: given back */
	int64_t id;
	int i, k;
	bool sent;

	if (cl->ans == NULL)
		return;
	fin = cJSON_CreateObject();
	cJSON_AddStringToObject(fin, "cmd", "replay_finish");
	cJSON_AddItemToObject(fin, "ids", cJSON_CreateArray());
	res = cJSON_AddArrayToObject(fin, "results");
	claims = cJSON_GetObjectItem(cJSON_GetObjectItem(cl->ans, "data"),
	    "claims");
	k = cJSON_GetArraySize(claims);
	if (k > 0 && ((pend = calloc((size_t)k, sizeof(*pend))) == NULL ||
	    (back = calloc((size_t)k, sizeof(*back))) == NULL)) {
		fprintf(stderr, "dlqctl: out of memory; %d claims left replaying, "
		    "outcome unknown\n", k);
		free(pend);
		cJSON_Delete(cl->ans);
		cJSON_Delete(fin);
		return;
	}
	/* post the chunk, reading confirms as they come, then wait for the
	 * rest: two round trips per chunk, not one per message */
	i = 0;
	cJSON_ArrayForEach(item, claims) {
		if (dlq_stop_asked() || t->blocked) {
			/* claimed, never sent: give it back, replayable */
			pend[i].settled = true;
			pend[i].out = DLQ_PUB_FAILED;
			snprintf(pend[i].detail, sizeof(pend[i].detail), "not sent: "
			    "%s", t->blocked ? "the broker blocks publishing" :
			    "interrupted");
			back[i] = true;
		} else {
			dlq_tally_pace(t, o->rate);
			t->posted++;
			dlq_publisher_pump(pub, pend, (size_t)i, DLQ_REPLAY_KEY_HEADER);
			if (dlq_replay_post(c, pub, item, o->reason,
			    o->reset_retries, &pend[i]) == -1) {
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
	cJSON_ArrayForEach(item, claims) {
		id = (int64_t)cJSON_GetObjectItem(item, "id")->valuedouble;
		sent = !back[i];
		t->given_back += back[i];
		t->done++;
		dlq_replay_verdict(res, item, pend[i].out, pend[i].detail);
		cJSON_AddItemToArray(cJSON_GetObjectItem(fin, "ids"),
		    cJSON_CreateNumber((double)id));
		if (sent)
			dlq_tally_result(t, id, NULL, pend[i].out, pend[i].detail);
		dlq_tally_progress(t, false);
		i++;
	}
	free(pend);
	free(back);
	cJSON_Delete(cl->ans);
	cl->ans = NULL;
	if (cJSON_GetArraySize(res) == 0)
		cJSON_Delete(fin);
	else
		finish_later(lane, c, fin);
}

static bool
more_to_send(int i, int n, const struct dlq_tally *t)
{
	return i < n && !dlq_stop_asked() && !t->blocked;
}

/* Claims, publishes and records the eligible ids a chunk at a time. The
 * lane claims the next chunk and records the last one's outcomes while
 * this one is published; with a --rate the next is claimed only once
 * this one went (a second's worth ahead at most). After an interrupt or
 * a block, what was claimed ahead is given back unsent. Returns once
 * every outcome is recorded. */
static void
send_ids(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, struct dlq_lane *lane, const int64_t *ids,
    int n, struct dlq_tally *t)
{
	struct claim cl[2];
	int cur = 0, i = 0;
	bool ahead;

	if (!more_to_send(i, n, t))
		return;
	claim_ask(lane, c, o, ids, n, &cl[cur]);
	for (;;) {
		i += claim_settled(lane, &cl[cur], t);
		ahead = o->rate == 0 && more_to_send(i, n, t);
		if (ahead)
			claim_ask(lane, c, o, ids + i, n - i, &cl[1 - cur]);
		publish_claims(c, o, pub, lane, &cl[cur], t);
		if (!ahead) {
			if (!more_to_send(i, n, t))
				break;
			claim_ask(lane, c, o, ids + i, n - i, &cl[1 - cur]);
		}
		cur = 1 - cur;
	}
	dlq_lane_drain(lane);
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
	if ((ans = dlq_replay_ask(c, req, why, sizeof(why), NULL)) == NULL) {
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
    struct dlq_tally *t)
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

/* An executed replay's refusals go to the audit with their ids and
 * reasons: the policy said no, and the record says so. */
static void
note_refusals(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_tally *t)
{
	char res[120], why[512];

	if (t->refusals == NULL || t->refused == 0)
		return;
	snprintf(res, sizeof(res), "refused %zu of %zu selected", t->refused,
	    t->total);
	if (dlq_tally_note(c, o, "replay --execute: refused by the policy", res, t, why,
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
		if (strcmp(dlq_tally_str(i, "why"), DLQ_NOT_IN_ARCHIVE) == 0)
			return true;
	return false;
}

static int
run_archive(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	struct dlq_publisher *pub = NULL;
	struct dlq_lane *lane = NULL;
	struct dlq_tally t;
	cJSON *req, *plan, *item;
	int64_t *ids;
	char why[512];
	int n = 0, i, k, rc;

	dlq_tally_init(&t);
	req = cJSON_Duplicate(o->select, 1);
	cJSON_AddStringToObject(req, "cmd", "replay_plan");
	cJSON_AddNumberToObject(req, "limit", (double)o->limit);
	dlq_replay_add_options(req, o);
	if ((plan = dlq_replay_ask(c, req, why, sizeof(why), &rc)) == NULL) {
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
			dlq_tally_refuse(&t, (int64_t)cJSON_GetObjectItem(item,
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
	if (n > 0 && (lane = dlq_lane_open()) == NULL) {
		fprintf(stderr, "dlqctl: out of memory; nothing was sent\n");
		goto out;
	}
	t.start_ms = dlq_now_ms();
	i = 0;
	if (o->canary > 0 && n > 0) {
		int64_t from = dlq_wall_ms();

		k = o->canary < n ? (int)o->canary : n;
		send_ids(c, o, pub, lane, ids, k, &t);
		if (!dlq_stop_asked() && !t.blocked &&
		    !watch_canary(c, o, cJSON_GetObjectItem(plan, "data"), ids,
		    k, n - k, from, &t))
			n = k;	/* stop: the rest stays untouched */
		i = k;
	}
	send_ids(c, o, pub, lane, ids + i, n - i, &t);
	rc = dlq_tally_summary(&t, o->json);
	note_refusals(c, o, &t);
	if (rc == DLQ_EXIT_CONFLICT && unknown_ids(plan))
		rc = DLQ_EXIT_ERROR;
out:
	free(ids);
	cJSON_Delete(t.refusals);
	cJSON_Delete(t.results);
	cJSON_Delete(t.canary);
	cJSON_Delete(plan);
	dlq_lane_close(lane);
	dlq_publisher_close(pub);
	return rc;
}

int
dlq_replay_run(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	/* ^C, a closed terminal or a kill: stop after the current message,
	 * give back what was claimed and not sent, print the summary */
	dlq_stop_catch(false);
	signal(SIGPIPE, SIG_IGN);
	return o->from_queue ? dlq_replay_live(c, o) : run_archive(c, o);
}
