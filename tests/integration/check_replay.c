/* check_replay.c - dlqctl replay against the real worker and broker; a
 * plain rabbitmq-c consumer in the test reads what was replayed. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../check_main.h"
#include "control.h"
#include "deadletter.h"
#include "harness.h"
#include "publisher.h"

#define WAIT_MS	20000

static void
start(struct h_rig *f, const char *extra)
{
	char more[1024];

	h_rig_name(f, "rp", 2);
	/* `extra` may name the first queue with %s */
	snprintf(more, sizeof(more), extra ? extra : "", f->q[0]);
	h_rig_setup(f, more);
	h_rig_start(f);
}

/* n messages with error `error` die in queue q, which must be empty (the
 * n rejected are the first n there); the archive id of each into ids[]
 * (may be NULL); returns the last one's. Each message has its own id,
 * and the wait is for those ids, not for a count. */
static int64_t
die_in(struct h_rig *f, int q, int n, const char *error, int64_t *ids)
{
	static int sent;
	amqp_table_entry_t e = h_str_entry("x-error", error);
	amqp_table_t h = { 1, &e };
	char id[200];
	int64_t last = -1;
	int i;

	ck_assert_msg(h_count(f->q[q]) == 0, "die_in: %s is not empty",
	    f->q[q]);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%d-%d", f->prefix, q, sent + i);
		h_publish(f->c, f->exch, f->q[q], "{\"k\":1}", 7, id, &h);
	}
	ck_assert_int_eq(h_reject(f->c, f->q[q], n, WAIT_MS), n);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%d-%d", f->prefix, q, sent + i);
		last = h_archived(&f->w, id, 1, WAIT_MS);
		if (ids != NULL)
			ids[i] = last;
	}
	sent += n;
	return last;
}

static const cJSON *
get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static bool
bytes_eq(amqp_bytes_t b, const char *s)
{
	return b.len == strlen(s) && memcmp(b.bytes, s, b.len) == 0;
}

static cJSON *
replay(const char *cfg, int *rc, const char *const *args)
{
	const char *argv[24] = { "replay" };
	cJSON *j;
	int i;

	for (i = 0; args[i] != NULL; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	*rc = h_dlqctl(cfg, NULL, &j, argv);
	return j;
}

START_TEST(a_replay_is_the_original_message_marked_as_a_replay)
{
	struct h_rig f;
	amqp_basic_properties_t p;
	amqp_table_entry_t e[4];
	amqp_bytes_t body = amqp_cstring_bytes("{\"order\":7,\"bin\":\"\\u0001\"}");
	amqp_message_t m;
	const amqp_field_value_t *v;
	char other[160], id[24], *out;
	cJSON *j;
	const cJSON *a;
	int64_t n;
	int rc;

	start(&f, NULL);
	/* another queue bound to the same exchange and key: it must not get
	 * the replay */
	snprintf(other, sizeof(other), "%s_other", f.prefix);
	ck_assert_ptr_nonnull(amqp_queue_declare(f.c, 1, amqp_cstring_bytes(other),
	    0, 0, 0, 1, amqp_empty_table));
	amqp_queue_bind(f.c, 1, amqp_cstring_bytes(other),
	    amqp_cstring_bytes(f.exch), amqp_cstring_bytes(f.q[0]),
	    amqp_empty_table);
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
	    AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG |
	    AMQP_BASIC_CONTENT_ENCODING_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
	    AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_PRIORITY_FLAG |
	    AMQP_BASIC_REPLY_TO_FLAG | AMQP_BASIC_USER_ID_FLAG |
	    AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
	p.message_id = amqp_cstring_bytes("pay-1");
	p.correlation_id = amqp_cstring_bytes("corr-9");
	p.type = amqp_cstring_bytes("payment.capture");
	p.content_type = amqp_cstring_bytes("application/json");
	p.content_encoding = amqp_cstring_bytes("identity");
	p.timestamp = (uint64_t)time(NULL);
	p.app_id = amqp_cstring_bytes("billing");
	p.priority = 4;
	p.reply_to = amqp_cstring_bytes("billing.replies");
	p.user_id = amqp_cstring_bytes("guest");
	p.delivery_mode = 2;
	e[0] = h_str_entry("x-error", "HTTP 503 upstream");
	e[1] = h_str_entry("tenant", "acme");
	e[2] = h_str_entry("idempotency-key", "k-123");
	e[3].key = amqp_cstring_bytes("x-retry-count");
	e[3].value.kind = AMQP_FIELD_KIND_I16;
	e[3].value.value.i16 = 3;
	p.headers.num_entries = 4;
	p.headers.entries = e;
	ck_assert_int_eq(amqp_basic_publish(f.c, 1, amqp_cstring_bytes(f.exch),
	    amqp_cstring_bytes(f.q[0]), 0, 0, &p, body), 0);
	ck_assert(h_get(f.c, other, &m, WAIT_MS));	/* the original's copy */
	amqp_destroy_message(&m);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    NULL }), 0);
	n = (int64_t)get(cJSON_GetArrayItem(j, 0), "id")->valuedouble;
	cJSON_Delete(j);
	snprintf(id, sizeof(id), "%lld", (long long)n);

	/* a dry run publishes nothing */
	j = replay(f.cfg, &rc, (const char *[]){ id, NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert(cJSON_IsTrue(get(cJSON_GetArrayItem(get(j, "plan"), 0),
	    "eligible")));
	cJSON_Delete(j);
	ck_assert_int_eq(h_count(f.q[0]), 0);

	j = replay(f.cfg, &rc, (const char *[]){ id, "--execute", "--reason",
	    "provider fixed", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_get(f.c, f.q[0], &m, WAIT_MS));
	ck_assert_int_eq(h_count(other), 0);
	ck_assert_int_eq(h_count(f.q[0]), 0);

	ck_assert_uint_eq(m.body.len, body.len);
	ck_assert(memcmp(m.body.bytes, body.bytes, body.len) == 0);
	ck_assert(bytes_eq(m.properties.message_id, "pay-1"));
	ck_assert(bytes_eq(m.properties.correlation_id, "corr-9"));
	ck_assert(bytes_eq(m.properties.type, "payment.capture"));
	ck_assert(bytes_eq(m.properties.content_type, "application/json"));
	ck_assert(bytes_eq(m.properties.content_encoding, "identity"));
	ck_assert(bytes_eq(m.properties.app_id, "billing"));
	ck_assert(bytes_eq(m.properties.reply_to, "billing.replies"));
	ck_assert(bytes_eq(m.properties.user_id, "guest"));
	ck_assert_uint_eq(m.properties.timestamp, p.timestamp);
	ck_assert_int_eq(m.properties.priority, 4);
	ck_assert_int_eq(m.properties.delivery_mode, 2);
	ck_assert_ptr_null(dlq_table_get(&m.properties.headers, "x-death"));
	ck_assert_ptr_null(dlq_table_get(&m.properties.headers,
	    "x-first-death-queue"));
	/* the error header was this death's: not sent */
	ck_assert_ptr_null(dlq_table_get(&m.properties.headers, "x-error"));
	ck_assert_ptr_nonnull(v = dlq_table_get(&m.properties.headers,
	    "x-replay-count"));
	ck_assert(dlq_field_to_i64(v, &n));
	ck_assert_int_eq(n, 1);
	ck_assert_ptr_nonnull(v = dlq_table_get(&m.properties.headers,
	    "x-replay-of"));
	ck_assert(dlq_field_to_i64(v, &n));
	ck_assert_int_eq(n, atoll(id));
	ck_assert(bytes_eq(dlq_table_get(&m.properties.headers,
	    "x-replay-reason")->value.bytes, "provider fixed"));
	ck_assert(bytes_eq(dlq_table_get(&m.properties.headers,
	    "x-replayed-by")->value.bytes, "root"));
	ck_assert_ptr_nonnull(dlq_table_get(&m.properties.headers,
	    "x-replayed-at"));
	ck_assert(bytes_eq(dlq_table_get(&m.properties.headers,
	    "idempotency-key")->value.bytes, "k-123"));
	/* the archived header table keeps the original types */
	ck_assert_ptr_nonnull(v = dlq_table_get(&m.properties.headers,
	    "x-retry-count"));
	ck_assert_int_eq(v->kind, AMQP_FIELD_KIND_I16);
	ck_assert_int_eq(v->value.i16, 3);
	amqp_destroy_message(&m);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	ck_assert_str_eq(get(j, "status")->valuestring, "replayed");
	ck_assert_str_eq(get(cJSON_GetArrayItem(get(j, "attempts"), 0),
	    "outcome")->valuestring, "published");
	ck_assert(cJSON_IsObject(get(cJSON_GetArrayItem(get(j, "attempts"), 0),
	    "policy")));
	ck_assert(cJSON_IsNumber(get(cJSON_GetArrayItem(get(j, "attempts"), 0),
	    "checked_at")));
	cJSON_Delete(j);
	/* later: refused, nothing published; nothing to publish needs no
	 * broker (this one's port is closed) */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "replay", id, "--execute", "--reason", "again",
	    NULL }, (const char *[]){ "RABBITMQ_URL=amqp://guest:guest@"
	    "127.0.0.1:1/", NULL }, &out, NULL), 3);	/* done, not as asked */
	ck_assert_ptr_nonnull(j = cJSON_Parse(out));
	free(out);
	ck_assert_int_eq((int)get(j, "refused")->valuedouble, 1);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 0);
	cJSON_Delete(j);
	/* a class that does not exist selects nothing by mistake */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", "--queue", f.q[0], "--class", "transiant", NULL },
	    NULL, NULL, &out), 2);
	ck_assert_msg(strncmp(out, "dlqctl: --class: unknown class "
	    "'transiant' (transient, ", 55) == 0, "%s", out);
	free(out);
	/* nor does a signature cut short when it was copied */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", "--queue", f.q[0], "--signature", "3dadb6d55f2",
	    NULL }, NULL, NULL, &out), 2);
	ck_assert_msg(strstr(out, "dlqctl: --signature: not a signature: "
	    "'3dadb6d55f2' (12 hex digits, as dlqctl groups shows them)\n"
	    "usage: ") == out, "%s", out);
	free(out);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "drop", "--queue", f.q[0], "--signature", "zzz", "--reason",
	    "x", NULL }, NULL, NULL, &out), 2);
	ck_assert_msg(strncmp(out, "dlqctl: --signature: not a signature: "
	    "'zzz'", 43) == 0, "%s", out);
	free(out);
	ck_assert_int_eq(h_count(f.q[0]), 0);
	/* the refusal is recorded: the audit names the id and the reason */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    NULL }), 0);
	a = cJSON_GetArrayItem(j, 0);
	ck_assert_str_eq(get(a, "command")->valuestring, "audit_note");
	a = get(a, "args");
	ck_assert_str_eq(get(a, "result")->valuestring, "refused 1 of 1 selected");
	ck_assert_str_eq(get(a, "reason")->valuestring, "again");
	ck_assert_int_eq(cJSON_GetArraySize(get(a, "refused")), 1);
	ck_assert_int_eq((int)get(cJSON_GetArrayItem(get(a, "refused"), 0),
	    "id")->valuedouble, atoi(id));
	ck_assert_str_eq(get(cJSON_GetArrayItem(get(a, "refused"), 0),
	    "why")->valuestring, "status is replayed");
	cJSON_Delete(j);
	/* and the record's own history has it, with why this one */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	a = cJSON_GetArrayItem(get(j, "audit"), cJSON_GetArraySize(get(j,
	    "audit")) - 1);
	ck_assert_str_eq(get(a, "command")->valuestring, "audit_note");
	ck_assert_str_eq(get(a, "what")->valuestring,
	    "replay --execute: refused by the policy");
	ck_assert_str_eq(get(a, "why")->valuestring, "status is replayed");
	cJSON_Delete(j);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "show", id, NULL }, NULL, &out, NULL), 0);
	ck_assert_msg(strstr(out, "\n    to (default)/") != NULL &&
	    strstr(out, "; reason: provider fixed\n") != NULL &&
	    strstr(out, "\n    replay --execute: refused by the policy: "
	    "status is replayed\n") != NULL, "%s", out);
	free(out);
	h_rig_stop(&f);
}
END_TEST

