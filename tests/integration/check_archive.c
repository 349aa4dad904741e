/* check_archive.c - the archive and dlqctl triage, against the real
 * worker, broker and control socket. */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../check_main.h"
#include "amqp.h"
#include "buf.h"
#include "harness.h"

#define WAIT_MS	20000

/* Two fresh queues; `extra` goes into the config. The worker is not
 * started. */
static void
setup(struct h_rig *f, const char *extra)
{
	char conf[1024];

	h_rig_name(f, "ar", 2);
	snprintf(conf, sizeof(conf), "archive = { path = \"%s\"; "
	    "busy_timeout_ms = 300; };\n%s", f->db, extra ? extra : "");
	h_rig_setup(f, conf);
}

static void
start(struct h_rig *f, const char *extra)
{
	setup(f, extra);
	h_rig_start(f);
}

/* n messages with `error` die in queue q through the broker. */
static void
die_in(struct h_rig *f, int q, int n, const char *error)
{
	amqp_table_entry_t e;
	amqp_table_t h = { 1, &e };
	char id[64];
	int i;

	e.key = amqp_cstring_bytes("x-error");
	e.value.kind = AMQP_FIELD_KIND_UTF8;
	e.value.value.bytes = amqp_cstring_bytes(error);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s-%d", error, i);
		h_publish(f->c, f->exch, f->q[q], "{\"k\":1}", 7, id, &h);
	}
	ck_assert_int_eq(h_reject(f->c, f->q[q], n, WAIT_MS), n);
}

/* SELECT count(*), count(DISTINCT message_id) straight from the file. */
static void
count_rows(const char *db, int *rows, int *distinct)
{
	sqlite3 *h;
	sqlite3_stmt *st;

	ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	sqlite3_busy_timeout(h, 5000);
	ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT count(*), count(DISTINCT"
	    " message_id) FROM dead_letters", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	*rows = sqlite3_column_int(st, 0);
	*distinct = sqlite3_column_int(st, 1);
	sqlite3_finalize(st);
	sqlite3_close(h);
}

static const cJSON *
get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

START_TEST(every_property_and_header_round_trips)
{
	struct h_rig f;
	amqp_basic_properties_t p;
	amqp_table_entry_t e[4];
	amqp_bytes_t body = amqp_cstring_bytes("{\"order\":42,\"note\":\"ü\"}");
	cJSON *list, *rec, *h;
	char idarg[24];

	start(&f, NULL);
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_CORRELATION_ID_FLAG |
	    AMQP_BASIC_TYPE_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG |
	    AMQP_BASIC_CONTENT_ENCODING_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
	    AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
	    AMQP_BASIC_PRIORITY_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
	    AMQP_BASIC_USER_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
	p.message_id = amqp_cstring_bytes("m-42");
	p.correlation_id = amqp_cstring_bytes("c-42");
	p.type = amqp_cstring_bytes("order.created");
	p.content_type = amqp_cstring_bytes("application/json");
	p.content_encoding = amqp_cstring_bytes("identity");
	p.timestamp = 1764496800;
	p.app_id = amqp_cstring_bytes("shop");
	p.delivery_mode = 2;
	p.priority = 3;
	p.reply_to = amqp_cstring_bytes("replies");
	p.user_id = amqp_cstring_bytes("guest");
	e[0].key = amqp_cstring_bytes("x-retry-count");
	e[0].value.kind = AMQP_FIELD_KIND_I8;
	e[0].value.value.i8 = 3;
	e[1].key = amqp_cstring_bytes("x-error");
	e[1].value.kind = AMQP_FIELD_KIND_UTF8;
	e[1].value.value.bytes = amqp_cstring_bytes("HTTP 503 from provider");
	e[2].key = amqp_cstring_bytes("tenant");
	e[2].value.kind = AMQP_FIELD_KIND_UTF8;
	e[2].value.value.bytes = amqp_cstring_bytes("acme");
	e[3].key = amqp_cstring_bytes("flag");
	e[3].value.kind = AMQP_FIELD_KIND_BOOLEAN;
	e[3].value.value.boolean = 1;
	p.headers.num_entries = 4;
	p.headers.entries = e;
	ck_assert_int_eq(amqp_basic_publish(f.c, 1, amqp_cstring_bytes(f.exch),
	    amqp_cstring_bytes(f.q[0]), 0, 0, &p, body), 0);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &list, (const char *[]){ "list",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(list), 1);
	snprintf(idarg, sizeof(idarg), "%lld",
	    (long long)h_jnum(cJSON_GetArrayItem(list, 0), "id"));
	cJSON_Delete(list);
	/* found by the ids a customer or a log names */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &list, (const char *[]){ "list",
	    "--message-id", "m-42", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(list), 1);
	cJSON_Delete(list);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &list, (const char *[]){ "list",
	    "--correlation-id", "c-42", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(list), 1);
	cJSON_Delete(list);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &list, (const char *[]){ "list",
	    "--message-id", "m-4", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(list), 0);	/* exact, no prefix */
	cJSON_Delete(list);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &rec, (const char *[]){ "show",
	    idarg, "--payload", NULL }), 0);
	ck_assert_str_eq(h_jstr(rec, "message_id"), "m-42");
	ck_assert_str_eq(h_jstr(rec, "correlation_id"), "c-42");
	ck_assert_str_eq(h_jstr(rec, "type"), "order.created");
	ck_assert_str_eq(h_jstr(rec, "content_type"), "application/json");
	ck_assert_str_eq(h_jstr(rec, "content_encoding"), "identity");
	ck_assert_int_eq(h_jnum(rec, "timestamp"), 1764496800);
	ck_assert_str_eq(h_jstr(rec, "app_id"), "shop");
	ck_assert_int_eq(h_jnum(rec, "delivery_mode"), 2);
	ck_assert_int_eq(h_jnum(rec, "priority"), 3);
	ck_assert_str_eq(h_jstr(rec, "reply_to"), "replies");
	ck_assert_str_eq(h_jstr(rec, "user_id"), "guest");
	ck_assert_str_eq(h_jstr(rec, "queue"), f.q[0]);
	ck_assert_str_eq(h_jstr(rec, "dlq"), f.dlq[0]);
	ck_assert_str_eq(h_jstr(rec, "exchange"), f.exch);
	ck_assert_str_eq(cJSON_GetArrayItem(get(rec, "routing_keys"), 0)->valuestring,
	    f.q[0]);
	ck_assert_str_eq(h_jstr(rec, "reason"), "rejected");
	ck_assert_str_eq(h_jstr(rec, "class"), "transient");
	ck_assert_str_eq(h_jstr(rec, "error"), "HTTP 503 from provider");
	ck_assert_int_eq(h_jnum(rec, "retry_count"), 3);
	ck_assert_str_eq(h_jstr(rec, "status"), "open");
	ck_assert_str_eq(h_jstr(rec, "payload"),
	    "{\"order\":42,\"note\":\"ü\"}");
	ck_assert_int_eq(h_jnum(rec, "payload_bytes"), (int64_t)body.len);
	ck_assert_int_eq((int)strlen(h_jstr(rec, "payload_sha256")), 64);
	ck_assert_str_ne(h_jstr(rec, "hint"), "");
	h = (cJSON *)get(rec, "headers");
	ck_assert_int_eq(h_jnum(h, "x-retry-count"), 3);
	ck_assert_str_eq(h_jstr(h, "tenant"), "acme");
	ck_assert(cJSON_IsTrue(get(h, "flag")));
	ck_assert_int_eq(cJSON_GetArraySize(get(h, "x-death")), 1);
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(get(rec, "x_death"), 0),
	    "count"), 1);
	cJSON_Delete(rec);
	h_rig_stop(&f);
}
END_TEST

/* An AMQP header is not always UTF-8: what dlqctl --json prints of it is
 * still valid JSON (UTF-8 text, the bad bytes as U+FFFD), so that jq and
 * scripts read the answer; the archive keeps the bytes for replay. */
START_TEST(bytes_that_are_not_utf8_answer_valid_json)
{
	struct h_rig f;
	amqp_basic_properties_t p;
	amqp_table_entry_t e[2];
	cJSON *rec;
	char idarg[24], *out;
	const char *const cmds[][4] = {
		{ "list", NULL }, { "groups", NULL },
		{ "show", idarg, "--payload", NULL },
	};
	size_t i;

	start(&f, NULL);
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_HEADERS_FLAG;
	e[0].key = amqp_cstring_bytes("x-error");
	e[0].value.kind = AMQP_FIELD_KIND_UTF8;
	e[0].value.value.bytes = amqp_cstring_bytes("\xc0\xaf bad \xfe");
	e[1].key = amqp_cstring_bytes("tenant");
	e[1].value.kind = AMQP_FIELD_KIND_UTF8;
	e[1].value.value.bytes = amqp_cstring_bytes("ac\xffme");
	p.headers.num_entries = 2;
	p.headers.entries = e;
	ck_assert_int_eq(amqp_basic_publish(f.c, 1, amqp_cstring_bytes(f.exch),
	    amqp_cstring_bytes(f.q[0]), 0, 0, &p, amqp_cstring_bytes("{}")),
	    0);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &rec, (const char *[]){ "list",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(rec), 1);
	snprintf(idarg, sizeof(idarg), "%lld",
	    (long long)h_jnum(cJSON_GetArrayItem(rec, 0), "id"));
	cJSON_Delete(rec);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
		    "-c", f.cfg, "--json", cmds[i][0], cmds[i][1], cmds[i][2],
		    NULL }, NULL, &out, NULL), 0);
		ck_assert_msg(dlq_utf8_is_text(out, strlen(out)), "%s: %s",
		    cmds[i][0], out);
		free(out);
	}
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &rec, (const char *[]){ "show",
	    idarg, "--payload", NULL }), 0);
	ck_assert_str_eq(h_jstr(rec, "error"),
	    "\xef\xbf\xbd\xef\xbf\xbd bad \xef\xbf\xbd");
	ck_assert_str_eq(h_jstr(get(rec, "headers"), "tenant"),
	    "ac\xef\xbf\xbdme");
	cJSON_Delete(rec);
	h_rig_stop(&f);
}
END_TEST

START_TEST(sigkill_mid_drain_archives_each_exactly_once)
{
	struct h_rig f;
	char id[32];
	int i, rows, distinct;
	const int N = 3000;

	start(&f, NULL);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	for (i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "k-%d", i);
		h_publish(f.c, "", f.dlq[1], "{\"payload\":true}", 16, id, NULL);
	}
	ck_assert(h_wait_count(f.dlq[1], N, WAIT_MS));
	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 300, WAIT_MS));
	kill(f.w.pid, SIGKILL);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), -1);
	h_rig_start(&f);
	ck_assert(h_wait_count(f.dlq[1], 0, 60000));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	count_rows(f.db, &rows, &distinct);
	ck_assert_int_eq(distinct, N);
	ck_assert_int_eq(rows, N);
	h_close(f.c);
}
END_TEST

START_TEST(a_crash_between_commit_and_ack_makes_no_second_record)
{
	struct h_rig f;
	cJSON **ev;
	char id[32];
	int i, n, rows, distinct, committed, dups = 0;

	start(&f, NULL);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	for (i = 0; i < 500; i++) {
		snprintf(id, sizeof(id), "c-%d", i);
		h_publish(f.c, "", f.dlq[0], "{}", 2, id, NULL);
	}
	ck_assert(h_wait_count(f.dlq[0], 500, WAIT_MS));
	/* the worker dies right after its first commit, before the ack */
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL },
	    (const char *[]){ "DLQ_FAULT_EXIT_AFTER_COMMITS=1", NULL });
	ck_assert_int_eq(h_worker_exit(&f.w, 30000), 99);
	count_rows(f.db, &committed, &distinct);
	ck_assert_int_gt(committed, 0);
	ck_assert(h_wait_count(f.dlq[0], 500, WAIT_MS));	/* none acked */

	h_rig_start(&f);
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	/* the committed batch came back redelivered and was recognised */
	ev = h_worker_events(&f.w, "dead_letter", &n);
	ck_assert_int_eq(n, 500);
	for (i = 0; i < n; i++)
		dups += cJSON_IsTrue(cJSON_GetObjectItem(ev[i], "duplicate"));
	h_events_free(ev, n);
	ck_assert_int_eq(dups, committed);
	count_rows(f.db, &rows, &distinct);
	ck_assert_int_eq(rows, 500);
	ck_assert_int_eq(distinct, 500);
	h_close(f.c);
}
END_TEST

/* The archive failed while n dead letters arrived in the rig's first
 * queue: nothing was acked, so the n are back in the queue, none logged,
 * and the consumer is waiting to try again. */
static void
left_unacked(struct h_rig *f, int n)
{
	ck_assert(h_wait_count(f->dlq[0], n, WAIT_MS));
	ck_assert_int_eq(h_worker_count(&f->w, "dead_letter"), 0);
}

/* The archive is writable again: the worker goes on by itself and
 * archives the n, each once; it said so once per episode, however many
 * retries it took. Stops the rig. */
static void
archived_once_when_writable(struct h_rig *f, int n)
{
	int rows, distinct;

	ck_assert(h_worker_wait(&f->w, "archive_recovered", 1, 60000));
	ck_assert(h_wait_count(f->dlq[0], 0, WAIT_MS));
	ck_assert(h_worker_wait(&f->w, "dead_letter", n, WAIT_MS));
	ck_assert_int_eq(h_worker_count(&f->w, "archive_error"), 1);
	h_rig_stop(f);
	count_rows(f->db, &rows, &distinct);
	ck_assert_int_eq(rows, n);
	ck_assert_int_eq(distinct, n);
}

START_TEST(an_unwritable_archive_leaves_deliveries_in_the_queue)
{
	struct h_rig f;
	sqlite3 *lock;

	start(&f, NULL);
	/* another process holds the archive's write lock past the timeout */
	ck_assert_int_eq(sqlite3_open(f.db, &lock), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(lock, "BEGIN EXCLUSIVE", NULL, NULL, NULL),
	    SQLITE_OK);
	die_in(&f, 0, 10, "while locked");
	ck_assert(h_worker_wait(&f.w, "archive_error", 1, WAIT_MS));
	left_unacked(&f, 10);
	ck_assert_int_eq(sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(lock);
	archived_once_when_writable(&f, 10);
}
END_TEST

/* A quorum DLQ counts each return of a delivery (a closed connection's
 * too, up to RabbitMQ 4.2) and drops a dead letter past its delivery
 * limit: RabbitMQ 4.0 to 4.2 set one of 20 by default; here a policy
 * sets 1. The archive refuses writes for many retries, and the consumer
 * does not take the dead letters again each time: they come back once,
 * none is dropped, and all are archived when it can write again. */
START_TEST(a_long_archive_outage_returns_each_dead_letter_once)
{
	struct h_rig f;
	sqlite3 *lock;
	cJSON **ev;
	int i, n;

	h_set_topology("defaults = { type = \"quorum\"; };");
	setup(&f, "log = { level = \"debug\"; };");
	h_queue_policy(f.prefix, f.dlq[0], "{\"delivery-limit\":1}");
	h_rig_start(&f);
	ck_assert_int_eq(sqlite3_open(f.db, &lock), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(lock, "BEGIN EXCLUSIVE", NULL, NULL, NULL),
	    SQLITE_OK);
	die_in(&f, 0, 10, "while locked");
	ck_assert(h_worker_wait(&f.w, "archive_error", 1, WAIT_MS));
	/* the rig's backoff is 100 ms to 1 s: 6 tries take 2 to 5 s */
	ck_assert(h_worker_wait(&f.w, "archive_probe_failed", 6, WAIT_MS));
	left_unacked(&f, 10);
	ck_assert_int_eq(sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(lock);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 10, WAIT_MS));
	ev = h_worker_events(&f.w, "dead_letter", &n);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(h_jnum(ev[i], "x_delivery_count"), 1);
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_count(&f.w, "consumer_reconnecting"), 0);
	archived_once_when_writable(&f, 10);
	h_queue_policy(f.prefix, NULL, NULL);
}
END_TEST

/* SIGTERM while another process holds the archive's write lock and two
 * consumers hold deliveries, one waiting out the busy timeout (20 s
 * here), the other its turn: the worker stops at once, as it promises,
 * instead of after each one's timeout in turn. What was not archived
 * goes back to its queue and is archived by the next start, once. */
