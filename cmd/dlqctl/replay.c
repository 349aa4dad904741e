/* dlqctl's replay (from the archive or, live, from a queue) and the
 * worker's automatic redrive: status and resume. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctlargs.h"
#include "ctlclient.h"
#include "ctlview.h"
#include "replayrun.h"
#include "topology.h"

#include "dlqctl.h"

/* An exchange, queue or routing key travels as an AMQP short string. */
static bool
fits_amqp(const char *option, const char *name)
{
	if (name == NULL || strlen(name) <= 255)
		return true;
	fprintf(stderr, "dlqctl: --%s: too long: %zu bytes, at most 255 (an "
	    "AMQP name)\n", option, strlen(name));
	return false;
}

/* --from-queue reads dead letters live: not from a queue of live work
 * (a work or retry queue of the topology), nor from a DLQ the worker
 * consumes into the archive, which the archive replays. */
static bool
from_queue_holds_dead_letters(const struct dlqctl *x, const char *q)
{
	const struct dlq_queue *t;
	size_t i;

	for (i = 0; q != NULL && i < x->top->n_queues; i++) {
		t = &x->top->queues[i];
		if (strcmp(q, t->name) == 0 || (t->retry_name != NULL &&
		    strcmp(q, t->retry_name) == 0)) {
			fprintf(stderr, "dlqctl: --from-queue: %s is a work "
			    "queue of the topology: its messages are live work, "
			    "not dead letters (its DLQ is %s)\n", q,
			    t->dlq_name);
			return false;
		}
		if (strcmp(q, t->dlq_name) == 0 && t->monitored) {
			fprintf(stderr, "dlqctl: --from-queue: the worker "
			    "consumes %s into the archive: replay its dead "
			    "letters from there with --queue %s\n", q, t->name);
			return false;
		}
	}
	return true;
}

/* A replay into a DLQ of the topology (through the dead-letter exchange,
 * or the default exchange with a DLQ's name) would not be a new attempt:
 * the copy would die at once, archived again as a dead letter. */
static bool
target_is_not_a_dlq(const struct dlqctl *x, const char *exchange,
    const char *key)
{
	const struct dlq_queue *q;

	if (exchange == NULL)
		return true;
	if (strcmp(exchange, x->top->dead_letter_exchange) == 0) {
		fprintf(stderr, "dlqctl: --to-exchange: %s is the dead-letter "
		    "exchange: what is published there goes into a DLQ, not "
		    "back to work (the work exchange is %s)\n", exchange,
		    x->top->work_exchange);
		return false;
	}
	q = *exchange == '\0' ? dlq_topology_find(x->top, key) : NULL;
	if (q != NULL && strcmp(key, q->dlq_name) == 0) {
		fprintf(stderr, "dlqctl: --routing-key: %s is a DLQ: a replay "
		    "goes back to work, e.g. --routing-key %s\n", key, q->name);
		return false;
	}
	return true;
}

