/* check_control.c - control requests against an in-memory archive:
 * roles, usage errors, and the inputs the fuzzer found. */
#include <check.h>
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_main.h"
#include "archive.h"
#include "sqlite.h"
#include "requests.h"
#include "roles.h"

static struct dlq_config cfg;
static struct dlq_archive *archive;
static struct dlq_buf out;

static void
setup(void)
{
	struct dlq_buf errors;

	dlq_buf_init(&errors);
	ck_assert_int_eq(dlq_config_load(&cfg, NULL, &errors), 0);
	dlq_buf_release(&errors);
	/* the worker refuses it; pure code may have it */
	free(cfg.archive_path);
	cfg.archive_path = strdup(":memory:");
	ck_assert_ptr_nonnull(archive = dlq_archive_open(&cfg));
	dlq_buf_init(&out);
}

static void
teardown(void)
{
	dlq_buf_release(&out);
	dlq_archive_close(archive);
	dlq_config_release(&cfg);
}

static const char *
ask(const char *line, enum dlq_role role)
{
	dlq_buf_reset(&out);
	dlq_requests_handle(&cfg, archive, line, strlen(line),
	    role, "tester", 1000, -1, &out);
	ck_assert(out.len > 0 && out.data[out.len - 1] == '\n');
	return out.data;
}

START_TEST(every_answer_is_one_json_line)
{
	static const char *lines[] = { "", "{", "[]", "null", "{\"cmd\":1}",
	    "{\"cmd\":\"list\",\"limit\":1e300}", "\xff\xfe",
	    "{\"cmd\":\"stats\"}", NULL };
	const char **l;
	cJSON *j;

	for (l = lines; *l != NULL; l++) {
		ck_assert_ptr_nonnull(j = cJSON_Parse(ask(*l, DLQ_ROLE_ADMIN)));
		cJSON_Delete(j);
	}
}
END_TEST

START_TEST(roles_are_enforced_and_named)
{
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"list\"}", DLQ_ROLE_NONE),
	    "\"code\":\"permission\",\"error\":\"list needs the viewer role; "
	    "tester is none\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"show\",\"id\":1,"
	    "\"payload\":true}", DLQ_ROLE_VIEWER), "show --payload needs the "
	    "operator role"));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"purge\",\"older_than_ms\":"
	    "1000}", DLQ_ROLE_OPERATOR), "purge needs the admin role"));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"purge\",\"older_than_ms\":"
	    "1000}", DLQ_ROLE_ADMIN), "{\"ok\":true,\"data\":{\"purged\":0,"
	    "\"before_ms\":"));
	/* counting what a purge would reach is for admins too */
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"purge_count\","
	    "\"older_than_ms\":1000}", DLQ_ROLE_OPERATOR),
	    "purge needs the admin role"));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"purge_count\","
	    "\"older_than_ms\":1000}", DLQ_ROLE_ADMIN),
	    "{\"ok\":true,\"data\":{\"purgeable\":0,\"before_ms\":"));
}
END_TEST

START_TEST(huge_numbers_are_usage_errors_not_undefined_behaviour)
{
	/* found by fuzz_control: a double far outside int64 */
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"assign\",\"ids\":[1,2],"
	    "\"owner\":\"o\",\"decision\":\"d\",\"escalate_in_ms\":1000777777777"
	    "77777777777777777777777777777777777777777777777777777777777777}",
	    DLQ_ROLE_ADMIN), "\"code\":\"usage\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"drop\",\"ids\":[1e300],"
	    "\"reason\":\"r\"}", DLQ_ROLE_ADMIN), "\"code\":\"usage\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"replay_plan\",\"ids\":"
	    "[-1e300]}", DLQ_ROLE_ADMIN), "\"code\":\"usage\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"replay_plan\",\"queue\":"
	    "\"q\",\"limit\":1e300}", DLQ_ROLE_ADMIN), "\"code\":\"usage\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"replay_finish\",\"results\""
	    ":[{\"attempt\":1e300,\"outcome\":\"failed\"}]}", DLQ_ROLE_ADMIN),
	    "\"code\":\"usage\""));
}
END_TEST

