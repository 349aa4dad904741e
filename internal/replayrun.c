/* replayrun.c - dlqctl's replay loop. */
#include "replayrun.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "amqp.h"
#include "classify.h"
#include "ctlclient.h"
#include "deadletter.h"
#include "publisher.h"
#include "redact.h"
#include "replay.h"

#define REFUSAL_KINDS	16
#define CLAIM_CHUNK	100

static volatile sig_atomic_t interrupted;

static void
on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct tally {
	bool	 dry;		/* published counts the eligible */
	size_t	 total, done, published, refused, failed, unknown;
	char	 why[REFUSAL_KINDS][160];
	size_t	 why_n[REFUSAL_KINDS];
	int64_t	 start_ms;
	cJSON	*results;
};

static void
refuse(struct tally *t, const char *why)
{
	size_t i;

	t->refused++;
	for (i = 0; i < REFUSAL_KINDS && t->why[i][0] != '\0'; i++)
		if (strcmp(t->why[i], why) == 0)
			break;
	if (i == REFUSAL_KINDS)
		return;
	snprintf(t->why[i], sizeof(t->why[i]), "%s", why);
	t->why_n[i]++;
}

static void
result(struct tally *t, int64_t id, const char *message_id,
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

static void
progress(const struct tally *t, bool end)
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
static void
pace(const struct tally *t, int64_t rate)
{
	int64_t due, now;
	struct timespec ts;

	if (rate <= 0)
		return;
	due = t->start_ms + (int64_t)(t->published + t->failed + t->unknown) *
	    1000 / rate;
	while (!interrupted && (now = dlq_now_ms()) < due) {
		ts.tv_sec = 0;
		ts.tv_nsec = ((due - now) > 100 ? 100 : (due - now)) * 1000000L;
		nanosleep(&ts, NULL);
	}
}

static int
summary(const struct tally *t, bool json)
{
	cJSON *j, *w;
	char *text;
	size_t i;

	progress(t, true);
	if (json) {
		j = cJSON_CreateObject();
		cJSON_AddNumberToObject(j, t->dry ? "eligible" : "published",
		    (double)t->published);
		cJSON_AddBoolToObject(j, "dry_run", t->dry);
		cJSON_AddNumberToObject(j, "refused", (double)t->refused);
		cJSON_AddNumberToObject(j, "failed", (double)t->failed);
		cJSON_AddNumberToObject(j, "unknown", (double)t->unknown);
		cJSON_AddBoolToObject(j, "interrupted", interrupted != 0);
		w = cJSON_AddObjectToObject(j, "refusals");
		for (i = 0; i < REFUSAL_KINDS && t->why[i][0]; i++)
			cJSON_AddNumberToObject(w, t->why[i], (double)t->why_n[i]);
		cJSON_AddItemReferenceToObject(j, "results", t->results);
		text = cJSON_PrintUnformatted(j);
		puts(text);
		cJSON_free(text);
		cJSON_Delete(j);
	} else {
		printf("%s%s %zu, refused %zu, failed %zu, unknown %zu%s\n",
		    interrupted ? "interrupted: " : "", t->dry ? "eligible" :
		    "published", t->published, t->refused, t->failed, t->unknown,
		    t->dry ? " (dry run: nothing was published)" : "");
		for (i = 0; i < REFUSAL_KINDS && t->why[i][0]; i++)
			printf("  refused %zu: %s\n", t->why_n[i], t->why[i]);
		cJSON_ArrayForEach(w, t->results)
			if (strcmp(cJSON_GetObjectItem(w, "outcome")->valuestring,
			    "published") != 0)
				printf("  %s %s: %s\n", cJSON_GetObjectItem(w,
				    "outcome")->valuestring, cJSON_HasObjectItem(w,
				    "id") ? cJSON_PrintUnformatted(cJSON_GetObjectItem(
				    w, "id")) : "-", cJSON_GetObjectItem(w,
				    "detail")->valuestring);
	}
	return t->failed || t->unknown ? 1 : 0;
}

static cJSON *
ask(const struct dlq_config *c, cJSON *req, char *why, size_t n)
{
	cJSON *ans = dlq_ctl_call(c->control_socket, req, why, n);
	const cJSON *err;

	cJSON_Delete(req);
	if (ans != NULL && !cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok"))) {
		err = cJSON_GetObjectItem(ans, "error");
		snprintf(why, n, "%s", cJSON_IsString(err) ? err->valuestring :
		    "refused");
		cJSON_Delete(ans);
		return NULL;
	}
	return ans;
}

static void
set_prop(const cJSON *m, const char *k, amqp_bytes_t *dst, amqp_flags_t flag,
    amqp_basic_properties_t *p)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, k);

	if (cJSON_IsString(v)) {
		*dst = amqp_cstring_bytes(v->valuestring);
		p->_flags |= flag;
	}
}