START_TEST(a_stop_does_not_wait_out_a_locked_archive)
{
	struct h_rig f;
	char conf[512];
	sqlite3 *lock;
	int rows, distinct;

	h_rig_name(&f, "ar", 2);
	snprintf(conf, sizeof(conf), "archive = { path = \"%s\"; "
	    "busy_timeout_ms = 20000; };", f.db);
	h_rig_setup(&f, conf);
	h_rig_start(&f);
	ck_assert_int_eq(sqlite3_open(f.db, &lock), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(lock, "BEGIN EXCLUSIVE", NULL, NULL, NULL),
	    SQLITE_OK);
	die_in(&f, 0, 5, "stop while locked");
	die_in(&f, 1, 5, "stop while locked too");
	/* both consumers have taken theirs (unacked, not ready) */
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	ck_assert(h_wait_count(f.dlq[1], 0, WAIT_MS));
	/* -1 after 10 s: SIGKILLed */
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(h_worker_count(&f.w, "dead_letter"), 0);
	ck_assert(h_wait_count(f.dlq[0], 5, WAIT_MS));
	ck_assert(h_wait_count(f.dlq[1], 5, WAIT_MS));
	ck_assert_int_eq(sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(lock);
	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 10, WAIT_MS));
	h_rig_stop(&f);
	count_rows(f.db, &rows, &distinct);
	ck_assert_int_eq(rows, 10);
	ck_assert_int_eq(distinct, 10);
}
END_TEST

/* The archive lines of the digests ("• <reason>; consumption paused, ...
 * (first.dlq and N more)"): the DLQs they tell of, and how many digests
 * had one. Each names one of the rig's DLQs, and a digest with one
 * counts no dead letter in its title (nothing was archived meanwhile). */
static int
archive_notices(struct h_rig *f, int *digests)
{
	cJSON **ev;
	const char *t, *p, *end, *more;
	int n, i, sum = 0;

	ev = h_worker_events(&f->w, "alert_digest", &n);
	*digests = 0;
	for (i = 0; i < n; i++) {
		t = h_jstr(ev[i], "text");
		if ((p = strstr(t, "\nArchive not writable\n• ")) == NULL)
			continue;
		ck_assert_msg(strstr(t, ": no new dead letters\n") != NULL, "%s",
		    t);
		ck_assert_ptr_nonnull(p = strstr(p, "; consumption paused, the "
		    "dead letters wait in their DLQs ("));
		p = strchr(p, '(') + 1;
		ck_assert_ptr_nonnull(end = strchr(p, ')'));
		ck_assert_msg(strncmp(p, f->dlq[0], strlen(f->dlq[0])) == 0 ||
		    strncmp(p, f->dlq[1], strlen(f->dlq[1])) == 0, "%s", t);
		more = strstr(p, " and ");
		sum += 1 + (more != NULL && more < end ? atoi(more + 5) : 0);
		(*digests)++;
	}
	h_events_free(ev, n);
	return sum;
}

/* An archive that stops every consumer is one cause, and the digest
 * says it once with the reason, in its own section: one line naming a
 * DLQ it paused and counting the others; they are not dead letters. */
START_TEST(an_archive_outage_is_one_line_in_the_digest)
{
	struct h_rig f;
	sqlite3 *lock;
	int digests, counted;

	start(&f, "alert = { cooldown_ms = 1000; };");
	ck_assert_int_eq(sqlite3_open(f.db, &lock), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(lock, "BEGIN EXCLUSIVE", NULL, NULL, NULL),
	    SQLITE_OK);
	die_in(&f, 0, 2, "one cause");
	die_in(&f, 1, 2, "one cause");
	ck_assert(h_worker_wait(&f.w, "archive_error", 2, WAIT_MS));
	while (archive_notices(&f, &digests) < 2)
		ck_assert(h_worker_wait(&f.w, "alert_digest", digests + 1,
		    WAIT_MS));
	ck_assert_int_eq(archive_notices(&f, &digests), 2);
	ck_assert_int_eq(h_digests_with(&f.w, "• BEGIN IMMEDIATE: database is"
	    " locked; consumption paused", NULL, NULL), digests);
	ck_assert_int_eq(h_digests_with(&f.w, "archive_error", NULL, NULL), 0);
	ck_assert_int_eq(sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(lock);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 4, WAIT_MS));
	/* the titles count the 4 dead letters, not the paused DLQs */
	ck_assert(h_wait_digest_titles(&f.w, 4, WAIT_MS, &counted));
	ck_assert_int_eq(counted, 4);
	h_rig_stop(&f);
}
END_TEST

/* The disk refuses the archive's writes: here a file size limit set on
 * the running worker, just above what its files hold (write(2) then
 * fails with EFBIG, as on a full disk with ENOSPC). The deliveries stay
 * in their queue, the worker says why once, and goes on by itself when
 * writing works again. */
START_TEST(an_archive_the_disk_refuses_leaves_deliveries_in_the_queue)
{
	struct h_rig f;
	struct rlimit old, low;
	struct stat st;
	char wal[300];
	cJSON **ev;
	int n;

	start(&f, NULL);
	snprintf(wal, sizeof(wal), "%s-wal", f.db);
	ck_assert_int_eq(stat(wal, &st), 0);
	ck_assert_int_eq(prlimit(f.w.pid, RLIMIT_FSIZE, NULL, &old), 0);
	low = old;
	/* the log, a few KiB, stays below it; the next commit grows the
	 * WAL by a page per record at least */
	low.rlim_cur = (rlim_t)st.st_size + 2048;
	ck_assert_int_eq(prlimit(f.w.pid, RLIMIT_FSIZE, &low, NULL), 0);
	die_in(&f, 0, 10, "while refused");
	ck_assert(h_worker_wait(&f.w, "archive_error", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "archive_error", &n);
	ck_assert_msg(strstr(h_jstr(ev[0], "error"), "(File too large)") !=
	    NULL, "%s", h_jstr(ev[0], "error"));
	h_events_free(ev, n);
	left_unacked(&f, 10);
	ck_assert_int_eq(prlimit(f.w.pid, RLIMIT_FSIZE, &old, NULL), 0);
	archived_once_when_writable(&f, 10);
}
END_TEST

/* An operator deletes the archive under the running worker (or moves it
 * away): what the worker would commit now goes into a file no start
 * will open again. It acks nothing more, says so and exits 1; the
 * dead letters wait in their queue, and the restart archives them in a
 * new file at the path. */
START_TEST(an_archive_deleted_under_the_worker_loses_nothing)
{
	struct h_rig f;
	char path[300];
	cJSON **ev;
	int rows, distinct, n;
	const char *const suffix[] = { "", "-wal", "-shm" };
	size_t i;

	start(&f, NULL);
	die_in(&f, 0, 3, "before");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s%s", f.db, suffix[i]);
		ck_assert_int_eq(unlink(path), 0);
	}
	die_in(&f, 0, 5, "after");
	ck_assert_int_eq(h_worker_exit(&f.w, 30000), 1);
	ev = h_worker_events(&f.w, "archive_replaced", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "path"), f.db);
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_count(&f.w, "dead_letter"), 3);
	/* none of the five was acked */
	ck_assert(h_wait_count(f.dlq[0], 5, WAIT_MS));

	h_rig_start(&f);
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	h_rig_stop(&f);
	count_rows(f.db, &rows, &distinct);
	ck_assert_int_eq(rows, 5);
	ck_assert_int_eq(distinct, 5);
}
END_TEST

/* Overwrites the root page of each index in `names` (NULL-terminated)
 * of the closed archive `db` with bytes no page holds, as a disk fault
 * or a copy cut short would: the file opens, and what reads or writes
 * those indexes meets SQLITE_CORRUPT. */
static void
damage(const char *db, const char *const *names)
{
	unsigned char junk[65536];
	sqlite3 *h;
	sqlite3_stmt *st;
	long page_size, root;
	FILE *fp;

	ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)",
	    NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT (SELECT page_size FROM "
	    "pragma_page_size), rootpage FROM sqlite_schema WHERE name = ?1",
	    -1, &st, NULL), SQLITE_OK);
	memset(junk, 0xde, sizeof(junk));
	ck_assert_ptr_nonnull(fp = fopen(db, "r+b"));
	for (; *names != NULL; names++) {
		sqlite3_bind_text(st, 1, *names, -1, SQLITE_STATIC);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		page_size = sqlite3_column_int(st, 0);
		root = sqlite3_column_int(st, 1);
		ck_assert(page_size <= (long)sizeof(junk) && root > 1);
		ck_assert_int_eq(fseek(fp, (root - 1) * page_size, SEEK_SET), 0);
		ck_assert_uint_eq(fwrite(junk, 1, (size_t)page_size, fp),
		    (size_t)page_size);
		sqlite3_reset(st);
	}
	ck_assert_int_eq(fclose(fp), 0);
	sqlite3_finalize(st);
	ck_assert_int_eq(sqlite3_close(h), SQLITE_OK);
}

/* Pages of the archive are overwritten while the worker is down. The
 * dead letters that arrive stay in their queue; the log, the digest and
 * dlqctl say the file is damaged and that retrying will not mend it.
 * The consumer does not take them again and again (a test write would
 * pass here: it touches no damaged page). scripts/archive-repair.sh
 * (the runbook's "A damaged archive") moves the file aside and rebuilds
 * it from its tables: the worker goes on with the records it held and
 * archives the ones that waited. */
START_TEST(a_damaged_archive_is_named_and_loses_nothing)
{
	static const char damaged[] = "database disk image is malformed (the "
	    "archive file is damaged: retrying will not mend it; see the "
	    "runbook, \"A damaged archive\")";
	struct h_rig f;
	char want[400], *out, *err;
	const char *other;
	sqlite3 *h;
	cJSON **ev;
	int rows, distinct, n, digests;

	start(&f, "alert = { cooldown_ms = 1000; }; log = { level = \"debug\"; };");
	die_in(&f, 0, 2, "before");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	damage(f.db, (const char *[]){ "dead_letters_fingerprint",
	    "dead_letters_signature", NULL });

	h_rig_start(&f);
	die_in(&f, 0, 5, "after");
	ck_assert(h_worker_wait(&f.w, "archive_error", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "archive_error", &n);
	ck_assert_msg(strstr(h_jstr(ev[0], "error"), damaged) != NULL, "%s",
	    h_jstr(ev[0], "error"));
	h_events_free(ev, n);
	left_unacked(&f, 5);
	/* the rig's backoff is 100 ms to 1 s: 3 tries take 1 to 2 s */
	ck_assert(h_worker_wait(&f.w, "archive_probe_failed", 3, WAIT_MS));
	ev = h_worker_events(&f.w, "archive_probe_failed", &n);
	ck_assert_msg(strstr(h_jstr(ev[0], "error"), damaged) != NULL, "%s",
	    h_jstr(ev[0], "error"));
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_count(&f.w, "consumer_started"), f.n);
	while (h_digests_with(&f.w, damaged, NULL, &digests) == 0)
		ck_assert(h_worker_wait(&f.w, "alert_digest", digests + 1,
		    WAIT_MS));
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "groups", NULL }, NULL, &out, &err), 1);
	ck_assert_msg(strstr(err, damaged) != NULL, "%s", err);
	free(out);
	free(err);
	/* while the worker runs, the repair leaves the file alone */
	ck_assert_int_eq(h_run((const char *[]){ "scripts/archive-repair.sh",
	    f.db, NULL }, NULL, &out), 1);
	snprintf(want, sizeof(want), "archive-repair: a dlq-worker has %s "
	    "open: stop it first\n", f.db);
	ck_assert_str_eq(out, want);
	free(out);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);

	ck_assert_int_eq(h_run((const char *[]){ "scripts/archive-repair.sh",
	    f.db, NULL }, NULL, &out), 0);
	snprintf(want, sizeof(want), "archive-repair: rebuilt %s: 2 records; "
	    "start the worker\n", f.db);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	snprintf(want, sizeof(want), "archive-repair: moved the damaged "
	    "archive to %s.damaged-", f.db);
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
	free(out);
	h_rig_start(&f);
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	ck_assert(h_worker_wait(&f.w, "dead_letter", 5, WAIT_MS));
	ck_assert_int_eq(h_worker_count(&f.w, "archive_error"), 0);
	h_rig_stop(&f);
	count_rows(f.db, &rows, &distinct);
	ck_assert_int_eq(rows, 7);
	ck_assert_int_eq(distinct, 7);

	/* a path given by a slip: another program's database stays put */
	other = h_tmp_path("customers.db");
	ck_assert_int_eq(sqlite3_open(other, &h), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(h, "CREATE TABLE customers (name)", NULL,
	    NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	ck_assert_int_eq(h_run((const char *[]){ "scripts/archive-repair.sh",
	    other, NULL }, NULL, &out), 1);
	snprintf(want, sizeof(want), "archive-repair: %s does not read as an "
	    "archive of dlq-monitor (no table dead_letters): left as it is\n",
	    other);
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
	free(out);
	ck_assert_int_eq(access(other, F_OK), 0);
}
END_TEST

/* A second worker with its own archive on the same DLQs splits the dead
 * letters between the two archives: the one that starts second says so,
 * per DLQ, and still runs (it may be the first one's replacement). */
START_TEST(a_second_worker_on_the_same_dlqs_is_told_it_shares_them)
{
	struct h_rig f;
	struct h_worker w2;
	char archive[300], sock[300];
	cJSON **ev;
	int i, n;

	start(&f, NULL);
	snprintf(archive, sizeof(archive), "DLQ_ARCHIVE_PATH=%s",
	    h_tmp_path("second.db"));
	snprintf(sock, sizeof(sock), "DLQ_CONTROL_SOCKET=%s",
	    h_tmp_path("second.sock"));
	h_worker_start(&w2, (const char *[]){ "-c", f.cfg, NULL },
	    (const char *[]){ archive, sock, NULL });
	ck_assert(h_worker_wait(&w2, "consumer_started", f.n, WAIT_MS));
	ev = h_worker_events(&w2, "consumer_shared", &n);
	ck_assert_int_eq(n, f.n);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(h_jnum(ev[i], "consumers"), 1);
		ck_assert(strcmp(h_jstr(ev[i], "dlq"), f.dlq[0]) == 0 ||
		    strcmp(h_jstr(ev[i], "dlq"), f.dlq[1]) == 0);
	}
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_stop(&w2, 10000, NULL), 0);
	ck_assert_int_eq(h_worker_count(&f.w, "consumer_shared"), 0);
	h_rig_stop(&f);
}
END_TEST

/* A consumer that comes to a monitored DLQ later (a script, a shovel, a
 * second worker) takes dead letters this archive never sees. Each
 * consumer asks the broker between batches, every
 * rabbitmq.shared_check_ms: consumer_shared when one comes, the digest's
 * "DLQ shared" section once while it stays, consumer_shared_ended when
 * it is gone; the other DLQ is not named. */
START_TEST(a_consumer_that_comes_later_is_found_and_announced)
{
	struct h_rig f;
	char want[300];
	cJSON **ev;
	pid_t other;
	int n;

	h_set_broker("", "shared_check_ms = 200;");
	start(&f, "alert = { cooldown_ms = 1000; };");
	other = h_consumer(f.dlq[0], 1, false, 5000);
	ck_assert(h_worker_wait(&f.w, "consumer_shared", 1, WAIT_MS));
	snprintf(want, sizeof(want), "\nDLQ shared\n• 1 other consumer takes "
	    "its dead letters too (a second dlq-worker? a script?): those are "
	    "not archived or alerted here (%s)", f.dlq[0]);
	ck_assert(h_wait_digests_with(&f.w, want, NULL, 1, WAIT_MS));
	ck_assert_int_eq(h_consumer_done(other), 0);
	ck_assert(h_worker_wait(&f.w, "consumer_shared_ended", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "consumer_shared", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "dlq"), f.dlq[0]);
	ck_assert_int_eq(h_jnum(ev[0], "consumers"), 1);
	h_events_free(ev, n);
	ev = h_worker_events(&f.w, "consumer_shared_ended", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "dlq"), f.dlq[0]);
	h_events_free(ev, n);
	ck_assert_int_eq(h_digests_with(&f.w, "DLQ shared", NULL, NULL), 1);
	ck_assert_int_eq(h_digests_with(&f.w, f.dlq[1], NULL, NULL), 0);
	h_rig_stop(&f);
}
END_TEST

