/* check_archive.c - what a record keeps and how it is read back: a
 * payload of any size byte for byte, headers stored once (as the AMQP
 * table) and rendered as JSON on reading, hints stored once and referred
 * to by id, also across a rolled-back batch;
 * numbers kept across restarts, the signatures held and the backlog of
 * unannounced dead letters read back for the digest; a commit into a
 * file, WAL or -shm gone from its path fails.
 * A real SQLite file in a temporary directory; no broker. */
#include <check.h>
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_main.h"
#include "alertbacklog.h"
#include "archive.h"
#include "sqlite.h"
#include "cases.h"
#include "causes.h"
#include "classify.h"
#include "classrefresh.h"
#include "deadletter.h"
#include "log.h"
#include "signature.h"
#include "sigrefresh.h"

static char dir[64], path[96];
static struct dlq_config cfg;
static struct dlq_archive *a;
static amqp_basic_properties_t props;
static amqp_table_entry_t hdr[4];
static struct dlq_dead_letter d;
static struct dlq_buf xdeath;

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/dlq-check-archive-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/archive.db", dir);
	memset(&cfg, 0, sizeof(cfg));
	cfg.archive_path = path;
	cfg.busy_timeout_ms = 1000;
	ck_assert_ptr_nonnull(a = dlq_archive_open(&cfg));
	dlq_buf_init(&xdeath);
	dlq_buf_adds(&xdeath, "[]");
}

