/* api.c - the console's JSON API (api.h). */
#include "api.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amqp.h"
#include "archive.h"
#include "cases.h"
#include "duration.h"
#include "replaydecide.h"
#include "replayjob.h"
#include "requests.h"
#include "topology.h"

#define PREFIX	"/api/v1/"
#define CANARY_WATCH_MS	30000	/* as dlqctl replay --canary-watch */

struct dlq_api {
	const struct dlq_config	*cfg;
	struct dlq_archive	*archive;
	struct dlq_replay_jobs	*jobs;
};

/* A query parameter: its name, the request key it fills and its kind. */
enum kind { K_STR, K_INT, K_BOOL, K_AGE };	/* K_AGE: "2h" -> *_ms */
struct param {
	const char	*name, *key;
	enum kind	 kind;
};

static const struct param list_params[] = {
	{ "queue", "queue", K_STR }, { "status", "status", K_STR },
	{ "class", "class", K_STR }, { "signature", "signature", K_STR },
	{ "owner", "owner", K_STR }, { "message_id", "message_id", K_STR },
	{ "correlation_id", "correlation_id", K_STR },
	{ "text", "text", K_STR }, { "since", "since_ms", K_AGE },
	{ "before_id", "before_id", K_INT }, { "limit", "limit", K_INT },
	{ "reopenable", "reopenable", K_BOOL }, { NULL, NULL, K_STR } };
static const struct param groups_params[] = {
	{ "queue", "queue", K_STR }, { "class", "class", K_STR },
	{ "since", "since_ms", K_AGE }, { "limit", "limit", K_INT },
	{ "by_cause", "by_cause", K_BOOL }, { NULL, NULL, K_STR } };
static const struct param audit_params[] = {
	{ "actor", "actor", K_STR }, { "command", "command", K_STR },
	{ "since", "since_ms", K_AGE }, { "before_id", "before_id", K_INT },
	{ "limit", "limit", K_INT }, { NULL, NULL, K_STR } };
static const struct param no_params[] = { { NULL, NULL, K_STR } };

/* The keys each body may hold (those of the control request). */
static const char *const assign_keys[] = { "ids", "owner", "decision",
	"evidence", "escalate_in_ms", NULL };
static const char *const drop_keys[] = { "ids", "reason", NULL };
static const char *const resume_keys[] = { "queue", "reason", NULL };
static const char *const replay_keys[] = { "ids", "queue", "signature",
	"class", "since_ms", "limit", "reason", "evidence", "force",
	"reset_retries", "to_exchange", "routing_key", "execute", "rate",
	"canary", "canary_watch_ms", NULL };

struct dlq_api *
dlq_api_new(const struct dlq_config *c, struct dlq_archive *archive)
{
	struct dlq_api *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	a->cfg = c;
	a->archive = archive;
	if ((a->jobs = dlq_replay_jobs_new(c)) == NULL) {
		free(a);
		return NULL;
	}
	return a;
}

void
dlq_api_free(struct dlq_api *a)
{
	if (a == NULL)
		return;
	dlq_replay_jobs_free(a->jobs);
	free(a);
}

/* The HTTP status of a control answer's code. */
static unsigned
status_of(const char *code)
{
	static const struct { const char *code; unsigned status; } map[] = {
		{ "usage", 400 }, { "permission", 403 }, { "not_found", 404 },
		{ "refused", 409 }, { "error", 500 } };
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].code, code) == 0)
			return map[i].status;
	return 500;
}

static const char *
actor_of(const struct dlq_console_user *u, char *buf, size_t n)
{
	snprintf(buf, n, "console:%s", u->name);
	return buf;
}

/* Runs `req` (freed) as `u`; the answer is the response. */
static void
run(struct dlq_api *a, const struct dlq_console_user *u, cJSON *req,
    struct dlq_console_res *res)
{
	char *line = cJSON_PrintUnformatted(req), actor[96];
	const char *p;
	cJSON *ans;

