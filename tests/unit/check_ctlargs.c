/* check_ctlargs.c - dlqctl's command words: options into a request,
 * archive ids, what a command line misses or has too much of. */
#include <check.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../check_main.h"
#include "control.h"
#include "ctlargs.h"
#include "ctlclient.h"

#define MAXW	16

/* What the parser says goes to stderr: during a test, fd 2 is a
 * temporary file. */
static FILE *err;
static int saved_fd2;

static void
setup(void)
{
	ck_assert_ptr_nonnull(err = tmpfile());
	fflush(stderr);
	ck_assert_int_ne(saved_fd2 = dup(2), -1);
	ck_assert_int_ne(dup2(fileno(err), 2), -1);
}

static void
teardown(void)
{
	fflush(stderr);
	dup2(saved_fd2, 2);
	close(saved_fd2);
	fclose(err);
}

/* What was said on stderr since the last call. */
static const char *
said(void)
{
	static char text[1024];
	off_t n;

	fflush(stderr);
	n = lseek(2, 0, SEEK_CUR);
	ck_assert_int_ge(n, 0);
	if (n >= (off_t)sizeof(text))
		n = sizeof(text) - 1;
	ck_assert_int_eq(pread(2, text, (size_t)n, 0), n);
	text[n] = '\0';
	ck_assert_int_eq(ftruncate(2, 0), 0);
	ck_assert_int_eq(lseek(2, 0, SEEK_SET), 0);
	return text;
}

/* A command line of words (NULL ended), copied: getopt permutes it. */
struct line {
	char	*argv[MAXW];
	char	 words[MAXW][DLQ_CONTROL_TEXT_MAX + 2];	/* a text one too long */
	int	 argc;
};

static void
words(struct line *l, const char *const *w)
{
	memset(l, 0, sizeof(*l));
	for (; w[l->argc] != NULL; l->argc++) {
		snprintf(l->words[l->argc], sizeof(l->words[0]), "%s",
		    w[l->argc]);
		l->argv[l->argc] = l->words[l->argc];
	}
}

/* Parses `w` with the options `allowed`; the request (or NULL when the
 * parse failed). */
static cJSON *
parse(struct line *l, const char *const *w, const char *allowed)
{
	cJSON *r = cJSON_CreateObject();

	words(l, w);
	if (dlq_args_options(r, l->argc, l->argv, allowed))
		return r;
	cJSON_Delete(r);
	return NULL;
}

static double
num(const cJSON *r, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, k);

	ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", k);
	return v->valuedouble;
}

START_TEST(options_fill_the_request_with_checked_values)
{
	struct line l;
	cJSON *r = parse(&l, (const char *[]){ "replay", "7", "--limit", "5",
	    "--since", "2h", "--execute", "--reason", "fixed in 2.4.1",
	    "--rate", "0", NULL }, "limit since execute reason rate");

	ck_assert_ptr_nonnull(r);
	ck_assert_double_eq(num(r, "limit"), 5);
	ck_assert_double_eq(num(r, "since_ms"), 7200000);
	ck_assert_double_eq(num(r, "rate"), 0);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "execute")));
	ck_assert_str_eq(dlq_args_str(r, "reason"), "fixed in 2.4.1");
	ck_assert_ptr_null(dlq_args_str(r, "owner"));
	/* the word that is not an option is left at optind */
	ck_assert_int_eq(optind, l.argc - 1);
	ck_assert_str_eq(l.argv[optind], "7");
	ck_assert(dlq_args_done(optind + 1, l.argc, l.argv));
	ck_assert_str_eq(said(), "");
	ck_assert(!dlq_args_done(optind, l.argc, l.argv));
	ck_assert_str_eq(said(), "dlqctl: replay: unexpected argument '7'\n");
	cJSON_Delete(r);
	/* a signature is sent as groups prints it, however it was copied */
	r = parse(&l, (const char *[]){ "list", "--signature", "3DADB6D55F29",
	    NULL }, "signature");
	ck_assert_str_eq(dlq_args_str(r, "signature"), "3dadb6d55f29");
	cJSON_Delete(r);
}
END_TEST

