/* check_suggest.c - a mistyped name is answered with the one meant. */
#include <check.h>
#include <string.h>

#include "../check_main.h"
#include "cases.h"
#include "config.h"
#include "suggest.h"

static int
distance(const char *typed, const char *known)
{
	return dlq_suggest_distance(typed, known, strlen(known));
}

/* Slips of the hand: a letter changed, dropped, added, two swapped. */
START_TEST(a_slip_is_near_what_was_meant)
{
	ck_assert_int_eq(distance("webhook_formt", "webhook_format"), 1);
	ck_assert_int_eq(distance("exectue", "execute"), 1);
	ck_assert_int_eq(distance("lst", "list"), 1);
	ck_assert_int_eq(distance("alerts", "alert"), 1);
	ck_assert_int_eq(distance("leave_evnet", "leave_event"), 1);
	ck_assert_int_eq(distance("cooldwn_sm", "cooldown_ms"), 2);
	/* case is no slip */
	ck_assert_int_eq(distance("Cooldown_MS", "cooldown_ms"), 0);
	/* `len` bytes of known only: a word out of a list */
	ck_assert_int_eq(dlq_suggest_distance("show", "shows more", 4), 0);
}
END_TEST

/* A word that holds the typed one, at its start or end, is what was
 * meant when a unit or prefix was left out. */
START_TEST(a_word_without_its_unit_finds_it)
{
	ck_assert_int_eq(distance("max_age", "max_age_ms"), 3);
	ck_assert_int_eq(distance("format", "webhook_format"), 3);
	ck_assert_int_eq(distance("url", "webhook_url"), 3);
	/* two characters are too few to go by */
	ck_assert_int_eq(distance("ms", "max_age_ms"), -1);
	/* nor is a word in the middle */
	ck_assert_int_eq(distance("age", "max_age_ms"), -1);
}
END_TEST

START_TEST(other_words_are_not_near)
{
	/* short words allow one edit, longer ones two */
	ck_assert_int_eq(distance("lsit", "list"), 1);
	ck_assert_int_eq(distance("lits", "stats"), -1);
	ck_assert_int_eq(distance("drop", "show"), -1);
	ck_assert_int_eq(distance("replay", "redrive"), -1);
	ck_assert_int_eq(distance("queue", "queues_x"), 3);
	ck_assert_int_eq(distance("", "list"), -1);
	ck_assert_int_eq(distance("list", ""), -1);
}
END_TEST

START_TEST(the_nearest_of_a_list_wins)
{
	static const char *const words[] = { "max_replays", "max_age_ms",
	    "max_age", "never", NULL };
	static const char *const cmds[] = { "list", "show", "stats", NULL };
	char long_word[200];

	/* the exact one before the one that holds it */
	ck_assert_str_eq(dlq_suggest("max_ages", words), "max_age");
	ck_assert_str_eq(dlq_suggest("nevr", words), "never");
	ck_assert_str_eq(dlq_suggest("stat", cmds), "stats");
	ck_assert_ptr_null(dlq_suggest("purge", cmds));
	memset(long_word, 'a', sizeof(long_word) - 1);
	long_word[sizeof(long_word) - 1] = '\0';
	ck_assert_ptr_null(dlq_suggest(long_word, cmds));
}
END_TEST

/* A known word is one of the list exactly: not a slip, a part or
 * another case of one (dlqctl lowercases what the user typed first). */
START_TEST(a_known_word_is_one_of_the_list_exactly)
{
	static const char *const words[] = { "open", "assigned", NULL };

	ck_assert(dlq_word_known("open", words));
	ck_assert(dlq_word_known("assigned", words));
	ck_assert(!dlq_word_known("opne", words));
	ck_assert(!dlq_word_known("ope", words));
	ck_assert(!dlq_word_known("Open", words));
	ck_assert(!dlq_word_known("", words));
	ck_assert(!dlq_word_known("open", (const char *const[]){ NULL }));
	/* the lists dlqctl checks --status and --class against */
	ck_assert(dlq_status_valid("discarded"));
	ck_assert(!dlq_status_valid("dropped"));
	ck_assert(dlq_class_valid("rate_limited"));
	ck_assert(!dlq_class_valid("timeout"));
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("suggest");
	TCase *tc = tcase_create("nearest");

	tcase_add_test(tc, a_slip_is_near_what_was_meant);
	tcase_add_test(tc, a_word_without_its_unit_finds_it);
	tcase_add_test(tc, other_words_are_not_near);
	tcase_add_test(tc, the_nearest_of_a_list_wins);
	tcase_add_test(tc, a_known_word_is_one_of_the_list_exactly);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
