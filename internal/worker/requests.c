/* requests.c - the control socket's requests: each line decoded and
 * bounded, the caller's role checked before anything is locked, the
 * command run on the archive, every change audited (refused ones at
 * most as a small row), the answer written. */
#include "requests.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "amqp.h"
#include "archive.h"
#include "cases.h"
#include "causes.h"
#include "log.h"
#include "metrics.h"
#include "mgmt.h"
#include "replaysrv.h"
#include "signature.h"

#define MGMT_TIMEOUT_MS	3000	/* for stats' traffic from the broker */
#define TRAFFIC_QUEUES	200	/* the most queues stats ask it about */

/* A request being handled. */
struct req {
	const struct dlq_config *cfg;
	struct dlq_archive *archive;
	const cJSON	*j;
	const char	*user;
	enum dlq_role	 role;
	struct dlq_buf	*data;		/* the "data" of the answer */
	char		 err[256];	/* usage or other error text */
	int		 peer;		/* for progress lines; -1: none */
};

static const char *
opt_str(const struct req *r, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->j, k);

	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}



/* An integer field: *out = def when absent; false (with r->err) when of
 * the wrong type or out of range. */
static bool
opt_int(struct req *r, const char *k, int64_t min, int64_t max, int64_t def,
    int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->j, k);

	*out = def;
	if (v == NULL || cJSON_IsNull(v))
		return true;
	if (!dlq_json_int(v, min, max, out)) {
		snprintf(r->err, sizeof(r->err), "'%s' must be an integer in "
		    "%lld..%lld", k, (long long)min, (long long)max);
		return false;
	}
	return true;
}

/* A true/false field: false when absent. */
static bool
opt_bool(struct req *r, const char *k, bool *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->j, k);

	*out = cJSON_IsTrue(v);
	if (v == NULL || cJSON_IsNull(v) || cJSON_IsBool(v))
		return true;
	snprintf(r->err, sizeof(r->err), "'%s' must be true or false", k);
	return false;
}

static bool
need_str(struct req *r, const char *k, const char **out)
{
	if ((*out = dlq_json_text(cJSON_GetObjectItemCaseSensitive(r->j, k))) ==
	    NULL) {
		snprintf(r->err, sizeof(r->err), "'%s' is required", k);
		return false;
	}
	return dlq_json_text_fits(r->j, k, r->err, sizeof(r->err));
}


/* "ids": [1, 2, 3] -> malloc'd array */
static int64_t *
need_ids(struct req *r, size_t *n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(r->j, "ids"), *e;
	int64_t *ids;
	size_t i = 0;

	*n = 0;
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 ||
	    cJSON_GetArraySize(a) > DLQ_CONTROL_IDS_MAX) {
		snprintf(r->err, sizeof(r->err), "'ids' must list 1 to %d "
		    "archive ids", DLQ_CONTROL_IDS_MAX);
		return NULL;
	}
	if ((ids = calloc((size_t)cJSON_GetArraySize(a), sizeof(*ids))) == NULL)
		return NULL;
	cJSON_ArrayForEach(e, a) {
		if (!dlq_json_int(e, 1, DLQ_JSON_INT_MAX, &ids[i])) {
			snprintf(r->err, sizeof(r->err), "'ids' must be positive "
			    "integers");
			free(ids);
			return NULL;
		}
		i++;
	}
	*n = i;
	return ids;
}

static enum dlq_result
from_case(struct req *r, int rc)
{
	switch (rc) {
	case DLQ_OK:
		return DLQ_OK;
	case DLQ_NOT_FOUND:
		snprintf(r->err, sizeof(r->err), "not found");
		return DLQ_NOT_FOUND;
	case DLQ_REFUSED:
		snprintf(r->err, sizeof(r->err), "not every record could be "
		    "changed (see each id)");
		return DLQ_REFUSED;
	default:
		snprintf(r->err, sizeof(r->err), "archive error: %.200s",
		    r->data->data ? r->data->data : "?");
		dlq_buf_reset(r->data);
		return DLQ_ERROR;
	}
}

/* The error of an answer about archive ids some of which are not there. */
static void
ids_missing(struct req *r, const int64_t *ids, size_t n)
{
	if (n == 1)
		snprintf(r->err, sizeof(r->err), "no dead letter with id %lld "
		    "in the archive", (long long)ids[0]);
	else
		snprintf(r->err, sizeof(r->err), "not every id is in the "
		    "archive (see each id)");
}