static void
teardown(void)
{
	char cmd[128];

	dlq_archive_close(a);
	dlq_buf_release(&xdeath);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Archives a dead letter with this message id (the fingerprint), hint
 * and body, in the caller's transaction; its id. Headers `tenant` and
 * `attempt`; `counted` adds x-retry-count 3, x-delivery-count 2 and a
 * replay of record 7; none at all without `headers`. */
static int64_t
put_as(const char *message_id, const char *hint, bool headers, bool counted,
    amqp_bytes_t body)
{
	static const struct dlq_str dlq = { "orders.dlq", 10 };
	static const struct dlq_str rk = { "orders", 6 };
	struct dlq_record r;
	bool dup;

	memset(&props, 0, sizeof(props));
	props._flags = AMQP_BASIC_MESSAGE_ID_FLAG |
	    (headers ? AMQP_BASIC_HEADERS_FLAG : 0);
	props.message_id = amqp_cstring_bytes(message_id);
	hdr[0].key = amqp_cstring_bytes("tenant");
	hdr[0].value.kind = AMQP_FIELD_KIND_UTF8;
	hdr[0].value.value.bytes = amqp_cstring_bytes("acme");
	hdr[1].key = amqp_cstring_bytes("attempt");
	hdr[1].value.kind = AMQP_FIELD_KIND_I16;
	hdr[1].value.value.i16 = 7;
	hdr[2].key = amqp_cstring_bytes("x-retry-count");
	hdr[2].value.kind = AMQP_FIELD_KIND_I32;
	hdr[2].value.value.i32 = 3;
	hdr[3].key = amqp_cstring_bytes("x-delivery-count");
	hdr[3].value.kind = AMQP_FIELD_KIND_I32;
	hdr[3].value.value.i32 = 2;
	props.headers.entries = hdr;
	props.headers.num_entries = counted ? 4 : 2;
	dlq_deadletter_decode(&d, &props, body, dlq, rk, NULL);
	memset(&r, 0, sizeof(r));
	r.d = &d;
	r.xdeath_json = &xdeath;
	r.queue = "orders";
	r.reason = "rejected";
	r.error = "";
	r.class = "unknown";
	r.signature = "000000000000";
	r.hint = hint;
	r.received_ms = 1;
	r.replay_of = counted ? 7 : 0;
	r.replay_count = counted ? 1 : 0;
	return dlq_archive_put(a, &r, &dup);
}

static int64_t
put(const char *message_id, const char *hint)
{
	return put_as(message_id, hint, true, false, amqp_cstring_bytes("{}"));
}

/* One text column of record `id`, as the case queries read it; static. */
static const char *
column(const char *expr, int64_t id)
{
	static char out[256];
	sqlite3_stmt *st;
	char sql[256];

	snprintf(sql, sizeof(sql), "SELECT %s FROM dead_letters d WHERE"
	    " id = ?1", expr);
	ck_assert_int_eq(sqlite3_prepare_v2(dlq_archive_db(a), sql, -1, &st,
	    NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	snprintf(out, sizeof(out), "%s", sqlite3_column_type(st, 0) ==
	    SQLITE_NULL ? "(null)" : (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return out;
}

static int
hint_rows(void)
{
	sqlite3_stmt *st;
	int n;

	ck_assert_int_eq(sqlite3_prepare_v2(dlq_archive_db(a),
	    "SELECT count(*) FROM hints", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

#define HINT	"COALESCE(hint, (SELECT text FROM hints WHERE id = d.hint_id))"

START_TEST(headers_are_stored_once_and_read_as_json)
{
	int64_t id;

	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(id = put("m-1", "Retry later."), 0);
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert_str_eq(column("headers_json", id), "(null)");
	ck_assert_str_eq(column("typeof(headers_amqp)", id), "blob");
	ck_assert_str_eq(column("dlq_headers_json(headers_amqp)", id),
	    "{\"tenant\":\"acme\",\"attempt\":7}");
	/* purged, or bytes that are not a table: no headers, no error */
	ck_assert_str_eq(column("dlq_headers_json(NULL)", id), "(null)");
	ck_assert_str_eq(column("dlq_headers_json(X'00000009FF')", id),
	    "(null)");
	ck_assert_str_eq(column("dlq_headers_json('text')", id), "(null)");
}
END_TEST

/* What one dead letter has and the next lacks is NULL in the second
 * record, not carried over from the first. */
START_TEST(what_a_dead_letter_lacks_is_null_in_its_record)
{
	int64_t full, bare;

	ck_assert_int_eq(dlq_archive_begin(a), 0);
	full = put_as("m-1", "Retry later.", true, true,
	    amqp_cstring_bytes("{}"));
	bare = put_as("m-2", NULL, false, false, amqp_cstring_bytes("{}"));
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert_str_eq(column("retry_count", full), "3");
	ck_assert_str_eq(column("delivery_count", full), "2");
	ck_assert_str_eq(column("replay_of", full), "7");
	ck_assert_str_eq(column("replay_count", full), "1");
	ck_assert_str_eq(column("typeof(headers_amqp)", full), "blob");
	ck_assert_str_eq(column("typeof(hint_id)", full), "integer");
	ck_assert_str_eq(column("headers_amqp", bare), "(null)");
	ck_assert_str_eq(column("retry_count", bare), "(null)");
	ck_assert_str_eq(column("delivery_count", bare), "(null)");
	ck_assert_str_eq(column("replay_of", bare), "(null)");
	ck_assert_str_eq(column("replay_count", bare), "0");
	ck_assert_str_eq(column("hint_id", bare), "(null)");
	ck_assert_str_eq(column("x_death", bare), "[]");
	ck_assert_str_eq(column("reason", bare), "rejected");
	ck_assert_str_eq(column("error", bare), "");
	ck_assert_str_eq(column("message_id", bare), "m-2");
}
END_TEST

/* A payload is stored byte for byte whatever its size, below and from
 * 1 MiB on, where it is written into the record after the insert. */
START_TEST(a_payload_of_any_size_is_stored_whole)
{
	static const size_t sizes[] = { 0, 100, (1 << 20) - 1, 1 << 20,
	    (3 << 20) + 5 };
	unsigned char *body = malloc(sizes[4]);
	sqlite3_stmt *st;
	char id[16];
	int64_t rec[5];
	size_t i, k;

	for (k = 0; k < sizes[4]; k++)
		body[k] = (unsigned char)(k * 31 % 251);	/* NULs too */
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	for (i = 0; i < 5; i++) {
		snprintf(id, sizeof(id), "size-%zu", i);
		body[0] = (unsigned char)i;	/* five fingerprints */
		rec[i] = put_as(id, NULL, false, false,
		    (amqp_bytes_t){ sizes[i], body });
		ck_assert_int_gt(rec[i], 0);
	}
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert_int_eq(sqlite3_prepare_v2(dlq_archive_db(a), "SELECT"
	    " payload, payload_bytes FROM dead_letters WHERE id = ?1", -1, &st,
	    NULL), SQLITE_OK);
	for (i = 0; i < 5; i++) {
		body[0] = (unsigned char)i;
		sqlite3_bind_int64(st, 1, rec[i]);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_int_eq(sqlite3_column_bytes(st, 0), (int)sizes[i]);
		ck_assert_int_eq(sqlite3_column_int64(st, 1), (int64_t)sizes[i]);
		ck_assert(sizes[i] == 0 || memcmp(sqlite3_column_blob(st, 0),
		    body, sizes[i]) == 0);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	free(body);
}
END_TEST

START_TEST(a_hint_is_stored_once_and_referred_to)
{
	int64_t id[3];

	ck_assert_int_eq(dlq_archive_begin(a), 0);
	id[0] = put("m-1", "Retry later.");
	id[1] = put("m-2", "Fix the payload.");
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	id[2] = put("m-3", "Retry later.");
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert_int_eq(hint_rows(), 2);
	ck_assert_str_eq(column("hint", id[0]), "(null)");
	ck_assert_str_eq(column(HINT, id[0]), "Retry later.");
	ck_assert_str_eq(column(HINT, id[1]), "Fix the payload.");
	ck_assert_str_eq(column(HINT, id[2]), "Retry later.");
	ck_assert_str_eq(column("hint_id", id[0]), column("hint_id", id[2]));
}
END_TEST

/* A batch that added a new hint is rolled back (the archive could not be
 * written): the hint's row is gone, and the id it had is given to the
 * next new hint. A record of the first hint must not point to it. */
START_TEST(a_hint_of_a_rolled_back_batch_is_not_remembered)
{
	int64_t id;

	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(put("m-1", "Retry later."), 0);
	dlq_archive_rollback(a);
	ck_assert_int_eq(hint_rows(), 0);
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(put("m-2", "Fix the payload."), 0);
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(id = put("m-1", "Retry later."), 0);
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert_str_eq(column(HINT, id), "Retry later.");
	ck_assert_int_eq(hint_rows(), 2);
}
END_TEST

START_TEST(a_record_without_a_hint_has_none)
{
	int64_t id;

	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(id = put("m-1", NULL), 0);
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert_str_eq(column(HINT, id), "(null)");
	ck_assert_int_eq(hint_rows(), 0);
}
END_TEST

/* A commit into a file that is no longer at the archive's path fails,
 * so its deliveries are not acked; a file moved back is fine again. */
START_TEST(a_commit_into_a_file_gone_from_its_path_fails)
{
	char moved[128];

	ck_assert(!dlq_archive_moved(a));
	snprintf(moved, sizeof(moved), "%s/elsewhere.db", dir);
	ck_assert_int_eq(rename(path, moved), 0);
	ck_assert(dlq_archive_moved(a));
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(put("m-1", NULL), 0);
	ck_assert_int_eq(dlq_archive_commit(a), -1);
	ck_assert_ptr_nonnull(strstr(dlq_archive_errmsg(a),
	    "deleted or replaced while open"));
	ck_assert_int_eq(rename(moved, path), 0);
	ck_assert(!dlq_archive_moved(a));
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(put("m-2", NULL), 0);
	ck_assert_int_eq(dlq_archive_commit(a), 0);
}
END_TEST

/* After a commit, the file at path + `suffix` is deleted: the archive
 * says it moved, and the next commit fails as not durable. */
static void
commit_fails_without(const char *suffix)
{
	char side[128];

	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(put("m-1", NULL), 0);
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	ck_assert(!dlq_archive_moved(a));
	snprintf(side, sizeof(side), "%s%s", path, suffix);
	ck_assert_int_eq(unlink(side), 0);
	ck_assert(dlq_archive_moved(a));
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(put("m-2", NULL), 0);
	ck_assert_int_eq(dlq_archive_commit(a), -1);
	ck_assert_ptr_nonnull(strstr(dlq_archive_errmsg(a),
	    "deleted or replaced while open"));
}

/* Without its WAL, what was not checkpointed yet is gone at a crash. */
START_TEST(a_commit_into_a_wal_gone_from_its_path_fails)
{
	commit_fails_without("-wal");
}
END_TEST

/* Without it, a backup opening the archive would make its own. */
START_TEST(a_commit_with_its_shm_gone_from_its_path_fails)
{
	commit_fails_without("-shm");
}
END_TEST

/* What the worker keeps across restarts (a webhook's last digest time)
 * is set, replaced, and there for the next handle. */
START_TEST(a_kept_number_survives_a_new_handle)
{
	int64_t v = -1;

	ck_assert_int_eq(dlq_archive_meta_get(a, "alert_sent:ab", &v), 0);
	ck_assert_int_eq(v, -1);
	ck_assert_int_eq(dlq_archive_meta_set(a, "alert_sent:ab", 42), 0);
	ck_assert_int_eq(dlq_archive_meta_set(a, "alert_sent:ab",
	    1764496800123), 0);
	ck_assert_int_eq(dlq_archive_meta_set(a, "alert_sent:cd", 7), 0);
	dlq_archive_close(a);
	ck_assert_ptr_nonnull(a = dlq_archive_open(&cfg));
	ck_assert_int_eq(dlq_archive_meta_get(a, "alert_sent:ab", &v), 1);
	ck_assert_int_eq(v, 1764496800123);
	ck_assert_int_eq(dlq_archive_meta_get(a, "alert_sent:cd", &v), 1);
	ck_assert_int_eq(v, 7);
}
END_TEST

static void
collect_signature(void *arg, const char *signature)
{
	dlq_buf_printf(arg, "%s;", signature);
}

/* Records "m-0" .. "m-<n-1>", committed. */
static void
put_many(int n)
{
	char id[16];
	int i;

	ck_assert_int_eq(dlq_archive_begin(a), 0);
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "m-%d", i);
		ck_assert_int_gt(put(id, NULL), 0);
	}
	ck_assert_int_eq(dlq_archive_commit(a), 0);
}

/* Each signature once, in order, however many records share it. */
START_TEST(signatures_are_listed_once_each)
{
	struct dlq_buf seen;

	put_many(5);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "UPDATE dead_letters"
	    " SET signature = CASE message_id WHEN 'm-1' THEN 'ffffffffffff'"
	    " WHEN 'm-3' THEN '00000000000b' ELSE signature END", NULL, NULL,
	    NULL), SQLITE_OK);
	dlq_buf_init(&seen);
	ck_assert_int_eq(dlq_archive_signatures(a, 100, collect_signature,
	    &seen), 3);
	ck_assert_str_eq(seen.data, "000000000000;00000000000b;ffffffffffff;");
	dlq_buf_reset(&seen);
	ck_assert_int_eq(dlq_archive_signatures(a, 2, collect_signature,
	    &seen), 2);
	ck_assert_str_eq(seen.data, "000000000000;00000000000b;");
	dlq_buf_release(&seen);
}
END_TEST

/* The group of `dg` with `count` dead letters; fails when none. */
static const struct dlq_group *
group_of(const struct dlq_digest *dg, uint64_t count)
{
	size_t i;

	for (i = 0; i < dg->n; i++)
		if (dg->groups[i].count == count)
			return &dg->groups[i];
	ck_abort_msg("no group of %llu", (unsigned long long)count);
	return NULL;
}

/* The group of `sig` in a groups answer, as "count unresolved first last
 * sample" ("" when absent). */
static const char *
group_row(const struct dlq_buf *answer, const char *sig)
{
	static char row[128];
	cJSON *j = cJSON_Parse(answer->data), *g;

	row[0] = '\0';
	cJSON_ArrayForEach(g, j)
		if (strcmp(cJSON_GetObjectItem(g, "signature")->valuestring,
		    sig) == 0)
			snprintf(row, sizeof(row), "%d %d %d %d %d",
			    cJSON_GetObjectItem(g, "count")->valueint,
			    cJSON_GetObjectItem(g, "unresolved")->valueint,
			    cJSON_GetObjectItem(g, "first_seen")->valueint,
			    cJSON_GetObjectItem(g, "last_seen")->valueint,
			    cJSON_GetObjectItem(g, "sample_id")->valueint);
	cJSON_Delete(j);
	return row;
}

/* All time, or the records received since a time: "what broke in the
 * last hour" is not buried under last week's large group, and a failure
 * that began before the window says so by its first seen. */
START_TEST(groups_count_all_time_or_since_a_time)
{
	struct dlq_buf out;
	cJSON *j;

	put_many(6);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "UPDATE dead_letters"
	    " SET received_at = CASE WHEN id <= 2 THEN 1000 ELSE 5000 END,"
	    " signature = CASE WHEN id <= 4 THEN 'aaaaaaaaaaaa'"
	    " ELSE 'bbbbbbbbbbbb' END,"
	    " status = CASE id WHEN 3 THEN 'discarded' ELSE status END",
	    NULL, NULL, NULL), SQLITE_OK);
	dlq_buf_init(&out);
	ck_assert_int_eq(dlq_cases_groups(a, NULL, NULL, 0, 10,
	    &out), 0);
	ck_assert_str_eq(group_row(&out, "aaaaaaaaaaaa"), "4 3 1000 5000 1");
	ck_assert_str_eq(group_row(&out, "bbbbbbbbbbbb"), "2 2 5000 5000 5");
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_groups(a, NULL, NULL, 3000,
	    10, &out), 0);
	ck_assert_str_eq(group_row(&out, "aaaaaaaaaaaa"), "2 1 1000 5000 3");
	ck_assert_str_eq(group_row(&out, "bbbbbbbbbbbb"), "2 2 5000 5000 5");
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_groups(a, NULL, NULL, 3000,
	    1, &out), 0);
	ck_assert_int_eq(cJSON_GetArraySize(j = cJSON_Parse(out.data)), 1);
	cJSON_Delete(j);
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_groups(a, NULL, NULL, 6000,
	    10, &out), 0);
	ck_assert_str_eq(out.data, "[]");
	dlq_buf_release(&out);
}
END_TEST