static bool
bytes_eqn(amqp_bytes_t b, const char *s, size_t n)
{
	return b.len == n && memcmp(b.bytes, s, n) == 0;
}

/* An AMQP short string is bytes: a message id with a NUL and a byte that
 * is not UTF-8 (a binary id) is replayed as it was, not cut at the NUL,
 * so the consumer's deduplication still knows it; show, the digest and a
 * dry run give it whole, those bytes as U+FFFD. A timestamp in
 * nanoseconds, past what a JSON number (a double) holds exactly, goes
 * out exact too, and a 64-bit id in a header shows as it came. An
 * error header of such bytes is archived whole, as the log line shows
 * it, its bad bytes as U+FFFD. */
START_TEST(properties_not_text_are_replayed_byte_for_byte)
{
	static const char mid[] = "pay-\0-7\xff", corr[] = "c\xc3(1",
	    type[] = "t\x01x", err[] = "gateway\0 timeout \xff after 30s";
	struct h_rig f;
	amqp_basic_properties_t p;
	amqp_table_entry_t e[2];
	amqp_message_t m;
	cJSON *j, **ev;
	char id[24], *out;
	const char *at;
	int rc, n;

	start(&f, NULL);
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
	    AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_APP_ID_FLAG |
	    AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
	    AMQP_BASIC_TIMESTAMP_FLAG;
	/* in nanoseconds, as some producers write it: past 2^53 */
	p.timestamp = (uint64_t)time(NULL) * 1000000000 + 123;
	p.message_id = (amqp_bytes_t){ sizeof(mid) - 1, (void *)mid };
	p.correlation_id = (amqp_bytes_t){ sizeof(corr) - 1, (void *)corr };
	p.type = (amqp_bytes_t){ sizeof(type) - 1, (void *)type };
	p.app_id = amqp_cstring_bytes("billing");
	p.delivery_mode = 2;
	e[0].key = amqp_cstring_bytes("x-error");
	e[0].value.kind = AMQP_FIELD_KIND_BYTES;
	e[0].value.value.bytes = (amqp_bytes_t){ sizeof(err) - 1, (void *)err };
	/* a 64-bit id, past what a double holds */
	e[1].key = amqp_cstring_bytes("order-id");
	e[1].value.kind = AMQP_FIELD_KIND_I64;
	e[1].value.value.i64 = 1796492074007203839;
	p.headers = (amqp_table_t){ 2, e };
	ck_assert_int_eq(amqp_basic_publish(f.c, 1, amqp_cstring_bytes(f.exch),
	    amqp_cstring_bytes(f.q[0]), 0, 0, &p, amqp_cstring_bytes("{}")), 0);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "dead_letter", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "error"),
	    "gateway\xef\xbf\xbd timeout \xef\xbf\xbd after 30s");
	snprintf(id, sizeof(id), "%lld", (long long)h_jnum(ev[0], "id"));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	ck_assert_str_eq(get(j, "error")->valuestring, h_jstr(ev[0], "error"));
	ck_assert_str_eq(get(j, "signature")->valuestring,
	    h_jstr(ev[0], "signature"));
	/* the header's id as it came, on a terminal and in JSON */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "show", id, "--payload", NULL }, NULL, &out, NULL), 0);
	ck_assert_msg(strstr(out, "\n  order-id                 "
	    "1796492074007203839\n") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "show", id, "--payload", NULL }, NULL, &out,
	    NULL), 0);
	at = strstr(out, "\"order-id\":1796492074007203839");
	ck_assert_msg(at != NULL && (at[30] == ',' || at[30] == '}'), "%s",
	    out);
	free(out);
	/* shown whole, its NUL and bad byte as U+FFFD: by show, in the
	 * digest's sample and in a dry run's plan */
	ck_assert_str_eq(get(j, "message_id")->valuestring,
	    "pay-\xef\xbf\xbd-7\xef\xbf\xbd");
	cJSON_Delete(j);
	h_events_free(ev, n);
	ck_assert(h_wait_digests_with(&f.w, "(sample pay-\xef\xbf\xbd-7"
	    "\xef\xbf\xbd, ", NULL, 1, WAIT_MS));
	j = replay(f.cfg, &rc, (const char *[]){ id, NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(get(cJSON_GetArrayItem(get(j, "plan"), 0),
	    "message_id")->valuestring, "pay-\xef\xbf\xbd-7\xef\xbf\xbd");
	cJSON_Delete(j);

	j = replay(f.cfg, &rc, (const char *[]){ id, "--execute", "--reason",
	    "gateway back", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_get(f.c, f.q[0], &m, WAIT_MS));
	ck_assert(bytes_eqn(m.properties.message_id, mid, sizeof(mid) - 1));
	ck_assert(bytes_eqn(m.properties.correlation_id, corr,
	    sizeof(corr) - 1));
	ck_assert(bytes_eqn(m.properties.type, type, sizeof(type) - 1));
	ck_assert(bytes_eq(m.properties.app_id, "billing"));
	ck_assert_uint_eq(m.properties.timestamp, p.timestamp);
	/* the error header was this death's: not sent again */
	ck_assert_ptr_null(dlq_table_get(&m.properties.headers, "x-error"));
	ck_assert_int_eq(dlq_table_get(&m.properties.headers,
	    "order-id")->value.i64, 1796492074007203839);
	amqp_destroy_message(&m);
	h_rig_stop(&f);
}
END_TEST

/* A binary body of many 64 KiB frames (the size the worker's connections
 * negotiate), with NUL bytes, of `n` bytes, dies in the rig's first
 * queue, is archived whole and replayed byte for byte with its message
 * id. */
static void
many_frames_round_trip(struct h_rig *f, const char *message_id, size_t n)
{
	size_t i;
	unsigned char *body = malloc(n);
	amqp_message_t m;
	cJSON *j;
	char id[24];
	int rc;

	for (i = 0; i < n; i++)
		body[i] = (unsigned char)(i * 7 % 251);
	h_publish(f->c, f->exch, f->q[0], body, n, message_id, NULL);
	ck_assert_int_eq(h_reject(f->c, f->q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f->w, "dead_letter", 1, WAIT_MS));
	ck_assert(h_wait_count(f->dlq[0], 0, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f->cfg, NULL, &j, (const char *[]){ "list",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_int_eq((int)get(cJSON_GetArrayItem(j, 0), "payload_bytes")->
	    valuedouble, (int)n);
	snprintf(id, sizeof(id), "%d",
	    (int)get(cJSON_GetArrayItem(j, 0), "id")->valuedouble);
	cJSON_Delete(j);
	j = replay(f->cfg, &rc, (const char *[]){ id, "--execute", "--reason",
	    "many frames", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_get(f->c, f->q[0], &m, WAIT_MS));
	ck_assert_uint_eq(m.body.len, n);
	ck_assert(memcmp(m.body.bytes, body, n) == 0);
	ck_assert(bytes_eq(m.properties.message_id, message_id));
	amqp_destroy_message(&m);
	free(body);
}

START_TEST(a_body_of_many_frames_is_archived_and_replayed_whole)
{
	struct h_rig f;

	start(&f, NULL);
	/* over 1 MiB: written into its record after the insert */
	many_frames_round_trip(&f, "big-1", 1300 * 1000);
	h_rig_stop(&f);
}
END_TEST

/* Large dead letters: a claim hands out about 8 MiB of messages at most
 * and defers the rest of its ids, which dlqctl asks for again (the
 * worker's memory and the answer stay bounded): three of 4 MiB are
 * claimed two, then one, and each is published once, whole; the worker's
 * RSS is back near where it was. */
START_TEST(large_dead_letters_are_claimed_a_few_at_a_time)
{
	enum { N = 3, SIZE = 4 << 20 };
	struct h_rig f;
	char *body = malloc(SIZE), *want = malloc(SIZE), id[32];
	amqp_message_t m;
	const cJSON *a;
	cJSON *j;
	int i, k, rc, claimed[2], n_claims = 0, seen[N] = { 0 };
	bool san = h_sanitized();
	long before;

	start(&f, NULL);
	for (i = 0; i < N; i++) {
		memset(body, 'a' + i, SIZE);
		snprintf(id, sizeof(id), "large-%d", i);
		h_publish(f.c, f.exch, f.q[0], body, SIZE, id, NULL);
	}
	ck_assert_int_eq(h_reject(f.c, f.q[0], N, WAIT_MS), N);
	ck_assert(h_worker_wait(&f.w, "dead_letter", N, WAIT_MS));
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	/* the consumer replaced its connection once it was quiet */
	ck_assert(h_worker_wait(&f.w, "consumer_recycled", 1, WAIT_MS));
	before = h_worker_kib(&f.w, "VmRSS:");
	j = replay(f.cfg, &rc, (const char *[]){ "--queue", f.q[0],
	    "--execute", "--reason", "large", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, N);
	ck_assert_int_eq((int)get(j, "unknown")->valuedouble, 0);
	cJSON_Delete(j);
	/* what the claims' answers took went back (a 16 MiB answer buffer
	 * stayed before) */
	ck_assert_msg(san || h_worker_kib(&f.w, "VmRSS:") < before + 8 * 1024,
	    "worker RSS %ld KiB after the replay, %ld KiB before",
	    h_worker_kib(&f.w, "VmRSS:"), before);
	for (i = 0; i < N; i++) {
		ck_assert(h_get(f.c, f.q[0], &m, WAIT_MS));
		ck_assert_uint_eq(m.body.len, SIZE);
		k = ((const char *)m.body.bytes)[0] - 'a';
		ck_assert(k >= 0 && k < N);
		memset(want, 'a' + k, SIZE);
		ck_assert(memcmp(m.body.bytes, want, SIZE) == 0);
		snprintf(id, sizeof(id), "large-%d", k);
		ck_assert(bytes_eq(m.properties.message_id, id));
		seen[k]++;
		amqp_destroy_message(&m);
	}
	for (i = 0; i < N; i++)
		ck_assert_int_eq(seen[i], 1);
	ck_assert_int_eq(h_count(f.q[0]), 0);
	/* the claims as the audit recorded them, newest first */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    NULL }), 0);
	cJSON_ArrayForEach(a, j)
		if (strcmp(get(a, "command")->valuestring, "replay_claim") == 0) {
			ck_assert_int_lt(n_claims, 2);
			claimed[n_claims++] = cJSON_GetArraySize(get(get(a,
			    "args"), "ids"));
		}
	cJSON_Delete(j);
	ck_assert_int_eq(n_claims, 2);
	ck_assert_int_eq(claimed[0], 1);
	ck_assert_int_eq(claimed[1], N);
	free(body);
	free(want);
	h_rig_stop(&f);
}
END_TEST

/* amqps:// with the broker's CA: the consumer and the replay's publisher
 * both talk TLS, and a body of many frames (many TLS records) crosses
 * whole both ways. */
START_TEST(dead_letters_are_read_and_replayed_over_tls)
{
	struct h_rig f;
	char more[512], conn[256], ssl[16];

	snprintf(more, sizeof(more), "tls_ca_cert = \"%s\";", h_tls_ca());
	h_set_broker(h_tls_url(), more);
	start(&f, NULL);
	snprintf(conn, sizeof(conn), "dlq-worker %s", f.dlq[0]);
	ck_assert_int_eq(h_connection_info(conn, "ssl", ssl, sizeof(ssl)), 1);
	ck_assert_str_eq(ssl, "true");
	many_frames_round_trip(&f, "tls-1", 300 * 1000);
	h_rig_stop(&f);
}
END_TEST

START_TEST(two_replays_at_once_publish_one_message)
{
	struct h_rig f;
	char id[24], *out[2];
	const char *argv[12];
	pid_t pid[2];
	int i, status, published = 0;

	start(&f, NULL);
	snprintf(id, sizeof(id), "%lld", (long long)die_in(&f, 0, 1, "timeout",
	    NULL));
	argv[0] = h_bin("dlqctl");
	argv[1] = "-c";
	argv[2] = f.cfg;
	argv[3] = "--json";
	argv[4] = "replay";
	argv[5] = id;
	argv[6] = "--execute";
	argv[7] = "--reason";
	argv[8] = "race";
	argv[9] = NULL;
	for (i = 0; i < 2; i++) {
		char path[64];
		snprintf(path, sizeof(path), "%s-%d.out", h_tmp_path("race"), i);
		if ((pid[i] = fork()) == 0) {
			freopen(path, "w", stdout);
			execv(argv[0], (char *const *)argv);
			_exit(127);
		}
	}
	for (i = 0; i < 2; i++) {
		char path[64];
		cJSON *j;
		waitpid(pid[i], &status, 0);
		snprintf(path, sizeof(path), "%s-%d.out", h_tmp_path("race"), i);
		out[i] = h_slurp(path);
		ck_assert_ptr_nonnull(j = cJSON_Parse(out[i]));
		published += (int)get(j, "published")->valuedouble;
		cJSON_Delete(j);
		free(out[i]);
	}
	ck_assert_int_eq(published, 1);
	ck_assert(h_wait_count(f.q[0], 1, WAIT_MS));
	ck_assert_int_eq(h_count(f.q[0]), 1);
	h_rig_stop(&f);
}
END_TEST

START_TEST(a_deleted_target_fails_and_stays_replayable)
{
	struct h_rig f;
	char id[24];
	cJSON *j;
	int rc;

	start(&f, NULL);
	snprintf(id, sizeof(id), "%lld", (long long)die_in(&f, 1, 1, "timeout",
	    NULL));
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.q[1]), 0, 0);
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	j = replay(f.cfg, &rc, (const char *[]){ id, "--execute", "--reason",
	    "retry", NULL });
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq((int)get(j, "failed")->valuedouble, 1);
	ck_assert_ptr_nonnull(strstr(get(cJSON_GetArrayItem(get(j, "results"), 0),
	    "detail")->valuestring, "NO_ROUTE"));
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	ck_assert_str_eq(get(j, "status")->valuestring, "open");
	ck_assert_str_eq(get(cJSON_GetArrayItem(get(j, "attempts"), 0),
	    "outcome")->valuestring, "failed");
	cJSON_Delete(j);
	/* the queue is back: the same dead letter replays */
	ck_assert_ptr_nonnull(amqp_queue_declare(f.c, 1,
	    amqp_cstring_bytes(f.q[1]), 0, 1, 0, 0, amqp_empty_table));
	j = replay(f.cfg, &rc, (const char *[]){ id, "--execute", "--reason",
	    "retry", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_wait_count(f.q[1], 1, WAIT_MS));
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.q[1]), 0, 0);
	h_rig_stop(&f);
}
END_TEST

/* A target queue that is full and refuses more (a length limit with
 * overflow reject-publish, as quorum queues are often run) nacks what
 * it does not take: those replays fail, stay replayable and go out once
 * it has room; the one it took is replayed, once. */
START_TEST(what_a_full_target_refuses_fails_and_stays_replayable)
{
	struct h_rig f;
	char ids[3][24];
	const cJSON *r;
	cJSON *j;
	int64_t died[3];
	int i, rc;

	start(&f, NULL);
	die_in(&f, 1, 3, "timeout", died);
	for (i = 0; i < 3; i++)
		snprintf(ids[i], sizeof(ids[i]), "%lld", (long long)died[i]);
	h_queue_policy(f.prefix, f.q[1], "{\"max-length\":1,"
	    "\"overflow\":\"reject-publish\"}");
	j = replay(f.cfg, &rc, (const char *[]){ ids[0], ids[1], ids[2],
	    "--rate", "0", "--execute", "--reason", "full", NULL });
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	ck_assert_int_eq((int)get(j, "failed")->valuedouble, 2);
	ck_assert_int_eq((int)get(j, "unknown")->valuedouble, 0);
	cJSON_ArrayForEach(r, get(j, "results")) {
		bool first = (long long)get(r, "id")->valuedouble ==
		    atoll(ids[0]);
		ck_assert_str_eq(get(r, "outcome")->valuestring, first ?
		    "published" : "failed");
		if (!first)
			ck_assert_ptr_nonnull(strstr(get(r, "detail")->valuestring,
			    "nacked by the broker"));
	}
	cJSON_Delete(j);
	ck_assert_int_eq(h_count(f.q[1]), 1);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){
		    "show", ids[i], NULL }), 0);
		ck_assert_str_eq(get(j, "status")->valuestring, i == 0 ?
		    "replayed" : "open");
		ck_assert_str_eq(get(cJSON_GetArrayItem(get(j, "attempts"), 0),
		    "outcome")->valuestring, i == 0 ? "published" : "failed");
		cJSON_Delete(j);
	}
	/* room again: the two refused go out, the one taken does not */
	amqp_queue_purge(f.c, 1, amqp_cstring_bytes(f.q[1]));
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	h_queue_policy(f.prefix, NULL, NULL);
	j = replay(f.cfg, &rc, (const char *[]){ ids[0], ids[1], ids[2],
	    "--rate", "0", "--execute", "--reason", "room", NULL });
	ck_assert_int_eq(rc, 3);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 2);
	ck_assert_int_eq((int)get(j, "refused")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_wait_count(f.q[1], 2, WAIT_MS));
	h_rig_stop(&f);
}
END_TEST