/* Properties of the replayed message: the original ones; user_id only
 * when it is the user we publish as (the broker checks it). */
static void
build_props(const struct dlq_config *c, const cJSON *m,
    amqp_basic_properties_t *p, char *note, size_t n)
{
	const cJSON *v;

	memset(p, 0, sizeof(*p));
	p->_flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
	p->delivery_mode = 2;
	set_prop(m, "message_id", &p->message_id, AMQP_BASIC_MESSAGE_ID_FLAG, p);
	set_prop(m, "correlation_id", &p->correlation_id,
	    AMQP_BASIC_CORRELATION_ID_FLAG, p);
	set_prop(m, "type", &p->type, AMQP_BASIC_TYPE_FLAG, p);
	set_prop(m, "content_type", &p->content_type,
	    AMQP_BASIC_CONTENT_TYPE_FLAG, p);
	set_prop(m, "content_encoding", &p->content_encoding,
	    AMQP_BASIC_CONTENT_ENCODING_FLAG, p);
	set_prop(m, "app_id", &p->app_id, AMQP_BASIC_APP_ID_FLAG, p);
	set_prop(m, "reply_to", &p->reply_to, AMQP_BASIC_REPLY_TO_FLAG, p);
	v = cJSON_GetObjectItemCaseSensitive(m, "user_id");
	note[0] = '\0';
	if (cJSON_IsString(v)) {
		if (strcmp(v->valuestring, c->broker.user) == 0) {
			p->user_id = amqp_cstring_bytes(v->valuestring);
			p->_flags |= AMQP_BASIC_USER_ID_FLAG;
		} else
			snprintf(note, n, "; user_id %s dropped (we publish as %s)",
			    v->valuestring, c->broker.user);
	}
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(m, "timestamp"))) {
		p->timestamp = (uint64_t)v->valuedouble;
		p->_flags |= AMQP_BASIC_TIMESTAMP_FLAG;
	}
	if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(m, "priority"))) {
		p->priority = (uint8_t)v->valuedouble;
		p->_flags |= AMQP_BASIC_PRIORITY_FLAG;
	}
}

/* Publishes what a claim handed out; returns the outcome. */
static enum dlq_pub_outcome
publish_claimed(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, const cJSON *claim, char *detail, size_t n)
{
	const cJSON *m = cJSON_GetObjectItem(claim, "message");
	amqp_table_entry_t extra[5];
	amqp_basic_properties_t props;
	struct dlq_replay_mark mark;
	struct dlq_buf headers, body;
	amqp_table_t orig = { 0, NULL };
	amqp_pool_t pool;
	amqp_bytes_t hb;
	size_t off = 0;
	char note[160];
	enum dlq_pub_outcome out = DLQ_PUB_FAILED;

	dlq_buf_init(&headers);
	dlq_buf_init(&body);
	init_amqp_pool(&pool, 4096);
	if (dlq_base64_decode(cJSON_GetObjectItem(m, "headers_b64")->valuestring,
	    &headers) == -1 || dlq_base64_decode(cJSON_GetObjectItem(m,
	    "body_b64")->valuestring, &body) == -1) {
		snprintf(detail, n, "bad message from the worker");
		goto out;
	}
	hb.bytes = headers.data;
	hb.len = headers.len;
	if (headers.len > 0 && amqp_decode_table(hb, &pool, &orig, &off) !=
	    AMQP_STATUS_OK) {
		snprintf(detail, n, "archived headers do not decode");
		goto out;
	}
	build_props(c, m, &props, note, sizeof(note));
	mark.replay_count = (int64_t)cJSON_GetObjectItem(claim,
	    "replay_count")->valuedouble;
	mark.by = cJSON_GetObjectItem(claim, "actor")->valuestring;
	mark.at_s = dlq_wall_ms() / 1000;
	mark.reason = o->reason;
	mark.replay_of = (int64_t)cJSON_GetObjectItem(claim, "id")->valuedouble;
	if (dlq_replay_headers(&orig, o->reset_retries, &mark, extra,
	    &props.headers) == -1) {
		snprintf(detail, n, "out of memory");
		goto out;
	}
	props._flags |= AMQP_BASIC_HEADERS_FLAG;
	out = dlq_publisher_send(pub,
	    cJSON_GetObjectItem(claim, "exchange")->valuestring,
	    cJSON_GetObjectItem(claim, "routing_key")->valuestring, &props,
	    (amqp_bytes_t){ body.len, body.data ? body.data : "" }, detail, n);
	if (note[0] != '\0' && strlen(detail) + strlen(note) < n)
		strcat(detail, note);
	dlq_replay_headers_free(&props.headers);
out:
	empty_amqp_pool(&pool);
	dlq_buf_release(&headers);
	dlq_buf_release(&body);
	return out;
}