/* What dlq_causes_list() answers: the causes, the largest first, as
 * "count unresolved first last sample error: queue=count/unresolved
 * signature,...|...", or "refused: " and why. */
static const char *
causes_of(const char *queue, const char *class, int64_t since_ms,
    int64_t limit, size_t max_groups)
{
	static char rows[512];
	struct dlq_buf answer;
	cJSON *j, *c, *gs, *g;
	size_t n = 0;
	int rc;

	dlq_buf_init(&answer);
	rc = dlq_causes_list(a, queue, class, since_ms, limit,
	    max_groups, &answer);
	rows[0] = '\0';
	if (rc == DLQ_REFUSED)
		snprintf(rows, sizeof(rows), "refused: %s", answer.data);
	ck_assert_msg(rc == DLQ_OK || rc == DLQ_REFUSED, "%s",
	    answer.data);
	j = cJSON_Parse(rc == DLQ_OK ? answer.data : "[]");
	ck_assert_ptr_nonnull(j);
	cJSON_ArrayForEach(c, j) {
		n += (size_t)snprintf(rows + n, sizeof(rows) - n,
		    "%s%d %d %d %d %d %s:", n > 0 ? "|" : "",
		    cJSON_GetObjectItem(c, "count")->valueint,
		    cJSON_GetObjectItem(c, "unresolved")->valueint,
		    cJSON_GetObjectItem(c, "first_seen")->valueint,
		    cJSON_GetObjectItem(c, "last_seen")->valueint,
		    cJSON_GetObjectItem(c, "sample_id")->valueint,
		    cJSON_GetObjectItem(c, "error")->valuestring);
		gs = cJSON_GetObjectItem(c, "groups");
		cJSON_ArrayForEach(g, gs)
			n += (size_t)snprintf(rows + n, sizeof(rows) - n,
			    "%s%s=%d/%d %s", g != gs->child ? "," : " ",
			    cJSON_GetObjectItem(g, "queue")->valuestring,
			    cJSON_GetObjectItem(g, "count")->valueint,
			    cJSON_GetObjectItem(g, "unresolved")->valueint,
			    cJSON_GetObjectItem(g, "signature")->valuestring);
		ck_assert_uint_lt(n, sizeof(rows));
	}
	cJSON_Delete(j);
	dlq_buf_release(&answer);
	return rows;
}

/* Groups of one reason, class and error text (numbers aside) in several
 * queues are one cause, as in the digest: summed, its texts and sample
 * those of its largest group, its groups the largest first; another
 * reason or class is another cause. With a queue: the causes it has a
 * group of, with all their groups; with a class, its causes (and its
 * groups, for plain groups too). */