/* The ids of a dry run's plan, in a bitmask over ids from `base`. */
static unsigned
planned(cJSON *dry, int64_t base)
{
	const cJSON *e;
	unsigned m = 0;

	cJSON_ArrayForEach(e, get(dry, "plan"))
		m |= 1u << (h_jnum(e, "id") - base);
	return m;
}

/* A --queue selection narrowed by --class or --signature (as groups
 * prints it) plans only those dead letters, and only those go out. */
START_TEST(a_queue_selection_narrows_by_class_and_signature)
{
	struct h_rig f;
	const cJSON *g;
	char sig[16] = "";
	int64_t first;
	cJSON *j;
	int rc;

	start(&f, NULL);
	first = die_in(&f, 0, 2, "upstream timeout", NULL) - 1;
	die_in(&f, 0, 1, "missing field 'amount'", NULL);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    NULL }), 0);
	cJSON_ArrayForEach(g, j)
		if (strcmp(get(g, "class")->valuestring, "validation") == 0)
			snprintf(sig, sizeof(sig), "%s",
			    get(g, "signature")->valuestring);
	cJSON_Delete(j);
	ck_assert_str_ne(sig, "");

	j = replay(f.cfg, &rc, (const char *[]){ "--queue", f.q[0], "--class",
	    "transient", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(planned(j, first), 3u);
	cJSON_Delete(j);
	j = replay(f.cfg, &rc, (const char *[]){ "--queue", f.q[0],
	    "--signature", sig, NULL });
	ck_assert_uint_eq(planned(j, first), 4u);
	cJSON_Delete(j);
	/* the signature names its queue: as the digest gives it, alone */
	j = replay(f.cfg, &rc, (const char *[]){ "--signature", sig, NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(planned(j, first), 4u);
	cJSON_Delete(j);
	j = replay(f.cfg, &rc, (const char *[]){ "--queue", f.q[0], "--since",
	    "1h", NULL });
	ck_assert_uint_eq(planned(j, first), 7u);
	cJSON_Delete(j);

	j = replay(f.cfg, &rc, (const char *[]){ "--queue", f.q[0], "--class",
	    "transient", "--rate", "0", "--execute", "--reason", "back up",
	    NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 2);
	cJSON_Delete(j);
	ck_assert(h_wait_count(f.q[0], 2, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--queue", f.q[0], "--status", "open", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(j, 0), "id"), first + 2);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* Record `id` is still open, with no attempt: nothing was claimed. */
static void
assert_never_tried(const struct h_rig *f, const char *id)
{
	cJSON *j;

	ck_assert_int_eq(h_dlqctl(f->cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	ck_assert_str_eq(get(j, "status")->valuestring, "open");
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "attempts")), 0);
	cJSON_Delete(j);
}

/* An AMQP name is at most 255 bytes. dlqctl refuses a longer target
 * before it claims anything; a message the publisher cannot encode is
 * FAILED (not sent, replayable), never UNKNOWN (left 'replaying'). */
START_TEST(a_name_longer_than_amqp_carries_is_refused_not_left_unknown)
{
	struct h_rig f;
	struct dlq_config c;
	struct dlq_buf errors;
	struct dlq_publisher *p;
	amqp_basic_properties_t props = { 0 };
	char id[24], key[301], detail[512], why[256], *err;

	start(&f, NULL);
	snprintf(id, sizeof(id), "%lld", (long long)die_in(&f, 1, 1, "timeout",
	    NULL));
	memset(key, 'k', 300);
	key[300] = '\0';
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", id, "--to-exchange", "", "--routing-key", key,
	    "--execute", "--reason", "retry", NULL }, NULL, NULL, &err), 2);
	ck_assert_ptr_nonnull(strstr(err, "dlqctl: --routing-key: too long: "
	    "300 bytes, at most 255 (an AMQP name)\n"));
	free(err);
	assert_never_tried(&f, id);

	/* the publisher itself, given such a name */
	dlq_buf_init(&errors);
	ck_assert_int_eq(dlq_config_load(&c, f.cfg, &errors), 0);
	p = dlq_publisher_open(&c, "dlq-test", why, sizeof(why));
	ck_assert_msg(p != NULL, "%s", why);
	ck_assert_int_eq(dlq_publisher_send(p, "", key, &props,
	    amqp_cstring_bytes("x"), detail, sizeof(detail)), DLQ_PUB_FAILED);
	ck_assert_msg(strncmp(detail, "not sent: the message cannot be "
	    "encoded", 39) == 0, "%s", detail);
	/* and goes on with the next message */
	ck_assert_int_eq(dlq_publisher_send(p, "", f.q[1], &props,
	    amqp_cstring_bytes("x"), detail, sizeof(detail)), DLQ_PUB_OK);
	ck_assert(h_wait_count(f.q[1], 1, WAIT_MS));
	dlq_publisher_close(p);
	dlq_config_release(&c);
	dlq_buf_release(&errors);
	h_rig_stop(&f);
}
END_TEST

/* A replay goes back to work: a target that is a DLQ of the topology
 * (the dead-letter exchange, or a DLQ's name on the default exchange)
 * is refused before anything is claimed: the copy would die at once and
 * be archived again. The record is left as it was. */
START_TEST(a_replay_into_a_dlq_is_refused)
{
	struct h_rig f;
	char id[24], dlx[112], *err;

	start(&f, NULL);
	snprintf(id, sizeof(id), "%lld", (long long)die_in(&f, 0, 1, "timeout",
	    NULL));
	snprintf(dlx, sizeof(dlx), "%s_dlx", f.prefix);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", id, "--to-exchange", dlx, "--routing-key", f.q[0],
	    "--execute", "--reason", "retry", NULL }, NULL, NULL, &err), 2);
	ck_assert_msg(strstr(err, "is the dead-letter exchange: what is "
	    "published there goes into a DLQ, not back to work") != NULL, "%s",
	    err);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", id, "--to-exchange", "", "--routing-key",
	    f.dlq[1], "--execute", "--reason", "retry", NULL }, NULL, NULL,
	    &err), 2);
	ck_assert_msg(strstr(err, " is a DLQ: a replay goes back to work, e.g. "
	    "--routing-key ") != NULL && strstr(err, f.q[1]) != NULL, "%s", err);
	free(err);
	assert_never_tried(&f, id);
	h_rig_stop(&f);
}
END_TEST