static void
add_options(cJSON *r, const struct dlq_replay_opts *o)
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

static void
print_plan(const cJSON *plan, bool json)
{
	const cJSON *i, *why;
	char *text;
	int yes = 0, n = 0;

	if (json) {
		text = cJSON_PrintUnformatted(plan);
		printf("{\"dry_run\":true,\"plan\":%s}\n", text);
		cJSON_free(text);
		return;
	}
	printf("%-8s %-9s %-40s %s\n", "ID", "ELIGIBLE", "TARGET", "WHY NOT");
	cJSON_ArrayForEach(i, plan) {
		bool ok = cJSON_IsTrue(cJSON_GetObjectItem(i, "eligible"));
		const cJSON *ex = cJSON_GetObjectItem(i, "exchange");
		const cJSON *rk = cJSON_GetObjectItem(i, "routing_key");
		char tgt[300];

		why = cJSON_GetObjectItem(i, "why");
		snprintf(tgt, sizeof(tgt), "%s/%s", cJSON_IsString(ex) &&
		    ex->valuestring[0] ? ex->valuestring : "(default)",
		    cJSON_IsString(rk) ? rk->valuestring : "-");
		printf("%-8lld %-9s %-40s %s\n", (long long)cJSON_GetObjectItem(i,
		    "id")->valuedouble, ok ? "yes" : "no", tgt,
		    cJSON_IsString(why) ? why->valuestring : "");
		yes += ok;
		n++;
	}
	printf("dry run: %d of %d would be replayed; nothing was published "
	    "(add --execute --reason TEXT)\n", yes, n);
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

/* Claims, publishes and records one chunk of eligible ids. */
static void
replay_chunk(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, const int64_t *ids, int n, struct tally *t)
{
	cJSON *req, *ans, *fin, *res, *one, *cl, *ref;
	char why[512], detail[1024];
	enum dlq_pub_outcome out;
	int64_t id;

	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "cmd", "replay_claim");
	cJSON_AddItemToObject(req, "ids", cJSON_CreateArray());
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(cJSON_GetObjectItem(req, "ids"),
		    cJSON_CreateNumber((double)ids[i]));
	add_options(req, o);
	if ((ans = ask(c, req, why, sizeof(why))) == NULL) {
		for (int i = 0; i < n; i++) {
			t->done++;
			refuse(t, why);
		}
		return;
	}
	cJSON_ArrayForEach(ref, cJSON_GetObjectItem(cJSON_GetObjectItem(ans,
	    "data"), "refused")) {
		t->done++;
		refuse(t, cJSON_GetObjectItem(ref, "why")->valuestring);
	}
	fin = cJSON_CreateObject();
	cJSON_AddStringToObject(fin, "cmd", "replay_finish");
	cJSON_AddItemToObject(fin, "ids", cJSON_CreateArray());
	res = cJSON_AddArrayToObject(fin, "results");
	cJSON_ArrayForEach(cl, cJSON_GetObjectItem(cJSON_GetObjectItem(ans,
	    "data"), "claims")) {
		id = (int64_t)cJSON_GetObjectItem(cl, "id")->valuedouble;
		if (interrupted) {
			/* claimed, never sent: give it back, replayable */
			out = DLQ_PUB_FAILED;
			snprintf(detail, sizeof(detail), "not sent: interrupted");
		} else {
			pace(t, o->rate);
			out = publish_claimed(c, o, pub, cl, detail, sizeof(detail));
		}
		t->done++;
		one = cJSON_CreateObject();
		cJSON_AddNumberToObject(one, "attempt",
		    cJSON_GetObjectItem(cl, "attempt")->valuedouble);
		cJSON_AddStringToObject(one, "outcome", dlq_pub_outcome_name(out));
		cJSON_AddStringToObject(one, "detail", detail);
		cJSON_AddItemToArray(res, one);
		cJSON_AddItemToArray(cJSON_GetObjectItem(fin, "ids"),
		    cJSON_CreateNumber((double)id));
		if (!(interrupted && out == DLQ_PUB_FAILED &&
		    strcmp(detail, "not sent: interrupted") == 0))
			result(t, id, NULL, out, detail);
		progress(t, false);
	}
	cJSON_Delete(ans);
	if (cJSON_GetArraySize(res) == 0) {
		cJSON_Delete(fin);
		return;
	}
	if ((ans = ask(c, fin, why, sizeof(why))) == NULL)
		/* the worker keeps them 'replaying', outcome unknown */
		fprintf(stderr, "dlqctl: outcomes not recorded (left replaying, "
		    "outcome unknown): %s\n", why);
	cJSON_Delete(ans);
}

