/* check_ctlclient.c - dlqctl that cannot reach the worker says what its
 * socket path holds instead; a long request's progress lines keep its
 * call waiting. Real paths in a temporary directory. */
#include <check.h>
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../check_main.h"
#include "ctlclient.h"

static char dir[64], path[96], why[512];

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/dlq-check-ctlclient-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/control.sock", dir);
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A ping to `path`: fails, its reason into `why`. */
static void
call(void)
{
	cJSON *q = dlq_ctl_request("ping");

	ck_assert_ptr_null(dlq_ctl_call(path, q, why, sizeof(why)));
	cJSON_Delete(q);
}

START_TEST(no_socket_at_the_path_asks_whether_the_worker_runs)
{
	char want[256];

	call();
	snprintf(want, sizeof(want), "cannot reach dlq-worker at %s: No such "
	    "file or directory (is it running? control.socket / "
	    "DLQ_CONTROL_SOCKET)", path);
	ck_assert_str_eq(why, want);
}
END_TEST

/* A UNIX socket bound at `path`. */
static int
bound_at_path(void)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_ge(fd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* A socket bound and closed, as a worker killed leaves it. */
START_TEST(a_socket_nobody_answers_on_is_said_to_be_left_over)
{
	char want[256];

	close(bound_at_path());
	call();
	snprintf(want, sizeof(want), "cannot reach dlq-worker at %s: nobody "
	    "answers on this socket (left by a worker that stopped? is it "
	    "running?)", path);
	ck_assert_str_eq(why, want);
}
END_TEST

START_TEST(a_path_that_is_no_socket_is_named_for_what_it_is)
{
	char want[256];
	FILE *f;

	ck_assert_int_eq(mkdir(path, 0700), 0);
	call();
	snprintf(want, sizeof(want), "cannot reach dlq-worker at %s: it is a "
	    "directory, not a socket (control.socket / DLQ_CONTROL_SOCKET "
	    "names the worker's socket)", path);
	ck_assert_str_eq(why, want);
	ck_assert_int_eq(rmdir(path), 0);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fclose(f);
	call();
	ck_assert_ptr_nonnull(strstr(why, ": it is a file, not a socket ("));
}
END_TEST

/* A directory of the path this user may not enter: the temporary one is
 * 0700, and a child of the test asks as another user (as root: nobody;
 * else the same user, the directory's mode taken away). */
START_TEST(a_path_this_user_may_not_enter_says_so)
{
	char want[300];
	cJSON *q, *answer;
	pid_t pid;
	int status;

	snprintf(want, sizeof(want), "cannot reach dlq-worker at %s: "
	    "Permission denied (this user may not enter a directory of the "
	    "path, or write the socket: ls -ld each)", path);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		if (geteuid() == 0 ? setgid(65534) != 0 || setuid(65534) != 0 :
		    chmod(dir, 0) != 0)
			_exit(2);
		q = dlq_ctl_request("ping");
		answer = dlq_ctl_call(path, q, why, sizeof(why));
		cJSON_Delete(q);
		if (answer != NULL)
			_exit(3);
		if (strcmp(why, want) != 0) {
			fprintf(stderr, "got: %s\n", why);
			_exit(1);
		}
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(chmod(dir, 0700), 0);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* A worker that answers a request with `lines` progress lines `gap_ms`
 * apart, then (unless `silent`) one more with the answer in one write;
 * silent: it says nothing more for 3 s. A child process; its pid. */
static pid_t
progressing_worker(int lines, int gap_ms, bool silent)
{
	static const char line[] = "{\"progress\":{\"purged\":5000,"
	    "\"percent\":10}}\n";
	static const char last[] = "{\"progress\":{\"purged\":10000,"
	    "\"percent\":20}}\n{\"ok\":true,\"data\":{\"purged\":12000}}\n";
	struct timespec gap = { gap_ms / 1000, (gap_ms % 1000) * 1000000L };
	char buf[256];
	pid_t pid;
	int fd = bound_at_path(), peer, i;

	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid > 0) {
		close(fd);
		return pid;
	}
	if ((peer = accept(fd, NULL, NULL)) < 0 || read(peer, buf,
	    sizeof(buf)) <= 0)
		_exit(1);
	for (i = 0; i < lines; i++) {
		nanosleep(&gap, NULL);
		if (write(peer, line, sizeof(line) - 1) < 0)
			_exit(1);
	}
	if (silent)
		sleep(3);
	else if (write(peer, last, sizeof(last) - 1) < 0)
		_exit(1);
	_exit(0);
}

static int told, ended;

static void
count_progress(const cJSON *p, void *arg)
{
	ck_assert_ptr_eq(arg, &told);
	if (p == NULL)
		ended++;
	else {
		ck_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(p,
		    "purged")));
		ck_assert_int_eq(ended, 0);
		told++;
	}
}

/* A purge that keeps saying how far it is: a second of progress lines,
 * each within the 500 ms the call waits, is waited for to its answer;
 * each line goes to the callback, then NULL once. */
START_TEST(progress_lines_keep_a_long_request_waited_for)
{
	cJSON *q = dlq_ctl_request("purge"), *answer;
	pid_t pid = progressing_worker(20, 50, false);
	int status;

	told = ended = 0;
	dlq_ctl_set_timeout(500);
	answer = dlq_ctl_call_progress(path, q, count_progress, &told, why,
	    sizeof(why));
	dlq_ctl_set_timeout(DLQ_CTL_TIMEOUT_MS);
	cJSON_Delete(q);
	ck_assert_msg(answer != NULL, "%s", why);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer,
	    "ok")));
	cJSON_Delete(answer);
	/* the last one came in one write with the answer */
	ck_assert_int_eq(told, 21);
	ck_assert_int_eq(ended, 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(status, 0);
}
END_TEST

/* One that goes silent after its progress times out, 500 ms after its
 * last line, and says so. */
START_TEST(a_request_silent_after_its_progress_times_out)
{
	cJSON *q = dlq_ctl_request("purge");
	pid_t pid = progressing_worker(2, 50, true);
	char want[300];
	int status;

	told = ended = 0;
	dlq_ctl_set_timeout(500);
	ck_assert_ptr_null(dlq_ctl_call_progress(path, q, count_progress,
	    &told, why, sizeof(why)));
	dlq_ctl_set_timeout(DLQ_CTL_TIMEOUT_MS);
	cJSON_Delete(q);
	snprintf(want, sizeof(want), "no answer from dlq-worker at %s within "
	    "500ms: busy with a long request (a purge?) or stuck; dlqctl "
	    "--timeout DUR waits longer", path);
	ck_assert_str_eq(why, want);
	ck_assert_int_eq(told, 2);
	ck_assert_int_eq(ended, 1);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("ctlclient");
	TCase *tc = tcase_create("unreachable");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, no_socket_at_the_path_asks_whether_the_worker_runs);
	tcase_add_test(tc, a_socket_nobody_answers_on_is_said_to_be_left_over);
	tcase_add_test(tc, a_path_that_is_no_socket_is_named_for_what_it_is);
	tcase_add_test(tc, a_path_this_user_may_not_enter_says_so);
	suite_add_tcase(s, tc);
	tc = tcase_create("progress");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, progress_lines_keep_a_long_request_waited_for);
	tcase_add_test(tc, a_request_silent_after_its_progress_times_out);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