static enum dlq_result
cmd_ping(struct req *r)
{
	dlq_buf_adds(r->data, "\"pong\"");
	return DLQ_OK;
}

/* Whether `class` is absent or a class; if not, says so in r->err. */
static bool
known_class(struct req *r, const char *class)
{
	if (class == NULL || dlq_class_valid(class))
		return true;
	snprintf(r->err, sizeof(r->err), "unknown class '%.40s' (%s)", class,
	    DLQ_CLASS_LIST);
	return false;
}

static enum dlq_result
cmd_list(struct req *r)
{
	struct dlq_list_filter f;
	int64_t since;

	memset(&f, 0, sizeof(f));
	f.queue = opt_str(r, "queue");
	f.status = opt_str(r, "status");
	f.class = opt_str(r, "class");
	f.signature = opt_str(r, "signature");
	f.message_id = opt_str(r, "message_id");
	f.correlation_id = opt_str(r, "correlation_id");
	f.owner = opt_str(r, "owner");
	/* the error text is searched for those who may read payloads: the
	 * masked text a viewer sees is what dlq_mask makes at read time,
	 * and a search of the stored one would tell what the mask hid */
	f.text = opt_str(r, "text");
	f.text_in_error = r->role >= DLQ_ROLE_OPERATOR;
	if (f.text != NULL && !dlq_json_text_fits(r->j, "text", r->err,
	    sizeof(r->err)))
		return DLQ_USAGE;
	if (!opt_int(r, "since_ms", 0, DLQ_JSON_INT_MAX, 0, &since) ||
	    !opt_int(r, "before_id", 1, DLQ_JSON_INT_MAX, 0, &f.before_id) ||
	    !opt_int(r, "limit", 1, DLQ_CONTROL_LIST_MAX,
	    DLQ_CONTROL_LIST_DEFAULT, &f.limit) ||
	    !opt_bool(r, "reopenable", &f.reopenable) ||
	    !opt_bool(r, "preview", &f.preview))
		return DLQ_USAGE;
	/* payload bytes, as show --payload: for operators and up */
	if (f.preview && r->role < DLQ_ROLE_OPERATOR) {
		snprintf(r->err, sizeof(r->err), "a payload preview needs the "
		    "operator role; %.64s is %s", r->user,
		    dlq_role_name(r->role));
		return DLQ_PERMISSION;
	}
	if (f.status != NULL && !dlq_status_valid(f.status)) {
		snprintf(r->err, sizeof(r->err), "unknown status '%.40s' (%s)",
		    f.status, DLQ_STATUS_LIST);
		return DLQ_USAGE;
	}
	if (!known_class(r, f.class))
		return DLQ_USAGE;
	if (f.signature != NULL && !dlq_signature_id_valid(f.signature)) {
		snprintf(r->err, sizeof(r->err), DLQ_SIGNATURE_BAD, f.signature);
		return DLQ_USAGE;
	}
	f.since_ms = since ? dlq_wall_ms() - since : 0;
	return from_case(r, dlq_cases_list(r->archive, &f, r->data));
}

static enum dlq_result
cmd_show(struct req *r, bool payload)
{
	int64_t id;
	enum dlq_result a;

	if (!opt_int(r, "id", 1, DLQ_JSON_INT_MAX, 0, &id))
		return DLQ_USAGE;
	if (id == 0) {
		snprintf(r->err, sizeof(r->err), "'id' is required");
		return DLQ_USAGE;
	}
	a = from_case(r, dlq_cases_show(r->archive, id, payload, r->data));
	if (a == DLQ_NOT_FOUND)
		ids_missing(r, &id, 1);
	return a;
}

/* The traffic rows of the queues in `rows` ([{"queue", "dead_lettered"}]
 * from the archive) with what the management API says of each, appended
 * to `out` as a JSON array. Returns 0, or -1 with `why`. */
static int
traffic_rows(const struct dlq_config *cfg, const cJSON *rows,
    struct dlq_buf *out, bool *windowed, char *why, size_t whylen)
{
	struct dlq_mgmt *m = dlq_mgmt_open(cfg, dlq_now_ms() + MGMT_TIMEOUT_MS);
	struct dlq_mgmt_count c;
	const cJSON *row, *q, *n;
	int rc = 0, asked, k = 0;

