/* check_ctlclient.c - dlqctl that cannot reach the worker says what its
 * socket path holds instead. Real paths in a temporary directory. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
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

/* A socket bound and closed, as a worker killed leaves it. */
START_TEST(a_socket_nobody_answers_on_is_said_to_be_left_over)
{
	struct sockaddr_un sa;
	char want[256];
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
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
	return s;
}

DLQ_CHECK_MAIN(suite)