START_TEST(bad_option_values_are_refused)
{
	static const char *const bad[][4] = {
		{ "--limit", "0", "--limit: expected 1..10000, not '0'" },
		{ "--limit", "10001", "--limit: expected 1..10000, not '10001'" },
		{ "--limit", "5x", "--limit: expected 1..10000, not '5x'" },
		{ "--since", "0s", "--since: must be more than 0, not '0s'" },
		{ "--since", "soon", "--since: bad duration 'soon' (a number "
		    "and ms, s, m, h, d or w" },
		{ "--since", "1y", "--since: bad duration '1y'" },
		{ "--since", "-1h", "--since: bad duration '-1h'" },
		/* the total counts, whatever the unit; a number too large
		 * for any integer is too long, not malformed */
		{ "--since", "3651d", "--since: too long: '3651d' (at most "
		    "3650d)" },
		{ "--since", "522w", "--since: too long: '522w'" },
		{ "--since", "99999999999999999999d", "--since: too long: "
		    "'99999999999999999999d'" },
		{ "--since", "99999999999999999999x", "--since: bad duration" },
		{ "--reason", " \t", "--reason: empty" },
		{ "--rate", "-1", "--rate: expected 0..100000, not '-1'" },
		{ "--canary", "5000", "--canary: expected 1..1000 (a canary is a "
		    "small first batch), not '5000'" },
		{ "--owner", "a", "list does not take --owner" },
		{ "--nope", "a", "list: unknown option '--nope'" },
		/* a prefix is not the option */
		{ "--lim", "5", "list: unknown option '--lim'; did you mean "
		    "'--limit'?" },
		{ "--exec", NULL, "list: unknown option '--exec'; did you mean "
		    "'--execute'?" },
		{ "--limi=5", NULL, "list: unknown option '--limi'; did you "
		    "mean '--limit'?" },
		{ "--execute=yes", NULL, "--execute takes no value" },
		{ "--limit", NULL, "--limit needs a value" },
	};
	const char *msg;
	struct line l;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(&l, (const char *[]){ "list", bad[i][0],
		    bad[i][1], NULL }, "limit since reason rate execute "
		    "canary") == NULL, "%s %s accepted", bad[i][0], bad[i][1] ? bad[i][1] :
		    "");
		msg = said();
		ck_assert_msg(strncmp(msg, "dlqctl: ", 8) == 0 &&
		    strstr(msg, bad[i][2]) != NULL, "want '%s', said '%s'",
		    bad[i][2], msg);
	}
}
END_TEST

/* "" names the default exchange and an empty routing key: a replay to
 * queue Q through the default exchange is --to-exchange "" --routing-key
 * Q. Blanks only are still a slip. */
START_TEST(an_empty_exchange_is_the_default_exchange)
{
	struct line l;
	cJSON *r = parse(&l, (const char *[]){ "replay", "--to-exchange", "",
	    "--routing-key", "orders", NULL }, "to-exchange routing-key");

	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(dlq_args_str(r, "to_exchange"), "");
	ck_assert_str_eq(dlq_args_str(r, "routing_key"), "orders");
	cJSON_Delete(r);
	r = parse(&l, (const char *[]){ "replay", "--to-exchange", "fanout_x",
	    "--routing-key", "", NULL }, "to-exchange routing-key");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(dlq_args_str(r, "routing_key"), "");
	cJSON_Delete(r);
	ck_assert_ptr_null(parse(&l, (const char *[]){ "replay",
	    "--to-exchange", " ", NULL }, "to-exchange routing-key"));
	ck_assert_str_eq(said(), "dlqctl: --to-exchange: empty\n");
}
END_TEST

/* A free text is at most what the worker takes (4096 bytes): said before
 * anything is asked of it or published. */
