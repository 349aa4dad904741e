/* dlqctl - the operator's command line for dlq-monitor.
 * A table of commands, each short, each calling into internal/. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "alert.h"
#include "amqp.h"
#include "buf.h"
#include "ctlargs.h"
#include "ctlclient.h"
#include "ctlhelp.h"
#include "ctlselect.h"
#include "ctlview.h"
#include "inject.h"
#include "replayrun.h"
#include "cli.h"
#include "config.h"
#include "control.h"
#include "log.h"
#include "topology.h"
#include "worker.h"

struct ctx {
	struct dlq_config	 cfg;
	struct dlq_topology	*top;
	bool			 json;
};

struct cmd {
	const char	*name;
	int		(*run)(struct ctx *, int, char **);
	const char	*usage;
};

static int
cmd_topology_show(struct ctx *x, int argc, char **argv)
{
	const struct dlq_queue *q;
	struct dlq_buf b;
	size_t i;

	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	if (!x->json) {
		for (i = 0; i < x->top->n_queues; i++)
			if (x->top->queues[i].monitored)
				puts(x->top->queues[i].dlq_name);
		return DLQ_EXIT_OK;
	}
	dlq_buf_init(&b);
	dlq_buf_adds(&b, "{\"work_exchange\":");
	dlq_buf_json_cstr(&b, x->top->work_exchange);
	dlq_buf_adds(&b, ",\"dead_letter_exchange\":");
	dlq_buf_json_cstr(&b, x->top->dead_letter_exchange);
	dlq_buf_adds(&b, ",\"dlq_suffix\":");
	dlq_buf_json_cstr(&b, x->top->dlq_suffix);
	dlq_buf_adds(&b, ",\"queues\":[");
	for (i = 0; i < x->top->n_queues; i++) {
		q = &x->top->queues[i];
		dlq_buf_adds(&b, i ? ",{\"name\":" : "{\"name\":");
		dlq_buf_json_cstr(&b, q->name);
		dlq_buf_adds(&b, ",\"dlq\":");
		dlq_buf_json_cstr(&b, q->dlq_name);
		dlq_buf_adds(&b, ",\"retry\":");
		dlq_buf_json_cstr(&b, q->retry_name);
		dlq_buf_printf(&b, ",\"type\":\"%s\",\"retry_delay_ms\":%lld,"
		    "\"max_retries\":%lld,\"delivery_limit\":%lld,"
		    "\"dead_letter_strategy\":\"%s\",\"monitored\":%s}",
		    q->type == DLQ_QUEUE_QUORUM ? "quorum" : "classic",
		    (long long)q->retry_delay_ms, (long long)q->max_retries,
		    (long long)q->delivery_limit,
		    q->at_least_once ? "at-least-once" : "at-most-once",
		    q->monitored ? "true" : "false");
	}
	dlq_buf_adds(&b, "]}\n");
	fputs(b.data, stdout);
	dlq_buf_release(&b);
	return DLQ_EXIT_OK;
}

static int
cmd_topology_assert(struct ctx *x, int argc, char **argv)
{
	struct dlq_assert_result res;
	char why[512];

	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	if (dlq_topology_apply(&x->cfg, x->top, &res, why, sizeof(why)) !=
	    DLQ_AMQP_OK) {
		fprintf(stderr, "dlqctl: %s\n", why);
		return DLQ_EXIT_ERROR;
	}
	if (x->json)
		printf("{\"declared\":%u,\"conflicts\":%u,\"errors\":%u}\n",
		    res.declared, res.conflicts, res.errors);
	else
		printf("topology asserted: %zu queues (%zu monitored), "
		    "%u declarations, %u conflicts, %u errors\n",
		    x->top->n_queues, dlq_topology_monitored(x->top),
		    res.declared, res.conflicts, res.errors);
	return res.conflicts || res.errors ? DLQ_EXIT_CONFLICT : DLQ_EXIT_OK;
}

static int
cmd_test_alert(struct ctx *x, int argc, char **argv)
{
	int failed;

	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return DLQ_EXIT_ERROR;
	failed = dlq_alert_test(&x->cfg, stdout);
	curl_global_cleanup();
	return failed ? DLQ_EXIT_ERROR : DLQ_EXIT_OK;
}

/* Sends `req` (consumed) to the worker; prints the answer's data with
 * `view`, or as JSON with --json. Returns the exit code. */
