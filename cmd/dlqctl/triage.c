/* dlqctl's triage commands, each a request to the worker's control
 * socket: list, show, stats, groups, assign, drop, reopen, purge,
 * audit. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "ctlargs.h"
#include "ctlclient.h"
#include "ctlselect.h"
#include "ctlview.h"
#include "proto.h"
#include "jsonexact.h"
#include "log.h"
#include "topology.h"

#include "dlqctl.h"

/* Sends `req` (freed) to the worker: its answer, or NULL once said why
 * it did not come. `progress` (may be NULL) gets the progress lines of a
 * request that asks for them. */
static cJSON *
ask(const struct dlqctl *x, cJSON *req,
    void (*progress)(const cJSON *, void *))
{
	char why[512];
	cJSON *ans;

	ans = dlq_ctl_call_progress(x->cfg.control_socket, req, progress,
	    NULL, why, sizeof(why));
	cJSON_Delete(req);
	if (ans == NULL) {
		fprintf(stderr, "dlqctl: %s\n", why);
		if (x->json)
			dlq_ctl_error_json("unreachable", why);
	}
	return ans;
}

static void
put_json(const cJSON *data)
{
	char *text = dlq_json_print(data);

	puts(text != NULL ? text : "null");
	cJSON_free(text);
}

static void
copy_item(cJSON *to, const cJSON *from, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, key);

	if (v != NULL)
		cJSON_AddItemToObject(to, key, cJSON_Duplicate(v, 0));
}

/* dlqctl_call, with the request's progress lines to `progress`. */
static int
call_progress(struct dlqctl *x, cJSON *req,
    void (*view)(FILE *, const cJSON *, int64_t),
    void (*progress)(const cJSON *, void *))
{
	cJSON *ans, *data;
	int rc = DLQ_EXIT_OK;
	bool ok, shown;

	if ((ans = ask(x, req, progress)) == NULL)
		return DLQ_EXIT_ERROR;
	data = cJSON_GetObjectItemCaseSensitive(ans, "data");
	ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "ok"));
	shown = data != NULL && !cJSON_IsNull(data);
	if (shown && x->json) {
		/* one JSON answer: a change by ids that failed for some says
		 * so beside each id's result */
		if (!ok && cJSON_IsObject(data)) {
			cJSON_AddFalseToObject(data, "ok");
			copy_item(data, ans, "code");
			copy_item(data, ans, "error");
		}
		put_json(data);
	} else if (shown)
		view(stdout, data, dlq_wall_ms());
	/* what the view listed id by id is not said again */
	if (!ok)
		rc = shown && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(data,
		    "results")) ? dlq_ctl_exit_code(ans) :
		    dlq_ctl_refusal(ans, x->json && !shown);
	cJSON_Delete(ans);
	return rc;
}

int
dlqctl_call(struct dlqctl *x, cJSON *req,
    void (*view)(FILE *, const cJSON *, int64_t))
{
	return call_progress(x, req, view, NULL);
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
view_reopened(FILE *f, const cJSON *d, int64_t now)
{
	(void)now;
	dlq_view_changes(f, d, "reopened");
}

/* A purge's cutoff, to the minute: "2026-11-04 05:20 UTC". */
static const char *
purge_cutoff(const cJSON *d, char *out, size_t n)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(d, "before_ms");
	time_t t = cJSON_IsNumber(v) ? (time_t)(v->valuedouble / 1000) : 0;
	struct tm tm;

	if (!cJSON_IsNumber(v) || gmtime_r(&t, &tm) == NULL ||
	    strftime(out, n, "%Y-%m-%d %H:%M UTC", &tm) == 0)
		snprintf(out, n, "the cutoff");
	return out;
}

static void
view_purged(FILE *f, const cJSON *d, int64_t now)
{
	long long n = (long long)cJSON_GetObjectItemCaseSensitive(d,
	    "purged")->valuedouble;
	char when[40];

	(void)now;
	fprintf(f, "purged the payloads of %lld resolved record%s received "
	    "before %s\n", n, n == 1 ? "" : "s", purge_cutoff(d, when,
	    sizeof(when)));
}

/* A --queue that the topology does not know is most likely mistyped: the
 * answer (often empty) comes with a note saying so. */
