/* check_log.c - how log lines reach the file descriptor. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check_io.h"
#include "../check_main.h"
#include "buf.h"
#include "log.h"

/* A SOCK_SEQPACKET pair keeps each write(2) a separate packet, so the
 * test sees the writes themselves, not a byte stream. */
static int fds[2];

static void
setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds), 0);
	dlq_log_set_fd(fds[0]);
}

static void
teardown(void)
{
	dlq_log_set_fd(1);
	close(fds[0]);
	close(fds[1]);
}

/* Appends a line of exactly `len` bytes, newline included. */
static void
add_line(struct dlq_buf *b, size_t len, char c)
{
	size_t i;

	for (i = 0; i + 1 < len; i++)
		dlq_buf_addc(b, c);
	dlq_buf_addc(b, '\n');
}

/* Reads the packets written so far into `out`; returns their count and
 * fails the test on a packet that does not end a line. */
static int
read_writes(struct dlq_buf *out, size_t *largest)
{
	static char pkt[65536];
	ssize_t n;
	int count = 0;

	shutdown(fds[0], SHUT_WR);
	*largest = 0;
	while ((n = read(fds[1], pkt, sizeof(pkt))) > 0) {
		ck_assert_int_eq(pkt[n - 1], '\n');
		if ((size_t)n > *largest)
			*largest = (size_t)n;
		dlq_buf_add(out, pkt, (size_t)n);
		count++;
	}
	return count;
}

START_TEST(batch_lines_go_out_in_whole_lines_of_at_most_pipe_buf)
{
	struct dlq_buf in, out;
	size_t largest;
	int i;

	dlq_buf_init(&in);
	dlq_buf_init(&out);
	for (i = 0; i < 100; i++)	/* 100 KB of 1 KB lines */
		add_line(&in, 1024, (char)('a' + i % 26));
	dlq_log_write_lines(in.data, in.len);
	/* four 1 KB lines fit in 4096: 25 writes, not 100 */
	ck_assert_int_eq(read_writes(&out, &largest), 100 * 1024 / PIPE_BUF);
	ck_assert_uint_le(largest, PIPE_BUF);
	ck_assert_uint_eq(out.len, in.len);
	ck_assert_int_eq(memcmp(out.data, in.data, in.len), 0);
	dlq_buf_release(&in);
	dlq_buf_release(&out);
}
END_TEST

START_TEST(batch_lines_go_to_a_regular_file_in_one_write)
{
	char path[] = "/tmp/dlq-check-log-XXXXXX";
	struct dlq_buf in;
	static char back[200 * 1024];
	long long calls;
	int fd, i;

	ck_assert_int_ge(fd = mkstemp(path), 0);
	unlink(path);
	dlq_log_set_fd(fd);
	dlq_buf_init(&in);
	for (i = 0; i < 100; i++)	/* 100 KB of 1 KB lines */
		add_line(&in, 1024, (char)('a' + i % 26));
	dlq_buf_adds(&in, "{\"unfinished\":");
	calls = check_write_calls();
	dlq_log_write_lines(in.data, in.len);
	calls = check_write_calls() - calls;
	/* one write (valgrind adds a few of its own), where a pipe takes 25 */
	ck_assert_int_ge(calls, 1);
	ck_assert_int_lt(calls, 100 * 1024 / PIPE_BUF);
	/* every whole line, the unfinished one left out */
	ck_assert_int_eq(pread(fd, back, sizeof(back), 0), 100 * 1024);
	ck_assert_int_eq(memcmp(back, in.data, 100 * 1024), 0);
	dlq_buf_release(&in);
	close(fd);
}
END_TEST

START_TEST(a_line_longer_than_pipe_buf_goes_alone)
{
	struct dlq_buf in, out;
	size_t largest;

	dlq_buf_init(&in);
	dlq_buf_init(&out);
	add_line(&in, 100, 'a');
	add_line(&in, PIPE_BUF + 10, 'b');
	add_line(&in, 100, 'c');
	dlq_log_write_lines(in.data, in.len);
	ck_assert_int_eq(read_writes(&out, &largest), 3);
	ck_assert_uint_eq(largest, PIPE_BUF + 10);
	ck_assert_uint_eq(out.len, in.len);
	ck_assert_int_eq(memcmp(out.data, in.data, in.len), 0);
	dlq_buf_release(&in);
	dlq_buf_release(&out);
}
END_TEST