START_TEST(a_text_longer_than_the_worker_takes_is_refused)
{
	char text[DLQ_CONTROL_TEXT_MAX + 2];
	struct line l;
	cJSON *r;

	memset(text, 'e', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	ck_assert_ptr_null(parse(&l, (const char *[]){ "replay", "--evidence",
	    text, NULL }, "evidence"));
	ck_assert_str_eq(said(), "dlqctl: --evidence: too long: 4097 bytes, "
	    "at most 4096\n");
	text[DLQ_CONTROL_TEXT_MAX] = '\0';
	r = parse(&l, (const char *[]){ "replay", "--evidence", text, NULL },
	    "evidence");
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(strlen(dlq_args_str(r, "evidence")), 4096);
	cJSON_Delete(r);
}
END_TEST

START_TEST(an_option_given_twice_is_refused)
{
	struct line l;

	ck_assert_ptr_null(parse(&l, (const char *[]){ "assign", "--owner",
	    "a", "--owner", "b", NULL }, "owner"));
	ck_assert_str_eq(said(), "dlqctl: --owner given twice\n");
}
END_TEST

START_TEST(required_options_are_named)
{
	struct line l;
	cJSON *r = parse(&l, (const char *[]){ "assign", "--owner", "a",
	    NULL }, "owner decision");

	ck_assert_ptr_nonnull(r);
	ck_assert(dlq_args_require(r, "assign", "owner"));
	ck_assert(!dlq_args_require(r, "assign", "owner decision"));
	ck_assert_str_eq(said(), "dlqctl: assign needs --decision\n");
	cJSON_Delete(r);
}
END_TEST

/* A command without options names an option given to it as an option;
 * after options, what is left is an argument, even one after "--" that
 * starts with a dash. */
START_TEST(a_word_too_many_is_named_for_what_it_looks_like)
{
	struct line l;

	words(&l, (const char *[]){ "stats", "--since", "1h", NULL });
	ck_assert(!dlq_args_done(1, l.argc, l.argv));
	ck_assert_str_eq(said(), "dlqctl: stats: unknown option '--since' "
	    "(stats takes none)\n");
	words(&l, (const char *[]){ "stats", "-", NULL });
	ck_assert(!dlq_args_done(1, l.argc, l.argv));
	ck_assert_str_eq(said(), "dlqctl: stats: unexpected argument '-'\n");
	words(&l, (const char *[]){ "show", "7", "-8", NULL });
	ck_assert(!dlq_args_done(2, l.argc, l.argv));
	ck_assert_str_eq(said(), "dlqctl: show: unexpected argument '-8'\n");
	words(&l, (const char *[]){ "stats", NULL });
	ck_assert(dlq_args_done(1, l.argc, l.argv));
	ck_assert_str_eq(said(), "");
}
END_TEST

START_TEST(ids_keep_their_order_and_come_once)
{
	struct line l;
	cJSON *r = parse(&l, (const char *[]){ "drop", "5", "3", "--reason",
	    "dup", "5", "9", "3", NULL }, "reason");
	const cJSON *ids;

	ck_assert_ptr_nonnull(r);
	ck_assert(dlq_args_ids(r, l.argc, l.argv));
	ids = cJSON_GetObjectItem(r, "ids");
	ck_assert_int_eq(cJSON_GetArraySize(ids), 3);
	ck_assert_double_eq(cJSON_GetArrayItem(ids, 0)->valuedouble, 5);
	ck_assert_double_eq(cJSON_GetArrayItem(ids, 1)->valuedouble, 3);
	ck_assert_double_eq(cJSON_GetArrayItem(ids, 2)->valuedouble, 9);
	cJSON_Delete(r);
}
END_TEST

/* A command names at most what one request takes; an id given again
 * does not count twice. */
START_TEST(ids_are_at_most_a_requests_worth)
{
	static char w[DLQ_CONTROL_IDS_MAX + 2][16];
	char *argv[DLQ_CONTROL_IDS_MAX + 2];
	cJSON *r;
	int i;

	for (i = 0; i < DLQ_CONTROL_IDS_MAX + 2; i++) {
		snprintf(w[i], sizeof(w[i]), "%d", i);
		argv[i] = w[i];
	}
	snprintf(w[0], sizeof(w[0]), "drop");
	snprintf(w[DLQ_CONTROL_IDS_MAX + 1], sizeof(w[0]), "7");
	r = cJSON_CreateObject();
	ck_assert(dlq_args_options(r, DLQ_CONTROL_IDS_MAX + 2, argv, ""));
	ck_assert(dlq_args_ids(r, DLQ_CONTROL_IDS_MAX + 2, argv));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "ids")),
	    DLQ_CONTROL_IDS_MAX);
	ck_assert_str_eq(said(), "");
	cJSON_Delete(r);

	snprintf(w[DLQ_CONTROL_IDS_MAX + 1], sizeof(w[0]), "%d",
	    DLQ_CONTROL_IDS_MAX + 1);
	r = cJSON_CreateObject();
	ck_assert(dlq_args_options(r, DLQ_CONTROL_IDS_MAX + 2, argv, ""));
	ck_assert(!dlq_args_ids(r, DLQ_CONTROL_IDS_MAX + 2, argv));
	ck_assert_str_eq(said(), "dlqctl: at most 1000 archive ids in one "
	    "command; a selection (--queue, with --class, --signature, "
	    "--since) takes more\n");
	cJSON_Delete(r);
}
END_TEST

