/* check_termtext.c - what dlqctl prints to a terminal of text that came
 * from a message, a header or another user. Every such field carries an
 * escape sequence (CSI, an OSC 8 link, BEL, a backspace, a C1 CSI and a
 * right-to-left override); none of those bytes may reach stdout raw, in
 * any command an operator runs on it. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "harness.h"

#define WAIT_MS	20000

/* What a hostile producer or operator writes. */
#define HOSTILE	"A\x1b[2J\x1b]8;;http://evil.invalid/\x07link\x1b]8;;\x07" \
	"\x08\xc2\x9b" "31m\xe2\x80\xaeZ"

/* A message with HOSTILE in every property and header a record keeps,
 * and an x-death whose reason, queue, exchange and routing key are
 * HOSTILE, put into `queue` as `id`; with `replay_of` > 0, an
 * x-replay-of header that puts it in that record's lineage. */
static void
publish_hostile(amqp_connection_state_t c, const char *queue,
    const char *id, int64_t replay_of)
{
	amqp_basic_properties_t p;
	amqp_table_entry_t x[5], h[4];
	amqp_field_value_t rk, entry;

	rk.kind = AMQP_FIELD_KIND_UTF8;
	rk.value.bytes = amqp_cstring_bytes(HOSTILE);
	x[0] = h_str_entry("queue", HOSTILE);
	x[1] = h_str_entry("reason", HOSTILE);
	x[2] = h_str_entry("exchange", HOSTILE);
	x[3].key = amqp_cstring_bytes("count");
	x[3].value.kind = AMQP_FIELD_KIND_I64;
	x[3].value.value.i64 = 1;
	x[4].key = amqp_cstring_bytes("routing-keys");
	x[4].value.kind = AMQP_FIELD_KIND_ARRAY;
	x[4].value.value.array = (amqp_array_t){ 1, &rk };
	entry.kind = AMQP_FIELD_KIND_TABLE;
	entry.value.table = (amqp_table_t){ 5, x };
	h[0].key = amqp_cstring_bytes("x-death");
	h[0].value.kind = AMQP_FIELD_KIND_ARRAY;
	h[0].value.value.array = (amqp_array_t){ 1, &entry };
	h[1] = h_str_entry("x-error", "timeout " HOSTILE);
	h[2] = h_str_entry("tenant" HOSTILE, HOSTILE);
	h[3].key = amqp_cstring_bytes("x-replay-of");
	h[3].value.kind = AMQP_FIELD_KIND_I64;
	h[3].value.value.i64 = replay_of;
	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_HEADERS_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG |
	    AMQP_BASIC_CORRELATION_ID_FLAG | AMQP_BASIC_TYPE_FLAG |
	    AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_REPLY_TO_FLAG |
	    AMQP_BASIC_CONTENT_TYPE_FLAG;
	p.headers = (amqp_table_t){ replay_of > 0 ? 4 : 3, h };
	p.message_id = amqp_cstring_bytes(id);
	p.correlation_id = amqp_cstring_bytes(HOSTILE);
	p.type = amqp_cstring_bytes(HOSTILE);
	p.app_id = amqp_cstring_bytes(HOSTILE);
	p.reply_to = amqp_cstring_bytes(HOSTILE);
	p.content_type = amqp_cstring_bytes("text/plain");
	ck_assert_int_eq(amqp_basic_publish(c, 1, amqp_empty_bytes,
	    amqp_cstring_bytes(queue), 0, 0, &p,
	    amqp_cstring_bytes("note: " HOSTILE)), 0);
}

/* dlqctl ARGS on a terminal's behalf (no --json): its exit status, and
 * no raw control byte, C1 control or direction override in its stdout
 * or stderr. */