START_TEST(an_unfinished_line_is_not_written)
{
	struct dlq_buf out;
	size_t largest;
	const char text[] = "{\"a\":1}\n{\"b\":";

	dlq_buf_init(&out);
	dlq_log_write_lines(text, sizeof(text) - 1);
	ck_assert_int_eq(read_writes(&out, &largest), 1);
	ck_assert_str_eq(out.data, "{\"a\":1}\n");
	dlq_buf_release(&out);
}
END_TEST

START_TEST(a_single_event_is_one_write)
{
	struct dlq_buf b, out;
	size_t largest;

	dlq_buf_init(&b);
	dlq_buf_init(&out);
	ck_assert(dlq_log_begin(&b, DLQ_LOG_ERR, "archive_error"));
	dlq_log_str(&b, "dlq", "orders.dlq");
	dlq_log_end(&b);
	ck_assert_int_eq(read_writes(&out, &largest), 1);
	ck_assert_ptr_nonnull(strstr(out.data, "\"event\":\"archive_error\","
	    "\"dlq\":\"orders.dlq\"}\n"));
	dlq_buf_release(&b);
	dlq_buf_release(&out);
}
END_TEST

/* log.level leaves out the lines below it, typed ones too: a flood of
 * dead_letter lines is what `warn` is set to silence. */
START_TEST(lines_below_the_level_are_not_written)
{
	struct dlq_buf b, out;
	size_t largest;

	dlq_buf_init(&b);
	dlq_buf_init(&out);
	dlq_log_set_level(DLQ_LOG_WARN);
	ck_assert(!dlq_log_begin(&b, DLQ_LOG_INFO, "dead_letter"));
	ck_assert_uint_eq(b.len, 0);
	dlq_log(DLQ_LOG_INFO, "consumer_started", "dlq", "orders.dlq", NULL);
	ck_assert(dlq_log_begin(&b, DLQ_LOG_WARN, "consumer_reconnecting"));
	dlq_log_end(&b);
	dlq_log_set_level(DLQ_LOG_INFO);
	ck_assert_int_eq(read_writes(&out, &largest), 1);
	ck_assert_ptr_null(strstr(out.data, "consumer_started"));
	ck_assert_ptr_nonnull(strstr(out.data,
	    "\"event\":\"consumer_reconnecting\"}\n"));
	dlq_buf_release(&b);
	dlq_buf_release(&out);
}
END_TEST

/* A level is read in any case, with the usual other spellings; what is
 * none of them is refused, not taken for the default. */
START_TEST(levels_are_read_in_any_case)
{
	static const struct { const char *given; int want; } named[] = {
		{ "debug", DLQ_LOG_DEBUG }, { "DEBUG", DLQ_LOG_DEBUG },
		{ "Info", DLQ_LOG_INFO }, { "WARN", DLQ_LOG_WARN },
		{ "warning", DLQ_LOG_WARN }, { "WARNING", DLQ_LOG_WARN },
		{ "ERROR", DLQ_LOG_ERR }, { "Err", DLQ_LOG_ERR },
	};
	static const char *const bad[] = { "", "verbose", "debug ", "w",
	    "errors" };
	enum dlq_log_level l;
	size_t i;

	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		l = (enum dlq_log_level)-1;
		ck_assert_msg(dlq_log_level_parse(named[i].given, &l) == 0,
		    "'%s' refused", named[i].given);
		ck_assert_int_eq(l, named[i].want);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(dlq_log_level_parse(bad[i], &l) == -1,
		    "'%s' accepted", bad[i]);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("writes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, batch_lines_go_out_in_whole_lines_of_at_most_pipe_buf);
	tcase_add_test(tc, batch_lines_go_to_a_regular_file_in_one_write);
	tcase_add_test(tc, a_line_longer_than_pipe_buf_goes_alone);
	tcase_add_test(tc, an_unfinished_line_is_not_written);
	tcase_add_test(tc, a_single_event_is_one_write);
	tcase_add_test(tc, lines_below_the_level_are_not_written);
	tcase_add_test(tc, levels_are_read_in_any_case);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