static int
run_archive(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	struct dlq_publisher *pub = NULL;
	struct tally t;
	cJSON *req, *plan, *item;
	int64_t *ids;
	char why[512];
	int n = 0, i, k, rc;

	memset(&t, 0, sizeof(t));
	req = cJSON_Duplicate(o->select, 1);
	cJSON_AddStringToObject(req, "cmd", "replay_plan");
	cJSON_AddNumberToObject(req, "limit", (double)o->limit);
	add_options(req, o);
	if ((plan = ask(c, req, why, sizeof(why))) == NULL) {
		fprintf(stderr, "dlqctl: %s\n", why);
		return strstr(why, "needs the") ? 4 : 1;
	}
	if (!o->execute) {
		print_plan(cJSON_GetObjectItem(plan, "data"), o->json);
		cJSON_Delete(plan);
		return 0;
	}
	if ((pub = dlq_publisher_open(c, why, sizeof(why))) == NULL) {
		fprintf(stderr, "dlqctl: %s\n", why);
		cJSON_Delete(plan);
		return 1;
	}
	t.results = cJSON_CreateArray();
	t.total = (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(plan, "data"));
	ids = calloc(t.total + 1, sizeof(*ids));
	cJSON_ArrayForEach(item, cJSON_GetObjectItem(plan, "data")) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(item, "eligible")))
			ids[n++] = (int64_t)cJSON_GetObjectItem(item,
			    "id")->valuedouble;
		else {
			t.done++;
			refuse(&t, cJSON_GetObjectItem(item, "why")->valuestring);
		}
	}
	t.start_ms = dlq_now_ms();
	for (i = 0; i < n && !interrupted; i += k) {
		k = n - i < chunk_size(o) ? n - i : chunk_size(o);
		replay_chunk(c, o, pub, ids + i, k, &t);
	}
	free(ids);
	rc = summary(&t, o->json);
	cJSON_Delete(t.results);
	cJSON_Delete(plan);
	dlq_publisher_close(pub);
	return rc;
}

/* Records the run in the worker's audit table (and checks the role). */
static bool
note(const struct dlq_config *c, const struct dlq_replay_opts *o,
    const char *result, char *why, size_t n)
{
	cJSON *req = cJSON_CreateObject(), *ans;
	char what[400];

	snprintf(what, sizeof(what), "replay --from-queue %s%s", o->from_queue,
	    o->execute ? " --execute" : " (dry run)");
	cJSON_AddStringToObject(req, "cmd", "audit_note");
	cJSON_AddStringToObject(req, "what", what);
	cJSON_AddStringToObject(req, "result", result);
	add_options(req, o);
	if ((ans = ask(c, req, why, n)) == NULL)
		return false;
	cJSON_Delete(ans);
	return true;
}