/* The ask between batches meets deliveries on the way: they wait in
 * rabbitmq-c's frame queue and are archived like the others. A drain
 * that asks after every batch archives each dead letter once, with no
 * error and no reconnect. */
START_TEST(asking_between_batches_loses_no_delivery)
{
	struct h_rig f;
	int rows, distinct;

	h_set_broker("", "shared_check_ms = 1;");
	start(&f, NULL);
	h_fill_confirmed(f.dlq[0], 3000, "asked");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3000, 60000));
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	h_rig_stop(&f);
	count_rows(f.db, &rows, &distinct);
	ck_assert_int_eq(rows, 3000);
	ck_assert_int_eq(distinct, 3000);
	ck_assert_int_eq(h_worker_count(&f.w, "consumer_error"), 0);
	ck_assert_int_eq(h_worker_count(&f.w, "consumer_reconnecting"), 0);
	ck_assert_int_eq(h_worker_count(&f.w, "consumer_shared"), 0);
}
END_TEST

/* "DLQ_CONTROL_SOCKET=<tmp>/<stem>.sock": a worker of its own beside the
 * rig's, on the rig's config. */
static void
start_beside(struct h_worker *w, const struct h_rig *f, const char *stem,
    char *env, size_t n)
{
	char name[64];

	snprintf(name, sizeof(name), "%s.sock", stem);
	snprintf(env, n, "DLQ_CONTROL_SOCKET=%s", h_tmp_path(name));
	h_worker_start(w, (const char *[]){ "-c", f->cfg, NULL },
	    (const char *[]){ env, NULL });
}

/* Two workers on one archive would both send its digests and redrive
 * its records. A second one waits for the first to exit (a predecessor
 * stopping) and then takes over; stopped while it waits, it exits 0
 * having started nothing. */
START_TEST(a_second_worker_on_the_same_archive_waits_for_the_first)
{
	struct h_rig f;
	struct h_worker w2, w3;
	char env2[300], env3[300];
	int rows, distinct;

	start(&f, NULL);
	start_beside(&w2, &f, "second", env2, sizeof(env2));
	start_beside(&w3, &f, "third", env3, sizeof(env3));
	ck_assert(h_worker_wait(&w2, "archive_in_use", 1, WAIT_MS));
	ck_assert(h_worker_wait(&w3, "archive_in_use", 1, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&w3, 10000, NULL), 0);
	ck_assert_int_eq(h_worker_count(&w3, "control_listening"), 0);
	ck_assert_int_eq(h_worker_count(&w3, "consumer_started"), 0);

	ck_assert_int_eq(h_worker_count(&w2, "consumer_started"), 0);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert(h_worker_wait(&w2, "consumer_started", f.n, WAIT_MS));
	ck_assert_int_eq(h_worker_count(&w2, "archive_in_use"), 1);
	die_in(&f, 0, 3, "after the takeover");
	ck_assert(h_worker_wait(&w2, "dead_letter", 3, WAIT_MS));
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	h_close(f.c);
	ck_assert_int_eq(h_worker_stop(&w2, 10000, NULL), 0);
	count_rows(f.db, &rows, &distinct);
	ck_assert_int_eq(rows, 3);
}
END_TEST

/* A second worker started by mistake beside a running one gives up after
 * its wait (exit 1, saying why) and the first goes on alone. */
START_TEST(a_second_worker_leaves_an_archive_the_first_keeps)
{
	struct h_rig f;
	struct h_worker w2;
	char env[300];
	cJSON **ev;
	int64_t t0;
	int n;

	start(&f, NULL);
	t0 = h_now_ms();
	start_beside(&w2, &f, "second", env, sizeof(env));
	ck_assert_int_eq(h_worker_exit(&w2, 40000), 1);
	ck_assert_int_ge(h_now_ms() - t0, 15000);
	ev = h_worker_events(&w2, "archive_open_failed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(h_jstr(ev[0], "error"), "another dlq-worker still "
	    "has it open (waited 15 s for it to exit)");
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_count(&w2, "consumer_started"), 0);

	die_in(&f, 0, 2, "still the first");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	h_rig_stop(&f);
}
END_TEST

static int64_t
first_id(const char *cfg, const char *const *args)
{
	cJSON *l;
	int64_t id;

	ck_assert_int_eq(h_dlqctl(cfg, NULL, &l, args), 0);
	ck_assert_int_ge(cJSON_GetArraySize(l), 1);
	id = h_jnum(cJSON_GetArrayItem(l, 0), "id");
	cJSON_Delete(l);
	return id;
}

/* Pages of 2 over the 5 records: --before the last id of a page gives
 * the next, newest first, none skipped or shown twice; the table says
 * where the next page starts when it may not be all. */
static void
check_pages(struct h_rig *f)
{
	char before[24], want[112], *out, *err;
	int64_t last = 0, id;
	int seen = 0, pages = 0, i;
	cJSON *j;

	do {
		ck_assert_int_eq(h_dlqctl(f->cfg, NULL, &j, last ?
		    (const char *[]){ "list", "--limit", "2", "--before",
		    before, NULL } : (const char *[]){ "list", "--limit", "2",
		    NULL }), 0);
		for (i = 0; i < cJSON_GetArraySize(j); i++) {
			id = h_jnum(cJSON_GetArrayItem(j, i), "id");
			ck_assert(last == 0 || id < last);
			last = id;
			seen++;
		}
		snprintf(before, sizeof(before), "%lld", (long long)last);
		pages++;
		i = cJSON_GetArraySize(j);
		cJSON_Delete(j);
	} while (i == 2);
	ck_assert_int_eq(seen, 5);
	ck_assert_int_eq(pages, 3);

	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f->cfg, "list", "--limit", "2", NULL }, NULL, &out, &err), 0);
	ck_assert_int_eq(h_dlqctl(f->cfg, NULL, &j, (const char *[]){ "list",
	    "--limit", "2", NULL }), 0);
	snprintf(want, sizeof(want), "dlqctl: the newest 2 shown; the next "
	    "page (if any): --before %lld\n", (long long)h_jnum(cJSON_GetArrayItem(j, 1),
	    "id"));
	cJSON_Delete(j);
	ck_assert_str_eq(err, want);
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f->cfg, "list", "--limit", "6", NULL }, NULL, &out, &err), 0);
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f->cfg, "list", "--before", "0", NULL }, NULL, &out, &err), 2);
	ck_assert_msg(strncmp(err, "dlqctl: --before: '0' is not an archive "
	    "id\nusage: dlqctl list ", 62) == 0, "%s", err);
	free(out);
	free(err);
}

/* The three timeouts of q0, the first records, died two hours ago: the
 * last hour's groups are the validation failures alone, all time both. */
static void
check_recent_groups(struct h_rig *f)
{
	char sql[256];
	sqlite3 *db;
	cJSON *j;

	snprintf(sql, sizeof(sql), "UPDATE dead_letters SET received_at ="
	    " received_at - 7200000 WHERE queue = '%s'", f->q[0]);
	ck_assert_int_eq(sqlite3_open(f->db, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_changes(db), 3);
	sqlite3_close(db);
	ck_assert_int_eq(h_dlqctl(f->cfg, NULL, &j, (const char *[]){ "groups",
	    "--since", "1h", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "class"),
	    "validation");
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(j, 0), "count"), 2);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f->cfg, NULL, &j, (const char *[]){ "groups",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 2);
	cJSON_Delete(j);
}

START_TEST(triage_commands_answer_what_the_archive_holds)
{
	struct h_rig f;
	cJSON *j, *g;
	char a[24], b[24], want[400], typo[160], *out, *err;
	int64_t t_id, v_id;

	start(&f, NULL);
	die_in(&f, 0, 3, "connect ETIMEDOUT");
	/* archived first: ids grow with time (check_recent_groups) */
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	die_in(&f, 1, 2, "invalid field recipient");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 5, WAIT_MS));

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--queue", f.q[0], NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 3);
	cJSON_Delete(j);
	/* by its DLQ's name too; a name the topology does not know is
	 * answered (nothing matches) with a note that it is not a queue */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "list", "--queue", f.dlq[0], NULL }, NULL, &out,
	    &err), 0);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(cJSON_GetArraySize(j = cJSON_Parse(out)), 3);
	cJSON_Delete(j);
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "list", "--queue", "no_such_queue", NULL }, NULL,
	    &out, &err), 0);
	ck_assert_str_eq(out, "[]\n");
	ck_assert_str_eq(err, "dlqctl: note: 'no_such_queue' is not a queue of "
	    "the topology (dlqctl topology show lists them)\n");
	free(out);
	free(err);
	/* a slip of the hand (".dql") is answered with the queue meant */
	snprintf(typo, sizeof(typo), "%s", f.dlq[0]);
	typo[strlen(typo) - 2] = 'q';
	typo[strlen(typo) - 1] = 'l';
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "list", "--queue", typo, NULL }, NULL, &out,
	    &err), 0);
	ck_assert_str_eq(out, "[]\n");
	snprintf(want, sizeof(want), "dlqctl: note: '%s' is not a queue of "
	    "the topology; did you mean '%s'?\n", typo, f.dlq[0]);
	ck_assert_str_eq(err, want);
	free(out);
	free(err);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--class", "validation", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 2);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "queue"), f.q[1]);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--limit", "1", "--since", "1h", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	cJSON_Delete(j);
	check_pages(&f);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 2);
	g = cJSON_GetArrayItem(j, 0);
	ck_assert_int_eq(h_jnum(g, "count"), 3);
	ck_assert_str_eq(h_jstr(g, "class"), "transient");
	ck_assert_int_gt(h_jnum(g, "sample_id"), 0);
	cJSON_Delete(j);
	/* the largest one, and word that there may be more */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "groups", "--limit", "1", NULL }, NULL, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "transient"));
	ck_assert_ptr_null(strstr(out, "validation"));
	ck_assert_str_eq(err, "dlqctl: the largest 1 shown; --limit N for "
	    "more\n");
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "groups", "--limit", "3", NULL }, NULL, NULL, &err), 0);
	ck_assert_str_eq(err, "");
	free(err);
	/* the groups of one class: what one team owns */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    "--class", "validation", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "queue"), f.q[1]);
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(j, 0), "count"), 2);
	cJSON_Delete(j);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "groups", "--class", "validaton", NULL }, NULL, NULL, &err),
	    2);
	ck_assert_msg(strstr(err, "did you mean 'validation'?") != NULL, "%s",
	    err);
	free(err);

	t_id = first_id(f.cfg, (const char *[]){ "list", "--class",
	    "transient", NULL });
	v_id = first_id(f.cfg, (const char *[]){ "list", "--class",
	    "validation", NULL });
	snprintf(a, sizeof(a), "%lld", (long long)t_id);
	snprintf(b, sizeof(b), "%lld", (long long)v_id);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "assign",
	    a, "--owner", "payments", "--decision", "check receipts",
	    "--escalate-in", "2h", NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "changed"), 1);
	cJSON_Delete(j);
	/* an id given twice is one dead letter: no --yes, dropped once */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "drop", b,
	    b, "--reason", "producer bug, fixed in 2.3", NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "changed"), 1);
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "results")), 1);
	cJSON_Delete(j);
	/* dropping twice is refused, with the reason: not an error (exit 1)
	 * but not done as asked (exit 3) */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "drop", b,
	    "--reason", "again", NULL }), 3);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(get(j, "results"), 0),
	    "error"), "status is discarded");
	cJSON_Delete(j);
	/* bulk drop without --yes does nothing */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "drop",
	    a, b, "--reason", "x", NULL }), 2);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    a, NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "status"), "assigned");
	ck_assert_str_eq(h_jstr(j, "owner"), "payments");
	ck_assert_str_eq(h_jstr(j, "decision"), "check receipts");
	ck_assert_str_eq(h_jstr(j, "assigned_by"), "root");
	ck_assert_int_gt(h_jnum(j, "escalate_at"), h_jnum(j, "assigned_at"));
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "audit")), 1);
	ck_assert(cJSON_IsNull(get(j, "headers")));
	ck_assert_ptr_null(get(j, "payload"));
	cJSON_Delete(j);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "total"), 5);
	ck_assert_int_eq(h_jnum(j, "unresolved"), 4);
	ck_assert_int_eq(h_jnum(get(j, "by_class"), "transient"), 3);
	ck_assert_int_eq(h_jnum(get(j, "by_class"), "validation"), 1);
	ck_assert_int_eq(h_jnum(get(j, "by_status"), "discarded"), 1);
	ck_assert_int_eq(h_jnum(get(j, "by_owner"), "payments"), 1);
	ck_assert_int_ge(h_jnum(j, "oldest_unresolved_age_ms"), 0);
	cJSON_Delete(j);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 3);	/* assign, drop, drop */
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 2), "command"), "assign");
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 2), "actor"), "root");
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 2), "result"), "ok");
	cJSON_Delete(j);
	/* a page of it, the next one, and one command's or actor's */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "audit", "--limit", "2", NULL }, NULL, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "drop"));
	ck_assert_ptr_null(strstr(out, "assign"));
	ck_assert_ptr_nonnull(strstr(err, "dlqctl: the newest 2 shown; the "
	    "next page (if any): --before "));
	snprintf(want, sizeof(want), "%s", strstr(err, "--before ") + 9);
	want[strcspn(want, "\n")] = '\0';
	free(out);
	free(err);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    "--before", want, NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "command"), "assign");
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    "--command", "drop", "--actor", "root", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 2);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    "--actor", "someone-else", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "audit", "--command", "list", NULL }, NULL, NULL, &err), 2);
	ck_assert_ptr_nonnull(strstr(err, "dlqctl: no audited command 'list' "
	    "(assign, drop, reopen, purge, replay_claim, replay_finish, "
	    "audit_note, redrive_resume, redrive, reclassify)\n"));
	free(err);

	/* malformed input: usage errors, nothing changes */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "list",
	    "--since", "yesterday", NULL }), 2);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "show",
	    "abc", NULL }), 2);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "show", "999999", NULL }, NULL, NULL, &err), 1);
	ck_assert_str_eq(err, "dlqctl: no dead letter with id 999999 in the "
	    "archive\n");
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "assign", b, "999999", "--owner", "ops", "--decision", "x",
	    NULL }, NULL, &out, &err), 1);
	snprintf(want, sizeof(want), "assigned 0\n  %s: status is discarded\n"
	    "  999999: not in the archive\n", b);
	ck_assert_str_eq(out, want);
	ck_assert_str_eq(err, "");	/* each id said once, above */
	free(out);
	free(err);
	/* an unknown id is exit 1 for every command, replay too */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "replay", "999999", NULL }, NULL, &out, &err), 1);
	ck_assert_ptr_nonnull(strstr(out, "999999   no        "));
	ck_assert_ptr_nonnull(strstr(out, "not in the archive\n"));
	free(out);
	free(err);
	/* --json: errors and questions are JSON on stdout too */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "show", "999999", NULL }, NULL, &out, &err), 1);
	ck_assert_str_eq(out, "{\"ok\":false,\"code\":\"not_found\",\"error\":"
	    "\"no dead letter with id 999999 in the archive\"}\n");
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "--json", "drop", a, b, "--reason", "x", NULL }, NULL, &out,
	    &err), 2);
	ck_assert_str_eq(out, "{\"ok\":false,\"code\":\"needs_yes\","
	    "\"command\":\"drop\",\"would_change\":2}\n");
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"),
	    "--json", "list", NULL }, (const char *[]){ "DLQ_CONTROL_SOCKET="
	    "/nonexistent/ctl.sock", NULL }, &out, &err), 1);
	ck_assert_msg(strncmp(out, "{\"ok\":false,\"code\":\"unreachable\","
	    "\"error\":\"cannot reach dlq-worker at /nonexistent/ctl.sock", 90)
	    == 0, "%s", out);
	free(out);
	free(err);
	/* what can change does, the rest is named with its status: exit 3 */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "assign", a, b, "--owner", "ops", "--decision", "x", NULL },
	    NULL, &out, &err), 3);
	snprintf(want, sizeof(want), "assigned 1\n  %s: status is discarded\n",
	    b);
	ck_assert_str_eq(out, want);
	ck_assert_str_eq(err, "");	/* each id said once, above */
	free(out);
	free(err);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "list",
	    "--status", "lost", NULL }), 2);
	check_recent_groups(&f);
	h_rig_stop(&f);
}
END_TEST