START_TEST(groups_of_one_cause_in_several_queues_are_gathered)
{
	struct dlq_buf out;

	put_many(7);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "UPDATE dead_letters"
	    " SET queue = CASE WHEN id <= 3 THEN 'q1' WHEN id <= 6 THEN 'q2'"
	    " ELSE 'q3' END, reason = CASE id WHEN 7 THEN 'expired'"
	    " ELSE 'rejected' END,"
	    " class = CASE id WHEN 6 THEN 'validation' ELSE 'transient' END,"
	    " error = CASE WHEN id <= 3 THEN 'timeout after 100 ms'"
	    " WHEN id = 6 THEN 'invalid field' ELSE 'timeout after 25 ms' END,"
	    " signature = CASE WHEN id <= 3 THEN 'aaaaaaaaaaaa' WHEN id <= 5"
	    " THEN 'bbbbbbbbbbbb' WHEN id = 6 THEN 'cccccccccccc'"
	    " ELSE 'dddddddddddd' END,"
	    " received_at = id * 1000,"
	    " status = CASE id WHEN 2 THEN 'discarded' ELSE status END;"
	    " UPDATE dead_letters SET dlq = queue || '.dlq'",
	    NULL, NULL, NULL), SQLITE_OK);
	ck_assert_str_eq(causes_of(NULL, NULL, 0, 10, DLQ_CAUSES_GROUPS_MAX),
	    "5 4 1000 5000 1 timeout after 100 ms: q1=3/2 aaaaaaaaaaaa,"
	    "q2=2/2 bbbbbbbbbbbb"
	    "|1 1 6000 6000 6 invalid field: q2=1/1 cccccccccccc"
	    "|1 1 7000 7000 7 timeout after 25 ms: q3=1/1 dddddddddddd");
	ck_assert_str_eq(causes_of("q2.dlq", NULL, 0, 1,
	    DLQ_CAUSES_GROUPS_MAX), "5 4 1000 5000 1 timeout after 100 ms: "
	    "q1=3/2 aaaaaaaaaaaa,q2=2/2 bbbbbbbbbbbb");
	ck_assert_str_eq(causes_of("q3", NULL, 0, 10, DLQ_CAUSES_GROUPS_MAX),
	    "1 1 7000 7000 7 timeout after 25 ms: q3=1/1 dddddddddddd");
	/* since 3 s: q1's third record and q2's two are one cause */
	ck_assert_str_eq(causes_of(NULL, NULL, 3000, 10,
	    DLQ_CAUSES_GROUPS_MAX), "3 3 1000 5000 4 timeout after 25 ms: "
	    "q2=2/2 bbbbbbbbbbbb,q1=1/1 aaaaaaaaaaaa"
	    "|1 1 6000 6000 6 invalid field: q2=1/1 cccccccccccc"
	    "|1 1 7000 7000 7 timeout after 25 ms: q3=1/1 dddddddddddd");
	ck_assert_str_eq(causes_of("nowhere", NULL, 0, 10,
	    DLQ_CAUSES_GROUPS_MAX), "");
	/* a class is part of a cause: the causes of one class */
	ck_assert_str_eq(causes_of(NULL, "validation", 0, 10,
	    DLQ_CAUSES_GROUPS_MAX), "1 1 6000 6000 6 invalid field: "
	    "q2=1/1 cccccccccccc");
	/* and the groups of one, in one queue */
	dlq_buf_init(&out);
	ck_assert_int_eq(dlq_cases_groups(a, "q2", "transient",
	    0, 10, &out), 0);
	ck_assert_str_eq(group_row(&out, "bbbbbbbbbbbb"), "2 2 4000 5000 4");
	ck_assert_str_eq(group_row(&out, "cccccccccccc"), "");
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_groups(a, NULL, "expired",
	    0, 10, &out), 0);
	ck_assert_str_eq(out.data, "[]");
	dlq_buf_release(&out);
	/* more groups than it gathers at once: refused, with what to do;
	 * the groups of a class or a window are what count */
	ck_assert_str_eq(causes_of(NULL, NULL, 0, 10, 3), "refused: more "
	    "than 3 failure signatures in the archive: too many to gather by "
	    "cause at once; narrow it with --since DUR or --class C");
	ck_assert_str_eq(causes_of(NULL, "transient", 0, 10, 3), "5 4 1000 "
	    "5000 1 timeout after 100 ms: q1=3/2 aaaaaaaaaaaa,q2=2/2 "
	    "bbbbbbbbbbbb|1 1 7000 7000 7 timeout after 25 ms: q3=1/1 "
	    "dddddddddddd");
	ck_assert_str_eq(causes_of(NULL, NULL, 6000, 10, 1), "refused: more "
	    "than 1 failure signatures in the window: too many to gather by "
	    "cause at once; narrow it with --since DUR or --class C");
}
END_TEST

/* Open and assigned records of the window, grouped by signature as the
 * consumers group them; new when the signature has no older record. */
START_TEST(the_backlog_is_the_unresolved_since_the_cut_off)
{
	struct dlq_digest dg;
	const struct dlq_group *g;

	put_many(5);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "UPDATE dead_letters"
	    " SET received_at = CASE message_id WHEN 'm-0' THEN 100 ELSE 2000"
	    " END, status = CASE message_id WHEN 'm-4' THEN 'discarded' WHEN"
	    " 'm-2' THEN 'assigned' ELSE status END;"
	    " UPDATE dead_letters SET signature = '00000000000b', error ="
	    " 'timeout after 30 s' WHERE message_id = 'm-3'", NULL, NULL,
	    NULL), SQLITE_OK);
	ck_assert_int_eq(dlq_digest_init(&dg, 10), 0);
	ck_assert_int_eq(dlq_alert_backlog(a, 1000, 10, &dg),
	    3);
	ck_assert_uint_eq(dg.total, 3);
	ck_assert_uint_eq(dg.n, 2);
	g = group_of(&dg, 2);		/* m-1 and m-2; m-0 is older */
	ck_assert_str_eq(g->queue, "orders");
	ck_assert_str_eq(g->reason, "rejected");
	ck_assert_int_eq(g->first_ms, 2000);
	ck_assert_int_eq(g->last_ms, 2000);
	ck_assert_str_eq(g->samples[0], "m-1");
	ck_assert(!g->is_new);
	g = group_of(&dg, 1);		/* m-3, the only one of its kind */
	/* its text as written; its hash the normalised one the consumers
	 * give it */
	ck_assert_str_eq(g->error, "timeout after 30 s");
	ck_assert(g->hash == dlq_signature_hash("orders", "rejected",
	    "unknown", "timeout after # s"));
	ck_assert(g->is_new);
	/* nothing after the cut-off: nothing added */
	dlq_digest_clear(&dg);
	ck_assert_int_eq(dlq_alert_backlog(a, 3000, 10, &dg),
	    0);
	ck_assert(dlq_digest_empty(&dg));
	dlq_digest_release(&dg);
}
END_TEST

