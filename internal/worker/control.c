/* control.c - the control socket: peers, roles, requests, audit.
 *
 * One thread polls the listening socket and up to MAX_CLIENTS clients,
 * USER_CLIENTS of one user, the last ADMIN_CLIENTS kept for root and the
 * worker's own user; a client that sends nothing for
 * control.idle_timeout_ms after connecting or an answer (dlqctl sends
 * its request at once), or whose request is not whole within
 * REQUEST_DEADLINE_MS of its first byte, is closed. A caller without the
 * role a command needs is answered before anything is locked and leaves
 * at most a small audit row (refused).
 * Requests are parsed with cJSON and bounded in size; replies go out with
 * a send timeout so a client that does not read cannot stall the thread. */
#include "control.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "amqp.h"
#include "archive.h"
#include "cases.h"
#include "causes.h"
#include "log.h"
#include "metrics.h"
#include "mgmt.h"
#include "parentdir.h"
#include "replaysrv.h"
#include "signature.h"

#define MAX_CLIENTS	32
/* One user's connections at most: a script that leaks them (or sessions
 * left open) cannot lock the others out. */
#define USER_CLIENTS	(MAX_CLIENTS / 4)
/* Kept for root and the worker's own user: however many others hold,
 * an admin can still connect. */
#define ADMIN_CLIENTS	4
/* A request must be whole this long after its first byte: one sent a
 * byte at a time would otherwise hold its slot for ever (the idle timer
 * counts only the time between an answer and the next request). */
#define REQUEST_DEADLINE_MS	5000
#define POLL_MS		250
#define MGMT_TIMEOUT_MS	3000	/* for stats' traffic from the broker */
#define TRAFFIC_QUEUES	200	/* the most queues stats ask it about */
/* The answer buffer is reused; one larger than this (a replay chunk's
 * payloads: a 60 MiB dead letter made 128 MiB) is freed once sent. */
#define OUT_KEEP_BYTES	(1024 * 1024)
/* A request that took this long read much of a large archive: what
 * SQLite sorted and gathered for it went back to malloc's free lists,
 * whose pages stay resident until given back (malloc_trim): 3.5 MiB
 * after a `groups` of 610 000 records and 110 000 signatures. */
#define TRIM_AFTER_MS	50

struct client {
	int		 fd;
	uid_t		 uid;
	enum dlq_role	 role;
	char		 user[64];
	struct dlq_buf	 in;
	int64_t		 idle_since_ms;	/* connected, or answered */
	int64_t		 request_since_ms; /* its first byte; in.len > 0 */
};

struct dlq_control {
	const struct dlq_config	*cfg;
	struct dlq_archive	*archive;
	int			 fd;
	pthread_t		 thread;
	atomic_bool		 stop;
	struct client		 c[MAX_CLIENTS];
	size_t			 n;
	struct dlq_buf		 out;
	dev_t			 sock_dev;	/* the socket file it made */
	ino_t			 sock_ino;
};

/* A request being handled. */
struct req {
	const struct dlq_config *cfg;
	struct dlq_archive *archive;
	const cJSON	*j;
	const char	*user;
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
	if (!opt_int(r, "since_ms", 0, DLQ_JSON_INT_MAX, 0, &since) ||
	    !opt_int(r, "before_id", 1, DLQ_JSON_INT_MAX, 0, &f.before_id) ||
	    !opt_int(r, "limit", 1, DLQ_CONTROL_LIST_MAX,
	    DLQ_CONTROL_LIST_DEFAULT, &f.limit) ||
	    !opt_bool(r, "reopenable", &f.reopenable))
		return DLQ_USAGE;
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

static bool	send_all(int, const char *, size_t);

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
		send_all(r->peer, line + w, (size_t)(n - w));
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

