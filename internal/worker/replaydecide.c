/* replaydecide.c - a replay's rules and answers, whatever the backend
 * (replaydecide.h). */
#include "replaydecide.h"

#include <stdio.h>
#include <string.h>

#include "amqp.h"
#include "duration.h"
#include "signature.h"

void
dlq_replay_col(char *out, size_t n, const void *text, size_t len)
{
	if (text == NULL)
		len = 0;
	if (len > n - 1)
		len = dlq_utf8_prefix(text, n - 1);
	if (len > 0)
		memcpy(out, text, len);
	out[len] = '\0';
}

static const char *
jstr(const cJSON *req, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, k);

	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* A free text of the request (reason, evidence): NULL when only blank. */
static const char *
jtext(const cJSON *req, const char *k)
{
	return dlq_json_text(cJSON_GetObjectItemCaseSensitive(req, k));
}

/* The reason and evidence a replay records, each within the limit. */
static bool
texts_fit(const cJSON *req, char *why, size_t n)
{
	return dlq_json_text_fits(req, "reason", why, n) &&
	    dlq_json_text_fits(req, "evidence", why, n);
}

static bool
jtrue(const cJSON *req, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, k));
}

/* Age of the message: from its own timestamp when it has one (an OTP's
 * age is counted from when it was sent), else from when it first died
 * (it may have gone round a retry queue for long before its last
 * death), else from when it was archived. */
static int64_t
age_ms(const struct dlq_replay_row *r, int64_t now)
{
	int64_t died = r->first_death_ms > 0 &&
	    r->first_death_ms < r->received_at ? r->first_death_ms :
	    r->received_at;

	return now - dlq_replay_born_ms((uint64_t)r->timestamp, died);
}

/* Evidence given with the replay is fresh; else the case's own, as old
 * as its check (-1: none). */
static int64_t
evidence_age_ms(const cJSON *req, const struct dlq_replay_row *r,
    int64_t now)
{
	if (jtext(req, "evidence") != NULL)
		return 0;
	return r->evidence_at > 0 ? now - r->evidence_at : -1;
}

static bool
decide(const struct dlq_config *c, const cJSON *req,
    const struct dlq_replay_row *r, int64_t now,
    struct dlq_replay_policy *p, char *why, size_t n)
{
	struct dlq_replay_facts f;

	dlq_config_replay_policy(c, r->queue, p);
	f.status = r->status;
	f.class = r->class;
	f.owner = r->has_owner ? r->owner : NULL;
	f.age_ms = age_ms(r, now);
	f.replay_count = r->replay_count;
	f.evidence_age_ms = evidence_age_ms(req, r, now);
	return dlq_replay_eligible(p, &f, jtrue(req, "force"), why, n);
}

static void
target(const cJSON *req, const struct dlq_replay_row *r,
    const char **exchange, const char **rk)
{
	*exchange = jstr(req, "to_exchange") ? jstr(req, "to_exchange") : "";
	*rk = jstr(req, "routing_key") ? jstr(req, "routing_key") : r->queue;
}

int
dlq_replay_plan_check(const struct dlq_config *c, const cJSON *req,
    struct dlq_replay_selection *s, char *why, size_t whylen)
{
	const cJSON *lim = cJSON_GetObjectItemCaseSensitive(req, "limit");
	const cJSON *since = cJSON_GetObjectItemCaseSensitive(req, "since_ms");
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(req, "ids");

