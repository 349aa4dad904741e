/* check_jsonexact.c - a 64-bit integer in the worker's answer reaches
 * dlqctl's output as written, not as a rounded double. */
#include <check.h>
#include <cjson/cJSON.h>
#include <string.h>

#include "../check_main.h"
#include "jsonexact.h"

static cJSON *
parse(const char *text)
{
	cJSON *j = cJSON_Parse(text);

	ck_assert_ptr_nonnull(j);
	ck_assert(dlq_json_keep_integers(j, text, strlen(text)));
	return j;
}

static void
printed_as(const cJSON *j, const char *want)
{
	char *text = dlq_json_print(j);

	ck_assert_str_eq(text, want);
	cJSON_free(text);
}

/* A snowflake id and a time in nanoseconds, past 2^53, in a header and
 * in an array; small numbers, floats, and digits inside strings and keys
 * are left to cJSON. */
START_TEST(long_integers_print_as_written)
{
	static const char text[] = "{\"id\":7,\"headers\":{\"order-id\":"
	    "1796492074007203839,\"k\\\"1234567890123456789\":-922337203685"
	    "4775807,\"f\":1.5e300,\"s\":\"9007199254740993\"},\"l\":["
	    "9007199254740993,2,[18446744073709551615]],\"t\":true}";
	cJSON *j = parse(text);
	const cJSON *h = cJSON_GetObjectItem(j, "headers");

	printed_as(j, "{\"id\":7,\"headers\":{\"order-id\":1796492074007203839,"
	    "\"k\\\"1234567890123456789\":-9223372036854775807,\"f\":1.5e+300,"
	    "\"s\":\"9007199254740993\"},\"l\":[9007199254740993,2,"
	    "[18446744073709551615]],\"t\":true}");
	ck_assert_str_eq(dlq_json_literal(cJSON_GetObjectItem(h, "order-id")),
	    "1796492074007203839");
	ck_assert_ptr_null(dlq_json_literal(cJSON_GetObjectItem(j, "id")));
	ck_assert_ptr_null(dlq_json_literal(cJSON_GetObjectItem(h, "s")));
	/* still numbers to whoever reads their value */
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(h, "order-id")));
	ck_assert(cJSON_GetObjectItem(h, "order-id")->valuedouble > 1.7e18);
	/* printing changed nothing in the tree */
	printed_as(cJSON_GetObjectItem(j, "l"),
	    "[9007199254740993,2,[18446744073709551615]]");
	cJSON_Delete(j);
	/* a string that ends in an escaped backslash ends there; one with
	 * an escaped quote goes on, digits and all */
	j = parse("{\"a\\\\\":1796492074007203839,\"b\":\"x\\\\\\\"1234567890"
	    "1234567890\",\"c\":[1796492074007203840]}");
	printed_as(j, "{\"a\\\\\":1796492074007203839,\"b\":\"x\\\\\\\"1234567890"
	    "1234567890\",\"c\":[1796492074007203840]}");
	ck_assert_str_eq(dlq_json_literal(cJSON_GetArrayItem(
	    cJSON_GetObjectItem(j, "c"), 0)), "1796492074007203840");
	cJSON_Delete(j);
	/* a lone number */
	j = parse("1796492074007203839");
	printed_as(j, "1796492074007203839");
	cJSON_Delete(j);
}
END_TEST

/* A text that is not the tree's keeps nothing: never a wrong literal. */
START_TEST(a_text_that_does_not_match_keeps_nothing)
{
	cJSON *j = cJSON_Parse("[1796492074007203839]");

	ck_assert(!dlq_json_keep_integers(j, "[]", 2));
	ck_assert(!dlq_json_keep_integers(NULL, "[]", 2));
	ck_assert_ptr_null(dlq_json_literal(cJSON_GetArrayItem(j, 0)));
	cJSON_Delete(j);
	/* a text with a number more than the tree */
	j = cJSON_Parse("[1796492074007203839]");
	ck_assert(!dlq_json_keep_integers(j, "[1796492074007203839,1]", 23));
	ck_assert_ptr_null(dlq_json_literal(cJSON_GetArrayItem(j, 0)));
	cJSON_Delete(j);
	/* found out half way: what was kept before goes too */
	j = cJSON_Parse("[1796492074007203839,1796492074007203840]");
	ck_assert(!dlq_json_keep_integers(j, "[1796492074007203839]", 21));
	ck_assert_ptr_null(dlq_json_literal(cJSON_GetArrayItem(j, 0)));
	cJSON_Delete(j);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("jsonexact");
	TCase *tc = tcase_create("integers");

	tcase_add_test(tc, long_integers_print_as_written);
	tcase_add_test(tc, a_text_that_does_not_match_keeps_nothing);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
