/* check_confint.c - integer literals of a config file read back as
 * written, since libconfig 1.5 keeps only the low 32 bits of a literal
 * without an L suffix. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "../check_main.h"
#include "confint.h"

static int64_t v;
static char text[64];

static int
scan(const char *line, const char *name, int64_t lib, bool wide)
{
	v = -7;
	text[0] = '\0';
	return dlq_confint_scan(line, name, lib, wide, &v, text, sizeof(text));
}

/* 4295267296 = 2^32 + 300000: libconfig hands over 300000. */
START_TEST(a_wrapped_literal_is_read_as_written)
{
	ck_assert_int_eq(scan("alert = { cooldown_ms = 4295267296; };\n",
	    "cooldown_ms", 300000, false), 1);
	ck_assert_int_eq(v, 4295267296LL);
	ck_assert_str_eq(text, "4295267296");
	ck_assert_int_eq(scan("  max_age_ms:-4294967296;", "max_age_ms", 0,
	    false), 1);
	ck_assert_int_eq(v, -4294967296LL);
	ck_assert_int_eq(scan("n = 0x100000000;", "n", 0, false), 1);
	ck_assert_int_eq(v, 4294967296LL);
	ck_assert_str_eq(text, "0x100000000");
	/* an L literal is 64 bits already: compared whole */
	ck_assert_int_eq(scan("n = 5000000000L;", "n", 5000000000LL, true), 1);
	ck_assert_int_eq(v, 5000000000LL);
	ck_assert_str_eq(text, "5000000000");
	/* leading zeros are decimal, as libconfig reads them */
	ck_assert_int_eq(scan("n = 010;", "n", 10, false), 1);
	ck_assert_int_eq(v, 10);
}
END_TEST

START_TEST(a_literal_beyond_64_bits_is_reported)
{
	ck_assert_int_eq(scan("heartbeat = 99999999999999999999;", "heartbeat",
	    1316134911, false), -1);
	ck_assert_str_eq(text, "99999999999999999999");
}
END_TEST

/* The name must stand alone, and of two settings of one name on a line
 * the one whose low 32 bits agree with libconfig's value is meant. */
START_TEST(the_setting_is_told_from_others_on_its_line)
{
	ck_assert_int_eq(scan("x_limit = 4294967297; limit = 9;", "limit", 9,
	    false), 1);
	ck_assert_int_eq(v, 9);
	ck_assert_int_eq(scan("a = { n = 1; }; b = { n = 4294967298; };", "n",
	    2, false), 1);
	ck_assert_int_eq(v, 4294967298LL);
	ck_assert_int_eq(scan("limit_ms = 5;", "limit", 5, false), 0);
	ck_assert_int_eq(scan("limit = \"5\";", "limit", 5, false), 0);
	ck_assert_int_eq(scan("limit = 6;", "limit", 5, false), 0);
	ck_assert_int_eq(v, -7);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("confint");
	TCase *tc = tcase_create("scan");

	tcase_add_test(tc, a_wrapped_literal_is_read_as_written);
	tcase_add_test(tc, a_literal_beyond_64_bits_is_reported);
	tcase_add_test(tc, the_setting_is_told_from_others_on_its_line);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