/* The signature `groups` lists for the group of queue `q` and `class`. */
static const char *
signature_of(const cJSON *groups, const char *q, const char *class)
{
	const cJSON *g;

	cJSON_ArrayForEach(g, groups)
		if (strcmp(h_jstr(g, "queue"), q) == 0 &&
		    strcmp(h_jstr(g, "class"), class) == 0)
			return h_jstr(g, "signature");
	ck_abort_msg("no %s group of %s", class, q);
	return NULL;
}

/* One failure in two queues (numbers aside) is a signature group in each
 * and one cause: `groups --by-cause` shows it as the digest does, with
 * each queue's signature to act on; another error is another cause. */
START_TEST(by_cause_gathers_one_failure_in_several_queues)
{
	struct h_rig f;
	cJSON *sigs, *j, *c, *g;
	char want[512], *out, *err;

	start(&f, NULL);
	die_in(&f, 0, 2, "upstream timeout after 30000 ms");
	die_in(&f, 1, 1, "upstream timeout after 5000 ms");
	die_in(&f, 1, 1, "invalid field recipient");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 4, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &sigs, (const char *[]){
	    "groups", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(sigs), 3);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    "--by-cause", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 2);
	c = cJSON_GetArrayItem(j, 0);
	ck_assert_int_eq(h_jnum(c, "count"), 3);
	ck_assert_int_eq(h_jnum(c, "unresolved"), 3);
	ck_assert_str_eq(h_jstr(c, "class"), "transient");
	ck_assert_str_eq(h_jstr(c, "error"), "upstream timeout after 30000 ms");
	g = cJSON_GetObjectItem(c, "groups");
	ck_assert_int_eq(cJSON_GetArraySize(g), 2);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(g, 0), "queue"), f.q[0]);
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(g, 0), "count"), 2);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(g, 0), "signature"),
	    signature_of(sigs, f.q[0], "transient"));
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(g, 1), "queue"), f.q[1]);
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(g, 1), "count"), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(g, 1), "signature"),
	    signature_of(sigs, f.q[1], "transient"));
	c = cJSON_GetArrayItem(j, 1);
	ck_assert_str_eq(h_jstr(c, "class"), "validation");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "groups")),
	    1);
	cJSON_Delete(j);

	/* the table: the cause, then its queues' groups */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "groups", "--by-cause", NULL }, NULL, &out, &err), 0);
	ck_assert_str_eq(err, "");
	ck_assert_msg(strstr(out, "  COUNT UNRESOLVED SIGNATURE    QUEUE\n"
	    "3       3          2      transient  ") != NULL, "%s", out);
	snprintf(want, sizeof(want), "upstream timeout after 30000 ms\n"
	    "  2     2          %s %s\n  1     1          %s %s\n",
	    signature_of(sigs, f.q[0], "transient"), f.q[0],
	    signature_of(sigs, f.q[1], "transient"), f.q[1]);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	free(out);
	free(err);

	/* of one queue: the causes it has a group of, each whole */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    "--by-cause", "--queue", f.dlq[0], NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(j, 0), "groups")), 2);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    "--by-cause", "--queue", f.q[1], "--limit", "1", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(j, 0), "count"), 3);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    "--by-cause", "--class", "validation", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "error"),
	    "invalid field recipient");
	cJSON_Delete(j);
	cJSON_Delete(sigs);
	h_rig_stop(&f);
}
END_TEST

/* Number of records `list` answers for these arguments. */
static int
listed(const char *cfg, const char *const *args)
{
	cJSON *l;
	int n;

	ck_assert_int_eq(h_dlqctl(cfg, NULL, &l, args), 0);
	n = cJSON_GetArraySize(l);
	cJSON_Delete(l);
	return n;
}

/* An incident's worth of one cause is dropped by selection: counted
 * first, then the newest --limit per run, only open and assigned ones of
 * that queue and class, each request audited with its ids. Another
 * cause's cases get an owner the same way: the open ones. A drop is
 * undone the same way too. */
START_TEST(a_selection_is_dropped_or_assigned_by_queue_and_class)
{
	struct h_rig f;
	cJSON *j, *e;
	char a[24], sig[16] = "", *out, *err;
	int drops = 0, ids = 0;

	start(&f, NULL);
	die_in(&f, 0, 700, "invalid field recipient");
	die_in(&f, 0, 5, "connect ETIMEDOUT");
	die_in(&f, 1, 2, "invalid field recipient");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 707, WAIT_MS));
	snprintf(a, sizeof(a), "%lld", (long long)first_id(f.cfg, (const char
	    *[]){ "list", "--queue", f.q[0], "--class", "validation", NULL }));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "assign",
	    a, "--owner", "crm", "--decision", "fix or drop", NULL }), 0);

	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "drop", "--queue", f.q[0], "--class", "validation",
	    "--reason", "recipients fixed at the source", NULL }, NULL, &out,
	    &err), 2);
	ck_assert_msg(strncmp(err, "dlqctl: this would drop 700 dead letters",
	    40) == 0, "%s", err);
	ck_assert_ptr_null(strstr(err, "usage:"));
	free(out);
	free(err);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--status",
	    "discarded", NULL }), 0);

	/* as an operator reads it: what was done, and that there is more */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "drop", "--queue", f.q[0], "--class", "validation",
	    "--limit", "600", "--reason", "recipients fixed at the source",
	    "--yes", NULL }, NULL, &out, &err), 0);
	ck_assert_str_eq(out, "dropped 600\nmore may match: a run takes the "
	    "newest 600; run again for the rest\n");
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "drop",
	    "--queue", f.q[0], "--class", "validation", "--reason",
	    "recipients fixed at the source", "--yes", NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "changed"), 100);
	ck_assert(cJSON_IsFalse(get(j, "more")));
	cJSON_Delete(j);

	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--queue",
	    f.q[0], "--status", "discarded", "--limit", "1000", NULL }), 700);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--queue",
	    f.q[0], "--status", "open", NULL }), 5);
	/* by the signature the digest gave: it names its queue */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    "--queue", f.q[0], NULL }), 0);
	cJSON_ArrayForEach(e, j)
		if (strcmp(h_jstr(e, "class"), "transient") == 0)
			snprintf(sig, sizeof(sig), "%s", h_jstr(e, "signature"));
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "assign",
	    "--signature", sig, "--owner", "network", "--decision",
	    "replay once the provider is up", "--escalate-in", "2h", "--yes",
	    NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "changed"), 5);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    a, NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "status"), "discarded");
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--queue", f.q[0], "--status", "assigned", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 5);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "owner"), "network");
	cJSON_Delete(j);
	/* only open ones: a second run finds none to assign */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "assign",
	    "--queue", f.q[0], "--owner", "other", "--decision", "d", "--yes",
	    NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "changed"), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--queue",
	    f.q[1], "--status", "open", NULL }), 2);

	/* a drop of the wrong cause is undone the same way, the newest
	 * first; the case that had an owner goes back to it */
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "reopen", "--queue", f.q[0], "--class", "validation",
	    "--reason", "dropped the wrong cause", NULL }, NULL, &out, &err),
	    2);
	ck_assert_str_eq(err, "dlqctl: this would reopen 700 dead letters "
	    "(the discarded ones of this selection); run again with --yes to "
	    "do it\n");
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "reopen", "--queue", f.q[0], "--class", "validation",
	    "--limit", "100", "--reason", "dropped the wrong cause", "--yes",
	    NULL }, NULL, &out, &err), 0);
	ck_assert_str_eq(out, "reopened 100\nmore may match: a run takes the "
	    "newest 100; run again for the rest\n");
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--queue",
	    f.q[0], "--status", "discarded", "--limit", "1000", NULL }), 600);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--queue",
	    f.q[0], "--class", "validation", "--status", "open", "--limit",
	    "1000", NULL }), 99);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    a, NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "status"), "assigned");
	ck_assert_str_eq(h_jstr(j, "owner"), "crm");
	cJSON_Delete(j);
	/* what each owner has, by the name assign gave */
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--owner",
	    "network", NULL }), 5);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--owner",
	    "crm", "--status", "assigned", NULL }), 1);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--owner",
	    "Network", NULL }), 0);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    NULL }), 0);
	cJSON_ArrayForEach(e, j)
		if (strcmp(h_jstr(e, "command"), "drop") == 0) {
			drops++;
			ids += cJSON_GetArraySize(get(get(e, "args"), "ids"));
		}
	cJSON_Delete(j);
	ck_assert_int_eq(drops, 3);	/* 500 + 100, then 100 */
	ck_assert_int_eq(ids, 700);
	h_rig_stop(&f);
}
END_TEST

/* A reopen by selection takes back only what it can: discarded records
 * whose payload was purged stay closed and are not selected, so that
 * they neither hide older ones behind --limit nor come back with every
 * run; a run that finds none to reopen says how many stay closed and
 * why. */
START_TEST(a_reopen_by_selection_passes_over_what_stays_closed)
{
	struct h_rig f;
	cJSON *j;
	char *out, *err;

	start(&f, NULL);
	die_in(&f, 0, 5, "connect ETIMEDOUT");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 5, WAIT_MS));
	die_in(&f, 0, 30, "invalid field recipient");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 35, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "drop",
	    "--queue", f.q[0], "--class", "validation", "--reason",
	    "obsolete", "--yes", NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "changed"), 30);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "purge",
	    "--older-than", "1ms", "--yes", NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "purged"), 30);
	cJSON_Delete(j);
	/* dropped after the purge: older than the purged ones */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "drop",
	    "--queue", f.q[0], "--class", "transient", "--reason",
	    "wrong cause", "--yes", NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "changed"), 5);
	cJSON_Delete(j);

	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "reopen", "--queue", f.q[0], "--limit", "10", "--reason",
	    "dropped the wrong cause", NULL }, NULL, &out, &err), 2);
	ck_assert_str_eq(err, "dlqctl: this would reopen 5 dead letters (the "
	    "discarded ones of this selection); run again with --yes to do "
	    "it\n");
	free(out);
	free(err);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "reopen", "--queue", f.q[0], "--limit", "10", "--reason",
	    "dropped the wrong cause", "--yes", NULL }, NULL, &out, &err), 0);
	ck_assert_str_eq(out, "reopened 5\n");
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--queue",
	    f.q[0], "--status", "open", NULL }), 5);

	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "reopen", "--queue", f.q[0], "--limit", "10", "--reason",
	    "dropped the wrong cause", "--yes", NULL }, NULL, &out, &err), 0);
	ck_assert_str_eq(out, "reopened 0\nat least 10 discarded dead letters "
	    "of this selection stay closed: their payload was purged, or a "
	    "replay of them may have arrived (dlqctl show ID says which)\n");
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "reopen",
	    "--queue", f.q[0], "--reason", "dropped the wrong cause", "--yes",
	    NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "changed"), 0);
	ck_assert_int_eq(h_jnum(j, "kept_closed"), 30);
	cJSON_Delete(j);
	ck_assert_int_eq(listed(f.cfg, (const char *[]){ "list", "--queue",
	    f.q[0], "--status", "discarded", NULL }), 30);
	h_rig_stop(&f);
}
END_TEST

/* Whether process `pid` catches SIGINT and sleeps in poll(2): dlqctl
 * waiting for the worker's answer to a request it sent after it began
 * to catch the signal (the selection's requests come before). */
static bool
waits_for_an_answer(pid_t pid)
{
	char path[64], *status, *wchan, *cgt;
	unsigned long long mask = 0;
	bool yes;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((status = h_slurp(path)) == NULL)
		return false;
	if ((cgt = strstr(status, "SigCgt:")) != NULL)
		mask = strtoull(cgt + 7, NULL, 16);
	free(status);
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	if ((wchan = h_slurp(path)) == NULL)
		return false;
	yes = (mask & 1ull << (SIGINT - 1)) != 0 && strstr(wchan, "poll");
	free(wchan);
	return yes;
}

/* ^C during a drop of a --queue selection: the chunk of 500 the worker
 * is changing is finished, the rest are not sent, and the summary says
 * which is which. The first chunk waits for a write lock another
 * process holds, so that the interrupt comes while it is under way. */
START_TEST(an_interrupted_drop_finishes_its_chunk_and_says_what_is_left)
{
	struct h_rig f;
	struct h_worker run;
	sqlite3 *lock;
	char conf[512], *out;
	cJSON *j;
	int64_t end;

	h_rig_name(&f, "ar", 1);
	snprintf(conf, sizeof(conf), "archive = { path = \"%s\"; "
	    "busy_timeout_ms = 30000; };", f.db);
	h_rig_setup(&f, conf);
	h_rig_start(&f);
	die_in(&f, 0, 1200, "many");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1200, WAIT_MS));
	ck_assert_int_eq(sqlite3_open(f.db, &lock), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(lock, "BEGIN EXCLUSIVE", NULL, NULL, NULL),
	    SQLITE_OK);
	h_spawn(&run, "dlqctl", (const char *[]){ "-c", f.cfg, "drop",
	    "--queue", f.q[0], "--reason", "flood", "--yes", NULL }, NULL);
	end = h_now_ms() + WAIT_MS;
	while (!waits_for_an_answer(run.pid) && h_now_ms() < end)
		usleep(10 * 1000);
	ck_assert(waits_for_an_answer(run.pid));
	ck_assert_int_eq(kill(run.pid, SIGINT), 0);
	ck_assert_int_eq(sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(lock);
	ck_assert_int_eq(h_worker_exit(&run, WAIT_MS), 3);
	out = h_slurp(run.log);
	ck_assert_str_eq(out, "dropped 500\ninterrupted: the other 700 "
	    "selected were not sent to the worker and are as they were\n");
	free(out);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq(h_jnum(get(j, "by_status"), "discarded"), 500);
	ck_assert_int_eq(h_jnum(get(j, "by_status"), "open"), 700);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

START_TEST(roles_decide_who_sees_payloads_and_who_drops)
{
	struct h_rig f;
	cJSON *j;
	char id[24];

	h_share_tmpdir();
	start(&f, "control = { viewers = [ \"nobody\" ]; operators = [ "
	    "\"nobdy\", \"@no_such_group_dlq\" ]; };");
	/* the typos are named at start; the entries grant nothing */
	ck_assert(h_worker_wait(&f.w, "control_member_unknown", 2, WAIT_MS));
	die_in(&f, 0, 1, "timeout");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	snprintf(id, sizeof(id), "%lld", (long long)first_id(f.cfg,
	    (const char *[]){ "list", NULL }));

	ck_assert_int_eq(h_dlqctl(f.cfg, "nobody", &j, (const char *[]){ "list",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, "nobody", NULL, (const char *[]){
	    "show", id, NULL }), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, "nobody", NULL, (const char *[]){
	    "show", id, "--payload", NULL }), 4);
	ck_assert_int_eq(h_dlqctl(f.cfg, "nobody", NULL, (const char *[]){
	    "drop", id, "--reason", "mine now", NULL }), 4);
	/* a user in no list gets nothing */
	ck_assert_int_eq(h_dlqctl(f.cfg, "daemon", NULL, (const char *[]){
	    "list", NULL }), 4);

	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "status"), "open");
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "actor"), "nobody");
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "command"), "drop");
	ck_assert_ptr_nonnull(strstr(h_jstr(cJSON_GetArrayItem(j, 0), "result"),
	    "refused"));
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* A user of a directory service is often in a hundred groups. These are
 * made for the test and removed before its verdict (and at the start of
 * the next run, should a failure before it have left them). */
#define MANY_USER	"dlqt_many"
#define MANY_GROUPS	80

static void
remove_many(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "/usr/sbin/userdel " MANY_USER
	    " 2>/dev/null; for i in $(seq 1 %d); do /usr/sbin/groupdel "
	    "dlqt_g$i 2>/dev/null; done; true", MANY_GROUPS);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove " MANY_USER "\n");
}

START_TEST(a_user_in_many_groups_has_the_role_of_the_last)
{
	struct h_rig f;
	char cmd[300], id[24];
	int rc;

	h_share_tmpdir();
	remove_many();
	snprintf(cmd, sizeof(cmd), "/usr/sbin/useradd -M -N -s "
	    "/usr/sbin/nologin " MANY_USER " && for i in $(seq 1 %d); do "
	    "/usr/sbin/groupadd -U " MANY_USER " dlqt_g$i || exit 1; done",
	    MANY_GROUPS);
	ck_assert_int_eq(system(cmd), 0);
	start(&f, "control = { operators = [ \"@dlqt_g80\" ]; };");
	die_in(&f, 0, 1, "timeout");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	snprintf(id, sizeof(id), "%lld", (long long)first_id(f.cfg,
	    (const char *[]){ "list", NULL }));
	rc = h_dlqctl(f.cfg, MANY_USER, NULL, (const char *[]){ "drop", id,
	    "--reason", "operator by its 80th group", NULL });
	remove_many();
	ck_assert_int_eq(rc, 0);
	h_rig_stop(&f);
}
END_TEST