/* The entry of a dry run's targets for this exchange and routing key. */
static const cJSON *
target_of(const cJSON *dry, const char *exchange, const char *key)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, get(dry, "targets"))
		if (strcmp(get(t, "exchange")->valuestring, exchange) == 0 &&
		    strcmp(get(t, "routing_key")->valuestring, key) == 0)
			return t;
	ck_abort_msg("no target %s/%s", exchange, key);
	return NULL;
}

START_TEST(a_dry_run_looks_at_where_its_messages_would_go)
{
	struct h_rig f;
	char a[24], b[24], missing[160], *out, *err;
	amqp_connection_state_t probe;
	const cJSON *t;
	cJSON *j;
	int rc;

	start(&f, NULL);
	snprintf(a, sizeof(a), "%lld", (long long)die_in(&f, 0, 1, "timeout",
	    NULL));
	snprintf(b, sizeof(b), "%lld", (long long)die_in(&f, 1, 1, "timeout",
	    NULL));
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.q[1]), 0, 0);
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	h_publish(f.c, "", f.q[0], "{}", 2, "waiting", NULL);
	ck_assert(h_wait_count(f.q[0], 1, WAIT_MS));

	/* targets are looked at in the order given: the channel the
	 * missing queue's 404 closed is opened again for the next */
	j = replay(f.cfg, &rc, (const char *[]){ b, a, NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "targets")), 2);
	t = target_of(j, "", f.q[0]);
	ck_assert(cJSON_IsTrue(get(t, "exists")));
	ck_assert_int_eq((int)get(t, "count")->valuedouble, 1);
	ck_assert_int_eq((int)get(t, "messages")->valuedouble, 1);
	ck_assert_int_eq((int)get(t, "consumers")->valuedouble, 0);
	t = target_of(j, "", f.q[1]);
	ck_assert(cJSON_IsFalse(get(t, "exists")));
	ck_assert_ptr_nonnull(strstr(get(t, "problem")->valuestring,
	    "no queue"));
	cJSON_Delete(j);

	/* as an operator reads it */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", a, b, NULL }, NULL, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "queue exists: 1 ready, no "
	    "consumer"));
	ck_assert_ptr_nonnull(strstr(out, "these would fail"));
	ck_assert_str_eq(err, "");
	free(out);
	free(err);

	/* another exchange: it exists or not */
	snprintf(missing, sizeof(missing), "%s_missing", f.prefix);
	j = replay(f.cfg, &rc, (const char *[]){ a, b, "--to-exchange",
	    missing, "--routing-key", "k", NULL });
	t = target_of(j, missing, "k");
	ck_assert_int_eq((int)get(t, "count")->valuedouble, 2);
	ck_assert(cJSON_IsFalse(get(t, "exists")));
	ck_assert_ptr_nonnull(strstr(get(t, "problem")->valuestring,
	    "no exchange"));
	cJSON_Delete(j);
	j = replay(f.cfg, &rc, (const char *[]){ a, "--to-exchange", f.exch,
	    "--routing-key", "k", NULL });
	t = target_of(j, f.exch, "k");
	ck_assert(cJSON_IsTrue(get(t, "exists")));
	ck_assert_ptr_null(get(t, "consumers"));
	cJSON_Delete(j);

	/* nothing was published, created or taken */
	ck_assert_int_eq(h_count(f.q[0]), 1);
	ck_assert_int_eq(h_count(f.q[1]), -1);
	probe = h_connect();
	amqp_exchange_declare(probe, 1, amqp_cstring_bytes(missing),
	    amqp_empty_bytes, 1, 0, 0, 0, amqp_empty_table);
	ck_assert_int_eq(amqp_get_rpc_reply(probe).reply_type,
	    AMQP_RESPONSE_SERVER_EXCEPTION);
	amqp_destroy_connection(probe);
	h_rig_stop(&f);
}
END_TEST

/* A work queue `w` (160 bytes) whose dead letters go to `wdlq` (170),
 * a DLQ the worker does not monitor. */
static void
unmonitored(struct h_rig *f, char *w, char *wdlq)
{
	amqp_table_entry_t args[2];
	amqp_table_t at = { 2, args };

	snprintf(w, 160, "%s_unmonitored", f->prefix);
	snprintf(wdlq, 170, "%s.dlq", w);
	ck_assert_ptr_nonnull(amqp_queue_declare(f->c, 1,
	    amqp_cstring_bytes(wdlq), 0, 1, 0, 0, amqp_empty_table));
	args[0] = h_str_entry("x-dead-letter-exchange", "");
	args[1] = h_str_entry("x-dead-letter-routing-key", wdlq);
	ck_assert_ptr_nonnull(amqp_queue_declare(f->c, 1, amqp_cstring_bytes(w),
	    0, 1, 0, 0, at));
}

/* A chunk is published before its confirms are awaited: a basic.return
 * in the middle of it must fail its own message and no other. */
START_TEST(returns_in_a_pipelined_chunk_fail_only_their_own_messages)
{
	struct h_rig f;
	char ids[6][24];
	const char *argv[12];
	const cJSON *r;
	cJSON *j;
	int i, rc, q;

	start(&f, NULL);
	/* ids 0-2 die in q0, 3-5 in q1; q1 is then deleted, so the replays
	 * of 3-5 come back as returns after three confirmed ones */
	for (q = 0; q < 2; q++) {
		int64_t died[3];

		die_in(&f, q, 3, "timeout", died);
		for (i = 0; i < 3; i++)
			snprintf(ids[3 * q + i], sizeof(ids[0]), "%lld",
			    (long long)died[i]);
	}
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(f.q[1]), 0, 0);
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	for (i = 0; i < 6; i++)
		argv[i] = ids[i];
	argv[6] = "--rate";
	argv[7] = "0";
	argv[8] = "--execute";
	argv[9] = "--reason";
	argv[10] = "pipeline";
	argv[11] = NULL;
	j = replay(f.cfg, &rc, argv);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 3);
	ck_assert_int_eq((int)get(j, "failed")->valuedouble, 3);
	ck_assert_int_eq((int)get(j, "unknown")->valuedouble, 0);
	cJSON_ArrayForEach(r, get(j, "results")) {
		long long id = (long long)get(r, "id")->valuedouble;
		bool in_q1 = id >= atoll(ids[3]);
		ck_assert_msg(strcmp(get(r, "outcome")->valuestring, in_q1 ?
		    "failed" : "published") == 0, "id %lld: %s", id,
		    get(r, "outcome")->valuestring);
		if (in_q1)
			ck_assert_ptr_nonnull(strstr(get(r, "detail")->valuestring,
			    "NO_ROUTE"));
	}
	cJSON_Delete(j);
	ck_assert(h_wait_count(f.q[0], 3, WAIT_MS));
	for (i = 0; i < 6; i++) {
		ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){
		    "show", ids[i], NULL }), 0);
		ck_assert_str_eq(get(j, "status")->valuestring, i < 3 ?
		    "replayed" : "open");
		cJSON_Delete(j);
	}
	h_rig_stop(&f);
}
END_TEST

static const char *
why_of(cJSON *dry)
{
	return get(cJSON_GetArrayItem(get(dry, "plan"), 0), "why")->valuestring;
}

