/* ctlselect.c - dlqctl's changes by selection: drop, assign or reopen
 * the records of a --queue or --signature selection, listed first, then
 * changed in requests of CHUNK ids. */
#include "ctlselect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlclient.h"
#include "ctlview.h"
#include "stopsig.h"
#include "proto.h"

/* Ids per request: well under the control request limit (64 KiB). */
#define CHUNK	500

/* Newest first. */
static int
cmp_id_desc(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x < y) - (x > y);
}

/* The records of a --queue selection with one of `statuses` (NULL
 * ended), only those a reopen takes back when `reopenable`, the newest
 * --limit (DLQ_SELECT_MAX by default) of them, into `ids`. Returns 1
 * when more may match, 0 when not, or minus the exit code of a failure
 * (said on stderr). */
static int
select_by_status(const char *socket, bool json, const cJSON *r,
    const char *const *statuses, bool reopenable, cJSON *ids)
{
	static const char *const keys[] = { "queue", "class", "signature",
	    "since_ms", NULL };
	const char *const *k;
	const cJSON *data, *e, *v;
	cJSON *q, *ans;
	long long *got;
	size_t n = 0, i, s;
	int limit = DLQ_SELECT_MAX, more = 0;
	char why[512];

	if (cJSON_IsNumber(v = cJSON_GetObjectItem(r, "limit")) &&
	    v->valuedouble >= 1 && v->valuedouble < DLQ_SELECT_MAX)
		limit = (int)v->valuedouble;
	/* two statuses at most, each answering at most `limit` */
	if ((got = calloc(2 * (size_t)limit, sizeof(*got))) == NULL) {
		fprintf(stderr, "dlqctl: out of memory\n");
		return -DLQ_EXIT_ERROR;
	}
	for (s = 0; s < 2 && statuses[s] != NULL; s++) {
		q = dlq_ctl_request("list");
		for (k = keys; *k != NULL; k++)
			if ((v = cJSON_GetObjectItem(r, *k)) != NULL)
				cJSON_AddItemToObject(q, *k, cJSON_Duplicate(v, 0));
		cJSON_AddStringToObject(q, "status", statuses[s]);
		cJSON_AddNumberToObject(q, "limit", limit);
		if (reopenable)
			cJSON_AddTrueToObject(q, "reopenable");
		ans = dlq_ctl_call(socket, q, why, sizeof(why));
		cJSON_Delete(q);
		if (ans == NULL) {
			fprintf(stderr, "dlqctl: %s\n", why);
			free(got);
			return -DLQ_EXIT_ERROR;
		}
		if (!cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok"))) {
			more = -dlq_ctl_refusal(ans, json);
			cJSON_Delete(ans);
			free(got);
			return more;
		}
		data = cJSON_GetObjectItem(ans, "data");
		if (cJSON_GetArraySize(data) >= limit)
			more = 1;
		cJSON_ArrayForEach(e, data)
			if (cJSON_IsNumber(v = cJSON_GetObjectItem(e, "id")) &&
			    n < 2 * (size_t)limit)
				got[n++] = (long long)v->valuedouble;
		cJSON_Delete(ans);
	}
	qsort(got, n, sizeof(*got), cmp_id_desc);
	if (n > (size_t)limit) {
		n = (size_t)limit;
		more = 1;
	}
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)got[i]));
	free(got);
	return more;
}

/* What a selection changes: drop takes the open and assigned records
 * (once dropped they leave the selection, so a next run goes on with
 * older ones); assign takes the open ones, the cases without an owner
 * (reassigning goes by ids: the newest assigned would be taken again
 * by every run); reopen the discarded ones it may take back (those
 * that stay closed would be taken again by every run). */
static const char *const *
changeable(const char *cmd, const char **what)
{
	static const char *const unresolved[] = { "open", "assigned", NULL },
	    *const open[] = { "open", NULL },
	    *const discarded[] = { "discarded", NULL };

	if (strcmp(cmd, "assign") == 0) {
		*what = "open";
		return open;
	}
	if (strcmp(cmd, "reopen") == 0) {
		*what = "discarded";
		return discarded;
	}
	*what = "open and assigned";
	return unresolved;
}

/* A reopen that found nothing to take back: whether the selection has
 * records of `statuses` (the discarded) that stay closed, and why
 * (printed, or counted in "kept_closed" with `json`: at most --limit of
 * them). Returns the exit code. */
static int
kept_closed(const char *socket, bool json, const cJSON *r,
    const char *const *statuses, const char *verb)
{
	cJSON *ids = cJSON_CreateArray(), *sum;
	int more, n;
	char *text;

	if ((more = select_by_status(socket, json, r, statuses, false, ids)) < 0) {
		cJSON_Delete(ids);
		return -more;
	}
	n = cJSON_GetArraySize(ids);
	cJSON_Delete(ids);
	if (json) {
		sum = cJSON_CreateObject();
		cJSON_AddArrayToObject(sum, "results");
		cJSON_AddNumberToObject(sum, "changed", 0);
		cJSON_AddNumberToObject(sum, "selected", 0);
		cJSON_AddBoolToObject(sum, "more", false);
		cJSON_AddNumberToObject(sum, "kept_closed", n);
		text = cJSON_PrintUnformatted(sum);
		puts(text);
		cJSON_free(text);
		cJSON_Delete(sum);
		return DLQ_EXIT_OK;
	}
	printf("%s 0\n", verb);
	if (n > 0)
		printf("%s%d discarded dead letters of this selection stay "
		    "closed: their payload was purged, or a replay of them may "
		    "have arrived (dlqctl show ID says which)\n", more ?
		    "at least " : "", n);
	return DLQ_EXIT_OK;
}