static int
call(struct ctx *x, cJSON *req, void (*view)(FILE *, const cJSON *, int64_t))
{
	const cJSON *data;
	char why[512], *text;
	cJSON *ans;
	int rc = DLQ_EXIT_OK;

	ans = dlq_ctl_call(x->cfg.control_socket, req, why, sizeof(why));
	cJSON_Delete(req);
	if (ans == NULL) {
		fprintf(stderr, "dlqctl: %s\n", why);
		return DLQ_EXIT_ERROR;
	}
	data = cJSON_GetObjectItemCaseSensitive(ans, "data");
	if (data != NULL && !cJSON_IsNull(data)) {
		if (x->json) {
			text = cJSON_PrintUnformatted(data);
			puts(text);
			cJSON_free(text);
		} else
			view(stdout, data, dlq_wall_ms());
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "ok")))
		rc = dlq_ctl_refusal(ans);
	cJSON_Delete(ans);
	return rc;
}

static void
view_stats(FILE *f, const cJSON *d, int64_t now)
{
	(void)now;
	dlq_view_stats(f, d);
}

static void
view_assigned(FILE *f, const cJSON *d, int64_t now)
{
	(void)now;
	dlq_view_changes(f, d, "assigned");
}

static void
view_dropped(FILE *f, const cJSON *d, int64_t now)
{
	(void)now;
	dlq_view_changes(f, d, "dropped");
}

static void
view_purged(FILE *f, const cJSON *d, int64_t now)
{
	(void)now;
	fprintf(f, "purged the payloads of %lld records\n", (long long)
	    cJSON_GetObjectItemCaseSensitive(d, "purged")->valuedouble);
}


/* A --queue that the topology does not know is most likely mistyped: the
 * answer (often empty) comes with a note saying so. */
static void
note_unknown_queue(const struct ctx *x, const cJSON *r)
{
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(r, "queue");

	if (cJSON_IsString(q) && dlq_topology_find(x->top, q->valuestring) ==
	    NULL)
		fprintf(stderr, "dlqctl: note: '%s' is not a queue of the "
		    "topology (dlqctl topology show lists them)\n",
		    q->valuestring);
}

static int64_t page_limit;	/* what a list or audit asked for */

/* Where the next page starts, when the answer may not be all. */
static void
page_note(const cJSON *d)
{
	const cJSON *last = cJSON_GetArrayItem(d, cJSON_GetArraySize(d) - 1);

	if (cJSON_GetArraySize(d) == page_limit && last != NULL)
		fprintf(stderr, "dlqctl: the newest %lld shown; the next page "
		    "(if any): --before %lld\n", (long long)page_limit,
		    (long long)cJSON_GetNumberValue(cJSON_GetObjectItem(last,
		    "id")));
}

static void
set_page_limit(const cJSON *r)
{
	const cJSON *limit = cJSON_GetObjectItemCaseSensitive(r, "limit");

	page_limit = limit != NULL ? (int64_t)limit->valuedouble :
	    DLQ_CONTROL_LIST_DEFAULT;
}

static void
view_list(FILE *f, const cJSON *d, int64_t now)
{
	dlq_view_list(f, d, now);
	page_note(d);
}

static void
view_audit(FILE *f, const cJSON *d, int64_t now)
{
	dlq_view_audit(f, d, now);
	page_note(d);
}

/* Groups come largest first: when `limit` came, there may be smaller. */
static void
view_groups(FILE *f, const cJSON *d, int64_t now)
{
	dlq_view_groups(f, d, now);
	if (cJSON_GetArraySize(d) == page_limit)
		fprintf(stderr, "dlqctl: the largest %lld shown; --limit N for "
		    "more\n", (long long)page_limit);
}

static int
cmd_list(struct ctx *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("list");

	if (!dlq_args_options(r, argc, argv, "queue status class signature since "
	    "limit before message-id correlation-id") ||
	    !dlq_args_done(optind, argc, argv)) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	note_unknown_queue(x, r);
	set_page_limit(r);
	return call(x, r, view_list);
}

