/* replaytally.c - a replay run's counts, its progress and summary, its
 * plan lines, and its notes in the worker's audit (replaytally.h). */
#include "replaytally.h"

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
#include "replay.h"
#include "replaytarget.h"
#include "stopsig.h"
#include "termtext.h"

#define REFUSALS_NOTED_MAX	(32 * 1024)	/* bytes of ids and reasons */

void
dlq_tally_init(struct dlq_tally *t)
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
void
dlq_tally_note_return(struct dlq_tally *t, int64_t deliveries)
{
	if (deliveries > t->delivery_count_max)
		t->delivery_count_max = deliveries;
}

static void
dlq_tally_returns_text(const struct dlq_tally *t)
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
const char *
dlq_tally_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* A dry run's targets, looked at on the broker. */
void
dlq_tally_look_targets(const struct dlq_config *c, struct dlq_tally *t)
{
	if (dlq_replay_targets_look(c, t->targets, t->unseen,
	    sizeof(t->unseen)) == 0)
		t->unseen[0] = '\0';
}

void
dlq_tally_targets_json(const struct dlq_tally *t, cJSON *out)
{
	if (t->targets == NULL)
		return;
	if (t->unseen[0] != '\0')
		cJSON_AddStringToObject(out, "targets_not_looked_at", t->unseen);
	else
		cJSON_AddItemReferenceToObject(out, "targets", t->targets);
}

void
dlq_tally_targets_text(const struct dlq_tally *t)
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
void
dlq_tally_refuse(struct dlq_tally *t, int64_t id, const char *message_id, const char *why)
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

void
dlq_tally_result(struct dlq_tally *t, int64_t id, const char *message_id,
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

void
dlq_tally_progress(const struct dlq_tally *t, bool end)
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
void
dlq_tally_pace(const struct dlq_tally *t, int64_t rate)
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
		dlq_term_put(stdout, dlq_tally_str(e, "reason"), -1, 0);
		putchar(' ');
		dlq_term_put(stdout, cJSON_IsString(cJSON_GetObjectItem(e,
		    "error")) ? cJSON_GetObjectItem(e, "error")->valuestring : "",
		    -1, 0);
		putchar('\n');
	}
}

int
dlq_tally_summary(const struct dlq_tally *t, bool json)
{
	cJSON *j, *w;
	char *text;
	size_t i;

	dlq_tally_progress(t, true);
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
		dlq_tally_targets_json(t, j);
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
			dlq_term_put(stdout, dlq_tally_str(w, "outcome"), -1, 0);
			printf(" #%lld: ", cJSON_HasObjectItem(w, "id") ?
			    (long long)cJSON_GetObjectItem(w, "id")->valuedouble :
			    0LL);
			dlq_term_put(stdout, cJSON_GetObjectItem(w,
			    "detail")->valuestring, -1, 0);
			putchar('\n');
		}
		if (t->canary != NULL)
			print_canary(t->canary);
		dlq_tally_targets_text(t);
		dlq_tally_returns_text(t);
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
cJSON *
dlq_replay_ask(const struct dlq_config *c, cJSON *req, char *why, size_t n, int *code)
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

void
dlq_replay_add_options(cJSON *r, const struct dlq_replay_opts *o)
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
void
dlq_tally_plan_line(const cJSON *i)
{
	const cJSON *why = cJSON_GetObjectItem(i, "why");
	const cJSON *rk = cJSON_GetObjectItem(i, "routing_key");
	char tgt[300];

	dlq_replay_target_name(dlq_tally_str(i, "exchange"), cJSON_IsString(rk) ?
	    rk->valuestring : "-", tgt, sizeof(tgt));
	if (cJSON_HasObjectItem(i, "id"))
		printf("%-8lld ", (long long)cJSON_GetObjectItem(i,
		    "id")->valuedouble);
	else {
		/* whole: two ids that differ only at their end must not
		 * look alike; a long one widens its row */
		dlq_term_put(stdout, dlq_tally_str(i, "message_id")[0] ? dlq_tally_str(i,
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
int
dlq_tally_note(const struct dlq_config *c, const struct dlq_replay_opts *o,
    const char *what, const char *result, struct dlq_tally *t, char *why,
    size_t n, char *actor, size_t actor_len)
{
	cJSON *req = cJSON_CreateObject(), *ans, *sel;
	const char *who;
	int rc;

	cJSON_AddStringToObject(req, "cmd", "audit_note");
	cJSON_AddStringToObject(req, "what", what);
	cJSON_AddStringToObject(req, "result", result);
	dlq_replay_add_options(req, o);
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
	if ((ans = dlq_replay_ask(c, req, why, n, &rc)) == NULL)
		return rc;
	if (actor != NULL) {
		who = cJSON_GetStringValue(cJSON_GetObjectItem(
		    cJSON_GetObjectItem(ans, "data"), "actor"));
		snprintf(actor, actor_len, "%s", who ? who : "unknown");
	}
	cJSON_Delete(ans);
	return DLQ_EXIT_OK;
}