static const char *
whoami(char *buf, size_t n)
{
	const char *u = getenv("SUDO_USER");

	if (u == NULL && (u = getlogin()) == NULL)
		u = getenv("USER");
	snprintf(buf, n, "%s", u ? u : "unknown");
	return buf;
}

/* Facts about a live delivery, for the same policy as archived ones. */
static bool
judge_live(const struct dlq_config *c, const struct dlq_classifier *k,
    const struct dlq_dead_letter *d, const char *queue, char *why, size_t n,
    int64_t *replay_count)
{
	struct dlq_redact r = { &c->mask_keys, c->mask_emails,
	    (int)c->mask_digits_min, DLQ_ERROR_TEXT_MAX };
	struct dlq_classification cl;
	struct dlq_replay_policy p;
	struct dlq_replay_facts f;
	const amqp_field_value_t *v;
	struct dlq_buf err;
	char reason[32];
	int64_t born = dlq_wall_ms();
	bool ok;

	dlq_buf_init(&err);
	dlq_deadletter_error_text(d, &r, DLQ_ERROR_TEXT_MAX, &err);
	snprintf(reason, sizeof(reason), "%.*s", d->n_xdeath > 0 &&
	    d->xdeath[0].reason.p ? (int)d->xdeath[0].reason.n : 7,
	    d->n_xdeath > 0 && d->xdeath[0].reason.p ? d->xdeath[0].reason.p :
	    "unknown");
	dlq_classify(k, queue, reason, err.data ? err.data : "", &cl);
	if (d->props->_flags & AMQP_BASIC_TIMESTAMP_FLAG)
		born = (int64_t)d->props->timestamp * 1000;
	else if (d->n_xdeath > 0 && d->xdeath[0].time > 0)
		born = d->xdeath[0].time * 1000;
	*replay_count = 0;
	if ((d->props->_flags & AMQP_BASIC_HEADERS_FLAG) &&
	    (v = dlq_table_get(&d->props->headers, "x-replay-count")) != NULL)
		dlq_field_to_i64(v, replay_count);
	f.status = "open";
	f.class = cl.class;
	f.owner = NULL;
	f.age_ms = dlq_wall_ms() - born;
	f.replay_count = *replay_count;
	dlq_config_replay_policy(c, queue, &p);
	ok = dlq_replay_eligible(&p, &f, false, why, n);
	dlq_buf_release(&err);
	return ok;
}

/* One live delivery: judged, and published when eligible and executing.
 * Returns true when it was acked (replayed). */
static bool
replay_live(const struct dlq_config *c, const struct dlq_replay_opts *o,
    struct dlq_publisher *pub, const struct dlq_classifier *k,
    amqp_message_t *msg, amqp_bytes_t rk, struct tally *t, const char *me)
{
	struct dlq_dead_letter d;
	struct dlq_str dlq = { o->from_queue, strlen(o->from_queue) };
	struct dlq_str fallback = { rk.bytes, rk.len };
	amqp_basic_properties_t props = msg->properties;
	amqp_table_entry_t extra[5];
	struct dlq_replay_mark mark;
	enum dlq_pub_outcome out;
	char why[256], queue[256], id[128], detail[512];

	dlq_deadletter_decode(&d, &msg->properties, msg->body, dlq, fallback,
	    &c->error_headers);
	snprintf(queue, sizeof(queue), "%.*s", (int)d.queue.n, d.queue.p ?
	    d.queue.p : "");
	snprintf(id, sizeof(id), "%.*s", (int)d.message_id.n, d.message_id.p ?
	    d.message_id.p : "");
	if (!judge_live(c, k, &d, queue, why, sizeof(why), &mark.replay_count)) {
		refuse(t, why);
		return false;
	}
	if (!o->execute) {
		t->published++;
		return false;
	}
	pace(t, o->rate);
	mark.replay_count++;
	mark.by = me;
	mark.at_s = dlq_wall_ms() / 1000;
	mark.reason = o->reason;
	mark.replay_of = 0;
	if (dlq_replay_headers((msg->properties._flags & AMQP_BASIC_HEADERS_FLAG)
	    ? &msg->properties.headers : NULL, o->reset_retries, &mark, extra,
	    &props.headers) == -1)
		return false;
	props._flags |= AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
	props.delivery_mode = 2;
	if ((props._flags & AMQP_BASIC_USER_ID_FLAG) &&
	    (props.user_id.len != strlen(c->broker.user) ||
	    memcmp(props.user_id.bytes, c->broker.user, props.user_id.len) != 0))
		props._flags &= ~AMQP_BASIC_USER_ID_FLAG;
	props._flags &= ~AMQP_BASIC_EXPIRATION_FLAG;
	out = dlq_publisher_send(pub, o->to_exchange ? o->to_exchange : "",
	    o->routing_key ? o->routing_key : queue, &props, msg->body, detail,
	    sizeof(detail));
	dlq_replay_headers_free(&props.headers);
	result(t, 0, id[0] ? id : NULL, out, detail);
	return out == DLQ_PUB_OK;
}