static int
cmd_show(struct ctx *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("show"), *ids;

	if (!dlq_args_options(r, argc, argv, "payload") ||
	    !dlq_args_done(optind + 1, argc, argv) || !dlq_args_ids(r, argc, argv)) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	ids = cJSON_DetachItemFromObjectCaseSensitive(r, "ids");
	cJSON_AddNumberToObject(r, "id", cJSON_GetArrayItem(ids, 0)->valuedouble);
	cJSON_Delete(ids);
	return call(x, r, dlq_view_show);
}

static int
cmd_stats(struct ctx *x, int argc, char **argv)
{
	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	return call(x, dlq_ctl_request("stats"), view_stats);
}

static int
cmd_groups(struct ctx *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("groups");

	if (!dlq_args_options(r, argc, argv, "queue since limit") ||
	    !dlq_args_done(optind, argc, argv)) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	note_unknown_queue(x, r);
	set_page_limit(r);
	return call(x, r, view_groups);
}

/* --class, --signature and --since narrow a --queue selection; alone
 * they would select across every queue. */
static bool
narrows_a_queue(const cJSON *r)
{
	if (!cJSON_HasObjectItem(r, "queue") && (cJSON_HasObjectItem(r,
	    "class") || cJSON_HasObjectItem(r, "signature") ||
	    cJSON_HasObjectItem(r, "since_ms"))) {
		fprintf(stderr, "dlqctl: --class, --signature and --since narrow "
		    "a --queue selection\n");
		return false;
	}
	return true;
}

/* The common part of drop and assign: archive ids, or a --queue
 * selection (then run here, and *done is set). Returns an exit code;
 * 0 with *done false: `r` holds ids, for the caller's request. */
static int
ids_or_selection(struct ctx *x, cJSON *r, const char *cmd,
    const char *const *copy, const char *verb, bool *done)
{
	*done = false;
	if (!narrows_a_queue(r))
		return DLQ_EXIT_USAGE;
	if (cJSON_HasObjectItem(r, "ids") == cJSON_HasObjectItem(r, "queue")) {
		fprintf(stderr, "dlqctl: %s needs one of: archive ids or --queue "
		    "Q\n", cmd);
		return DLQ_EXIT_USAGE;
	}
	if (!cJSON_HasObjectItem(r, "queue")) {
		if (cJSON_HasObjectItem(r, "limit")) {
			fprintf(stderr, "dlqctl: --limit caps a --queue "
			    "selection\n");
			return DLQ_EXIT_USAGE;
		}
		return DLQ_EXIT_OK;
	}
	*done = true;
	note_unknown_queue(x, r);
	return dlq_select_change(x->cfg.control_socket, x->json, r, cmd, copy,
	    verb);
}

static int
cmd_assign(struct ctx *x, int argc, char **argv)
{
	static const char *const copy[] = { "owner", "decision",
	    "escalate_in_ms", "evidence", NULL };
	cJSON *r = dlq_ctl_request("assign");
	int rc = DLQ_EXIT_USAGE;
	bool done;

	if (!dlq_args_options(r, argc, argv, "owner decision escalate-in evidence "
	    "yes queue class signature since limit") || (optind < argc &&
	    !dlq_args_ids(r, argc, argv)) || !dlq_args_require(r, argv[0], "owner decision"))
		goto out;
	if ((rc = ids_or_selection(x, r, "assign", copy, "assigned", &done)) !=
	    DLQ_EXIT_OK || done)
		goto out;
	return call(x, r, view_assigned);
out:
	cJSON_Delete(r);
	return rc;
}

static int
cmd_drop(struct ctx *x, int argc, char **argv)
{
	static const char *const copy[] = { "reason", NULL };
	cJSON *r = dlq_ctl_request("drop");
	int n, rc = DLQ_EXIT_USAGE;
	bool done;

	if (!dlq_args_options(r, argc, argv, "reason yes queue class signature since "
	    "limit") || (optind < argc && !dlq_args_ids(r, argc, argv)) ||
	    !dlq_args_require(r, argv[0], "reason"))
		goto out;
	if ((rc = ids_or_selection(x, r, "drop", copy, "dropped", &done)) !=
	    DLQ_EXIT_OK || done)
		goto out;
	n = cJSON_GetArraySize(cJSON_GetObjectItem(r, "ids"));
	if (n > 1 && !cJSON_IsTrue(cJSON_GetObjectItem(r, "yes"))) {
		fprintf(stderr, "dlqctl: this would drop %d dead letters; run "
		    "again with --yes to do it\n", n);
		rc = DLQ_EXIT_USAGE;
		goto out;
	}
	return call(x, r, view_dropped);
out:
	cJSON_Delete(r);
	return rc;
}