	if (m == NULL) {
		snprintf(why, whylen, "cannot start an HTTP request");
		return -1;
	}
	*windowed = true;
	dlq_buf_addc(out, '[');
	cJSON_ArrayForEach(row, rows) {
		q = cJSON_GetObjectItemCaseSensitive(row, "queue");
		n = cJSON_GetObjectItemCaseSensitive(row, "dead_lettered");
		if (!cJSON_IsString(q) || !cJSON_IsNumber(n))
			continue;
		if ((asked = dlq_mgmt_published(m, q->valuestring, &c, why,
		    whylen)) == -1) {
			rc = -1;
			break;
		}
		dlq_buf_adds(out, k++ ? ",{\"queue\":" : "{\"queue\":");
		dlq_buf_json_cstr(out, q->valuestring);
		dlq_buf_printf(out, ",\"dead_lettered\":%lld,", (long long)
		    n->valuedouble);
		if (asked == 1)		/* the broker has no such queue now */
			dlq_buf_adds(out, "\"published\":null,\"share\":null}");
		else if (c.published == 0)
			dlq_buf_adds(out, "\"published\":0,\"share\":null}");
		else
			dlq_buf_printf(out, "\"published\":%lld,\"share\":%.4f}",
			    (long long)c.published, n->valuedouble /
			    (double)c.published);
		if (asked == 0 && !c.windowed)
			*windowed = false;
	}
	dlq_buf_addc(out, ']');
	dlq_mgmt_close(m);
	return rc;
}

/* Appends "traffic" to the stats object in r->data: per queue, the dead
 * letters of the last hour against the messages published to it in that
 * hour, when the broker's management API tells (rabbitmq.management_url).
 * Stats answer either way; why the share is missing is part of it. */
static void
add_traffic(struct req *r, int64_t now)
{
	const char *url = r->cfg->management_url;
	struct dlq_buf archived, queues;
	cJSON *rows = NULL;
	char why[256] = "";
	bool windowed = true;

	if (r->data->len == 0 || r->data->data[r->data->len - 1] != '}')
		return;
	r->data->data[--r->data->len] = '\0';		/* reopen the object */
	dlq_buf_printf(r->data, ",\"traffic\":{\"window_ms\":%d,",
	    DLQ_MGMT_WINDOW_MS);
	if (url == NULL || *url == '\0') {
		dlq_buf_adds(r->data, "\"reported\":false,\"why\":"
		    "\"rabbitmq.management_url is not set\"}}");
		return;
	}
	dlq_buf_init(&archived);
	dlq_buf_init(&queues);
	if (dlq_cases_traffic(r->archive, now - DLQ_MGMT_WINDOW_MS, TRAFFIC_QUEUES,
	    &archived) != DLQ_OK || (rows = cJSON_Parse(archived.data ?
	    archived.data : "")) == NULL)
		snprintf(why, sizeof(why), "archive error: %.200s",
		    archived.data ? archived.data : "?");
	else if (traffic_rows(r->cfg, rows, &queues, &windowed, why,
	    sizeof(why)) == -1)
		dlq_log(DLQ_LOG_WARN, "management_failed", "error", why, NULL);
	if (why[0] != '\0') {
		dlq_buf_adds(r->data, "\"reported\":false,\"why\":");
		dlq_buf_json_cstr(r->data, why);
	} else
		dlq_buf_printf(r->data, "\"reported\":true,\"windowed\":%s,"
		    "\"queues\":%s", windowed ? "true" : "false", queues.data);
	dlq_buf_adds(r->data, "}}");
	cJSON_Delete(rows);
	dlq_buf_release(&archived);
	dlq_buf_release(&queues);
}

static enum dlq_result
cmd_stats(struct req *r)
{
	int64_t now = dlq_wall_ms();
	enum dlq_result a;

	a = from_case(r, dlq_cases_stats(r->archive, now, r->cfg->owner_sla_ms,
	    r->data));
	if (a == DLQ_OK)
		add_traffic(r, now);
	return a;
}

static enum dlq_result
cmd_groups(struct req *r)
{
	const char *class = opt_str(r, "class");
	int64_t limit, since;
	bool by_cause;
	int rc;

	if (!opt_int(r, "limit", 1, DLQ_CONTROL_LIST_MAX,
	    DLQ_CONTROL_LIST_DEFAULT, &limit) ||
	    !opt_int(r, "since_ms", 0, DLQ_JSON_INT_MAX, 0, &since) ||
	    !opt_bool(r, "by_cause", &by_cause) || !known_class(r, class))
		return DLQ_USAGE;
	if (since != 0)
		since = dlq_wall_ms() - since;
	if (!by_cause)
		return from_case(r, dlq_cases_groups(r->archive, opt_str(r, "queue"),
		    class, since, limit, r->data));
	rc = dlq_causes_list(r->archive, opt_str(r, "queue"), class, since, limit,
	    DLQ_CAUSES_GROUPS_MAX, r->data);
	if (rc != DLQ_REFUSED)
		return from_case(r, rc);
	/* more groups than it gathers at once: a request to narrow */
	snprintf(r->err, sizeof(r->err), "%s", r->data->data);
	dlq_buf_reset(r->data);
	return DLQ_USAGE;
}