/* The message id of archive record `id`, as the worker logged it. */
static void
message_id_of(struct h_rig *f, int64_t id, char *mid, size_t size)
{
	cJSON **ev;
	int n, i;

	mid[0] = '\0';
	ev = h_worker_events(&f->w, "dead_letter", &n);
	for (i = 0; i < n; i++)
		if (h_jnum(ev[i], "id") == id)
			snprintf(mid, size, "%s", h_jstr(ev[i], "message_id"));
	h_events_free(ev, n);
	ck_assert_str_ne(mid, "");
}

/* The archive id of the first record of message `mid`, once archived,
 * into id[24]. */
static void
archived_as(struct h_rig *f, const char *mid, char id[24])
{
	snprintf(id, 24, "%lld", (long long)h_archived(&f->w, mid, 1,
	    WAIT_MS));
}

/* A message `mid` with the AMQP timestamp `ts`, rejected from the rig's
 * second queue: its record's archive id into id[24] once archived. */
static void
dies_sent_at(struct h_rig *f, uint64_t ts, const char *mid, char id[24])
{
	amqp_basic_properties_t p;

	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
	p.timestamp = ts;
	p.message_id = amqp_cstring_bytes(mid);
	ck_assert_int_eq(amqp_basic_publish(f->c, 1,
	    amqp_cstring_bytes(f->exch), amqp_cstring_bytes(f->q[1]), 0, 0, &p,
	    amqp_cstring_bytes("{}")), 0);
	ck_assert_int_eq(h_reject(f->c, f->q[1], 1, WAIT_MS), 1);
	archived_as(f, mid, id);
}

/* A message `mid` without a timestamp whose x-death says it first died at
 * `first` (seconds): as the broker leaves one that went round a retry
 * queue for long before it was rejected for good (an entry keeps the
 * time of its first death when counted again). Put straight into the
 * DLQ of f->q[1]; its record's archive id into id[24]. */
static void
dies_first_at(struct h_rig *f, uint64_t first, const char *mid,
    char id[24])
{
	amqp_basic_properties_t p;
	amqp_table_entry_t e[5], h;
	amqp_field_value_t rk, entry;
	amqp_array_t keys = { 1, &rk };

	rk.kind = AMQP_FIELD_KIND_UTF8;
	rk.value.bytes = amqp_cstring_bytes(f->q[1]);
	e[0].key = amqp_cstring_bytes("queue");
	e[0].value = rk;
	e[1].key = amqp_cstring_bytes("reason");
	e[1].value.kind = AMQP_FIELD_KIND_UTF8;
	e[1].value.value.bytes = amqp_cstring_bytes("rejected");
	e[2].key = amqp_cstring_bytes("count");
	e[2].value.kind = AMQP_FIELD_KIND_I64;
	e[2].value.value.i64 = 40;
	e[3].key = amqp_cstring_bytes("time");
	e[3].value.kind = AMQP_FIELD_KIND_TIMESTAMP;
	e[3].value.value.u64 = first;
	e[4].key = amqp_cstring_bytes("routing-keys");
	e[4].value.kind = AMQP_FIELD_KIND_ARRAY;
	e[4].value.value.array = keys;
	entry.kind = AMQP_FIELD_KIND_TABLE;
	entry.value.table = (amqp_table_t){ 5, e };
	h.key = amqp_cstring_bytes("x-death");
	h.value.kind = AMQP_FIELD_KIND_ARRAY;
	h.value.value.array = (amqp_array_t){ 1, &entry };
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
	p.headers = (amqp_table_t){ 1, &h };
	p.message_id = amqp_cstring_bytes(mid);
	ck_assert_int_eq(amqp_basic_publish(f->c, 1, amqp_empty_bytes,
	    amqp_cstring_bytes(f->dlq[1]), 0, 0, &p, amqp_cstring_bytes("{}")),
	    0);
	archived_as(f, mid, id);
}

/* A replay does not send the configured error headers (x-error here):
 * the error they held was the earlier death's. The replayed message,
 * rejected again by a consumer that sets none, is a new record with no
 * error, shown as "(no error header)", while the lineage keeps the old
 * one's text. */
START_TEST(a_replay_sends_no_old_error_and_a_new_death_shows_none)
{
	struct h_rig f;
	amqp_message_t m;
	char id[2][24], id2[24], mid[200], *out;
	const cJSON *e;
	int64_t died[2];
	cJSON *j;
	int rc, i;

	start(&f, NULL);
	die_in(&f, 0, 2, "upstream timeout after 30000 ms", died);
	for (i = 0; i < 2; i++) {
		snprintf(id[i], sizeof(id[i]), "%lld", (long long)died[i]);
		j = replay(f.cfg, &rc, (const char *[]){ id[i], "--execute",
		    "--reason", "provider fixed", NULL });
		ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
		cJSON_Delete(j);
	}
	/* the first on the wire: no x-error */
	ck_assert(h_get(f.c, f.q[0], &m, WAIT_MS));
	ck_assert_ptr_null(dlq_table_get(&m.properties.headers, "x-error"));
	ck_assert_ptr_nonnull(dlq_table_get(&m.properties.headers,
	    "x-replay-of"));
	amqp_destroy_message(&m);
	/* the second dies again, rejected without an error header */
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	message_id_of(&f, died[1], mid, sizeof(mid));
	snprintf(id2, sizeof(id2), "%lld", (long long)h_archived(&f.w, mid, 2,
	    WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id2, NULL }), 0);
	e = get(j, "error");
	ck_assert_msg(!cJSON_IsString(e) || e->valuestring[0] == '\0',
	    "the new death's error: %s", e->valuestring);
	ck_assert_int_eq((int)get(j, "replay_of")->valuedouble, died[1]);
	cJSON_Delete(j);
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "show", id2, NULL }, NULL, &out), 0);
	ck_assert_msg(strstr(out, "\nerror            (no error header)\n") !=
	    NULL, "%s", out);
	free(out);
	/* the earlier death, in its lineage, keeps its error */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id[1], NULL }), 0);
	ck_assert_str_eq(get(j, "error")->valuestring,
	    "upstream timeout after 30000 ms");
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

START_TEST(the_policy_refuses_with_its_reasons)
{
	struct h_rig f;
	amqp_basic_properties_t p;
	amqp_message_t m;
	char id[24], id2[24], mid[200], *out;
	uint64_t sent;
	cJSON *j;
	int rc, i;

	start(&f, "replay = { max_age_ms = 3600000; max_replays = 1; };");
	/* expired: a message whose TTL ran out in the work queue */
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_EXPIRATION_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
	p.expiration = amqp_cstring_bytes("1");
	p.message_id = amqp_cstring_bytes("otp-1");
	ck_assert_int_eq(amqp_basic_publish(f.c, 1, amqp_cstring_bytes(f.exch),
	    amqp_cstring_bytes(f.q[0]), 0, 0, &p, amqp_cstring_bytes("123456")),
	    0);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--class", "expired", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	snprintf(id, sizeof(id), "%lld", (long long)get(cJSON_GetArrayItem(j, 0),
	    "id")->valuedouble);
	cJSON_Delete(j);
	j = replay(f.cfg, &rc, (const char *[]){ id, NULL });
	ck_assert_str_eq(why_of(j), "class expired is never replayed (--force "
	    "with --reason to override)");
	cJSON_Delete(j);
	j = replay(f.cfg, &rc, (const char *[]){ id, "--execute", "--reason",
	    "x", NULL });
	ck_assert_int_eq(rc, 3);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 0);
	cJSON_Delete(j);
	ck_assert_int_eq(h_count(f.q[0]), 0);
	j = replay(f.cfg, &rc, (const char *[]){ id, "--execute", "--force",
	    "--reason", "business still wants it", NULL });
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_get(f.c, f.q[0], &m, WAIT_MS));
	amqp_destroy_message(&m);

	/* max_age: sent an hour and a minute ago, its timestamp in seconds
	 * as AMQP has it, or in milliseconds as some clients write it (half
	 * a minute more, so that the 123 ms added cannot make it 60m when
	 * the check runs early in the second it was sent in) */
	for (i = 0; i < 2; i++) {
		sent = (uint64_t)time(NULL) - 3690;
		dies_sent_at(&f, i ? sent * 1000 + 123 : sent, i ? "sent-ms" :
		    "sent-s", id);
		j = replay(f.cfg, &rc, (const char *[]){ id, NULL });
		ck_assert_str_eq(why_of(j),
		    "older than replay.max_age (61m > 60m)");
		cJSON_Delete(j);
	}
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "show", id, NULL }, NULL, &out), 0);
	ck_assert_msg(strstr(out, ".123Z (written in milliseconds, not "
	    "seconds)\n") != NULL, "%s", out);
	free(out);

	/* max_replays, lineage and repeated cycles: replayed once, it dies
	 * again, and the second death may not be replayed */
	snprintf(id, sizeof(id), "%lld", (long long)die_in(&f, 0, 1, "timeout",
	    NULL));
	j = replay(f.cfg, &rc, (const char *[]){ id, "--execute", "--reason",
	    "first try", NULL });
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	/* its second death keeps its message id */
	message_id_of(&f, atoll(id), mid, sizeof(mid));
	snprintf(id2, sizeof(id2), "%lld", (long long)h_archived(&f.w, mid, 2,
	    WAIT_MS));
	j = replay(f.cfg, &rc, (const char *[]){ id2, NULL });
	ck_assert_str_eq(why_of(j), "already replayed 1 times "
	    "(replay.max_replays 1)");
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id2, NULL }), 0);
	ck_assert_int_eq((int)get(j, "replay_of")->valuedouble, atoi(id));
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "lineage")), 2);
	ck_assert_int_eq((int)get(cJSON_GetArrayItem(get(j, "lineage"), 0),
	    "id")->valuedouble, atoi(id));
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq((int)get(j, "repeated_cycles")->valuedouble, 1);
	cJSON_Delete(j);

	/* max_age without a timestamp: counted from the first death, two
	 * hours ago, not from the last one, just now */
	dies_first_at(&f, (uint64_t)time(NULL) - 7260, "first-died", id);
	j = replay(f.cfg, &rc, (const char *[]){ id, NULL });
	ck_assert_str_eq(why_of(j), "older than replay.max_age (2h > 60m)");
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