static int
cmd_purge(struct ctx *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("purge");

	if (!dlq_args_options(r, argc, argv, "older-than") ||
	    !dlq_args_done(optind, argc, argv) ||
	    !dlq_args_require(r, argv[0], "older-than")) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	return call(x, r, view_purged);
}

static int
cmd_audit(struct ctx *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("audit");

	if (!dlq_args_options(r, argc, argv, "since actor command limit "
	    "before") || !dlq_args_done(optind, argc, argv)) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	set_page_limit(r);
	return call(x, r, view_audit);
}

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
from_queue_holds_dead_letters(const struct ctx *x, const char *q)
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

static int
cmd_replay(struct ctx *x, int argc, char **argv)
{
	struct dlq_replay_opts o;
	cJSON *r = cJSON_CreateObject(), *v;
	int rc = DLQ_EXIT_USAGE;

	memset(&o, 0, sizeof(o));
	if (!dlq_args_options(r, argc, argv, "queue class signature since limit rate "
	    "reason evidence to-exchange routing-key reset-retries execute "
	    "force from-queue canary watch"))
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
	o.rate = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : x->cfg.replay_rate;
	v = cJSON_GetObjectItem(r, "canary");
	o.canary = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
	v = cJSON_GetObjectItem(r, "watch_ms");
	o.watch_ms = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
	if (o.canary > 1000) {
		fprintf(stderr, "dlqctl: --canary is a small first batch: at most "
		    "1000\n");
		goto out;
	}
	if ((o.canary > 0) != (o.watch_ms > 0)) {
		fprintf(stderr, "dlqctl: --canary K and --watch DUR go together\n");
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
	    !from_queue_holds_dead_letters(x, o.from_queue))
		goto out;
	if (cJSON_HasObjectItem(r, "ids") + cJSON_HasObjectItem(r, "queue") +
	    (o.from_queue != NULL) != 1) {
		fprintf(stderr, "dlqctl: replay needs one of: archive ids, "
		    "--queue Q or --from-queue Q\n");
		goto out;
	}
	if (!narrows_a_queue(r))
		goto out;
	note_unknown_queue(x, r);
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

static int
cmd_redrive_status(struct ctx *x, int argc, char **argv)
{
	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	return call(x, dlq_ctl_request("redrive_status"), dlq_view_redrive);
}

static int
cmd_redrive_resume(struct ctx *x, int argc, char **argv)
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
	return call(x, r, view_resumed);
}

static int
cmd_inject(struct ctx *x, int argc, char **argv)
{
	cJSON *r = cJSON_CreateObject(), *n, *k;
	int rc = DLQ_EXIT_USAGE;

	if (!dlq_args_options(r, argc, argv, "queue count error retries") ||
	    !dlq_args_done(optind, argc, argv) || !dlq_args_require(r, argv[0], "queue"))
		goto out;
	n = cJSON_GetObjectItem(r, "count");
	k = cJSON_GetObjectItem(r, "retries");
	rc = dlq_inject(&x->cfg, x->top, dlq_args_str(r, "queue"),
	    n ? (int)n->valuedouble : 10, dlq_args_str(r, "error") ?
	    dlq_args_str(r, "error") : "upstream timeout after 30000 ms (demo)",
	    k ? (int)k->valuedouble : 0, stdout) == 0 ? DLQ_EXIT_OK :
	    DLQ_EXIT_ERROR;
out:
	cJSON_Delete(r);
	return rc;
}