/* The tallies (stats, /metrics) against a count of the records in the
 * file, by DLQ, queue, class, status and purged payload: 1 when they
 * agree. */
#define TALLIES_AGREE \
	"SELECT (SELECT group_concat(k, ';') FROM (SELECT dlq || '/' ||" \
	" queue || '/' || class || '/' || status || '/' || (purged_at IS" \
	" NOT NULL) || '=' || count(*) k FROM dead_letters GROUP BY dlq," \
	" queue, class, status, purged_at IS NOT NULL ORDER BY 1)) IS" \
	" (SELECT group_concat(k, ';') FROM (SELECT dlq || '/' || queue ||" \
	" '/' || class || '/' || status || '/' || purged || '=' || n k FROM" \
	" tallies WHERE n > 0 ORDER BY 1)) AND (SELECT sum(n) FROM arrivals)" \
	" IS (SELECT count(*) FROM dead_letters)"

/* Every kind of change keeps the tallies what the records hold: the
 * inserts, assign, drop, reopen, replay, purge, and a restart (which
 * finds them there). */
START_TEST(the_tallies_count_what_the_records_hold_after_every_change)
{
	struct h_rig f;
	cJSON *j;

	start(&f, NULL);
	die_in(&f, 0, 4, "timeout");
	die_in(&f, 1, 2, "boom");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 6, WAIT_MS));
	ck_assert_int_eq(h_db_int(f.db, TALLIES_AGREE), 1);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", "1", "--owner", "ann", "--decision", "wait", NULL }), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "drop",
	    "2", "5", "--reason", "obsolete", "--yes", NULL }), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "reopen", "5", "--reason", "not obsolete", "--yes", NULL }), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "replay", "3", "--execute", "--reason", "fixed", NULL }), 0);
	ck_assert_int_eq(h_db_int(f.db, TALLIES_AGREE), 1);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "purge",
	    "--older-than", "1ms", "--yes", NULL }), 0);
	ck_assert_int_eq(h_db_int(f.db, "SELECT count(*) FROM dead_letters"
	    " WHERE purged_at IS NOT NULL"), 2);
	ck_assert_int_eq(h_db_int(f.db, TALLIES_AGREE), 1);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	h_rig_start(&f);
	ck_assert_int_eq(h_db_int(f.db, TALLIES_AGREE), 1);
	/* and stats read them */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "total"), 6);
	ck_assert_int_eq(h_jnum(j, "unresolved"), 4);
	ck_assert_int_eq(h_jnum(j, "payloads_purged"), 2);
	ck_assert_int_eq(h_jnum(j, "new_last_hour"), 6);
	ck_assert_int_eq(h_jnum(get(j, "by_status"), "assigned"), 1);
	ck_assert_int_eq(h_jnum(get(j, "by_status"), "replayed"), 1);
	ck_assert_int_eq(h_jnum(get(j, "by_status"), "discarded"), 1);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

START_TEST(purge_drops_payloads_and_keeps_records)
{
	struct h_rig f;
	cJSON *j, *l;
	char a[24], b[24], *out, *err;
	int64_t t0;

	start(&f, NULL);
	die_in(&f, 0, 3, "gone");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &l, (const char *[]){ "list",
	    NULL }), 0);
	snprintf(a, sizeof(a), "%lld",
	    (long long)h_jnum(cJSON_GetArrayItem(l, 0), "id"));
	snprintf(b, sizeof(b), "%lld",
	    (long long)h_jnum(cJSON_GetArrayItem(l, 1), "id"));
	cJSON_Delete(l);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "drop",
	    a, b, "--reason", "obsolete", "--yes", NULL }), 0);
	/* without --yes: counted, with the cutoff as a date, nothing purged */
	t0 = dlq_wall_ms();
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "purge", "--older-than", "1ms", NULL }, NULL, &out, &err), 2);
	ck_assert_str_eq(out, "");
	ck_assert_msg(strncmp(err, "dlqctl: this would purge the payloads of 2 "
	    "resolved records received before 20", 71) == 0 && strstr(err,
	    " UTC; run again with --yes to do it\n") != NULL, "%s", err);
	/* what to do was said: no usage line after it */
	ck_assert_ptr_null(strstr(err, "usage:"));
	free(out);
	free(err);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "purge",
	    "--older-than", "1ms", NULL }), 2);
	ck_assert_int_eq(h_jnum(j, "purgeable"), 2);
	ck_assert_int_ge(h_jnum(j, "before_ms"), t0 - 1);
	ck_assert_int_le(h_jnum(j, "before_ms"), dlq_wall_ms());
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "payloads_purged"), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "purge",
	    "--older-than", "1ms", "--yes", NULL }), 0);
	/* the open one keeps it */
	ck_assert_int_eq(h_jnum(j, "purged"), 2);
	cJSON_Delete(j);
	ck_assert_int_eq(h_run_split((const char *[]){ h_bin("dlqctl"), "-c",
	    f.cfg, "purge", "--older-than", "1ms", NULL }, NULL, &out, &err), 0);
	ck_assert_msg(strncmp(out, "nothing to purge: no resolved record "
	    "received before 20", 55) == 0, "%s", out);
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "total"), 3);
	ck_assert_int_eq(h_jnum(j, "payloads_purged"), 2);
	ck_assert_int_eq(h_jnum(get(j, "by_status"), "discarded"), 2);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show", a,
	    "--payload", NULL }), 0);
	ck_assert(cJSON_IsNull(get(j, "payload")));
	ck_assert(cJSON_IsNull(get(j, "headers")));
	ck_assert_str_eq(h_jstr(j, "class"), "unknown");
	ck_assert_str_eq(h_jstr(j, "resolution"), "obsolete");
	ck_assert_int_gt(h_jnum(j, "purged_at"), 0);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* archive.retention_days (30 by default): at start, the worker purges the
 * payloads of the resolved records received longer ago than that, and
 * of no other record. */
START_TEST(retention_purges_old_resolved_payloads_at_start)
{
	struct h_rig f;
	sqlite3 *db;
	cJSON *l, *j, **ev;
	char id[3][24], sql[256];
	int i, n;

	start(&f, NULL);
	die_in(&f, 0, 3, "stale");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &l, (const char *[]){ "list",
	    NULL }), 0);
	for (i = 0; i < 3; i++)
		snprintf(id[i], sizeof(id[i]), "%lld", (long long)h_jnum(
		    cJSON_GetArrayItem(l, i), "id"));
	cJSON_Delete(l);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "drop",
	    id[0], id[1], "--reason", "obsolete", "--yes", NULL }), 0);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	/* the first (dropped) and the last (open) arrived 31 days ago */
	snprintf(sql, sizeof(sql), "UPDATE dead_letters SET received_at = "
	    "received_at - 31 * 86400000 WHERE id IN (%s, %s)", id[0], id[2]);
	ck_assert_int_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_changes(db), 2);
	sqlite3_close(db);

	h_rig_start(&f);
	ck_assert(h_worker_wait(&f.w, "retention_applied", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "retention_applied", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h_jnum(ev[0], "days"), 30);
	ck_assert_int_eq(h_jnum(ev[0], "purged"), 1);
	h_events_free(ev, n);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){
		    "show", id[i], "--payload", NULL }), 0);
		ck_assert_msg(cJSON_IsNull(get(j, "payload")) == (i == 0),
		    "record %d: %s", i, cJSON_PrintUnformatted(get(j,
		    "payload")));
		ck_assert(cJSON_IsNumber(get(j, "purged_at")) == (i == 0));
		cJSON_Delete(j);
	}
	h_rig_stop(&f);
}
END_TEST

/* log.level = "warn": the dead letters of a flood are archived and acked
 * without a line each (nor any other info line). */
START_TEST(warn_level_archives_without_dead_letter_lines)
{
	struct h_rig f;
	cJSON *j = NULL;
	int64_t deadline;
	char *log, *info;

	setup(&f, "log = { level = \"warn\"; };");
	/* no info line to wait for: the topology is asserted first */
	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlq-worker"), "-c",
	    f.cfg, "--assert-only", NULL }, NULL, NULL), 0);
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL }, NULL);
	die_in(&f, 0, 20, "quiet");
	for (deadline = h_now_ms() + WAIT_MS; h_now_ms() < deadline;
	    usleep(100000)) {
		cJSON_Delete(j);
		j = NULL;
		if (h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
		    NULL }) == 0 && h_jnum(j, "total") == 20)
			break;
	}
	ck_assert_int_eq(h_jnum(j, "total"), 20);
	cJSON_Delete(j);
	h_rig_stop(&f);
	ck_assert_int_eq(h_count(f.dlq[0]), 0);	/* acked, not given back */
	log = h_slurp(f.w.log);
	info = strstr(log, "\"level\":\"info\"");
	ck_assert_msg(info == NULL, "%.200s", info);
	free(log);
}
END_TEST

static int
connect_to(const char *sock)
{
	int fd = h_control_connect(sock);

	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Raw requests on the socket: a line in, a line out. */
static const char *
raw(const char *sock, const char *req, size_t len)
{
	ssize_t n;
	size_t off;
	const char *a;
	int fd = connect_to(sock);

	/* the worker answers a request that is too large and closes before
	 * taking all of it: what it answered is what counts */
	for (off = 0; off < len; off += (size_t)n)
		if ((n = send(fd, req + off, len - off, MSG_NOSIGNAL)) <= 0)
			break;
	a = h_control_line(fd);
	close(fd);
	return a;
}

/* A purge of more than one chunk that asks for progress ("progress":
 * true, as dlqctl purge --yes does) says after each chunk but the last
 * how many it purged and how far through the ids it is, then answers;
 * so a long purge keeps dlqctl's wait alive and shows on a terminal.
 * What the audit keeps is what was asked, without "progress". */
START_TEST(a_purge_in_chunks_says_how_far_it_is)
{
	static const char req[] = "{\"cmd\":\"purge\",\"older_than_ms\":"
	    "60000,\"progress\":true}\n";
	struct h_rig f;
	sqlite3 *db;
	char sql[640], buf[4096], want[160];
	cJSON *j, *e;
	size_t got = 0;
	ssize_t n;
	int fd;

	start(&f, NULL);
	/* 12 000 discarded dead letters of an hour ago: three chunks */
	snprintf(sql, sizeof(sql), "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL"
	    " SELECT x + 1 FROM c WHERE x < 12000) INSERT INTO dead_letters"
	    " (id, fingerprint, dlq, queue, reason, class, signature, payload,"
	    " payload_bytes, headers_json, received_at, status) SELECT x,"
	    " randomblob(32), 'q.dlq', 'q', 'rejected', 'transient',"
	    " '000000000001', x'00ff', 2, '{}', %lld, 'discarded' FROM c",
	    (long long)(dlq_wall_ms() - 3600000));
	ck_assert_int_eq(sqlite3_open(f.db, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 10000);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	fd = connect_to(h_socket(f.prefix));
	ck_assert_int_eq(send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL),
	    (ssize_t)sizeof(req) - 1);
	/* everything up to the answer's line, whichever reads it comes in */
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got,
	    sizeof(buf) - 1 - got)) > 0) {
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "{\"ok\"") != NULL && buf[got - 1] == '\n')
			break;
	}
	close(fd);
	buf[got] = '\0';
	snprintf(want, sizeof(want), "{\"progress\":{\"purged\":5000,"
	    "\"percent\":41}}\n{\"progress\":{\"purged\":10000,\"percent\":"
	    "83}}\n{\"ok\":true,\"data\":{\"purged\":12000,\"before_ms\":");
	ck_assert_msg(strncmp(buf, want, strlen(want)) == 0, "%s", buf);
	ck_assert_ptr_eq(strchr(buf + strlen(want), '\n'), buf + got - 1);

	/* dlqctl asks for it too; without a terminal it prints the answer
	 * only, as JSON */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "purge",
	    "--older-than", "1m", "--yes", NULL }), 0);
	ck_assert_int_eq(h_jnum(j, "purged"), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    "--command", "purge", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 2);
	cJSON_ArrayForEach(e, j) {
		ck_assert_int_eq(h_jnum(get(e, "args"), "older_than_ms"),
		    60000);
		ck_assert_ptr_null(get(get(e, "args"), "progress"));
		ck_assert_str_eq(h_jstr(e, "result"), "ok");
	}
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* A script that leaks control connections, or a session left open,
 * holds at most 8 of the 32 the worker serves, each only until it has
 * sent nothing for control.idle_timeout_ms (or, half way through a
 * request, 5 s after its first byte); other users are served
 * meanwhile. */
START_TEST(connections_left_open_lock_no_one_out)
{
	struct h_rig f;
	const char *sock;
	char *out, want[200];
	cJSON *j;
	int fd[8], ninth, i;

	h_share_tmpdir();
	start(&f, "control = { idle_timeout_ms = 8000; viewers = "
	    "[ \"nobody\" ]; };");
	sock = h_socket(f.prefix);
	for (i = 0; i < 8; i++)
		fd[i] = connect_to(sock);
	/* one of them half way through a request */
	ck_assert_int_eq(send(fd[0], "{\"cmd\":", 7, MSG_NOSIGNAL), 7);
	ninth = connect_to(sock);
	ck_assert_str_eq(h_control_line(ninth), "{\"ok\":false,\"code\":\"error\","
	    "\"error\":\"too many control connections of this user (8 at "
	    "most)\"}\n");
	close(ninth);
	/* dlqctl says it too, whether its request went out before the
	 * worker closed or not (a race: a few tries) */
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(h_run((const char *[]){ h_bin("dlqctl"), "-c",
		    f.cfg, "stats", NULL }, NULL, &out), 1);
		ck_assert_msg(strstr(out, "dlqctl: too many control connections "
		    "of this user (8 at most)"), "%s", out);
		free(out);
	}
	ck_assert_int_eq(h_dlqctl(f.cfg, "nobody", &j, (const char *[]){
	    "stats", NULL }), 0);
	cJSON_Delete(j);

	/* the one half way through a request: 5 s after its first byte */
	ck_assert_str_eq(h_control_line(fd[0]), "{\"ok\":false,\"code\":\"error\","
	    "\"error\":\"request not complete 5000 ms after its first byte: "
	    "connection closed\"}\n");
	snprintf(want, sizeof(want), "{\"ok\":false,\"code\":\"error\","
	    "\"error\":\"nothing sent for 8000 ms (control.idle_timeout_ms): "
	    "connection closed\"}\n");
	for (i = 0; i < 8; i++) {
		if (i > 0)
			ck_assert_str_eq(h_control_line(fd[i]), want);
		ck_assert_str_eq(h_control_line(fd[i]), "");	/* closed */
		close(fd[i]);
	}
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* The first column of the first row of a query with at most one text
 * parameter, as text (NULL if none), straight from the file. */
static char *
sql_text(const char *path, const char *query, const char *param)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	char *text = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, query, -1, &st, NULL),
	    SQLITE_OK);
	if (param != NULL)
		sqlite3_bind_text(st, 1, param, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		text = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return text;
}

/* The CREATE statement of an index, as sqlite_master keeps it. */
static char *
index_sql(const char *path, const char *name)
{
	return sql_text(path, "SELECT sql FROM sqlite_master WHERE"
	    " type = 'index' AND name = ?1", name);
}

/* Runs `steps` on the archive at `path`, as an older release would have
 * left it (the worker stopped). */
static void
rewrite_archive(const char *path, const char *const *steps)
{
	sqlite3 *db;
	int i;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	for (i = 0; steps[i] != NULL; i++)
		ck_assert_msg(sqlite3_exec(db, steps[i], NULL, NULL, NULL) ==
		    SQLITE_OK, "%s: %s", steps[i], sqlite3_errmsg(db));
	sqlite3_close(db);
}

static int
user_version(const char *path)
{
	char *v = sql_text(path, "PRAGMA user_version", NULL);
	int n = v != NULL ? atoi(v) : -1;

	free(v);
	return n;
}