/* The answer of a change of `ids` (freed here) that returned `rc`. */
static enum dlq_result
ids_changed(struct req *r, int64_t *ids, size_t n, int rc)
{
	enum dlq_result a = from_case(r, rc);

	if (a == DLQ_NOT_FOUND)
		ids_missing(r, ids, n);
	free(ids);
	return a;
}

static enum dlq_result
cmd_assign(struct req *r)
{
	const char *owner, *decision;
	int64_t *ids, esc;
	size_t n;

	if (!need_str(r, "owner", &owner) || !need_str(r, "decision", &decision)
	    || !dlq_json_text_fits(r->j, "evidence", r->err, sizeof(r->err)) ||
	    !opt_int(r, "escalate_in_ms", 0, DLQ_JSON_INT_MAX, 0, &esc) ||
	    (ids = need_ids(r, &n)) == NULL)
		return DLQ_USAGE;
	return ids_changed(r, ids, n, dlq_cases_assign(r->archive, ids, n, owner,
	    decision, dlq_json_text(cJSON_GetObjectItemCaseSensitive(r->j,
	    "evidence")), esc ? dlq_wall_ms() + esc : 0, r->user,
	    dlq_wall_ms(), r->data));
}

static enum dlq_result
cmd_drop(struct req *r)
{
	const char *reason;
	int64_t *ids;
	size_t n;

	if (!need_str(r, "reason", &reason) || (ids = need_ids(r, &n)) == NULL)
		return DLQ_USAGE;
	return ids_changed(r, ids, n, dlq_cases_drop(r->archive, ids, n, reason,
	    r->user, dlq_wall_ms(), r->data));
}

/* The reason is required: the audit keeps it beside the drop's. */
static enum dlq_result
cmd_reopen(struct req *r)
{
	const char *reason;
	int64_t *ids;
	size_t n;

	if (!need_str(r, "reason", &reason) || (ids = need_ids(r, &n)) == NULL)
		return DLQ_USAGE;
	return ids_changed(r, ids, n, dlq_cases_reopen(r->archive, ids, n,
	    r->data));
}

/* A purge's older_than_ms, required: 0 or -1 (usage, said). */
static int
purge_age(struct req *r, int64_t *older)
{
	if (!opt_int(r, "older_than_ms", 1, DLQ_JSON_INT_MAX, 0, older))
		return -1;
	if (*older == 0) {
		snprintf(r->err, sizeof(r->err), "'older_than_ms' is required");
		return -1;
	}
	return 0;
}

static enum dlq_result
cmd_purge_count(struct req *r)
{
	int64_t older;

	if (purge_age(r, &older) == -1)
		return DLQ_USAGE;
	return from_case(r, dlq_cases_purgeable(r->archive, dlq_wall_ms() - older,
	    r->data));
}

/* A purge's progress line to its peer, after each chunk but the last
 * (a line of 40 bytes for 5 000 ids): never waiting for a peer that does
 * not read (the line is skipped), and never stopping the purge (a peer
 * gone is no reason to leave it half done). */
static bool
purge_progress(long long purged, int percent, void *arg)
{
	struct req *r = arg;
	char line[96];
	ssize_t w;
	int n;

	n = snprintf(line, sizeof(line), "{\"progress\":{\"purged\":%lld,"
	    "\"percent\":%d}}\n", purged, percent);
	/* a line begun is finished (within the socket's send timeout), so
	 * that the response does not run into it */
	if ((w = send(r->peer, line, (size_t)n, MSG_NOSIGNAL |
	    MSG_DONTWAIT)) > 0 && w < n)
		dlq_requests_send(r->peer, line + w, (size_t)(n - w));
	return true;
}

static enum dlq_result
cmd_purge(struct req *r)
{
	int64_t older;
	bool progress;

	if (purge_age(r, &older) == -1 || !opt_bool(r, "progress", &progress))
		return DLQ_USAGE;
	return from_case(r, dlq_cases_purge(r->archive, dlq_wall_ms() - older,
	    dlq_wall_ms(), progress && r->peer >= 0 ? purge_progress : NULL,
	    r, r->data));
}

