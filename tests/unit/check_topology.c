/* check_topology.c - topology files and conflict reports. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_main.h"
#include "topology.h"

static struct dlq_buf errors;
static struct dlq_topology *t;
static char path[64];

static const char *
write_topo(const char *text)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/check_topology_XXXXXX");
	ck_assert_int_ge(fd = mkstemp(path), 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void
setup(void)
{
	dlq_buf_init(&errors);
	t = NULL;
	path[0] = '\0';
}

static void
teardown(void)
{
	dlq_topology_free(t);
	dlq_buf_release(&errors);
	if (path[0] != '\0')
		unlink(path);
}

/* Asserts that the errors hold `at` ("LINE: text") after the file's
 * path, as the loader says it. */
static void
said_at(const char *at)
{
	char want[512];

	snprintf(want, sizeof(want), "%s%s", path, at);
	ck_assert_msg(errors.data != NULL && strstr(errors.data, want) != NULL,
	    "want '%s' in: %s", want, errors.data ? errors.data : "");
}

static const struct dlq_queue *
find(const char *name)
{
	size_t i;

	for (i = 0; i < t->n_queues; i++)
		if (strcmp(t->queues[i].name, name) == 0)
			return &t->queues[i];
	return NULL;
}

START_TEST(shipped_line_topology_has_37_queues_36_monitored)
{
	const struct dlq_queue *q;

	t = dlq_topology_load("topology/line.conf", NULL, &errors);
	ck_assert_msg(t != NULL, "%s", errors.data);
	ck_assert_uint_eq(t->n_queues, 37);
	ck_assert_uint_eq(dlq_topology_monitored(t), 36);
	ck_assert_str_eq(t->work_exchange, "line_exchange");
	ck_assert_str_eq(t->dead_letter_exchange, "line_exchange_dlq");
	ck_assert_ptr_nonnull(q = find("message_received_trigger"));
	ck_assert(!q->monitored);
	ck_assert_ptr_nonnull(q = find("message_send"));
	ck_assert_str_eq(q->dlq_name, "message_send.dlq");
	ck_assert_str_eq(q->retry_name, "message_send.retry");
	ck_assert_int_eq(q->retry_delay_ms, 10000);
	ck_assert_int_eq(q->max_retries, 3);
	ck_assert_ptr_null(find("analytics_ingest")->retry_name);
	ck_assert_int_eq(find("billing_usage")->type, DLQ_QUEUE_QUORUM);
}
END_TEST

START_TEST(embedded_topology_is_the_shipped_file)
{
	struct dlq_topology *file;
	size_t i;

	t = dlq_topology_load(NULL, NULL, &errors);
	file = dlq_topology_load("topology/line.conf", NULL, &errors);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(file);
	ck_assert_uint_eq(t->n_queues, file->n_queues);
	for (i = 0; i < t->n_queues; i++)
		ck_assert_str_eq(t->queues[i].dlq_name, file->queues[i].dlq_name);
	dlq_topology_free(file);
}
END_TEST

START_TEST(suffix_override_renames_every_dlq)
{
	t = dlq_topology_load(NULL, ".dead", &errors);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(find("message_send")->dlq_name, "message_send.dead");
}
END_TEST

START_TEST(bad_files_report_file_and_line)
{
	write_topo("queues = (\n  { name = \"a\"; type = \"stream\"; },\n"
	    "  { nam = \"b\"; },\n  { name = \"c\"; retry_delay_ms = -1; },\n"
	    "  { name = \"d\"; retry_delay_ms = \"10s\"; max_retries = \"3\"; "
	    "}\n);\n");
	t = dlq_topology_load(path, NULL, &errors);
	ck_assert_ptr_null(t);
	said_at(":2: 'type' must be \"classic\" or \"quorum\"");
	said_at(":3: unknown setting 'nam' in a queue (did you mean 'name'?)");
	said_at(":4: 'retry_delay_ms' = -1 is out of range");
	/* a duration where milliseconds are read: what it takes is said */
	said_at(":5: 'retry_delay_ms' must be an integer (a number of "
	    "milliseconds: 10000 for 10 seconds)");
	said_at(":5: 'max_retries' must be an integer\n");
}
END_TEST

/* A topology file saved with a UTF-8 byte order mark reads as without
 * it; a syntax error says what libconfig expects. */
START_TEST(a_byte_order_mark_is_skipped_and_syntax_is_explained)
{
	write_topo("\xef\xbb\xbf" "queues = ( { name = \"a\"; } );\n");
	t = dlq_topology_load(path, NULL, &errors);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(t->n_queues, 1);
	dlq_topology_free(t);
	t = NULL;
	unlink(path);
	write_topo("queues = (\n  { name = a; }\n);\n");
	t = dlq_topology_load(path, NULL, &errors);
	ck_assert_ptr_null(t);
	said_at(":2: syntax error (a setting is name = value; text in \"double "
	    "quotes\"");
}
END_TEST

/* At-least-once dead-lettering exists only for quorum queues: asked of a
 * classic one it is a load error, not a broker refusal at start. */