void
dlqctl_note_unknown_queue(const struct dlqctl *x, const cJSON *r)
{
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(r, "queue");
	const char *near;

	if (!cJSON_IsString(q) || dlq_topology_find(x->top, q->valuestring) !=
	    NULL)
		return;
	fprintf(stderr, "dlqctl: note: '%s' is not a queue of the topology",
	    q->valuestring);
	if ((near = dlq_topology_suggest(x->top, q->valuestring)) != NULL)
		fprintf(stderr, "; did you mean '%s'?\n", near);
	else
		fputs(" (dlqctl topology show lists them)\n", stderr);
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

/* Whether the groups asked for are gathered by cause. */
static bool by_cause;

/* Groups come largest first: when `limit` came, there may be smaller. */
static void
view_groups(FILE *f, const cJSON *d, int64_t now)
{
	if (by_cause)
		dlq_view_causes(f, d, now);
	else
		dlq_view_groups(f, d, now);
	if (cJSON_GetArraySize(d) == page_limit)
		fprintf(stderr, "dlqctl: the largest %lld shown; --limit N for "
		    "more\n", (long long)page_limit);
}

int
cmd_list(struct dlqctl *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("list");

	if (!dlq_args_options(r, argc, argv, "queue status class signature "
	    "since limit before message-id correlation-id owner") ||
	    !dlq_args_done(optind, argc, argv)) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	dlqctl_note_unknown_queue(x, r);
	set_page_limit(r);
	return dlqctl_call(x, r, view_list);
}

int
cmd_show(struct dlqctl *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("show"), *ids;

	if (!dlq_args_options(r, argc, argv, "payload") ||
	    !dlq_args_done(optind + 1, argc, argv) ||
	    !dlq_args_ids(r, argc, argv)) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	ids = cJSON_DetachItemFromObjectCaseSensitive(r, "ids");
	cJSON_AddNumberToObject(r, "id",
	    cJSON_GetArrayItem(ids, 0)->valuedouble);
	cJSON_Delete(ids);
	return dlqctl_call(x, r, dlq_view_show);
}

int
cmd_stats(struct dlqctl *x, int argc, char **argv)
{
	if (!dlq_args_done(1, argc, argv))
		return DLQ_EXIT_USAGE;
	return dlqctl_call(x, dlq_ctl_request("stats"), view_stats);
}

int
cmd_groups(struct dlqctl *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("groups");

	if (!dlq_args_options(r, argc, argv,
	    "queue class since limit by-cause") ||
	    !dlq_args_done(optind, argc, argv)) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	dlqctl_note_unknown_queue(x, r);
	set_page_limit(r);
	by_cause = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r,
	    "by_cause"));
	return dlqctl_call(x, r, view_groups);
}

bool
dlqctl_selects(const cJSON *r)
{
	return cJSON_HasObjectItem(r, "queue") ||
	    cJSON_HasObjectItem(r, "signature");
}

/* --class and --since narrow a --queue or --signature selection (a
 * failure signature belongs to one queue); alone they would select
 * across every queue. */
bool
dlqctl_narrows_a_selection(const cJSON *r)
{
	if (!dlqctl_selects(r) && (cJSON_HasObjectItem(r, "class") ||
	    cJSON_HasObjectItem(r, "since_ms"))) {
		fprintf(stderr, "dlqctl: --class and --since narrow a --queue or "
		    "--signature selection\n");
		return false;
	}
	return true;
}

/* The common part of drop, assign and reopen: archive ids, or a --queue
 * or --signature selection (then run here, and *done is set). Returns an
 * exit code; 0 with *done false: `r` holds ids, for the caller's
 * request. */
static int
ids_or_selection(struct dlqctl *x, cJSON *r, const char *cmd,
    const char *const *copy, const char *verb, bool *done)
{
	*done = false;
	if (!dlqctl_narrows_a_selection(r))
		return DLQ_EXIT_USAGE;
	if (cJSON_HasObjectItem(r, "ids") == dlqctl_selects(r)) {
		fprintf(stderr, "dlqctl: %s needs one of: archive ids, --queue Q "
		    "or --signature SIG\n", cmd);
		return DLQ_EXIT_USAGE;
	}
	if (!dlqctl_selects(r)) {
		if (cJSON_HasObjectItem(r, "limit")) {
			fprintf(stderr, "dlqctl: --limit caps a --queue or "
			    "--signature selection\n");
			return DLQ_EXIT_USAGE;
		}
		return DLQ_EXIT_OK;
	}
	*done = true;
	dlqctl_note_unknown_queue(x, r);
	return dlq_select_change(x->cfg.control_socket, x->json, r, cmd, copy,
	    verb);
}

int
cmd_assign(struct dlqctl *x, int argc, char **argv)
{
	static const char *const copy[] = { "owner", "decision",
	    "escalate_in_ms", "evidence", NULL };
	cJSON *r = dlq_ctl_request("assign");
	int rc = DLQ_EXIT_USAGE;
	bool done;

	if (!dlq_args_options(r, argc, argv, "owner decision escalate-in "
	    "evidence yes queue class signature since limit") ||
	    (optind < argc && !dlq_args_ids(r, argc, argv)) ||
	    !dlq_args_require(r, argv[0], "owner decision"))
		goto out;
	if ((rc = ids_or_selection(x, r, "assign", copy, "assigned", &done)) !=
	    DLQ_EXIT_OK || done)
		goto out;
	return dlqctl_call(x, r, view_assigned);
out:
	cJSON_Delete(r);
	return rc;
}

