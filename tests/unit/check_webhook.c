/* check_webhook.c - what a webhook's answer asks of the next try: its
 * Retry-After, read as seconds or as an HTTP date, never past an hour. */
#include <check.h>
#include <stdint.h>

#include "../check_main.h"
#include "webhook.h"

/* 2026-12-05 00:00:00 UTC */
#define NOW	((time_t)1796428800)

START_TEST(retry_after_in_seconds_is_waited)
{
	ck_assert_int_eq(dlq_webhook_retry_after_ms(" 120", NOW), 120000);
	ck_assert_int_eq(dlq_webhook_retry_after_ms("7 \t", NOW), 7000);
	ck_assert_int_eq(dlq_webhook_retry_after_ms("0", NOW), 0);
	ck_assert_int_eq(dlq_webhook_retry_after_ms(" 3600", NOW), 3600000);
}
END_TEST

/* A service asking for more than an hour, however many digits it sends
 * (no overflow to a negative wait, no crash under UBSan), gets one. */
START_TEST(retry_after_is_at_most_an_hour)
{
	ck_assert_int_eq(dlq_webhook_retry_after_ms("3601", NOW), 3600000);
	ck_assert_int_eq(dlq_webhook_retry_after_ms(" 9223372036854775807",
	    NOW), 3600000);
	ck_assert_int_eq(dlq_webhook_retry_after_ms(
	    "99999999999999999999999999999999", NOW), 3600000);
	ck_assert_int_eq(dlq_webhook_retry_after_ms(
	    "Sat, 05 Dec 2026 12:00:00 GMT", NOW), 3600000);
}
END_TEST

START_TEST(retry_after_as_a_date_waits_until_then)
{
	ck_assert_int_eq(dlq_webhook_retry_after_ms(
	    " Sat, 05 Dec 2026 00:02:30 GMT", NOW), 150000);
	/* passed: nothing to wait for */
	ck_assert_int_eq(dlq_webhook_retry_after_ms(
	    "Fri, 04 Dec 2026 23:59:00 GMT", NOW), 0);
}
END_TEST

/* Anything else asks for nothing: the usual backoff applies. */
START_TEST(a_value_that_is_neither_asks_nothing)
{
	static const char *const bad[] = { "", "  ", "-5", "1.5", "120abc",
	    "soon", "0x10", NULL };
	const char *const *v;

	for (v = bad; *v != NULL; v++)
		ck_assert_msg(dlq_webhook_retry_after_ms(*v, NOW) == 0, "'%s'",
		    *v);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("webhook");
	TCase *tc = tcase_create("retry_after");

	tcase_add_test(tc, retry_after_in_seconds_is_waited);
	tcase_add_test(tc, retry_after_is_at_most_an_hour);
	tcase_add_test(tc, retry_after_as_a_date_waits_until_then);
	tcase_add_test(tc, a_value_that_is_neither_asks_nothing);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