/* The error that stopped a run, into its summary: "ok": false, "code",
 * "error", as a refusal has them. */
static void
add_error(cJSON *sum, const cJSON *ans)
{
	const cJSON *v;

	cJSON_AddFalseToObject(sum, "ok");
	if ((v = cJSON_GetObjectItem(ans, "code")) != NULL)
		cJSON_AddItemToObject(sum, "code", cJSON_Duplicate(v, 0));
	if ((v = cJSON_GetObjectItem(ans, "error")) != NULL)
		cJSON_AddItemToObject(sum, "error", cJSON_Duplicate(v, 0));
}

int
dlq_select_change(const char *socket, bool json, const cJSON *r,
    const char *cmd, const char *const *copy, const char *verb)
{
	const char *what, *const *statuses = changeable(cmd, &what);
	const char *const *key;
	cJSON *ids = cJSON_CreateArray(), *sum, *results, *q, *ans, *e;
	const cJSON *data, *code, *v, *next;
	int more, n, i, k, rc = DLQ_EXIT_OK;
	bool stop = false, interrupted, reopen = strcmp(cmd, "reopen") == 0;
	double changed = 0;
	char why[512], *text;

	if ((more = select_by_status(socket, json, r, statuses, reopen, ids)) < 0) {
		cJSON_Delete(ids);
		return -more;
	}
	n = cJSON_GetArraySize(ids);
	if (n == 0 && reopen) {
		cJSON_Delete(ids);
		return kept_closed(socket, json, r, statuses, verb);
	}
	if (n > 0 && !cJSON_IsTrue(cJSON_GetObjectItem(r, "yes"))) {
		fprintf(stderr, "dlqctl: this would %s %d dead letters (the "
		    "%s ones of this selection); run again with --yes to do "
		    "it\n", cmd, n, what);
		if (json)
			dlq_ctl_needs_yes_json(cmd, n);
		cJSON_Delete(ids);
		return DLQ_CTL_NEEDS_YES;
	}
	sum = cJSON_CreateObject();
	results = cJSON_AddArrayToObject(sum, "results");
	next = ids->child;
	/* ^C, a closed terminal or a kill: the chunk under way is finished
	 * (the worker changes it in one transaction), the rest left as it
	 * is, and the summary says so; a second one ends dlqctl at once */
	dlq_stop_catch(true);
	for (i = 0; i < n && !stop && !dlq_stop_asked(); i += CHUNK) {
		q = dlq_ctl_request(cmd);
		for (key = copy; *key != NULL; key++)
			if ((v = cJSON_GetObjectItem(r, *key)) != NULL)
				cJSON_AddItemToObject(q, *key, cJSON_Duplicate(v,
				    0));
		e = cJSON_AddArrayToObject(q, "ids");
		for (k = i; k < n && k < i + CHUNK; k++, next = next->next)
			cJSON_AddItemToArray(e, cJSON_Duplicate(next, 0));
		ans = dlq_ctl_call(socket, q, why, sizeof(why));
		cJSON_Delete(q);
		if (ans == NULL) {
			fprintf(stderr, "dlqctl: %s\n", why);
			rc = DLQ_EXIT_ERROR;
			break;
		}
		data = cJSON_GetObjectItem(ans, "data");
		if (cJSON_IsNumber(v = cJSON_GetObjectItem(data, "changed")))
			changed += v->valuedouble;
		cJSON_ArrayForEach(e, cJSON_GetObjectItem(data, "results"))
			cJSON_AddItemToArray(results, cJSON_Duplicate(e, 1));
		if (!cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok"))) {
			/* a record that changed status since the selection is
			 * refused and listed; anything else stops the run */
			code = cJSON_GetObjectItem(ans, "code");
			stop = !cJSON_IsString(code) ||
			    strcmp(code->valuestring, "refused") != 0;
			rc = stop ? dlq_ctl_refusal(ans, false) :
			    DLQ_EXIT_CONFLICT;
			if (stop)	/* with --json, in the summary below */
				add_error(sum, ans);
		}
		cJSON_Delete(ans);
	}
	cJSON_AddNumberToObject(sum, "changed", changed);
	cJSON_AddNumberToObject(sum, "selected", n);
	cJSON_AddBoolToObject(sum, "more", more);
	interrupted = i < n && !stop;	/* by a signal, not by an error */
	if (interrupted) {
		cJSON_AddBoolToObject(sum, "interrupted", true);
		cJSON_AddNumberToObject(sum, "not_sent", n - i);
		if (rc == DLQ_EXIT_OK)
			rc = DLQ_EXIT_CONFLICT;
	}
	if (json) {
		text = cJSON_PrintUnformatted(sum);
		puts(text);
		cJSON_free(text);
	} else {
		dlq_view_changes(stdout, sum, verb);
		if (interrupted)
			printf("interrupted: the other %d selected were not "
			    "sent to the worker and are as they were\n", n - i);
		else if (more)
			printf("more may match: a run takes the newest %d; run "
			    "again for the rest\n", n);
	}
	cJSON_Delete(sum);
	cJSON_Delete(ids);
	return rc;
}