START_TEST(evidence_is_required_recorded_shown_and_counted)
{
	struct h_rig f;
	int64_t died[2];
	char a[24], b[24], *out, ev[DLQ_CONTROL_TEXT_MAX + 1];
	const char *said;
	const cJSON *at;
	cJSON *j;
	int rc;

	/* evidence as long as it may be, characters of two bytes in it:
	 * the attempt records all of it */
	snprintf(ev, sizeof(ev), "no provider receipt at 10:42 UTC");
	while (strlen(ev) + 14 <= DLQ_CONTROL_TEXT_MAX)
		strcat(ev, "; Prüfung: ok");
	/* q0 needs evidence checked within the last 10 minutes */
	start(&f, "replay = { queues = ( { queue = \"%s\"; "
	    "evidence_max_age_ms = 600000; } ); };");
	die_in(&f, 0, 2, "timeout", died);
	snprintf(a, sizeof(a), "%lld", (long long)died[1]);
	snprintf(b, sizeof(b), "%lld", (long long)died[0]);
	j = replay(f.cfg, &rc, (const char *[]){ a, NULL });
	ck_assert_ptr_nonnull(strstr(why_of(j), "no evidence"));
	cJSON_Delete(j);
	/* the case's evidence, from assign, is used while fresh */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "assign",
	    a, "--owner", "payments", "--decision", "charge again?",
	    "--evidence", ev, NULL }), 0);
	j = replay(f.cfg, &rc, (const char *[]){ a, "--execute", "--reason",
	    "checked", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show", a,
	    NULL }), 0);
	ck_assert_str_eq(get(j, "evidence")->valuestring, ev);
	ck_assert(cJSON_IsNumber(get(j, "evidence_at")));
	at = cJSON_GetArrayItem(get(j, "attempts"), 0);
	said = get(at, "evidence")->valuestring;
	ck_assert_int_eq(strncmp(said, ev, strlen(ev)), 0);
	ck_assert_int_eq(strncmp(said + strlen(ev), " (case evidence, checked",
	    24), 0);
	cJSON_Delete(j);
	/* and shown to a human */
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "show", a, NULL }, NULL, &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "evidence         no provider "
	    "receipt at 10:42 UTC"));
	free(out);
	/* a replay of the other one with --evidence given now: allowed, and
	 * a forced one without: refused. Only evidence-less ones count. */
	j = replay(f.cfg, &rc, (const char *[]){ b, "--execute", "--force",
	    "--reason", "x", NULL });
	ck_assert_int_eq(rc, 3);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 0);
	cJSON_Delete(j);
	j = replay(f.cfg, &rc, (const char *[]){ b, "--execute", "--reason",
	    "x", "--evidence", "ledger shows no charge", NULL });
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq((int)get(get(j, "decisions"),
	    "replays_without_evidence")->valuedouble, 0);
	cJSON_Delete(j);
	/* q1 needs none: a replay without evidence goes, and is counted */
	snprintf(a, sizeof(a), "%lld", (long long)die_in(&f, 1, 1, "timeout",
	    NULL));
	j = replay(f.cfg, &rc, (const char *[]){ a, "--execute", "--reason",
	    "x", NULL });
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq((int)get(get(j, "decisions"),
	    "replays_without_evidence")->valuedouble, 1);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* A --from-queue dry run shows each message id whole: two ids that
 * differ only past the 24th character (a common prefix, a counter at the
 * end) must not look the same. */
START_TEST(from_queue_shows_message_ids_whole)
{
	static const char *const ids[] = {
	    "order-2026-12-07-customer-000000001",
	    "order-2026-12-07-customer-000000002" };
	struct h_rig f;
	char w[160], wdlq[170], *out;
	amqp_table_entry_t e = h_str_entry("x-error", "timeout");
	amqp_table_t h = { 1, &e };
	int i;

	start(&f, NULL);
	unmonitored(&f, w, wdlq);
	for (i = 0; i < 2; i++)
		h_publish(f.c, "", w, "{}", 2, ids[i], &h);
	ck_assert_int_eq(h_reject(f.c, w, 2, WAIT_MS), 2);
	ck_assert(h_wait_count(wdlq, 2, WAIT_MS));
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "replay", "--from-queue", wdlq, NULL }, NULL, &out), 0);
	for (i = 0; i < 2; i++)
		ck_assert_msg(strstr(out, ids[i]) != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(h_count(wdlq), 2);
	h_rig_stop(&f);
}
END_TEST

START_TEST(from_queue_replays_the_eligible_and_leaves_the_rest)
{
	struct h_rig f;
	char w[160], wdlq[170], *out, *err;
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	amqp_message_t m;
	const cJSON *a;
	cJSON *j;
	int i, rc;

	start(&f, NULL);
	unmonitored(&f, w, wdlq);
	for (i = 0; i < 4; i++) {
		e = h_str_entry("x-error", i % 2 ? "invalid field phone" : "timeout");
		h_publish(f.c, "", w, "{}", 2, i % 2 ? "bad" : "good", &h);
	}
	ck_assert_int_eq(h_reject(f.c, w, 4, WAIT_MS), 4);
	ck_assert(h_wait_count(wdlq, 4, WAIT_MS));

	j = replay(f.cfg, &rc, (const char *[]){ "--from-queue", wdlq, NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "eligible")->valuedouble, 2);
	/* each message, eligible or not and why, and where it would go */
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "plan")), 4);
	cJSON_ArrayForEach(a, get(j, "plan")) {
		bool good = strcmp(get(a, "message_id")->valuestring,
		    "good") == 0;

		ck_assert(cJSON_IsTrue(get(a, "eligible")) == good);
		ck_assert_str_eq(get(a, "routing_key")->valuestring, w);
		ck_assert(good ? get(a, "why") == NULL : strstr(get(a,
		    "why")->valuestring, "validation") != NULL);
	}
	/* the two eligible would go back to their work queue, which is
	 * there */
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "targets")), 1);
	ck_assert_int_eq((int)get(target_of(j, "", w), "count")->valuedouble,
	    2);
	ck_assert(cJSON_IsTrue(get(target_of(j, "", w), "exists")));
	/* a classic queue does not count what goes back */
	ck_assert_ptr_null(get(j, "delivery_count_max"));
	cJSON_Delete(j);
	ck_assert(h_wait_count(wdlq, 4, WAIT_MS));
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", "--from-queue", wdlq, NULL }, NULL, &out, NULL),
	    0);
	ck_assert_msg(strncmp(out, "MESSAGE_ID               ELIGIBLE  TARGET",
	    41) == 0 && strstr(out, "\nbad                      no        "
	    "(default)/") != NULL && strstr(out, "\ngood                     "
	    "yes       (default)/") != NULL, "%s", out);
	free(out);
	ck_assert(h_wait_count(wdlq, 4, WAIT_MS));
	ck_assert_int_eq(h_count(w), 0);

	/* who replayed is who the worker sees, as in the audit: not what
	 * the caller's environment claims */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "replay", "--from-queue", wdlq, "--execute",
	    "--reason", "upstream back", NULL }, (const char *[]){
	    "USER=mallory", "SUDO_USER=mallory", NULL }, &out, NULL), 3);
	ck_assert_ptr_nonnull(j = cJSON_Parse(out));	/* 3: two refused */
	free(out);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 2);
	ck_assert_int_eq((int)get(j, "refused")->valuedouble, 2);
	cJSON_Delete(j);
	ck_assert(h_wait_count(w, 2, WAIT_MS));
	ck_assert(h_wait_count(wdlq, 2, WAIT_MS));
	ck_assert(h_get(f.c, w, &m, WAIT_MS));
	ck_assert(bytes_eq(dlq_table_get(&m.properties.headers,
	    "x-replayed-by")->value.bytes, "root"));
	amqp_destroy_message(&m);
	ck_assert_int_eq(h_count(w), 1);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    NULL }), 0);
	ck_assert_int_ge(cJSON_GetArraySize(j), 4);	/* start, end, twice */
	ck_assert_str_eq(get(cJSON_GetArrayItem(j, 0), "command")->valuestring,
	    "audit_note");
	/* the executed run's end names each refused message and why */
	a = get(get(cJSON_GetArrayItem(j, 0), "args"), "refused");
	ck_assert_int_eq(cJSON_GetArraySize(a), 2);
	ck_assert_str_eq(get(cJSON_GetArrayItem(a, 1), "message_id")->valuestring,
	    "bad");
	ck_assert_ptr_nonnull(strstr(get(cJSON_GetArrayItem(a, 1),
	    "why")->valuestring, "validation"));
	cJSON_Delete(j);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(w), 0, 0);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(wdlq), 0, 0);

	/* a queue that cannot be read is a failed run, not an empty one */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", "--from-queue", wdlq, NULL }, NULL, &out, &err),
	    1);
	ck_assert_ptr_nonnull(strstr(out, "eligible 0,"));
	ck_assert_ptr_nonnull(strstr(err, "cannot read"));
	ck_assert_ptr_nonnull(strstr(err, "404 NOT_FOUND"));
	free(out);
	free(err);
	h_rig_stop(&f);
}
END_TEST

/* --from-queue holds a message's age against replay.max_age from its own
 * timestamp, in whichever unit its client wrote it. */
START_TEST(from_queue_ages_a_message_by_its_timestamp_in_any_unit)
{
	static const char *const ids[] = { "old-ms", "new-us" };
	struct h_rig f;
	char w[160], wdlq[170];
	amqp_basic_properties_t p;
	uint64_t now = (uint64_t)time(NULL);
	const cJSON *a;
	cJSON *j;
	bool old;
	int i, rc;

	start(&f, "replay = { max_age_ms = 3600000; };");
	unmonitored(&f, w, wdlq);
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
	for (i = 0; i < 2; i++) {
		p.timestamp = i ? (now - 60) * 1000000 : (now - 3660) * 1000;
		p.message_id = amqp_cstring_bytes(ids[i]);
		ck_assert_int_eq(amqp_basic_publish(f.c, 1, amqp_cstring_bytes(""),
		    amqp_cstring_bytes(w), 0, 0, &p, amqp_cstring_bytes("{}")),
		    0);
	}
	ck_assert_int_eq(h_reject(f.c, w, 2, WAIT_MS), 2);
	ck_assert(h_wait_count(wdlq, 2, WAIT_MS));

	j = replay(f.cfg, &rc, (const char *[]){ "--from-queue", wdlq, NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "eligible")->valuedouble, 1);
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "plan")), 2);
	cJSON_ArrayForEach(a, get(j, "plan")) {
		old = strcmp(get(a, "message_id")->valuestring, "old-ms") == 0;
		ck_assert(cJSON_IsTrue(get(a, "eligible")) == !old);
		if (old)
			ck_assert_str_eq(get(a, "why")->valuestring,
			    "older than replay.max_age (61m > 60m)");
	}
	cJSON_Delete(j);
	ck_assert(h_wait_count(wdlq, 2, WAIT_MS));
	h_rig_stop(&f);
}
END_TEST

/* --from-queue reads dead letters: a work queue of the topology holds
 * live work and a monitored DLQ is drained into the archive, so both are
 * refused before anything is read; a message with no x-death naming
 * another queue would go back into the queue the run reads, to be read
 * again: refused unless a target is given. */
