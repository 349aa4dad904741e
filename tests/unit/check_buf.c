/* check_buf.c - JSON text building: escaping, UTF-8, timestamps, base64. */
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
	/* C1 controls too (U+009B is a CSI on some terminals); U+00A0 is not */
	ck_assert_str_eq(esc("\xc2\x9b" "2J\xc2\x80\xc2\xa0", 8),
	    "\"\\u009b2J\\u0080\xc2\xa0\"");
}
END_TEST

/* A key is copied as it is when plain, escaped when not. */
START_TEST(keys_are_plain_or_escaped)
{
	struct dlq_buf b;

	dlq_buf_init(&b);
	dlq_buf_adds(&b, "{\"a\":1");
	dlq_buf_json_key(&b, "x_retry_count2");
	dlq_buf_adds(&b, "2");
	dlq_buf_json_key(&b, "Ab");
	dlq_buf_adds(&b, "3");
	dlq_buf_json_key(&b, "x-death");
	dlq_buf_adds(&b, "4");
	dlq_buf_json_key(&b, "q\"\n");
	dlq_buf_adds(&b, "5");
	dlq_buf_json_key(&b, "");
	dlq_buf_adds(&b, "6}");
	ck_assert_str_eq(b.data, "{\"a\":1,\"x_retry_count2\":2,\"Ab\":3,"
	    "\"x-death\":4,\"q\\\"\\n\":5,\"\":6}");
	ck_assert_uint_eq(b.len, strlen(b.data));
	dlq_buf_release(&b);
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
	/* four bytes: an emoji is kept; past U+10FFFF or overlong is not */
	ck_assert_str_eq(esc("\xf0\x9f\x99\x82", 4), "\"\xf0\x9f\x99\x82\"");
	ck_assert_str_eq(esc("\xf4\x90\x80\x80", 4), "\"\xef\xbf\xbd\xef\xbf\xbd"
	    "\xef\xbf\xbd\xef\xbf\xbd\"");
	ck_assert_str_eq(esc("\xf0\x8f\xbf\xbf", 4), "\"\xef\xbf\xbd\xef\xbf\xbd"
	    "\xef\xbf\xbd\xef\xbf\xbd\"");
}
END_TEST

/* JSON text built elsewhere (SQLite's json_object) made valid UTF-8:
 * only the bad bytes change, and an escaped NUL, which would end a C
 * string, reads as U+FFFD (an escaped backslash before "u0000" is
 * not one). */
