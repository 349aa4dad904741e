/* check_tcpprobe.c - a failed connect is told by its cause, on loopback. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check_main.h"
#include "tcpprobe.h"

/* A socket bound to a free loopback port, listening or not; its port
 * into *port. */
static int
bound(int *port, int listening)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	if (listening)
		ck_assert_int_eq(listen(fd, 1), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

START_TEST(a_port_that_listens_takes_the_connection)
{
	int port, fd = bound(&port, 1);

	ck_assert_int_eq(dlq_tcp_probe("127.0.0.1", port, 2000), 0);
	close(fd);
}
END_TEST

/* The port is held (bound, not listening) so that nothing else takes
 * it while the test runs: a connect to it is refused. */
START_TEST(a_port_nothing_listens_on_is_refused_and_said_so)
{
	char buf[128];
	int port, fd = bound(&port, 0);
	int err = dlq_tcp_probe("127.0.0.1", port, 2000);

	ck_assert_int_eq(err, ECONNREFUSED);
	ck_assert_str_eq(dlq_tcp_probe_text(err, buf, sizeof(buf)),
	    "connection refused (nothing listens on that port: is the broker "
	    "running, and is this its port?)");
	close(fd);
}
END_TEST

START_TEST(other_causes_have_their_words)
{
	char buf[128];

	ck_assert_str_eq(dlq_tcp_probe_text(EHOSTUNREACH, buf, sizeof(buf)),
	    "no route to the host (network or firewall)");
	ck_assert_str_eq(dlq_tcp_probe_text(ETIMEDOUT, buf, sizeof(buf)),
	    "no answer (a firewall dropping the connection, or the host is "
	    "down)");
	/* one without words of its own: the system's */
	ck_assert_str_eq(dlq_tcp_probe_text(EACCES, buf, sizeof(buf)),
	    "Permission denied");
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("tcpprobe");
	TCase *tc = tcase_create("probe");

	tcase_add_test(tc, a_port_that_listens_takes_the_connection);
	tcase_add_test(tc, a_port_nothing_listens_on_is_refused_and_said_so);
	tcase_add_test(tc, other_causes_have_their_words);
	suite_add_tcase(s, tc);
	return s;
}

DLQ_CHECK_MAIN(suite)