START_TEST(from_queue_reads_dead_letters_only)
{
	struct h_rig f;
	char w[160], wdlq[170], want[512], *out, *err;
	const cJSON *a;
	cJSON *j;
	int rc;

	start(&f, NULL);
	snprintf(want, sizeof(want), "dlqctl: --from-queue: %s is a work queue "
	    "of the topology: its messages are live work, not dead letters "
	    "(its DLQ is %s)\n", f.q[0], f.dlq[0]);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", "--from-queue", f.q[0], NULL }, NULL, &out, &err),
	    2);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
	snprintf(want, sizeof(want), "dlqctl: --from-queue: the worker consumes "
	    "%s into the archive: replay its dead letters from there with "
	    "--queue %s\n", f.dlq[1], f.q[1]);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", "--from-queue", f.dlq[1], "--execute", "--reason",
	    "x", NULL }, NULL, NULL, &err), 2);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
	free(err);

	/* published straight into a DLQ: no x-death says where it died */
	unmonitored(&f, w, wdlq);
	h_publish(f.c, "", wdlq, "{}", 2, "stray", NULL);
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));
	j = replay(f.cfg, &rc, (const char *[]){ "--from-queue", wdlq,
	    "--execute", "--reason", "x", NULL });
	ck_assert_int_eq(rc, 3);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 0);
	/* the refusals by reason */
	a = get(j, "refusals");
	ck_assert_int_eq(cJSON_GetArraySize(a), 1);
	ck_assert_int_eq((int)get(a, "its target is the queue it is read from "
	    "(no x-death names another): give --to-exchange and "
	    "--routing-key")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));
	/* with a target it goes, once */
	j = replay(f.cfg, &rc, (const char *[]){ "--from-queue", wdlq,
	    "--to-exchange", "", "--routing-key", w, "--execute", "--reason",
	    "x", NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_wait_count(w, 1, WAIT_MS));
	ck_assert_int_eq(h_count(wdlq), 0);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(w), 0, 0);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(wdlq), 0, 0);
	h_rig_stop(&f);
}
END_TEST

/* A slow --rate in live-queue mode keeps the connection that holds the
 * messages it read quiet between sends, longer than half the heartbeat
 * (1 s here): that connection must stay. Replaced, a message read on it
 * would go back to the DLQ while its copy is published, to be sent again
 * by the next run. When the connection is lost between the confirm and
 * the ack, the run says so and fails. */
START_TEST(from_queue_replays_each_once_or_says_so)
{
	struct h_rig f;
	char w[160], wdlq[170], *out, *err;
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	cJSON *j;
	int i;

	h_set_heartbeat(1);
	start(&f, NULL);
	unmonitored(&f, w, wdlq);
	e = h_str_entry("x-error", "timeout");
	for (i = 0; i < 3; i++)
		h_publish(f.c, "", w, "{}", 2, "slow", &h);
	ck_assert_int_eq(h_reject(f.c, w, 3, WAIT_MS), 3);
	ck_assert(h_wait_count(wdlq, 3, WAIT_MS));
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "replay", "--from-queue", wdlq, "--rate", "1",
	    "--execute", "--reason", "upstream back", NULL }, NULL, &out,
	    NULL), 0);
	ck_assert_ptr_nonnull(j = cJSON_Parse(out));
	free(out);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 3);
	ck_assert_int_eq((int)get(j, "unknown")->valuedouble, 0);
	cJSON_Delete(j);
	ck_assert(h_wait_count(w, 3, WAIT_MS));
	ck_assert_int_eq(h_count(wdlq), 0);

	amqp_queue_purge(f.c, 1, amqp_cstring_bytes(w));
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	h_publish(f.c, "", w, "{}", 2, "lost-ack", &h);
	ck_assert_int_eq(h_reject(f.c, w, 1, WAIT_MS), 1);
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "replay", "--from-queue", wdlq, "--execute",
	    "--reason", "upstream back", NULL }, (const char *[]){
	    "DLQ_FAULT_LOSE_BEFORE_ACK=1", NULL }, &out, &err), 1);
	ck_assert_ptr_nonnull(j = cJSON_Parse(out));
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 1);
	ck_assert_int_eq((int)get(j, "originals_back")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert_msg(strstr(err, "dlqctl: replayed, but the connection was "
	    "lost before its original was acked: it is back in ") &&
	    strstr(err, " and a later run would send it again; take it out "
	    "first (message id lost-ack)\n"), "%s", err);
	free(out);
	free(err);
	ck_assert(h_wait_count(w, 1, WAIT_MS));		/* the copy */
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));	/* and the original */
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(w), 0, 0);
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(wdlq), 0, 0);
	h_rig_stop(&f);
}
END_TEST

/* An executed run refused more than one control request can list (the
 * audit note is at most 64 KiB): the note lists what fits, message ids
 * as they are sent (a control byte is six in JSON), and counts the
 * rest; the run is audited and every refused message is still there. */
START_TEST(refusals_past_one_request_are_counted_not_lost)
{
	struct h_rig f;
	char w[160], wdlq[170], mid[256], *out, *err;
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	const cJSON *a;
	cJSON *j;
	int i, rc, listed;

	start(&f, NULL);
	unmonitored(&f, w, wdlq);
	e = h_str_entry("x-error", "invalid field phone");	/* validation */
	memset(mid, '\x01', sizeof(mid) - 1);
	mid[sizeof(mid) - 1] = '\0';
	for (i = 0; i < 200; i++) {
		snprintf(mid, 8, "m%05d", i);
		mid[6] = '\x01';
		h_publish(f.c, "", w, "{}", 2, mid, &h);
	}
	ck_assert_int_eq(h_reject(f.c, w, 200, WAIT_MS), 200);
	ck_assert(h_wait_count(wdlq, 200, WAIT_MS));

	rc = h_run_split((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "--json", "replay", "--from-queue", wdlq, "--limit", "200",
	    "--execute", "--reason", "upstream back", NULL }, NULL, &out, &err);
	ck_assert_msg(rc == 3 && strstr(err, "audit") == NULL, "%d %s", rc,
	    err);
	ck_assert_ptr_nonnull(j = cJSON_Parse(out));
	free(out);
	free(err);
	ck_assert_int_eq((int)get(j, "refused")->valuedouble, 200);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 0);
	cJSON_Delete(j);
	ck_assert(h_wait_count(wdlq, 200, WAIT_MS));

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    NULL }), 0);
	a = get(cJSON_GetArrayItem(j, 0), "args");
	listed = cJSON_GetArraySize(get(a, "refused"));
	ck_assert_int_gt(listed, 0);
	ck_assert_int_eq(listed + (int)get(a, "refused_unlisted")->valuedouble,
	    200);
	memset(mid, '\x01', sizeof(mid) - 1);
	memcpy(mid, "m00000", 6);
	ck_assert_str_eq(get(cJSON_GetArrayItem(get(a, "refused"), 0),
	    "message_id")->valuestring, mid);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* A quorum DLQ read with --from-queue: what a run gives back counts as
 * a delivery there (RabbitMQ drops a message past the queue's delivery
 * limit), so the run says how often the broker has counted them. */
START_TEST(from_queue_says_when_the_queue_counts_returns)
{
	struct h_rig f;
	char wdlq[170], *out;
	amqp_table_entry_t arg, e;
	amqp_table_t at = { 1, &arg }, h = { 1, &e };
	cJSON *j;
	int rc;

	start(&f, NULL);
	snprintf(wdlq, sizeof(wdlq), "%s_quorum.dlq", f.prefix);
	arg = h_str_entry("x-queue-type", "quorum");
	ck_assert_ptr_nonnull(amqp_queue_declare(f.c, 1,
	    amqp_cstring_bytes(wdlq), 0, 1, 0, 0, at));
	e = h_str_entry("x-error", "invalid field phone");
	h_publish(f.c, "", wdlq, "{}", 2, "counted", &h);
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));
	/* handed out for the first time: the queue marks it, counted 0 */
	j = replay(f.cfg, &rc, (const char *[]){ "--from-queue", wdlq, NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "refused")->valuedouble, 1);
	ck_assert_int_eq((int)get(j, "delivery_count_max")->valuedouble, 0);
	cJSON_Delete(j);
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));
	j = replay(f.cfg, &rc, (const char *[]){ "--from-queue", wdlq, NULL });
	ck_assert_int_eq((int)get(j, "delivery_count_max")->valuedouble, 1);
	cJSON_Delete(j);
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c", f.cfg,
	    "replay", "--from-queue", wdlq, NULL }, NULL, &out), 0);
	ck_assert_msg(strstr(out, "note: what this run gave back carries "
	    "x-delivery-count, up to 2: a quorum queue counts returns") !=
	    NULL, "%s", out);
	free(out);
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));
	amqp_queue_delete(f.c, 1, amqp_cstring_bytes(wdlq), 0, 0);
	h_rig_stop(&f);
}
END_TEST

START_TEST(rate_limits_the_replay)
{
	struct h_rig f;
	char id[32];
	cJSON *j;
	int64_t t0;
	int i, rc;

	start(&f, NULL);
	for (i = 0; i < 300; i++) {
		snprintf(id, sizeof(id), "r-%d", i);
		h_publish(f.c, "", f.dlq[1], "{}", 2, id, NULL);
	}
	ck_assert(h_worker_wait(&f.w, "dead_letter", 300, WAIT_MS));
	t0 = h_now_ms();
	j = replay(f.cfg, &rc, (const char *[]){ "--queue", f.q[1], "--limit",
	    "300", "--rate", "100", "--execute", "--reason", "rate test",
	    NULL });
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 300);
	cJSON_Delete(j);
	ck_assert_int_ge(h_now_ms() - t0, 2500);	/* a lower bound only */
	ck_assert(h_wait_count(f.q[1], 300, WAIT_MS));
	h_rig_stop(&f);
}
END_TEST

/* Records of `cfg`'s archive in `status` (dlqctl list, 10 000 at most). */
static int
with_status(const char *cfg, const char *status)
{
	cJSON *j;
	int n;

	ck_assert_int_eq(h_dlqctl(cfg, NULL, &j, (const char *[]){ "list",
	    "--status", status, "--limit", "10000", NULL }), 0);
	n = cJSON_GetArraySize(j);
	cJSON_Delete(j);
	return n;
}

/* `n` dead letters "ID-0".. put straight into the second DLQ. */
static void
flood_dlq(struct h_rig *f, int n, const char *id)
{
	char mid[64];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(mid, sizeof(mid), "%s-%d", id, i);
		h_publish(f->c, "", f->dlq[1], "{}", 2, mid, NULL);
	}
	ck_assert(h_worker_wait(&f->w, "dead_letter", n, WAIT_MS));
}

/* dlqctl --json replay of the second queue's dead letters at `rate`,
 * sent SIGTERM once `first` of them are back in the queue: its summary,
 * which says it was interrupted. */