/* drop and reopen: ids or a selection, a reason, --yes for more than
 * one. */
static int
change_with_reason(struct dlqctl *x, int argc, char **argv, const char *cmd,
    const char *verb, void (*view)(FILE *, const cJSON *, int64_t))
{
	static const char *const copy[] = { "reason", NULL };
	cJSON *r = dlq_ctl_request(cmd);
	int n, rc = DLQ_EXIT_USAGE;
	bool done;

	if (!dlq_args_options(r, argc, argv, "reason yes queue class "
	    "signature since limit") ||
	    (optind < argc && !dlq_args_ids(r, argc, argv)) ||
	    !dlq_args_require(r, argv[0], "reason"))
		goto out;
	if ((rc = ids_or_selection(x, r, cmd, copy, verb, &done)) !=
	    DLQ_EXIT_OK || done)
		goto out;
	n = cJSON_GetArraySize(cJSON_GetObjectItem(r, "ids"));
	if (n > 1 && !cJSON_IsTrue(cJSON_GetObjectItem(r, "yes"))) {
		fprintf(stderr, "dlqctl: this would %s %d dead letters; run "
		    "again with --yes to do it\n", cmd, n);
		if (x->json)
			dlq_ctl_needs_yes_json(cmd, n);
		rc = DLQ_CTL_NEEDS_YES;
		goto out;
	}
	return dlqctl_call(x, r, view);
out:
	cJSON_Delete(r);
	return rc;
}

int
cmd_drop(struct dlqctl *x, int argc, char **argv)
{
	return change_with_reason(x, argc, argv, "drop", "dropped",
	    view_dropped);
}

int
cmd_reopen(struct dlqctl *x, int argc, char **argv)
{
	return change_with_reason(x, argc, argv, "reopen", "reopened",
	    view_reopened);
}

/* Without --yes a purge only counts what it would reach, and says when
 * that was received: "--older-than 6m" is six minutes, not months. */
static int
purge_count(struct dlqctl *x, cJSON *r)
{
	const cJSON *data;
	char when[40];
	cJSON *ans;
	double n;
	int rc;

	cJSON_ReplaceItemInObjectCaseSensitive(r, "cmd",
	    cJSON_CreateString("purge_count"));
	if ((ans = ask(x, r, NULL)) == NULL)
		return DLQ_EXIT_ERROR;
	data = cJSON_GetObjectItemCaseSensitive(ans, "data");
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "ok")) ||
	    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(data,
	    "purgeable"))) {
		rc = dlq_ctl_refusal(ans, x->json);
		cJSON_Delete(ans);
		return rc;
	}
	n = cJSON_GetObjectItemCaseSensitive(data, "purgeable")->valuedouble;
	purge_cutoff(data, when, sizeof(when));
	if (x->json)
		put_json(data);
	if (n == 0) {
		if (!x->json)
			printf("nothing to purge: no resolved record received "
			    "before %s holds its payload\n", when);
		rc = DLQ_EXIT_OK;
	} else {
		fprintf(stderr, "dlqctl: this would purge the payloads of %.0f "
		    "resolved record%s received before %s; run again with "
		    "--yes to do it\n", n, n == 1 ? "" : "s", when);
		rc = DLQ_CTL_NEEDS_YES;
	}
	cJSON_Delete(ans);
	return rc;
}

/* A purge's progress on the terminal, overwritten by the next one; the
 * line is cleared once the answer came (p NULL), before it is printed. */
static void
show_purging(const cJSON *p, void *arg)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "purged");
	const cJSON *pc = cJSON_GetObjectItemCaseSensitive(p, "percent");

	(void)arg;
	if (p == NULL)
		fputs("\r\033[K", stderr);
	else if (cJSON_IsNumber(n) && cJSON_IsNumber(pc))
		fprintf(stderr, "\rpurging: %.0f payloads so far, %.0f %% of "
		    "the way\033[K", n->valuedouble, pc->valuedouble);
}

int
cmd_purge(struct dlqctl *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("purge");

	if (!dlq_args_options(r, argc, argv, "older-than yes") ||
	    !dlq_args_done(optind, argc, argv) ||
	    !dlq_args_require(r, argv[0], "older-than")) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "yes")))
		return purge_count(x, r);
	cJSON_AddTrueToObject(r, "progress");
	return call_progress(x, r, view_purged, isatty(2) ? show_purging :
	    NULL);
}

int
cmd_audit(struct dlqctl *x, int argc, char **argv)
{
	cJSON *r = dlq_ctl_request("audit");

	if (!dlq_args_options(r, argc, argv, "since actor command limit "
	    "before") || !dlq_args_done(optind, argc, argv)) {
		cJSON_Delete(r);
		return DLQ_EXIT_USAGE;
	}
	set_page_limit(r);
	return dlqctl_call(x, r, view_audit);
}