	memset(s, 0, sizeof(*s));
	s->limit = c->replay_limit;
	if ((lim != NULL && !dlq_json_int(lim, 1, DLQ_REPLAY_PLAN_MAX,
	    &s->limit)) || s->limit > DLQ_REPLAY_PLAN_MAX) {
		snprintf(why, whylen, "'limit' must be 1..%d",
		    DLQ_REPLAY_PLAN_MAX);
		return DLQ_USAGE;
	}
	if (since != NULL && !dlq_json_int(since, 0, DLQ_JSON_INT_MAX,
	    &s->since_ms)) {
		snprintf(why, whylen, "'since_ms' must be a positive integer");
		return DLQ_USAGE;
	}
	s->class = jstr(req, "class");
	s->signature = jstr(req, "signature");
	s->queue = jstr(req, "queue");
	if (s->class != NULL && !dlq_class_valid(s->class)) {
		snprintf(why, whylen, "unknown class '%.40s' (%s)", s->class,
		    DLQ_CLASS_LIST);
		return DLQ_USAGE;
	}
	if (s->signature != NULL && !dlq_signature_id_valid(s->signature)) {
		snprintf(why, whylen, DLQ_SIGNATURE_BAD, s->signature);
		return DLQ_USAGE;
	}
	if (jtrue(req, "force") && jtext(req, "reason") == NULL) {
		snprintf(why, whylen, "--force needs --reason");
		return DLQ_USAGE;
	}
	if (!texts_fit(req, why, whylen))
		return DLQ_USAGE;
	if (cJSON_IsArray(ids)) {
		s->ids = ids;
		return DLQ_OK;
	}
	if (s->queue == NULL && s->signature == NULL) {
		snprintf(why, whylen, "select ids, a --queue or a --signature");
		return DLQ_USAGE;
	}
	return DLQ_OK;
}

void
dlq_replay_plan_item(struct dlq_buf *out, const struct dlq_config *c,
    const cJSON *req, const struct dlq_replay_row *r, bool first)
{
	struct dlq_replay_policy p;
	const char *ex, *rk;
	char why[256];
	bool ok = decide(c, req, r, dlq_wall_ms(), &p, why, sizeof(why));

	target(req, r, &ex, &rk);
	dlq_buf_printf(out, "%s{\"id\":%lld,\"message_id\":", first ? "" : ",",
	    (long long)r->id);
	dlq_buf_json_cstr(out, r->message_id[0] ? r->message_id : NULL);
	dlq_buf_adds(out, ",\"queue\":");
	dlq_buf_json_cstr(out, r->queue);
	dlq_buf_adds(out, ",\"class\":");
	dlq_buf_json_cstr(out, r->class);
	dlq_buf_adds(out, ",\"status\":");
	dlq_buf_json_cstr(out, r->status);
	dlq_buf_printf(out, ",\"eligible\":%s,\"why\":", ok ? "true" : "false");
	dlq_buf_json_cstr(out, ok ? NULL : why);
	dlq_buf_adds(out, ",\"exchange\":");
	dlq_buf_json_cstr(out, ex);
	dlq_buf_adds(out, ",\"routing_key\":");
	dlq_buf_json_cstr(out, rk);
	dlq_buf_addc(out, '}');
}

void
dlq_replay_plan_missing(struct dlq_buf *out, int64_t id, bool first)
{
	dlq_buf_printf(out, "%s{\"id\":%lld,\"eligible\":false,\"why\":\""
	    DLQ_NOT_IN_ARCHIVE "\"}", first ? "" : ",", (long long)id);
}

int
dlq_replay_claim_check(const cJSON *req, char *why, size_t whylen)
{
	const cJSON *ids = cJSON_GetObjectItemCaseSensitive(req, "ids");

	if (!cJSON_IsArray(ids) || cJSON_GetArraySize(ids) < 1 ||
	    cJSON_GetArraySize(ids) > DLQ_REPLAY_CLAIM_MAX ||
	    jtext(req, "reason") == NULL) {
		snprintf(why, whylen, "a claim names 1 to %d ids and a reason",
		    DLQ_REPLAY_CLAIM_MAX);
		return DLQ_USAGE;
	}
	return texts_fit(req, why, whylen) ? DLQ_OK : DLQ_USAGE;
}

