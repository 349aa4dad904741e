/* tcpprobe.c - say why a TCP connection to a broker's port failed. */
#include "tcpprobe.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One address: 0 when it takes the connection, else the errno. */
static int
probe_one(const struct addrinfo *a, int timeout_ms)
{
	struct pollfd p;
	socklen_t len = sizeof(int);
	int fd, err = 0;

	fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    a->ai_protocol);
	if (fd < 0)
		return errno;
	if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
		err = errno;
		if (err == EINPROGRESS) {
			p.fd = fd;
			p.events = POLLOUT;
			p.revents = 0;
			if (poll(&p, 1, timeout_ms) <= 0)
				err = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
			    &len) != 0)
				err = errno;
		}
	}
	close(fd);
	return err;
}

int
dlq_tcp_probe(const char *host, int port, int timeout_ms)
{
	struct addrinfo hints, *list, *a;
	char service[16];
	int err = EHOSTUNREACH;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &list) != 0)
		return EHOSTUNREACH;
	for (a = list; a != NULL; a = a->ai_next)
		if ((err = probe_one(a, timeout_ms)) == 0)
			break;
	freeaddrinfo(list);
	return err;
}

const char *
dlq_tcp_probe_text(int err, char *buf, size_t n)
{
	switch (err) {
	case ECONNREFUSED:
		return "connection refused (nothing listens on that port: is "
		    "the broker running, and is this its port?)";
	case ETIMEDOUT:
		return "no answer (a firewall dropping the connection, or the "
		    "host is down)";
	case EHOSTUNREACH:
	case ENETUNREACH:
		return "no route to the host (network or firewall)";
	case EADDRNOTAVAIL:
		return "address not available (no local address can reach it)";
	default:
		return strerror_r(err, buf, n);
	}
}