	cJSON_Delete(req);
	if (line == NULL) {
		dlq_console_error(res, 500, "error", "out of memory");
		return;
	}
	dlq_requests_handle(a->cfg, a->archive, line, strlen(line), u->role,
	    actor_of(u, actor, sizeof(actor)), -1, -1, res->body);
	cJSON_free(line);
	res->type = "application/json";
	p = res->body->data ? res->body->data : "";
	if (strncmp(p, "{\"ok\":true", 10) == 0) {
		res->status = 200;
		return;
	}
	/* an error: small, or a change's answer with its ids */
	ans = cJSON_ParseWithLength(p, res->body->len);
	res->status = status_of(cJSON_IsString(cJSON_GetObjectItem(ans,
	    "code")) ? cJSON_GetObjectItem(ans, "code")->valuestring : "error");
	cJSON_Delete(ans);
}

static const struct param *
param_named(const struct param *ps, const char *name)
{
	for (; ps->name != NULL; ps++)
		if (strcmp(ps->name, name) == 0)
			return ps;
	return NULL;
}

/* The query parameters as a request of `cmd`; NULL with the error
 * answered. Names are matched exactly, each once. */
static cJSON *
from_query(const struct dlq_console_req *q, const char *cmd,
    const struct param *ps, struct dlq_console_res *res)
{
	cJSON *req = cJSON_CreateObject();
	const struct param *p;
	char msg[256], *end;
	long long v;
	size_t i;

	cJSON_AddStringToObject(req, "cmd", cmd);
	if (q->too_many_args) {
		dlq_console_error(res, 400, "usage",
		    "too many query parameters");
		goto fail;
	}
	for (i = 0; i < q->nargs; i++) {
		if ((p = param_named(ps, q->args[i].k)) == NULL) {
			snprintf(msg, sizeof(msg), "unknown parameter '%.40s'",
			    q->args[i].k);
			dlq_console_error(res, 400, "usage", msg);
			goto fail;
		}
		if (cJSON_HasObjectItem(req, p->key)) {
			snprintf(msg, sizeof(msg), "'%s' is given twice",
			    p->name);
			dlq_console_error(res, 400, "usage", msg);
			goto fail;
		}
		switch (p->kind) {
		case K_STR:
			cJSON_AddStringToObject(req, p->key, q->args[i].v);
			break;
		case K_INT:
			v = strtoll(q->args[i].v, &end, 10);
			if (*q->args[i].v == '\0' || *end != '\0') {
				snprintf(msg, sizeof(msg), "'%s' must be an "
				    "integer", p->name);
				dlq_console_error(res, 400, "usage", msg);
				goto fail;
			}
			cJSON_AddNumberToObject(req, p->key, (double)v);
			break;
		case K_BOOL:
			if (strcmp(q->args[i].v, "true") != 0 &&
			    strcmp(q->args[i].v, "false") != 0) {
				snprintf(msg, sizeof(msg),
				    "'%s' must be true or "
				    "false", p->name);
				dlq_console_error(res, 400, "usage", msg);
				goto fail;
			}
			cJSON_AddBoolToObject(req, p->key, q->args[i].v[0] ==
			    't');
			break;
		case K_AGE:
			if ((v = dlq_parse_duration(q->args[i].v)) <= 0) {
				snprintf(msg, sizeof(msg), "'%s' must be a "
				    "duration such as 30m, 2h or 7d", p->name);
				dlq_console_error(res, 400, "usage", msg);
				goto fail;
			}
			cJSON_AddNumberToObject(req, p->key, (double)v);
			break;
		}
	}
	return req;
fail:
	cJSON_Delete(req);
	return NULL;
}