/* Reads one number from the archive. */
static long long
number(const char *sql)
{
	sqlite3_stmt *st;
	long long n;

	ck_assert_int_eq(sqlite3_prepare_v2(dlq_archive_db(a), sql, -1, &st,
	    NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static int go_on_calls;
static long long told_purged[2];
static int told_percent[2];

/* Lets a purge go on after its first chunk, not after its second; keeps
 * what it was told. */
static bool
go_on_twice(long long purged, int percent, void *arg)
{
	ck_assert_ptr_eq(arg, &go_on_calls);
	if (go_on_calls < 2) {
		told_purged[go_on_calls] = purged;
		told_percent[go_on_calls] = percent;
	}
	return ++go_on_calls < 2;
}

/* A purge goes chunk by chunk through ids (gaps included): every old
 * resolved payload goes, in as many transactions as chunks, and nothing
 * else is touched: open and assigned records, newer ones, ones purged
 * before (their purged_at kept). Stopped between two chunks, it keeps
 * what it did; the next purge does the rest. */
START_TEST(a_purge_walks_every_chunk_and_touches_nothing_else)
{
	struct dlq_buf out;
	char expect[64];
	long long want;

	/* ids 1..12000 and 30001..30500 (a gap of more than a chunk):
	 * statuses in turn, old up to id 11000, a few purged at time 7 */
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "BEGIN;"
	    " WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
	    " WHERE x < 12500) INSERT INTO dead_letters (id, fingerprint, dlq,"
	    " queue, reason, class, signature, payload, payload_bytes,"
	    " headers_json, received_at, status, purged_at)"
	    " SELECT CASE WHEN x > 12000 THEN x + 18000 ELSE x END,"
	    " randomblob(32), 'q.dlq', 'q', 'rejected', 'transient',"
	    " '000000000001', x'00ff', 2, '{}',"
	    " CASE WHEN x <= 11000 OR x > 12000 THEN 1000 ELSE 5000 END,"
	    " CASE x % 4 WHEN 0 THEN 'open' WHEN 1 THEN 'replayed'"
	    " WHEN 2 THEN 'discarded' ELSE 'assigned' END,"
	    " CASE WHEN x % 1000 = 1 THEN 7 END FROM c; COMMIT", NULL, NULL,
	    NULL), SQLITE_OK);
	want = number("SELECT count(*) FROM dead_letters WHERE status IN"
	    " ('replayed', 'discarded') AND received_at < 2000 AND purged_at"
	    " IS NULL");
	ck_assert_int_gt(want, DLQ_PURGE_CHUNK);	/* more than one */
	ck_assert_int_eq(DLQ_PURGE_CHUNK, 5000);	/* the counts below */
	dlq_buf_init(&out);
	/* what dlqctl purge without --yes counts */
	ck_assert_int_eq(dlq_cases_purgeable(a, 2000, &out),
	    DLQ_OK);
	snprintf(expect, sizeof(expect), "{\"purgeable\":%lld,\"before_ms\":"
	    "2000}", want);
	ck_assert_str_eq(out.data, expect);
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_purge(a, 2000, 9000,
	    go_on_twice, &go_on_calls, &out), DLQ_OK);
	/* two chunks from the first purgeable id, 2: ids 2..10001, half
	 * resolved, 10 of them purged before */
	ck_assert_str_eq(out.data, "{\"purged\":4990,\"before_ms\":2000,"
	    "\"interrupted\":true}");
	/* told after each: purged so far, and how far through the ids to
	 * walk (2..30498) */
	ck_assert_int_eq(go_on_calls, 2);
	ck_assert_int_eq(told_purged[0], 2495);
	ck_assert_int_eq(told_percent[0], 16);
	ck_assert_int_eq(told_purged[1], 4990);
	ck_assert_int_eq(told_percent[1], 32);
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_purge(a, 2000, 9000, NULL,
	    NULL, &out), DLQ_OK);
	snprintf(expect, sizeof(expect), "{\"purged\":%lld,\"before_ms\":"
	    "2000}", want - 4990);
	ck_assert_str_eq(out.data, expect);
	dlq_buf_release(&out);
	ck_assert_int_eq(number("SELECT count(*) FROM dead_letters WHERE"
	    " purged_at = 9000"), want);
	ck_assert_int_eq(number("SELECT count(*) FROM dead_letters WHERE"
	    " purged_at = 9000 AND (payload IS NOT NULL OR headers_json IS NOT"
	    " NULL OR status NOT IN ('replayed', 'discarded') OR received_at"
	    " >= 2000)"), 0);
	/* untouched: the unresolved, the newer, the purged before */
	ck_assert_int_eq(number("SELECT count(*) FROM dead_letters WHERE"
	    " payload IS NOT NULL"), 12500 - want);
	ck_assert_int_eq(number("SELECT count(*) FROM dead_letters WHERE"
	    " purged_at = 7"), 13);
	/* again: nothing left */
	dlq_buf_init(&out);
	ck_assert_int_eq(dlq_cases_purge(a, 2000, 9500, NULL,
	    NULL, &out), DLQ_OK);
	ck_assert_str_eq(out.data, "{\"purged\":0,\"before_ms\":2000}");
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_purgeable(a, 2000, &out),
	    DLQ_OK);
	ck_assert_str_eq(out.data, "{\"purgeable\":0,\"before_ms\":2000}");
	dlq_buf_release(&out);
}
END_TEST

/* The ids `list` answers with "reopenable", as a JSON array (static). */
static const char *
reopenable_ids(struct dlq_archive *archive)
{
	static char text[256];
	struct dlq_list_filter f = { .reopenable = true, .limit = 100 };
	struct dlq_buf out;
	cJSON *l, *e, *ids = cJSON_CreateArray();
	char *t;

	dlq_buf_init(&out);
	ck_assert_int_eq(dlq_cases_list(archive, &f, &out), DLQ_OK);
	ck_assert_ptr_nonnull(l = cJSON_Parse(out.data));
	dlq_buf_release(&out);
	cJSON_ArrayForEach(e, l)
		cJSON_AddItemToArray(ids, cJSON_Duplicate(
		    cJSON_GetObjectItem(e, "id"), 0));
	t = cJSON_PrintUnformatted(ids);
	snprintf(text, sizeof(text), "%s", t);
	cJSON_free(t);
	cJSON_Delete(ids);
	cJSON_Delete(l);
	return text;
}

/* A drop made by mistake is undone: the record is open again, or
 * assigned to the owner it had, its resolution gone. Not when a replay
 * of it may have arrived (a claim of unknown outcome, dropped as
 * "arrived") nor once its payload was purged; an id that was not
 * dropped says its status. */
START_TEST(a_drop_is_undone_unless_it_could_send_a_message_twice)
{
	sqlite3 *db = dlq_archive_db(a);
	struct dlq_buf out;
	int64_t id[5], missing = 999;
	int i;

	ck_assert_int_eq(dlq_archive_begin(a), 0);
	for (i = 0; i < 5; i++)
		id[i] = put((const char *[]){ "m-1", "m-2", "m-3", "m-4",
		    "m-5" }[i], NULL);
	ck_assert_int_eq(dlq_archive_commit(a), 0);
	dlq_buf_init(&out);
	ck_assert_int_eq(dlq_cases_assign(a, &id[1], 1, "crm", "fix it",
	    NULL, 0, "alice", 10, &out), DLQ_OK);
	/* a replay claimed id[2] and its outcome stayed unknown */
	ck_assert_int_eq(sqlite3_exec(db, "UPDATE dead_letters SET status ="
	    " 'replaying' WHERE id = 3; INSERT INTO attempts (dead_letter_id,"
	    " actor, started_at, outcome) VALUES (3, 'bob', 20, 'unknown')",
	    NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(id[2], 3);
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_drop(a, id, 4, "oops", "bob", 30, &out),
	    DLQ_OK);
	ck_assert_int_eq(sqlite3_exec(db, "UPDATE dead_letters SET purged_at ="
	    " 40, payload = NULL WHERE id = 4", NULL, NULL, NULL), SQLITE_OK);
	/* what a reopen by selection is given: the ones it takes back */
	ck_assert_str_eq(reopenable_ids(a), "[2,1]");

	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_reopen(a, id, 5, &out), DLQ_REFUSED);
	ck_assert_str_eq(out.data, "{\"results\":["
	    "{\"id\":1,\"ok\":true},{\"id\":2,\"ok\":true},"
	    "{\"id\":3,\"ok\":false,\"error\":\"a replay of it was sent "
	    "with its outcome unknown: it stays closed, a second one could "
	    "send it twice\"},"
	    "{\"id\":4,\"ok\":false,\"error\":\"its payload was purged: "
	    "nothing is left to replay\"},"
	    "{\"id\":5,\"ok\":false,\"error\":\"status is open\"}],"
	    "\"changed\":2}");
	ck_assert_str_eq(column("status", 1), "open");
	ck_assert_str_eq(column("coalesce(resolution, resolved_by,"
	    " resolved_at)", 1), "(null)");
	ck_assert_str_eq(column("status || ' ' || owner || ' ' || decision",
	    2), "assigned crm fix it");
	ck_assert_str_eq(column("status || ' ' || resolution", 3),
	    "discarded oops");
	ck_assert_str_eq(column("status", 4), "discarded");
	/* reopened twice: the second time it is open */
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_reopen(a, id, 1, &out), DLQ_REFUSED);
	ck_assert_str_eq(out.data, "{\"results\":[{\"id\":1,\"ok\":false,"
	    "\"error\":\"status is open\"}],\"changed\":0}");
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_reopen(a, &missing, 1, &out),
	    DLQ_NOT_FOUND);
	dlq_buf_release(&out);
	ck_assert_str_eq(reopenable_ids(a), "[]");
}
END_TEST