	dlq_metrics_control_refused();
	if (role == DLQ_ROLE_NONE || c->writes == W_NONE || archive == NULL)
		return;
	w = refusal_window(uid, dlq_now_ms());
	if (w->stored >= REFUSALS_STORED) {
		/* said once a window: the flood itself is not logged */
		if (w->counted++ == 0 && dlq_log_begin(&line, DLQ_LOG_WARN,
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
	snprintf(result, sizeof(result), "refused: %.180s", why);
	dlq_archive_writer_lock();
	dlq_cases_audit_add(archive, dlq_wall_ms(), user, uid, c->name, NULL,
	    result);
	dlq_archive_writer_unlock();
}

void
dlq_control_handle(const struct dlq_config *cfg, struct dlq_archive *archive, const char *line,
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

/* The gid of group `name`: 1, 0 when the host has no such group, -1
 * when it cannot tell. A group's entry lists its members: a large one
 * does not fit the usual 4 KiB, so the buffer grows (to 1 MiB). */
static int
group_gid(const char *name, gid_t *gid)
{
	struct group gr, *res = NULL;
	size_t len = 4096;
	char *buf = NULL, *more;
	int rc;

	do {
		if ((more = realloc(buf, len)) == NULL) {
			rc = ENOMEM;
			break;
		}
		buf = more;
		rc = getgrnam_r(name, &gr, buf, len, &res);
		len *= 2;
	} while (rc == ERANGE && len <= 1024 * 1024);
	if (rc == 0 && res != NULL)
		*gid = gr.gr_gid;
	free(buf);
	if (rc == ENOENT || rc == ESRCH)	/* some NSS modules: not found */
		return 0;
	return rc != 0 ? -1 : res != NULL;
}

static bool
listed(const struct dlq_strlist *l, const char *user, const gid_t *groups,
    int ngroups)
{
	gid_t gid;
	size_t i;
	int k;

	for (i = 0; i < l->n; i++) {
		if (l->v[i][0] != '@') {
			if (strcmp(l->v[i], user) == 0)
				return true;
			continue;
		}
		if (group_gid(l->v[i] + 1, &gid) != 1)
			continue;
		for (k = 0; k < ngroups; k++)
			if (groups[k] == gid)
				return true;
	}
	return false;
}

void
dlq_control_unknown_members(const struct dlq_config *c,
    void (*say)(const char *, const char *, const char *, void *), void *arg)
{
	const struct {
		const char		*key;
		const struct dlq_strlist *l;
	} lists[] = { { "control.viewers", &c->viewers }, { "control.operators",
	    &c->operators }, { "control.admins", &c->admins } };
	struct passwd pw, *pwr;
	char buf[4096];
	const char *name;
	gid_t gid;
	size_t i, k;
	int rc;

	/* only a definite "no such name" is said; a lookup that fails
	 * (the directory unreachable) says nothing about the name */
	for (k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		for (i = 0; i < lists[k].l->n; i++) {
			name = lists[k].l->v[i];
			if (name[0] == '@') {
				if (group_gid(name + 1, &gid) == 0)
					say(lists[k].key, "group", name + 1, arg);
			} else if ((rc = getpwnam_r(name, &pw, buf, sizeof(buf),
			    &pwr)) == ENOENT || rc == ESRCH || (rc == 0 &&
			    pwr == NULL))
				say(lists[k].key, "user", name, arg);
		}
}

/* The groups of user `name` with primary group `gid`, all of them: a
 * user of a directory service is often in more than a hundred. Caller
 * frees; NULL when they cannot be listed. */
static gid_t *
user_groups(const char *name, gid_t gid, int *n)
{
	gid_t *g = NULL, *more;
	int room = 64;

	while (room <= 65536 &&
	    (more = realloc(g, (size_t)room * sizeof(*g))) != NULL) {
		g = more;
		*n = room;
		if (getgrouplist(name, gid, g, n) >= 0)
			return g;
		if (*n <= room)		/* failed, not for want of room */
			break;
		room = *n;
	}
	free(g);
	return NULL;
}

enum dlq_role
dlq_control_role(const struct dlq_config *c, uid_t uid, gid_t gid, char *user,
    size_t userlen)
{
	struct passwd pw, *res;
	gid_t *groups = NULL;
	const gid_t *g;
	int ngroups = 1;
	char buf[4096];
	enum dlq_role role;

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res != NULL)
		snprintf(user, userlen, "%s", pw.pw_name);
	else
		snprintf(user, userlen, "uid:%ld", (long)uid);
	if (uid == 0 || uid == geteuid())
		return DLQ_ROLE_ADMIN;
	if (res != NULL)
		groups = user_groups(pw.pw_name, gid, &ngroups);
	if (groups == NULL)
		ngroups = 1;	/* the primary group only */
	g = groups != NULL ? groups : &gid;
	if (listed(&c->admins, user, g, ngroups))
		role = DLQ_ROLE_ADMIN;
	else if (listed(&c->operators, user, g, ngroups))
		role = DLQ_ROLE_OPERATOR;
	else if (listed(&c->viewers, user, g, ngroups))
		role = DLQ_ROLE_VIEWER;
	else
		role = DLQ_ROLE_NONE;
	free(groups);
	return role;
}

static void
drop_client(struct dlq_control *k, size_t i)
{
	close(k->c[i].fd);
	dlq_buf_release(&k->c[i].in);
	k->c[i] = k->c[--k->n];
}

static bool
send_all(int fd, const char *p, size_t n)
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

/* Says `error` (short, plain ASCII) to a client about to be closed. */
static void
say_closing(int fd, const char *error)
{
	char line[256];
	int n;

	n = snprintf(line, sizeof(line), "{\"ok\":false,\"code\":\"error\","
	    "\"error\":\"%.200s\"}\n", error);
	if (n > 0 && (size_t)n < sizeof(line))
		send_all(fd, line, (size_t)n);
}

static size_t
clients_of(const struct dlq_control *k, uid_t uid)
{
	size_t i, n = 0;

	for (i = 0; i < k->n; i++)
		n += k->c[i].uid == uid;
	return n;
}

static void
accept_client(struct dlq_control *k)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct timeval tv = { 2, 0 };
	struct client *c;
	char why[128];
	int fd;

	if ((fd = accept4(k->fd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (k->n >= MAX_CLIENTS ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    (k->n >= MAX_CLIENTS - ADMIN_CLIENTS && cred.uid != 0 &&
	    cred.uid != geteuid())) {
		say_closing(fd, "too many control connections");
		close(fd);
		return;
	}
	if (clients_of(k, cred.uid) >= USER_CLIENTS) {
		snprintf(why, sizeof(why), "too many control connections of "
		    "this user (%d at most)", USER_CLIENTS);
		say_closing(fd, why);
		close(fd);
		return;
	}
	c = &k->c[k->n++];
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->uid = cred.uid;
	c->role = dlq_control_role(k->cfg, cred.uid, cred.gid, c->user,
	    sizeof(c->user));
	dlq_buf_init(&c->in);
	c->idle_since_ms = dlq_now_ms();
}

/* A request line longer than DLQ_CONTROL_REQUEST_MAX, whole or not: said,
 * then the client is dropped (false). */
static bool
refuse_large(int fd)
{
	static const char big[] = "{\"ok\":false,\"code\":\"usage\","
	    "\"error\":\"request too large\"}\n";

	send_all(fd, big, sizeof(big) - 1);
	return false;
}

/* Reads what is there; handles complete lines. False: drop the client. */
static bool
serve_client(struct dlq_control *k, struct client *c)
{
	char buf[16384], *nl;
	ssize_t n;
	size_t used;
	int64_t t0;
	bool sent;

	if ((n = read(c->fd, buf, sizeof(buf))) <= 0)
		return n < 0 && errno == EINTR;
	if (c->in.len == 0)
		c->request_since_ms = dlq_now_ms();
	dlq_buf_add(&c->in, buf, (size_t)n);
	while (c->in.len > 0 && (nl = memchr(c->in.data, '\n', c->in.len))) {
		used = (size_t)(nl - c->in.data) + 1;
		if (used - 1 > DLQ_CONTROL_REQUEST_MAX)
			return refuse_large(c->fd);
		dlq_buf_reset(&k->out);
		t0 = dlq_now_ms();
		dlq_control_handle(k->cfg,
		    k->archive,
		    c->in.data, used - 1, c->role, c->user, (long)c->uid, c->fd,
		    &k->out);
		memmove(c->in.data, c->in.data + used, c->in.len - used);
		c->in.len -= used;
		sent = send_all(c->fd, k->out.data, k->out.len);
		/* now its turn to ask; what it sent after this request
		 * began the next one */
		c->idle_since_ms = c->request_since_ms = dlq_now_ms();
		if (k->out.cap > OUT_KEEP_BYTES) {
			dlq_buf_release(&k->out);
			dlq_buf_init(&k->out);
		}
		if (dlq_now_ms() - t0 >= TRIM_AFTER_MS)
			malloc_trim(0);
		if (!sent)
			return false;
	}
	if (c->in.len > DLQ_CONTROL_REQUEST_MAX || c->in.oom)
		return refuse_large(c->fd);
	return true;
}

static void *
run(void *arg)
{
	struct dlq_control *k = arg;
	struct pollfd p[MAX_CLIENTS + 1];
	char idle[128], slow[128];
	const char *why;
	int64_t now;
	size_t i, n;

	snprintf(idle, sizeof(idle), "nothing sent for %lld ms "
	    "(control.idle_timeout_ms): connection closed",
	    (long long)k->cfg->control_idle_ms);
	snprintf(slow, sizeof(slow), "request not complete %d ms after its "
	    "first byte: connection closed", REQUEST_DEADLINE_MS);
	while (!k->stop) {
		p[0].fd = k->fd;
		p[0].events = POLLIN;
		for (i = 0; i < k->n; i++) {
			p[i + 1].fd = k->c[i].fd;
			p[i + 1].events = POLLIN;
			p[i + 1].revents = 0;
		}
		n = k->n;
		if (poll(p, n + 1, POLL_MS) < 0)
			continue;
		/* clients first, from the end: dropping moves the last one.
		 * One that sent nothing for too long is closed (what came
		 * while another's request was handled is read first). */
		for (i = n; i-- > 0;) {
			if (p[i + 1].revents && !serve_client(k, &k->c[i])) {
				drop_client(k, i);
				continue;
			}
			now = dlq_now_ms();
			why = NULL;
			if (k->c[i].in.len > 0 && now -
			    k->c[i].request_since_ms >= REQUEST_DEADLINE_MS)
				why = slow;
			else if (k->c[i].in.len == 0 && now -
			    k->c[i].idle_since_ms >= k->cfg->control_idle_ms)
				why = idle;
			if (why != NULL) {
				say_closing(k->c[i].fd, why);
				drop_client(k, i);
			}
		}
		if (p[0].revents & POLLIN)
			accept_client(k);
	}
	while (k->n > 0)
		drop_client(k, k->n - 1);
	return NULL;
}

/* Makes way for the socket at `sa`: nothing there, or a socket no one
 * listens on (left by a worker that was killed), which is removed. A
 * live socket means another worker: never stolen. Anything else (a
 * file, a directory, a link: control.socket given the archive's path by
 * a slip) is refused and left as it is. */
static int
clear_socket_path(const struct sockaddr_un *sa, char *why, size_t size)
{
	struct stat st;
	int probe, live;

	if (lstat(sa->sun_path, &st) == -1)
		return 0;	/* nothing there; or bind says why not */
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, size, "the path exists and is not a socket "
		    "(left as it is: is control.socket right?)");
		return -1;
	}
	if ((probe = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0) {
		live = connect(probe, (const struct sockaddr *)sa,
		    sizeof(*sa)) == 0;
		close(probe);
		if (live) {
			snprintf(why, size, "%s: another process answers on "
			    "it (a second dlq-worker with the same "
			    "control.socket?)", strerror(EADDRINUSE));
			return -1;
		}
	}
	unlink(sa->sun_path);
	return 0;
}

/* The directory of the socket must be one others cannot write to (nor
 * anyone but us or root own): in a world-writable one, anyone could put
 * a link or a socket of their own where dlqctl looks. */
static int
check_socket_dir(const char *path, char *why, size_t size)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
		    (int)(slash - path), path);
	if (stat(dir, &st) != 0) {
		snprintf(why, size, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if ((st.st_mode & S_IWOTH) || (st.st_uid != 0 &&
	    st.st_uid != geteuid())) {
		snprintf(why, size, "its directory %s is %s: put the socket in "
		    "a directory only the worker's user can write (the "
		    "default /run/dlq-monitor/ is made so)", dir,
		    (st.st_mode & S_IWOTH) ? "writable by every user" :
		    "owned by another user");
		return -1;
	}
	return 0;
}

/* Binds the control socket at `path`, world-connectable (the roles are
 * the access control). It is made and given its mode in a directory of
 * its own that only this user can enter, then moved into place: a chmod
 * at the path would follow a link put there in between. Fails, saying
 * why, when another worker holds it, something else is at the path, its
 * directory is writable by others, or could not be made (a user who may
 * not write /run). */
static int
bind_socket(struct dlq_control *k, const char *path, char *why, size_t size)
{
	struct sockaddr_un sa, tmp;
	char dir[sizeof(sa.sun_path) - 2];	/* and "/s" */
	const char *slash = strrchr(path, '/');
	struct stat st;
	int dir_err, n;
	bool moved;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	tmp = sa;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, size, "%s", strerror(ENAMETOOLONG));
		return -1;
	}
	strcpy(sa.sun_path, path);
	/* others reach the socket through it: 0755. A directory that
	 * cannot be made is why the bind below fails. */
	dir_err = dlq_parentdir_make(path, 0755, why, size);
	if (dir_err != 0 || check_socket_dir(path, why, size) == -1 ||
	    clear_socket_path(&sa, why, size) == -1)
		return -1;
	/* a path too long for the private directory's name beside it is
	 * bound in place: its directory is not writable by others either */
	n = snprintf(dir, sizeof(dir), "%.*s.dlqXXXXXX", slash ? (int)(slash -
	    path + 1) : 0, path);
	moved = n > 0 && (size_t)n < sizeof(dir) && mkdtemp(dir) != NULL;
	snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s", moved ? dir : path);
	if (moved)
		strcat(tmp.sun_path, "/s");
	if ((k->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0)) >= 0 && bind(k->fd, (struct sockaddr *)&tmp,
	    sizeof(tmp)) == 0 && chmod(tmp.sun_path, 0666) == 0 &&
	    (!moved || rename(tmp.sun_path, path) == 0) &&
	    lstat(path, &st) == 0 && listen(k->fd, 64) == 0) {
		if (moved)
			rmdir(dir);
		k->sock_dev = st.st_dev;
		k->sock_ino = st.st_ino;
		return 0;
	}
	snprintf(why, size, "%s", strerror(errno));
	if (moved) {
		unlink(tmp.sun_path);
		rmdir(dir);
	}
	return -1;
}

/* At stop: the socket file goes, if it is still the one it made (not
 * one a worker started since put there after this one's was removed). */
static void
remove_socket(const struct dlq_control *k)
{
	struct stat st;

	if (lstat(k->cfg->control_socket, &st) == 0 &&
	    st.st_dev == k->sock_dev && st.st_ino == k->sock_ino)
		unlink(k->cfg->control_socket);
}

static void
log_unknown_member(const char *key, const char *what, const char *name,
    void *arg)
{
	(void)arg;
	dlq_log(DLQ_LOG_WARN, "control_member_unknown", "setting", key, what,
	    name, NULL);
}

struct dlq_control *
dlq_control_start(const struct dlq_config *c)
{
	struct dlq_control *k;
	char why[256];

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->cfg = c;
	k->fd = -1;
	dlq_buf_init(&k->out);
	if (bind_socket(k, c->control_socket, why, sizeof(why)) == -1) {
		dlq_log(DLQ_LOG_ERR, "control_failed", "socket", c->control_socket,
		    "error", why, NULL);
		goto fail;
	}
	if ((k->archive = dlq_archive_open(c)) == NULL)
		goto fail;
	if (pthread_create(&k->thread, NULL, run, k) != 0)
		goto fail;
	dlq_log(DLQ_LOG_INFO, "control_listening", "socket", c->control_socket,
	    NULL);
	dlq_control_unknown_members(c, log_unknown_member, NULL);
	return k;
fail:
	if (k->fd >= 0)
		close(k->fd);
	dlq_archive_close(k->archive);
	dlq_buf_release(&k->out);
	free(k);
	return NULL;
}

void
dlq_control_stop(struct dlq_control *k)
{
	if (k == NULL)
		return;
	k->stop = true;
	pthread_join(k->thread, NULL);
	close(k->fd);
	remove_socket(k);
	dlq_archive_close(k->archive);
	dlq_buf_release(&k->out);
	free(k);
}