START_TEST(at_least_once_dead_lettering_is_for_quorum_queues)
{
	write_topo("defaults = { type = \"quorum\";\n"
	    "  dead_letter_strategy = \"at-least-once\"; };\n"
	    "queues = ( { name = \"a\"; },\n"
	    "  { name = \"b\"; dead_letter_strategy = \"at-most-once\"; } );\n");
	ck_assert_ptr_nonnull(t = dlq_topology_load(path, NULL, &errors));
	ck_assert(find("a")->at_least_once);
	ck_assert(!find("b")->at_least_once);
	dlq_topology_free(t);
	unlink(path);

	write_topo("defaults = { dead_letter_strategy = \"at-least-once\"; };\n"
	    "queues = ( { name = \"c\"; },\n"
	    "  { name = \"d\"; type = \"quorum\";\n"
	    "    dead_letter_strategy = \"exactly-once\"; } );\n");
	t = dlq_topology_load(path, NULL, &errors);
	ck_assert_ptr_null(t);
	said_at(":2: queue 'c': dead_letter_strategy = \"at-least-once\" needs "
	    "type = \"quorum\"");
	said_at(":4: 'dead_letter_strategy' must be \"at-most-once\" or "
	    "\"at-least-once\"");
}
END_TEST

START_TEST(a_directory_is_not_a_topology_file)
{
	t = dlq_topology_load("/tmp", NULL, &errors);
	ck_assert_ptr_null(t);
	ck_assert_str_eq(errors.data, "/tmp: cannot read: it is a directory\n");
}
END_TEST

START_TEST(empty_queue_list_is_refused)
{
	write_topo("queues = ( );\n");
	t = dlq_topology_load(path, NULL, &errors);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(errors.data, "no queues listed"));
}
END_TEST

/* One name for two roles would make the queue conflict with itself. */
START_TEST(queues_whose_names_meet_are_refused)
{
	static const char *const want[] = {
		":2: 'a.dlq' would be both the DLQ of 'a' and the work queue "
		    "'a.dlq'\n",
		":4: 'b.retry' would be both the work queue 'b.retry' and the "
		    "retry queue of 'b'\n",
		":5: queue '000000000000000000000000000000000000000000000000000"
		    "000000000…' is 252 bytes: with the DLQ suffix '.dlq' "
		    "its DLQ's name would be 256, and AMQP allows 255\n",
	};
	char text[1024];
	size_t i;

	snprintf(text, sizeof(text), "queues = ( { name = \"a\"; },\n"
	    "  { name = \"a.dlq\"; },\n  { name = \"b.retry\"; },\n"
	    "  { name = \"b\"; retry_delay_ms = 100; },\n"
	    "  { name = \"%0252d\"; } );\n", 0);
	write_topo(text);
	t = dlq_topology_load(path, NULL, &errors);
	ck_assert_ptr_null(t);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		said_at(want[i]);
	}
	/* a DLQ suffix equal to the retry queue's */
	dlq_buf_release(&errors);
	dlq_buf_init(&errors);
	unlink(path);
	write_topo("queues = ( { name = \"c\"; retry_delay_ms = 100; } );\n");
	t = dlq_topology_load(path, ".retry", &errors);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(errors.data, "queue 'c': its DLQ and its "
	    "retry queue would both be 'c.retry'"));
}
END_TEST

/* What the broker would refuse at the assert, or what would loop, is
 * refused when the file is read, with one error that says which. */