/* A masking rule added later covers the records archived before it:
 * what the case queries and the digest backlog read back is masked with
 * the rules of the handle reading it. */
START_TEST(error_texts_read_back_are_masked_with_the_rules_of_now)
{
	static char *keys[] = { "token" };
	/* a number that is no card (its Luhn check fails): only the
	 * digit-run rule masks it */
	static const char raw[] = "card 4111111111111112 refused, token=ab12 "
	    "for bob@example.com";
	const struct dlq_list_filter all = { .limit = 10 };
	struct dlq_digest dg;
	struct dlq_buf out;

	put_many(1);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "UPDATE dead_letters"
	    " SET received_at = 2000, error = 'card 4111111111111112 refused,"
	    " token=ab12 for bob@example.com'", NULL, NULL, NULL), SQLITE_OK);
	ck_assert_str_eq(column("dlq_mask(error)", 1), raw);	/* no rules */
	dlq_archive_close(a);
	cfg.mask_keys = (struct dlq_strlist){ keys, 1 };
	cfg.mask_emails = true;
	cfg.mask_digits_min = 8;
	ck_assert_ptr_nonnull(a = dlq_archive_open(&cfg));
	ck_assert_str_eq(column("dlq_mask(error)", 1),
	    "card *** refused, token=*** for ***");
	ck_assert_str_eq(column("dlq_mask(dlq_mask(error))", 1),
	    "card *** refused, token=*** for ***");
	ck_assert_str_eq(column("dlq_mask(NULL)", 1), "(null)");
	ck_assert_str_eq(column("error", 1), raw);	/* the record stays */

	dlq_buf_init(&out);
	ck_assert_int_eq(dlq_cases_list(a, &all, &out), 0);
	ck_assert_msg(strstr(out.data, "\"error\":\"card *** refused, "
	    "token=*** for ***\"") != NULL, "%s", out.data);
	dlq_buf_reset(&out);
	ck_assert_int_eq(dlq_cases_groups(a, NULL, NULL, 0, 10,
	    &out), 0);
	ck_assert_msg(strstr(out.data, "4111") == NULL && strstr(out.data,
	    "ab12") == NULL, "%s", out.data);
	dlq_buf_release(&out);
	ck_assert_int_eq(dlq_digest_init(&dg, 10), 0);
	ck_assert_int_eq(dlq_alert_backlog(a, 1000, 10, &dg),
	    1);
	ck_assert_str_eq(dg.groups[0].error, "card *** refused, token=*** for "
	    "***");
	dlq_digest_release(&dg);
}
END_TEST

/* SQLite's ":memory:" (the control tests' archive) is no file name:
 * opening it creates nothing in the working directory. */
START_TEST(an_in_memory_archive_leaves_no_file_behind)
{
	struct dlq_config mem;
	struct dlq_archive *m;
	char cwd[512];
	bool left;

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_int_eq(chdir(dir), 0);
	mem = cfg;
	mem.archive_path = ":memory:";
	m = dlq_archive_open(&mem);
	left = access(":memory:", F_OK) == 0;
	ck_assert_int_eq(chdir(cwd), 0);
	ck_assert_msg(!left, "a file named :memory: was created");
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(m), "SELECT count(*) "
	    "FROM dead_letters", NULL, NULL, NULL), SQLITE_OK);
	dlq_archive_close(m);
}
END_TEST

/* SQLite says "unable to open database file" whatever the cause: the
 * system's reason comes with it, and a directory that could not be
 * made is named. (Root passes permission checks: a directory, a
 * missing one and a file in the way stand for them here.) */
START_TEST(an_archive_that_cannot_be_opened_says_why)
{
	struct dlq_config bad = cfg;
	char in_file[160], want[256];
	FILE *f;

	bad.archive_path = dir;
	ck_assert_ptr_null(dlq_archive_open(&bad));
	ck_assert_str_eq(dlq_archive_errmsg(NULL), "open: unable to open "
	    "database file (Is a directory)");
	bad.archive_path = "/proc/dlq-none/archive.db";
	ck_assert_ptr_null(dlq_archive_open(&bad));
	ck_assert_str_eq(dlq_archive_errmsg(NULL), "open: cannot create the "
	    "directory /proc/dlq-none (No such file or directory)");
	/* a file where a directory of the path should be made */
	snprintf(in_file, sizeof(in_file), "%s/plain", dir);
	ck_assert_ptr_nonnull(f = fopen(in_file, "w"));
	fclose(f);
	snprintf(in_file, sizeof(in_file), "%s/plain/a/b/archive.db", dir);
	bad.archive_path = in_file;
	ck_assert_ptr_null(dlq_archive_open(&bad));
	snprintf(want, sizeof(want), "open: cannot create the directory "
	    "%s/plain/a/b (Not a directory)", dir);
	ck_assert_str_eq(dlq_archive_errmsg(NULL), want);
}
END_TEST

/* Rolled back to an older worker after an upgrade: the archive's newer
 * schema is refused, not migrated backwards or written into, and the
 * error says which program wrote it. */
START_TEST(an_archive_of_a_newer_schema_is_refused_untouched)
{
	char sql[64], want[200];
	sqlite3_stmt *st;
	sqlite3 *db;

	dlq_archive_close(a);
	a = NULL;
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
	    DLQ_ARCHIVE_SCHEMA + 1);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	ck_assert_ptr_null(dlq_archive_open(&cfg));
	snprintf(want, sizeof(want), "archive schema %d is newer than this "
	    "program (%d): it was written by a newer dlq-worker; run that one "
	    "(left as it is)", DLQ_ARCHIVE_SCHEMA + 1, DLQ_ARCHIVE_SCHEMA);
	ck_assert_ptr_nonnull(strstr(dlq_archive_errmsg(NULL), want));
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st,
	    NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(st, 0), DLQ_ARCHIVE_SCHEMA + 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

/* The signature this release gives a record of check_archive's, of
 * class `class`. */