static bool	audited(const char *, char *why, size_t n);

static enum dlq_result
cmd_audit(struct req *r)
{
	struct dlq_audit_filter f;
	int64_t since;

	memset(&f, 0, sizeof(f));
	f.actor = opt_str(r, "actor");
	f.command = opt_str(r, "command");
	if (f.command != NULL && !audited(f.command, r->err, sizeof(r->err)))
		return DLQ_USAGE;
	if (!opt_int(r, "since_ms", 0, DLQ_JSON_INT_MAX, 0, &since) ||
	    !opt_int(r, "before_id", 1, DLQ_JSON_INT_MAX, 0, &f.before_id) ||
	    !opt_int(r, "limit", 1, DLQ_CONTROL_LIST_MAX,
	    DLQ_CONTROL_LIST_DEFAULT, &f.limit))
		return DLQ_USAGE;
	f.since_ms = since ? dlq_wall_ms() - since : 0;
	return from_case(r, dlq_cases_audit(r->archive, &f, r->data));
}

static enum dlq_result
from_replay(struct req *r, enum dlq_result rc, const char *why)
{
	if (rc != DLQ_OK)
		snprintf(r->err, sizeof(r->err), "%s", why);
	return rc;
}

static enum dlq_result
cmd_replay_plan(struct req *r)
{
	char why[256];

	return from_replay(r, dlq_replay_plan(r->archive, r->cfg, r->j, r->data, why,
	    sizeof(why)), why);
}

static enum dlq_result
cmd_replay_claim(struct req *r)
{
	char why[256];

	return from_replay(r, dlq_replay_claim(r->archive, r->cfg, r->j, r->user,
	    r->data, why, sizeof(why)), why);
}

static enum dlq_result
cmd_replay_finish(struct req *r)
{
	char why[256];

	return from_replay(r, dlq_replay_finish(r->archive, r->j, r->user, r->data,
	    why, sizeof(why)), why);
}

/* A run that did not go through the archive (dlqctl replay --from-queue)
 * leaves its record here: the request itself is what the audit keeps.
 * The answer names the caller as the audit does, for x-replayed-by. */
static enum dlq_result
cmd_audit_note(struct req *r)
{
	const char *what;

	if (!need_str(r, "what", &what))
		return DLQ_USAGE;
	dlq_buf_adds(r->data, "{\"actor\":");
	dlq_buf_json_cstr(r->data, r->user);
	dlq_buf_addc(r->data, '}');
	return DLQ_OK;
}

/* The canary's question: which of these replayed messages died again? */
static enum dlq_result
cmd_replay_returns(struct req *r)
{
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(r->j, "ids");
	int64_t since, *v;
	size_t n;
	char *text;
	enum dlq_result a;

	if (!opt_int(r, "since_at_ms", 0, DLQ_JSON_INT_MAX, 0, &since) ||
	    (v = need_ids(r, &n)) == NULL)
		return DLQ_USAGE;
	free(v);
	if ((text = cJSON_PrintUnformatted(ids)) == NULL)
		return DLQ_ERROR;
	a = from_case(r, dlq_cases_returns(r->archive, text, since, r->data));
	cJSON_free(text);
	return a;
}

static enum dlq_result
cmd_redrive_status(struct req *r)
{
	struct dlq_buf queues;
	enum dlq_result a;

	dlq_buf_init(&queues);
	dlq_strlist_json(&r->cfg->redrive_queues, &queues);
	a = from_case(r, dlq_cases_redrive_status(r->archive, queues.data,
	    r->data));
	dlq_buf_release(&queues);
	return a;
}

static enum dlq_result
cmd_redrive_resume(struct req *r)
{
	const char *queue, *reason;
	enum dlq_result a;

	if (!need_str(r, "queue", &queue) || !need_str(r, "reason", &reason))
		return DLQ_USAGE;
	a = from_case(r, dlq_cases_redrive_resume(r->archive, queue, reason, r->user,
	    dlq_wall_ms(), r->data));
	if (a == DLQ_NOT_FOUND)
		/* a typo, or a queue the redrive does not handle */
		snprintf(r->err, sizeof(r->err), "the redrive circuit of %.140s "
		    "is not open%s", queue, r->cfg->redrive_queues.n == 0 ?
		    " (redrive is off: no redrive.queues)" :
		    !dlq_strlist_contains(&r->cfg->redrive_queues, queue) ?
		    " (nor is it one of redrive.queues: dlqctl redrive status "
		    "lists them)" : "");
	else if (a == DLQ_OK)
		dlq_log(DLQ_LOG_INFO, "redrive_resumed", "queue", queue, "by",
		    r->user, "reason", reason, NULL);
	return a;
}