static int
run_clean(const char *cfg, const char *const *args)
{
	static const char *const bad[] = { "\x1b", "\x07", "\x08",
	    "\xc2\x9b", "\xe2\x80\xae" };
	const char *argv[24] = { h_bin("dlqctl"), "-c", cfg };
	char *out, *err;
	size_t i, k;
	int rc;

	for (i = 0; args[i] != NULL && i + 4 < 24; i++)
		argv[i + 3] = args[i];
	argv[i + 3] = NULL;
	rc = h_run_split(argv, NULL, &out, &err);
	for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_msg(strstr(out, bad[k]) == NULL, "dlqctl %s: byte "
		    "0x%02x raw on stdout", args[0], (unsigned char)bad[k][0]);
		ck_assert_msg(strstr(err, bad[k]) == NULL, "dlqctl %s: byte "
		    "0x%02x raw on stderr", args[0], (unsigned char)bad[k][0]);
	}
	/* and what was escaped is still there to read */
	ck_assert_msg(rc != 0 || strstr(out, "\\e[2J") != NULL ||
	    strstr(out, "\\u001b[2J") != NULL || strcmp(args[0], "stats") == 0,
	    "dlqctl %s printed none of it:\n%s", args[0], out);
	free(out);
	free(err);
	return rc;
}

START_TEST(hostile_text_reaches_no_terminal_raw)
{
	struct h_rig f;
	char mid[160], id[24], id2[24], w[160], wdlq[170];
	amqp_table_entry_t args[2];
	amqp_table_t at = { 2, args };

	h_rig_name(&f, "tt", 1);
	h_rig_setup(&f, NULL);
	h_rig_start(&f);
	snprintf(mid, sizeof(mid), "%s-" HOSTILE, f.prefix);
	publish_hostile(f.c, f.dlq[0], mid, 0);
	snprintf(id, sizeof(id), "%lld", (long long)h_archived(&f.w, mid, 1,
	    WAIT_MS));
	/* its second death: show gives the lineage, each death's reason */
	publish_hostile(f.c, f.dlq[0], mid, atoll(id));
	snprintf(id2, sizeof(id2), "%lld", (long long)h_archived(&f.w, mid, 2,
	    WAIT_MS));
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "show", id2,
	    NULL }), 0);

	/* what operators add: an owner, a decision, evidence, a reason */
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "assign", id, "--owner", "ops" HOSTILE, "--decision", HOSTILE,
	    "--evidence", HOSTILE, NULL }), 0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "replay", id,
	    "--reason", HOSTILE, NULL }), 0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "show", id,
	    NULL }), 0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "show", id,
	    "--payload", NULL }), 0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "list", NULL }),
	    0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "groups", NULL }),
	    0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "groups",
	    "--by-cause", NULL }), 0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "stats", NULL }),
	    0);
	ck_assert_int_eq(h_dlqctl(f.cfg, NULL, NULL, (const char *[]){
	    "drop", id, "--reason", HOSTILE, NULL }), 0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "audit", NULL }),
	    0);
	ck_assert_int_eq(run_clean(f.cfg, (const char *[]){ "show", id,
	    NULL }), 0);
	/* refused: the policy's reason names what the message said */
	run_clean(f.cfg, (const char *[]){ "replay", id, "--execute",
	    "--reason", HOSTILE, NULL });

	/* a DLQ the worker does not monitor, read by replay --from-queue */
	snprintf(w, sizeof(w), "%s_loose", f.prefix);
	snprintf(wdlq, sizeof(wdlq), "%s.dlq", w);
	ck_assert_ptr_nonnull(amqp_queue_declare(f.c, 1,
	    amqp_cstring_bytes(wdlq), 0, 1, 0, 0, amqp_empty_table));
	args[0] = h_str_entry("x-dead-letter-exchange", "");
	args[1] = h_str_entry("x-dead-letter-routing-key", wdlq);
	ck_assert_ptr_nonnull(amqp_queue_declare(f.c, 1, amqp_cstring_bytes(w),
	    0, 1, 0, 0, at));
	publish_hostile(f.c, wdlq, mid, 0);
	ck_assert(h_wait_count(wdlq, 1, WAIT_MS));
	run_clean(f.cfg, (const char *[]){ "replay", "--from-queue", wdlq,
	    NULL });
	ck_assert_int_eq(h_count(wdlq), 1);	/* a dry run takes nothing */
	h_rig_stop(&f);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("termtext");
	TCase *tc = tcase_create("termtext");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, hostile_text_reaches_no_terminal_raw);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