static void
signature_of(const char *error, const char *class,
    char out[DLQ_SIGNATURE_ID_LEN + 1])
{
	struct dlq_buf norm;

	dlq_buf_init(&norm);
	dlq_signature_normalize(error, strlen(error), &norm);
	dlq_signature_id(dlq_signature_hash("orders", "rejected", class,
	    norm.data != NULL ? norm.data : ""), out);
	dlq_buf_release(&norm);
}

static void
signature_now(const char *error, char out[DLQ_SIGNATURE_ID_LEN + 1])
{
	signature_of(error, "unknown", out);
}

/* The log lines from here on go to a file of the test's directory ... */
static int
log_to_file(void)
{
	char file[128];
	int fd;

	snprintf(file, sizeof(file), "%s/log", dir);
	ck_assert_int_ge(fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600),
	    0);
	dlq_log_set_fd(fd);
	return fd;
}

/* ... until here: what they said, into `log` (bytes). */
static void
log_read(int fd, char *log, size_t n)
{
	char file[128];
	FILE *f;

	dlq_log_set_fd(1);
	close(fd);
	snprintf(file, sizeof(file), "%s/log", dir);
	ck_assert_ptr_nonnull(f = fopen(file, "r"));
	log[fread(log, 1, n - 1, f)] = '\0';
	fclose(f);
}

/* Opens the archive again as the worker's start does (signatures
 * refreshed), its log lines into `log` (bytes). */
static void
reopen_logged(char *log, size_t n)
{
	int fd;

	dlq_archive_close(a);
	fd = log_to_file();
	a = dlq_archive_open(&cfg);
	if (a != NULL)
		(void)dlq_sigrefresh_run(a, path);
	log_read(fd, log, n);
	ck_assert_ptr_nonnull(a);
}

/* Another process's write lock on the archive, held until
 * unlock_elsewhere(). */
static sqlite3 *
lock_elsewhere(void)
{
	sqlite3 *other;

	ck_assert_int_eq(sqlite3_open(path, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL,
	    NULL), SQLITE_OK);
	return other;
}

/* Ends the other process's transaction, and its connection. */
static void
unlock_elsewhere(sqlite3 *other)
{
	ck_assert_int_eq(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(other);
}

/* Records archived by a release that normalised error texts otherwise
 * (here: an email address left in, and one whose signature is already
 * right) are given this release's signature at the next open, once: one
 * cause reads as one group. An archive noted by a newer release is left
 * as it is. */
START_TEST(an_upgrade_gives_the_archived_records_their_signature_again)
{
	static const char err[] = "no mailbox bob@example.com after 3012ms";
	char want[DLQ_SIGNATURE_ID_LEN + 1], sql[256], log[1024];

	signature_now(err, want);
	put_many(3);
	snprintf(sql, sizeof(sql), "UPDATE dead_letters SET error = '%s',"
	    " signature = CASE message_id WHEN 'm-1' THEN '%s' ELSE"
	    " 'b0b0b0b0b0b0' END; DELETE FROM archive_meta WHERE key ="
	    " 'signature_version'", err, want);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), sql, NULL, NULL,
	    NULL), SQLITE_OK);
	reopen_logged(log, sizeof(log));
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM dead_letters WHERE"
	    " signature = '%s'", want);
	ck_assert_int_eq(number(sql), 3);
	ck_assert_msg(strstr(log, "\"event\":\"signatures_refreshed\"") &&
	    strstr(log, "\"from\":0,\"to\":1,\"records\":3,\"changed\":2,"),
	    "%s", log);

	/* once: the version is noted, the next open reads no record */
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "UPDATE dead_letters"
	    " SET signature = 'b0b0b0b0b0b0' WHERE message_id = 'm-0'", NULL,
	    NULL, NULL), SQLITE_OK);
	reopen_logged(log, sizeof(log));
	ck_assert_str_eq(log, "");
	ck_assert_str_eq(column("signature", 1), "b0b0b0b0b0b0");

	/* noted by a newer release: not taken back to this one's */
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "UPDATE archive_meta"
	    " SET value = value + 1 WHERE key = 'signature_version'", NULL,
	    NULL, NULL), SQLITE_OK);
	reopen_logged(log, sizeof(log));
	ck_assert_str_eq(column("signature", 1), "b0b0b0b0b0b0");
	ck_assert_int_eq(number("SELECT value FROM archive_meta WHERE key ="
	    " 'signature_version'"), DLQ_SIGNATURE_VERSION + 1);
}
END_TEST

/* Locked by another process past the busy timeout: the archive opens,
 * its records keep their signatures, the log says why, and the next
 * open does what this one could not. */
START_TEST(a_refresh_that_cannot_write_leaves_the_archive_usable)
{
	char log[1024];
	sqlite3 *other;

	put_many(2);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), "UPDATE dead_letters"
	    " SET signature = 'b0b0b0b0b0b0'; DELETE FROM archive_meta WHERE"
	    " key = 'signature_version'", NULL, NULL, NULL), SQLITE_OK);
	other = lock_elsewhere();
	reopen_logged(log, sizeof(log));
	ck_assert_msg(strstr(log, "\"event\":\"signatures_refresh_failed\"") &&
	    strstr(log, "\"error\":\"database is locked\""), "%s", log);
	ck_assert_str_eq(column("signature", 1), "b0b0b0b0b0b0");
	unlock_elsewhere(other);
	reopen_logged(log, sizeof(log));
	ck_assert_msg(strstr(log, "\"records\":2,\"changed\":2,"), "%s", log);
	ck_assert_str_ne(column("signature", 1), "b0b0b0b0b0b0");
}
END_TEST

/* dlq_classrefresh_run() on the archive, its log lines into `log`. */
static int
refresh_classes_logged(const struct dlq_classifier *k, char *log, size_t n)
{
	int fd = log_to_file(),
	    rc = dlq_classrefresh_run(a, path, k);

	log_read(fd, log, n);
	return rc;
}

/* Records classed by other rules than the worker's (here: before a rule
 * was added) are classed again, once: the open and the assigned one,
 * not the dropped one; class, hint and signature as a new dead letter
 * of the cause gets them; each move audited by ids. Locked by another
 * process: the classes stay, the log says why, the next start does it. */