/* An archive of a release that normalised error texts otherwise: at the
 * upgrade its records are given this release's signatures, so that one
 * cause stays one group and a --signature selection takes its records
 * of before the upgrade too. */
START_TEST(an_upgrade_keeps_one_cause_in_one_group)
{
	static const char *const older[] = {
		"UPDATE dead_letters SET signature = 'b0b0b0b0b0b0'",
		"DELETE FROM archive_meta WHERE key = 'signature_version'",
		NULL,
	};
	struct h_rig f;
	cJSON *j, **ev;
	char sig[16];
	int n;

	start(&f, NULL);
	die_in(&f, 0, 2, "payments timeout after 3012ms");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	rewrite_archive(f.db, older);
	h_rig_start(&f);
	ev = h_worker_events(&f.w, "signatures_refreshed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h_jnum(ev[0], "records"), 2);
	ck_assert_int_eq(h_jnum(ev[0], "changed"), 2);
	h_events_free(ev, n);

	die_in(&f, 0, 1, "payments timeout after 4711ms");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "dead_letter", &n);
	snprintf(sig, sizeof(sig), "%s", h_jstr(ev[0], "signature"));
	h_events_free(ev, n);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "groups",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "signature"), sig);
	ck_assert_int_eq(h_jnum(cJSON_GetArrayItem(j, 0), "count"), 3);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--signature", sig, NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 3);
	cJSON_Delete(j);

	/* once: a restart reads no record again */
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	h_rig_start(&f);
	ck_assert_int_eq(h_worker_count(&f.w, "signatures_refreshed"), 0);
	h_rig_stop(&f);
}
END_TEST

/* The class of an archived record, as `show` gives it. */
static char *
class_of(struct h_rig *f, const char *id, char *sig, size_t n)
{
	static char class[32];
	cJSON *j;

	ck_assert_int_eq(h_dlqctl(f->cfg, NULL, &j, (const char *[]){ "show",
	    id, NULL }), 0);
	snprintf(class, sizeof(class), "%s", h_jstr(j, "class"));
	if (sig != NULL)
		snprintf(sig, n, "%s", h_jstr(j, "signature"));
	cJSON_Delete(j);
	return class;
}

/* A rule added to classify.rules (or a release's other built-in rules)
 * classes the unresolved records of before it too, at the next start:
 * class, hint and signature become what the cause's new dead letters
 * get, each change audited in the record's history; a dropped record
 * keeps the class it was decided under. */
START_TEST(new_rules_class_the_open_records_again)
{
	struct h_rig f;
	cJSON *j, **ev, *e;
	char sig[16], before[16];
	FILE *cfg;
	int n;

	start(&f, NULL);
	die_in(&f, 0, 3, "fraud check 1001 failed: upstream timeout");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	ck_assert_str_eq(class_of(&f, "1", before, sizeof(before)),
	    "transient");
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", "2", "--owner", "risk", "--decision", "look", NULL }), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "drop",
	    "3", "--reason", "handled", NULL }), 0);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);

	ck_assert_ptr_nonnull(cfg = fopen(f.cfg, "a"));
	fputs("classify = { rules = ( { match = \"fraud\"; class = "
	    "\"manual\"; hint = \"Ask the risk team.\"; } ); };\n", cfg);
	fclose(cfg);
	h_rig_start(&f);
	ev = h_worker_events(&f.w, "classes_refreshed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h_jnum(ev[0], "records"), 2);	/* open, assigned */
	ck_assert_int_eq(h_jnum(ev[0], "changed"), 2);
	ck_assert_int_eq(h_jnum(ev[0], "hints"), 0);
	h_events_free(ev, n);
	ck_assert_str_eq(class_of(&f, "2", NULL, 0), "manual");
	ck_assert_str_eq(class_of(&f, "3", sig, sizeof(sig)), "transient");
	ck_assert_str_eq(sig, before);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "1", NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "class"), "manual");
	ck_assert_str_eq(h_jstr(j, "hint"), "Ask the risk team.");
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "audit"), 0);
	ck_assert_str_eq(h_jstr(e, "command"), "reclassify");
	ck_assert_str_eq(h_jstr(e, "actor"), "dlq-worker");
	ck_assert_str_eq(h_jstr(e, "result"), "class transient -> manual");
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "audit",
	    "--command", "reclassify", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(j, 0), "result"),
	    "class transient -> manual");
	cJSON_Delete(j);

	/* the cause's next dead letter joins them in one group */
	die_in(&f, 0, 1, "fraud check 2002 failed: upstream timeout");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ev = h_worker_events(&f.w, "dead_letter", &n);
	snprintf(sig, sizeof(sig), "%s", h_jstr(ev[0], "signature"));
	ck_assert_str_eq(h_jstr(ev[0], "class"), "manual");
	h_events_free(ev, n);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "list",
	    "--signature", sig, NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j), 3);
	cJSON_Delete(j);

	/* once: the same rules at the next start read nothing */
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	h_rig_start(&f);
	ck_assert_int_eq(h_worker_count(&f.w, "classes_refreshed"), 0);
	h_rig_stop(&f);
}
END_TEST

/* Starts the rig's worker on its archive, left at schema `from` by an
 * older release: upgraded once, to schema 10, and said so. */
static void
start_upgrading(struct h_rig *f, int from)
{
	cJSON **ev;
	int n;

	h_rig_start(f);
	ck_assert_int_eq(user_version(f->db), 10);
	ev = h_worker_events(&f->w, "archive_migrated", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h_jnum(ev[0], "from"), from);
	ck_assert_int_eq(h_jnum(ev[0], "to"), 10);
	h_events_free(ev, n);
}

/* Undoes the tallies (made at every open, whatever the schema), schemas
 * 9 (the audit's index of ids) and 8 (the aggregates' indexes): the
 * first steps of each "make it what release N wrote" below. */
#define UNDO_V8 \
	"DELETE FROM archive_meta WHERE key = 'tallies'", \
	"DROP TRIGGER tallies_update", \
	"DROP TRIGGER tallies_delete", "DROP TABLE tallies", \
	"DROP TABLE arrivals", \
	"DROP INDEX dead_letters_redrive_stopped", \
	"DROP INDEX dead_letters_open_owned", \
	"DROP INDEX dead_letters_dlq_status", \
	"DROP TRIGGER audit_ids_fill", "DROP TABLE audit_ids", \
	"DROP INDEX dead_letters_assigned"

/* An archive written by the first release (schema 1) is upgraded in
 * place when a newer worker opens it: records kept, new columns empty. */
START_TEST(a_version_1_archive_is_migrated_and_keeps_its_records)
{
	static const char *const to_v1[] = {
		UNDO_V8,
		"DROP INDEX dead_letters_fingerprint",
		"CREATE INDEX dead_letters_fingerprint ON"
		" dead_letters(fingerprint)",
		"DROP INDEX dead_letters_replay_of",
		"DROP TABLE archive_meta",
		"CREATE INDEX dead_letters_message ON dead_letters(message_id)",
		"DROP TABLE redrive_circuits",
		"ALTER TABLE dead_letters DROP COLUMN evidence_at",
		"ALTER TABLE dead_letters DROP COLUMN escalation_noted",
		"ALTER TABLE dead_letters DROP COLUMN redrive_stopped_at",
		"ALTER TABLE dead_letters DROP COLUMN redrive_note",
		/* release 1 kept the hint and the headers' JSON in each
		 * record */
		"UPDATE dead_letters SET hint = 'the hint of release 1',"
		" headers_json = '{\"written_by\":1}'",
		"ALTER TABLE dead_letters DROP COLUMN hint_id",
		"DROP TABLE hints",
		"PRAGMA user_version = 1",
		NULL,
	};
	struct h_rig f;
	cJSON *j, **ev;
	char *sql;
	int n;

	start(&f, NULL);
	die_in(&f, 0, 2, "migrate me");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){ "drop",
	    "2", "--reason", "audited before the upgrade", NULL }), 0);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(user_version(f.db), 10);
	/* make it what release 1 wrote */
	rewrite_archive(f.db, to_v1);
	ck_assert_int_eq(user_version(f.db), 1);
	start_upgrading(&f, 1);
	/* the signatures computed again from what the records keep are the
	 * ones the consumers gave them */
	ev = h_worker_events(&f.w, "signatures_refreshed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h_jnum(ev[0], "records"), 2);
	ck_assert_int_eq(h_jnum(ev[0], "changed"), 0);
	h_events_free(ev, n);
	/* no rules were noted: the open record is classified again, to the
	 * same class (so the same signature) and the hint of now */
	ev = h_worker_events(&f.w, "classes_refreshed", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(h_jnum(ev[0], "records"), 1);
	ck_assert_int_eq(h_jnum(ev[0], "changed"), 0);
	ck_assert_int_eq(h_jnum(ev[0], "hints"), 1);
	h_events_free(ev, n);
	/* v3 dropped the message_id index; v4 keeps replays only in the
	 * lineage index */
	ck_assert_ptr_null(index_sql(f.db, "dead_letters_message"));
	sql = index_sql(f.db, "dead_letters_replay_of");
	ck_assert_ptr_nonnull(sql);
	ck_assert_ptr_nonnull(strstr(sql, "WHERE replay_of IS NOT NULL"));
	free(sql);
	/* v7: fingerprints are unique */
	sql = index_sql(f.db, "dead_letters_fingerprint");
	ck_assert_ptr_nonnull(sql);
	ck_assert_ptr_nonnull(strstr(sql, "CREATE UNIQUE INDEX"));
	free(sql);
	/* v8: time to owner from a partial index */
	sql = index_sql(f.db, "dead_letters_assigned");
	ck_assert_ptr_nonnull(sql);
	ck_assert_ptr_nonnull(strstr(sql, "WHERE assigned_at IS NOT NULL"));
	free(sql);
	/* v9: a record's audit history through the index of ids, the
	 * requests of before the upgrade included */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "2", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "audit")), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(get(j, "audit"), 0),
	    "command"), "drop");
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(j, "total")->valueint, 2);
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "redrive"),
	    "left_for_humans")->valueint, 0);
	cJSON_Delete(j);
	/* old records show what they kept; a new one has its hint in
	 * `hints` and its headers rendered from the AMQP table. An open
	 * one was given the hint of the rules of now (classrefresh.c: an
	 * archive of before the rules were noted), the dropped one keeps
	 * what it was decided under */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "2", "--payload", NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "hint"), "the hint of release 1");
	ck_assert_int_eq(h_jnum(get(j, "headers"), "written_by"), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "1", NULL }), 0);
	ck_assert_ptr_nonnull(strstr(h_jstr(j, "hint"), "Inspect the payload"));
	cJSON_Delete(j);
	die_in(&f, 0, 1, "after the upgrade");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "3", "--payload", NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "error"), "after the upgrade");
	ck_assert_str_eq(h_jstr(j, "class"), "unknown");
	ck_assert_str_eq(h_jstr(j, "hint"), "Inspect the payload and the "
	    "consumer's logs for this queue; fix the cause, replay one "
	    "message, then the rest in a small batch.");
	ck_assert_str_eq(h_jstr(get(j, "headers"), "x-error"),
	    "after the upgrade");
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "assign",
	    "1", "--owner", "o", "--decision", "d", "--evidence", "e", NULL }),
	    0);
	cJSON_Delete(j);
	/* and of after it */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "1", NULL }), 0);
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "audit")), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(get(j, "audit"), 0),
	    "command"), "assign");
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* Records written before schema 5 have fingerprints of the old form
 * (the whole SHA-256, of which the new form keeps 24 bytes after the
 * death time). A crash between commit and ack just before the upgrade:
 * the redeliveries must still find them. */
START_TEST(an_upgraded_archive_recognises_redeliveries_of_its_old_records)
{
	static const char *const to_v4[] = {
		UNDO_V8,
		"DROP INDEX dead_letters_fingerprint",
		"CREATE INDEX dead_letters_fingerprint ON"
		" dead_letters(fingerprint)",
		"UPDATE dead_letters SET fingerprint = CAST(substr(fingerprint,"
		" 9) || X'0123456789abcdef' AS BLOB)",
		"DROP TABLE archive_meta",
		"UPDATE dead_letters SET hint = (SELECT text FROM hints"
		" WHERE id = hint_id)",
		"ALTER TABLE dead_letters DROP COLUMN hint_id",
		"DROP TABLE hints",
		"PRAGMA user_version = 4",
		NULL,
	};
	struct h_rig f;
	cJSON **ev;
	char id[32];
	int i, n, rows, distinct, committed, dups = 0;

	start(&f, NULL);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	for (i = 0; i < 300; i++) {
		snprintf(id, sizeof(id), "u-%d", i);
		h_publish(f.c, "", f.dlq[0], "{}", 2, id, NULL);
	}
	ck_assert(h_wait_count(f.dlq[0], 300, WAIT_MS));
	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL },
	    (const char *[]){ "DLQ_FAULT_EXIT_AFTER_COMMITS=1", NULL });
	ck_assert_int_eq(h_worker_exit(&f.w, 30000), 99);
	count_rows(f.db, &committed, &distinct);
	ck_assert_int_gt(committed, 0);
	/* make it what release 4 wrote */
	rewrite_archive(f.db, to_v4);

	h_rig_start(&f);
	ck_assert_int_eq(user_version(f.db), 10);
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ev = h_worker_events(&f.w, "dead_letter", &n);
	ck_assert_int_eq(n, 300);
	for (i = 0; i < n; i++)
		dups += cJSON_IsTrue(cJSON_GetObjectItem(ev[i], "duplicate"));
	h_events_free(ev, n);
	ck_assert_int_eq(dups, committed);
	count_rows(f.db, &rows, &distinct);
	ck_assert_int_eq(rows, 300);
	ck_assert_int_eq(distinct, 300);
	h_close(f.c);
}
END_TEST

/* Schema 7 makes fingerprints unique. No release wrote one twice, but an
 * archive that holds one twice must still open: nothing dropped, the
 * first record keeps the fingerprint a redelivery is looked up by. */
START_TEST(an_archive_holding_a_fingerprint_twice_is_migrated)
{
	static const char *const to_v6[] = {
		UNDO_V8,
		"DROP INDEX dead_letters_fingerprint",
		"CREATE INDEX dead_letters_fingerprint ON"
		" dead_letters(fingerprint)",
		"UPDATE dead_letters SET fingerprint = (SELECT fingerprint FROM"
		" dead_letters WHERE id = 1) WHERE id = 2",
		"PRAGMA user_version = 6",
		NULL,
	};
	static const char first[] =
	    "SELECT hex(fingerprint) FROM dead_letters WHERE id = 1";
	struct h_rig f;
	char *before, *after, *distinct, *sql;
	int rows, n;

	start(&f, NULL);
	die_in(&f, 0, 3, "twice");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 3, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	rewrite_archive(f.db, to_v6);
	before = sql_text(f.db, first, NULL);
	ck_assert_ptr_nonnull(before);

	start_upgrading(&f, 6);
	sql = index_sql(f.db, "dead_letters_fingerprint");
	ck_assert_ptr_nonnull(sql);
	ck_assert_ptr_nonnull(strstr(sql, "CREATE UNIQUE INDEX"));
	after = sql_text(f.db, first, NULL);
	ck_assert_str_eq(after, before);
	distinct = sql_text(f.db,
	    "SELECT count(DISTINCT fingerprint) FROM dead_letters", NULL);
	ck_assert_str_eq(distinct, "3");
	count_rows(f.db, &rows, &n);
	ck_assert_int_eq(rows, 3);
	/* and the worker goes on recording */
	die_in(&f, 0, 1, "after the migration");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	h_rig_stop(&f);
	count_rows(f.db, &rows, &n);
	ck_assert_int_eq(rows, 4);
	free(sql);
	free(before);
	free(after);
	free(distinct);
}
END_TEST

/* Schema 9's layout of the records: the payload in the middle, the case
 * columns after it (what releases up to schema 9 wrote). */
#define V9_COLUMNS							\
	"id, fingerprint, dlq, queue, exchange, routing_keys, message_id,"	\
	" correlation_id, type, content_type, content_encoding, timestamp,"	\
	" app_id, delivery_mode, priority, expiration, user_id, reply_to,"	\
	" headers_json, headers_amqp, x_death, reason, retry_count,"	\
	" delivery_count, error, class, signature, hint, payload,"	\
	" payload_bytes, payload_sha256, received_at, status, owner,"	\
	" decision, evidence, escalate_at, assigned_by, assigned_at,"	\
	" resolved_by, resolved_at, resolution, replay_of, replay_count,"	\
	" purged_at, evidence_at, escalation_noted, redrive_stopped_at,"	\
	" redrive_note, hint_id"