/* The body as a request of `cmd`: a JSON object of `keys` only. */
static cJSON *
from_body(const struct dlq_console_req *q, const char *cmd,
    const char *const *keys, struct dlq_console_res *res)
{
	const char *const *k;
	cJSON *req, *e;
	char msg[256];

	if (q->nargs > 0 || q->too_many_args) {
		dlq_console_error(res, 400, "usage",
		    "a change takes no query parameters; "
		    "its options go in the JSON body");
		return NULL;
	}
	if (q->body_too_large) {
		snprintf(msg, sizeof(msg), "the body is too large (at most %d "
		    "bytes)", DLQ_CONSOLE_BODY_MAX);
		dlq_console_error(res, 400, "usage", msg);
		return NULL;
	}
	if (q->content_type == NULL || strncmp(q->content_type,
	    "application/json", 16) != 0) {
		dlq_console_error(res, 400, "usage",
		    "the body must be application/json");
		return NULL;
	}
	if ((req = cJSON_ParseWithLength(q->body ? q->body : "",
	    q->body_len)) == NULL || !cJSON_IsObject(req)) {
		cJSON_Delete(req);
		dlq_console_error(res, 400, "usage",
		    "the body must be one JSON object");
		return NULL;
	}
	cJSON_ArrayForEach(e, req) {
		for (k = keys; *k != NULL && strcmp(*k, e->string) != 0; k++)
			;
		if (*k == NULL) {
			snprintf(msg, sizeof(msg), "unknown field '%.40s'",
			    e->string);
			dlq_console_error(res, 400, "usage", msg);
			cJSON_Delete(req);
			return NULL;
		}
	}
	cJSON_AddStringToObject(req, "cmd", cmd);
	return req;
}

/* A read's ETag: where the archive is, and for which role (answers
 * differ by role). True when the client has it already (304 sent). */
static bool
not_modified(struct dlq_api *a, const struct dlq_console_user *u,
    const struct dlq_console_req *q, struct dlq_console_res *res)
{
	struct dlq_buf v;
	char tag[96];
	size_t i, o = 0;

	dlq_buf_init(&v);
	if (dlq_cases_version(a->archive, &v) != DLQ_OK || v.data == NULL) {
		dlq_buf_release(&v);
		return false;
	}
	tag[o++] = '"';
	/* [12,40] -> "12.40.role"; null (an empty table) -> 0 */
	for (i = 0; i < v.len && o < sizeof(tag) - 24; i++)
		if ((v.data[i] >= '0' && v.data[i] <= '9') || v.data[i] == ',')
			tag[o++] = v.data[i] == ',' ? '.' : v.data[i];
		else if (v.data[i] == 'n')
			tag[o++] = '0';
	snprintf(tag + o, sizeof(tag) - o, ".%s\"", dlq_role_name(u->role));
	dlq_buf_release(&v);
	dlq_console_header(res, "ETag", tag);
	dlq_console_header(res, "Vary", "Authorization, Cookie");
	if (q->if_none_match == NULL || strcmp(q->if_none_match, tag) != 0)
		return false;
	res->status = 304;
	res->type = "application/json";
	return true;
}

static void
read_query(struct dlq_api *a, const struct dlq_console_user *u,
    const struct dlq_console_req *q, const char *cmd,
    const struct param *ps, struct dlq_console_res *res)
{
	cJSON *req = from_query(q, cmd, ps, res);

	if (req == NULL)
		return;
	/* the list's payload preview for those who may read payloads */
	if (strcmp(cmd, "list") == 0 && u->role >= DLQ_ROLE_OPERATOR)
		cJSON_AddTrueToObject(req, "preview");
	if (not_modified(a, u, q, res)) {
		cJSON_Delete(req);
		return;
	}
	run(a, u, req, res);
}

static void
show(struct dlq_api *a, const struct dlq_console_user *u,
    const struct dlq_console_req *q, const char *id,
    struct dlq_console_res *res)
{
	cJSON *req;
	char *end;
	long long v = strtoll(id, &end, 10);