START_TEST(json_text_is_made_valid_utf8)
{
	const char *in;
	struct dlq_buf b;

	dlq_buf_init(&b);
	dlq_buf_add_json_text(&b, "{\"e\":\"a\xff\xc0\xaf€\"}", 15);
	ck_assert_str_eq(b.data, "{\"e\":\"a\xef\xbf\xbd\xef\xbf\xbd"
	    "\xef\xbf\xbd€\"}");
	dlq_buf_reset(&b);
	dlq_buf_add_json_text(&b, "[\"ok ü\"]", 9);
	ck_assert_str_eq(b.data, "[\"ok ü\"]");
	dlq_buf_reset(&b);
	dlq_buf_add_json_text(&b, "\"\xe2\x82\"", 4);	/* a cut sequence */
	ck_assert_str_eq(b.data, "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	dlq_buf_reset(&b);
	in = "{\"id\":\"m\\u0000x\",\"e\":\"\\\\u0000\\u00001\"}";
	dlq_buf_add_json_text(&b, in, strlen(in));
	ck_assert_str_eq(b.data, "{\"id\":\"m\\ufffdx\",\"e\":\"\\\\u0000"
	    "\\ufffd1\"}");
	dlq_buf_release(&b);
}
END_TEST

/* An error header's bytes made text a C string and SQLite hold whole:
 * a NUL becomes U+FFFD as a bad byte does. */
START_TEST(text_is_made_whole_for_c_strings)
{
	static const char in[] = "db\0down \xff tail \xe2\x82";
	static const char clean[] = "0123456789abcdef ü";
	struct dlq_buf b;
	char copy[8];

	ck_assert_uint_eq(dlq_text_len(in, sizeof(in) - 1), 2);
	ck_assert_uint_eq(dlq_text_len(in + 3, sizeof(in) - 4), 5);
	ck_assert_uint_eq(dlq_text_len(clean, sizeof(clean) - 1),
	    sizeof(clean) - 1);
	ck_assert_uint_eq(dlq_text_len(NULL, 0), 0);
	dlq_buf_init(&b);
	dlq_buf_add_text(&b, in, sizeof(in) - 1);
	ck_assert_uint_eq(b.len, strlen(b.data));
	ck_assert_str_eq(b.data, "db\xef\xbf\xbd" "down \xef\xbf\xbd tail "
	    "\xef\xbf\xbd\xef\xbf\xbd");
	ck_assert_uint_eq(dlq_text_len(b.data, b.len), b.len);
	dlq_buf_release(&b);
	/* copied into a C string of 8 bytes: whole characters, and as
	 * much as fits */
	dlq_text_copy(copy, sizeof(copy), in, sizeof(in) - 1);
	ck_assert_str_eq(copy, "db\xef\xbf\xbd" "do");
	dlq_text_copy(copy, sizeof(copy), "ab\xd0\xbf\xd0\xbf\xd0\xbf", 8);
	ck_assert_str_eq(copy, "ab\xd0\xbf\xd0\xbf");
	dlq_text_copy(copy, sizeof(copy), "abc", 3);
	ck_assert_str_eq(copy, "abc");
	dlq_text_copy(copy, sizeof(copy), NULL, 0);
	ck_assert_str_eq(copy, "");
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

/* The scans go 16 (SSE2) or 8 bytes at a time over plain ASCII: a byte
 * that needs care must be found at every offset, in every lane of a
 * block, in the second block and in the tail after the last whole one. */
START_TEST(special_bytes_are_found_at_every_offset)
{
	static const struct { const char *in; size_t n; const char *json;
	    bool text; } special[] = {
		{ "\"", 1, "\\\"", true },
		{ "\\", 1, "\\\\", true },
		{ "\n", 1, "\\n", true },
		{ "\x01", 1, "\\u0001", false },
		{ "\x1f", 1, "\\u001f", false },
		{ "\x7f", 1, "\x7f", false },
		{ "\xc3\xa9", 2, "\xc3\xa9", true },
		{ "\xff", 1, "\xef\xbf\xbd", false },
	};
	static const char pad[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	char in[48], want[96];
	struct dlq_buf b;
	size_t k, at, len;

	dlq_buf_init(&b);
	for (k = 0; k < sizeof(special) / sizeof(special[0]); k++)
		for (len = 1; len <= 40; len++)
			for (at = 0; at + special[k].n <= len; at++) {
				memset(in, 'a', len);
				memcpy(in + at, special[k].in, special[k].n);
				snprintf(want, sizeof(want), "\"%.*s%s%.*s\"",
				    (int)at, pad, special[k].json,
				    (int)(len - at - special[k].n), pad);
				dlq_buf_reset(&b);
				dlq_buf_json_str(&b, in, len);
				ck_assert_str_eq(b.data, want);
				ck_assert_int_eq(dlq_utf8_is_text(in, len),
				    special[k].text);
				/* a sequence cut at the end is not taken */
				if (special[k].n == 2)
					ck_assert_uint_eq(dlq_utf8_prefix(in,
					    at + 1), at);
			}
	dlq_buf_release(&b);
}
END_TEST

/* The formatted second is kept per thread: the next, a repeat, an
 * earlier one and out-of-range values must all come out right. */
START_TEST(timestamps_stay_right_across_seconds_and_ranges)
{
	static const struct { int64_t ms; const char *want; } cases[] = {
		{ 1764496800005LL, "2025-11-30T10:00:00.005Z" },
		{ 1764496800999LL, "2025-11-30T10:00:00.999Z" },
		{ 1764496801000LL, "2025-11-30T10:00:01.000Z" },
		{ 1764496800000LL, "2025-11-30T10:00:00.000Z" },
		{ 951782400000LL, "2000-02-29T00:00:00.000Z" },
		{ -1LL, "1969-12-31T23:59:59.999Z" },
		{ 0LL, "1970-01-01T00:00:00.000Z" },
		{ 253402300799000LL, "9999-12-31T23:59:59.000Z" },
	};
	struct dlq_buf b;
	size_t i;

	dlq_buf_init(&b);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dlq_buf_reset(&b);
		dlq_buf_rfc3339_ms(&b, cases[i].ms);
		ck_assert_str_eq(b.data, cases[i].want);
	}
	/* past year 9999 or past time_t: the epoch, never garbage */
	dlq_buf_reset(&b);
	dlq_buf_rfc3339(&b, 253402300800LL);
	ck_assert_str_eq(b.data, "1970-01-01T00:00:00Z");
	dlq_buf_reset(&b);
	dlq_buf_rfc3339(&b, INT64_MIN);
	ck_assert_str_eq(b.data, "1970-01-01T00:00:00Z");
	dlq_buf_reset(&b);
	dlq_buf_rfc3339(&b, INT64_MAX);
	ck_assert_str_eq(b.data, "1970-01-01T00:00:00Z");
	dlq_buf_release(&b);
}
END_TEST

/* A replay's body and headers cross the control socket in base64: every
 * byte value, every length's padding, back as they went; a text that is
 * not base64 is refused. */
START_TEST(base64_gives_back_every_byte)
{
	static const char *const bad[] = { "QQ*=", "QQ=A", "Q Q=", "QQ===",
	    "-_8=" };
	unsigned char bytes[259];
	struct dlq_buf enc, dec;
	size_t n, i;

	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(255 - i % 256);
	for (n = 0; n <= sizeof(bytes); n++) {
		dlq_buf_init(&enc);
		dlq_buf_init(&dec);
		dlq_buf_base64(&enc, bytes, n);
		ck_assert_uint_eq(enc.len, (n + 2) / 3 * 4);
		ck_assert_int_eq(dlq_base64_decode(enc.len ? enc.data : "", &dec),
		    0);
		ck_assert_uint_eq(dec.len, n);
		ck_assert(n == 0 || memcmp(dec.data, bytes, n) == 0);
		dlq_buf_release(&enc);
		dlq_buf_release(&dec);
	}
	dlq_buf_init(&dec);
	ck_assert_int_eq(dlq_base64_decode("aGVsbG8gd29ybGQ=", &dec), 0);
	ck_assert_str_eq(dec.data, "hello world");
	dlq_buf_release(&dec);
	dlq_buf_init(&dec);
	ck_assert_int_eq(dlq_base64_decode("+/+/", &dec), 0);
	ck_assert_uint_eq(dec.len, 3);
	ck_assert(memcmp(dec.data, "\xfb\xff\xbf", 3) == 0);
	dlq_buf_release(&dec);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dlq_buf_init(&dec);
		ck_assert_msg(dlq_base64_decode(bad[i], &dec) == -1, "%s", bad[i]);
		dlq_buf_release(&dec);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, plain_text_is_quoted);
	tcase_add_test(tc, quotes_backslashes_and_controls_are_escaped);
	tcase_add_test(tc, keys_are_plain_or_escaped);
	tcase_add_test(tc, valid_utf8_is_kept_invalid_bytes_replaced);
	tcase_add_test(tc, json_text_is_made_valid_utf8);
	tcase_add_test(tc, text_is_made_whole_for_c_strings);
	tcase_add_test(tc, utf8_prefix_never_cuts_a_character);
	tcase_add_test(tc, special_bytes_are_found_at_every_offset);
	tcase_add_test(tc, timestamps_are_rfc3339_utc);
	tcase_add_test(tc, timestamps_stay_right_across_seconds_and_ranges);
	tcase_add_test(tc, base64_gives_back_every_byte);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