/* What releases of schema 9 wrote, made of a schema 10 archive. */
static const char *const to_v9[] = {
	"CREATE TABLE v9 (id INTEGER PRIMARY KEY,"
	" fingerprint BLOB NOT NULL, dlq TEXT NOT NULL,"
	" queue TEXT NOT NULL, exchange TEXT, routing_keys TEXT,"
	" message_id TEXT, correlation_id TEXT, type TEXT,"
	" content_type TEXT, content_encoding TEXT, timestamp INTEGER,"
	" app_id TEXT, delivery_mode INTEGER, priority INTEGER,"
	" expiration TEXT, user_id TEXT, reply_to TEXT,"
	" headers_json TEXT, headers_amqp BLOB, x_death TEXT,"
	" reason TEXT NOT NULL, retry_count INTEGER,"
	" delivery_count INTEGER, error TEXT, class TEXT NOT NULL,"
	" signature TEXT NOT NULL, hint TEXT, payload BLOB,"
	" payload_bytes INTEGER NOT NULL, payload_sha256 TEXT,"
	" received_at INTEGER NOT NULL,"
	" status TEXT NOT NULL DEFAULT 'open', owner TEXT,"
	" decision TEXT, evidence TEXT, escalate_at INTEGER,"
	" assigned_by TEXT, assigned_at INTEGER, resolved_by TEXT,"
	" resolved_at INTEGER, resolution TEXT, replay_of INTEGER,"
	" replay_count INTEGER NOT NULL DEFAULT 0, purged_at INTEGER,"
	" evidence_at INTEGER, escalation_noted TEXT,"
	" redrive_stopped_at INTEGER, redrive_note TEXT,"
	" hint_id INTEGER)",
	"INSERT INTO v9 (" V9_COLUMNS ") SELECT " V9_COLUMNS
	" FROM dead_letters",
	"DROP TABLE dead_letters",
	"ALTER TABLE v9 RENAME TO dead_letters",
	"CREATE UNIQUE INDEX dead_letters_fingerprint ON"
	" dead_letters(fingerprint)",
	"CREATE INDEX dead_letters_status ON"
	" dead_letters(status, received_at)",
	"CREATE INDEX dead_letters_queue ON"
	" dead_letters(queue, received_at)",
	"CREATE INDEX dead_letters_signature ON dead_letters(signature)",
	"CREATE INDEX dead_letters_replay_of ON dead_letters(replay_of)"
	" WHERE replay_of IS NOT NULL",
	"CREATE INDEX dead_letters_assigned ON"
	" dead_letters(assigned_at, received_at)"
	" WHERE assigned_at IS NOT NULL",
	"PRAGMA user_version = 9",
	NULL,
};

/* Schema 10 puts the payload last, so that the case columns are read
 * without reading the payload: an archive in schema 9's layout is copied
 * once, its records, attempts and indexes kept. */
START_TEST(a_version_9_archive_gets_its_payloads_last)
{
	static const char last[] = "SELECT name FROM"
	    " pragma_table_info('dead_letters') ORDER BY cid DESC LIMIT 1";
	static const char *const indexes[] = { "dead_letters_fingerprint",
	    "dead_letters_status", "dead_letters_queue",
	    "dead_letters_signature", "dead_letters_replay_of",
	    "dead_letters_assigned", NULL };
	struct h_rig f;
	cJSON *j;
	char *text;
	int i;

	start(&f, NULL);
	die_in(&f, 0, 2, "relayout me");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	/* an attempt (a foreign key to its record) and an assignment */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "replay", "1", "--execute", "--reason", "before the upgrade",
	    NULL }), 0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", "2", "--owner", "ann", "--decision", "wait",
	    "--escalate-in", "1h", NULL }), 0);
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	ck_assert_int_eq(user_version(f.db), 10);
	text = sql_text(f.db, last, NULL);
	ck_assert_str_eq(text, "payload");
	free(text);
	/* make it what releases of schema 9 wrote */
	rewrite_archive(f.db, to_v9);
	text = sql_text(f.db, last, NULL);
	ck_assert_str_eq(text, "hint_id");
	free(text);

	start_upgrading(&f, 9);
	text = sql_text(f.db, last, NULL);
	ck_assert_str_eq(text, "payload");
	free(text);
	for (i = 0; indexes[i] != NULL; i++) {
		text = index_sql(f.db, indexes[i]);
		ck_assert_msg(text != NULL, "%s", indexes[i]);
		free(text);
	}
	text = sql_text(f.db, "SELECT count(*) FROM"
	    " pragma_foreign_key_check", NULL);
	ck_assert_str_eq(text, "0");
	free(text);
	/* the records as they were, with their history */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "1", "--payload", NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "status"), "replayed");
	ck_assert_str_eq(h_jstr(j, "error"), "relayout me");
	ck_assert_str_eq(h_jstr(j, "payload"), "{\"k\":1}");
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "attempts")), 1);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "2", NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "status"), "assigned");
	ck_assert_str_eq(h_jstr(j, "owner"), "ann");
	cJSON_Delete(j);
	/* and the worker goes on recording */
	die_in(&f, 0, 1, "after the relayout");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(j, "total")->valueint, 3);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* Schema 10's copy of the records needs about twice the archive free on
 * its file system. Without it (here a 40 MiB tmpfs in a mount namespace
 * of the worker's own, holding a schema 9 archive) the worker says how
 * much to free, keeps schema 9's layout and works: the records are read,
 * new dead letters recorded, one of 1.2 MB too (bound to its insert:
 * the payload is not the record's last column there). */
START_TEST(an_archive_without_room_for_the_new_layout_keeps_the_old_one)
{
	enum { BIG = 1200 * 1000 };
	struct h_rig f;
	char dir[300], env[340], script[1200], *big = malloc(BIG + 1);
	cJSON *j, **ev;
	int n;

	start(&f, NULL);
	die_in(&f, 0, 2, "before the upgrade");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&f.w, 10000, NULL), 0);
	rewrite_archive(f.db, to_v9);
	snprintf(dir, sizeof(dir), "%s", h_tmp_path("small-disk"));
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(env, sizeof(env), "DLQ_ARCHIVE_PATH=%s/archive.db", dir);
	snprintf(script, sizeof(script), "mount -t tmpfs -o size=40m tmpfs"
	    " '%s' && cp '%s' '%s/archive.db' && exec '%s' -c '%s'", dir,
	    f.db, dir, h_bin("dlq-worker"), f.cfg);
	h_spawn(&f.w, "/usr/bin/unshare", (const char *[]){ "--mount",
	    "/bin/sh", "-c", script, NULL }, (const char *[]){ env, NULL });
	ck_assert(h_worker_wait(&f.w, "control_listening", 1, 20000));
	ck_assert(h_worker_wait(&f.w, "consumer_started", f.n, 20000));
	ev = h_worker_events(&f.w, "archive_relayout_deferred", &n);
	ck_assert_int_eq(n, 1);
	ck_assert_int_gt(h_jnum(ev[0], "needed_bytes"), 64 << 20);
	ck_assert_int_lt(h_jnum(ev[0], "free_bytes"), 40 << 20);
	ck_assert_ptr_nonnull(strstr(h_jstr(ev[0], "advice"), "restart"));
	h_events_free(ev, n);
	ck_assert_int_eq(h_worker_count(&f.w, "archive_migrated"), 0);

	/* the old records read as before */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "1", "--payload", NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "error"), "before the upgrade");
	ck_assert_str_eq(h_jstr(j, "payload"), "{\"k\":1}");
	cJSON_Delete(j);
	/* new ones are recorded, a large one whole */
	die_in(&f, 0, 1, "after the deferral");
	memset(big, 'b', BIG);
	big[BIG] = '\0';
	h_publish(f.c, f.exch, f.q[0], big, BIG, "big-on-v9", NULL);
	ck_assert_int_eq(h_reject(f.c, f.q[0], 1, WAIT_MS), 1);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 2, WAIT_MS));
	ck_assert(h_wait_count(f.dlq[0], 0, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "show",
	    "4", "--payload", NULL }), 0);
	ck_assert_str_eq(h_jstr(j, "message_id"), "big-on-v9");
	ck_assert_int_eq(h_jnum(j, "payload_bytes"), BIG);
	ck_assert(strcmp(h_jstr(j, "payload"), big) == 0);
	cJSON_Delete(j);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){ "stats",
	    NULL }), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(j, "total")->valueint, 4);
	cJSON_Delete(j);
	h_rig_stop(&f);
	free(big);
}
END_TEST

/* The worker's stats with RABBITMQ_MANAGEMENT_URL=`mgmt` (NULL: unset):
 * the "traffic" object. Restarts the worker with that setting. */
static const cJSON *
traffic_with(struct h_rig *f, const char *mgmt, cJSON **stats)
{
	char env[256];

	ck_assert_int_eq(h_worker_stop(&f->w, 10000, NULL), 0);
	snprintf(env, sizeof(env), "RABBITMQ_MANAGEMENT_URL=%s", mgmt ? mgmt :
	    "");
	h_worker_start(&f->w, (const char *[]){ "-c", f->cfg, NULL },
	    (const char *[]){ env, NULL });
	ck_assert(h_worker_wait(&f->w, "control_listening", 1, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f->cfg, NULL, stats, (const char *[]){
	    "stats", NULL }), 0);
	return get(*stats, "traffic");
}

/* The row of queue q in traffic.queues, or NULL. */
static const cJSON *
traffic_row(const cJSON *t, const char *q)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, get(t, "queues"))
		if (strcmp(h_jstr(r, "queue"), q) == 0)
			return r;
	return NULL;
}

START_TEST(stats_tell_the_share_of_a_queues_traffic_that_died)
{
	struct h_rig f;
	const cJSON *t, *row = NULL;
	cJSON *j = NULL;
	char url[128], ca[300], user[32], *port, *log;
	int64_t deadline;

	snprintf(ca, sizeof(ca), "tls_ca_cert = \"%s\";", h_tls_ca());
	h_set_broker(h_url(), ca);
	start(&f, NULL);
	/* 10 published by a connection that stays open (the broker counts a
	 * channel's publishes per queue when it collects statistics), 4 of
	 * them rejected into the DLQ, 6 still waiting in the queue */
	die_in(&f, 0, 4, "connect ETIMEDOUT");
	for (int i = 0; i < 6; i++)
		h_publish(f.c, f.exch, f.q[0], "{}", 2, NULL, NULL);
	ck_assert(h_worker_wait(&f.w, "dead_letter", 4, WAIT_MS));

	/* not configured: stats answer, and say why the share is missing */
	t = traffic_with(&f, NULL, &j);
	ck_assert(cJSON_IsFalse(get(t, "reported")));
	ck_assert_str_eq(h_jstr(t, "why"),
	    "rabbitmq.management_url is not set");
	ck_assert_int_eq(h_jnum(j, "total"), 4);
	cJSON_Delete(j);

	/* the broker's statistics reach the management API within seconds */
	t = traffic_with(&f, h_mgmt_url(), &j);
	deadline = h_now_ms() + WAIT_MS;
	while ((row = traffic_row(t, f.q[0])) != NULL &&
	    h_jnum(row, "published") < 10 && h_now_ms() < deadline) {
		cJSON_Delete(j);
		usleep(250000);
		ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j, (const char *[]){
		    "stats", NULL }), 0);
		t = get(j, "traffic");
	}
	ck_assert_msg(cJSON_IsTrue(get(t, "reported")), "%s", h_jstr(t, "why"));
	ck_assert(cJSON_IsTrue(get(t, "windowed")));
	ck_assert_ptr_nonnull(row);
	ck_assert_int_eq(h_jnum(row, "dead_lettered"), 4);
	ck_assert_int_eq(h_jnum(row, "published"), 10);
	ck_assert_double_eq_tol(get(row, "share")->valuedouble, 0.4, 1e-9);
	ck_assert_int_eq(cJSON_GetArraySize(get(t, "queues")), 1);
	ck_assert_int_eq(h_jnum(t, "window_ms"), 3600000);
	cJSON_Delete(j);

	/* the same over https, trusting the CA of rabbitmq.tls_ca_cert */
	t = traffic_with(&f, h_mgmt_tls_url(), &j);
	ck_assert_msg(cJSON_IsTrue(get(t, "reported")), "%s", h_jstr(t, "why"));
	ck_assert_ptr_nonnull(row = traffic_row(t, f.q[0]));
	ck_assert_int_eq(h_jnum(row, "published"), 10);
	cJSON_Delete(j);

	/* refused credentials: named as such, the password nowhere */
	port = strrchr(h_mgmt_url(), ':');
	snprintf(url, sizeof(url), "http://guest:n0t-the-pw@127.0.0.1%s", port);
	t = traffic_with(&f, url, &j);
	ck_assert(cJSON_IsFalse(get(t, "reported")));
	ck_assert_str_eq(h_jstr(t, "why"), "management API at 127.0.0.1 "
	    "answered HTTP 401 (the user of rabbitmq.management_url: its "
	    "credentials were refused)");
	cJSON_Delete(j);
	ck_assert(h_worker_wait(&f.w, "management_failed", 1, WAIT_MS));
	log = h_slurp(f.w.log);
	ck_assert_ptr_null(strstr(log, "n0t-the-pw"));
	free(log);
	log = h_slurp(f.w.err);
	ck_assert_ptr_null(strstr(log, "n0t-the-pw"));
	free(log);

	/* a user the API lets in, but not to this vhost's statistics: what
	 * it lacks is named, as RabbitMQ's answer says */
	snprintf(user, sizeof(user), "mgmt%d", (int)getpid());
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "add_user", user,
	    "pw", NULL }, &log), 0);
	free(log);
	snprintf(url, sizeof(url), "http://%s:pw@127.0.0.1%s", user, port);
	t = traffic_with(&f, url, &j);
	ck_assert_str_eq(h_jstr(t, "why"), "management API at 127.0.0.1 "
	    "answered HTTP 401 (the user of rabbitmq.management_url lacks the "
	    "monitoring tag)");
	cJSON_Delete(j);
	ck_assert_int_eq(h_broker_ctl((const char *[]){ "set_user_tags", user,
	    "monitoring", NULL }, &log), 0);
	free(log);
	t = traffic_with(&f, url, &j);
	ck_assert_str_eq(h_jstr(t, "why"), "management API at 127.0.0.1 "
	    "answered HTTP 401 (the user of rabbitmq.management_url has no "
	    "permissions on vhost /)");
	cJSON_Delete(j);
	h_broker_ctl((const char *[]){ "delete_user", user, NULL }, &log);
	free(log);

	/* nothing listening: stats still answer */
	t = traffic_with(&f, "http://127.0.0.1:1/", &j);
	ck_assert(cJSON_IsFalse(get(t, "reported")));
	ck_assert_str_eq(h_jstr(t, "why"), "management API at 127.0.0.1: "
	    "Couldn't connect to server");
	ck_assert_int_eq(h_jnum(j, "total"), 4);
	cJSON_Delete(j);
	h_rig_stop(&f);
}
END_TEST

/* Writes into `buf` the request `head` (up to an opening quote), `n`
 * bytes of text and its end; returns its length. */
static size_t
text_request(char *buf, const char *head, size_t n)
{
	size_t k = strlen(head);

	memcpy(buf, head, k);
	memset(buf + k, 'a', n);
	memcpy(buf + k + n, "\"}\n", 3);
	return k + n + 3;
}