START_TEST(exchanges_and_names_the_broker_refuses_are_refused)
{
	static const char *const bad[][2] = {
		{ "work_exchange = \"x\";\ndead_letter_exchange = \"x\";\n"
		    "queues = ( { name = \"a\"; } );\n",
		  ":2: dead_letter_exchange must not be work_exchange ('x'): a "
		    "message published to Q would reach Q's DLQ too" },
		{ "dead_letter_exchange = \"amq.topic\";\n"
		    "queues = ( { name = \"a\"; } );\n",
		  ":1: exchange names beginning with 'amq.' are reserved by "
		    "RabbitMQ; of its own exchanges only amq.direct is direct" },
		{ "queues = ( { name = \"a\"; },\n { name = \"amq.b\"; } );\n",
		  ":2: queue 'amq.b': names beginning with 'amq.' are reserved "
		    "by RabbitMQ\n" },
		/* each name problem says which, at the name's line */
		{ "queues = ( { name = \"a\"; },\n { name = \"\"; } );\n",
		  ":2: queue: the name is empty\n" },
		{ "queues = ( { name = \"a\"; },\n { name = \"b\\tc\"; } );\n",
		  ":2: queue 'b\\tc': a name must not hold control "
		    "characters\n" },
		{ "queues = ( { name = \"a\"; },\n { type = \"quorum\"; } );\n",
		  ":2: a queue needs a name: { name = \"...\"; }\n" },
		{ "queues = ( { name = \"a\"; },\n { name = 7; } );\n",
		  ":2: 'name' must be a string\n" },
		{ "work_exchange = \"\";\nqueues = ( { name = \"a\"; } );\n",
		  ":1: work_exchange: the name is empty\n" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dlq_buf_reset(&errors);
		write_topo(bad[i][0]);
		ck_assert_ptr_null(t = dlq_topology_load(path, NULL, &errors));
		said_at(bad[i][1]);
		/* and nothing else: one fault, one error */
		ck_assert_ptr_eq(strchr(errors.data, '\n'), strrchr(errors.data,
		    '\n'));
		unlink(path);
	}
	/* RabbitMQ's own amq.direct is direct and durable: it may serve */
	write_topo("work_exchange = \"amq.direct\";\n"
	    "queues = ( { name = \"a\"; } );\n");
	ck_assert_ptr_nonnull(t = dlq_topology_load(path, NULL, &errors));
}
END_TEST

START_TEST(a_queue_is_found_by_its_name_or_its_dlqs)
{
	t = dlq_topology_load(NULL, NULL, &errors);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(dlq_topology_find(t, "message_send")->name,
	    "message_send");
	ck_assert_str_eq(dlq_topology_find(t, "message_send.dlq")->name,
	    "message_send");
	ck_assert_ptr_null(dlq_topology_find(t, "message_send.retry"));
	ck_assert_ptr_null(dlq_topology_find(t, "message_sen"));
	/* ... and a name it does not know by the one most likely meant */
	ck_assert_str_eq(dlq_topology_suggest(t, "message_sen"),
	    "message_send");
	ck_assert_str_eq(dlq_topology_suggest(t, "message_send.dql"),
	    "message_send.dlq");
	ck_assert_ptr_null(dlq_topology_suggest(t, "no_such_queue"));
}
END_TEST

START_TEST(broker_conflict_text_is_split)
{
	char arg[64], wanted[128], live[128];

	ck_assert(dlq_topology_parse_conflict("PRECONDITION_FAILED - "
	    "inequivalent arg 'x-dead-letter-exchange' for queue 'q1' in vhost "
	    "'/': received the value 'line_exchange_dlq' of type 'longstr' but "
	    "current is none", arg, sizeof(arg), wanted, sizeof(wanted), live,
	    sizeof(live)));
	ck_assert_str_eq(arg, "x-dead-letter-exchange");
	ck_assert_str_eq(wanted, "the value 'line_exchange_dlq' of type 'longstr'");
	ck_assert_str_eq(live, "none");
	ck_assert(dlq_topology_parse_conflict("inequivalent arg 'durable' for "
	    "queue 'q' in vhost '/': received 'true' but current is 'false'",
	    arg, sizeof(arg), wanted, sizeof(wanted), live, sizeof(live)));
	ck_assert_str_eq(arg, "durable");
	ck_assert_str_eq(live, "'false'");
	ck_assert(!dlq_topology_parse_conflict("ACCESS_REFUSED", arg,
	    sizeof(arg), wanted, sizeof(wanted), live, sizeof(live)));
}
END_TEST

/* The queues an assert found missing are named exactly: not by a prefix
 * of one, and "not known" once more were missing than it holds. */
START_TEST(a_missing_queue_is_known_by_its_whole_name)
{
	struct dlq_assert_result res;

	memset(&res, 0, sizeof(res));
	ck_assert_int_eq(dlq_assert_missing_queue(&res, "a.dlq"), 0);
	snprintf(res.missing_queues, sizeof(res.missing_queues),
	    "a.dlq\nbb.dlq\n");
	ck_assert_int_eq(dlq_assert_missing_queue(&res, "a.dlq"), 1);
	ck_assert_int_eq(dlq_assert_missing_queue(&res, "bb.dlq"), 1);
	ck_assert_int_eq(dlq_assert_missing_queue(&res, "b.dlq"), 0);
	ck_assert_int_eq(dlq_assert_missing_queue(&res, "a.dl"), 0);
	ck_assert_int_eq(dlq_assert_missing_queue(&res, "a.dlq.x"), 0);
	res.missing_queues_cut = true;
	ck_assert_int_eq(dlq_assert_missing_queue(&res, "a.dlq"), 1);
	ck_assert_int_eq(dlq_assert_missing_queue(&res, "c.dlq"), -1);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("topology");
	TCase *tc = tcase_create("load");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, shipped_line_topology_has_37_queues_36_monitored);
	tcase_add_test(tc, embedded_topology_is_the_shipped_file);
	tcase_add_test(tc, suffix_override_renames_every_dlq);
	tcase_add_test(tc, bad_files_report_file_and_line);
	tcase_add_test(tc,
	    a_byte_order_mark_is_skipped_and_syntax_is_explained);
	tcase_add_test(tc, at_least_once_dead_lettering_is_for_quorum_queues);
	tcase_add_test(tc, a_directory_is_not_a_topology_file);
	tcase_add_test(tc, empty_queue_list_is_refused);
	tcase_add_test(tc, queues_whose_names_meet_are_refused);
	tcase_add_test(tc, exchanges_and_names_the_broker_refuses_are_refused);
	tcase_add_test(tc, a_queue_is_found_by_its_name_or_its_dlqs);
	tcase_add_test(tc, broker_conflict_text_is_split);
	tcase_add_test(tc, a_missing_queue_is_known_by_its_whole_name);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
