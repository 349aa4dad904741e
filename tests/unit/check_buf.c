/* check_buf.c - JSON text building: escaping, UTF-8, timestamps. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "../check_main.h"
#include "buf.h"

static char out[256];

static const char *
esc(const char *s, size_t n)
{
	struct dlq_buf b;

	dlq_buf_init(&b);
	dlq_buf_json_str(&b, s, n);
	snprintf(out, sizeof(out), "%s", b.data);
	dlq_buf_release(&b);
	return out;
}

START_TEST(plain_text_is_quoted)
{
	ck_assert_str_eq(esc("hello", 5), "\"hello\"");
	ck_assert_str_eq(esc("", 0), "\"\"");
}
END_TEST

START_TEST(quotes_backslashes_and_controls_are_escaped)
{
	ck_assert_str_eq(esc("a\"b\\c\nd\te\r", 10),
	    "\"a\\\"b\\\\c\\nd\\te\\r\"");
	ck_assert_str_eq(esc("\x01\x1f", 2), "\"\\u0001\\u001f\"");
	ck_assert_str_eq(esc("a\0b", 3), "\"a\\u0000b\"");
}
END_TEST

START_TEST(valid_utf8_is_kept_invalid_bytes_replaced)
{
	ck_assert_str_eq(esc("привет €", strlen("привет €")), "\"привет €\"");
	ck_assert_str_eq(esc("a\xff" "b", 3), "\"a\xef\xbf\xbd" "b\"");
	/* overlong encoding of '/' and a lone surrogate */
	ck_assert_str_eq(esc("\xc0\xaf", 2), "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	ck_assert_str_eq(esc("\xed\xa0\x80", 3),
	    "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
}
END_TEST

START_TEST(utf8_prefix_never_cuts_a_character)
{
	const char *s = "ab\xd0\xbf";	/* "ab" + Cyrillic pe */

	ck_assert_uint_eq(dlq_utf8_prefix(s, 4), 4);
	ck_assert_uint_eq(dlq_utf8_prefix(s, 3), 2);
	ck_assert(dlq_utf8_is_text("line\nnext\t", 10));
	ck_assert(!dlq_utf8_is_text("a\0b", 3));
	ck_assert(!dlq_utf8_is_text("\xff\xfe", 2));
}
END_TEST

START_TEST(timestamps_are_rfc3339_utc)
{
	struct dlq_buf b;

	dlq_buf_init(&b);
	dlq_buf_rfc3339(&b, 1764496800);
	ck_assert_str_eq(b.data, "2025-11-30T10:00:00Z");
	dlq_buf_reset(&b);
	dlq_buf_rfc3339_ms(&b, 1764496800123LL);
	ck_assert_str_eq(b.data, "2025-11-30T10:00:00.123Z");
	dlq_buf_reset(&b);
	dlq_buf_add_i64(&b, INT64_MIN);
	ck_assert_str_eq(b.data, "-9223372036854775808");
	dlq_buf_release(&b);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, plain_text_is_quoted);
	tcase_add_test(tc, quotes_backslashes_and_controls_are_escaped);
	tcase_add_test(tc, valid_utf8_is_kept_invalid_bytes_replaced);
	tcase_add_test(tc, utf8_prefix_never_cuts_a_character);
	tcase_add_test(tc, timestamps_are_rfc3339_utc);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