	if (*id == '\0' || *end != '\0' || v < 1) {
		dlq_console_error(res, 404, "not_found",
		    "no such resource (a dead letter "
		    "is named by its archive id)");
		return;
	}
	if ((req = from_query(q, "show", no_params, res)) == NULL)
		return;
	cJSON_AddNumberToObject(req, "id", (double)v);
	/* payload and headers for those who may read them */
	if (u->role >= DLQ_ROLE_OPERATOR)
		cJSON_AddTrueToObject(req, "payload");
	if (not_modified(a, u, q, res)) {
		cJSON_Delete(req);
		return;
	}
	run(a, u, req, res);
}

static void
topology(struct dlq_api *a, struct dlq_console_res *res)
{
	struct dlq_topology *t;
	struct dlq_buf why;
	size_t i;

	dlq_buf_init(&why);
	t = dlq_topology_load(a->cfg->topology_file, a->cfg->dlq_suffix, &why);
	if (t == NULL) {
		dlq_console_error(res, 500, "error",
		    why.data ? why.data : "no topology");
		dlq_buf_release(&why);
		return;
	}
	dlq_buf_release(&why);
	res->status = 200;
	res->type = "application/json";
	dlq_buf_adds(res->body, "{\"ok\":true,\"data\":{\"source\":");
	dlq_buf_json_cstr(res->body, t->source);
	dlq_buf_adds(res->body, ",\"work_exchange\":");
	dlq_buf_json_cstr(res->body, t->work_exchange);
	dlq_buf_adds(res->body, ",\"dead_letter_exchange\":");
	dlq_buf_json_cstr(res->body, t->dead_letter_exchange);
	dlq_buf_adds(res->body, ",\"queues\":[");
	for (i = 0; i < t->n_queues; i++) {
		dlq_buf_adds(res->body, i ? ",{\"name\":" : "{\"name\":");
		dlq_buf_json_cstr(res->body, t->queues[i].name);
		dlq_buf_adds(res->body, ",\"dlq\":");
		dlq_buf_json_cstr(res->body, t->queues[i].dlq_name);
		dlq_buf_adds(res->body, ",\"retry_queue\":");
		dlq_buf_json_cstr(res->body, t->queues[i].retry_name);
		dlq_buf_printf(res->body, ",\"type\":\"%s\",\"retry_delay_ms\":"
		    "%lld,\"max_retries\":%lld,\"monitored\":%s}",
		    t->queues[i].type == DLQ_QUEUE_QUORUM ? "quorum" :
		    "classic",
		    (long long)t->queues[i].retry_delay_ms,
		    (long long)t->queues[i].max_retries,
		    t->queues[i].monitored ? "true" : "false");
	}
	dlq_buf_adds(res->body, "]}}\n");
	dlq_topology_free(t);
}

/* The eligible ids of a plan's answer (malloc'd), and how many. */
static int64_t *
eligible_ids(const cJSON *plan, int *n)
{
	const cJSON *e;
	int64_t *ids = calloc((size_t)cJSON_GetArraySize(plan) + 1,
	    sizeof(*ids));

	*n = 0;
	if (ids == NULL)
		return NULL;
	cJSON_ArrayForEach(e, plan)
		if (cJSON_IsTrue(cJSON_GetObjectItem(e, "eligible")))
			ids[(*n)++] = (int64_t)cJSON_GetObjectItem(e,
			    "id")->valuedouble;
	return ids;
}

static const char *
body_text(const cJSON *req, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, k);

	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* An integer option of an execute: false (answered) when wrong. */
static bool
body_int(const cJSON *req, const char *k, int64_t min, int64_t max,
    int64_t *out, struct dlq_console_res *res)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, k);
	char msg[128];

	if (v == NULL)
		return true;
	if (!dlq_json_int(v, min, max, out)) {
		snprintf(msg, sizeof(msg), "'%s' must be an integer in "
		    "%lld..%lld", k, (long long)min, (long long)max);
		dlq_console_error(res, 400, "usage", msg);
		return false;
	}
	return true;
}