static const struct cmd cmds[] = {
	{ "list", cmd_list, "list [--queue Q] [--status S] [--class C] "
	    "[--message-id ID] [--correlation-id ID] "
	    "[--signature SIG] [--since DUR] [--limit N] [--before ID]" },
	{ "show", cmd_show, "show ID [--payload]" },
	{ "stats", cmd_stats, "stats" },
	{ "groups", cmd_groups, "groups [--queue Q] [--since DUR] [--limit N]" },
	{ "assign", cmd_assign, "assign (ID... | --queue Q [--class C] "
	    "[--signature SIG] [--since DUR] [--limit N]) --owner NAME "
	    "--decision TEXT [--escalate-in DUR] [--evidence TEXT] [--yes]" },
	{ "drop", cmd_drop, "drop (ID... | --queue Q [--class C] [--signature "
	    "SIG] [--since DUR] [--limit N]) --reason TEXT [--yes]" },
	{ "purge", cmd_purge, "purge --older-than DUR" },
	{ "replay", cmd_replay, "replay (ID... | --queue Q [--class C] "
	    "[--signature SIG] [--since DUR] | --from-queue Q) [--limit N] "
	    "[--rate R] [--reason TEXT] [--evidence TEXT] [--to-exchange X "
	    "--routing-key K] [--reset-retries] [--force] [--canary K --watch "
	    "DUR] [--execute]" },
	{ "redrive status", cmd_redrive_status, "redrive status" },
	{ "redrive resume", cmd_redrive_resume, "redrive resume QUEUE "
	    "--reason TEXT" },
	{ "audit", cmd_audit, "audit [--since DUR] [--actor USER] [--command CMD] "
	    "[--limit N] [--before ID]" },
	{ "topology show", cmd_topology_show, "topology show" },
	{ "topology assert", cmd_topology_assert, "topology assert" },
	{ "test-alert", cmd_test_alert, "test-alert" },
	{ "inject", cmd_inject, "inject --queue Q [--count N] [--error TEXT] "
	    "[--retries K]" },
};

#define NCMDS	(sizeof(cmds) / sizeof(cmds[0]))

static void
usage(FILE *f)
{
	size_t i;

	fputs("usage: dlqctl [-c FILE] [--json] [--timeout DUR] COMMAND "
	    "[ARGS]\n"
	    "       dlqctl help [COMMAND]   (or COMMAND --help)\n"
	    "DUR is a number with a unit: 500ms, 90s, 15m, 2h, 7d, 1w\n", f);
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  dlqctl %s\n", cmds[i].usage);
}

/* Finds the command whose words start argv; *used = words consumed. */
static const struct cmd *
lookup(int argc, char **argv, int *used)
{
	char name[64];
	size_t i;

	for (i = 0; i < NCMDS; i++) {
		if (argc >= 2) {
			snprintf(name, sizeof(name), "%s %s", argv[0], argv[1]);
			if (strcmp(name, cmds[i].name) == 0) {
				*used = 2;
				return &cmds[i];
			}
		}
		if (argc >= 1 && strcmp(argv[0], cmds[i].name) == 0) {
			*used = 1;
			return &cmds[i];
		}
	}
	return NULL;
}

/* Whether a command of two words ("topology show") begins with word. */
static bool
in_group(const struct cmd *c, const char *word)
{
	size_t len = strlen(word);

	return strncmp(c->name, word, len) == 0 && c->name[len] == ' ';
}

/* Says what is wrong with a command line lookup() found nothing in: for
 * a group's first word ("topology frob", "redrive"), its subcommands. */
static void
unknown_command(int argc, char **argv)
{
	size_t i, n = 0;

	if (argc == 0) {
		usage(stderr);
		return;
	}
	for (i = 0; i < NCMDS; i++)
		if (in_group(&cmds[i], argv[0]))
			n++;
	if (n == 0) {
		fprintf(stderr, "dlqctl: unknown command '%s'\n", argv[0]);
		usage(stderr);
		return;
	}
	if (argc > 1)
		fprintf(stderr, "dlqctl: unknown %s command '%s'\n", argv[0],
		    argv[1]);
	else
		fprintf(stderr, "dlqctl: %s needs a command\n", argv[0]);
	for (i = 0; i < NCMDS; i++)
		if (in_group(&cmds[i], argv[0]))
			fprintf(stderr, "usage: dlqctl %s\n", cmds[i].usage);
}