/* A flag that is not a boolean is not taken for false. */
START_TEST(a_flag_of_another_type_is_a_usage_error)
{
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"list\",\"reopenable\":"
	    "1}", DLQ_ROLE_VIEWER), "\"code\":\"usage\",\"error\":\"'reopenable'"
	    " must be true or false\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"list\",\"reopenable\":"
	    "true}", DLQ_ROLE_VIEWER), "{\"ok\":true,\"data\":[]"));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"groups\",\"by_cause\":"
	    "\"yes\"}", DLQ_ROLE_VIEWER), "\"code\":\"usage\",\"error\":"
	    "\"'by_cause' must be true or false\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"groups\",\"by_cause\":"
	    "true}", DLQ_ROLE_VIEWER), "{\"ok\":true,\"data\":[]"));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"groups\",\"class\":"
	    "\"transiant\"}", DLQ_ROLE_VIEWER), "\"code\":\"usage\",\"error\":"
	    "\"unknown class 'transiant' (transient, "));
}
END_TEST

/* Every id a request may carry reaches the worker as it was given:
 * dlqctl writes it with cJSON, the worker reads it back. */
START_TEST(request_integers_survive_cjson_exactly)
{
	static const int64_t v[] = { 1, 4503599627370497LL / 5,
	    123456789012345LL, DLQ_JSON_INT_MAX - 1, DLQ_JSON_INT_MAX };
	cJSON *o, *back;
	char *text;
	int64_t got;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)v[i]);
		text = cJSON_PrintUnformatted(o);
		back = cJSON_Parse(text);
		ck_assert_msg(dlq_json_int(cJSON_GetObjectItem(back, "id"), 1,
		    DLQ_JSON_INT_MAX, &got) && got == v[i], "%lld went out as %s",
		    (long long)v[i], text);
		cJSON_Delete(back);
		cJSON_free(text);
		cJSON_Delete(o);
	}
	o = cJSON_Parse("{\"id\":1000000000000000}");
	ck_assert(!dlq_json_int(cJSON_GetObjectItem(o, "id"), 1,
	    DLQ_JSON_INT_MAX, &got));
	cJSON_Delete(o);
}
END_TEST

START_TEST(mutations_are_audited_even_when_refused)
{
	ask("{\"cmd\":\"drop\",\"ids\":[7],\"reason\":\"x\"}", DLQ_ROLE_VIEWER);
	ask("{\"cmd\":\"drop\",\"ids\":[7],\"reason\":\"x\"}", DLQ_ROLE_OPERATOR);
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"audit\"}", DLQ_ROLE_VIEWER),
	    "\"result\":\"refused: drop needs the operator role; tester is "
	    "viewer\""));
	ck_assert_ptr_nonnull(strstr(out.data, "\"result\":\"not_found: no "
	    "dead letter with id 7 in the archive\""));
}
END_TEST

/* The audit entry of a record, from `show` (the first: static). */
static const cJSON *
history(int id, cJSON **j)
{
	char line[64];

	snprintf(line, sizeof(line), "{\"cmd\":\"show\",\"id\":%d}", id);
	ck_assert_ptr_nonnull(*j = cJSON_Parse(ask(line, DLQ_ROLE_VIEWER)));
	return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(*j,
	    "data"), "audit"), 0);
}

/* A drop of two records, one of them dropped before: each record's
 * history says what became of it, with the request's reason, not the
 * request's overall "refused". What a client sends as "refused" is not
 * what the audit keeps. */