START_TEST(other_rules_class_the_unresolved_records_again)
{
	static const char err[] = "fraud check 1001: upstream timeout";
	struct dlq_rule_cfg rule = { "fraud", NULL, NULL, "manual",
	    "Ask the risk team.", NULL };
	struct dlq_classifier *k;
	char before[DLQ_SIGNATURE_ID_LEN + 1], now[DLQ_SIGNATURE_ID_LEN + 1];
	char sql[512], log[1024];
	sqlite3 *other;

	put_many(3);
	signature_of(err, "transient", before);
	signature_of(err, "manual", now);
	snprintf(sql, sizeof(sql), "UPDATE dead_letters SET error = '%s',"
	    " class = 'transient', signature = '%s'; UPDATE dead_letters SET"
	    " status = 'assigned', owner = 'risk' WHERE message_id = 'm-1';"
	    " UPDATE dead_letters SET status = 'discarded' WHERE message_id ="
	    " 'm-2'", err, before);
	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(a), sql, NULL, NULL,
	    NULL), SQLITE_OK);
	cfg.rules = &rule;
	cfg.n_rules = 1;
	ck_assert_ptr_nonnull(k = dlq_classify_new(&cfg, NULL));
	cfg.rules = NULL;
	cfg.n_rules = 0;

	other = lock_elsewhere();
	ck_assert_int_eq(refresh_classes_logged(k, log, sizeof(log)), -1);
	ck_assert_msg(strstr(log, "\"event\":\"classes_refresh_failed\"") &&
	    strstr(log, "\"error\":\"database is locked\""), "%s", log);
	ck_assert_str_eq(column("class", 1), "transient");
	unlock_elsewhere(other);

	ck_assert_msg(refresh_classes_logged(k, log, sizeof(log)) == 0, "%s", log);
	ck_assert_msg(strstr(log, "\"event\":\"classes_refreshed\"") &&
	    strstr(log, "\"records\":2,\"changed\":2,\"hints\":0,"), "%s",
	    log);
	ck_assert_str_eq(column("class", 1), "manual");
	ck_assert_str_eq(column("class", 2), "manual");
	ck_assert_str_eq(column("class", 3), "transient");
	ck_assert_str_eq(column("signature", 1), now);
	ck_assert_str_eq(column("signature", 2), now);
	ck_assert_str_eq(column("signature", 3), before);
	ck_assert_str_eq(column("(SELECT text FROM hints WHERE id ="
	    " d.hint_id)", 2), "Ask the risk team.");
	ck_assert_int_eq(number("SELECT count(*) FROM audit WHERE command ="
	    " 'reclassify' AND actor = 'dlq-worker' AND result ="
	    " 'class transient -> manual' AND json_extract(args, '$.ids') ="
	    " '[1,2]'"), 1);

	/* once: the same rules read no record again */
	ck_assert_msg(refresh_classes_logged(k, log, sizeof(log)) == 0, "%s", log);
	ck_assert_str_eq(log, "");
	dlq_classify_free(k);
}
END_TEST

/* A commit the file system refuses (a disk full; here a file size
 * limit) fails, and says the system's reason. */
START_TEST(a_commit_the_disk_refuses_says_why)
{
	struct rlimit old, low;
	struct stat st;
	char id[32], wal[128];
	int i, rc;

	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);	/* write() fails with EFBIG instead */
	low = old;
	/* first the commit (for which SQLite keeps no errno: the archive's
	 * VFS has it), before any other error of this connection, whose
	 * errno SQLite would keep */
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	ck_assert_int_gt(put("at-commit", NULL), 0);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	ck_assert_int_eq(stat(wal, &st), 0);
	low.rlim_cur = (rlim_t)st.st_size;	/* what it appends fails */
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &low), 0);
	rc = dlq_archive_commit(a);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(dlq_archive_errmsg(a), "COMMIT: disk I/O error "
	    "(File too large)") != NULL, "%s", dlq_archive_errmsg(a));
	/* then an insert (a page the cache spills) */
	low.rlim_cur = 64 * 1024;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &low), 0);
	ck_assert_int_eq(dlq_archive_begin(a), 0);
	for (i = 0; i < 2000; i++) {
		snprintf(id, sizeof(id), "full-%d", i);
		if (put(id, NULL) <= 0)
			break;
	}
	rc = i < 2000 ? -1 : dlq_archive_commit(a);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	if (i < 2000)
		dlq_archive_rollback(a);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(dlq_archive_errmsg(a), "(File too large)") !=
	    NULL, "%s", dlq_archive_errmsg(a));
}
END_TEST

/* The test write a consumer waits for after the archive refused a
 * batch: it fails as a write of its size would (a file size limit that
 * a small one stays under; the write lock held by another process), and
 * when it succeeds it leaves nothing behind. */
START_TEST(a_probe_fails_as_a_write_of_its_size_would)
{
	struct rlimit old, low;
	struct stat st;
	sqlite3 *other, *h;
	sqlite3_stmt *q;
	char wal[128];
	int rc;

	ck_assert_int_eq(dlq_archive_probe(a, 64 * 1024), 0);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	ck_assert_int_eq(stat(wal, &st), 0);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	low = old;
	low.rlim_cur = (rlim_t)st.st_size + 512 * 1024;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &low), 0);
	rc = dlq_archive_probe(a, 2 * 1024 * 1024);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(dlq_archive_errmsg(a), "(File too large)") !=
	    NULL, "%s", dlq_archive_errmsg(a));

	ck_assert_int_eq(sqlite3_open(path, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL,
	    NULL), SQLITE_OK);
	ck_assert_int_eq(dlq_archive_probe(a, 64 * 1024), -1);
	ck_assert_msg(strstr(dlq_archive_errmsg(a), "database is locked") !=
	    NULL, "%s", dlq_archive_errmsg(a));
	unlock_elsewhere(other);

	ck_assert_int_eq(dlq_archive_probe(a, 2 * 1024 * 1024), 0);
	h = dlq_archive_db(a);
	ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM "
	    "archive_meta WHERE key NOT IN ('signature_version', 'tallies')",
	    -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(q, 0), 0);
	sqlite3_finalize(q);
}
END_TEST

static Suite *
archive_suite(void)
{
	Suite *s = suite_create("archive");
	TCase *tc = tcase_create("records");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, headers_are_stored_once_and_read_as_json);
	tcase_add_test(tc, groups_count_all_time_or_since_a_time);
	tcase_add_test(tc, groups_of_one_cause_in_several_queues_are_gathered);
	tcase_add_test(tc, what_a_dead_letter_lacks_is_null_in_its_record);
	tcase_add_test(tc, a_payload_of_any_size_is_stored_whole);
	tcase_add_test(tc, a_hint_is_stored_once_and_referred_to);
	tcase_add_test(tc, a_hint_of_a_rolled_back_batch_is_not_remembered);
	tcase_add_test(tc, a_record_without_a_hint_has_none);
	tcase_add_test(tc, a_commit_into_a_file_gone_from_its_path_fails);
	tcase_add_test(tc, a_commit_into_a_wal_gone_from_its_path_fails);
	tcase_add_test(tc, a_commit_with_its_shm_gone_from_its_path_fails);
	tcase_add_test(tc, a_kept_number_survives_a_new_handle);
	tcase_add_test(tc, signatures_are_listed_once_each);
	tcase_add_test(tc, the_backlog_is_the_unresolved_since_the_cut_off);
	tcase_add_test(tc, error_texts_read_back_are_masked_with_the_rules_of_now);
	tcase_add_test(tc, a_purge_walks_every_chunk_and_touches_nothing_else);
	tcase_add_test(tc, an_in_memory_archive_leaves_no_file_behind);
	tcase_add_test(tc, an_archive_that_cannot_be_opened_says_why);
	tcase_add_test(tc, an_archive_of_a_newer_schema_is_refused_untouched);
	tcase_add_test(tc, a_commit_the_disk_refuses_says_why);
	tcase_add_test(tc, a_probe_fails_as_a_write_of_its_size_would);
	tcase_add_test(tc, a_drop_is_undone_unless_it_could_send_a_message_twice);
	tcase_add_test(tc,
	    an_upgrade_gives_the_archived_records_their_signature_again);
	tcase_add_test(tc, a_refresh_that_cannot_write_leaves_the_archive_usable);
	tcase_add_test(tc, other_rules_class_the_unresolved_records_again);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(archive_suite)