int
cmd_replay(struct dlqctl *x, int argc, char **argv)
{
	struct dlq_replay_opts o;
	cJSON *r = cJSON_CreateObject(), *v;
	int rc = DLQ_EXIT_USAGE;

	memset(&o, 0, sizeof(o));
	if (!dlq_args_options(r, argc, argv, "queue class signature since "
	    "limit rate reason evidence to-exchange routing-key reset-retries "
	    "execute force from-queue canary watch"))
		goto out;
	if (optind < argc && !dlq_args_ids(r, argc, argv))
		goto out;
	o.reason = dlq_args_str(r, "reason");
	o.evidence = dlq_args_str(r, "evidence");
	o.to_exchange = dlq_args_str(r, "to_exchange");
	o.routing_key = dlq_args_str(r, "routing_key");
	o.from_queue = dlq_args_str(r, "from_queue");
	o.execute = cJSON_IsTrue(cJSON_GetObjectItem(r, "execute"));
	o.force = cJSON_IsTrue(cJSON_GetObjectItem(r, "force"));
	o.reset_retries = cJSON_IsTrue(cJSON_GetObjectItem(r, "reset_retries"));
	o.json = x->json;
	v = cJSON_GetObjectItem(r, "limit");
	o.limit = cJSON_IsNumber(v) ? (int64_t)v->valuedouble :
	    x->cfg.replay_limit;
	v = cJSON_GetObjectItem(r, "ids");
	if (cJSON_GetArraySize(v) > o.limit) {
		fprintf(stderr, "dlqctl: %d archive ids, more than the limit of "
		    "%lld (--limit, or replay.limit): give --limit %d to "
		    "replay them all\n", cJSON_GetArraySize(v),
		    (long long)o.limit, cJSON_GetArraySize(v));
		goto out;
	}
	v = cJSON_GetObjectItem(r, "rate");
	o.rate = cJSON_IsNumber(v) ? (int64_t)v->valuedouble :
	    x->cfg.replay_rate;
	v = cJSON_GetObjectItem(r, "canary");
	o.canary = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
	v = cJSON_GetObjectItem(r, "watch_ms");
	o.watch_ms = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
	if ((o.canary > 0) != (o.watch_ms > 0)) {
		fprintf(stderr, "dlqctl: --canary K and --watch DUR go "
		    "together\n");
		goto out;
	}
	if (o.canary > 0 && o.from_queue != NULL) {
		fprintf(stderr, "dlqctl: --canary works on archived dead letters, "
		    "not with --from-queue\n");
		goto out;
	}
	if (o.execute && o.reason == NULL) {
		fprintf(stderr, "dlqctl: --execute needs --reason TEXT\n");
		goto out;
	}
	if (o.force && o.reason == NULL) {
		fprintf(stderr, "dlqctl: --force needs --reason TEXT\n");
		goto out;
	}
	if ((o.to_exchange != NULL) != (o.routing_key != NULL)) {
		fprintf(stderr, "dlqctl: --to-exchange and --routing-key go "
		    "together\n");
		goto out;
	}
	if (!fits_amqp("to-exchange", o.to_exchange) ||
	    !fits_amqp("routing-key", o.routing_key) ||
	    !fits_amqp("from-queue", o.from_queue) ||
	    !from_queue_holds_dead_letters(x, o.from_queue) ||
	    !target_is_not_a_dlq(x, o.to_exchange, o.routing_key))
		goto out;
	if (cJSON_HasObjectItem(r, "ids") + dlqctl_selects(r) +
	    (o.from_queue != NULL) != 1) {
		fprintf(stderr, "dlqctl: replay needs one of: archive ids, "
		    "--queue Q, --signature SIG or --from-queue Q\n");
		goto out;
	}
	if (!dlqctl_narrows_a_selection(r))
		goto out;
	dlqctl_note_unknown_queue(x, r);
	o.select = cJSON_CreateObject();
	if (cJSON_HasObjectItem(r, "ids"))
		cJSON_AddItemReferenceToObject(o.select, "ids",
		    cJSON_GetObjectItem(r, "ids"));
	else {
		if (dlq_args_str(r, "queue"))
			cJSON_AddStringToObject(o.select, "queue",
			    dlq_args_str(r, "queue"));
		if (dlq_args_str(r, "class"))
			cJSON_AddStringToObject(o.select, "class",
			    dlq_args_str(r, "class"));
		if (dlq_args_str(r, "signature"))
			cJSON_AddStringToObject(o.select, "signature",
			    dlq_args_str(r, "signature"));
		if ((v = cJSON_GetObjectItem(r, "since_ms")) != NULL)
			cJSON_AddNumberToObject(o.select, "since_ms",
			    v->valuedouble);
	}
	rc = dlq_replay_run(&x->cfg, &o);
	cJSON_Delete(o.select);
out:
	cJSON_Delete(r);
	return rc;
}

static void
view_resumed(FILE *f, const cJSON *d, int64_t now)
{
	(void)now;
	/* none resumed: the error says why */
	if (cJSON_GetNumberValue(cJSON_GetObjectItem(d, "resumed")) > 0)
		fputs("redrive resumed: the next tick redrives again\n", f);
}

int
cmd_redrive_status(struct dlqctl *x, int argc, char **argv)
{
	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	return dlqctl_call(x, dlq_ctl_request("redrive_status"),
	    dlq_view_redrive);
}

int
cmd_redrive_resume(struct dlqctl *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("redrive_resume");

	if (!dlq_args_options(r, argc, argv, "reason") ||
	    !dlq_args_done(optind + 1, argc, argv) ||
	    !dlq_args_require(r, argv[0], "reason") ||
	    !dlq_args_has(optind, argc, argv, "a queue")) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	cJSON_AddStringToObject(r, "queue", argv[optind]);
	return dlqctl_call(x, r, view_resumed);
}