/* How a command writes: not at all; in one turn among the process's
 * writers with its audit entry; or in turns of its own (a purge, chunk by
 * chunk, so that consumers commit in between), the audit entry after. */
enum writes { W_NONE, W_ONE_TURN, W_OWN_TURNS };

struct command {
	const char	*name;
	const char	*label;		/* in messages */
	enum dlq_role	 role;
	enum writes	 writes;
	enum dlq_result	(*run)(struct req *);
};

static enum dlq_result cmd_show_plain(struct req *r) { return cmd_show(r, false); }
static enum dlq_result cmd_show_payload(struct req *r) { return cmd_show(r, true); }

static const struct command commands[] = {
	{ "ping", "ping", DLQ_ROLE_VIEWER, W_NONE, cmd_ping },
	{ "list", "list", DLQ_ROLE_VIEWER, W_NONE, cmd_list },
	{ "show", "show", DLQ_ROLE_VIEWER, W_NONE, cmd_show_plain },
	{ "", "show --payload", DLQ_ROLE_OPERATOR, W_NONE, cmd_show_payload },
	{ "stats", "stats", DLQ_ROLE_VIEWER, W_NONE, cmd_stats },
	{ "groups", "groups", DLQ_ROLE_VIEWER, W_NONE, cmd_groups },
	{ "audit", "audit", DLQ_ROLE_VIEWER, W_NONE, cmd_audit },
	{ "assign", "assign", DLQ_ROLE_OPERATOR, W_ONE_TURN, cmd_assign },
	{ "drop", "drop", DLQ_ROLE_OPERATOR, W_ONE_TURN, cmd_drop },
	{ "reopen", "reopen", DLQ_ROLE_OPERATOR, W_ONE_TURN, cmd_reopen },
	{ "purge_count", "purge", DLQ_ROLE_ADMIN, W_NONE, cmd_purge_count },
	{ "purge", "purge", DLQ_ROLE_ADMIN, W_OWN_TURNS, cmd_purge },
	{ "replay_plan", "replay", DLQ_ROLE_OPERATOR, W_NONE,
	    cmd_replay_plan },
	{ "replay_claim", "replay", DLQ_ROLE_OPERATOR, W_ONE_TURN,
	    cmd_replay_claim },
	{ "replay_finish", "replay", DLQ_ROLE_OPERATOR, W_ONE_TURN,
	    cmd_replay_finish },
	{ "audit_note", "replay", DLQ_ROLE_OPERATOR, W_ONE_TURN,
	    cmd_audit_note },
	{ "replay_returns", "replay", DLQ_ROLE_OPERATOR, W_NONE,
	    cmd_replay_returns },
	{ "redrive_status", "redrive status", DLQ_ROLE_VIEWER, W_NONE,
	    cmd_redrive_status },
	{ "redrive_resume", "redrive resume", DLQ_ROLE_OPERATOR, W_ONE_TURN,
	    cmd_redrive_resume },
};

/* A change by ids (assign, drop, reopen) that left some of them as they
 * were: the audit keeps which and why ("refused": [{"id", "why"}], as
 * an audit_note does), so that a record's history (show) says what
 * happened to it, not only to the request (whose own "refused", had a
 * client sent one, is not kept). */
static void
note_unchanged_ids(const struct command *c, cJSON *j,
    const struct dlq_buf *data)
{
	const cJSON *e, *id, *why;
	cJSON *ans, *refused = NULL, *o;

	if (c->run != cmd_assign && c->run != cmd_drop && c->run != cmd_reopen)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(j, "refused");
	if (data->len == 0 ||
	    (ans = cJSON_ParseWithLength(data->data, data->len)) == NULL)
		return;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(ans,
	    "results")) {
		id = cJSON_GetObjectItemCaseSensitive(e, "id");
		why = cJSON_GetObjectItemCaseSensitive(e, "error");
		if (!cJSON_IsNumber(id) || !cJSON_IsString(why))
			continue;
		if (refused == NULL)
			refused = cJSON_AddArrayToObject(j, "refused");
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", id->valuedouble);
		cJSON_AddStringToObject(o, "why", why->valuestring);
		cJSON_AddItemToArray(refused, o);
	}
	cJSON_Delete(ans);
}

