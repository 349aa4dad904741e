/* check_mgmt.c - the messages published to a queue in the last hour, out
 * of the management API's two answers about it: its count now, and the
 * hour's samples. */
#include <check.h>
#include <string.h>

#include "../check_main.h"
#include "mgmt.h"

static struct dlq_mgmt_count c;
static char why[128];

static int
parse(const char *now, const char *window)
{
	why[0] = '\0';
	return dlq_mgmt_parse(now, strlen(now), window, strlen(window), &c, why,
	    sizeof(why));
}

#define NOW(n)	"{\"name\":\"q\",\"message_stats\":{\"publish\":" #n "}}"

/* The samples are newest first; the oldest is the count an hour ago. The
 * count the sampled answer gives is the last full minute's: not used. */
START_TEST(published_in_the_window_is_now_minus_the_oldest_sample)
{
	ck_assert_int_eq(parse(NOW(1510), "{\"name\":\"q\",\"message_stats\":"
	    "{\"publish\":1500,\"publish_details\":{\"samples\":["
	    "{\"sample\":1500,\"timestamp\":1796117280000},"
	    "{\"sample\":900,\"timestamp\":1796115480000},"
	    "{\"sample\":200,\"timestamp\":1796113680000}]}}}"), 0);
	ck_assert_int_eq(c.published, 1310);
	ck_assert(c.windowed);
}
END_TEST

/* A node restarted within the hour counts from 0 again: all of its count
 * is within the hour. */
START_TEST(a_counter_reset_counts_from_the_restart)
{
	ck_assert_int_eq(parse(NOW(5), "{\"name\":\"q\",\"message_stats\":"
	    "{\"publish\":5,\"publish_details\":{\"samples\":["
	    "{\"sample\":5,\"timestamp\":2000},"
	    "{\"sample\":80,\"timestamp\":1000}]}}}"), 0);
	ck_assert_int_eq(c.published, 5);
}
END_TEST

/* Rates mode none: no samples, only the total since the statistics
 * began, and the answer says so. */
START_TEST(without_samples_the_total_is_given_and_flagged)
{
	ck_assert_int_eq(parse(NOW(42), NOW(42)), 0);
	ck_assert_int_eq(c.published, 42);
	ck_assert(!c.windowed);
}
END_TEST

/* A queue nothing was published to has no statistics (or an empty list
 * where the object would be). */
START_TEST(a_queue_without_statistics_had_nothing_published)
{
	static const char *none[] = { "{\"name\":\"q\"}",
	    "{\"name\":\"q\",\"message_stats\":[]}",
	    "{\"name\":\"q\",\"message_stats\":{\"publish\":\"7\"}}", NULL };
	const char **n;

	for (n = none; *n != NULL; n++) {
		ck_assert_int_eq(parse(*n, *n), 0);
		ck_assert_int_eq(c.published, 0);
	}
}
END_TEST

START_TEST(an_answer_that_is_not_a_queue_is_refused)
{
	ck_assert_int_eq(parse("{\"error\":\"not_authorised\"}", NOW(1)), -1);
	ck_assert_str_eq(why, "the answer is not a queue");
	ck_assert_int_eq(parse(NOW(1), "[{\"name\":\"q\"}]"), -1);
	ck_assert_int_eq(parse("<html>", NOW(1)), -1);
	ck_assert_int_eq(parse(NOW(1), ""), -1);
}
END_TEST

/* /api/bindings/VHOST/e/X/q/Q lists every binding between the two; the
 * one asked about is the one with its routing key. */
START_TEST(a_binding_is_found_by_its_routing_key)
{
	const char *two = "[{\"source\":\"x\",\"destination\":\"q.dlq\","
	    "\"routing_key\":\"other\"},{\"source\":\"x\","
	    "\"destination\":\"q.dlq\",\"routing_key\":\"q\"}]";
	const char *odd = "[{\"routing_key\":1}]", *err = "{\"error\":\"x\"}";

	ck_assert_int_eq(dlq_mgmt_parse_bound(two, strlen(two), "q"), 0);
	ck_assert_int_eq(dlq_mgmt_parse_bound(two, strlen(two), "q2"), 1);
	ck_assert_int_eq(dlq_mgmt_parse_bound("[]", 2, "q"), 1);
	/* a key of another type is not the key; an error object or no
	 * JSON is not an answer */
	ck_assert_int_eq(dlq_mgmt_parse_bound(odd, strlen(odd), "q"), 1);
	ck_assert_int_eq(dlq_mgmt_parse_bound(err, strlen(err), "q"), -1);
	ck_assert_int_eq(dlq_mgmt_parse_bound("<html>", 6, "q"), -1);
	ck_assert_int_eq(dlq_mgmt_parse_bound("", 0, "q"), -1);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("mgmt");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, published_in_the_window_is_now_minus_the_oldest_sample);
	tcase_add_test(tc, a_counter_reset_counts_from_the_restart);
	tcase_add_test(tc, without_samples_the_total_is_given_and_flagged);
	tcase_add_test(tc, a_queue_without_statistics_had_nothing_published);
	tcase_add_test(tc, an_answer_that_is_not_a_queue_is_refused);
	tcase_add_test(tc, a_binding_is_found_by_its_routing_key);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