static cJSON *
replay_interrupted(struct h_rig *f, const char *rate, const char *limit,
    int first)
{
	struct h_worker r;
	char *text;
	cJSON *j;
	int64_t end;
	int rc;

	h_spawn(&r, "dlqctl", (const char *[]){ "-c", f->cfg, "--json",
	    "replay", "--queue", f->q[1], "--limit", limit, "--rate", rate,
	    "--execute", "--reason", "signal test", NULL }, NULL);
	for (end = h_now_ms() + WAIT_MS; h_count(f->q[1]) < first &&
	    h_now_ms() < end; )
		usleep(2000);
	kill(r.pid, SIGTERM);
	rc = h_worker_exit(&r, 30000);
	ck_assert_msg(rc == 0 || rc == 1, "exit %d", rc);
	text = h_slurp(r.log);
	ck_assert_ptr_nonnull(j = cJSON_Parse(text));
	free(text);
	ck_assert(cJSON_IsTrue(get(j, "interrupted")));
	ck_assert_int_eq(get(j, "unknown")->valuedouble, 0);
	return j;
}

/* SIGTERM (or ^C, or a closed terminal) stops a replay after the message
 * in hand: what was published is replayed, what was claimed and not sent
 * is given back, nothing is left replaying, and the summary is printed. */
START_TEST(a_signal_stops_a_replay_after_the_current_message)
{
	struct h_rig f;
	cJSON *j;
	int published;

	start(&f, NULL);
	flood_dlq(&f, 100, "s");
	j = replay_interrupted(&f, "20", "100", 5);
	published = (int)get(j, "published")->valuedouble;
	ck_assert_int_ge(published, 5);
	ck_assert_int_lt(published, 100);
	cJSON_Delete(j);
	ck_assert(h_wait_count(f.q[1], published, WAIT_MS));
	ck_assert_int_eq(with_status(f.cfg, "replaying"), 0);
	ck_assert_int_eq(with_status(f.cfg, "replayed"), published);
	ck_assert_int_eq(with_status(f.cfg, "open"), 100 - published);
	h_rig_stop(&f);
}
END_TEST

/* Unthrottled, the next chunk is claimed while one is published: a
 * signal then gives back both the rest of the chunk in hand and the one
 * claimed ahead. Nothing is left replaying, nothing is sent twice. */
START_TEST(a_signal_gives_back_the_chunk_claimed_ahead)
{
	enum { N = 3000 };
	struct h_rig f;
	cJSON *j;
	int published, not_sent;

	start(&f, NULL);
	flood_dlq(&f, N, "g");
	j = replay_interrupted(&f, "0", "3000", 1);
	published = (int)get(j, "published")->valuedouble;
	not_sent = (int)get(j, "not_sent")->valuedouble;
	ck_assert_int_ge(published, 1);
	ck_assert_int_lt(published + not_sent, N + 1);
	cJSON_Delete(j);
	ck_assert(h_wait_count(f.q[1], published, WAIT_MS));
	ck_assert_int_eq(with_status(f.cfg, "replaying"), 0);
	ck_assert_int_eq(with_status(f.cfg, "replayed"), published);
	ck_assert_int_eq(with_status(f.cfg, "open"), N - published);
	ck_assert_int_eq(h_count(f.q[1]), published);
	h_rig_stop(&f);
}
END_TEST

/* Whether the file at `path` holds `text`. */
static bool
said(const char *path, const char *text)
{
	char *all = h_slurp(path);
	bool found = all != NULL && strstr(all, text) != NULL;

	free(all);
	return found;
}

/* Kills the worker of `f` with SIGKILL while the replay `r` runs, and
 * waits until `r` says it waits for a worker. */
static void
kill_worker_under(struct h_rig *f, struct h_worker *r)
{
	int64_t end = h_now_ms() + WAIT_MS;
	bool waiting;

	kill(f->w.pid, SIGKILL);
	ck_assert_int_eq(h_worker_exit(&f->w, WAIT_MS), -1);
	while (!(waiting = said(r->err, "dlqctl: the worker does not answer "
	    "(")) && h_now_ms() < end)
		usleep(10000);
	ck_assert(waiting);
}

/* A worker restarted in the middle of a replay (a deploy, a crash): the
 * outcomes dlqctl holds wait for it and are recorded, rather than leave
 * a published record 'replaying', outcome unknown (replayed again with
 * --force, it would go twice). */
START_TEST(a_worker_restarted_mid_replay_still_gets_the_outcomes)
{
	struct h_rig f;
	struct h_worker r;
	int64_t end;
	char *text, id[24], want[400];
	cJSON *j;

	start(&f, NULL);
	die_in(&f, 0, 3, "upstream timeout", NULL);
	h_spawn(&r, "dlqctl", (const char *[]){ "-c", f.cfg, "--json",
	    "replay", "--queue", f.q[0], "--rate", "1", "--execute",
	    "--reason", "deploy test", NULL }, NULL);
	/* one recorded, the next claimed: its publish is a second away */
	for (end = h_now_ms() + WAIT_MS; (with_status(f.cfg, "replayed") != 1 ||
	    with_status(f.cfg, "replaying") != 1) && h_now_ms() < end; )
		usleep(10000);
	ck_assert_int_eq(with_status(f.cfg, "replaying"), 1);
	/* dlqctl finds no worker to record the outcome, and waits */
	kill_worker_under(&f, &r);
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL }, NULL);
	ck_assert(h_worker_wait(&f.w, "control_listening", 1, WAIT_MS));

	ck_assert_int_eq(h_worker_exit(&r, 60000), 0);
	text = h_slurp(r.log);
	ck_assert_ptr_nonnull(j = cJSON_Parse(text));
	free(text);
	ck_assert_int_eq((int)get(j, "published")->valuedouble, 3);
	ck_assert_int_eq((int)get(j, "unknown")->valuedouble, 0);
	cJSON_Delete(j);
	text = h_slurp(r.err);
	ck_assert_msg(strstr(text, "recording the outcomes waits up to 30 "
	    "s\n") && !strstr(text, "not recorded"), "%s", text);
	free(text);
	ck_assert_int_eq(with_status(f.cfg, "replayed"), 3);
	ck_assert_int_eq(with_status(f.cfg, "replaying"), 0);
	ck_assert(h_wait_count(f.q[0], 3, WAIT_MS));

	/* stopped while it waits (^C), dlqctl says what it could not
	 * record, id by id, and how to settle each */
	/* a new log: the replayed messages leave the queue first */
	amqp_queue_purge(f.c, 1, amqp_cstring_bytes(f.q[0]));
	ck_assert_int_eq(amqp_get_rpc_reply(f.c).reply_type,
	    AMQP_RESPONSE_NORMAL);
	die_in(&f, 0, 2, "upstream timeout", NULL);
	h_spawn(&r, "dlqctl", (const char *[]){ "-c", f.cfg, "replay",
	    "--queue", f.q[0], "--rate", "1", "--execute", "--reason",
	    "deploy test", NULL }, NULL);
	for (end = h_now_ms() + WAIT_MS; (with_status(f.cfg, "replayed") != 4 ||
	    with_status(f.cfg, "replaying") != 1) && h_now_ms() < end; )
		usleep(10000);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--status", "replaying", NULL }), 0);
	snprintf(id, sizeof(id), "%lld", (long long)h_jnum(
	    cJSON_GetArrayItem(j, 0), "id"));
	cJSON_Delete(j);
	kill_worker_under(&f, &r);
	kill(r.pid, SIGINT);
	ck_assert_int_ge(h_worker_exit(&r, WAIT_MS), 0);
	text = h_slurp(r.err);
	snprintf(want, sizeof(want), "; these records stay 'replaying':\n  %s: "
	    "published, confirmed by the broker: never replay them again; "
	    "close each with dlqctl drop ID --reason \"replayed; outcome not "
	    "recorded\"\n", id);
	ck_assert_msg(strstr(text, "dlqctl: outcomes not recorded (") &&
	    strstr(text, want), "%s", text);
	free(text);
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL }, NULL);
	ck_assert(h_worker_wait(&f.w, "control_listening", 1, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "drop",
	    id, "--reason", "replayed; outcome not recorded", NULL }), 0);
	ck_assert_int_eq(with_status(f.cfg, "replaying"), 0);
	/* the second run's two (the first run's three were purged) */
	ck_assert(h_wait_count(f.q[0], 2, WAIT_MS));
	h_rig_stop(&f);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("replay");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, a_replay_is_the_original_message_marked_as_a_replay);
	tcase_add_test(tc, properties_not_text_are_replayed_byte_for_byte);
	tcase_add_test(tc, a_body_of_many_frames_is_archived_and_replayed_whole);
	tcase_add_test(tc, large_dead_letters_are_claimed_a_few_at_a_time);
	tcase_add_test(tc, dead_letters_are_read_and_replayed_over_tls);
	tcase_add_test(tc, two_replays_at_once_publish_one_message);
	tcase_add_test(tc, a_deleted_target_fails_and_stays_replayable);
	tcase_add_test(tc, what_a_full_target_refuses_fails_and_stays_replayable);
	tcase_add_test(tc, a_queue_selection_narrows_by_class_and_signature);
	tcase_add_test(tc,
	    a_name_longer_than_amqp_carries_is_refused_not_left_unknown);
	tcase_add_test(tc, a_replay_into_a_dlq_is_refused);
	tcase_add_test(tc, a_dry_run_looks_at_where_its_messages_would_go);
	tcase_add_test(tc, returns_in_a_pipelined_chunk_fail_only_their_own_messages);
	tcase_add_test(tc, the_policy_refuses_with_its_reasons);
	tcase_add_test(tc, a_replay_sends_no_old_error_and_a_new_death_shows_none);
	tcase_add_test(tc, evidence_is_required_recorded_shown_and_counted);
	tcase_add_test(tc, from_queue_replays_the_eligible_and_leaves_the_rest);
	tcase_add_test(tc, from_queue_shows_message_ids_whole);
	tcase_add_test(tc, from_queue_ages_a_message_by_its_timestamp_in_any_unit);
	tcase_add_test(tc, from_queue_reads_dead_letters_only);
	tcase_add_test(tc, from_queue_replays_each_once_or_says_so);
	tcase_add_test(tc, refusals_past_one_request_are_counted_not_lost);
	tcase_add_test(tc, from_queue_says_when_the_queue_counts_returns);
	tcase_add_test(tc, rate_limits_the_replay);
	tcase_add_test(tc, a_signal_stops_a_replay_after_the_current_message);
	tcase_add_test(tc, a_signal_gives_back_the_chunk_claimed_ahead);
	tcase_add_test(tc,
	    a_worker_restarted_mid_replay_still_gets_the_outcomes);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