START_TEST(bad_control_requests_get_clear_errors)
{
	static const char *const texts[][2] = {
		{ "{\"cmd\":\"drop\",\"ids\":[1],\"reason\":\"", "reason" },
		{ "{\"cmd\":\"assign\",\"ids\":[1],\"owner\":\"o\","
		    "\"decision\":\"d\",\"evidence\":\"", "evidence" },
		{ "{\"cmd\":\"replay_plan\",\"ids\":[1],\"reason\":\"",
		    "reason" },
		{ "{\"cmd\":\"replay_claim\",\"ids\":[1],\"reason\":\"r\","
		    "\"evidence\":\"", "evidence" },
	};
	struct h_rig f;
	const char *sock;
	char *big, want[128];
	size_t n = 100 * 1024, i;

	start(&f, NULL);
	sock = h_socket(f.prefix);
	ck_assert_str_eq(raw(sock, "not json\n", 9), "{\"ok\":false,\"code\":"
	    "\"usage\",\"error\":\"a request is one JSON object per line\"}\n");
	ck_assert_str_eq(raw(sock, "{\"cmd\":\"rm -rf\"}\n", 17),
	    "{\"ok\":false,\"code\":\"usage\",\"error\":\"unknown command\"}\n");
	ck_assert_ptr_nonnull(strstr(raw(sock, "{\"cmd\":\"show\",\"id\":\"x\"}\n",
	    24), "\"code\":\"usage\""));
	ck_assert_ptr_nonnull(strstr(raw(sock, "{\"cmd\":\"drop\",\"ids\":[1.5],"
	    "\"reason\":\"r\"}\n", 40), "\"code\":\"usage\""));
	big = malloc(n);
	memset(big, 'a', n);
	ck_assert_ptr_nonnull(strstr(raw(sock, big, n), "request too large"));
	/* a text of 5000 bytes: how long it is, and how long it may be. The
	 * evidence of an assign too, and a replay's reason and evidence (its
	 * plan and its claim) */
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		snprintf(want, sizeof(want), "{\"ok\":false,\"code\":\"usage\","
		    "\"error\":\"'%s' is too long: 5000 bytes, at most 4096\"}\n",
		    texts[i][1]);
		ck_assert_str_eq(raw(sock, big, text_request(big, texts[i][0],
		    5000)), want);
	}
	/* a whole request line past 64 KiB, however fast it came */
	ck_assert_ptr_nonnull(strstr(raw(sock, big, text_request(big,
	    "{\"cmd\":\"ping\",\"pad\":\"", 70000)), "request too large"));
	free(big);
	ck_assert_str_eq(raw(sock, "{\"cmd\":\"ping\"}\n", 15),
	    "{\"ok\":true,\"data\":\"pong\"}\n");
	h_rig_stop(&f);
}
END_TEST

/* The worker with `cfg` and `env` ("K=V") exits 1 at start, its output
 * holding `want`; `env` may be NULL. */
static void
fails_saying(const char *cfg, const char *env, const char *want)
{
	char *out;

	ck_assert_int_eq(h_run((const char *[]){ h_bin("dlq-worker"), "-c",
	    cfg, NULL }, (const char *[]){ env, NULL }, &out), 1);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	free(out);
}

/* An archive path holding something else than an archive (a file, or
 * another program's SQLite database): the worker says so and exits 1,
 * and leaves the file as it was. */
START_TEST(a_file_that_is_not_an_archive_is_refused_untouched)
{
	char prefix[64], q[96], extra[400], *out;
	const char *cfg, *bad;
	sqlite3 *db;
	sqlite3_stmt *st;

	h_name(prefix, sizeof(prefix), "nodb");
	snprintf(q, sizeof(q), "%s_q", prefix);
	bad = h_write_file("notes", "not an archive: someone's notes\n");
	snprintf(extra, sizeof(extra), "archive = { path = \"%s\"; };\n",
	    bad);
	cfg = h_setup(prefix, (const char *[]){ q, NULL }, extra);
	fails_saying(cfg, NULL, "\"error\":\"open: file is not a database\"");
	out = h_slurp(bad);
	ck_assert_str_eq(out, "not an archive: someone's notes\n");
	free(out);

	/* another program's database: not even its journal mode changes */
	bad = h_tmp_path("other-program.db");
	ck_assert_int_eq(sqlite3_open(bad, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE customers (name); "
	    "INSERT INTO customers VALUES ('Anna')", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	snprintf(extra, sizeof(extra), "archive = { path = \"%s\"; };\n",
	    bad);
	cfg = h_setup(prefix, (const char *[]){ q, NULL }, extra);
	fails_saying(cfg, NULL, "\"error\":\"open: not an archive of "
	    "dlq-monitor but another SQLite database (table customers, no "
	    "dead_letters), left as it is\"");
	ck_assert_int_eq(sqlite3_open(bad, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT (SELECT group_concat("
	    "name) FROM sqlite_master), (SELECT count(*) FROM customers), "
	    "journal_mode, user_version FROM pragma_journal_mode, "
	    "pragma_user_version", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "customers");
	ck_assert_int_eq(sqlite3_column_int(st, 1), 1);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 2), "delete");
	ck_assert_int_eq(sqlite3_column_int(st, 3), 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

/* A unix socket listening at `path`; its descriptor. */
static int
listen_at(const char *path)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_ge(fd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	return fd;
}

/* The worker makes its control socket anew at each start, and the only
 * thing it removes for it is a socket no one listens on (a killed
 * worker's). A file at that path (here the archive itself, given by a
 * slip as control.socket) is refused and left whole; at exit the worker
 * removes its own socket only, not one put in its place since (by a
 * worker started after its socket was deleted). */
START_TEST(the_control_socket_replaces_nothing_but_a_stale_socket)
{
	struct h_rig f;
	char env[320], want[600];
	const char *path;
	cJSON *j;
	struct stat st;
	ino_t ino;
	int fd, listed;

	start(&f, NULL);
	die_in(&f, 0, 1, "kept");
	ck_assert(h_worker_wait(&f.w, "dead_letter", 1, WAIT_MS));
	path = h_socket(f.prefix);
	ck_assert_int_eq(unlink(path), 0);
	fd = listen_at(path);
	h_rig_stop(&f);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ino = st.st_ino;
	/* one someone answers on (a second worker given the same path)
	 * is not taken: that worker does not start */
	snprintf(want, sizeof(want), "\"event\":\"control_failed\",\"socket\":"
	    "\"%s\",\"error\":\"Address already in use: another process "
	    "answers on it (a second dlq-worker with the same "
	    "control.socket?)\"", path);
	fails_saying(f.cfg, NULL, want);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_int_eq(st.st_ino, ino);
	close(fd);		/* now stale: the next start replaces it */

	snprintf(env, sizeof(env), "DLQ_CONTROL_SOCKET=%s", f.db);
	snprintf(want, sizeof(want), "\"event\":\"control_failed\",\"socket\":"
	    "\"%s\",\"error\":\"the path exists and is not a socket (left "
	    "as it is: is control.socket right?)\"", f.db);
	fails_saying(f.cfg, env, want);
	ck_assert_int_eq(lstat(f.db, &st), 0);
	ck_assert(S_ISREG(st.st_mode));

	h_worker_start(&f.w, (const char *[]){ "-c", f.cfg, NULL }, NULL);
	ck_assert(h_worker_wait(&f.w, "worker_started", 1, WAIT_MS));
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, &j,
	    (const char *[]){ "list", NULL }), 0);
	listed = cJSON_GetArraySize(j);
	cJSON_Delete(j);
	ck_assert_int_eq(listed, 1);	/* the archive kept its record */
	ck_assert_int_eq(h_worker_stop(&f.w, WAIT_MS, NULL), 0);
	ck_assert_int_eq(lstat(path, &st), -1);	/* its own: removed */
}
END_TEST

/* The control socket is made 0666 (the roles are the access control),
 * whatever the umask, without a chmod at its path that a link put there
 * could redirect: nothing of the private directory it is made in is
 * left. A directory every user can write to (/tmp, a 1777 one) is
 * refused: anyone could put their own socket where dlqctl looks. */
START_TEST(the_control_socket_is_0666_and_never_in_a_directory_all_can_write)
{
	char prefix[64], q[96], env[300], want[600], dir[200];
	const char *cfg, *open_dir;
	struct h_worker w;
	struct dirent *e;
	struct stat st;
	mode_t old_mask;
	DIR *d;
	int entries = 0;

	h_name(prefix, sizeof(prefix), "sockmode");
	snprintf(q, sizeof(q), "%s_q", prefix);
	cfg = h_setup(prefix, (const char *[]){ q, NULL }, NULL);
	snprintf(dir, sizeof(dir), "%s", h_tmp_path("sockdir"));
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	snprintf(env, sizeof(env), "DLQ_CONTROL_SOCKET=%s/ctl.sock", dir);
	old_mask = umask(077);
	h_worker_start(&w, (const char *[]){ "-c", cfg, NULL },
	    (const char *[]){ env, NULL });
	umask(old_mask);
	ck_assert(h_worker_wait(&w, "control_listening", 1, WAIT_MS));
	snprintf(want, sizeof(want), "%s/ctl.sock", dir);
	ck_assert_int_eq(lstat(want, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0666);
	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((e = readdir(d)) != NULL)
		entries += strcmp(e->d_name, ".") != 0 &&
		    strcmp(e->d_name, "..") != 0;
	closedir(d);
	ck_assert_int_eq(entries, 1);	/* the socket alone */
	ck_assert_int_eq(h_worker_stop(&w, WAIT_MS, NULL), 0);

	open_dir = h_tmp_path("open-to-all");
	ck_assert_int_eq(mkdir(open_dir, 0755), 0);
	ck_assert_int_eq(chmod(open_dir, 01777), 0);
	snprintf(env, sizeof(env), "DLQ_CONTROL_SOCKET=%s/ctl.sock", open_dir);
	snprintf(want, sizeof(want), "\"event\":\"control_failed\",\"socket\":"
	    "\"%s/ctl.sock\",\"error\":\"its directory %s is writable by every "
	    "user: put the socket in a directory only the worker's user can "
	    "write", open_dir, open_dir);
	fails_saying(cfg, env, want);
	snprintf(want, sizeof(want), "%s/ctl.sock", open_dir);
	ck_assert_int_eq(lstat(want, &st), -1);
}
END_TEST

/* A fresh machine lacks the directories of the archive and the control
 * socket: the worker makes them. One it cannot make (a user who may
 * not write /var/lib or /run; here a file in the way, which root meets
 * too) is named, rather than the file it was to hold. */
START_TEST(a_directory_that_cannot_be_made_is_named)
{
	char prefix[64], q[96], env[2][480], want[480], extra[400];
	const char *cfg, *file;
	struct h_worker w;
	struct stat st;
	mode_t old_mask;

	h_name(prefix, sizeof(prefix), "nodir");
	snprintf(q, sizeof(q), "%s_q", prefix);
	file = h_write_file("in-the-way", "a file, not a directory\n");
	snprintf(extra, sizeof(extra), "archive = { path = \"%s.d/a/b/x.db\"; "
	    "};\n", file);
	cfg = h_setup(prefix, (const char *[]){ q, NULL }, extra);
	/* missing directories, however deep, are made: the archive's for
	 * the worker and its group, the socket's for all who may ask, even
	 * under the umask of a service that hides its files (UMask=0077),
	 * which the worker inherits */
	snprintf(env[0], sizeof(env[0]), "DLQ_CONTROL_SOCKET=%s.d/c/d/ctl.sock",
	    file);
	old_mask = umask(077);
	h_worker_start(&w, (const char *[]){ "-c", cfg, NULL },
	    (const char *[]){ env[0], NULL });
	umask(old_mask);
	ck_assert(h_worker_wait(&w, "worker_started", 1, WAIT_MS));
	ck_assert_int_eq(h_worker_stop(&w, WAIT_MS, NULL), 0);
	snprintf(want, sizeof(want), "%s.d/a/b", file);
	ck_assert_int_eq(stat(want, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0750);
	snprintf(want, sizeof(want), "%s.d/c/d/ctl.sock", file);
	ck_assert_int_eq(stat(want, &st), -1);	/* removed at exit */
	snprintf(want, sizeof(want), "%s.d/c/d", file);
	ck_assert_int_eq(stat(want, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0755);
	snprintf(env[0], sizeof(env[0]), "DLQ_CONTROL_SOCKET=%s/sub/ctl.sock",
	    file);
	snprintf(want, sizeof(want), "\"event\":\"control_failed\",\"socket\":"
	    "\"%s/sub/ctl.sock\",\"error\":\"cannot create the directory "
	    "%s/sub (Not a directory)\"", file, file);
	fails_saying(cfg, env[0], want);
	snprintf(env[1], sizeof(env[1]), "DLQ_ARCHIVE_PATH=%s/sub/x.db", file);
	snprintf(want, sizeof(want), "\"event\":\"archive_open_failed\","
	    "\"path\":\"%s/sub/x.db\",\"error\":\"open: cannot create the "
	    "directory %s/sub (Not a directory)\"", file, file);
	fails_saying(cfg, env[1], want);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("archive");
	TCase *tc = tcase_create("cases");
	TCase *file = tcase_create("sqlite_file");

	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, every_property_and_header_round_trips);
	tcase_add_test(tc, bytes_that_are_not_utf8_answer_valid_json);
	tcase_add_test(tc, a_consumer_that_comes_later_is_found_and_announced);
	tcase_add_test(tc, by_cause_gathers_one_failure_in_several_queues);
	tcase_add_test(tc,
	    a_selection_is_dropped_or_assigned_by_queue_and_class);
	tcase_add_test(tc, a_reopen_by_selection_passes_over_what_stays_closed);
	tcase_add_test(tc, roles_decide_who_sees_payloads_and_who_drops);
	tcase_add_test(tc, purge_drops_payloads_and_keeps_records);
	tcase_add_test(tc, a_user_in_many_groups_has_the_role_of_the_last);
	tcase_add_test(tc, bad_control_requests_get_clear_errors);
	tcase_add_test(tc, stats_tell_the_share_of_a_queues_traffic_that_died);
	tcase_add_test(tc, new_rules_class_the_open_records_again);
	suite_add_tcase(s, tc);
	/* the SQLite file itself: read, damaged, locked, migrated or
	 * filled (make check-postgres-archive leaves them out) */
	tcase_set_tags(file, "sqlite");
	tcase_set_timeout(file, 180);
	tcase_add_test(file,
	    a_file_that_is_not_an_archive_is_refused_untouched);
	tcase_add_test(file,
	    the_tallies_count_what_the_records_hold_after_every_change);
	tcase_add_test(file, a_directory_that_cannot_be_made_is_named);
	tcase_add_test(file,
	    the_control_socket_is_0666_and_never_in_a_directory_all_can_write);
	tcase_add_test(file,
	    the_control_socket_replaces_nothing_but_a_stale_socket);
	tcase_add_test(file, sigkill_mid_drain_archives_each_exactly_once);
	tcase_add_test(file,
	    a_crash_between_commit_and_ack_makes_no_second_record);
	tcase_add_test(file,
	    an_upgraded_archive_recognises_redeliveries_of_its_old_records);
	tcase_add_test(file,
	    an_unwritable_archive_leaves_deliveries_in_the_queue);
	tcase_add_test(file,
	    a_long_archive_outage_returns_each_dead_letter_once);
	tcase_add_test(file, a_stop_does_not_wait_out_a_locked_archive);
	tcase_add_test(file, an_archive_outage_is_one_line_in_the_digest);
	tcase_add_test(file,
	    an_archive_the_disk_refuses_leaves_deliveries_in_the_queue);
	tcase_add_test(file, an_archive_deleted_under_the_worker_loses_nothing);
	tcase_add_test(file, a_damaged_archive_is_named_and_loses_nothing);
	tcase_add_test(file,
	    a_second_worker_on_the_same_dlqs_is_told_it_shares_them);
	tcase_add_test(file, asking_between_batches_loses_no_delivery);
	tcase_add_test(file,
	    a_second_worker_on_the_same_archive_waits_for_the_first);
	tcase_add_test(file, a_second_worker_leaves_an_archive_the_first_keeps);
	tcase_add_test(file, triage_commands_answer_what_the_archive_holds);
	tcase_add_test(file,
	    an_interrupted_drop_finishes_its_chunk_and_says_what_is_left);
	tcase_add_test(file, a_purge_in_chunks_says_how_far_it_is);
	tcase_add_test(file, retention_purges_old_resolved_payloads_at_start);
	tcase_add_test(file, warn_level_archives_without_dead_letter_lines);
	tcase_add_test(file, connections_left_open_lock_no_one_out);
	tcase_add_test(file,
	    a_version_1_archive_is_migrated_and_keeps_its_records);
	tcase_add_test(file, an_upgrade_keeps_one_cause_in_one_group);
	tcase_add_test(file,
	    an_archive_holding_a_fingerprint_twice_is_migrated);
	tcase_add_test(file, a_version_9_archive_gets_its_payloads_last);
	tcase_add_test(file,
	    an_archive_without_room_for_the_new_layout_keeps_the_old_one);
	suite_add_tcase(s, file);
	return s;
}

DLQ_CHECK_MAIN(suite)