/* The worker's own entries in the audit: its redrive, and its changes
 * of class after the classification rules changed. */
static const char *const worker_audits[] = { DLQ_REDRIVE_AUDIT_COMMAND,
	DLQ_RECLASSIFY_AUDIT_COMMAND };
#define N_WORKER_AUDITS	(sizeof(worker_audits) / sizeof(worker_audits[0]))

/* Whether the audit has entries of `name`: the requests that write, and
 * the worker's own. If not, says which it has. */
static bool
audited(const char *name, char *why, size_t n)
{
	size_t i, used;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].writes != W_NONE &&
		    strcmp(commands[i].name, name) == 0)
			return true;
	for (i = 0; i < N_WORKER_AUDITS; i++)
		if (strcmp(name, worker_audits[i]) == 0)
			return true;
	used = (size_t)snprintf(why, n, "no audited command '%.40s' (", name);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]) && used < n; i++)
		if (commands[i].writes != W_NONE)
			used += (size_t)snprintf(why + used, n - used, "%s, ",
			    commands[i].name);
	for (i = 0; i < N_WORKER_AUDITS && used < n; i++)
		used += (size_t)snprintf(why + used, n - used, "%s%s",
		    worker_audits[i], i + 1 < N_WORKER_AUDITS ? ", " : ")");
	return false;
}

static void
answer_error(struct dlq_buf *out, const char *code, const char *msg)
{
	dlq_buf_adds(out, "{\"ok\":false,\"code\":");
	dlq_buf_json_cstr(out, code);
	dlq_buf_adds(out, ",\"error\":");
	dlq_buf_json_cstr(out, msg);
	dlq_buf_adds(out, "}\n");
}

/* The free texts a request may carry, each at most DLQ_CONTROL_TEXT_MAX
 * bytes: checked before anything is locked or written. */
static const char *const free_texts[] = { "reason", "evidence", "decision",
	"owner", "what" };

/* Refused requests of one uid that leave an audit row, per minute; the
 * rest are counted and said in one log line a minute. */
#define REFUSALS_STORED		10
#define REFUSAL_WINDOW_MS	60000
#define REFUSAL_UIDS		16

static struct refusals {
	long	 uid;
	int64_t	 since_ms;	/* the window's start; 0: slot free */
	int	 stored;
	long	 counted;	/* past REFUSALS_STORED in this window */
} refusals[REFUSAL_UIDS];
static pthread_mutex_t refusals_mu = PTHREAD_MUTEX_INITIALIZER;

/* The window of `uid`, a new one when its last ended (the oldest slot
 * is taken over when all are in use). */
static struct refusals *
refusal_window(long uid, int64_t now)
{
	struct refusals *w = &refusals[0], *e;

	for (e = refusals; e < refusals + REFUSAL_UIDS; e++) {
		if (e->since_ms != 0 && e->uid == uid) {
			w = e;
			break;
		}
		if (e->since_ms < w->since_ms)
			w = e;
	}
	if (w->uid != uid || now - w->since_ms >= REFUSAL_WINDOW_MS) {
		w->uid = uid;
		w->since_ms = now;
		w->stored = 0;
		w->counted = 0;
	}
	return w;
}

/* A refused request writes little, and only for a caller with a role:
 * a fixed-size audit row (who, which command, why; not its arguments,
 * whose ids would join the histories of the records they name), at
 * most REFUSALS_STORED a minute per uid; past that it is counted. A
 * caller with no role writes nothing and takes no lock. */
static void
refused(struct dlq_archive *archive, const struct command *c, enum dlq_role role,
    const char *user, long uid, const char *why)
{
	struct refusals *w;
	struct dlq_buf line = { 0 };
	char result[200];
	long counted;

	dlq_metrics_control_refused();
	if (role == DLQ_ROLE_NONE || c->writes == W_NONE || archive == NULL)
		return;
	/* the control socket's thread and the console's share the windows */
	pthread_mutex_lock(&refusals_mu);
	w = refusal_window(uid, dlq_now_ms());
	if (w->stored >= REFUSALS_STORED) {
		counted = ++w->counted;
		pthread_mutex_unlock(&refusals_mu);
		/* said once a window: the flood itself is not logged */
		if (counted == 1 && dlq_log_begin(&line, DLQ_LOG_WARN,
		    "control_refusals_not_audited")) {
			dlq_log_str(&line, "user", user);
			dlq_log_int(&line, "uid", uid);
			dlq_log_int(&line, "audited", REFUSALS_STORED);
			dlq_log_int(&line, "window_ms", REFUSAL_WINDOW_MS);
			dlq_log_end(&line);
		}
		dlq_buf_release(&line);
		return;
	}
	w->stored++;
	pthread_mutex_unlock(&refusals_mu);
	snprintf(result, sizeof(result), "refused: %.180s", why);
	dlq_archive_writer_lock();
	dlq_cases_audit_add(archive, dlq_wall_ms(), user, uid, c->name, NULL,
	    result);
	dlq_archive_writer_unlock();
}