/* `dlqctl help [COMMAND]` and `dlqctl COMMAND --help` (or -h, `asked`):
 * the usage on stdout, exit 0, without a configuration. Returns -1 when
 * the command line asks for no help. */
static int
help(int argc, char **argv, bool asked)
{
	const struct cmd *cmd;
	int used, n = 0;
	size_t k;

	if (argc > 0 && strcmp(argv[0], "help") == 0) {
		argc--;
		argv++;
		if (argc == 0) {
			usage(stdout);
			return DLQ_EXIT_OK;
		}
		asked = true;
	}
	if (!asked)
		return -1;
	if ((cmd = lookup(argc, argv, &used)) != NULL) {
		printf("usage: dlqctl %s\n", cmd->usage);
		if (dlq_ctl_help(cmd->name) != NULL)
			printf("\n%s", dlq_ctl_help(cmd->name));
		return DLQ_EXIT_OK;
	}
	for (k = 0; argc == 1 && k < NCMDS; k++)	/* "help topology" */
		if (in_group(&cmds[k], argv[0])) {
			printf("usage: dlqctl %s\n", cmds[k].usage);
			n++;
		}
	if (n > 0)
		return DLQ_EXIT_OK;
	unknown_command(argc, argv);
	return DLQ_EXIT_USAGE;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd *cmd;
	const char *path = NULL;
	struct ctx x = { .json = false };
	int ch, used = 0, rc;
	int64_t timeout;
	bool asked;

	/* "+": options after the command belong to the command */
	while ((ch = getopt_long(argc, argv, "+c:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 'j': x.json = true; break;
		case 't':
			timeout = dlq_parse_duration(optarg);
			if (timeout == DLQ_DURATION_TOO_LONG) {
				fprintf(stderr, "dlqctl: --timeout: too long: "
				    "'%s' (at most 3650d; 0s: no limit)\n", optarg);
				return DLQ_EXIT_USAGE;
			}
			if (timeout < 0) {
				fprintf(stderr, "dlqctl: --timeout: bad duration "
				    "'%s' (e.g. 30s, 10m; 0s: no limit)\n", optarg);
				return DLQ_EXIT_USAGE;
			}
			dlq_ctl_set_timeout(timeout);
			break;
		case 'h': usage(stdout); return DLQ_EXIT_OK;
		case 'V': puts("dlqctl " DLQ_VERSION); return DLQ_EXIT_OK;
		default: usage(stderr); return DLQ_EXIT_USAGE;
		}
	}
	argc -= optind;
	argv += optind;
	/* --json and --help are also accepted after the command */
	asked = dlq_args_take_global(&argc, argv, &x.json);
	if ((rc = help(argc, argv, asked)) != -1)
		return rc;
	if ((cmd = lookup(argc, argv, &used)) == NULL) {
		unknown_command(argc, argv);
		return DLQ_EXIT_USAGE;
	}
	dlq_log_set_fd(2);
	if (dlq_cli_load(path, &x.cfg, &x.top) == -1) {
		/* the worker's file holds secrets: operators often may not
		 * read it, and the archive commands need only the socket */
		if (path != NULL && access(path, R_OK) == -1 && errno == EACCES)
			fprintf(stderr, "dlqctl: the worker's configuration is "
			    "not readable for you; the archive commands need "
			    "only its socket: leave out -c and set "
			    "DLQ_CONTROL_SOCKET if it is not %s\n",
			    DLQ_CONTROL_SOCKET_DEFAULT);
		return DLQ_EXIT_ERROR;
	}
	/* a command line prints results, not the daemon's info events */
	if (x.cfg.log_level < DLQ_LOG_WARN)
		dlq_log_set_level(DLQ_LOG_WARN);
	/* the command's name ("redrive resume") stands as argv[0] for its
	 * option parser and its messages */
	argv[used - 1] = (char *)cmd->name;
	rc = cmd->run(&x, argc - used + 1, argv + used - 1);
	if (rc == DLQ_EXIT_USAGE)
		fprintf(stderr, "usage: dlqctl %s\n", cmd->usage);
	dlq_topology_free(x.top);
	dlq_config_release(&x.cfg);
	return rc;
}