/* POST /api/v1/replays: the plan (a dry run, the default), or with
 * "execute": true the plan and a job that replays what it found
 * eligible (202, the job's id; GET /api/v1/replays/ID follows it). */
static void
replay(struct dlq_api *a, const struct dlq_console_user *u,
    const struct dlq_console_req *q, struct dlq_console_res *res)
{
	struct dlq_replay_order o;
	cJSON *req = from_body(q, "replay_plan", replay_keys, res), *ans;
	const cJSON *ids;
	bool execute;
	char actor[96], why[256], *plan;
	int64_t job, *elig;

	if (req == NULL)
		return;
	execute = cJSON_IsTrue(cJSON_GetObjectItem(req, "execute"));
	if (cJSON_HasObjectItem(req, "execute") &&
	    !cJSON_IsBool(cJSON_GetObjectItem(req, "execute"))) {
		cJSON_Delete(req);
		dlq_console_error(res, 400, "usage", "'execute' must be true "
		    "or false (false, the default: a dry run)");
		return;
	}
	memset(&o, 0, sizeof(o));
	o.rate = a->cfg->replay_rate;
	o.canary_watch_ms = CANARY_WATCH_MS;
	if (!body_int(req, "rate", 0, 100000, &o.rate, res) ||
	    !body_int(req, "canary", 0, DLQ_REPLAY_PLAN_MAX, &o.canary, res) ||
	    !body_int(req, "canary_watch_ms", 0, 3600000, &o.canary_watch_ms,
	    res)) {
		cJSON_Delete(req);
		return;
	}
	ids = cJSON_GetObjectItem(req, "ids");
	/* a selection by ids is planned whole */
	if (cJSON_IsArray(ids) && !cJSON_HasObjectItem(req, "limit"))
		cJSON_AddNumberToObject(req, "limit", cJSON_GetArraySize(ids) >
		    0 ? cJSON_GetArraySize(ids) : 1);
	if (execute && body_text(req, "reason") == NULL) {
		cJSON_Delete(req);
		dlq_console_error(res, 400, "usage",
		    "an executed replay needs a 'reason' "
		    "(it goes into x-replay-reason and the audit)");
		return;
	}
	o.reason = body_text(req, "reason");
	o.evidence = body_text(req, "evidence");
	o.to_exchange = body_text(req, "to_exchange");
	o.routing_key = body_text(req, "routing_key");
	o.force = cJSON_IsTrue(cJSON_GetObjectItem(req, "force"));
	o.reset_retries = cJSON_IsTrue(cJSON_GetObjectItem(req,
	    "reset_retries"));
	/* the plan: the role, the selection and the texts checked as the
	 * socket checks them */
	run(a, u, cJSON_Duplicate(req, 1), res);
	if (!execute || res->status != 200) {
		cJSON_Delete(req);
		return;
	}
	ans = cJSON_ParseWithLength(res->body->data, res->body->len);
	elig = eligible_ids(cJSON_GetObjectItem(ans, "data"), &o.n);
	o.ids = elig;
	job = elig == NULL ? 0 : dlq_replay_job_start(a->jobs, &o,
	    actor_of(u, actor, sizeof(actor)), u->role, why, sizeof(why));
	if (job == 0)
		dlq_console_error(res, 409, "refused",
		    elig == NULL ? "out of memory" : why);
	else {
		dlq_buf_reset(res->body);
		res->status = 202;
		dlq_buf_printf(res->body, "{\"ok\":true,\"data\":{\"job\":%lld,"
		    "\"eligible\":%d,\"plan\":", (long long)job, o.n);
		plan = cJSON_PrintUnformatted(cJSON_GetObjectItem(ans, "data"));
		dlq_buf_adds(res->body, plan != NULL ? plan : "[]");
		cJSON_free(plan);
		dlq_buf_adds(res->body, "}}\n");
		snprintf(why, sizeof(why), "/api/v1/replays/%lld",
		    (long long)job);
		dlq_console_header(res, "Location", why);
	}
	free(elig);
	cJSON_Delete(ans);
	cJSON_Delete(req);
}