static int
run_live(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	struct dlq_classifier *k;
	struct dlq_publisher *pub;
	amqp_connection_state_t conn;
	amqp_basic_get_ok_t *ok;
	amqp_rpc_reply_t r;
	amqp_message_t msg;
	struct tally t;
	uint64_t tag;
	char why[512], me[64], res[200];
	int rc;

	if (!note(c, o, "started", why, sizeof(why))) {
		fprintf(stderr, "dlqctl: %s (live-queue replays are audited by "
		    "the worker)\n", why);
		return strstr(why, "needs the") ? 4 : 1;
	}
	if ((k = dlq_classify_new(c, NULL)) == NULL ||
	    (pub = dlq_publisher_open(c, why, sizeof(why))) == NULL) {
		fprintf(stderr, "dlqctl: %s\n", k ? why : "classifier failed");
		dlq_classify_free(k);
		return 1;
	}
	memset(&t, 0, sizeof(t));
	t.dry = !o->execute;
	t.results = cJSON_CreateArray();
	t.total = (size_t)o->limit;
	t.start_ms = dlq_now_ms();
	whoami(me, sizeof(me));
	/* Ineligible deliveries stay unacked until the end, so that basic.get
	 * does not hand them out again; then they all go back at once. */
	while (!interrupted && t.done < (size_t)o->limit &&
	    (conn = dlq_publisher_conn(pub)) != NULL) {
		amqp_maybe_release_buffers(conn);
		r = amqp_basic_get(conn, DLQ_AMQP_CHANNEL,
		    amqp_cstring_bytes(o->from_queue), 0);
		if (r.reply_type != AMQP_RESPONSE_NORMAL) {
			fprintf(stderr, "dlqctl: cannot read %s: %s\n",
			    o->from_queue, dlq_amqp_reply_text(r, why, sizeof(why)));
			break;
		}
		if (r.reply.id != AMQP_BASIC_GET_OK_METHOD)
			break;		/* empty */
		ok = r.reply.decoded;
		tag = ok->delivery_tag;
		if (amqp_read_message(conn, DLQ_AMQP_CHANNEL, &msg, 0).reply_type
		    != AMQP_RESPONSE_NORMAL)
			break;
		t.done++;
		if (replay_live(c, o, pub, k, &msg, ok->routing_key, &t, me) &&
		    (conn = dlq_publisher_conn(pub)) != NULL)
			amqp_basic_ack(conn, DLQ_AMQP_CHANNEL, tag, 0);
		amqp_destroy_message(&msg);
		progress(&t, false);
	}
	if ((conn = dlq_publisher_conn(pub)) != NULL)
		amqp_basic_nack(conn, DLQ_AMQP_CHANNEL, 0, 1, 1);
	t.total = t.done;
	rc = summary(&t, o->json);
	snprintf(res, sizeof(res), "examined %zu: %s %zu, refused %zu, failed "
	    "%zu, unknown %zu", t.done, t.dry ? "eligible" : "published",
	    t.published, t.refused, t.failed, t.unknown);
	if (!note(c, o, res, why, sizeof(why)))
		fprintf(stderr, "dlqctl: could not audit the result: %s\n", why);
	cJSON_Delete(t.results);
	dlq_publisher_close(pub);
	dlq_classify_free(k);
	return rc;
}

int
dlq_replay_run(const struct dlq_config *c, const struct dlq_replay_opts *o)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return o->from_queue ? run_live(c, o) : run_archive(c, o);
}