START_TEST(what_is_not_an_id_is_refused)
{
	static const char *const bad[] = { "0", "-1", "abc", "7x",
	    "99999999999999999999", "1000000000000000" };
	struct line l;
	char want[128];
	cJSON *r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = parse(&l, (const char *[]){ "show", "--", bad[i], NULL },
		    "");
		ck_assert_ptr_nonnull(r);
		ck_assert_msg(!dlq_args_ids(r, l.argc, l.argv), "'%s' taken",
		    bad[i]);
		snprintf(want, sizeof(want), "dlqctl: '%s' is not an archive "
		    "id\n", bad[i]);
		ck_assert_str_eq(said(), want);
		cJSON_Delete(r);
	}
	r = parse(&l, (const char *[]){ "show", NULL }, "");
	ck_assert(!dlq_args_ids(r, l.argc, l.argv));	/* none at all */
	ck_assert_str_eq(said(), "dlqctl: show needs an archive id\n");
	ck_assert(!dlq_args_has(optind, l.argc, l.argv, "a queue"));
	ck_assert_str_eq(said(), "dlqctl: show needs a queue\n");
	cJSON_Delete(r);
	/* a shell variable left unset: an argument, but an empty one */
	r = parse(&l, (const char *[]){ "redrive resume", "--", " ", NULL },
	    "");
	ck_assert(!dlq_args_has(optind, l.argc, l.argv, "a queue"));
	ck_assert_str_eq(said(), "dlqctl: redrive resume needs a queue, not "
	    "an empty argument\n");
	ck_assert(!dlq_args_ids(r, l.argc, l.argv));
	ck_assert_str_eq(said(), "dlqctl: redrive resume needs an archive id, "
	    "not an empty argument\n");
	cJSON_Delete(r);
}
END_TEST

/* --json and --help count where an option stands, not as a value. */
START_TEST(global_options_are_taken_only_where_an_option_stands)
{
	struct line l;
	bool json = false;

	words(&l, (const char *[]){ "assign", "7", "--owner", "--json",
	    "--json", "--decision", "-h", NULL });
	ck_assert(!dlq_args_take_global(&l.argc, l.argv, &json));
	ck_assert(json);
	ck_assert_int_eq(l.argc, 6);	/* the second --json went */
	ck_assert_str_eq(l.argv[3], "--json");	/* the owner's name */

	json = false;
	words(&l, (const char *[]){ "list", "--help", NULL });
	ck_assert(dlq_args_take_global(&l.argc, l.argv, &json));
	ck_assert(!json);

	/* nothing after -- */
	words(&l, (const char *[]){ "assign", "--owner", "-h", "--", "--json",
	    NULL });
	ck_assert(!dlq_args_take_global(&l.argc, l.argv, &json));
	ck_assert(!json);
	ck_assert_int_eq(l.argc, 5);

	/* an abbreviation is no option, so takes no value: options are
	 * matched by their whole name only */
	words(&l, (const char *[]){ "assign", "--own", "-h", NULL });
	ck_assert(dlq_args_take_global(&l.argc, l.argv, &json));
}
END_TEST

/* What the operator gave comes back as given, not rounded: "gave up
 * within 1500ms", not "within 1s". */
START_TEST(durations_print_exactly_and_read_back)
{
	static const char *const given[] = { "1500ms", "1s", "90s", "2m",
	    "150s", "36h", "7d", "1ms" };
	char out[32];
	size_t i;

	for (i = 0; i < sizeof(given) / sizeof(given[0]); i++)
		ck_assert_str_eq(dlq_format_duration(
		    dlq_parse_duration(given[i]), out, sizeof(out)), given[i]);
	ck_assert_str_eq(dlq_format_duration(dlq_parse_duration("1w"), out,
	    sizeof(out)), "7d");
	ck_assert_str_eq(dlq_format_duration(dlq_parse_duration("120m"), out,
	    sizeof(out)), "2h");
	/* ten years in any unit reads, as long as the total is in range */
	ck_assert_int_eq(dlq_parse_duration("3650d"), DLQ_DURATION_MAX_MS);
	ck_assert_int_eq(dlq_parse_duration("315360000000ms"),
	    DLQ_DURATION_MAX_MS);
	ck_assert_int_eq(dlq_parse_duration("315360000001ms"),
	    DLQ_DURATION_TOO_LONG);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("ctlargs");
	TCase *tc = tcase_create("words");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, options_fill_the_request_with_checked_values);
	tcase_add_test(tc, bad_option_values_are_refused);
	tcase_add_test(tc, an_empty_exchange_is_the_default_exchange);
	tcase_add_test(tc, a_text_longer_than_the_worker_takes_is_refused);
	tcase_add_test(tc, an_option_given_twice_is_refused);
	tcase_add_test(tc, required_options_are_named);
	tcase_add_test(tc, a_word_too_many_is_named_for_what_it_looks_like);
	tcase_add_test(tc, ids_keep_their_order_and_come_once);
	tcase_add_test(tc, ids_are_at_most_a_requests_worth);
	tcase_add_test(tc, what_is_not_an_id_is_refused);
	tcase_add_test(tc, global_options_are_taken_only_where_an_option_stands);
	tcase_add_test(tc, durations_print_exactly_and_read_back);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