START_TEST(a_record_history_tells_its_own_outcome)
{
	const cJSON *e;
	cJSON *j;

	ck_assert_int_eq(sqlite3_exec(dlq_archive_db(archive), "INSERT INTO"
	    " dead_letters (id, fingerprint, dlq, queue, reason, class,"
	    " signature, payload, payload_bytes, received_at, status)"
	    " VALUES (1, randomblob(32), 'q.dlq', 'q', 'rejected',"
	    " 'transient', '000000000001', x'7b7d', 2, 1, 'open'),"
	    " (2, randomblob(32), 'q.dlq', 'q', 'rejected', 'transient',"
	    " '000000000001', x'7b7d', 2, 1, 'discarded')", NULL, NULL, NULL),
	    SQLITE_OK);
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"drop\",\"ids\":[1,2],"
	    "\"reason\":\"dup of #9\",\"refused\":[{\"id\":1,\"why\":"
	    "\"forged\"}]}", DLQ_ROLE_OPERATOR), "\"code\":\"refused\""));
	e = history(1, &j);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "result")->valuestring, "ok");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "reason")->valuestring,
	    "dup of #9");
	cJSON_Delete(j);
	e = history(2, &j);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "result")->valuestring,
	    "not changed: status is discarded");
	cJSON_Delete(j);
	/* the audit itself keeps the request's result */
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"audit\"}",
	    DLQ_ROLE_VIEWER), "\"refused\":[{\"id\":2,\"why\":\"status is "
	    "discarded\"}]},\"result\":\"refused: not every record could be "
	    "changed (see each id)\""));
	ck_assert_ptr_null(strstr(out.data, "forged"));
}
END_TEST

/* A reason, owner or decision of white space only is none. */
START_TEST(blank_texts_are_missing)
{
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"drop\",\"ids\":[7],"
	    "\"reason\":\" \\t\\n\"}", DLQ_ROLE_OPERATOR),
	    "\"code\":\"usage\",\"error\":\"'reason' is required\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"assign\",\"ids\":[7],"
	    "\"owner\":\"  \",\"decision\":\"d\"}", DLQ_ROLE_OPERATOR),
	    "\"error\":\"'owner' is required\""));
	ck_assert_ptr_nonnull(strstr(ask("{\"cmd\":\"replay_claim\",\"ids\":"
	    "[7],\"reason\":\" \"}", DLQ_ROLE_OPERATOR), "\"code\":\"usage\""));
	ck_assert_ptr_null(strstr(ask("{\"cmd\":\"replay_claim\",\"ids\":"
	    "[7],\"reason\":\"r\"}", DLQ_ROLE_OPERATOR), "\"code\":\"usage\""));
}
END_TEST

static char said[512];

static void
collect(const char *key, const char *what, const char *name, void *arg)
{
	(void)arg;
	snprintf(said + strlen(said), sizeof(said) - strlen(said),
	    "%s %s %s;", key, what, name);
}

/* Names the host does not know are said; known users and groups (root
 * exists everywhere) are not. */
START_TEST(unknown_role_members_are_named)
{
	char *names[] = { "root", "nobdy_dlq", "@root", "@no_such_group_dlq" };
	struct dlq_strlist keep = cfg.operators;

	cfg.operators.v = names;
	cfg.operators.n = 4;
	said[0] = '\0';
	dlq_roles_unknown_members(&cfg, collect, NULL);
	cfg.operators = keep;
	ck_assert_str_eq(said, "control.operators user nobdy_dlq;"
	    "control.operators group no_such_group_dlq;");
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("control");
	TCase *tc = tcase_create("requests");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, every_answer_is_one_json_line);
	tcase_add_test(tc, roles_are_enforced_and_named);
	tcase_add_test(tc, huge_numbers_are_usage_errors_not_undefined_behaviour);
	tcase_add_test(tc, a_flag_of_another_type_is_a_usage_error);
	tcase_add_test(tc, request_integers_survive_cjson_exactly);
	tcase_add_test(tc, mutations_are_audited_even_when_refused);
	tcase_add_test(tc, a_record_history_tells_its_own_outcome);
	tcase_add_test(tc, blank_texts_are_missing);
	tcase_add_test(tc, unknown_role_members_are_named);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