void
dlq_requests_handle(const struct dlq_config *cfg, struct dlq_archive *archive, const char *line,
    size_t len, enum dlq_role role, const char *user, long uid, int peer,
    struct dlq_buf *out)
{
	const struct command *c = NULL;
	struct dlq_buf data;
	struct req r;
	cJSON *j, *cmd;
	char msg[160], *args;
	enum dlq_result a;
	size_t i;

	if ((j = cJSON_ParseWithLength(line, len)) == NULL || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		answer_error(out, "usage", "a request is one JSON object per line");
		return;
	}
	cmd = cJSON_GetObjectItemCaseSensitive(j, "cmd");
	for (i = 0; cJSON_IsString(cmd) && i < sizeof(commands) /
	    sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, cmd->valuestring) == 0)
			c = &commands[i];
	if (c == NULL) {
		cJSON_Delete(j);
		answer_error(out, "usage", "unknown command");
		return;
	}
	if (c->run == cmd_show_plain && cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(j, "payload")))
		c = c + 1;	/* show_payload: the operator role */
	if (role < c->role) {
		snprintf(msg, sizeof(msg), "%s needs the %s role; %.64s is %s",
		    c->label, dlq_role_name(c->role), user, dlq_role_name(role));
		answer_error(out, "permission", msg);
		refused(archive, c, role, user, uid, msg);
		cJSON_Delete(j);
		return;
	}
	/* before any lock or write: a text too long is a usage error */
	for (i = 0; i < sizeof(free_texts) / sizeof(free_texts[0]); i++)
		if (!dlq_json_text_fits(j, free_texts[i], msg, sizeof(msg))) {
			answer_error(out, "usage", msg);
			cJSON_Delete(j);
			return;
		}
	dlq_buf_init(&data);
	memset(&r, 0, sizeof(r));
	r.cfg = cfg;
	r.archive = archive;
	r.j = j;
	r.user = user;
	r.role = role;
	r.data = &data;
	r.peer = peer;
	/* a mutation and its audit entry wait their turn among the writers */
	if (c->writes == W_ONE_TURN && archive != NULL)
		dlq_archive_writer_lock();
	if (archive == NULL) {
		answer_error(out, "error", "the archive is not available");
		a = DLQ_ERROR;
	} else {
		a = c->run(&r);
		if (a == DLQ_OK || (c->writes != W_NONE && data.len > 0)) {
			dlq_buf_printf(out, "{\"ok\":%s,\"data\":",
			    a == DLQ_OK ? "true" : "false");
			dlq_buf_add(out, data.data ? data.data : "null",
			    data.len ? data.len : 4);
			if (a != DLQ_OK) {
				dlq_buf_adds(out, ",\"code\":");
				dlq_buf_json_cstr(out, dlq_result_name(a));
				dlq_buf_adds(out, ",\"error\":");
				dlq_buf_json_cstr(out, r.err);
			}
			dlq_buf_adds(out, "}\n");
		} else
			answer_error(out, dlq_result_name(a), r.err);
	}
	if (c->writes != W_NONE && archive != NULL) {
		if (c->writes == W_OWN_TURNS)
			dlq_archive_writer_lock();
		/* what was asked, not how: no "cmd", no "progress" */
		cJSON_DeleteItemFromObjectCaseSensitive(j, "cmd");
		cJSON_DeleteItemFromObjectCaseSensitive(j, "progress");
		note_unchanged_ids(c, j, &data);
		args = cJSON_PrintUnformatted(j);
		snprintf(msg, sizeof(msg), "%s%s%.140s", dlq_result_name(a),
		    a != DLQ_OK ? ": " : "", a != DLQ_OK ? r.err : "");
		dlq_cases_audit_add(archive, dlq_wall_ms(), user, uid, c->name, args,
		    msg);
		free(args);
		dlq_archive_writer_unlock();
	}
	dlq_buf_release(&data);
	cJSON_Delete(j);
}

bool
dlq_requests_send(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		p += w;
		n -= (size_t)w;
	}
	return true;
}