bool
dlq_replay_grant(const struct dlq_config *c, const cJSON *req,
    const struct dlq_replay_row *r, struct dlq_replay_grant *g, char *why,
    size_t n)
{
	struct dlq_replay_policy p;
	char ago[32];

	memset(g, 0, sizeof(*g));
	g->now = dlq_wall_ms();
	if (!decide(c, req, r, g->now, &p, why, n))
		return false;
	/* the evidence this attempt relied on: given now, or the case's */
	dlq_buf_init(&g->evidence);
	if (jtext(req, "evidence") != NULL)
		dlq_buf_adds(&g->evidence, jtext(req, "evidence"));
	else if (r->evidence_at > 0)
		dlq_buf_printf(&g->evidence, "%s (case evidence, checked %s "
		    "ago)", r->evidence, dlq_format_age(g->now -
		    r->evidence_at, ago, sizeof(ago)));
	else if (r->evidence[0] != '\0')	/* recorded before its time was */
		dlq_buf_printf(&g->evidence, "%s (case evidence, checked at "
		    "an unknown time)", r->evidence);
	dlq_buf_init(&g->policy);
	dlq_replay_policy_json(&p, &g->policy);
	target(req, r, &g->exchange, &g->routing_key);
	dlq_replay_target_name(g->exchange, g->routing_key, g->target,
	    sizeof(g->target));
	return true;
}

void
dlq_replay_grant_release(struct dlq_replay_grant *g)
{
	dlq_buf_release(&g->evidence);
	dlq_buf_release(&g->policy);
}

/* A text property as JSON; an AMQP short string need not be UTF-8 and
 * may hold a NUL, which JSON text does not carry as they are: then its
 * exact bytes too, as `key`_b64, which the publisher prefers. */
static void
json_text_prop(struct dlq_buf *out, const char *key, const void *v, size_t n)
{
	dlq_buf_printf(out, ",\"%s\":", key);
	if (v == NULL) {
		dlq_buf_adds(out, "null");
		return;
	}
	dlq_buf_json_str(out, v, n);
	if (!dlq_utf8_is_text(v, n)) {
		dlq_buf_printf(out, ",\"%s_b64\":\"", key);
		dlq_buf_base64(out, v, n);
		dlq_buf_addc(out, '"');
	}
}

void
dlq_replay_message_json(struct dlq_buf *out, int64_t id,
    const struct dlq_replay_message *m)
{
	static const char *const props[8] = { "message_id", "correlation_id",
	    "type", "content_type", "content_encoding", "app_id", "reply_to",
	    "user_id" };
	int i;

	dlq_buf_printf(out, "{\"id\":%lld", (long long)id);
	for (i = 0; i < 8; i++)
		json_text_prop(out, props[i], m->props[i], m->props_len[i]);
	if (m->has_timestamp)
		dlq_buf_printf(out, ",\"timestamp\":%lld",
		    (long long)m->timestamp);
	if (m->has_priority)
		dlq_buf_printf(out, ",\"priority\":%lld", (long long)m->priority);
	/* a JSON number reads back as a double: a timestamp past 2^53 (one
	 * in nanoseconds) would come back another; the exact one as text */
	if (m->has_timestamp)
		dlq_buf_printf(out, ",\"timestamp_u64\":\"%llu\"",
		    (unsigned long long)(uint64_t)m->timestamp);
	dlq_buf_adds(out, ",\"headers_b64\":\"");
	dlq_buf_base64(out, m->headers, m->headers_len);
	dlq_buf_adds(out, "\",\"body_b64\":\"");
	dlq_buf_base64(out, m->body, m->body_len);
	dlq_buf_adds(out, "\"}");
}