static void
replay_job(struct dlq_api *a, const struct dlq_console_user *u,
    const char *id, struct dlq_console_res *res)
{
	char *end;
	long long v = strtoll(id, &end, 10);

	if (u->role < DLQ_ROLE_OPERATOR) {
		dlq_console_error(res, 403, "permission",
		    "replay needs the operator role");
		return;
	}
	dlq_buf_adds(res->body, "{\"ok\":true,\"data\":");
	if (*id == '\0' || *end != '\0' || !dlq_replay_job_json(a->jobs, v,
	    res->body)) {
		dlq_console_error(res, 404, "not_found",
		    "no such replay (only the last one "
		    "is kept)");
		return;
	}
	dlq_buf_adds(res->body, "}\n");
	res->status = 200;
	res->type = "application/json";
}

static bool
is(const struct dlq_console_req *q, const char *method, const char *path)
{
	return strcmp(q->method, method) == 0 && strcmp(q->url + strlen(PREFIX),
	    path) == 0;
}

static void
change(struct dlq_api *a, const struct dlq_console_user *u,
    const struct dlq_console_req *q, const char *cmd,
    const char *const *keys, struct dlq_console_res *res)
{
	cJSON *req = from_body(q, cmd, keys, res);

	if (req != NULL)
		run(a, u, req, res);
}

void
dlq_api_handle(struct dlq_api *a, const struct dlq_console_user *u,
    const struct dlq_console_req *q, struct dlq_console_res *res)
{
	const char *path = q->url + strlen(PREFIX);
	bool get = strcmp(q->method, "GET") == 0 || strcmp(q->method,
	    "HEAD") == 0;
	cJSON *req;

	if (strncmp(q->url, PREFIX, strlen(PREFIX)) != 0) {
		dlq_console_error(res, 404, "not_found",
		    "the API is under /api/v1/");
		return;
	}
	if (get && strcmp(path, "dead-letters") == 0)
		read_query(a, u, q, "list", list_params, res);
	else if (get && strncmp(path, "dead-letters/", 13) == 0)
		show(a, u, q, path + 13, res);
	else if (get && strcmp(path, "stats") == 0)
		read_query(a, u, q, "stats", no_params, res);
	else if (get && strcmp(path, "groups") == 0)
		read_query(a, u, q, "groups", groups_params, res);
	else if (get && strcmp(path, "audit") == 0)
		read_query(a, u, q, "audit", audit_params, res);
	else if (get && strcmp(path, "redrive") == 0)
		read_query(a, u, q, "redrive_status", no_params, res);
	else if (get && strcmp(path, "topology") == 0) {
		if ((req = from_query(q, "topology", no_params, res)) != NULL) {
			cJSON_Delete(req);
			topology(a, res);
		}
	} else if (get && strncmp(path, "replays/", 8) == 0)
		replay_job(a, u, path + 8, res);
	else if (is(q, "POST", "dead-letters/assign"))
		change(a, u, q, "assign", assign_keys, res);
	else if (is(q, "POST", "dead-letters/drop"))
		change(a, u, q, "drop", drop_keys, res);
	else if (is(q, "POST", "dead-letters/reopen"))
		change(a, u, q, "reopen", drop_keys, res);
	else if (is(q, "POST", "redrive/resume"))
		change(a, u, q, "redrive_resume", resume_keys, res);
	else if (is(q, "POST", "replays"))
		replay(a, u, q, res);
	else if (get || strcmp(q->method, "POST") == 0)
		dlq_console_error(res, 404, "not_found", "no such resource "
		    "(docs/openapi.json lists them)");
	else
		dlq_console_error(res, 405, "usage", "no such method (GET and "
		    "POST; docs/openapi.json)");
}