void
dlq_replay_claim_item(struct dlq_buf *claims, int64_t id, int64_t attempt,
    int64_t replay_count, const char *actor,
    const struct dlq_replay_grant *g, const struct dlq_buf *message)
{
	dlq_buf_printf(claims, "%s{\"id\":%lld,\"attempt\":%lld,"
	    "\"replay_count\":%lld,\"actor\":", claims->len ? "," : "",
	    (long long)id, (long long)attempt, (long long)replay_count);
	dlq_buf_json_cstr(claims, actor);
	dlq_buf_adds(claims, ",\"exchange\":");
	dlq_buf_json_cstr(claims, g->exchange);
	dlq_buf_adds(claims, ",\"routing_key\":");
	dlq_buf_json_cstr(claims, g->routing_key);
	dlq_buf_adds(claims, ",\"message\":");
	dlq_buf_add(claims, message->data, message->len);
	dlq_buf_addc(claims, '}');
}

void
dlq_replay_refusal(struct dlq_buf *refused, int64_t id, const char *why)
{
	dlq_buf_printf(refused, "%s{\"id\":%lld,\"why\":", refused->len ? "," :
	    "", (long long)id);
	dlq_buf_json_cstr(refused, why);
	dlq_buf_addc(refused, '}');
}

void
dlq_replay_defer(struct dlq_buf *deferred, int64_t id)
{
	dlq_buf_printf(deferred, "%s%lld", deferred->len ? "," : "",
	    (long long)id);
}

void
dlq_replay_claim_answer(struct dlq_buf *out, const struct dlq_buf *claims,
    const struct dlq_buf *refused, const struct dlq_buf *deferred)
{
	dlq_buf_adds(out, "{\"claims\":[");
	dlq_buf_add(out, claims->data ? claims->data : "", claims->len);
	dlq_buf_adds(out, "],\"refused\":[");
	dlq_buf_add(out, refused->data ? refused->data : "", refused->len);
	dlq_buf_adds(out, "],\"deferred\":[");
	dlq_buf_add(out, deferred->data ? deferred->data : "", deferred->len);
	dlq_buf_adds(out, "]}");
}

static bool
valid_outcome(const char *o)
{
	return o != NULL && (strcmp(o, "published") == 0 ||
	    strcmp(o, "failed") == 0 || strcmp(o, "unknown") == 0);
}

int
dlq_replay_finish_check(const cJSON *req, char *why, size_t whylen)
{
	const cJSON *results = cJSON_GetObjectItemCaseSensitive(req, "results");
	const cJSON *e, *a;
	int64_t attempt;

	if (!cJSON_IsArray(results) || cJSON_GetArraySize(results) < 1 ||
	    cJSON_GetArraySize(results) > DLQ_REPLAY_CLAIM_MAX) {
		snprintf(why, whylen, "finish needs 'results': [{attempt, "
		    "outcome (published, failed or unknown), detail}]");
		return DLQ_USAGE;
	}
	cJSON_ArrayForEach(e, results) {
		a = cJSON_GetObjectItemCaseSensitive(e, "attempt");
		if (!dlq_json_int(a, 1, DLQ_JSON_INT_MAX, &attempt) ||
		    !valid_outcome(jstr(e, "outcome"))) {
			snprintf(why, whylen, "each result needs 'attempt' and "
			    "an 'outcome' (published, failed or unknown)");
			return DLQ_USAGE;
		}
	}
	return DLQ_OK;
}

void
dlq_replay_finish_result(const cJSON *result, int64_t *attempt,
    const char **outcome, const char **detail)
{
	(void)dlq_json_int(cJSON_GetObjectItemCaseSensitive(result, "attempt"),
	    1, DLQ_JSON_INT_MAX, attempt);
	*outcome = jstr(result, "outcome");
	*detail = jstr(result, "detail");
}

int
dlq_replay_finish_answer(const cJSON *req, int done, struct dlq_buf *out,
    char *why, size_t whylen)
{
	int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(req,
	    "results"));

	dlq_buf_printf(out, "{\"finished\":%d}", done);
	if (done == n)
		return DLQ_OK;
	snprintf(why, whylen, "%d of %d attempts were not open", n - done, n);
	return DLQ_NOT_FOUND;
}
